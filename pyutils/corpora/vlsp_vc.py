"""VLSP 2025 zero-shot voice conversion (Vietnamese).

The organisers' folder layout is not public; Chorus expects this one (copy or
symlink the released files into it)::

    ROOT/transcribed/<spk>/<utt>.wav         multi-speaker set with transcripts
    ROOT/transcribed/transcripts.tsv         "<utt or spk/utt.wav><TAB><text>"
    ROOT/untranscribed/<spk>/<any>.wav       audio-only multi-speaker set
    ROOT/test/pairs.tsv                      "source_audio<TAB>target_audio<TAB>converted_audio_filename"
                                             (paths relative to ROOT/test/ or absolute;
                                             an optional header line is skipped)
    ROOT/test/transcripts.tsv   (optional)   texts of the test source clips

Output (``chorus-synth vc`` names)::

    OUT/train_text/   wav.scp text utt2spk spk2utt utt2dur  (+ text.orig: raw text)
    OUT/train_audio/  wav.scp utt2spk spk2utt utt2dur
    OUT/test_src/     source clips of the pairs (+ text when transcripts exist)
    OUT/test_ref/     target-speaker reference clips
    OUT/test_pairs.tsv  absolute source<TAB>target<TAB>converted name (``--pairs-out``)

Texts are normalised with :func:`pyutils.corpora.vi_text.normalize_vi`.
Utterance ids are ``<spk>-<file stem>``; test clip ids are their file stems
(prefixed with the parent folder name when stems collide).
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from pyutils.io import atomic_write_text

from .common import AUDIO_EXTS, PrepError, Row, resolve_audio
from .prep import Options, Utt, clean_id, write_split
from .vi_text import normalize_vi


def _read_tsv_lines(path: Path):
    with open(path, encoding="utf-8-sig") as f:
        for lineno, line in enumerate(f, 1):
            if line.strip():
                yield lineno, line.rstrip("\n").split("\t")


def read_transcripts(path: Path) -> Dict[str, Tuple[str, Row]]:
    """Key (file stem, and 'spk/stem' when given) -> (raw text, row)."""
    table: Dict[str, Tuple[str, Row]] = {}
    for lineno, parts in _read_tsv_lines(path):
        if len(parts) < 2 or not parts[1].strip():
            raise PrepError("expected '<utt or path><TAB><text>'", path, lineno)
        key = parts[0].strip()
        if lineno == 1 and key.lower() in ("utt", "utt_id", "id", "path", "audio", "file"):
            continue  # header
        row = Row({"key": key, "text": parts[1]}, str(path), lineno)
        stem = Path(key).stem if Path(key).suffix.lower() in AUDIO_EXTS else Path(key).name
        parent = Path(key).parent.name
        table[stem] = (parts[1], row)
        if parent:
            table[f"{parent}/{stem}"] = (parts[1], row)
    return table


def _speaker_files(root: Path) -> List[Tuple[str, Path]]:
    files = []
    for spk_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for f in sorted(spk_dir.rglob("*")):
            if f.suffix.lower() in AUDIO_EXTS:
                files.append((spk_dir.name, f.resolve()))
    return files


def _convert(text: str, row) -> str:
    out = normalize_vi(text)
    return out


def prepare(src: Path, opts: Options, splits: Optional[Sequence[str]] = None,
            pairs_out: Optional[Path] = None) -> List[dict]:
    root = Path(src)
    want = set(splits) if splits else {"train_text", "train_audio", "test"}
    reports = []

    if "train_text" in want:
        tdir = root / "transcribed"
        tsv = tdir / "transcripts.tsv"
        if not tsv.is_file():
            raise PrepError(f"{tsv}: missing (transcripts of the transcribed set)")
        texts = read_transcripts(tsv)
        utts = []
        used = set()
        for spk, f in _speaker_files(tdir):
            hit = texts.get(f"{spk}/{f.stem}") or texts.get(f.stem)
            if hit is None:
                raise PrepError(f"{f}: no transcript in {tsv}")
            used.add(id(hit[1]))
            utts.append(Utt(f.stem, f, hit[1], spk, "vi", hit[0], {"text.orig": " ".join(
                hit[0].split())}))
        unused = {id(r): r for _, r in texts.values()}
        orphans = [r for k, r in unused.items() if k not in used]
        if orphans:
            raise orphans[0].error(f"transcript for {orphans[0].data['key']!r} has no audio "
                                   f"under {tdir}/<spk>/")
        reports.append(write_split("vlsp_vc", "train_text", utts, opts, None, _convert,
                                   write_ref=False))

    if "train_audio" in want:
        adir = root / "untranscribed"
        if not adir.is_dir():
            raise PrepError(f"{adir}: missing (audio-only set)")
        utts = [Utt(f.stem, f, None, spk, "vi") for spk, f in _speaker_files(adir)]
        reports.append(write_split("vlsp_vc", "train_audio", utts, opts))

    if "test" in want:
        reports += _prepare_test(root, opts, pairs_out)
    return reports


def _prepare_test(root: Path, opts: Options, pairs_out: Optional[Path]) -> List[dict]:
    pairs_tsv = root / "test" / "pairs.tsv"
    if not pairs_tsv.is_file():
        raise PrepError(f"{pairs_tsv}: missing (test pairs)")
    texts_tsv = root / "test" / "transcripts.tsv"
    texts = read_transcripts(texts_tsv) if texts_tsv.is_file() else {}
    pairs = []
    names = set()
    for lineno, parts in _read_tsv_lines(pairs_tsv):
        if lineno == 1 and parts[0].strip().lower() in ("source_audio", "source", "src"):
            continue
        if len(parts) != 3:
            raise PrepError("expected 'source_audio<TAB>target_audio<TAB>converted_audio_filename'",
                            pairs_tsv, lineno)
        src = resolve_audio(parts[0].strip(), pairs_tsv.parent, root)
        tgt = resolve_audio(parts[1].strip(), pairs_tsv.parent, root)
        name = parts[2].strip()
        if name in names:
            raise PrepError(f"duplicate converted file name {name!r}", pairs_tsv, lineno)
        names.add(name)
        pairs.append((src, tgt, name, Row({"src": parts[0]}, str(pairs_tsv), lineno)))

    def ids_for(paths: List[Path]) -> Dict[Path, str]:
        stems: Dict[str, List[Path]] = {}
        for p in dict.fromkeys(paths):
            stems.setdefault(p.stem, []).append(p)
        out = {}
        for stem, ps in stems.items():
            for p in ps:
                out[p] = clean_id(stem if len(ps) == 1 else f"{p.parent.name}-{stem}")
        return out

    src_ids = ids_for([p[0] for p in pairs])
    ref_ids = ids_for([p[1] for p in pairs])
    src_utts = []
    for path, utt in src_ids.items():
        row = next(r for s, _, _, r in pairs if s == path)
        hit = texts.get(f"{path.parent.name}/{path.stem}") or texts.get(path.stem)
        src_utts.append(Utt(utt, path, row, None, "vi", hit[0] if hit else None))
    missing_text = [u for u in src_utts if u.raw_text is None]
    if texts and missing_text:
        raise PrepError(f"{texts_tsv}: no transcript for test source {missing_text[0].audio}")
    reports = [
        write_split("vlsp_vc", "test_src", src_utts, opts, None, _convert if texts else None,
                    write_ref=False),
        write_split("vlsp_vc", "test_ref", [Utt(u, p, None, None, "vi")
                                            for p, u in ref_ids.items()], opts),
    ]
    dest = Path(pairs_out) if pairs_out else Path(opts.out) / "test_pairs.tsv"
    atomic_write_text(dest, "".join(f"{s}\t{t}\t{n}\n" for s, t, n, _ in pairs))
    return reports
