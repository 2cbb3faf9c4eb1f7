"""Find the NVV-ASR model that stage 7 uses to transcribe synthesised audio.

``find-default --lang en`` prints the newest trained exp dir of
``<chorus>/egs/nvv_asr_<lang>/exp/asr_*`` that holds ``config.yaml``,
``recipe_options.sh`` and the inference checkpoint, or exits 1 (printing
nothing) when there is none. Decoding itself is ``python -m pyutils.asr.decode_dir``
(owned by the ASR recipe).
"""

from __future__ import annotations

import argparse
import glob
import os
import sys

from pyutils import REPO_ROOT


def find_default(lang: str, model: str = "valid.acc.ave.pth") -> str:
    cands = []
    for d in glob.glob(str(REPO_ROOT / "egs" / f"nvv_asr_{lang}" / "exp" / "asr_*")):
        if all(os.path.exists(os.path.join(d, f)) for f in ("config.yaml", "recipe_options.sh", model)):
            # a --preset ci model (dir name "*_ci_*") only when no other is there: it is the
            # weak smoke-test model, and CI runs leave it as the newest
            is_full = "_ci_" not in os.path.basename(d) + "_"
            cands.append((is_full, os.path.getmtime(os.path.join(d, model)), d))
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
