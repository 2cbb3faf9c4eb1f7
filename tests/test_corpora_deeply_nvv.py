"""chorus-prep deeply_nvv on a small fake corpus in the published layout (generated here)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pyutils.corpora import cli
from pyutils.corpora.deeply_nvv import CLASSES, active_span

SR = 16000
TAGGED = {"coughing": "cough", "panting": "breath", "throat-clearing": "throat clearing",
          "lip-smacking": "lipsmack", "yawning": "yawn"}
UNTAGGED = ("screaming", "teeth-grinding")
BURST = (0.30, 0.62)   # where each fake clip's sound is, seconds


def clip(seed: int, dur: float = 1.0, burst=BURST) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = 0.0005 * rng.standard_normal(int(dur * SR))       # noise floor, -66 dBFS
    a, b = int(burst[0] * SR), int(burst[1] * SR)
    t = np.arange(b - a) / SR
    x[a:b] += 0.3 * np.sin(2 * np.pi * (180 + 20 * seed % 7) * t) * np.hanning(b - a) ** 0.2
    return x.astype(np.float32)


def make_corpus(root: Path, n_speakers: int = 40) -> dict:
    """ROOT/dataset/<class>/<spk>_<cls>_<trial>_<sex>_<age>_0_0_0.wav + the metadata JSON;
    returns {utt: (speaker, class)}."""
    ds = root / "dataset"
    meta, made = {}, {}
    for i in range(n_speakers):
        spk = f"S{i:03d}"
        classes = [c for j, c in enumerate(list(TAGGED) + list(UNTAGGED)) if (i + j) % 3 != 0]
        meta[spk] = {"sex": "Male" if i % 2 else "Female", "age": 20 + i, "class": classes}
        for c in classes:
            name = f"{spk}_{CLASSES.index(c)}_1_{i % 2}_{20 + i}_0_0_0"
            (ds / c).mkdir(parents=True, exist_ok=True)
            sf.write(str(ds / c / f"{name}.wav"), clip(i), SR, subtype="PCM_16")
            made[name] = (spk, c)
    (ds / "Nonverbal_Vocalization_metadata.json").write_text(json.dumps(meta), encoding="utf-8")
    return made


def read_kv(path: Path) -> dict:
    return dict(line.split(" ", 1) for line in path.read_text(encoding="utf-8").splitlines())


def expected_split(spk: str) -> str:
    u = int(hashlib.sha256(spk.encode()).hexdigest()[:8], 16) / 2 ** 32
    return "train" if u < 0.7 else "dev" if u < 0.8 else "test"


def test_prepare_splits_by_speaker_tags_and_events(tmp_path, capsys):
    made = make_corpus(tmp_path / "src")
    assert cli.main(["deeply_nvv", "--src", str(tmp_path / "src"), "--out", str(tmp_path / "data"),
                     "--nj", "1"]) == 0
    seen = {}
    for split in ("train", "dev", "test"):
        d = tmp_path / "data" / split
        text, u2s = read_kv(d / "text"), read_kv(d / "utt2spk")
        assert set(text) == set(read_kv(d / "wav.scp")) == set(u2s)
        for utt, t in text.items():
            spk, c = made[utt]
            assert u2s[utt] == spk and expected_split(spk) == split
            assert t == f"[{TAGGED[c]}]"
            assert read_kv(d / "utt2class")[utt] == c
            seen[utt] = split
        rows = [json.loads(x) for x in (tmp_path / "data" / "events" / f"{split}.jsonl").read_text().splitlines()]
        assert [r["utt_id"] for r in rows] == sorted(text)
        for r in rows:
            (ev,) = r["events"]
            assert f"[{ev['tag']}]" == text[r["utt_id"]]
            assert abs(ev["start"] - (BURST[0] - 0.05)) < 0.04 and abs(ev["end"] - (BURST[1] + 0.05)) < 0.04, ev
        rep = json.loads((d / "prep_report.json").read_text())
        assert rep["speakers"] == len(set(u2s.values()))
        assert sum(rep["events"].values()) == len(text)
        # the untagged classes are dropped with a count per class
        n_untagged = sum(1 for u, (s, c) in made.items() if c in UNTAGGED and expected_split(s) == split)
        assert sum(rep["tags_dropped_no_counterpart"].values()) == n_untagged
    assert set(seen) == {u for u, (_, c) in made.items() if c in TAGGED}
    # every split has speakers; no speaker in two splits (all 40 land somewhere, by hash)
    by_split = {s: {made[u][0] for u, sp in seen.items() if sp == s} for s in ("train", "dev", "test")}
    assert all(by_split.values())
    assert not (by_split["train"] & by_split["dev"] or by_split["train"] & by_split["test"]
                or by_split["dev"] & by_split["test"])
    assert not (tmp_path / "data" / "train_none").exists()


def test_untagged_kept_as_negatives_and_splits_option(tmp_path):
    made = make_corpus(tmp_path / "src", n_speakers=12)
    assert cli.main(["deeply_nvv", "--src", str(tmp_path / "src" / "dataset"), "--out", str(tmp_path / "o"),
                     "--untagged", "keep", "--splits", "train", "--speaker-split", "100,0,0"]) == 0
    assert not (tmp_path / "o" / "dev").exists() and not (tmp_path / "o" / "test").exists()
    neg = tmp_path / "o" / "train_none"
    assert not (neg / "text").exists()
    assert set(read_kv(neg / "wav.scp")) == {u for u, (_, c) in made.items() if c in UNTAGGED}
    assert set(read_kv(neg / "utt2class").values()) == set(UNTAGGED)
    assert set(read_kv(tmp_path / "o" / "train" / "text")) == {u for u, (_, c) in made.items() if c in TAGGED}


def test_bad_names_are_errors_naming_the_file(tmp_path, capsys):
    make_corpus(tmp_path / "src", n_speakers=3)
    bad = tmp_path / "src" / "dataset" / "coughing" / "S000_12_1_0_20_0_0_0.wav"   # class 12 = laughing
    sf.write(str(bad), clip(0), SR)
    assert cli.main(["deeply_nvv", "--src", str(tmp_path / "src"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: class field 12 (laughing) disagrees with the folder coughing" in err
    # skipped and counted with --on-bad-row skip
    assert cli.main(["deeply_nvv", "--src", str(tmp_path / "src"), "--out", str(tmp_path / "o"),
                     "--on-bad-row", "skip"]) == 0
    bad.unlink()
    (tmp_path / "src" / "dataset" / "coughing" / "notaname.wav").write_bytes(b"")
    assert cli.main(["deeply_nvv", "--src", str(tmp_path / "src"), "--out", str(tmp_path / "o")]) == 2
    assert "notaname.wav: file name is not <speaker>_<class>_" in capsys.readouterr().err
    (tmp_path / "src" / "dataset" / "coughing" / "notaname.wav").unlink()
    (tmp_path / "src" / "dataset" / "humming").mkdir()
    assert cli.main(["deeply_nvv", "--src", str(tmp_path / "src"), "--out", str(tmp_path / "o")]) == 2
    assert "humming: not one of the 16 Deeply NVV class folders" in capsys.readouterr().err
    assert cli.main(["deeply_nvv", "--src", str(tmp_path), "--out", str(tmp_path / "o2"),
                     "--speaker-split", "70,30"]) == 2


@pytest.mark.parametrize("burst", [(0.1, 0.2), (0.5, 1.4)])
def test_active_span_rule(burst):
    x = clip(3, dur=1.5, burst=burst)
    s, e = active_span(x, SR)
    assert abs(s - max(0.0, burst[0] - 0.05)) < 0.04 and abs(e - min(1.5, burst[1] + 0.05)) < 0.04
    # a flat clip (no 6 dB above its floor) spans the whole clip
    flat = 0.1 * np.random.default_rng(0).standard_normal(SR)
    assert active_span(flat, SR) == (0.0, 1.0)
