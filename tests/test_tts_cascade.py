"""The Track 2 cascade (pyutils/tts/cascade.py, local/nvv_tts.sh --tts_method cascade)."""

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from pyutils.tts import cascade
from pyutils.tts.nvv_heard import tag_spans

ROOT = Path(__file__).resolve().parents[1]
SR = 16000


def _installed(engine):
    from pyutils.synth import voice_bank

    try:
        voice_bank.check_packages(engine)
        return True
    except voice_bank.VoiceBankError:
        return False


def _bank():
    from pyutils.synth.nvv_bank_index import is_installed

    return is_installed()


needs_piper_and_bank = pytest.mark.skipif(not (_installed("piper") and _bank()),
                                          reason="make -C tools voices nvv_bank not run")


# ---------------------------------------------------------------- plan
def test_parse_tagged_counts_units_before_each_tag():
    units, events = cascade.parse_tagged("[laugh] That was, [cough] fun. [throat_clearing]", "en")
    assert units == ["That", "was,", "fun."]
    assert events == [{"tag": "laugh", "position": 0}, {"tag": "cough", "position": 2},
                      {"tag": "throat clearing", "position": 3}]
    units, events = cascade.parse_tagged("你好[laugh]世界", "zh")
    assert units == ["你", "好", "世", "界"] and events == [{"tag": "laugh", "position": 2}]


def test_parse_tagged_rejects_unknown_tags_and_empty_text():
    with pytest.raises(ValueError, match="unknown tag"):
        cascade.parse_tagged("hello [giggle]", "en")
    with pytest.raises(cascade.CascadeError, match="no words"):
        cascade.parse_tagged("[laugh] [cough]", "en")


def test_plan_item_uses_the_train_split_of_the_bank_and_a_fixed_seed():
    voice = {"id": "en_s00", "engine": "espeak", "name": "en-us", "speed": 160, "pitch": 50, "warp": 1.0}
    a = cascade.plan_item("u1", "hi [laugh] there", "en", voice)
    b = cascade.plan_item("u1", "hi [laugh] there", "en", voice)
    assert a == b and a["split"] == "train" == cascade.NVV_SPLIT and a["nvv_sounds"] == "bank"
    assert cascade.plan_item("u2", "hi [laugh] there", "en", voice)["seed"] != a["seed"]


def test_resolve_voice_names_the_range_on_a_bad_id():
    assert cascade.resolve_voice("en", "en_s03")["id"] == "en_s03"
    with pytest.raises(ValueError, match="en_s00"):
        cascade.resolve_voice("en", "en_s999")


# ---------------------------------------------------------------- durations
@pytest.mark.parametrize("tokens,spans,total", [
    # pause slots around tags (the FastSpeech front-end)
    ("| [laugh] [laugh]~2 [laugh]~3 | h aɪ | ð ɛɹ .", [(2000, 9000)], 30000),
    # a tag right after punctuation (no pause slot) and one at the very end
    ("| h aɪ , [cough] [cough]~2 [cough]~3 | ð ɛɹ . [moan] [moan]~2 [moan]~3", [(8000, 12000), (20000, 26000)], 28000),
    # two tags in a row, the first at the start: the gaps go to the tags' edge tokens
    ("[laugh] [laugh]~2 [cough] [cough]~2 h aɪ", [(1600, 5000), (6200, 9000)], 20000),
])
def test_token_durations_put_each_tag_on_its_samples(tokens, spans, total):
    toks = tokens.split()
    d = cascade.token_durations(toks, spans, total, "u")
    assert sum(d) == total and len(d) == len(toks) and min(d) >= 0
    got = tag_spans(toks, d, total / SR)
    assert len(got) == len(spans)
    for (tag, s, e), (a, b) in zip(got, spans):
        # exact where a text token lies on both sides; else widened by the neighbouring gap only
        assert s <= a / SR + 1e-9 and e >= b / SR - 1e-9
        assert a / SR - s <= 0.11 and e - b / SR <= 0.7


def test_token_durations_exact_with_pause_slots():
    toks = "| [laugh] [laugh]~2 [laugh]~3 | h aɪ |".split()
    d = cascade.token_durations(toks, [(3200, 11200)], 24000, "u")
    (tag, s, e), = tag_spans(toks, d, 24000 / SR)
    assert (tag, round(s * SR), round(e * SR)) == ("laugh", 3200, 11200)


