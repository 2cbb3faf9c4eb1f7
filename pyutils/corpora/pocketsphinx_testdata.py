"""Real human English clips shipped by Debian's ``pocketsphinx-testdata`` (evaluation only).

``/usr/share/pocketsphinx/test/data`` holds LibriVox read speech (5 clips, one
speaker, *Sense and Sensibility*) and spoken card names (5 clips), 16 kHz WAV, with
transcripts in Sphinx form ``<s> words </s> (id)``. Chorus never trains on them; they
are the offline yardstick for real English speech (`python -m pyutils.asr.real_speech`).

    python -m pyutils.corpora.pocketsphinx_testdata --out data/real_en
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from pyutils.datadir.io import write_kv

ROOT = Path("/usr/share/pocketsphinx/test/data")
SUBSETS = {"librivox": "transcription", "cards": "cards.transcription"}
_LINE = re.compile(r"^\s*<s>(.*)</s>\s*\((\S+)\)\s*$")


def read_subset(root: Path, subset: str) -> dict[str, tuple[Path, str]]:
    """``{utt_id: (wav, transcript)}`` of one subset; errors name file and line."""
    tfile = root / subset / SUBSETS[subset]
    out = {}
    for n, line in enumerate(tfile.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        m = _LINE.match(line)
        if not m:
            raise ValueError(f"{tfile}:{n}: not '<s> words </s> (id)'")
        wav = root / subset / f"{m.group(2)}.wav"
        if not wav.is_file():
            raise ValueError(f"{tfile}:{n}: {wav} not found")
        out[f"{subset}_{m.group(2)}"] = (wav, " ".join(m.group(1).split()))
    return out


def prepare(out: Path, root: Path = ROOT) -> int:
    if not (root / "librivox" / SUBSETS["librivox"]).is_file():
        raise FileNotFoundError(f"{root}: pocketsphinx-testdata is not installed "
                                f"(apt-get install pocketsphinx-testdata; make -C tools does it)")
    rows = {}
    for subset in SUBSETS:
        rows.update(read_subset(root, subset))
    out.mkdir(parents=True, exist_ok=True)
    write_kv(out / "wav.scp", {u: str(w) for u, (w, _) in rows.items()})
    write_kv(out / "text", {u: t for u, (_, t) in rows.items()})
    write_kv(out / "utt2spk", {u: u.split("_")[0] for u in rows})
    spk = {}
    for u in sorted(rows):
        spk.setdefault(u.split("_")[0], []).append(u)
    write_kv(out / "spk2utt", {s: " ".join(us) for s, us in spk.items()})
    return len(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="Kaldi data dir to write")
    ap.add_argument("--root", type=Path, default=ROOT)
    a = ap.parse_args(argv)
    try:
        n = prepare(a.out, a.root)
    except (OSError, ValueError) as e:
        print(f"pocketsphinx_testdata: {e}", file=sys.stderr)
        return 2
    print(f"pocketsphinx_testdata: {n} utterances -> {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
