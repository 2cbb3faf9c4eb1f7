"""Copy a data dir, optionally renaming ids (Kaldi's copy_data_dir.sh).

``--utt-prefix/--utt-suffix`` rename utterances, ``--spk-prefix/--spk-suffix``
speakers. Without segments recordings are utterances and are renamed with
them; with segments recording ids are kept. Files are re-sorted.
"""

from __future__ import annotations


from .datadir import DataDir, check_destination, file_kind, load_data_dir, spk2utt_from_utt2spk


def copy_data_dir(src, dest, *, utt_prefix="", utt_suffix="", spk_prefix="",
                  spk_suffix="") -> DataDir:
    dest = check_destination(dest, [src], "copy")
    data = load_data_dir(src)
    has_segments = "segments" in data.files
    u = lambda x: f"{utt_prefix}{x}{utt_suffix}"  # noqa: E731
    s = lambda x: f"{spk_prefix}{x}{spk_suffix}"  # noqa: E731
    out: dict[str, dict[str, str]] = {}
    for name, content in data.files.items():
        kind = file_kind(name)
        if kind == "utt":
            out[name] = {u(k): (s(v) if name == "utt2spk" else v) for k, v in content.items()}
        elif kind == "spk":
            out[name] = {s(k): v for k, v in content.items()}
        elif kind == "reco":
            out[name] = dict(content) if has_segments else {u(k): v for k, v in content.items()}
    if "utt2spk" in out:
        out["spk2utt"] = spk2utt_from_utt2spk(out["utt2spk"])
    result = DataDir(dest, out, dict(data.meta))
    result.write()
    return result
