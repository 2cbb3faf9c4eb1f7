#!/usr/bin/env python
"""Seconds per training update of the tiny TTS configs of egs/nvv_tts (CPU).

Why the default is FastSpeech + Griffin-Lim and not VITS: on 2 CPU cores the
budget is ~10 minutes of training, so updates per second decide. The models are
built from their recipe configs and trained on the same random batch (batch
size B, text length L tokens, audio T seconds), measured in the same run
(FastSpeech with reduction factor 1 and 2, to show what r=2 buys):

    tools/venv/bin/python benchmarks/tts_update_time.py [--steps 3] [--batch 8]

A HiFiGAN vocoder (small generator, ESPnet's default discriminators, 1 s segments) is timed too: the price of a neural vocoder
trained in the same budget. Prints s/update per model and the ratio VITS / FastSpeech (and the load average,
since the machine may be shared). The FastSpeech default is also timed with the 3-layer postnet and the
dropout it had before (``fastspeech_postnet``), and ESPnet's log-mel of the batch's waveforms, which every
update computes, at n_fft 512 (the config) and 1024 (before). The WORLD-feature default
(``train_fastspeech_world_default.yaml``) is timed at reduction factor 4 and 2, in float32 and
with the bfloat16 autocast of ``pyutils.tts.train`` (``--only world_r4_float32,world_r4_bfloat16,world_r2_float32,world_r2_bfloat16``),
with the speed-up ratio: what the recipe's ``--train_precision auto`` buys on a CPU with
native bfloat16 units (AMX / AVX512-BF16), and costs on one without.
"""

import argparse
import os
import time

import torch
import yaml

RECIPE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "egs", "nvv_tts", "conf")


def tacotron2_step(conf, B, L, T, vocab):
    from espnet2.tts.tacotron2 import Tacotron2

    n_mels, hop = conf["feats_extract_conf"]["n_mels"], conf["feats_extract_conf"]["hop_length"]
    model = Tacotron2(idim=vocab, odim=n_mels, **conf["tts_conf"])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    frames = int(T * 16000 / hop)
    frames -= frames % model.reduction_factor
    text = torch.randint(1, vocab - 1, (B, L))
    feats = torch.randn(B, frames, n_mels)

    def step():
        loss = model(text, torch.full((B,), L), feats, torch.full((B,), frames))[0]
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step, sum(p.numel() for p in model.parameters())


