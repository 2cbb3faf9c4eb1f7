"""chorus-prep on the forms the corpora are really published in: rows copied from
the public releases (tests/fixtures/corpora/*/SOURCE.md says where from), HF
parquet / save_to_disk tables, WebDataset shards, flat Track 1 layouts, and the
malformed-row policy. Audio is generated here (tiny tones), not committed."""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pyutils.corpora import cli
from pyutils.corpora.common import PrepError
from pyutils.corpora.nvv_text import track1_problems
from pyutils.corpora.prep import Options

FIX = Path(__file__).parent / "fixtures" / "corpora"


def tone(path: Path, sr: int = 16000, seconds: float = 0.2, fmt: str = "WAV") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(sr * seconds)) / sr
    sf.write(str(path), 0.3 * np.sin(2 * np.pi * 440 * t), sr, format=fmt)
    return path


def tone_bytes(sr: int = 16000) -> bytes:
    buf = io.BytesIO()
    t = np.arange(int(sr * 0.2)) / sr
    sf.write(buf, 0.3 * np.sin(2 * np.pi * 300 * t), sr, format="WAV")
    return buf.getvalue()


def read_kv(path: Path) -> dict:
    return dict(line.split(" ", 1) for line in path.read_text(encoding="utf-8").splitlines())


def report(d: Path) -> dict:
    return json.loads((d / "prep_report.json").read_text(encoding="utf-8"))


def opts(out: Path, **kw) -> Options:
    kw.setdefault("nj", 1)
    return Options(out=out, **kw)


def wav_paths(d: Path) -> list:
    out = []
    for rx in read_kv(d / "wav.scp").values():
        out.append(rx if not rx.endswith("|") else rx.split(" -i ")[1].split()[0])
    return out


# --------------------------------------------------------------------- generic
def test_challenge_sample_list_headerless_with_aliases(tmp_path, capsys):
    """The organisers' own assets/nv_samples/asr.txt, rows verbatim."""
    src = tmp_path / "samples"
    src.mkdir()
    shutil.copy(FIX / "challenge_samples" / "asr.txt", src / "asr.txt")
    for line in (src / "asr.txt").read_text(encoding="utf-8").splitlines():
        name = line.split("\t")[0]
        tone(src / name, 16000 if name.endswith(".wav") else 24000,
             fmt="WAV" if name.endswith(".wav") else "MP3")
    rc = cli.main(["generic", "--src", str(src / "asr.txt"), "--out", str(tmp_path / "data"),
                   "--nj", "1"])
    assert rc == 0, capsys.readouterr().err
    d = tmp_path / "data" / "train"
    texts = read_kv(d / "text")
    assert texts["sniff"] == "走进新装修好的房子，[sniff]有一股淡淡的油漆味和木头的味道。"
    assert texts["throatclearing"].startswith("[throat clearing]听他的先休息去吧")
    # [clap] is not a challenge tag: dropped (the organisers' labels page drops it too)
    assert texts["lipsmack"] == ("我敢发誓我眼睛都没眨，那条手帕就在他手里变成了一只白鸽，"
                                 "这手法[lipsmack]简直是艺术。")
    assert texts["hum"] == "[hum], 又学会了一首新的吉他曲子，真有成就感。"
    assert all(track1_problems(t) == [] for t in texts.values())
    assert read_kv(d / "utt2lang")["moan"] == "zh"
    rep = report(d)
    assert rep["aliases"] == {"clap -> dropped": 1, "sniffl -> sniff": 1,
                              "throatclearing -> throat clearing": 1}
    assert rep["labels_aliased"] == 3 and rep["tags_dropped_no_counterpart"] == {"clap": 1}
    log = (tmp_path / "data" / "prep.log").read_text(encoding="utf-8")
    assert "aliased 3" in log and "sniffl -> sniff: 1" in log


def test_headerless_line_without_tab_is_named(tmp_path):
    from pyutils.corpora import generic

    lst = tmp_path / "asr.txt"
    lst.write_text("a.wav\thello [laugh]\nb.wav hello\n", encoding="utf-8")
    with pytest.raises(PrepError, match=r"asr\.txt:2: expected 2 columns '<audio><TAB><text>', got 1"):
        generic.prepare(lst, opts(tmp_path / "out"))


