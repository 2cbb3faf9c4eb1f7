"""Extra NVV banks from a chorus-prep output with event spans, and real-NVV sets spliced from them
(a fake corpus made here, in the layout ``chorus-prep deeply_nvv`` writes)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pyutils.nvv_detect import devset
from pyutils.synth import nvv_bank, nvv_bank_index

SR = 16000
TAGS = ("cough", "sneeze", "yawn", "sigh")


def fake_prep(root: Path) -> dict:
    """ROOT/{train,dev}/wav.scp + utt2spk, ROOT/events/<split>.jsonl; returns {utt: (split, tag, span)}."""
    made = {}
    for split, n in (("train", 8), ("dev", 3)):
        scp, u2s, ev = [], [], []
        for i in range(n):
            utt, tag = f"S{split[0]}{i}_x", TAGS[i % len(TAGS)]
            x = np.zeros(SR, dtype=np.float32)
            a, b = 0.2 + 0.05 * i, 0.7
            x[int(a * SR):int(b * SR)] = 0.2 * np.sin(np.arange(int(b * SR) - int(a * SR)) / 5)
            wav = root / "audio" / f"{utt}.wav"
            wav.parent.mkdir(parents=True, exist_ok=True)
            sf.write(str(wav), x, SR, subtype="PCM_16")
            scp.append(f"{utt} {wav}\n")
            u2s.append(f"{utt} S{split[0]}{i}\n")
            ev.append(json.dumps({"utt_id": utt, "events": [{"tag": tag, "start": a, "end": b}]}) + "\n")
            made[utt] = (split, tag, (a, b))
        (root / split).mkdir(parents=True)
        (root / split / "wav.scp").write_text("".join(scp))
        (root / split / "utt2spk").write_text("".join(u2s))
        (root / "events").mkdir(exist_ok=True)
        (root / "events" / f"{split}.jsonl").write_text("".join(ev))
    return made


def test_extra_bank_from_prep_is_checked_and_drawn(tmp_path, monkeypatch):
    made = fake_prep(tmp_path / "prep")
    counts = nvv_bank.build_from_prep(tmp_path / "prep", tmp_path / "bank", ["train"])
    assert counts == {t: sum(1 for s, tg, _ in made.values() if s == "train" and tg == t) for t in TAGS}
    idx = nvv_bank_index.load_extra(str(tmp_path / "bank"))
    assert {k[1] for k in idx} == {"train"}
    for (tag, _), rows in idx.items():
        for r in rows:
            split, t, (a, b) = made[r["clip_id"].split("-", 1)[1]]
            assert t == tag and r["talker"].startswith("deeply_nvv:S")
            x, sr = sf.read(r["wav"])
            assert sr == SR and abs(len(x) / SR - (b - a)) < 0.002    # cut to the event span
    # event_sound draws from the extra bank where the installed bank has nothing for the tag
    monkeypatch.setattr(nvv_bank_index, "load_index", lambda d=None: {})
    x, prov = nvv_bank_index.event_sound("sneeze", "train", np.random.default_rng(0), extra=[str(tmp_path / "bank")])
    assert prov["source"] == "recorded" and prov["package"] == "deeply_nvv" and prov["clip"].startswith("deeply_nvv-")
    _, prov = nvv_bank_index.event_sound("sneeze", "dev", np.random.default_rng(0), extra=[str(tmp_path / "bank")])
    assert prov["source"] == "generated"          # train clips only: dev keeps the generated sound
    assert nvv_bank_index.bank_tags("train", extra=[str(tmp_path / "bank")]) == sorted(TAGS)
    # a changed clip is refused
    nvv_bank_index._load_extra.cache_clear()
    wav = Path(idx[("cough", "train")][0]["wav"])
    wav.write_bytes(wav.read_bytes()[:-2])
    with pytest.raises(nvv_bank_index.BankError, match="missing or changed"):
        nvv_bank_index.load_extra(str(tmp_path / "bank"))
    with pytest.raises(nvv_bank_index.BankError, match="not an extra NVV bank"):
        nvv_bank_index.load_extra(str(tmp_path / "prep"))


def test_prep_clips_cut_to_spans(tmp_path):
    made = fake_prep(tmp_path / "prep")
    clips = devset.prep_clips(tmp_path / "prep", "dev")
    assert [c["clip_id"] for c in clips] == sorted(u for u, (s, _, _) in made.items() if s == "dev")
    for c in clips:
        _, tag, (a, b) = made[c["clip_id"]]
        assert c["tag"] == tag and abs(len(c["audio"]) / SR - (b - a)) < 0.002
    with pytest.raises(devset.DevsetError, match="events/test.jsonl"):
        devset.prep_clips(tmp_path / "prep", "test")


def _speech_installed():
    return (devset.speech_dir() / "silero_test.wav").is_file()


@pytest.mark.skipif(not _speech_installed(), reason="real speech not installed (make -C tools real_speech)")
def test_spliced_set_uses_every_clip_with_exact_times(tmp_path):
    fake_prep(tmp_path / "prep")
    clips = devset.prep_clips(tmp_path / "prep", "train")
    utts = devset.build_with_clips("train", clips)
    used = [e["clip"] for u in utts for e in u["events"]]
    assert set(used) == {c["clip_id"] for c in clips}
    assert all(not u["events"] for u in utts if u["utt_id"].endswith("_v000"))
    by_id = {c["clip_id"]: c for c in clips}
    for u in utts:
        assert u["text"].count("[") == len(u["events"])
        for e in u["events"]:
            n = int(round((e["end"] - e["start"]) * SR))
            assert abs(n - len(by_id[e["clip"]]["audio"])) <= 1
            seg = u["audio"][int(round(e["start"] * SR)):int(round(e["end"] * SR))]
            ref = by_id[e["clip"]]["audio"]
            r = np.corrcoef(seg[:len(ref)], ref[:len(seg)])[0, 1]
            assert r > 0.99                      # the clip sits exactly there (scaled)
    devset.write(utts, tmp_path / "out")
    rows = [json.loads(x) for x in (tmp_path / "out" / "events.jsonl").read_text().splitlines()]
    assert len(rows) == len(used)
