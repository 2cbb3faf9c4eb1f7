"""chorus-sqa on a tiny untrained-but-saved model, and bad audio handling."""

import json

import numpy as np
import pytest
import soundfile as sf

from pyutils.sqa.common import FAULTS
from pyutils.sqa.model import ModelConfig, SQAModel, save_model

SR = 16000


def _model_dir(tmp_path, threshold):
    import torch

    torch.manual_seed(0)
    d = tmp_path / "exp"
    d.mkdir()
    model = SQAModel(ModelConfig(input_dim=80, conv_channels=8, rnn_hidden=4, rnn_layers=1))
    save_model(str(d / "model.pt"), model, {"mean": np.zeros(80, np.float32), "std": np.ones(80, np.float32)})
    prm = {"median": 1, "threshold": threshold, "merge_gap": 0.0, "min_dur": 0.0, "utt_threshold": 0.0}
    (d / "postproc.json").write_text(json.dumps({"params": {f: prm for f in FAULTS}}))
    return d


def _audio_dir(tmp_path):
    a = tmp_path / "audio"
    a.mkdir()
    rng = np.random.default_rng(0)
    sf.write(a / "good.wav", 0.1 * rng.standard_normal(SR * 2), SR)           # 2 s
    sf.write(a / "stereo44k.flac", 0.1 * rng.standard_normal((44100, 2)), 44100)
    sf.write(a / "short.wav", np.zeros(160), SR)                              # 10 ms
    sf.write(a / "empty.wav", np.zeros(0), SR)
    (a / "broken.wav").write_bytes(b"RIFF not really a wav")
    return a


def test_diagnose_prints_findings_and_skips_bad_files(tmp_path, capsys):
    from pyutils.sqa.diagnose import main

    # threshold 0: every frame is "faulty", so each fault spans the whole file
    rc = main(["--model", str(_model_dir(tmp_path, 0.0)), str(_audio_dir(tmp_path))])
    out, err = capsys.readouterr()
    assert rc == 0
    assert "good.wav: score " in out and "/ 5 (2.00 s)" in out
    assert "noise 0.00–2.00 s" in out and "pause 0.00–2.00 s" in out
    assert "stereo44k.flac: score" in out and "(1.00 s)" in out
    assert "diagnosed 2 file(s), skipped 3" in err
    for name in ("short.wav", "empty.wav", "broken.wav"):
        assert name in err


def test_diagnose_json_and_no_findings(tmp_path, capsys):
    from pyutils.sqa.diagnose import main

    audio = _audio_dir(tmp_path)
    rc = main(["--model", str(_model_dir(tmp_path, 1.01)), "--json", str(audio / "good.wav")])
    out, _ = capsys.readouterr()
    row = json.loads(out.strip())
    assert rc == 0 and row["faults"] == {f: [] for f in FAULTS} and 1.0 <= row["score"] <= 5.0


def test_diagnose_fails_clearly_without_model(tmp_path):
    from pyutils.sqa.diagnose import main

    with pytest.raises(SystemExit, match="no model.pt"):
        main(["--model", str(tmp_path), str(_audio_dir(tmp_path) / "good.wav")])


def test_dump_skips_bad_audio_with_a_count(tmp_path):
    pytest.importorskip("kaldiio")
    from pyutils.sqa.features import dump

    audio = _audio_dir(tmp_path)
    scp = tmp_path / "wav.scp"
    names = ["broken", "empty", "good", "missing", "short", "stereo44k"]
    paths = {n: audio / (n + (".flac" if n == "stereo44k" else ".wav")) for n in names}
    scp.write_text("".join(f"{n} {paths[n]}\n" for n in names))
    out = tmp_path / "dump"
    n_bad = dump(str(scp), str(out), "1", n_mels=80)
    assert n_bad == 4
    bad = (out / "bad.1").read_text().splitlines()
    assert [b.split()[0] for b in bad] == ["broken", "empty", "missing", "short"]
    assert "too short" in (out / "bad.1").read_text() and "empty" in (out / "bad.1").read_text()
    ok = (out / "feats.1.scp").read_text().split()
    assert ok[0] == "good" and ok[2] == "stereo44k"
    # the 44.1 kHz stereo file was resampled to a 16 kHz mono copy
    wavs = dict(line.split() for line in (out / "wav.1.scp").read_text().splitlines())
    info = sf.info(wavs["stereo44k"])
    assert info.samplerate == SR and info.channels == 1
    assert wavs["good"] == str(paths["good"])