# --------------------------------------------------------------------- MNV-17
def test_mnv17_real_rows_and_punctuation_debris(tmp_path):
    from pyutils.corpora import mnv17

    root = tmp_path / "mnv17"
    root.mkdir()
    shutil.copy(FIX / "mnv17_real" / "test.jsonl", root / "test.jsonl")
    for line in (root / "test.jsonl").read_text(encoding="utf-8").splitlines():
        tone(root / json.loads(line)["audio"], 44100)
    mnv17.prepare(root, opts(tmp_path / "out"))
    d = tmp_path / "out" / "test"
    texts = read_kv(d / "text")
    assert texts["speaker_F_02_ahem_00"] == "[throat clearing]实际上，根据公司的规定，这个流程是不被允许的。"
    assert texts["speaker_F_03_applaud_00"] == "他居然想用一根牙签撬开门锁，这想法真是天才。"
    assert texts["speaker_F_03_clap_01"] == "为了所有为这个项目付出努力的同事们！"
    assert texts["speaker_F_02_chuckle_clap_00"] == (
        "我家孩子今天搭的积木城堡还真挺像样的，就是他非说那个歪掉的塔是比萨斜塔[laugh]，"
        "这小脑袋瓜还挺会找理由。")
    assert "[lipsmack]" in texts["speaker_F_02_chuckle_hum_smack_00"]
    assert read_kv(d / "utt2spk")["speaker_F_03_clap_01"] == "speaker_F_03"
    rep = report(d)
    assert rep["tags_dropped_no_counterpart"] == {"applaud": 1, "clap": 2}
    assert rep["labels_mapped"] == 5 and rep["labels_dropped"] == 3


# --------------------------------------------------------------------- NV-Bench
def test_nvbench_dict_json_keyed_by_wav_path(tmp_path):
    """The dict form data/loader.py load_benchmark accepts: {wav_path: {...}}."""
    from pyutils.corpora import nvbench

    root = tmp_path / "nvb"
    tone(root / "zh" / "a.mp3", 24000, fmt="MP3")
    tone(root / "zh" / "p.mp3", 24000, fmt="MP3")
    (root / "zh_single.json").write_text(json.dumps({
        "zh/a.mp3": {"text": "今天很开心[Laughter]", "ref_wav_path": "zh/p.mp3",
                     "ref_text": "你好。", "target_wav_path": "a.wav", "category": "Laughter"},
    }, ensure_ascii=False, indent=1), encoding="utf-8")
    nvbench.prepare(root, opts(tmp_path / "out"))
    d = tmp_path / "out" / "zh_single"
    assert read_kv(d / "text") == {"a": "今天很开心[laugh]"}
    assert read_kv(d / "utt2ref_wav")["a"] == str((root / "zh" / "p.mp3").resolve())


def test_nvbench_hf_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from pyutils.corpora import nvbench

    shard = tmp_path / "hf" / "en_multi" / "test-00000-of-00001.parquet"
    shard.parent.mkdir(parents=True)
    table = pa.table({
        "audio": [{"bytes": tone_bytes(24000), "path": "en_multi_0001.wav"}],
        "prompt_audio": [{"bytes": tone_bytes(24000), "path": "p.wav"}],
        "text": ["[Sigh] I am so tired [Laughter], really [Uhm]."],
        "prompt_text": ["Hello there."], "category": ["Sigh"], "type": ["multi"],
    })
    pq.write_table(table, shard)
    nvbench.prepare(tmp_path / "hf", opts(tmp_path / "out"))
    d = tmp_path / "out" / "en_multi"
    assert read_kv(d / "text") == {"en_multi_0001": "[sigh] I am so tired [laugh], really."}
    assert read_kv(d / "utt2ref_text") == {"en_multi_0001": "Hello there."}
    ref = Path(read_kv(d / "utt2ref_wav")["en_multi_0001"])
    assert ref.is_absolute() and ref.is_file()
    assert read_kv(d / "utt2lang") == {"en_multi_0001": "en"}


# --------------------------------------------------------------------- Emilia-NV
def _wds_shard(path: Path, samples: list) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tf:
        for key, meta, audio in samples:
            for name, data in ((f"{key}.json", json.dumps(meta, ensure_ascii=False).encode()),
                               (f"{key}.mp3", audio)):
                if data is None:
                    continue
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))


