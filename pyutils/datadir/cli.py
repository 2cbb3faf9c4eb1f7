"""``chorus-datadir``: Kaldi data-dir tools from the command line.

    chorus-datadir validate [--no-audio-check] [--nj N] DIR
    chorus-datadir fix [--no-backup] DIR
    chorus-datadir split [--per-utt] DIR N
    chorus-datadir subset (--first N | --last N | --random N [--seed S] |
                           --utt-list F | --spk-list F) SRC DEST
    chorus-datadir combine DEST SRC1 SRC2 ...
    chorus-datadir copy [--utt-prefix P] [--utt-suffix S] [--spk-prefix P]
                        [--spk-suffix S] SRC DEST
    chorus-datadir utt2dur [--nj N] DIR

Kaldi spellings are accepted too: ``subset --first SRC N DEST`` (flag then
a positional count), ``subset SRC N DEST`` (N random utterances), and
validate's ``--no-feats/--no-text/--no-wav/--no-spk-sort``.
Exit status: 0 ok, 1 invalid data / failure, 2 bad usage.
"""

from __future__ import annotations

import argparse
import sys

from pyutils.cli_types import positive_int

from .io import AudioReadError, DataDirError



def _cmd_validate(a) -> int:
    from .validate import validate_data_dir

    rep = validate_data_dir(a.dir, audio_check=a.audio_check and not a.no_wav, nj=a.nj,
                            require_wav=not a.no_wav)
    for w in rep.warnings:
        print(f"validate_data_dir: warning: {w}", file=sys.stderr)
    if not rep.ok:
        shown = rep.errors[:a.max_errors]
        for e in shown:
            print(f"validate_data_dir: {e}", file=sys.stderr)
        if len(rep.errors) > len(shown):
            print(f"validate_data_dir: ... and {len(rep.errors) - len(shown)} more errors",
                  file=sys.stderr)
        print(f"validate_data_dir: {a.dir}: FAILED ({len(rep.errors)} error(s))", file=sys.stderr)
        return 1
    print(f"validate_data_dir: OK: {rep.summary()}")
    return 0


def _cmd_fix(a) -> int:
    from .fix import fix_data_dir

    rep = fix_data_dir(a.dir, backup=a.backup)
    print(f"fix_data_dir: {a.dir}: {rep.message()}"
          + ("; originals in .backup/" if a.backup else ""))
    return 0 if rep.kept > 0 else 1


def _cmd_split(a) -> int:
    from .split import split_data_dir

    dirs = split_data_dir(a.dir, a.n, per_utt=a.per_utt)
    print(f"split_data: {a.dir} -> {dirs[0].parent}/{{1..{len(dirs)}}}")
    return 0


def _cmd_subset(a) -> int:
    from .subset import subset_data_dir

    pos = list(a.args)
    flag_num = None
    if len(pos) == 3:
        src, num, dest = pos
        try:
            flag_num = int(num)
        except ValueError:
            raise SystemExit(f"subset: expected SRC NUM DEST, got {pos}") from None
    elif len(pos) == 2:
        src, dest = pos
    else:
        raise SystemExit("subset: expected SRC [NUM] DEST")
    sel = {}
    for name in ("first", "last"):
        v = getattr(a, name)
        if v is not None:
            sel[name] = flag_num if v == "flag" else int(v)
    if a.random is not None:
        sel["random"] = a.random
    if a.utt_list:
        sel["utt_list"] = a.utt_list
    if a.spk_list:
        sel["spk_list"] = a.spk_list
    if flag_num is not None and not sel:
        sel["random"] = flag_num
    if any(v is None for v in sel.values()):
        raise SystemExit("subset: --first/--last given as a flag need SRC NUM DEST")
    n = subset_data_dir(src, dest, seed=a.seed, **sel)
    print(f"subset_data_dir: {src} -> {dest}: {n} utterances")
    return 0


def _cmd_combine(a) -> int:
    from .combine import combine_data_dirs

    d = combine_data_dirs(a.dest, a.srcs)
    print(f"combine_data: {len(a.srcs)} dirs -> {a.dest}: {len(d.utts)} utterances")
    return 0


def _cmd_copy(a) -> int:
    from .copy import copy_data_dir

    d = copy_data_dir(a.src, a.dest, utt_prefix=a.utt_prefix, utt_suffix=a.utt_suffix,
                      spk_prefix=a.spk_prefix, spk_suffix=a.spk_suffix)
    print(f"copy_data_dir: {a.src} -> {a.dest}: {len(d.utts)} utterances")
    return 0


