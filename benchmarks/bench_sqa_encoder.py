"""SQA encoder speed on CPU: one training step (forward + backward + AdamW) per
encoder, on a batch shaped like the default mini corpus (16 x ~6.8 s of 80-dim
log-mel at 10 ms). Prints CPU seconds per batch and the ratio to the BiGRU
reference measured in the same run (process time, so a loaded machine inflates
all rows alike).

    tools/venv/bin/python benchmarks/bench_sqa_encoder.py [--threads 1] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import torch

from pyutils.sqa.model import ModelConfig, SQAModel

CONFIGS = [
    ("BiGRU 96/80 x1 (reference)", dict(conv_channels=96, rnn_hidden=80, rnn_layers=1, encoder="gru")),
    ("BiGRU 64/64 x1", dict(conv_channels=64, rnn_hidden=64, rnn_layers=1, encoder="gru")),
    ("TCN 96, dilations 1..16 (default)", dict(conv_channels=96, encoder="tcn", tcn_dilations=(1, 2, 4, 8, 16))),
    ("TCN 64, dilations 1..16", dict(conv_channels=64, encoder="tcn", tcn_dilations=(1, 2, 4, 8, 16))),
]


def step_time(cfg: dict, feats, lengths, repeats: int) -> float:
    torch.manual_seed(0)
    model = SQAModel(ModelConfig(input_dim=feats.shape[2], **cfg))
    opt = torch.optim.AdamW(model.parameters())
    out = model(feats, lengths)                     # warm-up
    (out["frame_logits"].mean() + out["score"].mean()).backward()
    t = time.process_time()
    for _ in range(repeats):
        out = model(feats, lengths)
        loss = out["frame_logits"].mean() + out["score"].mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return (time.process_time() - t) / repeats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    g = torch.Generator().manual_seed(0)
    feats = torch.randn(16, 680, 80, generator=g)
    lengths = torch.randint(300, 681, (16,), generator=g)
    lengths[0] = 680
    ref = None
    print(f"{'encoder':38s} {'params':>8s} {'CPU s/batch':>12s} {'vs ref':>7s}")
    for name, cfg in CONFIGS:
        secs = step_time(cfg, feats, lengths, a.repeats)
        ref = ref or secs
        n = sum(p.numel() for p in SQAModel(ModelConfig(input_dim=80, **cfg)).parameters())
        print(f"{name:38s} {n / 1e6:7.2f}M {secs:12.3f} {secs / ref:7.2f}x", flush=True)


if __name__ == "__main__":
    main()
