"""chorus-synth sqa: layout, reference validity, intervals against the audio."""

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pyutils.synth import cli


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("sqa") / "corpus"
    cli.main(["sqa", "--preset", "ci", "--out", str(out), "--num-train", "10",
              "--num-dev", "3", "--num-test", "3", "--nj", "2"])
    return out


def _rows(p):
    return [json.loads(l) for l in Path(p).read_text().splitlines() if l]


def _scp(p):
    return dict(l.split(" ", 1) for l in Path(p).read_text().splitlines())


def test_refs_valid_for_scorer_and_match_datadir(corpus):
    from pyutils.scoring.sqa import load_rows

    for split in ("train", "dev", "test"):
        path = corpus / "ref" / f"{split}.jsonl"
        rows = _rows(path)
        loaded = load_rows(list(enumerate(rows, 1)), str(path))
        scp = _scp(corpus / "data" / split / "wav.scp")
        assert set(loaded) == set(scp)
        for d in ("utt2spk", "spk2utt", "utt2dur"):
            assert (corpus / "data" / split / d).is_file()
        for utt, (score, iv, _) in loaded.items():
            assert 1 <= score <= 5
            info = sf.info(scp[utt])
            assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")
            for ivs in iv.values():
                for s, e in ivs:
                    assert e <= info.duration + 1e-3


