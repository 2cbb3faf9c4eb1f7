"""pyutils.synth.nvv_bank and nvv_bank_index: manifest invariants, pinned install, draws in the corpus."""

import json
from collections import defaultdict

import numpy as np
import pytest

from pyutils.synth import nvv_bank as nb
from pyutils.synth import nvv_bank_index as bi
from pyutils.synth.nvv_corpus import plan, render
from pyutils.tags import challenge_tags


def _installed():
    try:
        return bi.load_index()
    except bi.BankError as e:
        pytest.skip(str(e))


def test_manifest_splits_keep_talkers_and_recordings_apart():
    rows = nb.read_manifest()
    used = [r for r in rows if r["status"] == "used"]
    assert len(used) >= 30
    assert all(r["tag"] in challenge_tags() for r in rows)
    split_of_group = defaultdict(set)
    for r in used:
        split_of_group[r["group"]].add(r["split"])
    assert all(len(s) == 1 for s in split_of_group.values())       # a talker group on one side only
    shas = [r["sha256"] for r in used]
    assert len(shas) == len(set(shas))                              # no recording twice
    for tag in {r["tag"] for r in used}:
        groups = {r["group"] for r in used if r["tag"] == tag}
        # every split for a tag of >= 3 talker groups (assign_splits); fewer: train only (snore)
        want = {"train", "dev", "test"} if len(groups) >= 3 else {"train"}
        assert {r["split"] for r in used if r["tag"] == tag} == want, tag
    # effected packs are never used
    assert not any(r["talker"] in ("hedgewars:Robot", "hedgewars:Singer", "openarena:skelebot") for r in used)
    assert all(r["status"].startswith("rejected: ") for r in rows if r["status"] != "used")


def test_assign_splits_gives_every_common_tag_a_test_and_dev_group():
    groups = {"a": {"laugh"}, "b": {"laugh", "cough"}, "c": {"cough"}, "d": {"laugh", "cough"},
              "e": {"gasp"}, "f": {"gasp"}}
    s = nb.assign_splits(groups)
    for tag in ("laugh", "cough"):
        assert {s[g] for g in groups if tag in groups[g]} == {"train", "dev", "test"}
    assert s["e"] == s["f"] == "train"                              # < 3 groups: train only


def test_malformed_manifest_names_file_and_line(tmp_path):
    m = tmp_path / "m.tsv"
    m.write_text("# c\n" + "\t".join(nb.COLUMNS) + "\n" + "x\tlaugh\n")
    with pytest.raises(ValueError, match=f"{m}:3"):
        nb.read_manifest(m)


def test_changed_source_is_refused_naming_package_and_target(tmp_path):
    rows = [r for r in nb.read_manifest() if r["status"] == "used"][:1]
    try:
        nb.read_source(rows[0]["package"], rows[0]["path"])
    except nb.BankError as e:
        pytest.skip(str(e))
    rows[0]["sha256"] = "0" * 64
    m = tmp_path / "m.tsv"
    nb.write_manifest(rows, m)
    with pytest.raises(nb.BankError, match=rf"{rows[0]['package']}.*make -C tools nvv_bank"):
        nb.install(tmp_path / "bank", m)
    assert not (tmp_path / "bank").exists()                        # nothing half-written


def test_event_sound_draws_from_its_split_deterministically():
    idx = _installed()
    test_ids = {c["clip_id"] for c in idx[("laugh", "test")]}
    got = set()
    for s in range(20):
        x, prov = bi.event_sound("laugh", "test", np.random.default_rng(s))
        y, prov2 = bi.event_sound("laugh", "test", np.random.default_rng(s))
        assert np.array_equal(x, y) and prov == prov2
        assert prov["source"] == "recorded" and prov["clip"] in test_ids
        assert prov["licence"] and prov["package"] and prov["file"]
        assert 0.05 < np.abs(x).max() < 1.0
        got.add(prov["clip"])
    assert len(got) > 1
    x, prov = bi.event_sound("yawn", "test", np.random.default_rng(0))
    assert prov == {"source": "generated"} and len(x) > 0


def test_corpus_events_carry_their_source(tmp_path):
    _installed()
    items = plan("en", {"train": 6, "dev": 2, "test": 8}, 2, seed=3, nvv_sounds="bank")
    old = plan("en", {"train": 6, "dev": 2, "test": 8}, 2, seed=3)
    assert all("nvv_sounds" not in it for it in old)               # the generated corpus plans as before
    assert [it["events"] for it in items] == [it["events"] for it in old]
    (tmp_path / "wav").mkdir()
    bank_tags = {t for (t, s) in bi.load_index() if s == "test"}
    n = defaultdict(int)
    for it in items:
        if it["split"] != "test":
            continue
        meta = render(it, str(tmp_path))
        for e in meta["events"]:
            assert e["source"] == ("recorded" if e["tag"] in bank_tags else "generated")
            n[e["source"]] += 1
        json.dumps(meta)
    assert sum(n.values()) > 0


def test_bank_weight_sets_the_recorded_share():
    idx = _installed()
    sizes = {"train": 400, "dev": 0, "test": 100}
    for weight, lo, hi in ((1, 0.25, 0.38), (4, 0.58, 0.72)):
        items = plan("en", sizes, 4, seed=1, nvv_sounds="bank", bank_weight=weight)
        evs = [(e["tag"], it["split"]) for it in items for e in it["events"]]
        share = sum(bool(idx.get(k)) for k in evs) / len(evs)
        assert lo < share < hi, (weight, share)
        assert {t for t, _ in evs} == set(challenge_tags())          # every tag still drawn


def test_missing_or_damaged_bank_stops_the_corpus_with_the_make_target(tmp_path, monkeypatch, capsys):
    import shutil

    from pyutils.synth import cli

    monkeypatch.setenv("CHORUS_NVV_BANK_DIR", str(tmp_path / "none"))
    assert cli.main(["nvv", "--preset", "ci", "--out", str(tmp_path / "c")]) == 2
    assert "make -C tools nvv_bank" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()
    monkeypatch.delenv("CHORUS_NVV_BANK_DIR")
    _installed()
    bank = tmp_path / "bank"
    shutil.copytree(bi.default_dir(), bank)
    victim = sorted(bank.glob("*.wav"))[0]
    victim.write_bytes(victim.read_bytes()[:-100])
    with pytest.raises(bi.BankError, match=f"{victim.name}.*make -C tools nvv_bank"):
        bi.load_index(str(bank))
