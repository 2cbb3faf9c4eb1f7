"""Build a Track 1 submission from an ESPnet/Kaldi decode ``text`` file.

``<utt_id> <tagged text>`` per line (the text may be empty). Repairs, each
counted and reported as a warning:

- ESPnet-internal tag spellings: inside ``[...]`` underscores and hyphens
  become spaces before the official label normalisation, so
  ``[throat_clearing]`` -> ``[throat clearing]``, ``[Laugh]`` -> ``[laugh]``;
- tags that are empty or not one of the 16 challenge tags are removed;
- stray ``[`` / ``]`` (unmatched or nested) left in the text are removed;
- ESPnet special tokens such as ``<unk>``, ``<blank>``, ``<sos/eos>`` are
  removed (they would otherwise count as a word: ``<`` and ``>`` are ignored
  as symbols, ``unk`` would stay);
- with ``--ref-ids``: missing ids get an empty hypothesis, ids not in the
  reference are dropped, rows follow the reference order.

The result is validated with the Track 1 rules before it is written (temp
file + rename). ``--zip`` writes a zip with exactly one ``.jsonl`` at its root
(what CodaBench expects).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import zipfile
from typing import Dict, List, Optional

from pyutils.scoring.errors import ScoringError
from pyutils.io import iter_lines
from pyutils.io import iter_kaldi_text
from pyutils.scoring.io import atomic_write_chunks
from pyutils.scoring.textnorm import TAG_RE, parse_tagged
from pyutils.tags import challenge_tags, normalize_tag_label
from pyutils.file_mode import follow_umask

_SPACES = re.compile(r"[ \t]{2,}")
_SPECIAL = re.compile(r"(?<!\S)<[^<>\s\[\]]+>(?!\S)")


def repair_text(text: str, counts: Dict[str, int]) -> str:
    """Official-form tagged text (see module docstring); updates ``counts``."""
    valid = set(challenge_tags())
    text, n_special = _SPECIAL.subn(" ", text)
    if n_special:
        counts["special_tokens_removed"] += n_special
    pieces: List[str] = []
    cursor = 0

    def plain(seg: str) -> str:
        if "[" in seg or "]" in seg:
            counts["stray_brackets_removed"] += seg.count("[") + seg.count("]")
            seg = seg.replace("[", " ").replace("]", " ")
        return seg

    for m in TAG_RE.finditer(text):
        pieces.append(plain(text[cursor:m.start()]))
        label = normalize_tag_label(re.sub(r"[_\-]", " ", m.group(1)))
        if label in valid:
            if f"[{label}]" != m.group(0):
                counts["tags_respelled"] += 1
            pieces.append(f" [{label}] ")
        else:
            counts["unsupported_tags_removed"] += 1
            pieces.append(" ")
        cursor = m.end()
    pieces.append(plain(text[cursor:]))
    out = "".join(pieces)
    return _SPACES.sub(" ", out).strip() if (out != text or n_special) else text.strip()


def _ref_ids(path: str) -> List[str]:
    """Reference JSONL (``utt_id`` field) or a plain list (first column)."""
    ids: List[str] = []
    for k, ln in iter_lines(path, bom="strip"):
        if not ln.strip():
            continue
        if ln.lstrip().startswith("{"):
            try:
                obj = json.loads(ln)
            except json.JSONDecodeError as exc:
                raise ScoringError("INVALID_JSON", f"invalid JSON: {exc.msg}", path, k) from None
            if not isinstance(obj, dict) or not isinstance(obj.get("utt_id"), str) or not obj["utt_id"].strip():
                raise ScoringError("MISSING_REQUIRED_FIELD", "row without a string 'utt_id'", path, k)
            ids.append(obj["utt_id"].strip())
        else:
            ids.append(ln.split()[0])
    return ids


def package_track1(text_path: str, out_path: str, ref_ids: Optional[str] = None,
                   zip_path: Optional[str] = None) -> List[str]:
    counts = {"tags_respelled": 0, "unsupported_tags_removed": 0, "stray_brackets_removed": 0,
              "special_tokens_removed": 0,
              "missing_filled_empty": 0, "unknown_dropped": 0, "duplicates_dropped": 0}
    hyps: Dict[str, str] = {}
    where: Dict[str, str] = {}  # the first place each repair was made, for the warning
    for line, utt, text in list(iter_kaldi_text(text_path)):
        if utt in hyps:
            counts["duplicates_dropped"] += 1  # keep the first, as a Kaldi sort -u would not guarantee
            where.setdefault("duplicates_dropped", f"{text_path}:{line}: {utt!r}")
            continue
        n_unsupported = counts["unsupported_tags_removed"]
        hyps[utt] = repair_text(text, counts)
        if counts["unsupported_tags_removed"] > n_unsupported:
            where.setdefault("unsupported_tags_removed", f"{text_path}:{line}")
    if ref_ids:
        ids = _ref_ids(ref_ids)
        if not ids:
            raise ScoringError("EMPTY_FILE", "no reference ids", ref_ids)
        counts["unknown_dropped"] = len(set(hyps) - set(ids))
        counts["missing_filled_empty"] = sum(1 for u in ids if u not in hyps)
        rows = [(u, hyps.get(u, "")) for u in dict.fromkeys(ids)]
    else:
        rows = sorted(hyps.items())
    if not rows:
        raise ScoringError("EMPTY_FILE", "no utterances to package", text_path)
    for k, (u, t) in enumerate(rows, 1):  # final check with the official rules
        try:
            parse_tagged(t, "en")
        except ScoringError as exc:  # pragma: no cover - repair_text guarantees validity
            raise exc.located(out_path, k)
    atomic_write_chunks(out_path, (json.dumps({"utt_id": u, "text_with_nvvs": t}, ensure_ascii=False) + "\n"
                                   for u, t in rows))
    lines = [f"wrote {out_path}: {len(rows)} utterances"
             + (f" (ids from {ref_ids})" if ref_ids else " (ids from the decode text; no --ref-ids given)")]
    for key, n in counts.items():
        if n:
            lines.append(f"  WARNING {key.replace('_', ' ')}: {n}"
                         + (f" (first: {where[key]})" if key in where else ""))
    if zip_path:
        _write_zip(zip_path, out_path)
        lines.append(f"wrote {zip_path} (one file at its root: {os.path.basename(out_path)})")
    return lines


def _write_zip(zip_path: str, member: str) -> None:
    """``zip_path`` holding ``member`` at its root, written atomically."""
    tmp = None
    try:
        folder = os.path.dirname(os.path.abspath(zip_path))
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp.", suffix=".zip", dir=folder)
        follow_umask(fd)  # mkstemp makes 0600; outputs follow the umask
        os.close(fd)
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.write(member, arcname=os.path.basename(member))
        os.replace(tmp, zip_path)
    except OSError as exc:
        raise ScoringError("OUTPUT_WRITE_ERROR", f"cannot write ({exc.strerror or type(exc).__name__})",
                           zip_path) from None
    finally:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