def test_infer_writes_fallback_rows_for_skipped_recordings(tmp_path, capsys):
    pytest.importorskip("kaldiio")
    from pyutils.sqa.features import dump
    from pyutils.sqa.infer import main as infer_main

    audio = _audio_dir(tmp_path)
    scp = tmp_path / "wav.scp"
    scp.write_text(f"a {audio / 'good.wav'}\nb {audio / 'broken.wav'}\n")
    out = tmp_path / "dump"
    assert dump(str(scp), str(out), "1") == 1
    (out / "feats.scp").write_text((out / "feats.1.scp").read_text())
    (out / "utt2dur").write_text((out / "utt2dur.1").read_text())
    model = _model_dir(tmp_path, 0.5)
    rc = infer_main(["--model-dir", str(model), "--data-dir", str(out), "--outdir", str(tmp_path / "inf"),
                     "--postproc", str(model / "postproc.json"), "--all-ids", str(scp)])
    assert rc == 0
    rows = [json.loads(x) for x in (tmp_path / "inf" / "hyp.jsonl").read_text().splitlines()]
    assert [r["utt_id"] for r in rows] == ["a", "b"]
    assert rows[1] == {"utt_id": "b", "score": 3.0, "faults": {f: [] for f in FAULTS}}
    assert "1 recordings had no features" in capsys.readouterr().out


def _bad_inputs(tmp_path):
    a = tmp_path / "bad"
    a.mkdir()
    rng = np.random.default_rng(1)
    speechy = 0.2 * rng.standard_normal(SR * 2)
    sf.write(a / "silence.wav", np.zeros(SR * 2), SR)
    sf.write(a / "dc.wav", np.full(SR * 2, 0.4), SR)
    sf.write(a / "clipped.wav", np.clip(4 * speechy, -1, 1), SR)
    sf.write(a / "tel8k.wav", speechy[: SR], 8000)                           # 2 s at 8 kHz
    sf.write(a / "hifi48k_stereo.wav", 0.1 * rng.standard_normal((48000 * 2, 2)), 48000, subtype="FLOAT")
    nan = speechy.astype(np.float32)
    nan[5000] = np.nan
    sf.write(a / "nan.wav", nan, SR, subtype="FLOAT")
    sf.write(a / "tiny.wav", speechy[:800], SR)                               # 50 ms
    sf.write(a / "offset.wav", speechy * 0.5 + 0.2, SR)
    return a


def test_bad_inputs_get_a_diagnosis_or_a_clear_error(tmp_path, capsys):
    from pyutils.sqa.diagnose import main

    rc = main(["--model", str(_model_dir(tmp_path, 1.01)), "--json", str(_bad_inputs(tmp_path))])
    out, err = capsys.readouterr()
    rows = {json.loads(line)["path"].rsplit("/", 1)[1]: json.loads(line) for line in out.splitlines()}
    assert rc == 0 and len(rows) == 8
    assert rows["silence.wav"]["score"] == 1.0 and "silent" in rows["silence.wav"]["notes"][-1]
    assert "DC only" in rows["dc.wav"]["notes"][-1]
    assert any("clipped" in n for n in rows["clipped.wav"]["notes"])
    assert any("8000 Hz" in n for n in rows["tel8k.wav"]["notes"]) and rows["tel8k.wav"]["duration"] == 2.0
    notes48 = rows["hifi48k_stereo.wav"]["notes"]
    assert any("48000 Hz" in n for n in notes48) and any("2 channels" in n for n in notes48)
    assert any(n.startswith(("DC offset +0.19", "DC offset +0.20")) for n in rows["offset.wav"]["notes"])
    assert "NaN" in rows["nan.wav"]["error"] and "too short" in rows["tiny.wav"]["error"]
    assert "nan.wav" in err and "tiny.wav" in err and "diagnosed 6 file(s), skipped 2" in err