def _cmd_utt2dur(a) -> int:
    from .utt2dur import compute_utt2dur

    from .validate import format_duration

    durs = compute_utt2dur(a.dir, a.nj, progress=True)
    print(f"get_utt2dur: {a.dir}/utt2dur: {len(durs)} utterances, "
          f"{format_duration(sum(durs.values()))}")
    return 0


def _preprocess_subset(argv: list[str]) -> list[str]:
    """Kaldi's ``--first``/``--last`` are flags; ours take a value. Accept both."""
    out = []
    for i, tok in enumerate(argv):
        out.append(tok)
        if tok in ("--first", "--last"):
            nxt = argv[i + 1] if i + 1 < len(argv) else ""
            if not nxt.isdigit():
                out.append("flag")
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="chorus-datadir",
                                description="Kaldi data-dir tools (validate, fix, split, "
                                            "subset, combine, copy, utt2dur)")
    sub = p.add_subparsers(dest="command", required=True)

    v = sub.add_parser("validate", help="check a data dir (formats, ids, sorting, audio)")
    v.add_argument("dir")
    v.add_argument("--no-audio-check", dest="audio_check", action="store_false",
                   help="do not open the audio of wav.scp")
    v.add_argument("--nj", type=positive_int, default=None, help="parallel audio checks (>= 1)")
    v.add_argument("--max-errors", type=int, default=30, help="errors printed at most")
    v.add_argument("--no-wav", action="store_true", help="wav.scp not required (Kaldi flag)")
    for flag in ("--no-feats", "--no-text", "--no-spk-sort"):
        v.add_argument(flag, action="store_true", help="accepted for Kaldi compatibility")
    v.set_defaults(func=_cmd_validate)

    f = sub.add_parser("fix", help="drop inconsistent utterances, rebuild spk2utt, sort")
    f.add_argument("dir")
    f.add_argument("--no-backup", dest="backup", action="store_false")
    f.set_defaults(func=_cmd_fix)

    s = sub.add_parser("split", help="write DIR/splitN/{1..N} (by speaker; --per-utt)")
    s.add_argument("dir")
    s.add_argument("n", type=int)
    s.add_argument("--per-utt", action="store_true", help="split by utterance into splitNutt")
    s.set_defaults(func=_cmd_split)

    ss = sub.add_parser("subset", help="select utterances into a new dir")
    ss.add_argument("args", nargs="+", metavar="SRC [NUM] DEST")
    ss.add_argument("--first", default=None, help="first N utterances (byte order)")
    ss.add_argument("--last", default=None, help="last N utterances")
    ss.add_argument("--random", type=int, default=None, help="N random utterances")
    ss.add_argument("--seed", type=int, default=0)
    ss.add_argument("--utt-list", default=None, help="file of utterance ids")
    ss.add_argument("--spk-list", default=None, help="file of speaker ids")
    ss.set_defaults(func=_cmd_subset)

    c = sub.add_parser("combine", help="concatenate data dirs")
    c.add_argument("dest")
    c.add_argument("srcs", nargs="+")
    c.add_argument("--extra-files", "--extra_files", default="",
                   help="accepted for Kaldi compatibility (every keyed file is combined)")
    c.add_argument("--skip-fix", "--skip_fix", default="", help="accepted for Kaldi compatibility")
    c.set_defaults(func=_cmd_combine)

    cp = sub.add_parser("copy", help="copy a data dir, optionally renaming ids")
    cp.add_argument("src")
    cp.add_argument("dest")
    for opt in ("--utt-prefix", "--utt-suffix", "--spk-prefix", "--spk-suffix"):
        cp.add_argument(opt, default="")
    cp.set_defaults(func=_cmd_copy)

    d = sub.add_parser("utt2dur", help="compute utt2dur/reco2dur (parallel)")
    d.add_argument("dir")
    d.add_argument("--nj", type=positive_int, default=None, help="parallel jobs (>= 1)")
    d.set_defaults(func=_cmd_utt2dur)
    return p


def main(argv: list[str] | None = None) -> int:
    from pyutils.cli_types import tolerant_output
    tolerant_output()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "subset":
        argv = _preprocess_subset(argv)
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (DataDirError, AudioReadError, OSError, ValueError) as e:
        print(f"chorus-datadir {args.command}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