def fastspeech_step(conf, B, L, T, vocab, reduction_factor=None, precision="float32"):
    from espnet2.tts.fastspeech import FastSpeech

    from pyutils.tts.train import autocast_forward

    n_mels, hop = conf.get("odim") or conf["feats_extract_conf"]["n_mels"], conf["feats_extract_conf"]["hop_length"]
    tts_conf = dict(conf["tts_conf"])
    if reduction_factor:
        tts_conf["reduction_factor"] = reduction_factor
    model = FastSpeech(idim=vocab, odim=n_mels, **tts_conf)
    if precision == "bfloat16":
        autocast_forward(model)   # what `pyutils.tts.train --precision bfloat16` does
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    r = model.reduction_factor
    frames = int(T * 16000 / hop)
    frames -= frames % r
    text = torch.randint(1, vocab - 1, (B, L))
    feats = torch.randn(B, frames, n_mels)
    steps = frames // r
    dur = torch.full((B, L + 1), steps // (L + 1))
    dur[:, -1] += steps - dur.sum(1)

    def step():
        loss = model(text, torch.full((B,), L), feats, torch.full((B,), frames), dur,
                     torch.full((B,), L + 1))[0]
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step, sum(p.numel() for p in model.parameters())


def fastspeech_postnet_step(conf, B, L, T, vocab):
    """The default FastSpeech as it was: a 3-layer postnet (128 channels) and dropout 0.1."""
    conf = dict(conf, tts_conf=dict(conf["tts_conf"], postnet_layers=3, postnet_chans=128, postnet_filts=5))
    for k in conf["tts_conf"]:
        if k.startswith("transformer_") and k.endswith("dropout_rate"):
            conf["tts_conf"][k] = 0.1
    return fastspeech_step(conf, B, L, T, vocab)


def fbank_step(conf, B, L, T, vocab, n_fft=None):
    """ESPnet's LogMelFbank of a batch of waveforms (done inside every training update)."""
    from espnet2.tts.feats_extract.log_mel_fbank import LogMelFbank

    fe_conf = dict(conf["feats_extract_conf"])
    if n_fft:
        fe_conf["n_fft"] = n_fft
    fe = LogMelFbank(**fe_conf)
    n = int(T * 16000)
    wav, lens = torch.randn(B, n), torch.full((B,), n)

    def step():
        with torch.no_grad():
            fe(wav, lens)
    return step, 0


def hifigan_step(conf, B, L, T, vocab):
    """One GAN update (discriminator + generator) of an ESPnet HiFiGAN vocoder on 1 s
    segments: a small generator (128 channels, a quarter of HiFiGAN V1, the VITS-mini
    decoder size) with ESPnet's default multi-scale multi-period discriminator (~70 M
    parameters, what ESPnet's HiFiGAN recipes train)."""
    from espnet2.gan_tts.hifigan import HiFiGANGenerator, HiFiGANMultiScaleMultiPeriodDiscriminator
    from espnet2.gan_tts.hifigan.loss import (DiscriminatorAdversarialLoss, FeatureMatchLoss,
                                              GeneratorAdversarialLoss, MelSpectrogramLoss)

    hop = conf["feats_extract_conf"]["hop_length"]
    gen = HiFiGANGenerator(in_channels=80, channels=128, upsample_scales=[8, 8, 4],
                           upsample_kernel_sizes=[16, 16, 8], resblock_kernel_sizes=[3, 7],
                           resblock_dilations=[[1, 3], [1, 3]])
    disc = HiFiGANMultiScaleMultiPeriodDiscriminator()
    g_opt = torch.optim.AdamW(gen.parameters(), lr=2e-4)
    d_opt = torch.optim.AdamW(disc.parameters(), lr=2e-4)
    mel_loss = MelSpectrogramLoss(fs=16000, n_fft=1024, hop_length=hop, n_mels=80)
    g_adv, d_adv, fm = GeneratorAdversarialLoss(), DiscriminatorAdversarialLoss(), FeatureMatchLoss()
    frames = 16000 // hop
    mel = torch.randn(B, 80, frames)
    wav = torch.randn(B, 1, frames * hop) * 0.1

    def step():
        fake = gen(mel)
        real_out, fake_out = disc(wav), disc(fake.detach())
        loss_d = sum(d_adv(fake_out, real_out))
        d_opt.zero_grad()
        loss_d.backward()
        d_opt.step()
        fake_out, real_out = disc(fake), disc(wav)
        loss_g = 45.0 * mel_loss(fake, wav) + g_adv(fake_out) + 2.0 * fm(fake_out, real_out)
        g_opt.zero_grad()
        loss_g.backward()
        g_opt.step()
    return step, sum(p.numel() for p in gen.parameters()) + sum(p.numel() for p in disc.parameters())


def vits_step(conf, B, L, T, vocab):
    from espnet2.gan_tts.vits import VITS

    n_fft = conf["feats_extract_conf"]["n_fft"]
    hop = conf["feats_extract_conf"]["hop_length"]
    tts_conf = dict(conf["tts_conf"])
    tts_conf["generator_params"] = dict(tts_conf["generator_params"], spks=None, global_channels=-1)
    model = VITS(idim=vocab, odim=n_fft // 2 + 1, **tts_conf)
    g_opt = torch.optim.AdamW(model.generator.parameters(), lr=2e-4)
    d_opt = torch.optim.AdamW(model.discriminator.parameters(), lr=2e-4)
    frames = int(T * 16000 / hop)
    text = torch.randint(1, vocab - 1, (B, L))
    feats = torch.randn(B, frames, n_fft // 2 + 1).abs()
    speech = torch.randn(B, frames * hop) * 0.1

    def step():
        for forward_generator, opt in ((False, d_opt), (True, g_opt)):
            out = model(text, torch.full((B,), L), feats, torch.full((B,), frames), speech,
                        torch.full((B,), frames * hop), forward_generator=forward_generator)
            opt.zero_grad()
            out["loss"].backward()
            opt.step()
    return step, sum(p.numel() for p in model.parameters())


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--tokens", type=int, default=40)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--threads", type=int, default=1, help="torch threads (the recipe trains with 1)")
    p.add_argument("--only", default="", help="comma-separated names to time (default: all)")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    results = {}
    import functools

    for name, cfg, builder in (("fastspeech_mini", "tuning/train_fastspeech_mini.yaml", fastspeech_step),
                               ("fastspeech_r1", "tuning/train_fastspeech_mini.yaml",
                                functools.partial(fastspeech_step, reduction_factor=1)),
                               ("world_r4_float32", "train_fastspeech_world_default.yaml", fastspeech_step),
                               ("world_r4_bfloat16", "train_fastspeech_world_default.yaml",
                                functools.partial(fastspeech_step, precision="bfloat16")),
                               ("world_r2_float32", "train_fastspeech_world_default.yaml",
                                functools.partial(fastspeech_step, reduction_factor=2)),
                               ("world_r2_bfloat16", "train_fastspeech_world_default.yaml",
                                functools.partial(fastspeech_step, reduction_factor=2, precision="bfloat16")),
                               ("fastspeech_postnet", "tuning/train_fastspeech_mini.yaml", fastspeech_postnet_step),
                               ("logmel_nfft512", "tuning/train_fastspeech_mini.yaml", functools.partial(fbank_step, n_fft=512)),
                               ("logmel_nfft1024", "tuning/train_fastspeech_mini.yaml", functools.partial(fbank_step, n_fft=1024)),
                               ("tacotron2_mini", "tuning/train_tacotron2_mini.yaml", tacotron2_step),
                               ("hifigan_small", "tuning/train_fastspeech_mini.yaml", hifigan_step),
                               ("vits_mini", "tuning/train_vits_mini.yaml", vits_step)):
        if a.only and name not in a.only.split(","):
            continue
        with open(os.path.join(RECIPE, cfg)) as f:
            conf = yaml.safe_load(f)
        step, n_params = builder(conf, a.batch, a.tokens, a.seconds, vocab=80)
        torch.set_num_threads(a.threads)  # importing a model module may change it
        step()  # warm-up
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(a.steps):
            step()
        results[name] = (time.perf_counter() - t0) / a.steps
        cpu = (time.process_time() - c0) / a.steps   # CPU seconds: what a shared machine does not distort
        print(f"{name:18s} {n_params / 1e6:6.2f} M params  {results[name]:7.2f} s/update ({cpu:.3f} CPU-s) "
              f"(batch {a.batch}, {a.tokens} tokens, {a.seconds} s audio, {torch.get_num_threads()} threads)")
    from pyutils.tts.train import native_bf16

    for r in ("r4", "r2"):
        f32, b16 = results.get(f"world_{r}_float32"), results.get(f"world_{r}_bfloat16")
        if f32 and b16:
            print(f"ratio world_{r} float32 / bfloat16: {f32 / b16:.2f}x "
                  f"(native bfloat16 units: {native_bf16()})")
    if "vits_mini" in results and "fastspeech_mini" in results:
        print(f"ratio vits_mini / fastspeech_mini: {results['vits_mini'] / results['fastspeech_mini']:.1f}x")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
