"""WORLD vocoder features for the TTS acoustic model, and synthesis from them.

Griffin-Lim must guess the phase of a log-mel that a small acoustic model has
smoothed; the result is rough and phasey. A source-filter vocoder needs no phase:
WORLD (Morise et al., 2016; the ``pyworld`` wrapper) rebuilds speech from a spectral
envelope, F0 and band aperiodicity. The acoustic model then predicts, per 8 ms frame::

    [ coded envelope (sp_dim) | log F0 (interpolated through unvoiced frames) | voiced (0/1) | coded aperiodicity ]

* envelope: CheapTrick, compressed by ``pyworld.code_spectral_envelope`` to
  ``sp_dim`` mel-spaced log values;
* F0: DIO + StoneMask (harvest is ~20x slower; measured on the mini corpus);
* aperiodicity: D4C, coded into WORLD's bands (1 band at 16 kHz).

Copy-synthesis of 40 test_en recordings through the pretrained-Whisper judge and
DNSMOS P.835 (README "A source-filter vocoder"): recordings 12.5 % WER / OVRL 2.68;
these features 16.3 % / 2.66; the log-mel through sharpened Griffin-Lim 15.3 % / 2.51.

The frame grid is the training config's (``feats_extract_conf``: fs, hop_length), the
same one the forced alignment uses, so durations and features have equal lengths
(WORLD gives ``1 + n_samples // hop`` frames, as a centred STFT does). The remaining
settings are in a small YAML (``conf/world.yaml``): f0_floor, f0_ceil, sp_dim.

    python -m pyutils.tts.world extract --config conf/train.yaml --world-conf conf/world.yaml \
        --wav-scp dump/raw/train/wav.scp --out-scp dump/raw/train/feats.scp
    python -m pyutils.tts.world vocode --config exp/.../config.yaml --world-conf conf/world.yaml \
        --out-dir DIR FEATS_DIR [FEATS_DIR ...]      # <utt_id>.npy -> DIR/<utt_id>.wav
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import warnings

import numpy as np
import yaml

with warnings.catch_warnings():   # pyworld imports pkg_resources for its version string
    warnings.simplefilter("ignore")
    import pyworld


@dataclasses.dataclass(frozen=True)
class WorldConfig:
    fs: int = 16000
    hop_length: int = 128
    f0_floor: float = 60.0
    f0_ceil: float = 600.0
    sp_dim: int = 60

    @property
    def frame_period_ms(self) -> float:
        return 1000.0 * self.hop_length / self.fs

    @property
    def dim(self) -> int:
        """Feature dimension: envelope + log F0 + voiced flag + coded aperiodicity bands."""
        return self.sp_dim + 2 + pyworld.get_num_aperiodicities(self.fs)

    @property
    def fft_size(self) -> int:
        return pyworld.get_cheaptrick_fft_size(self.fs, self.f0_floor)

    @classmethod
    def load(cls, train_config: str, world_conf: str) -> "WorldConfig":
        """Frame grid from the TTS training config, the rest from the WORLD YAML."""
        with open(train_config, encoding="utf-8") as f:
            tc = yaml.safe_load(f) or {}
        fe = tc.get("feats_extract_conf") or {}
        with open(world_conf, encoding="utf-8") as f:
            wc = yaml.safe_load(f) or {}
        unknown = set(wc) - {"f0_floor", "f0_ceil", "sp_dim"}
        if unknown:
            raise ValueError(f"{world_conf}: unknown setting(s) {', '.join(sorted(unknown))} "
                             "(f0_floor, f0_ceil, sp_dim)")
        c = cls(fs=int(fe.get("fs", 16000)), hop_length=int(fe.get("hop_length", 128)),
                f0_floor=float(wc.get("f0_floor", 60.0)), f0_ceil=float(wc.get("f0_ceil", 600.0)),
                sp_dim=int(wc.get("sp_dim", 60)))
        if not 0 < c.f0_floor < c.f0_ceil < c.fs / 2:
            raise ValueError(f"{world_conf}: need 0 < f0_floor < f0_ceil < fs/2")
        odim = tc.get("odim")
        if odim is not None and int(odim) != c.dim:
            raise ValueError(f"{train_config}: odim {odim}, but the WORLD features of {world_conf} have "
                             f"{c.dim} dims (sp_dim {c.sp_dim} + log F0 + voiced + aperiodicity)")
        return c


def interpolate_log_f0(f0: np.ndarray) -> np.ndarray:
    """log F0 with unvoiced frames filled by linear interpolation (edges held flat).

    A frame-wise regression target must be continuous; the voiced flag says where F0 is real.
    With no voiced frame at all, log(100 Hz) everywhere.
    """
    voiced = f0 > 0
    if not voiced.any():
        return np.full(f0.shape, np.log(100.0))
    idx = np.arange(len(f0))
    return np.interp(idx, idx[voiced], np.log(f0[voiced]))


def analyze(x: np.ndarray, c: WorldConfig) -> np.ndarray:
    """Waveform (float, c.fs) -> features (1 + len // hop, c.dim), float32."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size < c.hop_length:
        raise ValueError(f"{x.size} samples: too short for WORLD analysis")
    if not np.isfinite(x).all():
        raise ValueError("non-finite samples")
    f0, t = pyworld.dio(x, c.fs, f0_floor=c.f0_floor, f0_ceil=c.f0_ceil, frame_period=c.frame_period_ms)
    f0 = pyworld.stonemask(x, f0, t, c.fs)
    sp = pyworld.cheaptrick(x, f0, t, c.fs, f0_floor=c.f0_floor)
    ap = pyworld.d4c(x, f0, t, c.fs)
    coded_sp = pyworld.code_spectral_envelope(sp, c.fs, c.sp_dim)
    coded_ap = pyworld.code_aperiodicity(ap, c.fs)
    feats = np.concatenate([coded_sp, interpolate_log_f0(f0)[:, None], (f0 > 0)[:, None].astype(np.float64),
                            coded_ap], axis=1).astype(np.float32)
    expected = 1 + x.size // c.hop_length
    if feats.shape[0] != expected:   # WORLD's frame count formula; checked, never assumed
        raise ValueError(f"WORLD gave {feats.shape[0]} frames, the frame grid has {expected}")
    return feats


class WorldVocoder:
    """Features (T, dim) -> waveform (float32 at ``fs``)."""

    def __init__(self, c: WorldConfig):
        self.c, self.fs = c, c.fs

    def __call__(self, feats: np.ndarray) -> np.ndarray:
        c = self.c
        if feats.ndim != 2 or feats.shape[1] != c.dim:
            raise ValueError(f"features of shape {feats.shape}, expected (frames, {c.dim})")
        if feats.shape[0] < 2:
            raise ValueError(f"{feats.shape[0]} frame(s): nothing to synthesise")
        if not np.isfinite(feats).all():
            raise ValueError("non-finite feature values")
        f = feats.astype(np.float64)
        coded_sp = np.ascontiguousarray(f[:, :c.sp_dim])
        voiced = f[:, c.sp_dim + 1] > 0.5
        f0 = np.where(voiced, np.clip(np.exp(f[:, c.sp_dim]), c.f0_floor, c.f0_ceil), 0.0)
        # coded aperiodicity is in dB (<= 0); a prediction above 0 dB means "fully aperiodic"
        coded_ap = np.ascontiguousarray(np.minimum(f[:, c.sp_dim + 2:], 0.0))
        sp = pyworld.decode_spectral_envelope(coded_sp, c.fs, c.fft_size)
        ap = pyworld.decode_aperiodicity(coded_ap, c.fs, c.fft_size)
        y = pyworld.synthesize(np.ascontiguousarray(f0), sp, ap, c.fs, c.frame_period_ms)
        return y.astype(np.float32)


def extract_scp(wav_scp: str, out_scp: str, c: WorldConfig) -> int:
    """Every wav of a Kaldi wav.scp -> a Kaldi ark next to ``out_scp``; the scp appears last.

    The ark is written first under its final name and the scp (the only thing readers
    open) is renamed into place when every utterance is done, so a killed job leaves no
    scp. Errors name the scp line and utterance.
    """
    import kaldiio
    import soundfile as sf

    from pyutils.tts.audio import read_scp

    entries = read_scp(wav_scp)
    ark = os.path.splitext(out_scp)[0] + ".ark"
    tmp_scp = out_scp + ".tmp"
    with kaldiio.WriteHelper(f"ark,scp:{ark},{tmp_scp}") as writer:
        for lineno, (uid, path) in enumerate(entries, 1):
            try:
                x, sr = sf.read(path, dtype="float64", always_2d=True)
                if sr != c.fs:
                    raise ValueError(f"{sr} Hz, the model runs at {c.fs} Hz")
                writer(uid, analyze(x.mean(axis=1), c))
            except (OSError, RuntimeError, ValueError) as e:
                raise ValueError(f"{wav_scp}:{lineno}: utterance {uid}: {e}") from None
    os.replace(tmp_scp, out_scp)
    return len(entries)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("extract", "vocode"):
        s = sub.add_parser(name)
        s.add_argument("--config", required=True, help="TTS training config (feats_extract_conf: fs, hop_length)")
        s.add_argument("--world-conf", required=True, help="WORLD settings YAML (f0_floor, f0_ceil, sp_dim)")
    sub.choices["extract"].add_argument("--wav-scp", required=True)
    sub.choices["extract"].add_argument("--out-scp", required=True, help="feats.scp (the ark goes beside it)")
    sub.choices["vocode"].add_argument("--out-dir", required=True)
    sub.choices["vocode"].add_argument("feats_dirs", nargs="+", help="dirs of <utt_id>.npy (tts_inference denorm/)")
    a = p.parse_args(argv)
    try:
        c = WorldConfig.load(a.config, a.world_conf)
        if a.cmd == "extract":
            n = extract_scp(a.wav_scp, a.out_scp, c)
            print(f"{n} utterances -> {a.out_scp} ({c.dim}-dim WORLD features every {c.frame_period_ms:g} ms)",
                  file=sys.stderr)
        else:
            from pyutils.tts.vocoder import vocode_dirs

            n = vocode_dirs(WorldVocoder(c), a.feats_dirs, a.out_dir)["utts"]
            print(f"{n} utterances -> {a.out_dir} (WORLD)", file=sys.stderr)
    except (OSError, ValueError, yaml.YAMLError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
