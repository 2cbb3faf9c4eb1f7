"""Train the SQA model (icefall-style: one readable loop, no framework).

Loss per batch (masked to real frames)::

    L = w_s * SmoothL1(score, ref_score)              (examples with a known score)
      + w_f * BCE(frame_logits, frame_labels)         (per frame, per fault)
      + w_u * BCE(utt_logits, presence)               (per utterance, per fault)

Usage::

    python -m pyutils.sqa.train --config conf/train_sqa_default.yaml \
        --train-dir dump/train --train-ref data/train/ref.jsonl \
        --dev-dir dump/dev --dev-ref data/dev/ref.jsonl \
        --stats exp/sqa_stats/feats_stats.npz --outdir exp/sqa_default

Writes ``OUTDIR/model.pt`` (best dev loss), ``OUTDIR/last.pt`` (resume point,
``--resume``), ``OUTDIR/train_log.tsv`` and ``OUTDIR/config.yaml``.

Length of training: ``max_updates`` optimizer steps (the LR schedule follows
them), or ``epochs`` full passes when it is 0.  The result does not depend on
machine load: with one BLAS thread, the same data and seed give the same
weights on a CPU (tested).  ``max_minutes`` (0 = off) is only a safety stop;
when it ends a run early, the log says so and the result depends on the load.

``utt_embed: true`` reads ``embed.scp`` (:mod:`pyutils.sqa.embed`) beside
``feats.scp`` and feeds each recording's embedding to the score head.
``augment_exclude`` lists fault kinds (``babble``, ``reverb``, ...) or fault
types the on-the-fly augmentation must not make (leave-one-family-out runs).
``channel_prob`` passes that share of the training examples through a random
benign recording channel (:mod:`pyutils.synth.channel`, its noise floor 30-65 dB
under the speech), labels and score kept.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import sys
import time

import numpy as np
import threadpoolctl
import torch
import yaml

from pyutils.io import atomic_write_lines
from pyutils.sqa.dataset import BucketBatchSampler, SQADataset, collate
from pyutils.sqa.features import check_config as check_features
from pyutils.sqa.model import ModelConfig, SQAModel, fit_length, safe_torch_load, save_model

DEFAULTS = {
    "model": {},
    "epochs": 20,
    "batch_size": 16,
    "lr": 2e-3,
    "weight_decay": 1e-4,
    "grad_clip": 5.0,
    "w_score": 1.0,
    "w_frame": 1.0,
    "w_utt": 0.5,
    "augment_prob": 0.0,
    "augment_exclude": [],  # fault kinds/types the augmentation must not make
    "channel_prob": 0.0,  # share of examples through a benign recording channel (pyutils.synth.channel)
    "max_updates": 0,     # optimizer steps (0: `epochs` passes); the LR schedule follows them
    "max_minutes": 0.0,   # safety stop only (0 = none): a run it cuts short depends on the machine
    "utt_embed": False,   # feed embed.scp (DNSMOS / Whisper, pyutils.sqa.embed) to the score head
    "seed": 0,
    "num_threads": 1,     # >1 thrashes on a loaded machine (measured 10x slower at load 10 on 2 cores)
    "num_workers": 1,     # data loading/augmentation in a separate process (the 2nd core)
    "device": "cpu",      # cpu, cuda, or auto
}


def _read_config(path: str, seen: tuple = ()) -> dict:
    """The keys of one YAML config, after those of the config it names as ``base:``.

    ``base`` is a path relative to the file's own folder; the file's keys replace the
    base's, except ``model:``, which is merged key by key (a variant names only the
    model option it changes).  Unknown keys and cycles are errors naming the file.
    """
    real = os.path.realpath(path)
    if real in seen:
        raise ValueError(f"{path}: 'base' chain loops back to itself ({' -> '.join(seen + (real,))})")
    with open(path, encoding="utf-8") as f:
        user = yaml.safe_load(f) or {}
    if not isinstance(user, dict):
        raise ValueError(f"{path}: a training config is a mapping of keys, got {type(user).__name__}")
    unknown = set(user) - set(DEFAULTS) - {"base"}
    if unknown:
        raise ValueError(f"{path}: unknown keys {sorted(unknown)}; known: {sorted(DEFAULTS)} and base")
    if "model" in user and not isinstance(user["model"] or {}, dict):
        raise ValueError(f"{path}: 'model' must be a mapping of model options")
    unknown = set(user.get("model") or {}) - set(ModelConfig.__dataclass_fields__)
    if unknown:
        raise ValueError(f"{path}: unknown model options {sorted(unknown)}; known: "
                         f"{sorted(ModelConfig.__dataclass_fields__)}")
    base = user.pop("base", None)
    if base is None:
        return user
    if not isinstance(base, str) or not base:
        raise ValueError(f"{path}: 'base' must be the path of another config, got {base!r}")
    merged = _read_config(os.path.join(os.path.dirname(path), base), seen + (real,))
    model = dict(merged.get("model") or {}, **(user.pop("model", None) or {}))
    merged.update(user)
    if model:
        merged["model"] = model
    return merged


def load_config(path: str | None) -> dict:
    """DEFAULTS updated by the YAML at ``path`` (and the chain of ``base:`` configs it names)."""
    cfg = copy.deepcopy(DEFAULTS)
    if path:
        cfg.update(_read_config(path))
    return cfg


def lr_at(progress: float, peak: float, warmup: float = 0.05, floor: float = 0.02) -> float:
    """Linear warm-up over the first 5 %, then cosine decay to ``floor * peak``.

    ``progress`` in [0, 1] is steps done / scheduled steps (all steps, or those
    that fit in ``max_minutes`` as measured on epoch 1), so a time-limited run
    still anneals.
    """
    if progress < warmup:
        return peak * max(progress / warmup, 0.05)
    t = (progress - warmup) / (1.0 - warmup)
    return peak * (floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * min(t, 1.0))))


def compute_loss(model, batch, mean, std, cfg) -> tuple:
    feats = (batch["feats"] - mean) / std
    out = model(feats, batch["lengths"], batch.get("embed"))
    n = batch["labels"].shape[1]
    logits = fit_length(out["frame_logits"], n)
    mask = batch["mask"].unsqueeze(-1).float()
    bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, batch["labels"], reduction="none")
    l_frame = (bce * mask).sum() / (mask.sum() * logits.shape[-1]).clamp(min=1.0)
    l_utt = torch.nn.functional.binary_cross_entropy_with_logits(out["utt_logits"], batch["presence"])
    sw = batch["score_weight"]
    l_score = (torch.nn.functional.smooth_l1_loss(out["score"], batch["score"], reduction="none") * sw).sum() \
        / sw.sum().clamp(min=1.0)
    total = cfg["w_score"] * l_score + cfg["w_frame"] * l_frame + cfg["w_utt"] * l_utt
    return total, {"score": l_score.item(), "frame": l_frame.item(), "utt": l_utt.item()}


def make_augmenter(exclude=()):
    """Fault simulator from the mini-corpus helper, adapted to (x, rng, ref) -> (y, faults)."""
    try:
        from pyutils.synth import faults as fault_sim
    except ImportError:
        print("WARNING: pyutils.synth.faults is missing; training without fault augmentation", flush=True)
        return None
    from pyutils.sqa.augment import make_fault_augmenter

    return make_fault_augmenter(fault_sim, exclude=exclude)


def _seed_worker(_worker_id: int) -> None:
    """Fresh augmentation RNG per worker and epoch (torch gives each a new base seed)."""
    info = torch.utils.data.get_worker_info()
    info.dataset.rng = np.random.default_rng(torch.initial_seed() % (2 ** 32))
    torch.set_num_threads(1)
    # numpy's BLAS (the mel filterbank's matmul) would otherwise run a second thread per
    # worker that spins between calls and takes the core the training step needs
    threadpoolctl.threadpool_limits(1)


def _to(batch: dict, device) -> dict:
    return {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}


def evaluate(model, loader, mean, std, cfg, device="cpu") -> float:
    model.eval()
    tot, cnt = 0.0, 0
    with torch.no_grad():
        for batch in loader:
            loss, _ = compute_loss(model, _to(batch, device), mean, std, cfg)
            tot += loss.item() * len(batch["utts"])
            cnt += len(batch["utts"])
    model.train()
    return tot / max(cnt, 1)


def train(args) -> int:
    cfg = load_config(args.config)
    torch.manual_seed(cfg["seed"])
    np.random.seed(cfg["seed"])
    torch.set_num_threads(int(cfg["num_threads"]))
    os.makedirs(args.outdir, exist_ok=True)
    with open(os.path.join(args.outdir, "config.yaml"), "w", encoding="utf-8") as f:
        yaml.safe_dump(cfg, f, sort_keys=True)
    stats = np.load(args.stats)
    mean, std = torch.from_numpy(stats["mean"]), torch.from_numpy(stats["std"])

    augmenter = make_augmenter(cfg["augment_exclude"]) if cfg["augment_prob"] > 0 else None
    d = args.train_dir
    wav_scp = f"{d}/wav.scp" if os.path.exists(f"{d}/wav.scp") else None  # needed for augmentation only
    feats_cfg = {"n_mels": int(mean.shape[0])}
    if os.path.exists(f"{d}/feats_config.json"):
        with open(f"{d}/feats_config.json", encoding="utf-8") as f:
            feats_cfg = json.load(f)
        try:
            check_features(feats_cfg)
        except ValueError as e:
            raise SystemExit(f"{d}/feats_config.json: {e}") from None
    embed_cfg, train_embed, dev_embed = None, None, None
    if cfg["utt_embed"]:
        train_embed, dev_embed = f"{d}/embed.scp", f"{args.dev_dir}/embed.scp"
        for path in (train_embed, dev_embed):
            if not os.path.exists(path):
                raise SystemExit(f"utt_embed: true but {path} is missing (stage 2 with --utt-embed true)")
        with open(f"{d}/embed_config.json", encoding="utf-8") as f:
            embed_cfg = json.load(f)
    channel = None
    if cfg["channel_prob"] > 0:
        from pyutils.synth.channel import apply_channel

        channel = apply_channel   # (x, rng) -> y
    train_set = SQADataset(f"{d}/feats.scp", f"{d}/utt2dur", args.train_ref, wav_scp,
                           augment_prob=cfg["augment_prob"], augmenter=augmenter, seed=cfg["seed"],
                           feats_cfg=feats_cfg, embed_scp=train_embed,
                           channel_prob=float(cfg["channel_prob"]), channel=channel)
    dev_set = SQADataset(f"{args.dev_dir}/feats.scp", f"{args.dev_dir}/utt2dur", args.dev_ref, embed_scp=dev_embed)
    if len(train_set) == 0:
        raise SystemExit(f"no training examples in {d} with references in {args.train_ref}")
    sampler = BucketBatchSampler([train_set.num_frames(i) for i in range(len(train_set))],
                                 cfg["batch_size"], seed=cfg["seed"])
    workers = int(cfg["num_workers"])
    train_loader = torch.utils.data.DataLoader(train_set, batch_sampler=sampler, collate_fn=collate,
                                               num_workers=workers, worker_init_fn=_seed_worker,
                                               persistent_workers=False)
    dev_loader = torch.utils.data.DataLoader(dev_set, batch_size=cfg["batch_size"], collate_fn=collate)

    embed_dim = int(train_set[0]["embed"].shape[0]) if cfg["utt_embed"] else 0
    model_cfg = ModelConfig(**{**cfg["model"], "input_dim": int(mean.shape[0]), "embed_dim": embed_dim})
    device = cfg["device"]
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    model = SQAModel(model_cfg).to(device)
    mean, std = mean.to(device), std.to(device)
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    total_steps = int(cfg["max_updates"]) or max(1, cfg["epochs"] * len(sampler))
    max_epochs = -(-total_steps // len(sampler))
    budget_s = 60.0 * float(cfg["max_minutes"])
    start_epoch, best, step, spent = 1, float("inf"), 0, 0.0
    # Steps the LR schedule spans: all of them, unless epoch 1 shows that the time
    # budget ends training sooner; then the steps that fit, fixed once (and kept in
    # last.pt), so the schedule never follows the wall clock batch by batch and a
    # run whose budget does not bind is deterministic for a given seed.
    sched_steps = total_steps
    last_path = os.path.join(args.outdir, "last.pt")
    model_path = os.path.join(args.outdir, "model.pt")
    if args.resume and os.path.exists(last_path) and not _usable_model(model_path):
        # last.pt alone cannot give back the best epoch's weights: start over (same seed)
        print(f"{model_path} is missing or damaged: training again from epoch 1", flush=True)
        os.remove(last_path)
    if args.resume and os.path.exists(last_path):
        ck = safe_torch_load(last_path, device)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        start_epoch, best, step, spent = ck["epoch"] + 1, ck["best"], ck["step"], ck["seconds"]
        # a time-limited schedule is kept; without a time budget the schedule is the
        # configured length (a raised max_updates then continues instead of stopping)
        sched_steps = int(ck.get("sched_steps", total_steps)) if budget_s > 0 else total_steps
        if "torch_rng" in ck:  # the same augmentation/worker seeds as an uninterrupted run
            torch.set_rng_state(ck["torch_rng"].cpu())
        print(f"resumed from {last_path} at epoch {start_epoch}", flush=True)
    print(f"train {len(train_set)} utts, dev {len(dev_set)} utts, model {n_params / 1e6:.2f} M params, "
          f"{total_steps} updates ({max_epochs} epochs x {len(sampler)} batches), device {device}"
          + (f", utterance embedding {embed_dim} dims" if embed_dim else ""), flush=True)

    log_path = os.path.join(args.outdir, "train_log.tsv")
    if start_epoch == 1:
        with open(log_path, "w", encoding="utf-8") as f:
            f.write("epoch\ttrain_loss\tdev_loss\tl_score\tl_frame\tl_utt\tseconds\n")
    else:
        _truncate_log(log_path, start_epoch)
    t_start = time.time() - spent

    def progress() -> float:
        """Fraction of the LR schedule done (steps / scheduled steps)."""
        return min(step / sched_steps, 1.0)

    def over_budget() -> bool:
        return budget_s > 0 and time.time() - t_start >= budget_s

    for epoch in range(start_epoch, max_epochs + 1):
        if step >= total_steps:
            break
        if progress() >= 1.0 or over_budget():
            print(f"SAFETY STOP before epoch {epoch} at update {step}/{total_steps}: max_minutes "
                  f"{cfg['max_minutes']} used (this result depends on machine load)", flush=True)
            break
        sampler.set_epoch(epoch)
        model.train()
        t0, tot, parts, nb = time.time(), 0.0, np.zeros(3), 0
        for batch in train_loader:
            for group in opt.param_groups:
                group["lr"] = lr_at(progress(), cfg["lr"])
            loss, p = compute_loss(model, _to(batch, device), mean, std, cfg)
            step += 1
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg["grad_clip"])
            opt.step()
            tot += loss.item()
            parts += [p["score"], p["frame"], p["utt"]]
            nb += 1
            if step >= total_steps:
                break
            if budget_s > 0 and (progress() >= 1.0 or over_budget()):
                print(f"SAFETY STOP in epoch {epoch} at update {step}/{total_steps}: max_minutes "
                      f"{cfg['max_minutes']} used (this result depends on machine load)", flush=True)
                break
        if epoch == 1 and budget_s > 0 and sched_steps == total_steps and nb:
            fit = int(budget_s / ((time.time() - t_start) / step))
            if fit < total_steps:
                sched_steps = max(step + 1, fit)
                print(f"the time budget of {cfg['max_minutes']} min allows about {fit} of "
                      f"{total_steps} steps: LR schedule over {sched_steps} steps", flush=True)
        kept = model   # the weights dev selects and model.pt keeps
        dev_loss = evaluate(kept, dev_loader, mean, std, cfg, device)
        secs = time.time() - t0
        parts /= max(nb, 1)
        print(f"epoch {epoch}: train loss {tot / max(nb, 1):.4f} (score {parts[0]:.3f} frame {parts[1]:.3f} "
              f"utt {parts[2]:.3f}), dev loss {dev_loss:.4f}, {secs:.1f} s", flush=True)
        with open(log_path, "a", encoding="utf-8") as f:
            f.write(f"{epoch}\t{tot / max(nb, 1):.5f}\t{dev_loss:.5f}\t{parts[0]:.5f}\t{parts[1]:.5f}\t"
                    f"{parts[2]:.5f}\t{secs:.1f}\n")
        if dev_loss < best:
            best = dev_loss
            save_model(os.path.join(args.outdir, "model.pt"), kept.cpu(), stats,
                       {"epoch": epoch, "step": step, "dev_loss": dev_loss, "train_config": cfg,
                        "features": feats_cfg, "embed": embed_cfg})
            kept.to(device)
        ck = {"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
              "seconds": time.time() - t_start, "epoch": epoch, "best": best,
              "sched_steps": sched_steps, "torch_rng": torch.get_rng_state()}
        torch.save(ck, last_path + ".tmp")
        os.replace(last_path + ".tmp", last_path)
    if not _usable_model(model_path):
        raise SystemExit(f"training ended without a usable {model_path}")
    print(f"best dev loss {best:.4f}; model -> {model_path}", flush=True)
    return 0


def _usable_model(path: str) -> bool:
    from pyutils.sqa.model import ModelFileError, load_model
    if not os.path.exists(path):
        return False
    try:
        load_model(path)
    except ModelFileError:
        return False
    return True


def _truncate_log(path: str, start_epoch: int) -> None:
    """Keep the rows of epochs before ``start_epoch``: a run killed after writing a
    row but before its checkpoint must not leave that epoch twice in the log."""
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    keep = lines[:1] + [l for l in lines[1:]
                        if l.split("\t", 1)[0].isdigit() and int(l.split("\t", 1)[0]) < start_epoch]
    atomic_write_lines(path, keep)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m pyutils.sqa.train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", help="YAML with keys of DEFAULTS (model: {...}, epochs, lr, ...)")
    p.add_argument("--train-dir", required=True, help="dump dir with feats.scp, utt2dur, wav.scp")
    p.add_argument("--train-ref", required=True, help="reference JSONL of the training set")
    p.add_argument("--dev-dir", required=True)
    p.add_argument("--dev-ref", required=True)
    p.add_argument("--stats", required=True, help="feats_stats.npz (mean, std)")
    p.add_argument("--outdir", required=True)
    p.add_argument("--resume", action="store_true", help="continue from OUTDIR/last.pt")
    return train(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
