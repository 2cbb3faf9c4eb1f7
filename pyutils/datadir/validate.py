"""Validate a Kaldi data dir (what Kaldi's validate_data_dir.sh checks, and more).

Checks, each problem reported as ``FILE:LINE: message``:

* required files: utt2spk, spk2utt, wav.scp (or feats.scp);
* every keyed file: no empty/indented lines, a value where one is needed,
  unique keys, keys in byte order (``LC_ALL=C sort``), UTF-8, no CR;
* field formats: utt2spk one speaker; segments ``reco start end [channel]``
  with 0 <= start < end; utt2dur/reco2dur positive numbers;
* consistency: every utterance file has exactly the utterances of utt2spk;
  spk2utt is the inverse of utt2spk; wav.scp covers every recording;
  segment ends within reco2dur when known;
* audio (unless ``audio_check=False``): every wav.scp entry is readable --
  files through their header (soundfile), pipes are run -- in parallel.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .datadir import EMPTY_OK_PREFIXES, file_kind, sorted_ids
from .io import AudioReadError, DataDirError, byte_key, iter_lines, wav_scp_entry_duration

MAX_LISTED_IDS = 3


def format_duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"


@dataclass
class Report:
    """Outcome of :func:`validate_data_dir`."""

    path: Path
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    num_utts: int = 0
    num_spks: int = 0
    num_recos: int = 0
    audio_seconds: float | None = None
    sample_rates: dict[int, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        s = (f"{self.path}: {self.num_utts} utterances, {self.num_spks} speakers, "
             f"{self.num_recos} recordings")
        if self.audio_seconds is not None:
            s += f", {format_duration(self.audio_seconds)} of audio"
        return s


@dataclass
class _File:
    data: dict[str, str]
    lines: dict[str, int]


def _ids(ids, n=MAX_LISTED_IDS) -> str:
    ids = sorted_ids(ids)
    more = f" and {len(ids) - n} more" if len(ids) > n else ""
    return ", ".join(ids[:n]) + more


def _scan(path: Path, rep: Report) -> _File | None:
    """Read one keyed file, recording format problems; None if unreadable."""
    name = path.name
    data: dict[str, str] = {}
    lines: dict[str, int] = {}
    prev_key, prev_line = None, 0
    empty_ok = name.startswith(EMPTY_OK_PREFIXES)
    try:
        for lineno, line in iter_lines(path):
            where = f"{path}:{lineno}"
            if not line.strip():
                rep.errors.append(f"{where}: empty line")
                continue
            if line[0].isspace():
                rep.errors.append(f"{where}: line starts with whitespace")
                continue
            parts = line.split(None, 1)
            key, value = parts[0], (parts[1].strip() if len(parts) > 1 else "")
            if not value and not empty_ok:
                rep.errors.append(f"{where}: expected '<id> <value>', got {line[:60]!r}")
                continue
            if key in data:
                rep.errors.append(f"{where}: duplicate id {key!r} (first on line {lines[key]})")
                continue
            if prev_key is not None and byte_key(key) < byte_key(prev_key):
                rep.errors.append(f"{where}: not sorted: {key!r} comes after {prev_key!r} "
                                  f"(line {prev_line}); sort with `LC_ALL=C sort` or run "
                                  "utils/fix_data_dir.sh")
            prev_key, prev_line = key, lineno
            data[key] = value
            lines[key] = lineno
            _check_fields(name, where, key, value, rep)
    except DataDirError as e:
        rep.errors.append(str(e))
        return None
    return _File(data, lines)


def _check_fields(name: str, where: str, key: str, value: str, rep: Report) -> None:
    if name == "utt2spk" and len(value.split()) != 1:
        rep.errors.append(f"{where}: utt2spk needs exactly one speaker for {key!r}, got {value!r}")
    elif name == "segments":
        f = value.split()
        if len(f) not in (3, 4):
            rep.errors.append(f"{where}: segments needs '<utt> <recording> <start> <end> "
                              f"[<channel>]', got {key} {value}")
            return
        try:
            start, end = float(f[1]), float(f[2])
        except ValueError:
            rep.errors.append(f"{where}: segments start/end are not numbers: {f[1]!r} {f[2]!r}")
            return
        if start < 0 or end <= start:
            rep.errors.append(f"{where}: bad segment times for {key!r}: start={start} end={end}")
    elif name in ("utt2dur", "reco2dur"):
        try:
            dur = float(value)
        except ValueError:
            rep.errors.append(f"{where}: duration is not a number: {value!r}")
            return
        if not dur > 0:
            rep.errors.append(f"{where}: duration must be positive, got {value}")


def _compare_ids(name: str, f: _File, path: Path, want: set[str], what: str,
                 ref_name: str, rep: Report) -> None:
    have = set(f.data)
    missing = want - have
    extra = have - want
    if missing:
        rep.errors.append(f"{path / name}: {len(missing)} {what}(s) of {ref_name} missing: "
                          f"{_ids(missing)}")
    if extra:
        first = min(extra, key=lambda k: f.lines[k])
        rep.errors.append(f"{path / name}:{f.lines[first]}: {len(extra)} {what}(s) not in "
                          f"{ref_name}: {_ids(extra)}")


def validate_data_dir(path: str | os.PathLike, *, audio_check: bool = True,
                      nj: int | None = None, require_wav: bool = True) -> Report:
    """Check a data dir; return a :class:`Report` (``report.ok``).

    ``audio_check=False`` skips opening audio; ``require_wav=False`` accepts a
    dir without wav.scp/feats.scp (Kaldi's ``--no-wav``).
    """
    path = Path(path)
    rep = Report(path)
    if not path.is_dir():
        rep.errors.append(f"{path}: not a directory")
        return rep
    files: dict[str, _File] = {}
    for entry in sorted(path.iterdir(), key=lambda p: byte_key(p.name)):
        if entry.is_file() and file_kind(entry.name) is not None:
            scanned = _scan(entry, rep)
            if scanned is not None:
                files[entry.name] = scanned

    for req in ("utt2spk", "spk2utt"):
        if not (path / req).is_file():
            hint = (" (create it with utils/fix_data_dir.sh, which derives it from utt2spk)"
                    if req == "spk2utt" else "")
            rep.errors.append(f"{path / req}: required file is missing{hint}")
    if require_wav and not (path / "wav.scp").is_file() and not (path / "feats.scp").is_file():
        rep.errors.append(f"{path / 'wav.scp'}: required file is missing (nor is there feats.scp)")
    if "utt2spk" not in files:
        return rep

    utt2spk = files["utt2spk"]
    utts = set(utt2spk.data)
    rep.num_utts = len(utts)
    rep.num_spks = len(set(utt2spk.data.values()))
    if not utts:
        rep.errors.append(f"{path / 'utt2spk'}: no utterances")

    for name, f in files.items():
        if file_kind(name) == "utt" and name != "utt2spk":
            _compare_ids(name, f, path, utts, "utterance", "utt2spk", rep)
    spks = set(utt2spk.data.values())
    for name, f in files.items():
        if file_kind(name) == "spk":
            _compare_ids(name, f, path, spks, "speaker", "utt2spk", rep)

    if "spk2utt" in files:
        s2u = files["spk2utt"]
        seen: dict[str, str] = {}
        for spk, value in s2u.data.items():
            where = f"{path / 'spk2utt'}:{s2u.lines[spk]}"
            for utt in value.split():
                if utt in seen:
                    rep.errors.append(f"{where}: utterance {utt!r} listed again (also under "
                                      f"speaker {seen[utt]!r})")
                elif utt not in utt2spk.data:
                    rep.errors.append(f"{where}: utterance {utt!r} of speaker {spk!r} is not "
                                      "in utt2spk")
                elif utt2spk.data[utt] != spk:
                    rep.errors.append(f"{where}: utterance {utt!r} is under speaker {spk!r} but "
                                      f"utt2spk says {utt2spk.data[utt]!r}")
                seen.setdefault(utt, spk)
        missing = utts - set(seen)
        if missing:
            rep.errors.append(f"{path / 'spk2utt'}: {len(missing)} utterance(s) of utt2spk "
                              f"missing: {_ids(missing)}; regenerate with utils/fix_data_dir.sh")

    # recordings
    seg = files.get("segments")
    if seg is not None:
        recos_used: dict[str, list[str]] = {}
        for utt, value in seg.data.items():
            f = value.split()
            if f:
                recos_used.setdefault(f[0], []).append(utt)
    else:
        recos_used = {u: [u] for u in utts}
    rep.num_recos = len(recos_used)
    wav = files.get("wav.scp")
    if wav is not None:
        missing = set(recos_used) - set(wav.data)
        if missing:
            rep.errors.append(f"{path / 'wav.scp'}: {len(missing)} recording(s) missing: "
                              f"{_ids(missing)}")
        extra = set(wav.data) - set(recos_used)
        if extra:
            first = min(extra, key=lambda k: wav.lines[k])
            msg = (f"{path / 'wav.scp'}:{wav.lines[first]}: {len(extra)} recording(s) "
                   f"{'used by no segment' if seg is not None else 'not in utt2spk'}: "
                   f"{_ids(extra)}")
            (rep.warnings if seg is not None else rep.errors).append(msg)
    for name, f in files.items():
        if file_kind(name) == "reco" and name != "wav.scp":
            _compare_ids(name, f, path, set(recos_used), "recording", "wav.scp/segments", rep)

    if seg is not None and "reco2dur" in files:
        r2d = files["reco2dur"].data
        for utt, value in seg.data.items():
            f = value.split()
            try:
                reco, end = f[0], float(f[2])
                dur = float(r2d[reco])
            except (IndexError, KeyError, ValueError):
                continue
            if end > dur + 0.5:
                rep.errors.append(f"{path / 'segments'}:{seg.lines[utt]}: segment {utt!r} ends "
                                  f"at {end} s, after the end of recording {reco!r} ({dur} s)")

    # Kaldi's split-by-speaker wants speaker ids as utterance-id prefixes.
    by_spk = sorted(utt2spk.data.items(), key=lambda kv: (byte_key(kv[1]), byte_key(kv[0])))
    if [u for u, _ in by_spk] != sorted_ids(utts):
        rep.warnings.append(f"{path / 'utt2spk'}: sorting by speaker changes the utterance order "
                            "(speaker ids are not prefixes of utterance ids); Kaldi tools that "
                            "assume this may misbehave (Chorus tools do not)")

    if audio_check and wav is not None:
        _check_audio(path, wav, rep, nj)
    return rep


def _check_audio(path: Path, wav: _File, rep: Report, nj: int | None) -> None:
    nj = nj or min(8, os.cpu_count() or 1)
    items = list(wav.data.items())

    def probe(item):
        reco, entry = item
        try:
            import soundfile as sf

            dur = wav_scp_entry_duration(entry)
            sr = None
            if not entry.rstrip().endswith("|") and os.path.exists(entry):
                sr = sf.info(entry).samplerate
            return reco, dur, sr, None
        except AudioReadError as e:
            return reco, None, None, str(e)
        except Exception as e:  # noqa: BLE001 - report, never crash validation
            return reco, None, None, f"{type(e).__name__}: {e}"

    total = 0.0
    with ThreadPoolExecutor(max_workers=nj) as pool:
        for reco, dur, sr, err in pool.map(probe, items):
            if err is not None:
                rep.errors.append(f"{path / 'wav.scp'}:{wav.lines[reco]}: recording {reco!r}: "
                                  f"{err}")
            else:
                total += dur
                if sr:
                    rep.sample_rates[sr] = rep.sample_rates.get(sr, 0) + 1
    rep.audio_seconds = total
    if len(rep.sample_rates) > 1:
        rep.warnings.append(f"{path / 'wav.scp'}: mixed sample rates "
                            f"{dict(sorted(rep.sample_rates.items()))} (rate: count)")
