"""The C batch scorer (pyutils/scoring/track1_native.c) equals the Python path exactly."""

import os
import random
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import scoring_reference as plain  # noqa: E402
from pyutils.scoring import native, track1, track1_batch  # noqa: E402

pytestmark = pytest.mark.skipif(native.lib is None, reason="C scorer not built (python -m pyutils.scoring.native_build)")


def _score(ref, hyp, use_native, monkeypatch, batch_size=4096):
    with monkeypatch.context() as m:
        m.setattr(track1_batch.NativeBatch, "SIZE", batch_size)
        if not use_native:
            m.setattr(native, "lib", None)
        return track1.score_track1(ref, hyp, single_language=True)


def _edge_cases(rng):
    """Rows the generator rarely makes: empty texts, tags only, long texts, many tags at one place."""
    tags = plain.TAGS
    ref, hyp = [], []
    texts = [("", ""), ("[laugh]", ""), ("", "[cough] [cough]"), ("[laugh][laugh][cry]", "[cry][laugh]"),
             ("a b c", "[laugh] a b c [laugh]"), ("你好[cough]", "[cough]你好"), ("x " * 80 + "[sigh]", "[sigh] " + "x " * 79)]
    for k, (r, h) in enumerate(texts * 2):
        lang = "zh" if "你" in r else "en"
        ref.append({"utt_id": f"e{k:03d}", "language": lang, "text_with_nvvs": r})
        hyp.append({"utt_id": f"e{k:03d}", "text_with_nvvs": h})
    for k in range(60):  # unknown words, tags moved far, collar edges
        words = [rng.choice(("a", "b", "the", "zzz", "qq")) for _ in range(rng.randint(0, 12))]
        r = " ".join(w if rng.random() > 0.3 else f"[{rng.choice(tags)}] {w}" for w in words)
        h = " ".join(w if rng.random() > 0.3 else f"[{rng.choice(tags)}] {w}" for w in reversed(words))
        ref.append({"utt_id": f"r{k:03d}", "language": "en", "text_with_nvvs": r})
        hyp.append({"utt_id": f"r{k:03d}", "text_with_nvvs": h + rng.choice(("", " unknownword", " [sigh]"))})
    return ref, hyp


@pytest.mark.parametrize("seed,rate", [(1, 0.05), (2, 0.2), (3, 0.5)])
def test_native_equals_python_path(seed, rate, monkeypatch):
    ref, hyp = plain.generate(400, seed=seed, rate=rate)
    more_ref, more_hyp = _edge_cases(random.Random(seed))
    ref += more_ref
    hyp += more_hyp
    random.Random(seed).shuffle(hyp)
    python = _score(ref, hyp, False, monkeypatch)
    assert _score(ref, hyp, True, monkeypatch) == python          # every number, per tag, confusion
    assert _score(ref, hyp, True, monkeypatch, batch_size=7) == python  # batch boundaries change nothing


def test_native_single_language_and_all_exact(monkeypatch):
    ref, hyp = plain.generate(50, seed=9, rate=0.0)
    ref = [r for r in ref if r["language"] == "zh"]
    hyp = [h for h in hyp if h["utt_id"] in {r["utt_id"] for r in ref}]
    assert _score(ref, hyp, True, monkeypatch) == _score(ref, hyp, False, monkeypatch)


def test_stale_build_is_not_used(monkeypatch, capsys):
    """A build whose embedded source digest differs from track1_native.c falls back to Python, loudly."""
    import importlib

    from pyutils.scoring import native_build

    try:
        monkeypatch.setattr(native_build, "source_digest", lambda: "0" * 64)
        stale = importlib.reload(native)
        assert stale.lib is None and stale.ffi is None
        assert "built from another track1_native.c" in capsys.readouterr().err
    finally:
        monkeypatch.undo()
        fresh = importlib.reload(native)
    assert fresh.lib is not None
