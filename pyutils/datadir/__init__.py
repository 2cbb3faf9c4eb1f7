"""Kaldi data-dir tools: I/O, validate, fix, split, subset, combine, copy.

Helpers other code imports::

    from pyutils.datadir import read_kv, write_kv, load_data_dir, read_wav_scp_entry
    text = read_kv("data/train/text")             # {utt: transcript}, file order
    write_kv("data/train/utt2lang", {"u1": "en"})  # sorted (LC_ALL=C), atomic
    d = load_data_dir("data/train")                # DataDir: d.utts, d.text, d.utt2spk ...
    audio, sr = read_wav_scp_entry(d.wav_scp[d.utts[0]])   # path or `cmd |` pipe
    audio, sr = d.load_audio(utt)                   # honours segments

Command line: ``chorus-datadir {validate,fix,split,subset,combine,copy,utt2dur}``
and the Kaldi-named wrappers in ``utils/``.
"""

from .datadir import DataDir, file_kind, load_data_dir, spk2utt_from_utt2spk
from .io import (AudioReadError, DataDirError, read_kv, read_list,
                 read_wav_scp_entry, wav_scp_entry_duration, write_kv)

__all__ = [
    "AudioReadError", "DataDir", "DataDirError", "file_kind",
    "load_data_dir", "read_kv", "read_list", "read_wav_scp_entry",
    "spk2utt_from_utt2spk", "wav_scp_entry_duration", "write_kv",
]