def test_token_durations_refuse_a_tag_count_mismatch():
    with pytest.raises(cascade.CascadeError, match="utterance u7: 1 tags in the tokens, 2 NVVs"):
        cascade.token_durations("h [laugh] i".split(), [(0, 10), (20, 30)], 100, "u7")


def test_restore_spans_keeps_the_nvv_and_fades_at_its_edges():
    conv = np.full(2000, 0.5, np.float32)
    orig = np.full(2000, -0.25, np.float32)
    y = cascade.restore_spans(conv, orig, [(800, 1200)], xfade=100)
    assert np.all(y[800:1200] == -0.25)
    assert np.all(y[:700] == 0.5) and np.all(y[1300:] == 0.5)
    assert -0.25 < y[750] < 0.5 and np.all(np.diff(y[700:800]) <= 0)


# ---------------------------------------------------------------- synthesis (real voice and bank)
def _write(path, rows):
    path.write_text("".join(f"{k} {v}\n" for k, v in rows))


@needs_piper_and_bank
def test_ci_sized_cascade_synthesis_with_conversion(tmp_path):
    """Two utterances spoken by en_s00, converted to a speaker whose 'training recordings' are
    cascade renderings in another voice: wavs, durations on the tag tokens, NVVs kept, no
    dev/test clip of the NVV bank used."""
    from pyutils.synth.audio import read_wav
    from pyutils.synth.nvv_bank_index import load_index
    from pyutils.tts.frontend import main as frontend_main

    train = {f"spk-train-{i}": t for i, t in enumerate(
        ["The cat sat on the warm mat today.", "We walked to the station before dinner.",
         "My brother opened the window this morning.", "They will keep the wooden chair tomorrow."])}
    test = {"spk-test-0": "[laugh] That was really funny. [cough]",
            "spk-test-1": "Honestly, [gasp] I did not know that."}
    tr, te = tmp_path / "train", tmp_path / "test"
    for d, texts in ((tr, train), (te, test)):
        d.mkdir()
        _write(d / "text", texts.items())
        _write(d / "utt2spk", [(u, "spk") for u in texts])
        assert frontend_main(["--lang", "en", "--token-type", "phn", "--pauses", "--tag-parts", "3",
                              str(d / "text"), str(d / "tokens")]) == 0
    cache = str(tmp_path / "cache")
    assert cascade.main(["synth", "--text", str(tr / "text"), "--tokens", str(tr / "tokens"),
                         "--utt2spk", str(tr / "utt2spk"), "--lang", "en", "--voice", "en_s05",
                         "--cache", cache, "--out-dir", str(tr / "out")]) == 0
    _write(tr / "wav.scp", [(u, tr / "out" / "wav" / f"{u}.wav") for u in train])
    assert cascade.main(["speaker-models", "--wav-scp", str(tr / "wav.scp"), "--utt2spk", str(tr / "utt2spk"),
                         "--spks", "spk", "--max-s", "8", "--out-dir", str(tmp_path / "models")]) == 0
    # en_s05 is en_s00's voice at warp 0.86: the fitted warp of en_s00 to this "speaker" finds it
    assert cascade.main(["speaker-warps", "--wav-scp", str(tr / "wav.scp"), "--utt2spk", str(tr / "utt2spk"),
                         "--text", str(tr / "text"), "--spks", "spk", "--lang", "en", "--voice", "en_s00",
                         "--out-dir", str(tmp_path / "warps")]) == 0
    fitted = json.loads((tmp_path / "warps" / "spk.json").read_text())
    assert abs(fitted["warp"] - 0.86) < 0.05, fitted
    v = cascade.warped_voice(cascade.resolve_voice("en", "en_s00"), str(tmp_path / "warps"), "spk", "u")
    assert v["warp"] == fitted["warp"] and v["name"] == "en_US-joe-medium"
    with pytest.raises(cascade.CascadeError, match="utterance u9: no speaker warp for 'nobody'"):
        cascade.warped_voice(v, str(tmp_path / "warps"), "nobody", "u9")
    content, world = cascade.load_speaker_model(str(tmp_path / "models" / "spk.npz"))
    assert content.shape[1] == 512 and world.sp.shape[0] == world.f0.shape[0] > 0

    for models, out in (("", te / "plain"), (str(tmp_path / "models"), te / "conv")):
        assert cascade.main(["synth", "--text", str(te / "text"), "--tokens", str(te / "tokens"),
                             "--utt2spk", str(te / "utt2spk"), "--lang", "en", "--speaker-models", models,
                             "--cache", cache, "--out-dir", str(out), "--job", "3"]) == 0
    train_clips = {r["clip_id"] for (_, s), rows in load_index().items() if s == "train" for r in rows}
    other_clips = {r["clip_id"] for (_, s), rows in load_index().items() if s != "train" for r in rows}
    durs = {line.split()[0]: [int(v) for v in line.split()[1:]]
            for line in (te / "conv" / "durations.3").read_text().splitlines()}
    tokens = dict(line.split(maxsplit=1) for line in (te / "tokens").read_text().splitlines())
    rows = [json.loads(x) for x in (te / "conv" / "nvv_sources.3.jsonl").read_text().splitlines()]
    assert {r["utt_id"] for r in rows} == set(test) and all(r["converted"] for r in rows)
    for r in rows:
        u = r["utt_id"]
        plain, _ = read_wav(te / "plain" / "wav" / f"{u}.wav")
        conv, _ = read_wav(te / "conv" / "wav" / f"{u}.wav")
        assert conv.size == plain.size == sum(durs[u]) and np.abs(conv).max() > 0.05
        spans = tag_spans(tokens[u].split(), durs[u], conv.size / SR)
        assert [t for t, _, _ in spans] == [e["tag"] for e in r["events"]]
        speech = np.ones(conv.size, bool)
        for (tag, s, e), ev in zip(spans, r["events"]):
            a, b = round(ev["start"] * SR), round(ev["end"] * SR)
            assert s <= ev["start"] + 1e-3 and e >= ev["end"] - 1e-3
            # the NVV is the unconverted one (PCM16 rounding aside)
            assert np.max(np.abs(conv[a:b] - plain[a:b])) < 2e-4
            speech[max(0, a - 200):b + 200] = False
            if ev["source"] == "recorded":
                assert ev["clip"] in train_clips and ev["clip"] not in other_clips
        assert np.mean(np.abs(conv[speech] - plain[speech])) > 1e-3     # the speech was converted
    assert {e["source"] for r in rows for e in r["events"]} == {"recorded"}  # laugh, cough, gasp: bank tags


