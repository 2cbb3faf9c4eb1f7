"""Asterisk's recorded voice prompts (Debian ``asterisk-core-sounds-{en,es,fr}-g722``).

Real human speech that a Debian package ships: the telephone-system prompts of the
Asterisk PBX, read by two professional talkers in a studio (CC-BY-SA 3.0; the
package's ``copyright`` names them):

=================  ==========================  =======  ==============================
directory          package                     talker   content
=================  ==========================  =======  ==============================
en_US_f_Allison    asterisk-core-sounds-en-g722  Allison  358 US English prompts
es_MX_f_Allison    asterisk-core-sounds-es-g722  Allison  293 Mexican Spanish prompts
fr_CA_f_June       asterisk-core-sounds-fr-g722  June     353 Canadian French prompts
=================  ==========================  =======  ==============================

Layout (``/usr/share/asterisk/sounds/<voice>/<prompt>.g722``; sub-directories
hold digits, letters and other single words): each file is a raw G.722 stream
(ITU-T wideband speech codec, 64 kbit/s, 16 kHz audio band-limited to 7 kHz), so
its length in seconds is its size / 8000 bytes.  ffmpeg decodes it (argument
list, no shell) to 16 kHz float32.

DNSMOS P.835 of 20 prompts per voice (2-7 s, measured): en SIG 3.48 / BAK 4.02 /
OVRL 3.18, es 3.56 / 3.43 / 2.89, fr 3.56 / 3.97 / 3.22 -- clean studio speech.
The SQA corpus can train on them as clean speech (opt-in: ``chorus-synth sqa --real-prompts N``,
:mod:`pyutils.synth.sqa_corpus`; off in every preset, egs/sqa/RESULTS.md).

    python -m pyutils.corpora.asterisk_prompts [--max-per-voice 5]   # list a selection
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Sequence, Tuple

import numpy as np

ROOT = Path("/usr/share/asterisk/sounds")
# voice directory -> talker (one talker recorded both the English and the Spanish prompts)
VOICES = {"en_US_f_Allison": "allison", "es_MX_f_Allison": "allison", "fr_CA_f_June": "june"}
G722_BYTES_PER_S = 8000      # 64 kbit/s
SAMPLE_RATE = 16000


class AsteriskPromptError(RuntimeError):
    pass


def prompts(root: Path | None = None, max_per_voice: int = 50, min_s: float = 2.0, max_s: float = 7.0,
            voices: Sequence[str] = tuple(VOICES)) -> List[Tuple[str, str, str]]:
    """``[(prompt_id, path, talker), ...]``: per voice directory, the top-level prompts of
    ``min_s``..``max_s`` seconds (by file size), sorted by name, then ``max_per_voice`` of
    them spread evenly over that list (a fixed selection). Empty when the package is absent."""
    out = []
    for voice in voices:
        d = Path(ROOT if root is None else root) / voice
        if not d.is_dir():
            continue
        files = sorted(p for p in d.glob("*.g722")
                       if p.is_file() and min_s <= p.stat().st_size / G722_BYTES_PER_S <= max_s)
        if max_per_voice < len(files):
            idx = np.linspace(0, len(files) - 1, max(0, max_per_voice)).round().astype(int)
            files = [files[i] for i in sorted(set(idx.tolist()))]
        out += [(f"{voice}_{p.stem}", str(p), VOICES[voice]) for p in files]
    return out


def read_g722(path: str) -> Tuple[np.ndarray, int]:
    """Decode a raw G.722 file with ffmpeg -> (float32 mono samples, 16000)."""
    from pyutils.audio import run_ffmpeg

    raw = ["-f", "f32le", "-ac", "1", "-ar", str(SAMPLE_RATE), "pipe:1"]
    out = run_ffmpeg(["-f", "g722", "-i", "pipe:0"] + raw, Path(path).read_bytes(), f"{path} (raw G.722)")
    x = np.frombuffer(out, dtype="<f4").astype(np.float32)
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise AsteriskPromptError(f"{path}: decoded to {'nothing' if x.size == 0 else 'non-finite samples'}")
    return x, SAMPLE_RATE


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pyutils.corpora.asterisk_prompts",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=ROOT)
    ap.add_argument("--max-per-voice", type=int, default=50)
    a = ap.parse_args(argv)
    rows = prompts(a.root, a.max_per_voice)
    if not rows:
        print(f"asterisk_prompts: no prompts under {a.root} (apt-get install asterisk-core-sounds-en-g722 "
              "asterisk-core-sounds-es-g722 asterisk-core-sounds-fr-g722)", file=sys.stderr)
        return 1
    for pid, path, talker in rows:
        print(f"{pid}\t{talker}\t{path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
