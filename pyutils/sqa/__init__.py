"""Speech quality assessment (SQA): reference-free score + fault intervals.

Modules, one job each:

- ``common``    constants (fault names, 20 ms grid) and label rasterisation
- ``audio``     robust audio loading (mono, 16 kHz) with clear errors
- ``features``  log-mel fbank extraction, dumping to ark/scp, global stats
- ``cues``      the pitch contour appended to the log-mel
- ``breakdown`` per fault kind detection and score error of a simulated test set
- ``embed``     utterance embeddings from outside the simulator (DNSMOS, Whisper encoder)
- ``stream``    any-length audio file -> 16 kHz windows in flat memory (chorus-sqa)
- ``dataset``   training/inference datasets and padding collate
- ``augment``   on-the-fly faults with exact intervals (pyutils/synth/faults.py)
- ``model``     conv front-end + BiGRU or TCN multi-task network at the 20 ms grid
- ``train``     the training loop (``python -m pyutils.sqa.train``)
- ``infer``     frame probabilities and the submission JSONL
- ``postproc``  frames -> intervals and its search on dev
- ``baselines`` non-learned baselines (silero-vad pauses, DNSMOS, energy noise)
- ``report``    RESULTS.md; ``plots`` figures; ``package`` the submission JSONL
- ``diagnose``  the ``chorus-sqa`` CLI
"""
