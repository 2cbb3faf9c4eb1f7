"""``chorus-score``: score, validate and package submissions.

Subcommands::

  track1           NVVSpeech Challenge Track 1 (official protocol v1.0.0)
  nvbench          NV-Bench text metrics (CER/WER, PCER, OCER)
  sqa              speech quality assessment (PCC, fault F1, frame IoU)
  vc               VLSP 2025 voice-conversion score
  validate-track1  check a Track 1 submission JSONL (optionally against a reference)
  package-track1   build a Track 1 submission (JSONL + zip) from a decode ``text``
  validate-track2  check a folder of Track 2 wavs (16 kHz mono PCM16), optionally fix
  validate-vc      check converted wavs listed in a VC pairs file

Exit status: 0 ok, 2 invalid input (one line on stderr: ``file:line: CODE: message``),
1 other failure. Text scorers import neither torch nor audio libraries.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import List, Optional

from pyutils.scoring.errors import FailedReport, ScoringError


def _add_ref_hyp(p: argparse.ArgumentParser, ref_help: str, hyp_help: str) -> None:
    p.add_argument("--ref", required=True, help=ref_help)
    p.add_argument("--hyp", required=True, help=hyp_help)
    p.add_argument("--output-json", required=True, help="full result JSON (written atomically)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chorus-score", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("track1", help="NVVSpeech Challenge Track 1 score (protocol v1.0.0)",
                       description="Score a Track 1 submission exactly like the official evaluator v1.0.0, "
                                   "with per-tag P/R/F1, a tag confusion table and an optional per-utterance report.")
    _add_ref_hyp(p, 'reference JSONL {"utt_id","language":"en"|"zh","text_with_nvvs"}',
                 'submission JSONL {"utt_id","text_with_nvvs"}')
    p.add_argument("--per-utt-report", metavar="FILE", help="write a readable per-utterance alignment report")
    p.add_argument("--single-language", action="store_true",
                   help="score a reference holding one language only (FinalTrack1Score = that language's "
                        "score); without it such a reference is refused, as by the official evaluator "
                        "(REFERENCE_LANGUAGE_COVERAGE_ERROR)")

    p = sub.add_parser("nvbench", help="NV-Bench text metrics (CER/WER, PCER, OCER)",
                       description="NV-Bench metrics: CER (tags removed; WER too for en), PCER over the tag "
                                   "sequence (micro and macro), OCER over text units plus atomic tags.")
    _add_ref_hyp(p, "reference (JSONL like track1, or Kaldi text with --format kaldi)", "hypothesis (same format)")
    p.add_argument("--format", choices=["jsonl", "kaldi"], default="jsonl")
    p.add_argument("--lang", choices=["en", "zh"], help="language (required for --format kaldi; "
                   "for JSONL it overrides the reference's language field)")
    p.add_argument("--inventory", choices=["challenge", "nvbench"], default="challenge",
                   help="which tags are accepted (default: the 16 challenge tags)")
    p.add_argument("--map-nvbench-to-challenge", action="store_true",
                   help="map NV-Bench labels to challenge tags (conf/nvv_tags.yaml); labels without a "
                        "counterpart are dropped")

    p = sub.add_parser("sqa", help="speech quality assessment score",
                       description="Final = 0.40*PCC + 0.30*F1_macro + 0.30*IoU_macro (see pyutils/scoring/sqa.py).")
    _add_ref_hyp(p, 'reference JSONL {"utt_id","score","faults":{...}}', "prediction JSONL (same format)")

    p = sub.add_parser("vc", help="VLSP 2025 voice-conversion score",
                       description="Score = 0.4*SIM_gain + 0.3*MOS + 0.3*(100-WER), components on 0..100.")
    p.add_argument("--ref", help="optional list of expected utterance names (one per line, or TSV/JSONL with a "
                                 "'utt'/'converted' column) to check coverage")
    p.add_argument("--hyp", required=True, help="per-utterance components: TSV with header or JSONL")
    p.add_argument("--output-json", required=True)

    p = sub.add_parser("validate-track1", help="validate a Track 1 submission JSONL")
    p.add_argument("--hyp", required=True)
    p.add_argument("--ref", help="reference JSONL: also check ids and parse in each utterance's language")

    p = sub.add_parser("package-track1", help="build a Track 1 submission from an ESPnet decode text")
    p.add_argument("--text", required=True, help="decode 'text' file: <utt_id> <tagged text>")
    p.add_argument("--out", required=True, help="submission JSONL to write")
    p.add_argument("--ref-ids", help="reference JSONL, or a list of ids (first column of each line)")
    p.add_argument("--zip", help="also write a zip holding the JSONL at its root (CodaBench)")

    p = sub.add_parser("validate-track2", help="validate (and optionally fix) Track 2 wavs")
    p.add_argument("--dir", required=True, help="folder with <utt_id>.wav")
    p.add_argument("--ref", required=True, help="JSONL with the expected utt_id values")
    p.add_argument("--fix-to", metavar="OUTDIR", help="write converted copies (16 kHz mono PCM16) here")

    p = sub.add_parser("validate-vc", help="validate converted wavs of a VC pairs list")
    p.add_argument("--pairs", required=True, help="source<TAB>target<TAB>converted per line")
    p.add_argument("--dir", required=True, help="folder holding the converted wavs")
    p.add_argument("--sample-rate", type=int, default=16000, help="required sample rate (default 16000)")
    return parser


def _emit(lines: List[str]) -> None:
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()


def _run(args: argparse.Namespace) -> int:
    from pyutils.scoring.io import atomic_write_json, check_not_input

    cmd = args.command
    inputs = [(f"--{k.replace('_', '-')}", getattr(args, k, None))
              for k in ("ref", "hyp", "text", "ref_ids", "pairs")]
    for opt in ("output_json", "per_utt_report", "out", "zip"):
        check_not_input(getattr(args, opt, None), inputs, f"--{opt.replace('_', '-')}")
        inputs.append((f"--{opt.replace('_', '-')}", getattr(args, opt, None)))
    if cmd == "track1":
        from pyutils.scoring import track1
        # Streamed: the reference is kept compactly, the submission is scored
        # row by row; outputs are written only once every row has been checked.
        with contextlib.ExitStack() as stack:
            report = stack.enter_context(track1.PerUttReport(args.per_utt_report)) if args.per_utt_report else None
            result = track1.score_track1_files(args.ref, args.hyp, report=report,
                                                single_language=args.single_language)
            atomic_write_json(args.output_json, track1.public_result(result))
            if report is not None:
                report.commit()
        _emit(track1.summary_lines(result) + [f"results: {args.output_json}"])
        return 0
    if cmd == "sqa":
        from pyutils.scoring import sqa
        result = sqa.score_sqa_files(args.ref, args.hyp)
        atomic_write_json(args.output_json, result)
        _emit(sqa.summary_lines(result) + [f"results: {args.output_json}"])
        return 0
    if cmd == "nvbench":
        from pyutils.scoring import nvbench
        result = nvbench.score_nvbench_files(args.ref, args.hyp, fmt=args.format, lang=args.lang,
                                             inventory=args.inventory,
                                             map_to_challenge=args.map_nvbench_to_challenge)
        atomic_write_json(args.output_json, result)
        _emit(nvbench.summary_lines(result) + [f"results: {args.output_json}"])
        return 0
    if cmd == "vc":
        from pyutils.scoring import vc
        result = vc.score_vc_files(args.hyp, args.ref)
        atomic_write_json(args.output_json, result)
        _emit(vc.summary_lines(result) + [f"results: {args.output_json}"])
        return 0
    if cmd == "validate-track1":
        from pyutils.scoring import validate
        _emit(validate.validate_track1(args.hyp, args.ref))
        return 0
    if cmd == "package-track1":
        from pyutils.scoring import package
        _emit(package.package_track1(args.text, args.out, ref_ids=args.ref_ids, zip_path=args.zip))
        return 0
    if cmd == "validate-track2":
        from pyutils.scoring import validate
        _emit(validate.validate_track2(args.dir, args.ref, fix_to=args.fix_to))
        return 0
    if cmd == "validate-vc":
        from pyutils.scoring import validate
        _emit(validate.validate_vc(args.pairs, args.dir, sample_rate=args.sample_rate))
        return 0
    raise AssertionError(cmd)  # pragma: no cover


def main(argv: Optional[List[str]] = None) -> int:
    from pyutils.cli_types import tolerant_output
    tolerant_output()
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except FailedReport as exc:
        _emit(exc.lines)
        sys.stderr.write(exc.error.one_line() + "\n")
        return 2
    except ScoringError as exc:
        sys.stdout.flush()
        sys.stderr.write(exc.one_line() + "\n")
        return 2
    except BrokenPipeError:  # pragma: no cover - e.g. `| head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
