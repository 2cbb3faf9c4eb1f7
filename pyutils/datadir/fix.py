"""Repair a Kaldi data dir in place (Kaldi's fix_data_dir.sh, with a report).

Keeps the utterances present in utt2spk AND every other utterance file
(text, segments, utt2dur, ...) whose recording is in wav.scp; then drops
recordings and speakers nobody uses, regenerates spk2utt, sorts every file
in byte order and writes atomically. Originals go to ``<dir>/.backup/``.
Unparsable lines and repeated ids (first one kept) are dropped and counted.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .datadir import EMPTY_OK_PREFIXES, file_kind, spk2utt_from_utt2spk
from .io import byte_key, iter_lines, write_kv


@dataclass
class FixReport:
    path: Path
    total: int = 0
    kept: int = 0
    missing_in: dict[str, int] = field(default_factory=dict)
    bad_lines: dict[str, int] = field(default_factory=dict)
    duplicates: dict[str, int] = field(default_factory=dict)
    bad_segments: int = 0
    written: list[str] = field(default_factory=list)

    def message(self) -> str:
        dropped = self.total - self.kept
        msg = f"fix: kept {self.kept} of {self.total} utterances"
        if dropped:
            reasons = [f"{name}: {n}" for name, n in self.missing_in.items() if n]
            if reasons:
                reasons[0] = "missing in " + reasons[0]
            if self.bad_segments:
                reasons.append(f"bad segment times: {self.bad_segments}")
            msg += f"; dropped {dropped} ({', '.join(reasons)})"
        extras = []
        for what, counts in (("malformed lines", self.bad_lines),
                             ("repeated ids", self.duplicates)):
            if counts:
                extras.append(f"{what} removed: " + ", ".join(f"{k}: {v}" for k, v in counts.items()))
        if extras:
            msg += "; " + "; ".join(extras)
        return msg


def _read_lenient(path: Path, rep: FixReport) -> dict[str, str]:
    out: dict[str, str] = {}
    empty_ok = path.name.startswith(EMPTY_OK_PREFIXES)
    for _lineno, line in iter_lines(path):
        parts = line.split(None, 1)
        if not parts or line[0].isspace() or (len(parts) < 2 and not empty_ok):
            if line.strip():
                rep.bad_lines[path.name] = rep.bad_lines.get(path.name, 0) + 1
            continue
        key, value = parts[0], (parts[1].strip() if len(parts) > 1 else "")
        if key in out:
            rep.duplicates[path.name] = rep.duplicates.get(path.name, 0) + 1
            continue
        out[key] = value
    return out


def fix_data_dir(path, *, backup: bool = True) -> FixReport:
    """Fix ``path`` in place; return a :class:`FixReport` (see module doc)."""
    path = Path(path)
    rep = FixReport(path)
    if not path.is_dir():
        raise FileNotFoundError(f"data dir {path} does not exist")
    files: dict[str, dict[str, str]] = {}
    for entry in sorted(path.iterdir(), key=lambda p: byte_key(p.name)):
        if entry.is_file() and file_kind(entry.name) is not None:
            files[entry.name] = _read_lenient(entry, rep)

    if "utt2spk" not in files:
        if "spk2utt" not in files:
            raise FileNotFoundError(f"{path}: neither utt2spk nor spk2utt exists")
        files["utt2spk"] = {u: s for s, v in files["spk2utt"].items() for u in v.split()}
    utt2spk = {u: s.split()[0] for u, s in files["utt2spk"].items()}
    files["utt2spk"] = utt2spk
    rep.total = len(utt2spk)
    keep = set(utt2spk)

    def drop(missing: set[str], reason: str) -> None:
        nonlocal keep
        gone = keep & missing
        if gone:
            rep.missing_in[reason] = rep.missing_in.get(reason, 0) + len(gone)
            keep -= gone

    for name, content in files.items():
        if file_kind(name) == "utt" and name != "utt2spk":
            drop(keep - set(content), name)

    seg = files.get("segments")
    if seg is not None:
        bad = set()
        for utt, value in seg.items():
            f = value.split()
            try:
                ok = len(f) in (3, 4) and 0 <= float(f[1]) < float(f[2])
            except ValueError:
                ok = False
            if not ok:
                bad.add(utt)
        rep.bad_segments = len(keep & bad)
        keep -= bad
        utt2reco = {u: seg[u].split()[0] for u in keep}
    else:
        utt2reco = {u: u for u in keep}
    if "wav.scp" in files:
        drop({u for u in keep if utt2reco[u] not in files["wav.scp"]}, "wav.scp")
    for name, content in files.items():
        if file_kind(name) == "reco" and name != "wav.scp":
            drop({u for u in keep if utt2reco[u] not in content}, name)

    rep.kept = len(keep)
    recos = {utt2reco[u] for u in keep}
    spks = {utt2spk[u] for u in keep}
    out: dict[str, dict[str, str]] = {}
    for name, content in files.items():
        kind = file_kind(name)
        if kind == "utt":
            out[name] = {k: v for k, v in content.items() if k in keep}
        elif kind == "reco":
            out[name] = {k: v for k, v in content.items() if k in recos}
        elif kind == "spk":
            out[name] = {k: v for k, v in content.items() if k in spks}
    out["spk2utt"] = spk2utt_from_utt2spk(out["utt2spk"])

    if backup:
        bdir = path / ".backup"
        bdir.mkdir(exist_ok=True)
        for name in out:
            if (path / name).is_file():
                shutil.copy2(path / name, bdir / name)
    for name, content in out.items():
        write_kv(path / name, content)
        rep.written.append(name)
    return rep