def test_emilia_nv_webdataset_shards(tmp_path):
    from pyutils.corpora import emilia_nv

    mp3 = (FIX / "emilia_nv/ZH_B00000/ZH_B00000_S00010/mp3/ZH_B00000_S00010_W000001.mp3").read_bytes()
    shard = tmp_path / "Emilia-NV" / "webdataset-000000.tar"
    _wds_shard(shard, [
        ("000000_000001", {"id": "ZH_B00000_S00010_W000001", "text": "你好[Laughter]我们走吧[Shh]",
                           "speaker": "ZH_B00000_S00010", "language": "zh"}, mp3),
        ("000000_000002", {"text": "真的吗(Surprise-oh)太好了[Breathing]",
                           "speaker": "ZH_B00000_S00011"}, mp3),
    ])
    out = tmp_path / "out"
    emilia_nv.prepare(tmp_path / "Emilia-NV", opts(out))
    d = out / "train"
    assert read_kv(d / "text") == {"ZH_B00000_S00010_W000001": "你好[laugh]我们走吧",
                                   "ZH_B00000_S00011-000000_000002": "真的吗太好了[breath]"}
    extracted = sorted(p.name for p in (out / "emilia_nv_audio" / "webdataset-000000").iterdir())
    assert extracted == ["000000_000001.mp3", "000000_000002.mp3"]
    assert all(rx.startswith("ffmpeg ") for rx in read_kv(d / "wav.scp").values())
    assert all(Path(p).is_absolute() for p in wav_paths(d))


def test_emilia_nv_shard_problems_are_named(tmp_path):
    from pyutils.corpora import emilia_nv

    mp3 = (FIX / "emilia_nv/ZH_B00000/ZH_B00000_S00010/mp3/ZH_B00000_S00010_W000001.mp3").read_bytes()
    shard = tmp_path / "em" / "webdataset-000001.tar"
    _wds_shard(shard, [("k1", {"text": "好[Laughter]"}, mp3), ("k2", {"text": "没有音频"}, None),
                       ("k3", {"text": ["not", "text"]}, mp3)])
    with pytest.raises(PrepError, match=r"webdataset-000001\.tar:2: sample 'k2' has no audio"):
        emilia_nv.prepare(tmp_path / "em", opts(tmp_path / "o1"))
    emilia_nv.prepare(tmp_path / "em", opts(tmp_path / "o2", on_bad_row="skip"))
    rep = report(tmp_path / "o2" / "train")
    assert rep["utterances_written"] == 1
    assert rep["utterances_dropped"] == {"bad row (skipped)": 2}
    assert "should be text" in rep["drop_examples"]["bad row (skipped)"][1]
    # a truncated shard is an error naming it, not a traceback
    bad = tmp_path / "trunc" / "webdataset-000002.tar"
    bad.parent.mkdir()
    bad.write_bytes(shard.read_bytes()[:700])
    with pytest.raises(PrepError, match=r"webdataset-000002\.tar"):
        emilia_nv.prepare(tmp_path / "trunc", opts(tmp_path / "o3"))


# --------------------------------------------------------------------- Track 1 test
def test_track1_flat_layout_language_from_id(tmp_path):
    from pyutils.corpora import track1_test

    root = tmp_path / "t1"
    for name in ("zh_0001.wav", "zh_0002.wav", "en_0001.wav"):
        tone(root / name)
    track1_test.prepare(root, opts(tmp_path / "out"))
    assert sorted(read_kv(tmp_path / "out" / "test_zh" / "wav.scp")) == ["zh_0001", "zh_0002"]
    assert read_kv(tmp_path / "out" / "test_en" / "utt2lang") == {"en_0001": "en"}


