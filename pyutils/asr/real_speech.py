"""WER on real human English speech the models never trained on, side by side.

Systems: the zero-shot pretrained Whisper base (faster-whisper, the judge) and each
``--asr-exp`` (an NVV-ASR exp dir, decoded with ``pyutils.asr.decode_dir``; tags are
removed from its output). Test data: Debian's pocketsphinx-testdata (LibriVox read
speech + spoken card names; ``pyutils.corpora.pocketsphinx_testdata``). Both sides go
through Whisper's English normaliser (numbers, spelling, punctuation), so "ten of
clubs" and "10 of clubs" agree; WER = (S + D + I) / N over all words (jiwer).

    python -m pyutils.asr.real_speech --work bench_out/real_en \\
        --asr-exp egs/nvv_asr_en/exp/asr_train_asr_whisper_default_en_whisper \\
        --asr-exp egs/nvv_asr_en/exp/asr_train_asr_default_en_bpe300 [--md table.md] [--no-judge]

Stage 7 of an English NVV-ASR recipe runs it for its own model (``--real_speech``) and
RESULTS.md shows the table under "Real speech".
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import jiwer

from pyutils.asr.tags_text import strip_tags
from pyutils.corpora.pocketsphinx_testdata import prepare
from pyutils.datadir.io import read_kv


def normaliser():
    from whisper.normalizers import EnglishTextNormalizer

    return EnglishTextNormalizer()


def wer_counts(refs: dict[str, str], hyps: dict[str, str]) -> dict:
    norm = normaliser()
    keys = sorted(refs)
    r = [norm(refs[k]) or "<empty>" for k in keys]
    h = [norm(strip_tags(hyps.get(k, ""))) for k in keys]
    o = jiwer.process_words(r, h)
    n = o.hits + o.substitutions + o.deletions
    return {"WER": 100.0 * (o.substitutions + o.deletions + o.insertions) / n, "N": n,
            "S": o.substitutions, "D": o.deletions, "I": o.insertions}


def run_judge(scp: Path, out: Path) -> float:
    t = time.time()
    subprocess.run([sys.executable, "-m", "pyutils.whisper.judge", "--lang", "en",
                    "--wav-scp", str(scp), "--out", str(out)], check=True)
    return time.time() - t


def run_exp(exp: Path, scp: Path, out: Path) -> float:
    t = time.time()
    subprocess.run([sys.executable, "-m", "pyutils.asr.decode_dir", "--asr-exp", str(exp),
                    "--wav-scp", str(scp), "--out", str(out), "--nj", "2"], check=True)
    return time.time() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=Path("bench_out/real_en"))
    ap.add_argument("--asr-exp", type=Path, action="append", default=[])
    ap.add_argument("--md", type=Path, help="also write the table as markdown here")
    ap.add_argument("--no-judge", action="store_true", help="skip the zero-shot Whisper row")
    a = ap.parse_args(argv)
    data = a.work / "data"
    try:
        prepare(data)
    except (OSError, ValueError) as e:
        print(f"real_speech: {e}", file=sys.stderr)
        return 2
    refs = read_kv(data / "text")
    rows = []
    if not a.no_judge:
        out = a.work / "judge" / "text"
        secs = run_judge(data / "wav.scp", out)
        rows.append(("Whisper base, zero-shot (faster-whisper, int8, greedy)",
                     wer_counts(refs, read_kv(out, allow_empty_value=True)), secs))
    for exp in a.asr_exp:
        out = a.work / exp.name / "text"
        secs = run_exp(exp.resolve(), (data / "wav.scp").resolve(), out.resolve())
        rows.append((f"`{exp.name}`", wer_counts(refs, read_kv(out, allow_empty_value=True)), secs))
    n_words = rows[0][1]["N"] if rows else 0
    lines = [f"Real English speech the models never trained on: {len(refs)} clips (Debian "
             f"pocketsphinx-testdata: LibriVox read speech, spoken card names), {n_words} words; "
             f"Whisper's English normaliser on both sides (tags removed).", "",
             "| system | WER % | S | D | I | wall s |", "| --- | --- | --- | --- | --- | --- |"]
    for name, c, s in rows:
        lines.append(f"| {name} | {c['WER']:.1f} | {c['S']} | {c['D']} | {c['I']} | {s:.0f} |")
    text = "\n".join(lines) + "\n"
    from pyutils.io import print_report

    print_report(text, a.md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