# ---------------------------------------------------------------- options of local/nvv_tts.sh
@pytest.mark.parametrize("args,msg", [
    (["--tts_method", "vits"], "--tts_method must be espnet, cascade or auto, got 'vits'"),
    (["--tts_method", "cascade", "--lang", "vi"], "--tts_method cascade has bank voices for en and zh only"),
    (["--tts_convert", "maybe"], "option --tts_convert expects true or false, got 'maybe'"),
    (["--tts_warp", "yes"], "option --tts_warp expects true or false, got 'yes'"),
    (["--tts_method", "cascade", "--tts_voice", "zh_s01"], "--tts_voice must be a en bank voice id (en_s00, en_s01, ...), got 'zh_s01'"),
    (["--tts_method", "cascade", "--knn_ref_s", "1"], "--knn_ref_s must be a number of seconds >= 2, got '1'"),
])
def test_bad_cascade_options_are_refused_before_any_stage(tmp_path, args, msg):
    r = subprocess.run(["./local/nvv_tts.sh", "--preset", "ci", "--expdir", str(tmp_path / "exp"), *args],
                       cwd=ROOT / "egs" / "nvv_tts", capture_output=True, text=True, timeout=60)
    assert r.returncode in (1, 2) and msg in r.stderr, r.stderr   # (parse_options.sh checks booleans: 1)
    assert not (tmp_path / "exp" / "stage_times.tsv").exists()


def test_run_sh_defaults_to_the_cascade_for_en_and_zh_only():
    text = (ROOT / "egs" / "nvv_tts" / "run.sh").read_text()
    assert "tts_method=auto" in text and '--tts_method "${tts_method}"' in text
    script = (ROOT / "local" / "nvv_tts_options.sh").read_text()   # the options of local/nvv_tts.sh
    assert '[ "${tts_method}" != auto ] || case "${lang}" in en|zh) tts_method=cascade ;; *) tts_method=espnet ;; esac' in script
    assert "\ntts_method=espnet " in script    # callers of local/nvv_tts.sh (vivc, forks) keep espnet
