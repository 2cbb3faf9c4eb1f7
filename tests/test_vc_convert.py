"""VC conversion output format, speaker-embedding glue and data prep helpers."""

import os

import numpy as np
import pytest
import soundfile as sf

from pyutils.vc import convert as C
from pyutils.vc import prep as PR
from pyutils.vc import spk_embed as S


def _pair_table(tmp_path, ids):
    src = tmp_path / "src.wav"
    sf.write(src, np.zeros(1600, np.float32), 16000)
    table = tmp_path / "pairs.tsv"
    table.write_text("".join(f"{i}\t{src}\t{src}\t{i}.wav\n" for i in ids), encoding="utf-8")
    return str(table)


def test_outputs_are_16k_mono_pcm16_named_by_pairs(tmp_path):
    table = _pair_table(tmp_path, ["pair_a", "pair_b"])
    tts = tmp_path / "tts"
    tts.mkdir()
    t = np.arange(22050) / 22050
    stereo = np.stack([1.5 * np.sin(2 * np.pi * 200 * t), np.zeros_like(t)], axis=1)  # clipping, 2 ch
    for pid in ("pair_a", "pair_b"):
        sf.write(tts / f"{pid}.wav", stereo.astype(np.float32), 22050, subtype="FLOAT")
    out = tmp_path / "out"
    assert C.main(["--pairs", table, "--tts-dir", str(tts), "--out", str(out)]) == 0
    assert sorted(os.listdir(out)) == ["pair_a.wav", "pair_b.wav"]
    info = sf.info(str(out / "pair_a.wav"))
    assert (info.samplerate, info.channels, info.subtype, info.format) == (16000, 1, "PCM_16", "WAV")
    assert abs(info.frames - 16000) <= 2
    y, _ = sf.read(str(out / "pair_a.wav"))
    assert np.max(np.abs(y)) <= 0.991       # peak-limited, not clipped


