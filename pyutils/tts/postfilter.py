"""Global-variance (GV) post-filter for the log-mel a TTS acoustic model predicts.

A model trained with an L1/L2 loss predicts the conditional mean of each frame:
its log-mel trajectories are over-smoothed, each band varies less over an
utterance than in real speech, which sounds muffled and buzzy through a vocoder.
The global variance of an utterance (Toda & Tokuda 2007) is the per-band variance
of its feature trajectory over time; the variance-scaling post-filter (Silén et al.
2012, Interspeech, "Ways to implement global variance in statistical speech
synthesis") scales each band's deviation from its utterance mean so that its
variance matches the GV of the training speech::

    y'[t, d] = mean_d(y) + s_d * (y[t, d] - mean_d(y)),   s_d = (gv_train[d] / var_d(y)) ** (strength / 2)

strength 1 gives the training GV exactly, 0 leaves the input as it is (values in
between move the log-variance part of the way). The per-band utterance mean, hence the
spectral envelope on average, is kept.

GV statistics (``stats``): mean over the training utterances of the per-band
variance of ESPnet's log-mel (computed with the model's own feature extractor, so
same bands, window and log base as the predicted ``denorm/*.npy``). Stored as
``.npz`` (``gv``: n_mels floats, ``n_utts``), read back with ``allow_pickle=False``.

    python -m pyutils.tts.postfilter stats --config exp/.../config.yaml --wav-scp dump/raw/train/wav.scp --out gv.npz
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from pyutils.io import atomic_write

# Bands whose predicted trajectory is (numerically) flat are left alone: their
# variance ratio is undefined and a huge scale would only amplify rounding noise.
_MIN_VAR = 1e-8
# The scale of one band is bounded: a utterance of a few frames can have an
# accidental near-zero variance in a band; multiplying by >10x is never a correction.
_MAX_SCALE = 10.0


def utterance_gv(logmel: np.ndarray) -> np.ndarray:
    """Per-band variance over time of a (frames, bands) array."""
    return np.var(np.asarray(logmel, dtype=np.float64), axis=0)


def check_strength(strength: float) -> None:
    """ValueError unless 0 <= strength <= 1.5."""
    if not (0.0 <= strength <= 1.5) or not np.isfinite(strength):
        raise ValueError(f"strength {strength} outside [0, 1.5]")


def gv_postfilter(logmel: np.ndarray, gv_target: np.ndarray, strength: float = 1.0) -> np.ndarray:
    """Scale each band's deviation from its utterance mean toward the target variance.

    logmel: (frames, bands) log-mel of one utterance; gv_target: (bands,) target
    per-band variance (training GV); strength in [0, 1.5]: 0 = identity, 1 = the
    output's per-band variance equals gv_target. Returns a new float array of the
    input's dtype.
    """
    x = np.asarray(logmel)
    g = np.asarray(gv_target, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"features of shape {x.shape}, expected (frames, bands)")
    if g.ndim != 1 or g.shape[0] != x.shape[1]:
        raise ValueError(f"GV statistics of shape {g.shape} do not fit features with {x.shape[1]} bands")
    check_strength(strength)
    if not np.all(np.isfinite(g)) or np.any(g <= 0):
        raise ValueError("GV statistics must be finite and positive")
    if not np.all(np.isfinite(x)):
        raise ValueError("non-finite feature values")
    if strength == 0.0 or x.shape[0] < 2:
        return x.copy()
    xd = x.astype(np.float64)
    mu = xd.mean(axis=0)
    var = xd.var(axis=0)
    flat = var < _MIN_VAR
    scale = np.where(flat, 1.0, (g / np.maximum(var, _MIN_VAR)) ** (0.5 * strength))
    scale = np.clip(scale, 1.0 / _MAX_SCALE, _MAX_SCALE)
    return (mu + (xd - mu) * scale).astype(x.dtype, copy=False)


def load_gv(path: str) -> np.ndarray:
    """The ``gv`` vector of a stats file written by :func:`write_gv` (errors name the file)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            g = np.asarray(z["gv"], dtype=np.float64)
    except KeyError:
        raise ValueError(f"{path}: no 'gv' array (write it with: python -m pyutils.tts.postfilter stats)") from None
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a GV statistics file ({e})") from None
    if g.ndim != 1 or g.size == 0 or not np.all(np.isfinite(g)) or np.any(g <= 0):
        raise ValueError(f"{path}: 'gv' must be a non-empty vector of finite positive variances")
    return g


def write_gv(path: str, gv: np.ndarray, n_utts: int) -> None:
    """Atomic ``.npz`` with ``gv`` and ``n_utts`` (nothing half-written on failure)."""
    with atomic_write(path, "wb") as f:
        np.savez(f, gv=np.asarray(gv, dtype=np.float64), n_utts=np.int64(n_utts))


def training_gv(config: dict, wav_scp: str, max_utts: int = 0) -> tuple[np.ndarray, int]:
    """Mean per-utterance GV of ESPnet's log-mel (the model's own ``feats_extract``) over ``wav_scp``."""
    import soundfile as sf
    import torch
    from espnet2.tts.feats_extract.log_mel_fbank import LogMelFbank

    from pyutils.io import read_scp

    if config.get("feats_extract") != "fbank":
        raise ValueError(f"feats_extract {config.get('feats_extract')!r}: the GV post-filter is for log-mel (fbank) models")
    conf = dict(config.get("feats_extract_conf") or {})
    fs = int(conf.get("fs", 16000))
    fe = LogMelFbank(**conf).eval()
    rows = read_scp(wav_scp)
    if max_utts and len(rows) > max_utts:   # an even spread over the (sorted) list
        rows = [rows[int(i * len(rows) / max_utts)] for i in range(max_utts)]
    total, n = None, 0
    with torch.no_grad():
        for uid, path in rows:
            try:
                x, sr = sf.read(path, dtype="float32", always_2d=True)
            except (OSError, RuntimeError) as e:
                raise ValueError(f"{wav_scp}: utterance {uid}: cannot read {path} ({e})") from None
            if sr != fs:
                raise ValueError(f"{wav_scp}: utterance {uid}: {sr} Hz, the model's features are {fs} Hz")
            feats, _ = fe(torch.from_numpy(x.mean(axis=1))[None], torch.tensor([x.shape[0]]))
            f = feats[0].numpy()
            if f.shape[0] < 2:
                continue
            v = utterance_gv(f)
            total = v if total is None else total + v
            n += 1
    if not n:
        raise ValueError(f"{wav_scp}: no utterance of at least 2 frames")
    return total / n, n


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("stats", help="training GV of the model's log-mel -> .npz")
    s.add_argument("--config", required=True, help="the model's config.yaml (feats_extract_conf)")
    s.add_argument("--wav-scp", required=True, help="training wav.scp")
    s.add_argument("--max-utts", type=int, default=0, help="at most this many utterances, spread over the list (0 = all)")
    s.add_argument("--out", required=True)
    a = p.parse_args(argv)
    import yaml

    try:
        with open(a.config, encoding="utf-8") as f:
            config = yaml.safe_load(f) or {}
        gv, n = training_gv(config, a.wav_scp, a.max_utts)
        write_gv(a.out, gv, n)
    except (OSError, ValueError, yaml.YAMLError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"GV of {n} utterances ({gv.size} bands, mean {gv.mean():.4f}) -> {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
