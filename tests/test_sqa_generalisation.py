"""benchmarks/sqa_generalisation.py: the held-out splits never leak into training."""

import importlib.util
import json
import os

import pytest

_PATH = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "sqa_generalisation.py")
_spec = importlib.util.spec_from_file_location("sqa_generalisation", _PATH)
B = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(B)

# utt -> (set, fault kinds, voice group)
POOL = {"a": ("train", ["babble"], "v1"), "b": ("train", ["white", "reverb"], "flite"),
        "c": ("train", [], "v1"), "d": ("dev", ["babble"], "v1"), "e": ("dev", [], "v2"),
        "f": ("test", ["babble", "clipping"], "flite"), "g": ("test", ["reverb"], "v2"),
        "h": ("test_real", ["babble"], "real")}


def _recipe(tmp_path):
    """A recipe dir with the corpus' fault lists and a dump of every set (relative wav paths)."""
    corpus = tmp_path / "corpus" / "sqa_mini4_default"
    (corpus / "faults").mkdir(parents=True)
    for s in B.SETS:
        d = tmp_path / "dump" / s
        d.mkdir(parents=True)
        utts = sorted(u for u, (set_, _, _) in POOL.items() if set_ == s)
        with open(corpus / "faults" / f"{s}.jsonl", "w") as f:
            for u in utts:
                f.write(json.dumps({"utt_id": u, "voice_group": POOL[u][2],
                                    "details": [{"type": "x", "kind": k} for k in POOL[u][1]]}) + "\n")
        for name in ("feats.scp", "wav.scp", "embed.scp"):
            (d / name).write_text("".join(f"{u} dump/{s}/{u}.{name}\n" for u in utts))
        (d / "utt2dur").write_text("".join(f"{u} 1.0\n" for u in utts))
        (d / "ref.jsonl").write_text("".join(json.dumps({"utt_id": u, "score": 3.0}) + "\n" for u in utts))
    (tmp_path / "dump" / "train" / "feats_config.json").write_text('{"n_mels": 80, "pitch": true}')
    return str(tmp_path), str(corpus)


def test_leave_one_family_out_and_held_out_voices_keep_training_clean(tmp_path):
    recipe, corpus = _recipe(tmp_path)
    info, lines = B.load_pool(recipe, corpus)
    assert info["b"]["families"] == sorted({B.FAMILIES["white"], B.FAMILIES["reverb"]})
    # relative paths are made absolute against the recipe dir, utt2dur stays as it is
    assert lines["wav.scp"][0] == f"a {os.path.join(os.path.abspath(recipe), 'dump/train/a.wav.scp')}\n"
    fam = B.FAMILIES["babble"]
    runs = {name: (train, dev, tests, exclude) for name, train, dev, tests, exclude in
            B.plan(info, [fam], ["flite"], in_distribution=True)}
    train, dev, tests, exclude = runs[f"lofo:{fam}"]
    assert (train, dev, exclude) == (["b", "c"], ["e"], [fam])
    assert tests == {f"with_{fam}": ["a", "f", "h"]}            # every pooled recording with it, dev left out
    train, dev, tests, _ = runs["voices:flite"]
    assert train == ["a", "c"] and dev == ["d", "e"]
    assert tests == {"heldout_voices": ["b", "f"], "test_real": ["h"]}
    assert runs["in_distribution"][:2] == (["a", "b", "c"], ["d", "e"])
    assert len(B.plan(info, [], [], in_distribution=False)) == 0
    with pytest.raises(ValueError, match="unknown family 'hiss'"):
        B.plan(info, ["hiss"], [])
    # a subset dump holds exactly the chosen recordings, with the features' config
    out = B.write_subset(lines, ["b", "c"], str(tmp_path / "sub"))
    assert [ln.split()[0] for ln in open(os.path.join(out, "feats.scp"))] == ["b", "c"]
    assert [json.loads(ln)["utt_id"] for ln in open(os.path.join(out, "ref.jsonl"))] == ["b", "c"]
    assert json.load(open(os.path.join(out, "feats_config.json"))) == {"n_mels": 80, "pitch": True}
