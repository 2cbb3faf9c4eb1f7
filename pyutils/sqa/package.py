"""Package an SQA hypothesis as a submission JSONL, checked by the scorer's rules.

``python -m pyutils.sqa.package --hyp hyp.jsonl --ids data/test/wav.scp --out submission/sqa_test.jsonl``

Every row is parsed with :func:`pyutils.scoring.sqa.parse_row` (score in [1, 5],
valid intervals); the id set must equal the ids of ``--ids``; a fault reported
present must carry intervals (guaranteed by construction: presence = non-empty).
"""

from __future__ import annotations

import argparse
import sys

from pyutils.io import read_jsonl, read_scp, write_jsonl


def check_rows(rows, ids, path):
    from pyutils.scoring.sqa import parse_row

    seen = set()
    for line, row in enumerate(rows, 1):
        utt, _, _ = parse_row(row, path, line)
        if utt in seen:
            raise ValueError(f"{path}:{line}: duplicate utt_id {utt}")
        seen.add(utt)
    missing, extra = sorted(set(ids) - seen), sorted(seen - set(ids))
    if missing or extra:
        raise ValueError(f"{path}: id set differs from the test set: {len(missing)} missing "
                         f"(e.g. {missing[:1]}), {len(extra)} unknown (e.g. {extra[:1]})")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m pyutils.sqa.package", description=__doc__)
    p.add_argument("--hyp", required=True)
    p.add_argument("--ids", required=True, help="wav.scp (or any <id> ... file) of the test set")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    rows = read_jsonl(args.hyp)
    try:
        check_rows(rows, [u for u, _ in read_scp(args.ids)], args.hyp)
    except Exception as exc:  # ScoringError or ValueError: one clear line
        print(f"ERROR: {exc}", file=sys.stderr)
        return 2
    rows.sort(key=lambda r: r["utt_id"])
    write_jsonl(args.out, rows)
    print(f"{args.out}: {len(rows)} rows, valid", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
