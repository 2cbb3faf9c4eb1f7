"""Submission validators: Track 1 JSONL, Track 2 wav folder, VC converted wavs.

Each validator returns report lines (stdout) and raises :class:`ScoringError`
(one line on stderr, exit 2) naming the first offending file/line when the
submission would be rejected. Audio checks import soundfile/numpy lazily.

Track 2 / VC audio format: RIFF WAV, 16 kHz (VC: ``--sample-rate``), mono,
16-bit PCM, at least one sample. Warnings (do not fail): *silent* when the
peak is below -60 dBFS (|x| < 0.001), *clipped* when at least 0.1 % of the
samples sit at full scale (|x| >= 32767/32768).
"""

from __future__ import annotations

import os
from collections import Counter
from typing import List, Optional, Tuple

from pyutils.safe_paths import confined, name_problem
from pyutils.wav_header import wav_truncation
from pyutils.scoring.errors import FailedReport, ScoringError
from pyutils.io import iter_lines
from pyutils.scoring.io import check_id_sets, iter_jsonl, require_field

SR = 16000
SILENT_PEAK = 1e-3
CLIP_LEVEL = 32767 / 32768
CLIP_FRACTION = 1e-3


# --------------------------------------------------------------------------- track 1
def validate_track1(hyp_path: str, ref_path: Optional[str] = None) -> List[str]:
    from pyutils.scoring import track1
    from pyutils.scoring.textnorm import parse_tagged

    hyps = track1.load_submission_rows(list(iter_jsonl(hyp_path)), hyp_path)
    tags: Counter = Counter()
    if ref_path:
        refs = track1.load_reference_rows(list(iter_jsonl(ref_path)), ref_path)
        check_id_sets(refs.keys(), hyps.keys(), hyp_path)
        order = sorted(refs, key=lambda u: (refs[u][0] != "en", u))  # official scoring order
        langs = {u: refs[u][0] for u in refs}
    else:
        order = sorted(hyps, key=lambda u: hyps[u][1])
        langs = {u: "en" for u in hyps}  # tag rules do not depend on the language
    empty = 0
    for u in order:
        text, line = hyps[u]
        try:
            parsed = parse_tagged(text, langs[u])
        except ScoringError as exc:
            raise exc.located(hyp_path, line)
        tags.update(e.tag for e in parsed.events)
        empty += not parsed.tagged
    lines = [f"{hyp_path}: OK: {len(hyps)} utterances, {sum(tags.values())} NVV events, {empty} empty hypotheses"
             + (f", ids match {ref_path}" if ref_path else " (ids not checked: no --ref)")]
    if tags:
        lines.append("  tags: " + ", ".join(f"{t}={n}" for t, n in sorted(tags.items(), key=lambda x: (-x[1], x[0]))))
    return lines


# --------------------------------------------------------------------------- audio
def check_wav(path: str, sample_rate: int = SR) -> Tuple[List[str], List[str]]:
    """(errors, warnings) of one file against the required format."""
    import numpy as np
    import soundfile as sf

    if not os.path.isfile(path):
        return ["missing file"], []
    if os.path.getsize(path) == 0:
        return ["empty file (0 bytes)"], []
    try:
        info = sf.info(path)
    except Exception as exc:  # soundfile raises several types for unreadable files
        return [f"unreadable audio ({type(exc).__name__})"], []
    errors = []
    truncated = wav_truncation(path)
    if truncated:
        errors.append(truncated)
    if info.format != "WAV":
        errors.append(f"container {info.format}, expected WAV")
    if info.samplerate != sample_rate:
        errors.append(f"sample rate {info.samplerate} Hz, expected {sample_rate}")
    if info.channels != 1:
        errors.append(f"{info.channels} channels, expected mono")
    if info.subtype != "PCM_16":
        errors.append(f"sample format {info.subtype}, expected PCM_16")
    if info.frames == 0:
        errors.append("no samples")
        return errors, []
    warnings = []
    try:
        data, _ = sf.read(path, dtype="float64", always_2d=True)
    except Exception as exc:
        return errors + [f"unreadable samples ({type(exc).__name__})"], []
    peak = float(np.max(np.abs(data))) if data.size else 0.0
    if peak < SILENT_PEAK:
        warnings.append(f"silent (peak {peak:.2e})")
    clipped = int(np.count_nonzero(np.abs(data) >= CLIP_LEVEL))
    if clipped >= CLIP_FRACTION * data.size:
        warnings.append(f"clipped ({clipped} samples at full scale, {100 * clipped / data.size:.2f}%)")
    return errors, warnings


def convert_wav(src: str, dst: str, sample_rate: int = SR) -> None:
    """Any readable audio -> mono PCM16 WAV at ``sample_rate`` (soxr resampling), atomically."""
    import numpy as np
    import soundfile as sf
    import soxr

    data, sr = sf.read(src, dtype="float64", always_2d=True)
    mono = data.mean(axis=1)
    if sr != sample_rate:
        mono = soxr.resample(mono, sr, sample_rate, quality="HQ")
    mono = np.clip(mono, -1.0, 32767 / 32768)
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    tmp = dst + ".tmp.wav"
    sf.write(tmp, mono, sample_rate, subtype="PCM_16", format="WAV")
    os.replace(tmp, dst)


