"""chorus-prep: Kaldi data dirs from real corpora.

    chorus-prep <corpus> --src DIR --out data/ [--splits a,b] [--unmapped drop_tag|keep_text|drop_utt]
                [--unknown-label error|drop] [--max-duration 30] [--nj 4] [corpus options]

Corpora: track1_test nvbench emilia_nv nonverbaltts nonverbalspeech38k mnv17 smiip_nv deeply_nvv
generic qualispeech vlsp_vc. Layouts and outputs: pyutils/corpora/README.md.
Exit status 0 ok, 2 bad input (one line ``file:line: message``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional

from pyutils.cli_types import non_negative_float, positive_int

from pyutils.io import InputError, atomic_write_text

from .common import PrepError
from .prep import Options

CORPORA = ("track1_test", "nvbench", "emilia_nv", "nonverbaltts", "nonverbalspeech38k", "mnv17", "smiip_nv",
           "deeply_nvv", "generic", "qualispeech", "vlsp_vc")


def _common(p: argparse.ArgumentParser, nvv: bool = True) -> None:
    p.add_argument("--src", required=True, type=Path,
                   help="corpus root (generic: the manifest file)")
    p.add_argument("--out", required=True, type=Path, help="output folder of data dirs (data/)")
    p.add_argument("--splits", default=None,
                   help="comma-separated subset of splits/subsets to prepare (default: all)")
    p.add_argument("--max-duration", type=non_negative_float, default=30.0,
                   help="warn about files longer than this many seconds (0: never); data prep "
                        "does not segment long files")
    p.add_argument("--nj", type=positive_int, default=4, help="threads for probing audio")
    p.add_argument("--converter", choices=("ffmpeg", "sox"), default="ffmpeg",
                   help="tool in wav.scp pipes for audio that is not 16 kHz mono WAV/FLAC")
    p.add_argument("--on-bad-row", choices=("error", "skip"), default="error",
                   help="a malformed manifest row: stop with 'file:line: message' (default) "
                        "or skip it and count it in prep_report.json")
    if nvv:
        p.add_argument("--unmapped", choices=("drop_tag", "keep_text", "drop_utt"),
                       default="drop_tag",
                       help="labels without a challenge counterpart: remove the tag, keep its "
                            "word without brackets, or drop the utterance")
        p.add_argument("--unknown-label", choices=("error", "drop"), default="error",
                       help="labels missing from conf/nvv_tags.yaml: error (default) or drop")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="chorus-prep", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Layouts and outputs of every corpus: pyutils/corpora/README.md")
    sub = ap.add_subparsers(dest="corpus", required=True, metavar="corpus")

    p = sub.add_parser("track1_test", help="NVVSpeech Challenge Track 1 test set (no references)")
    _common(p, nvv=False)
    p.add_argument("--lang", default=None, help="language of all clips / keep only this language")

    p = sub.add_parser("nvbench", help="NV-Bench subsets (zh_single, zh_multi, en_single, en_multi)")
    _common(p)
    p = sub.add_parser("emilia_nv", help="Emilia-NV WebDataset shards (or JSONL manifests)")
    _common(p)
    p = sub.add_parser("nonverbaltts", help="NonverbalTTS (HF parquet / save_to_disk, or "
                       "exported CSV/JSONL)")
    _common(p)
    p.add_argument("--emoji-map", default=None, help="TSV emoji<TAB>label overriding the table")
    p.add_argument("--extract-dir", type=Path, default=None,
                   help="where audio embedded in parquet is written (default OUT/nonverbaltts_audio)")
    p = sub.add_parser("nonverbalspeech38k", help="NonVerbalSpeech-38K <label>/<label>.txt captions "
                       "(n|caption|refined caption) + <n>_<label>.wav")
    _common(p)
    p.add_argument("--caption", choices=("refined", "original"), default="refined",
                   help="which caption of a line with two (default: the refined one)")
    p.add_argument("--overlap", choices=("keep_words", "drop_utt"), default="keep_words",
                   help="clips with <B>words</B> spoken over the NV sound: remove the markers and keep "
                        "the words (default), or leave the clip out")
    p.add_argument("--split-name", default="train", help="split of every clip")
    p = sub.add_parser("mnv17", help="MNV-17 JSONL manifests (txt field)")
    _common(p)
    p = sub.add_parser("smiip_nv", help="SMIIP-NV <spk>/<emotion>/annotation.txt")
    _common(p)
    p.add_argument("--dev-speakers", default="", help="comma-separated speakers for dev")
    p.add_argument("--test-speakers", default="", help="comma-separated speakers for test")
    p = sub.add_parser("deeply_nvv", help="Deeply Nonverbal Vocalization Dataset (OpenSLR 99) "
                       "dataset/<class>/<speaker>_....wav, split by speaker")
    _common(p)
    p.add_argument("--speaker-split", default="70,10,20",
                   help="train,dev,test shares of the speakers (by a hash of the speaker id)")
    p.add_argument("--untagged", choices=("drop", "keep"), default="drop",
                   help="the six classes without a challenge tag: drop them (counted), or keep "
                        "them as negatives in <split>_none/ (no text)")
    p = sub.add_parser("generic", help="any TSV/CSV/JSONL manifest, or a headerless "
                       "audio<TAB>text list, of audio + tagged text")
    _common(p)
    p.add_argument("--label-map", default=None,
                   help="YAML 'label: tag' or TSV label<TAB>tag (default: challenge tags only)")
    p.add_argument("--lang", default=None, help="language when the manifest has none")
    p.add_argument("--split-name", default="train", help="split when the manifest has none")

    p = sub.add_parser("qualispeech", help="QualiSpeech for the SQA recipe")
    _common(p, nvv=False)
    p.add_argument("--score-column", default="Overall quality",
                   help="CSV column used as the reference score")
    p.add_argument("--untimed-fault", choices=("whole", "drop"), default="whole",
                   help="a fault described without times: span the whole clip (default) or "
                        "write no span")
    p.add_argument("--point-halfwidth", type=float, default=0.25,
                   help="'at 2.3s' becomes [t-w, t+w] seconds")

    p = sub.add_parser("vlsp_vc", help="VLSP 2025 Vietnamese zero-shot VC")
    _common(p, nvv=False)
    p.add_argument("--pairs-out", type=Path, default=None,
                   help="where the absolute test pairs TSV goes (default OUT/test_pairs.tsv)")
    return ap


def _split_list(value: Optional[str]) -> Optional[List[str]]:
    if not value:
        return None
    return [s.strip() for s in value.split(",") if s.strip()]


def run(args: argparse.Namespace) -> list:
    opts = Options(out=args.out, unmapped=getattr(args, "unmapped", "drop_tag"),
                   unknown=getattr(args, "unknown_label", "error"),
                   max_duration=args.max_duration, nj=args.nj, converter=args.converter,
                   on_bad_row=args.on_bad_row)
    splits = _split_list(args.splits)
    c = args.corpus
    if not args.src.exists():
        raise PrepError(f"--src {args.src} does not exist")
    if c == "track1_test":
        from . import track1_test
        return track1_test.prepare(args.src, opts, args.lang)
    if c == "nvbench":
        from . import nvbench
        return nvbench.prepare(args.src, opts, splits)
    if c == "emilia_nv":
        from . import emilia_nv
        return emilia_nv.prepare(args.src, opts, splits)
    if c == "nonverbaltts":
        from . import nonverbaltts
        return nonverbaltts.prepare(args.src, opts, splits, args.emoji_map, args.extract_dir)
    if c == "nonverbalspeech38k":
        from . import nonverbalspeech38k
        return nonverbalspeech38k.prepare(args.src, opts, splits, args.caption, args.overlap, args.split_name)
    if c == "mnv17":
        from . import mnv17
        return mnv17.prepare(args.src, opts, splits)
    if c == "smiip_nv":
        from . import smiip_nv
        return smiip_nv.prepare(args.src, opts, splits, _split_list(args.dev_speakers) or (),
                                _split_list(args.test_speakers) or ())
    if c == "deeply_nvv":
        from . import deeply_nvv
        return deeply_nvv.prepare(args.src, opts, splits, args.speaker_split, args.untagged)
    if c == "generic":
        from . import generic
        return generic.prepare(args.src, opts, splits, args.label_map, args.lang,
                               args.split_name)
    if c == "qualispeech":
        from . import qualispeech
        return qualispeech.prepare(args.src, opts, splits, args.score_column,
                                   args.untimed_fault, args.point_halfwidth)
    if c == "vlsp_vc":
        from . import vlsp_vc
        return vlsp_vc.prepare(args.src, opts, splits, args.pairs_out)
    raise PrepError(f"unknown corpus {c!r}")  # pragma: no cover (argparse checks)


def write_log(out: Path, argv: List[str], error: Optional[str]) -> None:
    """OUT/prep.log: the command and the summary printed for every split
    (utterances, label counts mapped/aliased/dropped), kept next to the data."""
    from . import prep

    lines = ["chorus-prep " + " ".join(argv)] + prep.LOG_LINES
    if error:
        lines.append(f"chorus-prep: error: {error}")
    try:
        atomic_write_text(Path(out) / "prep.log", "\n".join(lines) + "\n")
    except OSError:  # the error itself is already on stderr
        pass


def main(argv: Optional[List[str]] = None) -> int:
    from pyutils.cli_types import tolerant_output
    tolerant_output()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    from . import prep

    del prep.LOG_LINES[:]
    try:
        run(args)
    except (PrepError, InputError) as exc:  # InputError: a file read by pyutils.io
        print(f"chorus-prep: error: {exc}", file=sys.stderr)
        if Path(args.out).is_dir():
            write_log(args.out, argv, str(exc))
        return 2
    except UnicodeDecodeError as exc:  # a reader met a byte that is not UTF-8: say where
        from pyutils.text_encoding import locate_non_utf8
        inputs = [args.src] + [getattr(args, k, None) for k in ("label_map", "emoji_map")]
        where = locate_non_utf8(inputs) or f"{args.src}: not UTF-8 ({exc.reason})"
        print(f"chorus-prep: error: {where}", file=sys.stderr)
        if Path(args.out).is_dir():
            write_log(args.out, argv, where)
        return 2
    except OSError as exc:  # a file named on the command line (or by a manifest) cannot be read/written
        where = f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc)
        print(f"chorus-prep: error: {where}", file=sys.stderr)
        return 2
    write_log(args.out, argv, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
