"""``chorus-synth {nvv,sqa,vc} --out DIR``: generate an offline mini corpus.

The utterance list (the *plan*) is made in this process, split into ``--nj``
shards and rendered by ``python -m pyutils.synth.worker`` jobs through
``--cmd`` (``utils/run.pl``/``utils/slurm.pl``, logs in ``DIR/log/synth.JOB.log``)
or, without ``--cmd``, by a local process pool.  Every utterance has its own
seed derived from (``--seed``, utterance index), so the bytes do not depend
on ``--nj``.  ``DIR/.done`` marks a finished corpus; re-running with the same
arguments is a no-op, different arguments are refused unless ``--overwrite``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import multiprocessing as mp
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import List

from pyutils.cli_types import non_negative_int, positive_int
from pyutils.jobs import resolve_cmd
from pyutils.io import read_jsonl
from pyutils.synth.io import write_text
from pyutils.synth.worker import KIND_MODULES, render_item

FORMAT_VERSION = 1
#: --nvv-bank-weight of the bank corpus: >= 60 % of the events recorded (pyutils/synth/README.md)
DEFAULT_BANK_WEIGHT = 4
#: arguments that change the corpus (``--nj``/``--cmd`` do not)
IDENTITY = {
    "nvv": ("lang", "preset", "seed", "num_train", "num_dev", "num_test", "num_voices", "nvv_sounds",
            "nvv_bank_weight", "voices"),
    "sqa": ("lang", "preset", "seed", "num_train", "num_dev", "num_test", "num_voices", "real_train_copies",
            "voices"),
    "vc": ("preset", "seed", "num_voices", "num_target_voices", "utts_per_voice", "num_pairs"),
}


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="chorus-synth",
        description="Generate an offline mini corpus with exact labels (nvv, sqa, vc); "
                    "same --seed, same bytes, whatever --nj.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Example: chorus-synth nvv --lang en --preset ci --out corpus/nvv_en --nj 2 "
               "--cmd utils/run.pl")
    sub = ap.add_subparsers(dest="kind", required=True)
    helps = {"nvv": "speech with NVV events (en, zh, or any language espeak-ng speaks) for NVV-ASR and NVV-TTS",
             "sqa": "clean speech + noise/distortion/pause faults with quality scores",
             "vc": "multi-speaker Vietnamese speech split like VLSP 2025 VC"}
    for kind in ("nvv", "sqa", "vc"):
        presets = importlib.import_module(KIND_MODULES[kind]).PRESETS
        desc = helps[kind] + ". Presets: " + "; ".join(
            f"{name}: " + ", ".join(f"{k}={v}" for k, v in cfg.items()) for name, cfg in presets.items())
        p = sub.add_parser(kind, help=helps[kind], description=desc)
        p.add_argument("--out", required=True, help="output corpus directory")
        if kind == "nvv":
            p.add_argument("--lang", default="en",
                           help="en, zh (hand-written grammars), or any language espeak-ng speaks and Unicode "
                                "CLDR describes, e.g. de, fr, ru, hi, ja, yue (python -m pyutils.synth.langs check "
                                "--lang xx tells)")
            p.add_argument("--nvv-sounds", choices=["bank", "generated"], default="bank",
                           help="bank: recorded clips (make -C tools nvv_bank; pyutils/synth/nvv_bank.py) for "
                                "the tags the bank has, generated sounds for the others; generated: the "
                                "procedural sounds only (the corpus before the bank)")
            p.add_argument("--nvv-bank-weight", type=positive_int, default=None,
                           help="with --nvv-sounds bank: draw the tags the bank has (5 of 16) N times as "
                                "often as the others (default 4: 65%% of the events recorded; 1: all 16 tags equally "
                                "often, 31%% recorded; pyutils/synth/README.md)")
            p.add_argument("--nvv-bank-extra", action="append", default=[], metavar="DIR",
                           help="with --nvv-sounds bank: an extra bank of recorded clips (python -m "
                                "pyutils.synth.nvv_bank from-prep, e.g. the train speakers of chorus-prep "
                                "deeply_nvv); its clips join the bank's of the same tag and split")
            p.add_argument("--voices", choices=["bank", "espeak"], default="bank",
                           help="bank: neural voices where the voice bank has them (English: piper + "
                                "Kokoro, pyutils/synth/voice_bank.py; installed by make -C tools voices), "
                                "espeak-ng elsewhere; espeak: espeak-ng/flite only (the corpora before the bank)")
            p.add_argument("--speech-cache", default=None,
                           help="directory of cached neural renderings, shared by presets and runs "
                                "(default: speech_cache/ beside --out, or $CHORUS_SPEECH_CACHE; 'none': off)")
        elif kind == "sqa":
            p.add_argument("--lang", choices=["en"], default="en")
            p.add_argument("--voices", choices=["bank", "espeak"], default="bank",
                           help="bank: one voice in 6 is a neural voice of the voice bank (piper joe, Kokoro; "
                                "pyutils/synth/sqa_corpus.py), the rest flite/espeak-ng; espeak: flite/espeak-ng "
                                "only (the corpus before the bank)")
            p.add_argument("--real-train-copies", type=non_negative_int, default=None,
                           help="copies (each with its own faults) of every chunk of the real recordings that "
                                "make -C tools fetched (pyutils/corpora/packaged_speech.py), added to train "
                                "beside --num-train synthetic ones; 0 = none (override the preset)")
        p.add_argument("--preset", choices=["ci", "default", "large"], default="default")
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--nj", type=positive_int, default=1, help="number of parallel jobs")
        p.add_argument("--cmd", default="",
                       help="job backend, e.g. 'utils/run.pl' (default: local process pool)")
        p.add_argument("--overwrite", action="store_true",
                       help="remove an existing DIR made with other arguments")
        p.add_argument("--num-voices", type=positive_int, default=None, help="override the preset")
        if kind in ("nvv", "sqa"):
            for s in ("train", "dev", "test"):
                p.add_argument(f"--num-{s}", type=positive_int, default=None,
                               help=f"utterances in {s} (override the preset)")
        else:
            p.add_argument("--num-target-voices", type=positive_int, default=None,
                           help="voices held out of training (test targets)")
            p.add_argument("--utts-per-voice", type=positive_int, default=None)
            p.add_argument("--num-pairs", type=positive_int, default=None)
    return ap


def identity(args) -> dict:
    ident = {"kind": args.kind, "format_version": FORMAT_VERSION}
    for k in IDENTITY[args.kind]:
        ident[k] = getattr(args, k, None)
    if args.kind == "sqa":   # the same arguments give another corpus once the real recordings are fetched
        from pyutils.corpora.packaged_speech import available

        ident["real_train_sources"] = [name for name, _, _ in available()]
    if args.kind == "nvv" and args.nvv_sounds == "bank":   # another manifest, another corpus
        from pyutils.synth.nvv_bank_index import manifest_digest

        ident["nvv_bank"] = manifest_digest()
        if getattr(args, "nvv_bank_extra", None):
            from pyutils.synth.nvv_bank_index import extra_digest

            ident["nvv_bank_extra"] = [extra_digest(d) for d in args.nvv_bank_extra]
    return ident


def _log(msg: str) -> None:
    print(f"chorus-synth: {msg}", file=sys.stderr, flush=True)


def _prepare_dir(out: Path, ident: dict, overwrite: bool) -> bool:
    """Return True when the corpus is already complete with the same arguments."""
    args_file = out / "synth_args.json"
    if args_file.exists():
        old = json.loads(args_file.read_text())
        if old.get("real_prompts", 0) is None:   # an option of earlier versions; None: the corpus built now
            del old["real_prompts"]
        if old == ident:
            if (out / ".done").exists():
                return True
        elif not overwrite:
            raise SystemExit(
                f"chorus-synth: {out} was made with other arguments ({args_file}: {old}); "
                f"use a new --out directory or --overwrite")
        else:
            _log(f"--overwrite: removing {out}")
            shutil.rmtree(out)
    elif out.exists() and any(out.iterdir()) and not overwrite:
        raise SystemExit(f"chorus-synth: {out} exists and is not a chorus-synth corpus; "
                         f"use a new --out directory or --overwrite")
    elif out.exists() and overwrite:
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / ".done").unlink(missing_ok=True)
    write_text(args_file, [json.dumps(ident, sort_keys=True)])
    return False


def _shards(items: List[dict], nj: int) -> List[List[dict]]:
    size = math.ceil(len(items) / nj) if items else 0
    return [items[i * size:(i + 1) * size] for i in range(nj)]


def _progress(done: int, total: int, t0: float) -> None:
    el = time.time() - t0
    _log(f"{done}/{total} utterances ({done / max(el, 1e-9):.1f} utt/s, {el:.0f} s)")


def _render_with_cmd(items, out: Path, nj: int, cmd: str) -> List[dict]:
    plan_dir, meta_dir, log_dir = out / "plan", out / "meta", out / "log"
    for d in (plan_dir, meta_dir, log_dir):
        d.mkdir(parents=True, exist_ok=True)
    shards = _shards(items, nj)
    todo = []
    for j, shard in enumerate(shards, 1):
        plan_path = plan_dir / f"plan.{j}.jsonl"
        meta_path = meta_dir / f"meta.{j}.jsonl"
        new_plan = [json.dumps(it, ensure_ascii=False) for it in shard]
        old_plan = plan_path.read_text(encoding="utf-8").splitlines() if plan_path.exists() else None
        if old_plan == new_plan and meta_path.exists():
            continue                   # this shard finished in an earlier run
        write_text(plan_path, new_plan)
        meta_path.unlink(missing_ok=True)
        todo.append(j)
    if todo:
        # argv lists only (no shell string built from --out or --cmd): the worker
        # command goes to the backend as ONE word, already shell-quoted, which
        # run.pl/slurm.pl run verbatim (JOB is substituted in it).
        backend = resolve_cmd(cmd)

        def worker(task: str) -> str:
            return shlex.join([sys.executable, "-m", "pyutils.synth.worker",
                               "--plan", str(plan_dir / f"plan.{task}.jsonl"), "--out", str(out),
                               "--meta", str(meta_dir / f"meta.{task}.jsonl")])

        if len(todo) < nj:
            _log(f"resuming: shards {todo} of {nj} left")
            # jobs of finished shards return at once: their meta exists, re-run would redo them,
            # so run only the missing ones one by one through the backend
            procs = [subprocess.Popen(backend + [str(log_dir / f"synth.{j}.log"), worker(str(j))])
                     for j in todo]
        else:
            full = backend + [f"JOB=1:{nj}", str(log_dir / "synth.JOB.log"), worker("JOB")]
            _log(f"running: {shlex.join(full)}")
            procs = [subprocess.Popen(full)]
        t0 = time.time()
        total = sum(len(shards[j - 1]) for j in todo)
        last = 0.0
        while any(p.poll() is None for p in procs):
            time.sleep(0.5)
            if time.time() - last > 5:
                done = 0
                for j in todo:
                    part = meta_dir / f"meta.{j}.jsonl.partial"
                    if (meta_dir / f"meta.{j}.jsonl").exists():
                        done += len(shards[j - 1])
                    elif part.exists():
                        done += sum(1 for _ in open(part, encoding="utf-8"))
                _progress(done, total, t0)
                last = time.time()
        bad = [p.returncode for p in procs if p.returncode != 0]
        if bad:
            failed = [str(log_dir / f"synth.{j}.log") for j in todo
                      if (log_dir / f"synth.{j}.log").exists()]
            where = f"see {failed[0]}" if failed else f"no job log was written in {log_dir}"
            raise SystemExit(f"chorus-synth: synthesis jobs failed (backend: {cmd}); {where}")
        _progress(total, total, t0)
    metas = []
    for j in range(1, nj + 1):
        metas += read_jsonl(meta_dir / f"meta.{j}.jsonl")
    return metas


_OUT = None


def _init_pool(out: str) -> None:
    global _OUT
    _OUT = out


def _render_one(item: dict) -> dict:
    return render_item(item, _OUT)


def _render_with_pool(items, out: Path, nj: int) -> List[dict]:
    (out / "wav").mkdir(parents=True, exist_ok=True)
    t0, last, metas = time.time(), time.time(), []
    if nj <= 1:
        for i, it in enumerate(items, 1):
            metas.append(render_item(it, str(out)))
            if time.time() - last > 5:
                _progress(i, len(items), t0)
                last = time.time()
    else:
        ctx = mp.get_context("fork" if hasattr(os, "fork") else "spawn")
        with ctx.Pool(nj, initializer=_init_pool, initargs=(str(out),)) as pool:
            for i, m in enumerate(pool.imap(_render_one, items, chunksize=4), 1):
                metas.append(m)
                if time.time() - last > 5:
                    _progress(i, len(items), t0)
                    last = time.time()
    _progress(len(items), len(items), t0)
    return metas


def run(args) -> Path:
    out = Path(args.out).resolve()
    if args.kind == "nvv" and getattr(args, "nvv_bank_weight", 1) is None:
        args.nvv_bank_weight = DEFAULT_BANK_WEIGHT if args.nvv_sounds == "bank" else 1
    ident = identity(args)
    mod = importlib.import_module(KIND_MODULES[args.kind])
    t0 = time.time()
    items = mod.plan_from_args(args)  # first: bad arguments fail before anything is written
    if _prepare_dir(out, ident, args.overwrite):
        _log(f"{out} is complete (.done); nothing to do")
        return out
    _log(f"{args.kind}: {len(items)} utterances -> {out} (nj={args.nj}"
         f"{', cmd=' + args.cmd if args.cmd else ', local pool'})")
    if args.cmd:
        metas = _render_with_cmd(items, out, args.nj, args.cmd)
    else:
        metas = _render_with_pool(items, out, args.nj)
    if len(metas) != len(items):
        raise SystemExit(f"chorus-synth: expected {len(items)} utterances, got {len(metas)}")
    counts = mod.finalize(str(out), metas, args)
    hours = sum(m.get("dur", 0.0) for m in metas) / 3600
    el = time.time() - t0
    summary = {"identity": ident, "counts": counts, "hours": round(hours, 4),
               "seconds": round(el, 1), "nj": args.nj, "cmd": args.cmd}
    write_text(out / "summary.json", [json.dumps(summary, sort_keys=True)])
    (out / ".done").write_text("")
    _log(f"done in {el:.1f} s: {counts}, {hours * 60:.1f} min of audio")
    return out


def main(argv=None) -> int:
    from pyutils.cli_types import tolerant_output
    tolerant_output()
    from pyutils.synth.io import SynthArgError
    from pyutils.synth.voice_bank import VoiceBankError
    args = build_parser().parse_args(argv)
    if args.kind == "nvv":
        from pyutils.synth.langs import LanguageNotSupported, require

        try:
            require(args.lang)
        except LanguageNotSupported as e:
            print(f"chorus-synth: error: {e}", file=sys.stderr)
            return 2
        if args.nvv_sounds == "generated" and args.nvv_bank_extra:
            print("chorus-synth nvv: error: --nvv-bank-extra needs --nvv-sounds bank", file=sys.stderr)
            return 2
        if args.nvv_sounds == "generated" and args.nvv_bank_weight not in (None, 1):
            print("chorus-synth nvv: error: --nvv-bank-weight needs --nvv-sounds bank", file=sys.stderr)
            return 2
        if args.nvv_sounds == "bank":
            from pyutils.synth.nvv_bank_index import BankError, load_index

            try:
                load_index()
                if args.nvv_bank_extra:
                    from pyutils.synth.nvv_bank_index import load_extra

                    for d in args.nvv_bank_extra:
                        load_extra(d)
            except BankError as e:
                print(f"chorus-synth nvv: error: {e}", file=sys.stderr)
                return 2
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        print(f"chorus-synth {args.kind}: error: --out {args.out}: exists and is not a folder", file=sys.stderr)
        return 2
    if args.cmd:
        from pyutils.jobs import cmd_problem
        if cmd_problem(args.cmd):
            print(f"chorus-synth {args.kind}: error: --cmd {args.cmd!r}: {cmd_problem(args.cmd)}", file=sys.stderr)
            return 2
    try:
        run(args)
    except (SynthArgError, VoiceBankError) as e:
        print(f"chorus-synth {args.kind}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # disk full, permissions, ...: one line, no traceback
        where = f"{e.filename}: {e.strerror}" if e.filename else str(e)
        print(f"chorus-synth {args.kind}: error: {where}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
