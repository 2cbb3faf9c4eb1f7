"""Glue around ESPnet's speaker task (espnet2.bin.spk_train / spk_embed_extract).

ESPnet-SPK validates and extracts over *trials*: ``trial.scp`` and
``trial2.scp`` (keys ``uttA*uttB`` -> audio of A and of B), ``trial_label``
(``uttA*uttB 1|0``) and a shape file. This module writes those files and turns
the extracted ``<set>_embeddings.npz`` into the Kaldi ``xvector.scp`` /
``spk_xvector.scp`` that ESPnet TTS reads as ``spembs``.

Commands::

    python -m pyutils.vc.spk_embed valid-trials --data DIR --out DIR [--n 200]
    python -m pyutils.vc.spk_embed extract-trials --data DIR --out DIR
    python -m pyutils.vc.spk_embed to-ark --npz X.npz --data DIR --out DIR
    python -m pyutils.vc.spk_embed eer --npz X.npz --trials DIR/trial_label
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from typing import Dict, List, Optional, Tuple

import numpy as np

from pyutils.datadir import read_kv, write_kv


def _num_samples(entry: str) -> int:
    import soundfile

    path = entry.strip()
    if path.endswith("|"):
        raise ValueError(f"piped wav.scp entries are not supported here: {entry!r}; "
                         "run the format stage first")
    return int(soundfile.info(path).frames)


def write_trials(out_dir: str, trials: List[Tuple[str, str, int]],
                 wav: Dict[str, str]) -> int:
    """Write trial.scp, trial2.scp, trial_label and speech_shape for ``trials``."""
    os.makedirs(out_dir, exist_ok=True)
    t1, t2, lab, shape = {}, {}, {}, {}
    for a, b, label in trials:
        key = f"{a}*{b}"
        t1[key], t2[key], lab[key] = wav[a], wav[b], str(int(label))
        shape[key] = str(_num_samples(wav[a]))
    write_kv(os.path.join(out_dir, "trial.scp"), t1)
    write_kv(os.path.join(out_dir, "trial2.scp"), t2)
    write_kv(os.path.join(out_dir, "trial_label"), lab)
    write_kv(os.path.join(out_dir, "speech_shape"), shape)
    return len(trials)


def valid_trials(utt2spk: Dict[str, str], n: int, seed: int = 0) -> List[Tuple[str, str, int]]:
    """Half same-speaker, half different-speaker utterance pairs (for EER)."""
    rng = random.Random(seed)
    by_spk: Dict[str, List[str]] = {}
    for utt, spk in sorted(utt2spk.items()):
        by_spk.setdefault(spk, []).append(utt)
    multi = [s for s, u in by_spk.items() if len(u) >= 2]
    spks = sorted(by_spk)
    if not multi or len(spks) < 2:
        raise ValueError("need >= 2 speakers and one with >= 2 utterances for trials")
    def draw(label: int, count: int) -> List[Tuple[str, str, int]]:
        got, seen = [], set()
        for _ in range(count * 20):
            if len(got) >= count:
                break
            if label:
                a, b = rng.sample(by_spk[rng.choice(multi)], 2)
            else:
                s1, s2 = rng.sample(spks, 2)
                a, b = rng.choice(by_spk[s1]), rng.choice(by_spk[s2])
            if (a, b) not in seen and (b, a) not in seen:
                seen.add((a, b))
                got.append((a, b, label))
        return got

    targets = draw(1, n // 2)
    return sorted(targets + draw(0, n - len(targets)))


def extraction_trials(wav: Dict[str, str]) -> List[Tuple[str, str, int]]:
    """Self-trials ``utt*utt`` so spk_embed_extract embeds every utterance once."""
    return [(u, u, 1) for u in sorted(wav)]


def load_npz(path: str) -> Dict[str, np.ndarray]:
    """utt -> L2-normalised embedding (averaging any per-segment axis)."""
    data = np.load(path)
    out = {}
    for key in data.files:
        emb = np.asarray(data[key], dtype=np.float32)
        if emb.ndim > 1:
            emb = emb.reshape(-1, emb.shape[-1]).mean(axis=0)
        norm = float(np.linalg.norm(emb))
        out[key] = emb / norm if norm > 0 else emb
    return out


def to_ark(npz: str, data_dir: str, out_dir: str) -> Tuple[int, int]:
    """Write ``xvector.{ark,scp}`` (per utterance) and ``spk_xvector.{ark,scp}``
    (per speaker: normalised mean of its utterances) for ``data_dir``."""
    import kaldiio

    emb = load_npz(npz)
    utt2spk = read_kv(os.path.join(data_dir, "utt2spk"))
    missing = sorted(set(utt2spk) - set(emb))
    if missing:
        raise KeyError(f"{npz}: no embedding for {len(missing)} utterance(s) of "
                       f"{data_dir}, e.g. {missing[:3]}")
    os.makedirs(out_dir, exist_ok=True)
    ark = os.path.abspath(os.path.join(out_dir, "xvector.ark"))
    with kaldiio.WriteHelper(f"ark,scp:{ark},{os.path.join(out_dir, 'xvector.scp')}") as w:
        for utt in sorted(utt2spk):
            w(utt, emb[utt])
    by_spk: Dict[str, List[np.ndarray]] = {}
    for utt, spk in utt2spk.items():
        by_spk.setdefault(spk, []).append(emb[utt])
    sark = os.path.abspath(os.path.join(out_dir, "spk_xvector.ark"))
    with kaldiio.WriteHelper(f"ark,scp:{sark},{os.path.join(out_dir, 'spk_xvector.scp')}") as w:
        for spk in sorted(by_spk):
            mean = np.mean(by_spk[spk], axis=0)
            w(spk, (mean / max(float(np.linalg.norm(mean)), 1e-8)).astype(np.float32))
    return len(utt2spk), len(by_spk)


def eer(npz: str, trial_label: str) -> Tuple[float, int]:
    """Equal error rate (%) of cosine scores over the labelled trials."""
    emb = load_npz(npz)
    labels = read_kv(trial_label)
    scores, ys = [], []
    for key, lab in labels.items():
        a, b = key.split("*")
        if a in emb and b in emb:
            scores.append(float(emb[a] @ emb[b]))
            ys.append(int(lab))
    scores, ys = np.array(scores), np.array(ys)
    if len(set(ys.tolist())) < 2:
        raise ValueError("EER needs both target and non-target trials")
    best = 1.0
    for thr in np.unique(scores):
        far = float(np.mean(scores[ys == 0] >= thr))
        frr = float(np.mean(scores[ys == 1] < thr))
        best = min(best, max(far, frr))
    return 100.0 * best, len(ys)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("valid-trials", help="target/non-target trials for validation")
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("extract-trials", help="self-trials to embed every utterance")
    p.add_argument("--data", required=True, action="append", help="repeat to embed several dirs at once")
    p.add_argument("--out", required=True)
    p = sub.add_parser("to-ark", help="npz -> xvector.scp / spk_xvector.scp")
    p.add_argument("--npz", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("eer", help="EER of extracted embeddings on labelled trials")
    p.add_argument("--npz", required=True)
    p.add_argument("--trials", required=True)
    args = ap.parse_args(argv)

    if args.cmd == "valid-trials":
        wav = read_kv(os.path.join(args.data, "wav.scp"))
        trials = valid_trials(read_kv(os.path.join(args.data, "utt2spk")), args.n, args.seed)
        print(f"{args.out}: {write_trials(args.out, trials, wav)} trials")
    elif args.cmd == "extract-trials":
        wav: Dict[str, str] = {}
        for data in args.data:
            part = read_kv(os.path.join(data, "wav.scp"))
            clash = sorted(set(part) & set(wav))
            if clash:
                raise SystemExit(f"{data}: utterance ids also in another dir, e.g. {clash[:3]}")
            wav.update(part)
        print(f"{args.out}: {write_trials(args.out, extraction_trials(wav), wav)} self-trials")
    elif args.cmd == "to-ark":
        n_utt, n_spk = to_ark(args.npz, args.data, args.out)
        print(f"{args.out}: {n_utt} utterance and {n_spk} speaker embeddings")
    elif args.cmd == "eer":
        value, n = eer(args.npz, args.trials)
        print(f"EER {value:.2f}% over {n} trials")
    return 0


if __name__ == "__main__":
    sys.exit(main())