def test_missing_tts_outputs_reported_together(tmp_path, capsys):
    table = _pair_table(tmp_path, ["p1", "p2", "p3"])
    tts = tmp_path / "tts"
    tts.mkdir()
    sf.write(tts / "p2.wav", np.zeros(160, np.float32), 16000)
    assert C.main(["--pairs", table, "--tts-dir", str(tts), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "2 TTS output(s) missing: p1 p3" in err
    assert not (tmp_path / "o").exists()


def test_empty_or_silent_tts_outputs_refused_by_pair(tmp_path, capsys):
    table = _pair_table(tmp_path, ["p1", "p2", "p3"])
    tts = tmp_path / "tts"
    tts.mkdir()
    t = np.arange(16000) / 16000
    sf.write(tts / "p1.wav", (0.3 * np.sin(2 * np.pi * 150 * t)).astype(np.float32), 16000)
    sf.write(tts / "p2.wav", np.zeros(0, np.float32), 16000)
    sf.write(tts / "p3.wav", np.zeros(16000, np.float32), 16000)
    assert C.main(["--pairs", table, "--tts-dir", str(tts), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "2 TTS output(s) unusable" in err
    assert "p2: empty (0 samples)" in err and "p3: silent" in err and "p1:" not in err
    assert not (tmp_path / "o").exists()


def test_pitch_shift_moves_f0():
    sr = 16000
    t = np.arange(sr) / sr
    x = (0.3 * np.sign(np.sin(2 * np.pi * 120 * t))).astype(np.float32)
    y = C.pitch_shift(x, 12.0, sr)
    spec = np.abs(np.fft.rfft(y * np.hanning(len(y))))
    assert abs(np.argmax(spec[50:]) + 50 - 240) < 12   # fundamental near 240 Hz


def test_valid_trials_balanced_and_eer(tmp_path):
    u2s = {f"s{s}_u{u}": f"s{s}" for s in range(4) for u in range(3)}
    trials = S.valid_trials(u2s, 40, seed=1)
    labels = [lab for _, _, lab in trials]
    assert len(trials) == 40 and sum(labels) == 12   # only 12 distinct same-speaker pairs exist
    assert all((u2s[a] == u2s[b]) == bool(lab) for a, b, lab in trials)
    # embeddings: one direction per speaker -> perfect separation (EER 0)
    rng = np.random.default_rng(0)
    base = {f"s{s}": rng.normal(size=8) for s in range(4)}
    emb = {u: base[s] + 0.01 * rng.normal(size=8) for u, s in u2s.items()}
    np.savez(tmp_path / "e.npz", **emb)
    lab = tmp_path / "trial_label"
    lab.write_text("".join(f"{a}*{b} {l}\n" for a, b, l in trials))
    eer, n = S.eer(str(tmp_path / "e.npz"), str(lab))
    assert n == 40 and eer == 0.0


def test_npz_to_kaldi_ark(tmp_path):
    import kaldiio

    emb = {"u1": np.array([[3.0, 4.0], [3.0, 4.0]]), "u2": np.array([0.0, 2.0])}  # per-segment + flat
    np.savez(tmp_path / "e.npz", **emb)
    data = tmp_path / "data"
    data.mkdir()
    (data / "utt2spk").write_text("u1 A\nu2 A\n")
    n_utt, n_spk = S.to_ark(str(tmp_path / "e.npz"), str(data), str(tmp_path / "xv"))
    assert (n_utt, n_spk) == (2, 1)
    xv = kaldiio.load_scp(str(tmp_path / "xv" / "xvector.scp"))
    np.testing.assert_allclose(xv["u1"], [0.6, 0.8], rtol=1e-6)
    spk = kaldiio.load_scp(str(tmp_path / "xv" / "spk_xvector.scp"))["A"]
    assert np.linalg.norm(spk) == pytest.approx(1.0, rel=1e-5)
    (data / "utt2spk").write_text("u1 A\nu3 B\n")
    with pytest.raises(KeyError, match="u3"):
        S.to_ark(str(tmp_path / "e.npz"), str(data), str(tmp_path / "xv2"))


def test_holdout_keeps_every_speaker():
    u2s = {f"{s}_{i}": s for s in ("a", "b") for i in range(6)}
    u2s.update({"c_0": "c", "c_1": "c"})   # too few utterances: stays in train only
    train, dev = PR.holdout(u2s, 2)
    assert sorted(dev) == ["a_4", "a_5", "b_4", "b_5"]
    assert {u2s[u] for u in train} == {"a", "b", "c"}
    assert not set(train) & set(dev)


def test_tts_dir_joins_text_and_embeddings(tmp_path):
    (tmp_path / "text").write_text("p1 một hai\np2\np3 ba\n", encoding="utf-8")
    (tmp_path / "utt2spk").write_text("p1 p1\np2 p2\np3 p3\n")
    (tmp_path / "xv.scp").write_text("p1 ark:1\np2 ark:2\n")
    n = PR.tts_dir(str(tmp_path / "text"), str(tmp_path / "utt2spk"), str(tmp_path / "xv.scp"),
                   str(tmp_path / "out"))
    assert n == (1, [])   # training set: p2 has no text, p3 no embedding, both left out
    assert (tmp_path / "out" / "spk_embed.scp").read_text() == "p1 ark:1\n"


def _pairs_tts_inputs(tmp_path, text, emb):
    (tmp_path / "text").write_text(text, encoding="utf-8")
    (tmp_path / "utt2spk").write_text("p1 p1\np2 p2\np3 p3\n")
    (tmp_path / "xv.scp").write_text(emb)
    return [str(tmp_path / f) for f in ("text", "utt2spk", "xv.scp")]


def test_tts_dir_strict_names_pairs_without_embedding(tmp_path, capsys):
    args = _pairs_tts_inputs(tmp_path, "p1 một\np2 hai\np3 ba\n", "p1 ark:1\np2 ark:2\n")
    with pytest.raises(ValueError, match=r"no speaker embedding for 1 of 3 .*: p3$"):
        PR.tts_dir(*args, str(tmp_path / "out"), strict=True, empty_text="a")
    rc = PR.main(["tts-dir", "--text", args[0], "--utt2spk", args[1], "--embed", args[2],
                  "--out", str(tmp_path / "out"), "--strict"])
    assert rc == 2 and "p3" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_tts_dir_strict_empty_transcript_error_or_counted_fallback(tmp_path, capsys):
    args = _pairs_tts_inputs(tmp_path, "p1 một\np2\n", "p1 ark:1\np2 ark:2\np3 ark:3\n")
    with pytest.raises(ValueError, match=r"empty or missing transcript for 2 of 3 .*: p2 p3$"):
        PR.tts_dir(*args, str(tmp_path / "out"), strict=True)
    rc = PR.main(["tts-dir", "--text", args[0], "--utt2spk", args[1], "--embed", args[2],
                  "--out", str(tmp_path / "out"), "--strict", "--empty-text", "a"])
    assert rc == 0
    assert "2 of 3 utterances had an empty transcript" in capsys.readouterr().err
    assert (tmp_path / "out" / "text").read_text(encoding="utf-8") == "p1 một\np2 a\np3 a\n"
    assert (tmp_path / "out" / "empty_text_fallback").read_text() == "p2 a\np3 a\n"


def test_frontend_safe_removes_brackets_and_other_scripts():
    assert PR.frontend_safe("xin chào", "vi") == ("xin chào", "")
    clean, removed = PR.frontend_safe("xin [chào] 你好 bạn", "vi")
    assert clean == "xin chào bạn"
    assert set(removed) == {"[", "]", "你", "好"}


def test_tts_dir_lang_cleans_asr_text_and_counts_it(tmp_path, capsys):
    # a garbled source: the ASR (e.g. a pretrained one, task 1) wrote a bracket and letters
    # of another script; one pair keeps nothing readable and gets the placeholder
    args = _pairs_tts_inputs(tmp_path, "p1 một\np2 hai [noise\np3 你好\n",
                             "p1 ark:1\np2 ark:2\np3 ark:3\n")
    rc = PR.main(["tts-dir", "--text", args[0], "--utt2spk", args[1], "--embed", args[2],
                  "--out", str(tmp_path / "out"), "--strict", "--empty-text", "a", "--lang", "vi"])
    assert rc == 0
    err = capsys.readouterr().err
    assert "2 of 3 transcripts had characters the vi TTS front-end cannot read" in err
    assert "1 of 3 utterances had an empty transcript" in err and "p3" in err
    assert (tmp_path / "out" / "text").read_text(encoding="utf-8") == "p1 một\np2 hai noise\np3 a\n"
    listed = (tmp_path / "out" / "text_cleaned").read_text(encoding="utf-8").splitlines()
    assert [line.split()[0] for line in listed] == ["p2", "p3"]
    assert (tmp_path / "out" / "empty_text_fallback").read_text() == "p3 a\n"
    # the cleaned text passes the Vietnamese front-end's checks
    from pyutils.tts.frontend import foreign_characters, split_tagged
    for line in (tmp_path / "out" / "text").read_text(encoding="utf-8").splitlines():
        assert foreign_characters(line.split(maxsplit=1)[1], "vi") == ""
        split_tagged(line.split(maxsplit=1)[1])
    # a clean rerun removes the stale listings
    args = _pairs_tts_inputs(tmp_path, "p1 một\np2 hai\np3 ba\n", "p1 ark:1\np2 ark:2\np3 ark:3\n")
    assert PR.main(["tts-dir", "--text", args[0], "--utt2spk", args[1], "--embed", args[2],
                    "--out", str(tmp_path / "out"), "--strict", "--empty-text", "a", "--lang", "vi"]) == 0
    assert not (tmp_path / "out" / "text_cleaned").exists()
    assert not (tmp_path / "out" / "empty_text_fallback").exists()
