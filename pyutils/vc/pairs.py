"""Read and validate a VC pairs list; write Kaldi data dirs for its two sides.

A pairs list is a TSV with one conversion request per line::

    source_path<TAB>target_path<TAB>converted_name.wav[<TAB>source transcript]

(the VLSP 2025 VC layout; ``chorus-synth vc`` writes the same). Relative
audio paths are taken relative to ``audio_root`` (default: the TSV's folder).
Blank lines are skipped.

Source transcripts (optional) make the evaluation's WER compare the output
with what the source really says, instead of with the recipe ASR's own
transcript of the source. Give them either as a fourth column (then on every
line) or with ``--src-text FILE``: a Kaldi ``text`` file (``<id> <transcript>``)
keyed by the pair id (the output name without ``.wav``) or by the source id
(the source file name without its extension); the pair id is looked up first.
Not both at once.

Every problem of the whole list is collected before anything is converted,
so a user fixes the list once, not one line per run: bad field counts,
missing or unreadable audio (each side), bad or duplicate output names.

CLI (used by local/vc.sh stage 6)::

    python -m pyutils.vc.pairs --pairs pairs/test.tsv \
        [--audio-root DIR] [--src-text-dir data/test_src] \
        --out-src data/test_pairs_src --out-ref data/test_pairs_ref [--src-text FILE]

writes ``wav.scp utt2spk spk2utt`` (and ``text`` for the source side when
the source transcripts are known) keyed by the pair id (output name without
``.wav``), plus ``pairs.tsv`` (pair_id, source, target, name; absolute paths).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple

from pyutils.datadir import read_kv, write_kv
from pyutils.io import atomic_write_lines

_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+\.wav$")


class PairsError(Exception):
    """All problems of one pairs list; ``problems`` holds one line each."""

    def __init__(self, path: str, problems: List[str]) -> None:
        self.path = path
        self.problems = list(problems)
        head = f"{path}: {len(problems)} problem(s) in the pairs list; nothing was converted:"
        super().__init__("\n".join([head] + ["  " + p for p in problems]))


@dataclass(frozen=True)
class Pair:
    line: int          # 1-based line in the TSV
    source: str        # absolute path of the source utterance
    target: str        # absolute path of the reference clip of the target voice
    name: str          # output file name, e.g. ``pair_0001.wav``
    text: Optional[str] = None   # the user's transcript of the source, when given

    @property
    def pair_id(self) -> str:
        return self.name[: -len(".wav")]


def _audio_problem(path: str) -> Optional[str]:
    """Why ``path`` cannot be used as audio, or None when soundfile reads it."""
    if not os.path.exists(path):
        return "file not found"
    if not os.path.isfile(path):
        return "not a regular file"
    try:
        import soundfile

        info = soundfile.info(path)
    except Exception as exc:  # soundfile raises RuntimeError/LibsndfileError
        return f"unreadable audio ({' '.join(str(exc).split())[:120]})"
    if info.frames <= 0:
        return "audio has no samples"
    return None


def read_src_text(path: str, problems: List[str]) -> Optional[Dict[str, str]]:
    """``<id> <transcript>`` lines of a Kaldi text; problems (``FILE:LINE: CODE: ...``,
    codes UNREADABLE_TEXT, EMPTY_TEXT, DUPLICATE_ID) are appended to ``problems``.
    None when the file cannot be opened at all."""
    out: Dict[str, str] = {}
    seen: Dict[str, int] = {}
    try:
        with open(path, "rb") as handle:
            raw_lines = handle.read().split(b"\n")
    except OSError as exc:
        problems.append(f"{path}: UNREADABLE_TEXT: {exc.strerror or exc}")
        return None
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    for line_no, raw in enumerate(raw_lines, start=1):
        where = f"{path}:{line_no}"
        try:
            line = raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as exc:
            problems.append(f"{where}: UNREADABLE_TEXT: not valid UTF-8 ({exc.reason} at byte {exc.start})")
            continue
        if not line.strip():
            continue
        parts = line.split(maxsplit=1)
        key = parts[0]
        text = " ".join(parts[1].split()) if len(parts) > 1 else ""
        if not text:
            problems.append(f"{where}: EMPTY_TEXT: {key!r} has no transcript")
        elif key in seen:
            problems.append(f"{where}: DUPLICATE_ID: {key!r} already on line {seen[key]}")
        else:
            seen[key] = line_no
            out[key] = text
    return out


def read_pairs(path: str, audio_root: Optional[str] = None,
               check_audio: bool = True, src_text: Optional[str] = None) -> List[Pair]:
    """Parse and validate ``path``; raise :class:`PairsError` listing every problem.

    Problem lines read ``TSV:LINE: CODE: message`` with codes BAD_FIELDS,
    SOURCE_MISSING, SOURCE_UNREADABLE, TARGET_MISSING, TARGET_UNREADABLE,
    BAD_NAME, DUPLICATE_NAME, EMPTY, and for transcripts EMPTY_TEXT,
    TEXT_MISSING (a line without the fourth column in a list that has it),
    NO_TRANSCRIPT (pair absent from ``src_text``), TEXT_TWICE, plus the
    problems of the ``src_text`` file itself (:func:`read_src_text`).
    """
    root = audio_root if audio_root is not None else os.path.dirname(os.path.abspath(path))
    problems: List[str] = []
    pairs: List[Pair] = []
    seen: Dict[str, int] = {}
    try:
        with open(path, "r", encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise PairsError(path, [f"{path}: UNREADABLE_LIST: {exc}"]) from None

    texts_by_id = read_src_text(src_text, problems) if src_text else None
    with_text: List[int] = []
    without_text: List[int] = []
    for line_no, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        where = f"{path}:{line_no}"
        fields = raw.rstrip("\r").split("\t")
        if len(fields) not in (3, 4) or not all(f.strip() for f in fields[:3]):
            problems.append(f"{where}: BAD_FIELDS: expected 3 tab-separated fields "
                            f"(source, target, converted_name) and an optional source transcript, "
                            f"got {len(fields)}")
            continue
        src, tgt, name = (f.strip() for f in fields[:3])
        text: Optional[str] = None
        if len(fields) == 4:
            text = " ".join(fields[3].split())
            with_text.append(line_no)
            if not text:
                problems.append(f"{where}: EMPTY_TEXT: the fourth column (source transcript) is empty")
        else:
            without_text.append(line_no)
        src_abs = os.path.abspath(os.path.join(root, src))
        tgt_abs = os.path.abspath(os.path.join(root, tgt))
        if check_audio:
            for side, p_abs, p_raw in (("SOURCE", src_abs, src), ("TARGET", tgt_abs, tgt)):
                why = _audio_problem(p_abs)
                if why is not None:
                    code = f"{side}_MISSING" if why == "file not found" else f"{side}_UNREADABLE"
                    problems.append(f"{where}: {code}: {p_raw}: {why}")
        if not _NAME_RE.match(name):
            problems.append(f"{where}: BAD_NAME: {name!r} must be a plain file name "
                            "ending in .wav (letters, digits, _ . -)")
        elif name in seen:
            problems.append(f"{where}: DUPLICATE_NAME: {name} already used on line {seen[name]}")
        else:
            seen[name] = line_no
        if texts_by_id is not None and len(fields) == 3:
            stem = os.path.splitext(os.path.basename(src))[0]
            text = texts_by_id.get(name[: -len(".wav")] if name.endswith(".wav") else name,
                                   texts_by_id.get(stem))
            if text is None:
                problems.append(f"{where}: NO_TRANSCRIPT: neither the pair id {name[:-4]!r} nor the "
                                f"source id {stem!r} is in {src_text}")
        pairs.append(Pair(line_no, src_abs, tgt_abs, name, text or None))
    if with_text and without_text:
        problems.append(f"{path}:{without_text[0]}: TEXT_MISSING: line {with_text[0]} gives a source "
                        f"transcript (fourth column) but {len(without_text)} line(s) do not, "
                        f"first this one; give it on every line or on none")
    if with_text and src_text:
        problems.append(f"{path}:{with_text[0]}: TEXT_TWICE: the list has a transcript column and "
                        f"--src-text {src_text} was given; use one of them")
    if not pairs and not problems:
        problems.append(f"{path}: EMPTY: no pairs in the list")
    if problems:
        raise PairsError(path, problems)
    return pairs


def _transcripts_by_path(text_dir: str) -> Dict[str, str]:
    """Map absolute audio path -> transcript from a Kaldi dir (wav.scp + text)."""
    wav = read_kv(os.path.join(text_dir, "wav.scp"))
    text = read_kv(os.path.join(text_dir, "text"))
    out: Dict[str, str] = {}
    for utt, entry in wav.items():
        if utt in text and not entry.rstrip().endswith("|"):
            out[os.path.abspath(entry.strip())] = text[utt]
    return out


def write_pair_dirs(pairs: Iterable[Pair], out_src: str, out_ref: str,
                    src_text: Optional[Dict[str, str]] = None) -> Tuple[int, int]:
    """Write the source-side and reference-side Kaldi dirs keyed by pair id.

    Each pair is its own "speaker" (the reference speaker of a zero-shot pair
    is not known by name). The source side gets ``text`` when every pair has a
    transcript: the user's (``Pair.text``) first, else ``src_text`` (by source
    path). Returns (number of pairs, number with a transcript).
    """
    pairs = sorted(pairs, key=lambda p: p.pair_id)
    for out, side in ((out_src, "source"), (out_ref, "target")):
        os.makedirs(out, exist_ok=True)
        wav = {p.pair_id: getattr(p, side) for p in pairs}
        spk = {p.pair_id: p.pair_id for p in pairs}
        write_kv(os.path.join(out, "wav.scp"), wav)
        write_kv(os.path.join(out, "utt2spk"), spk)
        write_kv(os.path.join(out, "spk2utt"), spk)
    src_text = src_text or {}
    text = {p.pair_id: p.text if p.text else src_text[p.source]
            for p in pairs if p.text or p.source in src_text}
    n_text = len(text)
    if n_text and n_text == len(pairs):
        write_kv(os.path.join(out_src, "text"), text)
    elif os.path.exists(os.path.join(out_src, "text")):
        os.remove(os.path.join(out_src, "text"))
    atomic_write_lines(os.path.join(out_src, "pairs.tsv"),
                       [f"{p.pair_id}\t{p.source}\t{p.target}\t{p.name}\n" for p in pairs])
    return len(pairs), n_text


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", required=True, help="TSV: source<TAB>target<TAB>name.wav")
    ap.add_argument("--audio-root", default=None, help="base of relative paths (default: TSV folder)")
    ap.add_argument("--src-text-dir", default=None,
                    help="Kaldi dir with wav.scp+text giving the source transcripts")
    ap.add_argument("--src-text", default=None,
                    help="Kaldi text with the source transcripts, keyed by pair id or source id "
                         "(instead of a fourth column in the list)")
    ap.add_argument("--out-src", default=None)
    ap.add_argument("--out-ref", default=None)
    args = ap.parse_args(argv)
    try:
        pairs = read_pairs(args.pairs, args.audio_root, src_text=args.src_text)
    except PairsError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    n_user = sum(1 for p in pairs if p.text)
    print(f"{args.pairs}: {len(pairs)} pairs OK" + (f", {n_user} with the user's source transcript" if n_user else ""))
    if args.out_src and args.out_ref:
        src_text = _transcripts_by_path(args.src_text_dir) if args.src_text_dir else None
        n, n_text = write_pair_dirs(pairs, args.out_src, args.out_ref, src_text)
        print(f"wrote {args.out_src} and {args.out_ref}: {n} pairs, "
              f"{n_text} with a source transcript")
    return 0


if __name__ == "__main__":
    sys.exit(main())
