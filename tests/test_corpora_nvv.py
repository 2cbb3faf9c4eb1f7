"""Real-corpus NVV preparers, run on tiny fixtures written in each corpus's layout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pyutils.corpora import cli
from pyutils.corpora.common import PrepError, read_json_records
from pyutils.corpora.nvv_text import track1_problems
from pyutils.corpora.prep import Options

FIX = Path(__file__).parent / "fixtures" / "corpora"


def read_kv(path: Path) -> dict:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition(" ")
        out[key] = value
    return out


def check_dir(d: Path, text: bool = True) -> dict:
    """A valid, sorted, consistent Kaldi dir whose text obeys the Track 1 rules.
    Returns the text (or wav.scp) mapping."""
    from pyutils.datadir.validate import validate_data_dir

    rep = validate_data_dir(d, audio_check=True)
    assert rep.ok, rep.errors
    wav = read_kv(d / "wav.scp")
    for rx in wav.values():
        path = rx.split()[0] if not rx.endswith("|") else rx.split(" -i ")[1].split()[0]
        assert path.startswith("/"), rx
    for name in ("wav.scp", "utt2spk", "spk2utt"):
        keys = [ln.split(" ", 1)[0] for ln in (d / name).read_text().splitlines()]
        assert keys == sorted(keys, key=lambda s: s.encode()), name
    assert (d / "prep_report.json").is_file()
    if not text:
        assert not (d / "text").exists()
        return wav
    texts = read_kv(d / "text")
    assert set(texts) == set(wav)
    langs = read_kv(d / "utt2lang")
    refs = [json.loads(x) for x in (d / "ref.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {r["utt_id"]: r["text_with_nvvs"] for r in refs} == texts
    assert all(r["language"] == langs[r["utt_id"]] for r in refs)
    for utt, t in texts.items():
        assert track1_problems(t) == [], (utt, t)
    try:  # the official-rule parser of the scoring package, when present
        from pyutils.scoring.textnorm import parse_tagged
    except ImportError:  # pragma: no cover
        parse_tagged = None
    if parse_tagged is not None:
        for utt, t in texts.items():
            parse_tagged(t, langs[utt])
    return texts


def opts(out: Path, **kw) -> Options:
    kw.setdefault("nj", 1)
    return Options(out=out, **kw)


def report(d: Path) -> dict:
    return json.loads((d / "prep_report.json").read_text(encoding="utf-8"))


# --------------------------------------------------------------------- Track 1 test
def test_track1_test_folder_layout(tmp_path):
    from pyutils.corpora import track1_test

    track1_test.prepare(FIX / "track1_test", opts(tmp_path))
    en = check_dir(tmp_path / "test_en", text=False)
    zh = check_dir(tmp_path / "test_zh", text=False)
    assert sorted(en) == ["T1EN0001", "T1EN0002"] and list(zh) == ["T1ZH0001"]
    # 44.1 kHz stereo FLAC and 24 kHz MP3 go through a pipe; 16 kHz mono WAV is direct
    assert en["T1EN0001"].startswith("ffmpeg ") and en["T1EN0001"].endswith("|")
    assert en["T1EN0002"].startswith("ffmpeg ")
    assert zh["T1ZH0001"].endswith("T1ZH0001.wav")
    assert read_kv(tmp_path / "test_en" / "utt2lang") == {"T1EN0001": "en", "T1EN0002": "en"}
    assert read_kv(tmp_path / "test_en" / "utt2spk")["T1EN0001"] == "T1EN0001"


def test_wav_scp_pipes_yield_16k_mono(tmp_path):
    import kaldiio

    from pyutils.corpora import track1_test

    track1_test.prepare(FIX / "track1_test", opts(tmp_path))
    scp = kaldiio.load_scp(str(tmp_path / "test_en" / "wav.scp"))
    for utt in scp:
        rate, audio = scp[utt]
        assert rate == 16000 and audio.ndim == 1 and len(audio) == 3200, utt


def test_track1_test_manifest_and_lang_filter(tmp_path):
    from pyutils.corpora import track1_test

    root = tmp_path / "t1"
    (root / "audio").mkdir(parents=True)
    for p in (FIX / "track1_test" / "audio").rglob("*.*"):
        shutil.copy(p, root / "audio" / p.name)
    (root / "test.jsonl").write_text(
        '{"utt_id": "T1EN0001", "language": "en"}\n{"utt_id": "T1EN0002", "language": "en"}\n'
        '{"utt_id": "T1ZH0001", "language": "zh"}\n', encoding="utf-8")
    track1_test.prepare(root, opts(tmp_path / "data"), lang="en")
    assert (tmp_path / "data" / "test_en").is_dir() and not (tmp_path / "data" / "test_zh").exists()
    check_dir(tmp_path / "data" / "test_en", text=False)
    # a row without language and no --lang: error names the manifest line
    (root / "test.jsonl").write_text('{"utt_id": "T1EN0001", "language": "en"}\n'
                                     '{"utt_id": "T1ZH0001"}\n', encoding="utf-8")
    with pytest.raises(PrepError, match=r"test\.jsonl:2: no language"):
        track1_test.prepare(root, opts(tmp_path / "data2"))


# --------------------------------------------------------------------- NV-Bench
def test_nvbench_default_policy(tmp_path):
    from pyutils.corpora import nvbench

    nvbench.prepare(FIX / "nvbench", opts(tmp_path))
    zh = check_dir(tmp_path / "zh_single")
    en = check_dir(tmp_path / "en_multi")
    assert zh == {"zh_single_0001": "今天真是太开心了[laugh]", "zh_single_0002": "你说什么"}
    assert en == {"en_multi_0001": "[sigh] I am so tired [laugh], really [cough]."}
    d = tmp_path / "zh_single"
    assert read_kv(d / "text_nvbench")["zh_single_0002"] == "[Question-oh]你说什么"
    ref_wav = read_kv(d / "utt2ref_wav")["zh_single_0001"]
    assert Path(ref_wav).is_absolute() and Path(ref_wav).is_file()
    assert read_kv(d / "utt2ref_text")["zh_single_0001"] == "我们明天见。"
    assert read_kv(d / "utt2target_wav")["zh_single_0001"] == "zh_single_0001.wav"
    rep = report(d)
    assert rep["label_to_tag"] == {"Laughter -> laugh": 1}
    assert rep["tags_dropped_no_counterpart"] == {"Question-oh": 1}
    assert rep["utterances_written"] == 2


def test_nvbench_keep_text_and_drop_utt(tmp_path):
    from pyutils.corpora import nvbench

    nvbench.prepare(FIX / "nvbench", opts(tmp_path / "k", unmapped="keep_text"), ["zh_single"])
    assert check_dir(tmp_path / "k" / "zh_single")["zh_single_0002"] == "oh你说什么"
    assert not (tmp_path / "k" / "en_multi").exists()
    nvbench.prepare(FIX / "nvbench", opts(tmp_path / "d", unmapped="drop_utt"), ["zh_single"])
    texts = check_dir(tmp_path / "d" / "zh_single")
    assert list(texts) == ["zh_single_0001"]
    assert report(tmp_path / "d" / "zh_single")["utterances_dropped"] == {
        "unmapped label (drop_utt)": 1}


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_unknown_label_is_an_error_with_file_and_line(tmp_path, capsys):
    root = _copy(FIX / "nvbench", tmp_path / "nvb")
    p = root / "zh_single.json"
    p.write_text(p.read_text(encoding="utf-8").replace("[Question-oh]", "[Giggle]"),
                 encoding="utf-8")
    rc = cli.main(["nvbench", "--src", str(root), "--out", str(tmp_path / "out"), "--nj", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert err[-1].startswith(f"chorus-prep: error: {p}:11: unknown label 'Giggle'")
    assert not (tmp_path / "out" / "zh_single" / "text").exists()
    # --unknown-label drop: dropped and counted
    rc = cli.main(["nvbench", "--src", str(root), "--out", str(tmp_path / "out"), "--nj", "1",
                   "--unknown-label", "drop", "--splits", "zh_single"])
    assert rc == 0
    assert report(tmp_path / "out" / "zh_single")["unknown_labels_dropped"] == {"Giggle": 1}
    assert read_kv(tmp_path / "out" / "zh_single" / "text")["zh_single_0002"] == "你说什么"


def test_malformed_json_line_is_named(tmp_path):
    from pyutils.corpora import emilia_nv

    root = _copy(FIX / "emilia_nv", tmp_path / "em")
    lines = (root / "train.jsonl").read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1][:-5]  # cut the closing of line 2
    (root / "train.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(PrepError, match=r"train\.jsonl:2: invalid JSON"):
        emilia_nv.prepare(root, opts(tmp_path / "out"))


def test_json_list_rows_know_their_line(tmp_path):
    rows = list(read_json_records(FIX / "nvbench" / "zh_single.json"))
    assert [r.line for r in rows] == [2, 11]
    bad = tmp_path / "bad.json"
    bad.write_text('[\n {"a": 1},\n {"a": 2,,}\n]\n')
    with pytest.raises(PrepError, match=r"bad\.json:3: malformed JSON"):
        list(read_json_records(bad))


# --------------------------------------------------------------------- Emilia-NV
def test_emilia_nv(tmp_path):
    from pyutils.corpora import emilia_nv

    emilia_nv.prepare(FIX / "emilia_nv", opts(tmp_path))
    texts = check_dir(tmp_path / "train")
    assert texts == {
        "ZH_B00000_S00010_W000001": "你好[laugh]我们走吧好的",
        "ZH_B00000_S00010_W000002": "真的吗太好了[breath]（这是注释）",
        "ZH_B00000_S00011_W000001": "[cry]我不想走",
    }
    assert read_kv(tmp_path / "train" / "utt2spk")["ZH_B00000_S00011_W000001"] == "ZH_B00000_S00011"
    rep = report(tmp_path / "train")
    # [Shh] is a hush, not a hiss (organisers' Track 2 table): no counterpart
    assert rep["tags_dropped_no_counterpart"] == {"Shh": 1, "Surprise-oh": 1, "Uhm": 1}
    emilia_nv.prepare(FIX / "emilia_nv", opts(tmp_path / "k", unmapped="keep_text"))
    kept = read_kv(tmp_path / "k" / "train" / "text")
    assert kept["ZH_B00000_S00010_W000001"] == "你好[laugh]我们走吧uhm好的"
    assert kept["ZH_B00000_S00010_W000002"] == "真的吗oh太好了[breath]（这是注释）"


# --------------------------------------------------------------------- NonverbalTTS
def test_nonverbaltts_exported_csv(tmp_path):
    from pyutils.corpora import nonverbaltts

    nonverbaltts.prepare(FIX / "nonverbaltts", opts(tmp_path))
    texts = check_dir(tmp_path / "train")
    assert texts == {"ex04-1": "I can't believe it [laugh] that's so funny [breath]",
                     "id10001-2": "[cough] Sorry. Let me try again"}
    assert read_kv(tmp_path / "train" / "utt2emotion") == {"ex04-1": "happy", "id10001-2": "neutral"}
    # 😤 and 😮‍💨 are disputed emoji: dropped and counted under their own names
    assert report(tmp_path / "train")["tags_dropped_no_counterpart"] == {
        "emoji face exhaling": 1, "emoji face with steam from nose": 1}


def test_nonverbaltts_hf_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from pyutils.corpora import nonverbaltts

    shard = tmp_path / "hf" / "data" / "test-00000-of-00001.parquet"
    shard.parent.mkdir(parents=True)
    audio = [{"bytes": (FIX / "nonverbaltts/audio/vox_0002.flac").read_bytes(), "path": "vox_0002.flac"},
             {"bytes": (FIX / "track1_test/audio/en/T1EN0002.mp3").read_bytes(), "path": None}]
    table = pa.table({"index": [7, 8], "audio": audio,
                      "Result": ["🤧 bless me", "okay 👃 fine 👄"],
                      "speaker_id": ["s1", "s2"], "Emotion": ["sad", "neutral"]})
    pq.write_table(table, shard)
    nonverbaltts.prepare(tmp_path / "hf", opts(tmp_path / "out"))
    texts = check_dir(tmp_path / "out" / "test")
    assert texts == {"s1-7": "[sneeze] bless me", "s2-8": "okay [sniff] fine [throat clearing]"}
    extracted = sorted(p.name for p in (tmp_path / "out" / "nonverbaltts_audio" / "test").iterdir())
    assert extracted == ["7.flac", "8.mp3"]


def test_nonverbaltts_unknown_emoji(tmp_path):
    from pyutils.corpora import nonverbaltts

    root = _copy(FIX / "nonverbaltts", tmp_path / "nv")
    p = root / "train.csv"
    p.write_text(p.read_text(encoding="utf-8").replace("🌬️", "🎺"), encoding="utf-8")
    with pytest.raises(PrepError, match=r"train\.csv:2: unknown label '🎺'"):
        nonverbaltts.prepare(root, opts(tmp_path / "out"))


# --------------------------------------------------------------------- MNV-17
def test_mnv17(tmp_path):
    from pyutils.corpora import mnv17

    mnv17.prepare(FIX / "mnv17", opts(tmp_path))
    texts = check_dir(tmp_path / "test")
    assert texts == {"speaker_F_02_0001": "这个理论的悖论之处在于[cough]请大家原谅[laugh]",
                     "speaker_M_03_0002": "我给自己泡了杯热茶[hum]然后鼓掌[lipsmack]"}
    wav = read_kv(tmp_path / "test" / "wav.scp")
    assert wav["speaker_F_02_0001"].startswith("ffmpeg ")  # 44.1 kHz stereo FLAC
    assert wav["speaker_M_03_0002"].endswith("0002.flac")   # 16 kHz mono FLAC: direct
    assert read_kv(tmp_path / "test" / "utt2spk")["speaker_M_03_0002"] == "speaker_M_03"


# --------------------------------------------------------------------- SMIIP-NV
def test_smiip_nv_and_speaker_split(tmp_path):
    from pyutils.corpora import smiip_nv

    smiip_nv.prepare(FIX / "smiip_nv", opts(tmp_path), test_speakers=["MIC-0002"])
    train = check_dir(tmp_path / "train")
    test = check_dir(tmp_path / "test")
    assert train == {"MIC-0001_0001": "我有点[cough]不舒服", "MIC-0001_0048": "哈哈[laugh]今天真好"}
    assert test == {"MIC-0002_0013": "他走了[cry]"}
    assert read_kv(tmp_path / "train" / "utt2emotion") == {"MIC-0001_0001": "neutral",
                                                          "MIC-0001_0048": "happy"}


# --------------------------------------------------------------------- generic
def test_generic_with_label_map_and_identity(tmp_path, capsys):
    g = FIX / "generic"
    rc = cli.main(["generic", "--src", str(g / "manifest.tsv"), "--out", str(tmp_path / "a"),
                   "--label-map", str(g / "label_map.tsv"), "--nj", "1"])
    assert rc == 0
    assert check_dir(tmp_path / "a" / "train") == {
        "spkA-a": "What a day [laugh] honestly [throat clearing]"}
    assert check_dir(tmp_path / "a" / "dev") == {"spkB-b": "no way"}
    # without a map only challenge tags are accepted: [snort] (dev, line 3) is unknown
    rc = cli.main(["generic", "--src", str(g / "manifest.tsv"), "--out", str(tmp_path / "b")])
    assert rc == 2
    assert "manifest.tsv:3: unknown label 'snort'" in capsys.readouterr().err


# --------------------------------------------------------------------- behaviour
def test_rerun_is_idempotent_and_leaves_no_temp_files(tmp_path):
    from pyutils.corpora import mnv17

    mnv17.prepare(FIX / "mnv17", opts(tmp_path))
    first = {p.name: p.read_bytes() for p in (tmp_path / "test").iterdir()}
    mnv17.prepare(FIX / "mnv17", opts(tmp_path))
    second = {p.name: p.read_bytes() for p in (tmp_path / "test").iterdir()}
    assert first == second
    assert not [n for n in second if n.startswith(".") or n.endswith(".tmp")]


def test_missing_audio_is_counted_and_long_files_warned(tmp_path, capsys):
    from pyutils.corpora import mnv17

    root = _copy(FIX / "mnv17", tmp_path / "m")
    (root / "wavs" / "speaker_M_03" / "0002.flac").unlink()
    mnv17.prepare(root, opts(tmp_path / "out", max_duration=0.1))
    err = capsys.readouterr().err
    assert "skipped because the audio file is missing" in err
    assert "longer than --max-duration" in err
    rep = report(tmp_path / "out" / "test")
    assert rep["utterances_dropped"] == {"missing audio": 1}
    assert rep["files_longer_than_max_duration"] == 1
    assert rep["utterances_written"] == 1


def test_track1_rule_checker():
    assert track1_problems("hello [laugh] there [throat clearing]") == []
    assert track1_problems("hello [Laugh]")  # not normalised
    assert track1_problems("hello [giggle]")
    assert track1_problems("hello ] there")
    assert track1_problems("[laugh")
    assert track1_problems("   ")


def test_sox_converter_and_mp3_fallback(tmp_path):
    import kaldiio

    from pyutils.corpora import track1_test

    track1_test.prepare(FIX / "track1_test", opts(tmp_path, converter="sox"))
    wav = read_kv(tmp_path / "test_en" / "wav.scp")
    assert wav["T1EN0001"].startswith("sox ")      # FLAC: sox can decode it
    assert wav["T1EN0002"].startswith("ffmpeg ")   # MP3: always ffmpeg
    scp = kaldiio.load_scp(str(tmp_path / "test_en" / "wav.scp"))
    assert all(scp[u][0] == 16000 and scp[u][1].ndim == 1 for u in scp)


def test_ffprobe_fallback_when_soundfile_cannot_read(monkeypatch):
    import soundfile

    from pyutils.corpora.common import probe_audio

    def refuse(*a, **k):
        raise RuntimeError("no MP3 in this libsndfile")

    monkeypatch.setattr(soundfile, "info", refuse)
    inf = probe_audio(str(FIX / "track1_test/audio/en/T1EN0002.mp3"))
    assert inf.samplerate == 24000 and inf.channels == 1 and 0.15 < inf.duration < 0.3


def test_duplicate_utterance_id_names_the_row(tmp_path):
    from pyutils.corpora import mnv17

    root = _copy(FIX / "mnv17", tmp_path / "m")
    p = root / "test.jsonl"
    p.write_text(p.read_text(encoding="utf-8").replace('"key": "speaker_M_03_0002", "wav": "wavs/speaker_M_03/0002.flac"',
                                                       '"key": "speaker_F_02_0001", "wav": "wavs/speaker_M_03/0002.flac", "speaker": "speaker_F_02"'),
                 encoding="utf-8")
    with pytest.raises(PrepError, match=r"test\.jsonl:2: duplicate utterance id"):
        mnv17.prepare(root, opts(tmp_path / "out"))


def test_json_record_shapes(tmp_path):
    keyed = tmp_path / "keyed.json"
    keyed.write_text('{\n "u1": {"text": "a"},\n "u2": {"text": "b"}\n}\n')
    rows = list(read_json_records(keyed))
    assert [(r.key, r.line) for r in rows] == [("u1", 2), ("u2", 3)]
    single = tmp_path / "single.json"
    single.write_text('{"wav_path": "x.wav", "text": "hi"}\n')
    assert [r.data["text"] for r in read_json_records(single)] == ["hi"]
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text('{"data": [{"text": "a"}, {"text": "b"}]}')
    assert [r.data["text"] for r in read_json_records(wrapped)] == ["a", "b"]


def test_label_map_files(tmp_path):
    from pyutils.corpora.nvv_text import load_label_map

    y = tmp_path / "m.yaml"
    y.write_text("Giggle: laugh\nSnort: null\nThroat-Clearing: throat clearing\n")
    assert load_label_map(str(y)) == {"giggle": "laugh", "snort": None,
                                      "throat clearing": "throat clearing"}
    bad = tmp_path / "bad.tsv"
    bad.write_text("giggle\tlaugh\nyell\tscream\n")
    with pytest.raises(PrepError, match=r"bad\.tsv:2: label 'yell' maps to 'scream'"):
        load_label_map(str(bad))


def test_command_line_entry_point(tmp_path):
    import subprocess
    import sys

    ok = subprocess.run([sys.executable, "-m", "pyutils.corpora.cli", "mnv17", "--src",
                         str(FIX / "mnv17"), "--out", str(tmp_path / "data")],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "[mnv17/test] wrote 2 of 2 utterances" in ok.stderr
    bad = subprocess.run([sys.executable, "-m", "pyutils.corpora.cli", "mnv17", "--src",
                          str(tmp_path / "nope"), "--out", str(tmp_path / "data")],
                         capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        f"chorus-prep: error: --src {tmp_path / 'nope'} does not exist"]


# --------------------------------------------------------------------- NonVerbalSpeech-38K
def test_nonverbalspeech38k_real_captions(tmp_path):
    """Rows of the published dataset_demos/<label>/<label>.txt (both line forms, <B> overlap markers)."""
    from pyutils.corpora import nonverbalspeech38k

    raw = (FIX / "nonverbalspeech38k/dataset_demos/gasp/gasp.txt").read_text(encoding="utf-8")
    assert "markup '<B>' left in the text" in track1_problems(raw.splitlines()[1].split("|")[1])
    nonverbalspeech38k.prepare(FIX / "nonverbalspeech38k", opts(tmp_path / "a"))
    text = check_dir(tmp_path / "a" / "train")
    assert len(text) == 6 and not any("<" in t or ">" in t for t in text.values())
    assert text["nvs38k_gasp_1"].endswith("take him away. [gasp] What?")  # refined caption, words kept
    assert text["nvs38k_laughing_2"].endswith("随即仰天大笑。[laugh]女娲，你果然厉害呀。")
    assert text["nvs38k_throatclearing_2"] == "我是不是随性过头了？[throat clearing]第一个环节是回忆过去。"
    assert read_kv(tmp_path / "a" / "train" / "utt2lang")["nvs38k_gasp_1"] == "en"
    assert read_kv(tmp_path / "a" / "train" / "utt2overlap")["nvs38k_gasp_1"] == "1"
    # the original captions, clips with spoken words over the NV sound left out
    nonverbalspeech38k.prepare(FIX / "nonverbalspeech38k", opts(tmp_path / "b"), caption="original",
                               overlap="drop_utt")
    text = check_dir(tmp_path / "b" / "train")
    assert sorted(text) == ["nvs38k_gasp_1", "nvs38k_laughing_1", "nvs38k_throatclearing_1",
                            "nvs38k_throatclearing_2"]
    assert text["nvs38k_gasp_1"].startswith("Heya, kids.")
    assert report(tmp_path / "b" / "train")["utterances_dropped"] == {
        "words overlapped by the NV sound (<B>...</B>)": 2}


def test_nonverbalspeech38k_malformed_line_is_named(tmp_path):
    root = _copy(FIX / "nonverbalspeech38k", tmp_path / "nvs")
    path = root / "dataset_demos/gasp/gasp.txt"
    path.write_text(path.read_text(encoding="utf-8") + "3|a|b|c\n", encoding="utf-8")
    with pytest.raises(PrepError, match=r"gasp\.txt:3: expected 'n\|caption' or 'n\|caption\|refined caption'"):
        cli.run(cli.build_parser().parse_args(["nonverbalspeech38k", "--src", str(root), "--out",
                                               str(tmp_path / "o"), "--nj", "1"]))
