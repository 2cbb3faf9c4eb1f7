"""Shared pieces of the real-corpus preparers.

* :class:`PrepError` -- bad input, always named ``file:line: message``.
* manifest readers (JSON list, JSONL, CSV/TSV) that keep the line number of
  every row, so that a later error can point at it.
* audio probing and the Kaldi ``wav.scp`` entry that yields 16 kHz mono PCM.
* :func:`write_data_dir` -- a Kaldi data dir written atomically and sorted
  under ``LC_ALL=C`` (Python's default ``str`` ordering is code-point order,
  which is the C-locale byte order for UTF-8 text).
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence

from pyutils.datadir import spk2utt_from_utt2spk
from pyutils.safe_paths import name_problem
from pyutils.io import InputError, atomic_write_text, iter_jsonl, iter_lines

TARGET_SR = 16000
AUDIO_EXTS = (".wav", ".flac", ".mp3", ".ogg", ".m4a", ".opus")


class PrepError(Exception):
    """Bad corpus input. ``str()`` is ``file:line: message`` (line optional)."""

    def __init__(self, message: str, path: Optional[os.PathLike] = None,
                 line: Optional[int] = None):
        self.path = str(path) if path is not None else None
        self.line = line
        self.message = message
        where = ""
        if self.path is not None:
            where = self.path + (f":{line}" if line is not None else "") + ": "
        super().__init__(where + message)


@dataclass
class Row:
    """One manifest row with its origin (for error messages)."""

    data: dict
    path: str
    line: int
    key: Optional[str] = None  # the object key of a dict-shaped JSON file

    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def error(self, message: str) -> PrepError:
        return PrepError(message, self.path, self.line)

    def get(self, *keys: str, default=None):
        """First present, non-empty value among ``keys``."""
        for key in keys:
            value = self.data.get(key)
            # NaN is how JSON (``NaN``), pandas and parquet say "no value": never the text "nan"
            if value is not None and value != "" and not (isinstance(value, float) and math.isnan(value)):
                return value
        return default

    def require(self, *keys: str):
        value = self.get(*keys)
        if value is None:
            raise self.error(f"missing field {' / '.join(repr(k) for k in keys)}")
        return value

    def text(self, *keys: str, required: bool = True) -> Optional[str]:
        """A string field (numbers are accepted and turned into text); a list,
        object or boolean is an error naming the row, never a traceback."""
        value = self.require(*keys) if required else self.get(*keys)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.error(f"field {' / '.join(repr(k) for k in keys)} should be text, "
                             f"got {type(value).__name__}")
        if isinstance(value, float) and not math.isfinite(value):
            raise self.error(f"field {' / '.join(repr(k) for k in keys)} should be text, got {value}")
        return str(value)


# --------------------------------------------------------------------------
# manifest readers
# --------------------------------------------------------------------------

def read_jsonl(path: os.PathLike) -> Iterator[Row]:
    """Rows of a JSON-lines file; blank lines are skipped."""
    path = str(path)
    try:
        for lineno, obj in iter_jsonl(path):
            yield Row(obj, path, lineno)
    except InputError as exc:
        raise PrepError(exc.message, exc.path, exc.line) from None


def read_json_records(path: os.PathLike) -> Iterator[Row]:
    """Rows of a ``.json`` file holding a list of objects (or ``{"data": [...]}``,
    or a dict ``{utt_id: {...}}``), or of a JSONL file.

    Line numbers of a JSON list are the line where each object starts.
    """
    path = str(path)
    with open(path, encoding="utf-8-sig") as f:
        text = f.read()
    stripped = text.lstrip()
    if not stripped:
        return
    if stripped[0] not in "[{" or (stripped[0] == "{" and _looks_like_jsonl(text)):
        yield from read_jsonl(path)
        return
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PrepError(f"malformed JSON: {exc.msg} (column {exc.colno})",
                        path, exc.lineno) from None
    # locate the line where each top-level element starts
    decoder = json.JSONDecoder()
    if isinstance(obj, dict) and isinstance(obj.get("data"), list):
        obj = obj["data"]
        starts = None
    elif isinstance(obj, dict) and not all(isinstance(v, dict) for v in obj.values()):
        yield Row(obj, path, 1)  # a single record
        return
    elif isinstance(obj, dict):
        for key, value in obj.items():
            if not isinstance(value, dict):
                raise PrepError(f"entry {key!r}: expected an object", path)
            yield Row(dict(value), path, _find_key_line(text, key), key=str(key))
        return
    else:
        starts = _list_element_lines(text, decoder)
    for i, item in enumerate(obj):
        line = starts[i] if starts and i < len(starts) else None
        if not isinstance(item, dict):
            raise PrepError(f"element {i}: expected an object", path, line)
        yield Row(item, path, line if line is not None else i + 1)


def _looks_like_jsonl(text: str) -> bool:
    first = text.lstrip().split("\n", 1)[0].strip()
    try:
        json.loads(first)
        return "\n" in text.strip()
    except json.JSONDecodeError:
        return False


def _find_key_line(text: str, key: str) -> int:
    pos = text.find(json.dumps(key, ensure_ascii=False))
    if pos < 0:
        pos = text.find(json.dumps(key))
    return text.count("\n", 0, max(pos, 0)) + 1


def _list_element_lines(text: str, decoder: json.JSONDecoder) -> List[int]:
    """Line numbers (1-based) where each element of a top-level JSON list starts."""
    lines = []
    idx = text.index("[") + 1
    n = len(text)
    while idx < n:
        while idx < n and text[idx] in " \t\r\n,":
            idx += 1
        if idx >= n or text[idx] == "]":
            break
        lines.append(text.count("\n", 0, idx) + 1)
        _, idx = decoder.raw_decode(text, idx)
    return lines


def read_table(path: os.PathLike, delimiter: Optional[str] = None) -> Iterator[Row]:
    """Rows of a CSV/TSV file with a header line (delimiter from the extension
    unless given). Line numbers count the header as line 1."""
    path = str(path)
    if delimiter is None:
        delimiter = "\t" if path.endswith((".tsv", ".txt", ".list")) else ","
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f, delimiter=delimiter)
        try:
            if reader.fieldnames is None:
                return
        except csv.Error as exc:
            raise PrepError(f"not a valid {'TSV' if delimiter == chr(9) else 'CSV'} header ({exc})",
                            path, reader.line_num or 1) from None
        while True:
            start = reader.line_num + 1  # the line this record starts on
            try:
                rec = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise PrepError(f"not a valid table row ({exc})", path, start) from None
            if None in rec:  # more cells than header columns
                raise PrepError(f"{len(reader.fieldnames) + len(rec[None])} cells, header has "
                                f"{len(reader.fieldnames)}", path, reader.line_num)
            if any("\n" in (v or "") or "\r" in (v or "") for v in rec.values()):
                # a quote opened and never closed swallows the following lines
                raise PrepError(f"a quoted cell runs over lines {start}-{reader.line_num} "
                                f"(an unclosed quote?)", path, start)
            if all((v or "").strip() == "" for v in rec.values()):
                continue
            yield Row({k.strip(): (v if v is not None else "") for k, v in rec.items()},
                      path, reader.line_num)


def looks_headerless(path: os.PathLike, delimiter: str = "\t") -> bool:
    """True when the first non-blank line starts with an audio file name
    (``breath.wav<TAB>...``): a list without a header line."""
    with open(path, encoding="utf-8-sig") as f:
        for line in f:
            if line.strip():
                first = line.split(delimiter, 1)[0].strip().lower()
                return first.endswith(AUDIO_EXTS)
    return False


def read_pairs(path: os.PathLike) -> Iterator[Row]:
    """Rows of a headerless ``audio<TAB>text`` list (the form of the challenge's
    own sample list, ``assets/nv_samples/asr.txt``); fields ``audio``, ``text``.
    A line without a TAB is an error naming it."""
    path = str(path)
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != 2:
            raise PrepError(f"expected 2 columns '<audio><TAB><text>', got {len(cells)}", path, lineno)
        audio, text = cells
        yield Row({"audio": audio.strip(), "text": text}, path, lineno)


def read_manifest(path: os.PathLike) -> Iterator[Row]:
    """Dispatch on the extension: .jsonl/.json -> JSON; .csv/.tsv -> table
    (a .tsv/.txt/.list whose first cell is an audio file name has no header:
    ``audio<TAB>text`` pairs)."""
    p = str(path)
    if p.endswith(".jsonl"):
        return read_jsonl(p)
    if p.endswith(".json"):
        return read_json_records(p)
    if p.endswith((".tsv", ".txt", ".list")) and looks_headerless(p):
        return read_pairs(p)
    if p.endswith((".csv", ".tsv")):
        return read_table(p)
    raise PrepError("unsupported manifest type (want .json, .jsonl, .csv, .tsv, or a "
                    "headerless audio<TAB>text .txt list)", p)


_UNSAFE = re.compile(r"[^0-9A-Za-z_.\-\u00C0-\U0010FFFF]+")


def safe_name(value: str) -> str:
    """A file/utterance name safe to use inside an output folder: no path
    separators, no whitespace, no leading dot (``a/b c`` -> ``a_b_c``)."""
    name = _UNSAFE.sub("_", str(value).strip()).strip("_")
    name = name.lstrip(".") or "_"
    return name


# --------------------------------------------------------------------------
# audio
# --------------------------------------------------------------------------

@dataclass
class AudioInfo:
    path: str
    samplerate: int
    channels: int
    duration: float
    fmt: str  # "WAV", "FLAC", "MP3", ...
    subtype: str = ""


def probe_audio(path: str) -> AudioInfo:
    """Sample rate, channels and duration of an audio file.

    soundfile (libsndfile) first; ffprobe for what it cannot open (MP3 on
    builds without MP3 support, M4A, Opus, ...).
    """
    import soundfile as sf

    try:
        info = sf.info(path)
        if info.samplerate > 0 and info.frames >= 0:
            return AudioInfo(path, int(info.samplerate), int(info.channels),
                             float(info.frames) / float(info.samplerate),
                             str(info.format), str(info.subtype))
    except Exception:  # noqa: BLE001 -- fall back to ffprobe below
        pass
    return _ffprobe(path)


def _ffprobe(path: str) -> AudioInfo:
    exe = shutil.which("ffprobe")
    if exe is None:
        raise PrepError("cannot read audio: soundfile failed and ffprobe is not installed", path)
    cmd = [exe, "-v", "error", "-select_streams", "a:0", "-show_entries",
           "stream=sample_rate,channels,codec_name:format=duration,format_name",
           "-of", "json", path]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise PrepError(f"ffprobe failed: {res.stderr.strip()[:200]}", path)
    meta = json.loads(res.stdout or "{}")
    streams = meta.get("streams") or []
    if not streams:
        raise PrepError("no audio stream", path)
    st = streams[0]
    fmt = (meta.get("format") or {})
    duration = float(fmt.get("duration") or 0.0)
    return AudioInfo(path, int(st.get("sample_rate") or 0), int(st.get("channels") or 0),
                     duration, str(fmt.get("format_name", "")).upper(),
                     str(st.get("codec_name", "")))


def wav_scp_entry(info: AudioInfo, converter: str = "ffmpeg") -> str:
    """Kaldi rxfilename that yields 16 kHz mono audio.

    A 16 kHz mono WAV/FLAC file is referenced directly; anything else (other
    rates, stereo, MP3, ...) becomes a pipe through ffmpeg (or sox).
    """
    path = info.path
    direct = (info.samplerate == TARGET_SR and info.channels == 1
              and info.fmt.upper() in ("WAV", "WAVEX", "FLAC")
              and not any(ch.isspace() for ch in path) and not path.endswith("|"))
    if direct:
        return path
    q = shlex.quote(path)
    # sox builds often lack MP3/M4A/Opus decoders: those always go through ffmpeg
    if converter == "sox" and info.fmt.upper() in ("WAV", "WAVEX", "FLAC", "OGG", "AIFF"):
        return f"sox {q} -t wav -r {TARGET_SR} -c 1 -b 16 - |"
    return f"ffmpeg -nostdin -v error -i {q} -ac 1 -ar {TARGET_SR} -f wav - |"


def resolve_audio(value: str, *bases: Path) -> Path:
    """Absolute path of an audio reference: absolute as is, else the first base
    dir under which it exists (else under the first base)."""
    p = Path(value)
    if p.is_absolute():
        return p
    for base in bases:
        cand = Path(base) / p
        if cand.exists():
            return cand.resolve()
    return (Path(bases[0]) / p).resolve() if bases else p.resolve()


def probe_many(paths: Sequence[str], nj: int = 4) -> Dict[str, object]:
    """Probe many files in threads (ffprobe runs in subprocesses). Values are
    AudioInfo or the PrepError raised for that file."""

    def one(p: str):
        try:
            return probe_audio(p)
        except PrepError as exc:
            return exc
        except Exception as exc:  # noqa: BLE001 -- reported per file
            return PrepError(f"cannot read audio: {exc}", p)

    uniq = list(dict.fromkeys(paths))
    if nj <= 1 or len(uniq) < 8:
        return {p: one(p) for p in uniq}
    with ThreadPoolExecutor(max_workers=nj) as pool:
        return dict(zip(uniq, pool.map(one, uniq)))


# --------------------------------------------------------------------------
# Kaldi data dir
# --------------------------------------------------------------------------

def _check_token(value: str, what: str, utt: str) -> None:
    if not value or any(ch.isspace() for ch in value):
        raise PrepError(f"{what} {value!r} of utterance {utt!r} is empty or contains whitespace")
    # utterance ids become file names downstream (submissions, --fix-to copies)
    if what == "utterance id" and name_problem(value):
        raise PrepError(f"{what} {value!r} {name_problem(value)}: it must be a plain file name")


def write_kv(path: os.PathLike, mapping: Dict[str, str]) -> None:
    """``key value`` lines sorted by key (C locale)."""
    atomic_write_text(path, "".join(f"{k} {mapping[k]}\n" for k in sorted(mapping)))


@dataclass
class DataDir:
    """In-memory Kaldi data dir; :meth:`write` emits it sorted and atomically."""

    wav_scp: Dict[str, str] = field(default_factory=dict)
    utt2spk: Dict[str, str] = field(default_factory=dict)
    text: Optional[Dict[str, str]] = None
    extra: Dict[str, Dict[str, str]] = field(default_factory=dict)  # filename -> utt->value

    def add(self, utt: str, wav: str, spk: Optional[str] = None,
            text: Optional[str] = None, **extra: Optional[str]) -> None:
        if utt in self.wav_scp:
            raise PrepError(f"duplicate utterance id {utt!r}")
        spk = spk or utt
        _check_token(utt, "utterance id", utt)
        _check_token(spk, "speaker id", utt)
        self.wav_scp[utt] = wav
        self.utt2spk[utt] = spk
        if text is not None:
            if self.text is None:
                self.text = {}
            self.text[utt] = text
        for name, value in extra.items():
            if value is not None:
                self.extra.setdefault(name, {})[utt] = str(value)

    def __len__(self) -> int:
        return len(self.wav_scp)

    def write(self, outdir: os.PathLike) -> Path:
        """Write wav.scp, utt2spk, spk2utt, text (when any), and extra files.

        Kaldi requires speaker ids to be prefixes of utterance ids for sorted
        order to agree; when they are not, utt2spk still sorts by utterance and
        spk2utt by speaker (the validator of pyutils.datadir decides).
        """
        outdir = Path(outdir)
        outdir.mkdir(parents=True, exist_ok=True)
        if not self.wav_scp:
            raise PrepError(f"no utterances to write to {outdir}")
        if self.text is not None and set(self.text) != set(self.wav_scp):
            missing = sorted(set(self.wav_scp) - set(self.text))[:3]
            raise PrepError(f"{outdir}: utterances without text, e.g. {missing}")
        write_kv(outdir / "wav.scp", self.wav_scp)
        write_kv(outdir / "utt2spk", self.utt2spk)
        write_kv(outdir / "spk2utt", spk2utt_from_utt2spk(self.utt2spk))
        if self.text is not None:
            write_kv(outdir / "text", {u: t for u, t in self.text.items()})
        elif (outdir / "text").exists():
            # a stale text from an earlier run would no longer match wav.scp
            os.unlink(outdir / "text")
        for name, mapping in self.extra.items():
            write_kv(outdir / name, mapping)
        return outdir


def warn(message: str) -> None:
    print(f"WARNING: {message}", file=sys.stderr)


def info(message: str) -> None:
    print(message, file=sys.stderr)
