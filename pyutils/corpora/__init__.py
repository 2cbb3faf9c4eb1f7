"""Real-corpus preparers (lhotse-style: one module per corpus).

Each module documents the corpus layout it expects and writes Kaldi data dirs
(``wav.scp text utt2spk spk2utt`` ...; sorted, absolute paths, atomic writes).
Command line: ``chorus-prep <corpus> --src DIR --out data/`` (see cli.py and
README.md in this folder).
"""
