"""Find the NVV-ASR model that stage 7 uses to transcribe synthesised audio.

``find-default --lang en`` prints the newest trained exp dir of
``<chorus>/egs/nvv_asr_<lang>/exp/asr_*``, or exits 1 (printing nothing) when there is
none. Trained means: an ESPnet exp dir with ``config.yaml``, ``recipe_options.sh`` and the
inference checkpoint, or a cascade exp dir (the recipe's default, ``asr_method=cascade`` in
``recipe_options.sh``) with its fitted ``nvv_detector.npz``. Decoding itself is ``python -m pyutils.asr.decode_dir``
(owned by the ASR recipe).
"""

from __future__ import annotations

import argparse
import glob
import os
import sys

from pyutils import REPO_ROOT


def trained_file(exp: str, model: str = "valid.acc.ave.pth") -> str:
    """The file that makes ``exp`` a usable NVV-ASR model (its mtime orders candidates), or ""."""
    from pyutils.asr.decode_dir import DecodeDirError, read_recipe_options

    opts = os.path.join(exp, "recipe_options.sh")
    if not os.path.isfile(opts):
        return ""
    try:
        method = read_recipe_options(opts).get("asr_method", "espnet")
    except DecodeDirError:   # not written by the recipe: not a candidate
        return ""
    if method == "cascade":
        det = os.path.join(exp, "nvv_detector.npz")
        return det if os.path.isfile(det) else ""
    ckpt = os.path.join(exp, model)
    return ckpt if os.path.exists(os.path.join(exp, "config.yaml")) and os.path.exists(ckpt) else ""


def find_default(lang: str, model: str = "valid.acc.ave.pth") -> str:
    cands = []
    for d in glob.glob(str(REPO_ROOT / "egs" / f"nvv_asr_{lang}" / "exp" / "asr_*")):
        f = trained_file(d, model)
        if f:
            # a --preset ci model (dir name "*_ci_*") only when no other is there: it is the
            # weak smoke-test model, and CI runs leave it as the newest
            is_full = "_ci_" not in os.path.basename(d) + "_"
            cands.append((is_full, os.path.getmtime(f), d))
    return max(cands)[2] if cands else ""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("find-default")
    f.add_argument("--lang", required=True)
    f.add_argument("--model", default="valid.acc.ave.pth")
    a = p.parse_args(argv)
    d = find_default(a.lang, a.model)
    if not d:
        return 1
    print(d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