def test_intervals_match_audio(corpus):
    n_pause = n_noise = 0
    for split in ("train", "dev", "test"):
        scp = _scp(corpus / "data" / split / "wav.scp")
        for row in _rows(corpus / "ref" / f"{split}.jsonl"):
            if row["utt_id"].startswith("real_"):
                continue   # a real recording's own floor fills its pauses ("room" pauses copy it)
            x, sr = sf.read(scp[row["utt_id"]], dtype="float64")
            level = np.sqrt(np.mean(x ** 2))
            for s, e in row["faults"]["pause"]:
                # every pause kind ends in >= 0.3 s of silence (a stutter starts with repeats)
                seg = x[int(e * sr) - int(0.3 * sr):int(e * sr) - 80]
                assert np.sqrt(np.mean(seg ** 2)) < 0.05 * level, row
                n_pause += 1
            for s, e in row["faults"]["noise"]:
                seg = x[int(s * sr):int(e * sr)]
                fr = np.sqrt(np.mean(seg[: len(seg) // 320 * 320].reshape(-1, 320) ** 2, axis=1))
                lead = x[: int(0.1 * sr)]
                covered = any(a < 0.1 for iv in row["faults"].values() for a, _ in iv)
                if not covered:
                    # the noise floor inside a noise interval is above the clean floor
                    assert np.percentile(fr, 10) > 3 * np.sqrt(np.mean(lead ** 2)), row
                n_noise += 1
    assert n_pause + n_noise > 0


def test_clean_recordings_score_high(corpus):
    rows = [r for s in ("train", "dev", "test") for r in _rows(corpus / "ref" / f"{s}.jsonl")]
    clean = [r["score"] for r in rows if not any(r["faults"].values())]
    faulty = [r["score"] for r in rows if any(r["faults"].values())]
    assert clean and faulty
    assert min(clean) > 4.2


def test_data_dirs_pass_the_datadir_validator(corpus):
    validate = pytest.importorskip("pyutils.datadir.validate").validate_data_dir
    for split in ("train", "dev", "test"):
        rep = validate(corpus / "data" / split)
        assert rep.ok, rep.errors


def test_real_recordings_only_in_the_held_out_split(corpus):
    from pyutils.synth.sqa_corpus import real_clips

    if not real_clips():
        pytest.skip("pocketsphinx-testdata not installed")
    real = _rows(corpus / "faults" / "test_real.jsonl")
    assert len(real) == 2 * len(real_clips())                 # ci preset: 2 copies of each clip
    assert all(r["voice_group"] == "real" for r in real)
    test_speakers = {"real_" + cid.split("_")[0] for cid, _, _ in real_clips()}
    for split in ("train", "dev", "test"):
        rows = _rows(corpus / "faults" / f"{split}.jsonl")
        assert all(r["voice_group"] != "" for r in rows)
        if split != "train":     # real speech in dev/test would be evaluated on
            assert all(r["voice_group"] != "real" for r in rows)
        wavs = _scp(corpus / "data" / split / "wav.scp")
        assert not any(u.split("-")[0] in test_speakers for u in wavs)
    refs = _rows(corpus / "ref" / "test_real.jsonl")
    assert {r["utt_id"] for r in refs} == {r["utt_id"] for r in real}


def test_voice_inventory_is_wide_and_fixed():
    from pyutils.synth.sqa_corpus import sqa_voices

    a, b = sqa_voices("en", 300, "espeak"), sqa_voices("en", 300, "espeak")
    assert a == b
    assert len({v["name"] for v in a}) == 300
    assert len({v["group"] for v in a}) >= 8                   # flite + 8 espeak accents
    # the bank inventory: the same voices but every 6th (from the 2nd) neural, 2 piper : 1 Kokoro
    bank = sqa_voices("en", 64)
    neural = [i for i, v in enumerate(bank) if v["engine"] in ("piper", "kokoro")]
    assert neural == list(range(1, 64, 6))
    assert [bank[i]["engine"] for i in neural[:6]] == ["piper", "piper", "kokoro"] * 2
    assert all(bank[i] == dict(e, id=bank[i]["id"]) for i, e in enumerate(sqa_voices("en", 64, "espeak"))
               if i not in neural)                               # the espeak-ng voices stay
    assert len({(v["engine"], v["name"], v["speed"], v["warp"]) for v in bank}) == 64
    assert [v["id"] for v in bank] == [f"sqa_v{i:03d}" for i in range(64)]


def test_packaged_real_speech_trains_and_is_cut_at_quiet_points(corpus):
    from pyutils.synth.sqa_corpus import cut_at_quiet, real_train_chunks

    chunks = real_train_chunks()
    if not chunks:
        pytest.skip("packaged real speech not fetched (make -C tools real_speech)")
    rows = [r for r in _rows(corpus / "faults" / "train.jsonl") if r["voice_group"] == "real"]
    assert len(rows) == len(chunks)                              # ci preset: 1 copy of each chunk
    assert all(2.0 < r["duration"] < 12.0 for r in rows)         # chunks + inserted pauses
    # the cutter: chunks within bounds, contiguous, cut where the signal is quiet
    sr = 16000
    t = np.arange(20 * sr) / sr
    x = np.sin(2 * np.pi * 200 * t) * (np.abs(((t + 0.25) % 4.0) - 2.0) < 1.7)   # 0.6 s gaps every 4 s
    spans = cut_at_quiet(x, sr, 2.5, 7.0)
    assert spans[0][0] == 0.0 and all(a2 == b1 for (_, b1), (a2, _) in zip(spans, spans[1:]))
    assert all(2.5 <= b - a <= 9.5 for a, b in spans)
    for _, b in spans[:-1]:
        i = int(b * sr)
        assert np.abs(x[i - 800:i + 800]).max() == 0.0           # each cut lies inside a gap


def test_neural_bank_voice_renders_in_the_sqa_corpus(tmp_path):
    from pyutils.synth import sqa_corpus, voice_bank
    from pyutils.synth.speech import check_engines

    try:
        check_engines(voice_bank.bank_voices("en", 1))
    except voice_bank.VoiceBankError:
        pytest.skip("make -C tools voices not run")
    sizes = {"train": 100, "dev": 0, "test": 0}
    items = sqa_corpus.plan("en", sizes, 16, 0)
    piper = [it for it in items if it["voice"]["engine"] == "piper"]
    assert piper and {it["voice"]["engine"] for it in items} == {"flite", "espeak", "piper", "kokoro"}
    assert {it["voice"]["engine"] for it in sqa_corpus.plan("en", sizes, 16, 0, "espeak")} == {"flite", "espeak"}
    (tmp_path / "wav").mkdir()
    meta = sqa_corpus.render(piper[0], str(tmp_path))
    x, sr = sf.read(meta["wav"])
    assert sr == 16000 and len(x) / sr > 1.0 and meta["voice_group"] == "piper" and 1 <= meta["score"] <= 5


def test_corpus_of_an_earlier_version_is_still_complete(corpus):
    """Earlier versions named ``real_prompts`` (None) in synth_args.json: the same corpus, not rebuilt."""
    args_file = corpus / "synth_args.json"
    ident = json.loads(args_file.read_text())
    args_file.write_text(json.dumps({**ident, "real_prompts": None}, sort_keys=True))
    stamp = (corpus / "summary.json").stat().st_mtime_ns
    cli.main(["sqa", "--preset", "ci", "--out", str(corpus), "--num-train", "10",
              "--num-dev", "3", "--num-test", "3", "--nj", "2"])
    assert (corpus / "summary.json").stat().st_mtime_ns == stamp
    args_file.write_text(json.dumps({**ident, "real_prompts": 2}, sort_keys=True))
    with pytest.raises(SystemExit, match="other arguments"):
        cli.main(["sqa", "--preset", "ci", "--out", str(corpus), "--num-train", "10",
                  "--num-dev", "3", "--num-test", "3", "--nj", "2"])
    args_file.write_text(json.dumps(ident, sort_keys=True))
