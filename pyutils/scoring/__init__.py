"""Scoring, validation and packaging of submissions (``chorus-score``).

Modules (each with one job):

- :mod:`~pyutils.scoring.errors`   -- :class:`ScoringError` (= :class:`pyutils.io.InputError`: code + file:line)
- :mod:`~pyutils.scoring.io`       -- the scorers' side of :mod:`pyutils.io` (strict JSONL, id sets, spool)
- :mod:`~pyutils.scoring.textnorm` -- Track 1 tagged-transcript parsing/normalisation
- :mod:`~pyutils.scoring.align`    -- lexical alignment, event matching, mNTD
- :mod:`~pyutils.scoring.track1`   -- NVVSpeech Challenge Track 1 score (protocol v1.0.0): the
  streaming pass; its parts :mod:`~pyutils.scoring.track1_rows` (row checks),
  :mod:`~pyutils.scoring.track1_table` (the reference as codes), :mod:`~pyutils.scoring.track1_counts`
  (per-language sums, the formulas), :mod:`~pyutils.scoring.track1_batch` (the C path's driver),
  :mod:`~pyutils.scoring.track1_report` (summary, per-utterance report)
- :mod:`~pyutils.scoring.native`   -- its per-utterance scoring in C (``track1_native.c``,
  built by :mod:`~pyutils.scoring.native_build`; optional, the Python path gives the same numbers)
- :mod:`~pyutils.scoring.nvbench`  -- NV-Bench CER / PCER / OCER
- :mod:`~pyutils.scoring.sqa`      -- speech-quality-assessment score (PCC, F1, frame IoU)
- :mod:`~pyutils.scoring.vc`       -- VLSP 2025 voice-conversion score
- :mod:`~pyutils.scoring.validate` -- submission validators (track1, track2 audio, vc)
- :mod:`~pyutils.scoring.package`  -- build a Track 1 submission from a decode ``text``
- :mod:`~pyutils.scoring.cli`      -- the ``chorus-score`` command

Text scorers import only the standard library, PyYAML and rapidfuzz, so the
command starts fast; audio validators import soundfile/numpy lazily.
"""

from pyutils.scoring.errors import ScoringError  # noqa: F401
