"""Spectral-envelope tools of the kNN conversion (:mod:`pyutils.vc.knn`): the source's own
envelope moved toward the reference's voice, cepstral reranking of matched frames, and the
per-frame coverage weight of the matching.

- :func:`warped_source_envelope`: VTL-like frequency warp ``S'(f) = S(f / alpha)`` plus the
  long-term spectral difference (and optionally the reference's cepstral spread).
- :func:`rerank_spectral`: of content neighbours, those whose cepstrum is closest to a target.
- :func:`coverage_weight`: how well the reference covers each source frame,
  ``w(i) = clip((d_hi - d_i) / (d_hi - d_lo), 0, 1)`` with ``d_i = 1 - max_j cos(c_s(i), c_r(j))``.
"""

from __future__ import annotations

import numpy as np

from pyutils.vc.features import SR, World

def _moving_average(a: np.ndarray, n: int) -> np.ndarray:
    """Centred moving average over axis 0 with edge padding."""
    if n <= 1 or a.shape[0] < 2:
        return a
    pad = n // 2
    p = np.pad(a, [(pad, n - 1 - pad)] + [(0, 0)] * (a.ndim - 1), mode="edge")
    c = np.cumsum(p, axis=0, dtype=np.float64)
    c = np.concatenate([np.zeros((1,) + a.shape[1:]), c], axis=0)
    return (c[n:] - c[:-n]) / n


def _warp(log_sp: np.ndarray, alpha: float) -> np.ndarray:
    """Frequency warping ``S'(f) = S(f / alpha)`` along the last axis (linear interpolation)."""
    bins = np.arange(log_sp.shape[-1], dtype=np.float64)
    src_pos = np.clip(bins / alpha, 0, bins[-1])
    lo = np.floor(src_pos).astype(int)
    hi = np.minimum(lo + 1, bins.size - 1)
    frac = src_pos - lo
    return log_sp[..., lo] * (1 - frac) + log_sp[..., hi] * frac


def _cepstral_variance(log_sp: np.ndarray, ref_log_sp: np.ndarray, voiced: np.ndarray,
                       order: int = 30) -> np.ndarray:
    """Give the cepstral trajectories ``c_1..c_order`` of ``log_sp`` the reference's spread:
    ``c'_q(n) = mu_q + clip(sd_ref,q / sd_q, .5, 2) (c_q(n) - mu_q)`` (mean and spread over the
    voiced frames; the real cepstrum is symmetric, so coefficient ``-q`` gets the same factor)."""
    n_fft = 2 * (log_sp.shape[1] - 1)
    order = max(1, min(order, n_fft // 2 - 1))      # a short envelope has fewer coefficients
    q = np.fft.irfft(log_sp, n=n_fft, axis=1)
    q_ref = np.fft.irfft(ref_log_sp, n=n_fft, axis=1)
    v = voiced if voiced.any() else np.ones(len(q), bool)
    mu, sd = q[v].mean(axis=0), q[v].std(axis=0) + 1e-8
    ratio = np.ones(n_fft)
    ratio[1:order + 1] = np.clip(q_ref.std(axis=0)[1:order + 1] / sd[1:order + 1], 0.5, 2.0)
    ratio[-order:] = ratio[1:order + 1][::-1]
    return np.fft.rfft(mu + ratio * (q - mu), axis=1).real


def warped_source_envelope(w_src: World, w_ref: World, n_smooth: int = 9, cep_mvn: bool = False) -> np.ndarray:
    """The source's own log envelope moved toward the reference's long-term spectrum.

    With ``L_x(f)`` the mean log envelope over voiced frames, the warp factor
    ``alpha = argmin_a sum_{f < 5 kHz} (L_r(f) - L_s(f/a) - m(a))^2`` over a grid in
    [0.8, 1.25] (``m`` the mean difference: level does not count) approximates the
    vocal-tract length ratio; then ``log S_out(n, f) = log S_s(n, f/alpha) + D(f)`` with
    ``D = L_r - warp(L_s)`` smoothed over ``n_smooth`` bins (the average timbre).
    """
    ls = np.log(np.maximum(w_src.sp, 1e-16))
    lr = np.log(np.maximum(w_ref.sp, 1e-16))
    vs = w_src.voiced if w_src.voiced.any() else np.ones(len(ls), bool)
    vr = w_ref.voiced if w_ref.voiced.any() else np.ones(len(lr), bool)
    mean_s, mean_r = ls[vs].mean(axis=0), lr[vr].mean(axis=0)
    top = max(2, int(mean_s.size * 5000 / (SR / 2)))
    best, best_err = 1.0, np.inf
    for alpha in np.linspace(0.8, 1.25, 19):
        d = mean_r[:top] - _warp(mean_s, alpha)[:top]
        err = float(np.var(d))
        if err < best_err:
            best, best_err = float(alpha), err
    warped = _warp(ls, best)
    diff = _moving_average((mean_r - _warp(mean_s, best))[:, None], n_smooth)[:, 0]
    out = warped + diff[None, :]
    if cep_mvn:
        out = _cepstral_variance(out, lr[vr], vs)
    return out


def cepstrum(log_sp: np.ndarray, order: int = 30) -> np.ndarray:
    """Real cepstrum ``c_1..c_order`` of log envelopes (``c = IDFT(log S)``; ``c_0``, the level, dropped)."""
    return np.fft.irfft(log_sp, axis=-1)[..., 1:order + 1]


def rerank_spectral(m: np.ndarray, target_log_sp: np.ndarray, w_ref: World, k: int) -> np.ndarray:
    """Of the candidate reference frames ``m`` (T, K), the ``k`` whose cepstrum is closest
    (Euclidean) to the target's, ``argmin_j ||c(target(n)) - c(ref(m[n, j]))||``."""
    c_ref = cepstrum(np.log(np.maximum(w_ref.sp, 1e-16)))
    c_tgt = cepstrum(target_log_sp)
    d = np.sum((c_ref[m] - c_tgt[:, None, :]) ** 2, axis=-1)             # (T, K)
    k = min(k, m.shape[1])
    keep = np.argpartition(d, k - 1, axis=1)[:, :k]
    return np.take_along_axis(m, keep, axis=1)


def coverage_weight(best_dist: np.ndarray, lo: float, hi: float, smooth: int = 5) -> np.ndarray:
    """Per content frame, the weight of the matched reference frames against the source's own
    warped frame: ``w(i) = clip((hi - d_i) / (hi - lo), 0, 1)`` with ``d_i`` the cosine distance
    of source frame ``i`` to its best reference match (1 at or below ``lo``: covered, 0 at or above
    ``hi``: the reference has no such sound), then a centred moving average of ``smooth`` frames
    so the weight glides rather than switches."""
    if not hi > lo:
        raise ValueError(f"coverage thresholds lo={lo}, hi={hi}: need hi > lo")
    w = np.clip((hi - np.asarray(best_dist, dtype=np.float64)) / (hi - lo), 0.0, 1.0)
    return _moving_average(w[:, None], smooth)[:, 0]