def _read_ids(ref_path: str) -> List[str]:
    ids = []
    for line, obj in list(iter_jsonl(ref_path)):
        utt = require_field(obj, "utt_id", ref_path, line, nonempty=True).strip()
        if name_problem(utt):  # <utt_id>.wav is a file name in the submission folder
            raise ScoringError("INVALID_UTT_ID", f"utt_id {utt!r} {name_problem(utt)}: "
                               "it must be a plain file name", ref_path, line)
        ids.append(utt)
    dup = [u for u, n in Counter(ids).items() if n > 1]
    if dup:
        raise ScoringError("DUPLICATE_UTT_ID", f"duplicate utt_id {dup[0]!r}", ref_path)
    return ids


def _audio_report(items: List[Tuple[str, str]], sample_rate: int, header: str) -> Tuple[List[str], List[Tuple[str, str]]]:
    """items: (label, path). -> (report lines, [(path, first error)])."""
    lines = [header]
    bad: List[Tuple[str, str]] = []
    n_warn = 0
    for label, path in items:
        errors, warnings = check_wav(path, sample_rate)
        if errors:
            bad.append((path, "; ".join(errors)))
            lines.append(f"  ERROR {label}: {'; '.join(errors)}")
        if warnings:
            n_warn += 1
            lines.append(f"  WARN  {label}: {'; '.join(warnings)}")
    lines.append(f"  {len(items)} files checked: {len(bad)} invalid, {n_warn} with warnings")
    return lines, bad


def _fail(bad: List[Tuple[str, str]], code: str = "INVALID_AUDIO") -> ScoringError:
    path, msg = bad[0]
    more = f" (and {len(bad) - 1} more invalid files)" if len(bad) > 1 else ""
    return ScoringError(code, msg + more, path)


def validate_track2(wav_dir: str, ref_path: str, fix_to: Optional[str] = None) -> List[str]:
    ids = _read_ids(ref_path)
    if not os.path.isdir(wav_dir):
        raise ScoringError("MISSING_DIR", "not a directory", wav_dir)
    present = {f[:-4] for f in os.listdir(wav_dir) if f.endswith(".wav")}
    extra = sorted(present - set(ids))
    lines: List[str] = []
    src_dir = wav_dir
    if fix_to and os.path.realpath(fix_to) == os.path.realpath(wav_dir):
        raise ScoringError("FIX_DIR_IS_INPUT", "--fix-to must name a new folder, not the input folder", fix_to)
    if fix_to:
        n = 0
        for u in ids:
            src = os.path.join(wav_dir, f"{u}.wav")
            if os.path.isfile(src) and os.path.getsize(src) > 0:
                try:
                    convert_wav(src, str(confined(fix_to, f"{u}.wav", what="utt_id")))
                    n += 1
                except Exception as exc:
                    lines.append(f"  cannot convert {src}: {type(exc).__name__}: {exc}")
        lines.append(f"fixed copies written to {fix_to}: {n} of {len(ids)} files")
        src_dir = fix_to
    report, bad = _audio_report([(f"{u}.wav", os.path.join(src_dir, f"{u}.wav")) for u in ids], SR,
                                f"Track 2 audio in {src_dir} against {len(ids)} ids of {ref_path}")
    lines.extend(report)
    if extra:
        lines.append(f"  ERROR {len(extra)} wav files with no reference id (first: {extra[0]}.wav)")
    lines.append("RESULT: " + ("OK" if not bad and not extra else "INVALID"))
    if bad:
        raise FailedReport(lines, _fail(bad))
    if extra:
        raise FailedReport(lines, ScoringError("UNKNOWN_SAMPLES", f"{len(extra)} wav files with no reference id",
                                          os.path.join(wav_dir, f"{extra[0]}.wav")))
    return lines


def validate_vc(pairs_path: str, out_dir: str, sample_rate: int = SR) -> List[str]:
    items: List[Tuple[str, str]] = []
    seen = {}
    for k, ln in iter_lines(pairs_path, bom="strip"):
        if not ln.strip():
            continue
        cells = ln.split("\t")
        if len(cells) not in (3, 4) or not all(c.strip() for c in cells):
            raise ScoringError("INVALID_PAIRS_ROW", "expected source<TAB>target<TAB>converted"
                               "[<TAB>source transcript]", pairs_path, k)
        name = cells[2].strip()
        if name_problem(name):
            raise ScoringError("INVALID_PAIRS_ROW", f"converted name {name!r} {name_problem(name)}: "
                               "it must be a plain file name in the output folder", pairs_path, k)
        if name in seen:
            raise ScoringError("DUPLICATE_UTT_ID", f"converted name {name!r} also on line {seen[name]}", pairs_path, k)
        seen[name] = k
        items.append((name, os.path.join(out_dir, name)))
    if not items:
        raise ScoringError("EMPTY_FILE", "no pairs", pairs_path)
    lines, bad = _audio_report(items, sample_rate, f"VC outputs in {out_dir} for {len(items)} pairs of {pairs_path}")
    lines.append("RESULT: " + ("OK" if not bad else "INVALID"))
    if bad:
        raise FailedReport(lines, _fail(bad))
    return lines
