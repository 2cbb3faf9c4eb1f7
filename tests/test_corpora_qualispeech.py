"""QualiSpeech: fault-description parser (many phrasings) and the preparer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pyutils.corpora.common import PrepError
from pyutils.corpora.prep import Options
from pyutils.corpora.qualispeech_text import parse_fault, resolve

FIX = Path(__file__).parent / "fixtures" / "corpora" / "qualispeech"

# (description, status, spans for a 5 s clip with the default policies)
CASES = [
    # ranges, as written in QualiSpeech
    ("There is sound similar to wind in the audio from 0-1.7s", "timed", [[0.0, 1.7]]),
    ("a cheer noise 0-1s", "timed", [[0.0, 1.0]]),
    ("bell sound from 0 to 4.8 seconds", "timed", [[0.0, 4.8]]),
    ("pitch distortion in the voice from 0-3.6s", "timed", [[0.0, 3.6]]),
    ("3-3.6s", "timed", [[3.0, 3.6]]),
    ("1.2s-2.5s", "timed", [[1.2, 2.5]]),
    ("from 1.2 to 2.5 seconds", "timed", [[1.2, 2.5]]),
    ("between 0.5 and 1 s", "timed", [[0.5, 1.0]]),
    ("Between 0.5s and 1s there is a hum", "timed", [[0.5, 1.0]]),
    ("0-1.7s and 3-4s", "timed", [[0.0, 1.7], [3.0, 4.0]]),
    ("0-1.7 and 3-4s", "timed", [[0.0, 1.7], [3.0, 4.0]]),
    ("clicks at 0.5-0.8s, 2-2.4s", "timed", [[0.5, 0.8], [2.0, 2.4]]),
    ("a click 1.2–1.4 s", "timed", [[1.2, 1.4]]),            # en dash
    ("Outdoor music noise, 0–3s", "timed", [[0.0, 3.0]]),    # the example sample of the dataset card
    ("Static noise 2 ~ 3s", "timed", [[2.0, 3.0]]),
    ("500ms-900ms", "timed", [[0.5, 0.9]]),
    ("1,5s-2s", "timed", [[1.5, 2.0]]),                      # decimal comma
    ("noise from 4s to 9s", "timed", [[4.0, 5.0]]),          # clipped to the clip
    ("overlapping 1-2s and 1.5-3s", "timed", [[1.0, 3.0]]),  # merged
    # points, open ends, first/last
    ("at 2.3s", "timed", [[2.05, 2.55]]),
    ("An unnatural pause at around 2.4s", "timed", [[2.15, 2.65]]),
    ("noise at 2.1s, 3s and 4.5s", "timed", [[1.85, 2.35], [2.75, 3.25], [4.25, 4.75]]),
    ("around the 2 second mark", "timed", [[1.75, 2.25]]),
    ("from 2s to the end", "timed", [[2.0, 5.0]]),
    ("from the beginning to 1.5s", "timed", [[0.0, 1.5]]),
    ("the first 2 seconds have static", "timed", [[0.0, 2.0]]),
    ("the last 1.5s is noisy", "timed", [[3.5, 5.0]]),
    # whole clip
    ("Slight hum throughout the audio", "whole", [[0.0, 5.0]]),
    ("continuous electrical noise", "whole", [[0.0, 5.0]]),
    ("The entire recording is muffled", "whole", [[0.0, 5.0]]),
    # negatives
    ("Not noticeable", "none", []),
    ("not distorted", "none", []),
    ("Very smooth", "none", []),
    ("None", "none", []),
    ("No noise", "none", []),
    ("no", "none", []),
    ("There is no obvious noise", "none", []),
    ("NOT NOTICEABLE.", "none", []),
    ("no unnatural pauses", "none", []),
    ("Smooth and natural", "none", []),
    ("", "none", []),
    ("Continuous", "none", []),
    # untimed faults (default: whole clip) and failures
    ("The voice sounds robotic", "untimed", [[0.0, 5.0]]),
    ("Pauses at 3 places", "untimed", [[0.0, 5.0]]),
    ("slight electrical hum", "untimed", [[0.0, 5.0]]),
    ("3-1s", "failed", []),
]


@pytest.mark.parametrize("desc,status,spans", CASES)
def test_fault_phrasings(desc, status, spans):
    parse = parse_fault(desc)
    assert parse.status == status, parse
    assert resolve(parse, 5.0) == spans


def test_many_phrasings_covered():
    assert len(CASES) >= 30


def test_policies():
    assert resolve(parse_fault("The voice sounds robotic"), 5.0, untimed="drop") == []
    assert resolve(parse_fault("at 2s"), 5.0, point_halfwidth=0.5) == [[1.5, 2.5]]
    assert resolve(parse_fault("at 0.1s"), 5.0) == [[0.0, 0.35]]  # clipped at 0
    assert resolve(parse_fault("Slight hum throughout"), 5.0, untimed="drop") == [[0.0, 5.0]]
    # unknown duration: nothing to clip against, whole-clip faults cannot be placed
    assert resolve(parse_fault("1-2s"), None) == [[1.0, 2.0]]
    assert resolve(parse_fault("throughout"), None) == []
    assert parse_fault(float("nan")).status == "none"
    with pytest.raises(ValueError):
        resolve(parse_fault("x"), 1.0, untimed="maybe")


def _ref(d: Path) -> dict:
    return {r["utt_id"]: r for r in map(json.loads, (d / "ref.jsonl").read_text().splitlines())}


def test_qualispeech_prepare(tmp_path, capsys):
    from pyutils.corpora import qualispeech
    from pyutils.datadir.validate import validate_data_dir

    qualispeech.prepare(FIX, Options(out=tmp_path, nj=1))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev", "test", "train"]
    for split in ("train", "dev", "test"):
        rep = validate_data_dir(tmp_path / split)
        assert rep.ok, rep.errors
        assert not (tmp_path / split / "text").exists()
    train = _ref(tmp_path / "train")
    assert train == {
        "sys02tts-0000040": {"utt_id": "sys02tts-0000040", "score": 4.0, "faults": {
            "noise": [[0.0, 0.1]], "distortion": [], "pause": [[0.15, 0.2]]}},
        "sys05vc-0000007": {"utt_id": "sys05vc-0000007", "score": 2.0, "faults": {
            "noise": [], "distortion": [[0.0, 0.3]], "pause": []}},
    }
    dev = _ref(tmp_path / "dev")["sys02tts-0000100"]
    assert dev["faults"] == {"noise": [[0.0, 0.3]], "distortion": [[0.0, 0.3]], "pause": [[0.0, 0.3]]}
    assert _ref(tmp_path / "test")["sys07tts-0000003"]["faults"] == {
        "noise": [], "distortion": [], "pause": []}
    utt2spk = (tmp_path / "train" / "utt2spk").read_text().split()
    assert utt2spk == ["sys02tts-0000040", "sys02tts", "sys05vc-0000007", "sys05vc"]
    rep = json.loads((tmp_path / "train" / "prep_report.json").read_text())
    assert rep["utterances_dropped"]["missing audio"] == 1
    assert rep["fault_descriptions"]["distortion"] == {
        "parsed": 1, "negative": 1, "fallback_untimed": 0, "failed": 0,
        "status_none": 1, "status_whole": 1}
    test_rep = json.loads((tmp_path / "test" / "prep_report.json").read_text())
    assert test_rep["fault_descriptions"]["distortion"]["failed"] == 1
    assert "3-1s" in test_rep["examples"]["failed"][0]
    assert "BVCC part is fetched separately" in capsys.readouterr().err
    scores = [json.loads(x) for x in (tmp_path / "train" / "scores.jsonl").read_text().splitlines()]
    assert scores[0]["Naturalness"] == 4.0 and scores[0]["Feeling of voice"].startswith("A calm")


def test_qualispeech_score_column_and_untimed_drop(tmp_path):
    from pyutils.corpora import qualispeech

    qualispeech.prepare(FIX, Options(out=tmp_path, nj=1), ["dev"], score_column="Naturalness",
                        untimed="drop")
    dev = _ref(tmp_path / "dev")["sys02tts-0000100"]
    assert dev["score"] == 3.0
    assert dev["faults"]["distortion"] == []  # "Slightly robotic voice" has no time
    assert not (tmp_path / "train").exists()


def test_qualispeech_bad_score_names_line(tmp_path):
    from pyutils.corpora import qualispeech

    root = tmp_path / "q"
    shutil.copytree(FIX, root)
    csv = root / "val.csv"
    csv.write_text(csv.read_text().replace("sys02tts-0000100.wav,3,3,2,3,3,2,3,",
                                           "sys02tts-0000100.wav,3,3,2,3,3,2,good,"))
    with pytest.raises(PrepError, match=r"val\.csv:2: 'Overall quality' is not a number"):
        qualispeech.prepare(root, Options(out=tmp_path / "out", nj=1), ["dev"])


def test_qualispeech_parquet_as_converted_by_the_hub(tmp_path):
    """The same tables as parquet (refs/convert/parquet: default/{train,validation,test}/0000.parquet)."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from pyutils.corpora import qualispeech

    root = tmp_path / "q"
    shutil.copytree(FIX / "wav", root / "wav")
    for name, split in (("train", "train"), ("val", "validation"), ("test", "test")):
        (root / "default" / split).mkdir(parents=True)
        pq.write_table(pacsv.read_csv(FIX / f"{name}.csv"), root / "default" / split / "0000.parquet")
    assert sorted(qualispeech.tables(root)) == ["test", "train", "val"]
    qualispeech.prepare(FIX, Options(out=tmp_path / "csv", nj=1))
    qualispeech.prepare(root, Options(out=tmp_path / "pq", nj=1))
    for split in ("train", "dev", "test"):
        assert _ref(tmp_path / "pq" / split) == _ref(tmp_path / "csv" / split)
        assert ((tmp_path / "pq" / split / "utt2spk").read_text()
                == (tmp_path / "csv" / split / "utt2spk").read_text())
    # the BVCC row (a real BVCC id, audio not fetched) is skipped in both
    assert json.loads((tmp_path / "pq" / "train" / "prep_report.json").read_text())[
        "utterances_dropped"]["missing audio"] == 1
    # a bad value names the parquet file and row
    table = pacsv.read_csv(FIX / "val.csv")
    table = table.set_column(table.column_names.index("Overall quality"), "Overall quality",
                             [["good"] * table.num_rows])
    pq.write_table(table, root / "default" / "validation" / "0000.parquet")
    with pytest.raises(PrepError, match=r"validation/0000\.parquet:1: 'Overall quality' is not a number"):
        qualispeech.prepare(root, Options(out=tmp_path / "bad", nj=1), ["dev"])