def test_track1_parquet_layout(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from pyutils.corpora import track1_test

    shard = tmp_path / "hf" / "data" / "test-00000-of-00001.parquet"
    shard.parent.mkdir(parents=True)
    pq.write_table(pa.table({"audio": [{"bytes": tone_bytes(), "path": "zh_0001.wav"},
                                       {"bytes": tone_bytes(), "path": "en_0007.wav"}]}), shard)
    track1_test.prepare(tmp_path / "hf", opts(tmp_path / "out"))
    assert list(read_kv(tmp_path / "out" / "test_zh" / "wav.scp")) == ["zh_0001"]
    assert list(read_kv(tmp_path / "out" / "test_en" / "wav.scp")) == ["en_0007"]


# --------------------------------------------------------------------- SMIIP-NV
def test_smiip_nv_closing_emotion_tokens_do_not_leak(tmp_path):
    from pyutils.corpora import smiip_nv

    root = tmp_path / "smiip"
    tone(root / "MIC-0003" / "happy" / "MIC-0003_0007.wav", 24000)
    (root / "MIC-0003" / "happy" / "annotation.txt").write_text(
        "MIC-0003_0007.wav\t<|emo_HAPPY|>哈哈<laughter>今天真好</|emo_HAPPY|>\n", encoding="utf-8")
    smiip_nv.prepare(root, opts(tmp_path / "out"))
    d = tmp_path / "out" / "train"
    assert read_kv(d / "text") == {"MIC-0003_0007": "哈哈[laugh]今天真好"}
    ref = (d / "ref.jsonl").read_text(encoding="utf-8")
    assert "emo_" not in ref and "<|" not in ref
    assert track1_problems("好</|emo_HAPPY|>")  # the checker would have caught a leak


# --------------------------------------------------------------------- NonverbalTTS
def test_nonverbaltts_save_to_disk_index_with_slash_and_relative_out(tmp_path, monkeypatch):
    pa = pytest.importorskip("pyarrow")
    from pyutils.corpora import nonverbaltts

    split_dir = tmp_path / "nvtts" / "train"
    split_dir.mkdir(parents=True)
    table = pa.table({
        "index": ["ex04/happy_0001", "id10001/x 2"],
        "audio": [{"bytes": tone_bytes(), "path": None}, {"bytes": tone_bytes(), "path": None}],
        "Result": ["so 😫 tired 👊 okay 👄", "listen 👂 here 😩"],
        "speaker_id": ["ex04", "id10001"], "Emotion": ["sad", "neutral"],
    })
    with pa.OSFile(str(split_dir / "data-00000-of-00001.arrow"), "wb") as sink:
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    (split_dir / "state.json").write_text('{"_data_files": [{"filename": "data-00000-of-00001.arrow"}]}')
    (split_dir / "dataset_info.json").write_text("{}")
    (tmp_path / "nvtts" / "dataset_dict.json").write_text('{"splits": ["train"]}')
    monkeypatch.chdir(tmp_path)
    rc = cli.main(["nonverbaltts", "--src", "nvtts", "--out", "data", "--nj", "1"])
    assert rc == 0
    d = tmp_path / "data" / "train"
    texts = read_kv(d / "text")
    assert texts == {"ex04_happy_0001": "so [moan] tired okay [throat clearing]",
                     "id10001_x_2": "listen here"}
    assert all(os.path.isabs(p) and Path(p).is_file() for p in wav_paths(d))
    assert report(d)["tags_dropped_no_counterpart"] == {
        "emoji ear": 1, "emoji weary face": 1, "grunting": 1}


# --------------------------------------------------------------------- policy
def test_on_bad_row_skip_counts_and_error_names_row(tmp_path, capsys):
    root = tmp_path / "m"
    root.mkdir()
    shutil.copy(FIX / "mnv17_real" / "test.jsonl", root / "test.jsonl")
    for line in (root / "test.jsonl").read_text(encoding="utf-8").splitlines():
        tone(root / json.loads(line)["audio"])
    with open(root / "test.jsonl", "a", encoding="utf-8") as f:
        f.write('{"audio": 12, "txt": {"a": 1}}\n{"txt": "没有音频[cough]"}\n'
                '{"audio": "x.wav", "txt": "坏标签[giggle]"}\n')
    rc = cli.main(["mnv17", "--src", str(root), "--out", str(tmp_path / "a"), "--nj", "1"])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"chorus-prep: error: {root / 'test.jsonl'}:6: field")
    rc = cli.main(["mnv17", "--src", str(root), "--out", str(tmp_path / "b"), "--nj", "1",
                   "--on-bad-row", "skip"])
    assert rc == 0
    rep = report(tmp_path / "b" / "test")
    assert rep["utterances_written"] == 5
    assert rep["utterances_dropped"] == {"bad row (skipped)": 3}
    assert "prep.log" in os.listdir(tmp_path / "b")
