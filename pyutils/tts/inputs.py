"""Checks of TTS input before any synthesis runs, and conversion to a Kaldi data dir.

Input is JSONL, one object per line: ``{"utt_id": ..., "text_with_nvvs": ...}``
(other keys such as ``language`` are allowed). Every problem is reported as
``file:line: CODE: message`` (the format of ``chorus-score``) and nothing is
written when any line is bad.

Codes: BAD_JSON, NOT_OBJECT, MISSING_UTT_ID, BAD_UTT_ID, DUPLICATE_UTT_ID,
MISSING_TEXT, EMPTY_TEXT, UNKNOWN_TAG, BAD_BRACKETS, and with ``--lang`` FOREIGN_CHARACTERS
(letters of another script or emoji: :func:`pyutils.tts.frontend.foreign_characters`), so that
every bad row of a file is named at once, before the front-end would stop at the first.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from pyutils.io import atomic_write_lines
from pyutils.tts.frontend import FrontendError, foreign_characters, split_tagged

# utt_id becomes a file name (<utt_id>.wav) and a Kaldi key: no spaces, no slashes.
UTT_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


@dataclass
class InputProblem:
    path: str
    line: int
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.code}: {self.message}"


def check_text(text, lang: Optional[str] = None) -> Optional[Tuple[str, str]]:
    """Return (code, message) if a tagged text cannot be synthesised (in ``lang``, if given), else None."""
    if not isinstance(text, str):
        return "MISSING_TEXT", "text_with_nvvs must be a string"
    if not text.strip():
        return "EMPTY_TEXT", "text_with_nvvs is empty"
    try:
        items = split_tagged(text)
    except FrontendError as e:
        code = "UNKNOWN_TAG" if "unknown tag" in str(e) else "BAD_BRACKETS"
        return code, str(e)
    if not items:
        return "EMPTY_TEXT", "text_with_nvvs has nothing to say"
    if lang:
        bad = foreign_characters(text, lang)
        if bad:
            return "FOREIGN_CHARACTERS", (f"characters outside the {lang} front-end's inventory: "
                                          + " ".join(repr(c) for c in bad))
    return None


def read_tts_jsonl(path: str, lang: Optional[str] = None) -> Tuple[List[Tuple[str, str]], List[InputProblem]]:
    """Parse and check a TTS input JSONL; returns ((utt_id, text) rows, problems)."""
    rows: List[Tuple[str, str]] = []
    problems: List[InputProblem] = []
    seen: Dict[str, int] = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                problems.append(InputProblem(path, lineno, "BAD_JSON", f"not valid JSON ({e.msg})"))
                continue
            if not isinstance(obj, dict):
                problems.append(InputProblem(path, lineno, "NOT_OBJECT", "each line must be a JSON object"))
                continue
            uid = obj.get("utt_id")
            if uid is None or (isinstance(uid, str) and not uid.strip()):
                problems.append(InputProblem(path, lineno, "MISSING_UTT_ID", "utt_id is missing or empty"))
                continue
            if not isinstance(uid, str) or not UTT_ID_RE.match(uid):
                problems.append(InputProblem(path, lineno, "BAD_UTT_ID",
                                             f"utt_id {uid!r} must match {UTT_ID_RE.pattern} (it becomes a file name)"))
                continue
            if uid in seen:
                problems.append(InputProblem(path, lineno, "DUPLICATE_UTT_ID",
                                             f"utt_id {uid!r} already used on line {seen[uid]}"))
                continue
            seen[uid] = lineno
            if "text_with_nvvs" not in obj:
                problems.append(InputProblem(path, lineno, "MISSING_TEXT", f"{uid}: text_with_nvvs is missing"))
                continue
            bad = check_text(obj["text_with_nvvs"], lang)
            if bad:
                problems.append(InputProblem(path, lineno, bad[0], f"{uid}: {bad[1]}"))
                continue
            rows.append((uid, " ".join(obj["text_with_nvvs"].split())))
    if not rows and not problems:
        problems.append(InputProblem(path, 1, "EMPTY_FILE", "no input rows"))
    return rows, problems


def check_kaldi_text(path: str, lang: Optional[str] = None) -> List[InputProblem]:
    """Same checks for a Kaldi ``text`` file (``<utt_id> <tagged text>``)."""
    problems = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.rstrip("\n").split(maxsplit=1)
            if not parts:
                continue
            bad = check_text(parts[1] if len(parts) > 1 else "", lang)
            if bad:
                problems.append(InputProblem(path, lineno, bad[0], f"{parts[0]}: {bad[1]}"))
    return problems


def jsonl_to_datadir(path: str, out_dir: str, spk: str, lang: Optional[str] = None) -> int:
    """Write ``text``, ``utt2spk``, ``spk2utt`` for synthesis (all rows use voice ``spk``)."""
    rows, problems = read_tts_jsonl(path, lang)
    if problems:
        raise ValueError("\n".join(map(str, problems)))
    rows.sort()
    os.makedirs(out_dir, exist_ok=True)
    atomic_write_lines(os.path.join(out_dir, "text"), [f"{u} {t}\n" for u, t in rows])
    atomic_write_lines(os.path.join(out_dir, "utt2spk"), [f"{u} {spk}\n" for u, _ in rows])
    atomic_write_lines(os.path.join(out_dir, "spk2utt"), [f"{spk} {' '.join(u for u, _ in rows)}\n"])
    return len(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Check TTS input (JSONL or Kaldi text) before synthesis; "
                                "optionally turn a JSONL into a data dir.")
    p.add_argument("input", help="JSONL ({utt_id, text_with_nvvs}) or, with --kaldi-text, a Kaldi text file")
    p.add_argument("--kaldi-text", action="store_true", help="input is a Kaldi text file")
    p.add_argument("--to-datadir", metavar="DIR", help="write text/utt2spk/spk2utt into DIR")
    p.add_argument("--spk", default="spk0", help="speaker (voice) of every row in --to-datadir")
    p.add_argument("--lang", help="also refuse characters outside this language's front-end (en, zh, vi, ...)")
    a = p.parse_args(argv)
    if a.kaldi_text:
        problems = check_kaldi_text(a.input, a.lang)
        n = sum(1 for line in open(a.input, encoding="utf-8") if line.strip())
    else:
        rows, problems = read_tts_jsonl(a.input, a.lang)
        n = len(rows)
    for prob in problems:
        print(prob, file=sys.stderr)
    if problems:
        print(f"error: {len(problems)} bad line(s) in {a.input}; nothing synthesised", file=sys.stderr)
        return 2
    if a.to_datadir:
        jsonl_to_datadir(a.input, a.to_datadir, a.spk, a.lang)
    print(f"{a.input}: {n} utterances OK", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
