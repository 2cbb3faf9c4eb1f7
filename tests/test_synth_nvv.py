"""chorus-synth nvv: formats, label/audio agreement, determinism, splits, validator."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pyutils.synth import cli
from pyutils.tags import challenge_tags

TINY = ["--num-train", "8", "--num-dev", "3", "--num-test", "3"]


MINI = ["--num-train", "3", "--num-dev", "1", "--num-test", "2"]


def _make(tmp_path_factory, lang, name, extra=(), sizes=TINY):
    out = tmp_path_factory.mktemp(name) / "corpus"
    cli.main(["nvv", "--lang", lang, "--preset", "ci", "--out", str(out), *sizes, *extra])
    return out


@pytest.fixture(scope="module", params=["en", "zh"])
def corpus(request, tmp_path_factory):
    return request.param, _make(tmp_path_factory, request.param, f"nvv_{request.param}")


def _rows(path):
    return [json.loads(l) for l in Path(path).read_text(encoding="utf-8").splitlines() if l]


def _kaldi(path):
    out = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        k, _, v = line.partition(" ")
        out[k] = v
    return out


def test_layout_and_wav_format(corpus):
    lang, out = corpus
    assert (out / ".done").exists()
    for split in ("train", "dev", "test"):
        d = out / "data" / split
        for f in ("wav.scp", "text", "utt2spk", "spk2utt", "utt2dur"):
            assert (d / f).is_file(), d / f
        scp = _kaldi(d / "wav.scp")
        ids = list(scp)
        assert ids == sorted(ids, key=lambda s: s.encode())           # LC_ALL=C order
        assert set(_kaldi(d / "text")) == set(ids) == set(_kaldi(d / "utt2spk"))
        for utt, path in scp.items():
            assert Path(path).is_absolute()
            info = sf.info(path)
            assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")
            assert abs(info.duration - float(_kaldi(d / "utt2dur")[utt])) < 1e-3
            assert utt.startswith(_kaldi(d / "utt2spk")[utt] + "-")


def test_data_dirs_pass_the_datadir_validator(corpus):
    validate = pytest.importorskip("pyutils.datadir.validate").validate_data_dir
    lang, out = corpus
    for split in ("train", "dev", "test"):
        rep = validate(out / "data" / split)
        assert rep.ok, rep.errors


def test_reference_files_pass_the_track1_validator(corpus):
    lang, out = corpus
    from pyutils.scoring.track1 import load_reference_rows
    from pyutils.scoring.textnorm import parse_tagged

    for split in ("train", "dev", "test"):
        ref = _rows(out / "ref" / f"{split}.jsonl")
        loaded = load_reference_rows(list(enumerate(ref, 1)), str(out / "ref" / f"{split}.jsonl"))
        text = _kaldi(out / "data" / split / "text")
        events = {r["utt_id"]: r["events"] for r in _rows(out / "events" / f"{split}.jsonl")}
        assert set(loaded) == set(text) == set(events)
        for utt, (rlang, rtext, _, parsed) in loaded.items():
            assert rlang == lang and rtext == text[utt]
            # the positions the evaluator computes equal the ones we inserted at
            assert [(e.tag, e.position) for e in parsed.events] == \
                   [(e["tag"], e["position"]) for e in events[utt]]
            for tag in parse_tagged(rtext, lang).events:
                assert tag.tag in challenge_tags()


def test_event_intervals_carry_the_event_energy(corpus):
    lang, out = corpus
    n = 0
    for split in ("train", "dev", "test"):
        scp = _kaldi(out / "data" / split / "wav.scp")
        for row in _rows(out / "events" / f"{split}.jsonl"):
            x, sr = sf.read(scp[row["utt_id"]], dtype="float64")
            for e in row["events"]:
                a, b = int(e["start"] * sr), int(e["end"] * sr)
                assert 0 <= a < b <= len(x)
                inside = np.sqrt(np.mean(x[a:b] ** 2))
                before = x[max(0, a - int(0.04 * sr)):a - int(0.004 * sr)]
                after = x[b + int(0.004 * sr):b + int(0.04 * sr)]
                for gap in (before, after):
                    if len(gap):
                        assert np.sqrt(np.mean(gap ** 2)) < 0.1 * inside, (row["utt_id"], e)
                n += 1
    assert n > 0


def test_test_sentences_unseen_in_train(corpus):
    lang, out = corpus
    from pyutils.scoring.textnorm import parse_tagged

    def sentences(split):
        return {" ".join(parse_tagged(t, lang).lexical) for t in _kaldi(out / "data" / split / "text").values()}

    train = sentences("train")
    assert not (sentences("test") & train)
    assert not (sentences("dev") & train)


def test_tags_are_balanced():
    from pyutils.synth import nvv_corpus

    items = nvv_corpus.plan("en", {"train": 400, "dev": 0, "test": 0}, 8, seed=3)
    counts = {}
    for it in items:
        for e in it["events"]:
            counts[e["tag"]] = counts.get(e["tag"], 0) + 1
    assert set(counts) == set(challenge_tags())
    assert max(counts.values()) - min(counts.values()) <= 2
    assert any(e["position"] == 0 for it in items for e in it["events"])
    assert any(e["position"] == len(it["units"]) for it in items for e in it["events"])


def _digest(out):
    h = hashlib.sha256()
    for p in sorted((out / "wav").glob("*.wav")) + sorted((out / "ref").glob("*.jsonl")) + \
            sorted((out / "events").glob("*.jsonl")) + sorted((out / "data").glob("*/text")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def test_deterministic_across_runs_and_nj(tmp_path_factory):
    a = _make(tmp_path_factory, "en", "det_a", sizes=MINI)
    b = _make(tmp_path_factory, "en", "det_b", ["--nj", "2"], sizes=MINI)
    assert _digest(a) == _digest(b)
    c = _make(tmp_path_factory, "en", "det_c", ["--seed", "1"], sizes=MINI)
    assert _digest(a) != _digest(c)


def test_job_backend_gives_the_same_bytes(tmp_path_factory):
    from pyutils import REPO_ROOT

    run_pl = REPO_ROOT / "utils" / "run.pl"
    if not run_pl.exists():
        pytest.skip("utils/run.pl not present")
    a = _make(tmp_path_factory, "en", "cmd_a", sizes=MINI)
    b = _make(tmp_path_factory, "en", "cmd_b", ["--nj", "2", "--cmd", str(run_pl)], sizes=MINI)
    assert _digest(a) == _digest(b)
    logs = sorted((b / "log").glob("synth.*.log"))
    assert len(logs) == 2 and "worker: wrote" in logs[0].read_text()


def test_resume_is_noop_and_other_args_refused(tmp_path):
    out = tmp_path / "c"
    args = ["nvv", "--lang", "en", "--preset", "ci", "--out", str(out), "--num-train", "2",
            "--num-dev", "1", "--num-test", "1"]
    cli.main(args)
    stamp = (out / "summary.json").stat().st_mtime_ns
    cli.main(args)
    assert (out / "summary.json").stat().st_mtime_ns == stamp
    with pytest.raises(SystemExit, match="other arguments"):
        cli.main(args + ["--seed", "5"])
    cli.main(args + ["--seed", "5", "--overwrite"])
    assert json.loads((out / "synth_args.json").read_text())["seed"] == 5


def test_english_sentences_agree_and_use_us_spelling():
    import re

    from pyutils.synth.sentences import _en_agree, sentence_pool, vocabulary

    assert _en_agree("You dropped a umbrella. A apple, a box and six boxs.") == \
        "You dropped an umbrella. An apple, a box and six boxes."
    pool = sentence_pool("en", 3000, 0)
    assert not [s for s in pool if re.search(r"\b[Aa] [aeiou]|boxs|neighbour", s)]
    assert any(" an " in s for s in pool) and any("neighbor" in s for s in pool)
    assert {"an", "neighbor"} <= vocabulary("en")
