"""Hold out a fraction of a Kaldi data dir's utterances as a validation set, when a
corpus ships no dev split. Deterministic (every k-th utterance in sorted order), so
reruns give the same split.

    python -m pyutils.asr.holdout --fraction 0.05 DATA/train DATA/dev   # moves utts train -> dev
"""

from __future__ import annotations

import argparse
import os
import sys

from pyutils.io import atomic_write_lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fraction", type=float, default=0.05)
    p.add_argument("src")
    p.add_argument("dst")
    a = p.parse_args(argv)
    with open(os.path.join(a.src, "wav.scp"), encoding="utf-8") as f:
        keys = sorted(line.split(maxsplit=1)[0] for line in f if line.strip())
    step = max(2, round(1 / max(a.fraction, 1e-6)))
    held = set(keys[step - 1::step]) or set(keys[-1:])
    os.makedirs(a.dst, exist_ok=True)
    for name in sorted(os.listdir(a.src)):
        path = os.path.join(a.src, name)
        if not os.path.isfile(path) or name in ("spk2utt", "feats_type") or name.startswith("."):
            continue
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
        if name.endswith(".jsonl") or name.endswith(".json"):
            continue
        keep = [ln for ln in lines if ln.split(maxsplit=1)[:1] and ln.split(maxsplit=1)[0] not in held]
        move = [ln for ln in lines if ln.split(maxsplit=1)[:1] and ln.split(maxsplit=1)[0] in held]
        for d, rows in ((a.src, keep), (a.dst, move)):
            atomic_write_lines(os.path.join(d, name), rows)
    for d in (a.src, a.dst):
        spk = {}
        u2s = os.path.join(d, "utt2spk")
        if os.path.exists(u2s):
            with open(u2s, encoding="utf-8") as f:
                for line in f:
                    u, s = line.split()[:2]
                    spk.setdefault(s, []).append(u)
            with open(os.path.join(d, "spk2utt"), "w", encoding="utf-8") as f:
                f.writelines(f"{s} {' '.join(us)}\n" for s, us in sorted(spk.items()))
    print(f"holdout: {len(held)} of {len(keys)} utterances {a.src} -> {a.dst}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