def test_long_file_in_windows_matches_its_length(tmp_path, capsys):
    from pyutils.sqa.diagnose import main
    from pyutils.sqa.stream import windows

    rng = np.random.default_rng(2)
    path = tmp_path / "long.wav"
    sf.write(path, 0.1 * rng.standard_normal(SR * 65), SR)                  # 65 s: 3 windows
    wins = list(windows(str(path), 28.0, 1.0))
    assert [n for _, _, n in wins] == [28 * SR, 28 * SR, 9 * SR]
    assert [off for _, off, _ in wins] == [0, SR, SR] and len(wins[1][0]) == 30 * SR
    rc = main(["--model", str(_model_dir(tmp_path, 0.0)), "--json", "--no-progress", str(path)])
    row = json.loads(capsys.readouterr()[0])
    assert rc == 0 and row["duration"] == 65.0
    assert row["faults"]["noise"] == [[0.0, 65.0]]                          # windows stitched, no gap


def test_recipe_dump_handles_the_bad_input_list(tmp_path):
    """Stage 2 of the recipe on the same bad inputs: NaN and < 0.1 s are skipped and named in
    ``bad``, the others (silence, DC only, clipped, 8 kHz, 48 kHz stereo, DC offset) give finite
    features at 16 kHz."""
    pytest.importorskip("kaldiio")
    import kaldiio

    from pyutils.sqa.features import dump

    bad_dir = _bad_inputs(tmp_path)
    names = sorted(p.stem for p in bad_dir.iterdir())
    scp = tmp_path / "wav.scp"
    scp.write_text("".join(f"{n} {bad_dir / (n + '.wav')}\n" for n in names))
    out = tmp_path / "dump"
    assert dump(str(scp), str(out), "1", n_mels=80) == 2
    bad = dict(line.split(" ", 1) for line in (out / "bad.1").read_text().splitlines())
    assert sorted(bad) == ["nan", "tiny"] and "NaN" in bad["nan"] and "too short" in bad["tiny"]
    feats = kaldiio.load_scp(str(out / "feats.1.scp"))
    assert sorted(feats) == sorted(set(names) - {"nan", "tiny"})
    for utt in feats:
        assert np.isfinite(feats[utt]).all(), utt
    durs = dict(line.split() for line in (out / "utt2dur.1").read_text().splitlines())
    assert float(durs["tel8k"]) == pytest.approx(2.0, abs=0.01)


def test_infer_and_chorus_sqa_apply_the_region_threshold_of_postproc_json(tmp_path):
    """Step 6 (postproc.json region_threshold) reaches both the recipe's hyp and chorus-sqa."""
    pytest.importorskip("kaldiio")
    from pyutils.sqa.diagnose import load_diagnoser
    from pyutils.sqa.features import dump
    from pyutils.sqa.infer import main as infer_main
    from pyutils.sqa.postproc import load_outputs, make_row

    audio = _audio_dir(tmp_path)
    scp = tmp_path / "wav.scp"
    scp.write_text(f"a {audio / 'good.wav'}\n")
    out = tmp_path / "dump"
    dump(str(scp), str(out), "1")
    (out / "feats.scp").write_text((out / "feats.1.scp").read_text())
    (out / "utt2dur").write_text((out / "utt2dur.1").read_text())
    model = _model_dir(tmp_path, 0.5)
    inf = tmp_path / "inf"
    assert infer_main(["--model-dir", str(model), "--data-dir", str(out), "--outdir", str(inf)]) == 0
    o = load_outputs(str(inf / "outputs.npz"))["a"]
    pp = json.loads((model / "postproc.json").read_text())
    # a frame threshold that cuts the untrained model's probabilities into pieces, and a region
    # threshold the noise and distortion means pass: step 6 must change the rows
    thr = float(np.median(o["frame_probs"][:, :2]))
    pp["params"] = {f: {**pp["params"][f], "threshold": thr} for f in FAULTS}
    region = float(o["frame_probs"][:, :2].mean(0).min()) * 0.5
    plain = make_row("a", o["score"], o["frame_probs"], o["utt_probs"], pp["params"], o["duration"])
    want = make_row("a", o["score"], o["frame_probs"], o["utt_probs"], pp["params"], o["duration"], region)
    assert want["faults"] != plain["faults"]
    (model / "postproc.json").write_text(json.dumps({**pp, "region_threshold": region}))
    assert infer_main(["--model-dir", str(model), "--data-dir", str(out), "--outdir", str(inf),
                       "--postproc", str(model / "postproc.json")]) == 0
    assert json.loads((inf / "hyp.jsonl").read_text())["faults"] == want["faults"]
    row = load_diagnoser(str(model))(sf.read(audio / "good.wav")[0], "good.wav")
    assert row["faults"] == want["faults"]
