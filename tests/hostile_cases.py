"""The table of hostile-but-fair inputs, one row per malformed case, for every
entry point: ``chorus-score`` (each subcommand), ``chorus-prep`` (each corpus),
``chorus-synth``, ``chorus-sqa``, ``chorus-datadir``,
``pyutils.asr.decode_dir``, ``pyutils.asr.cascade``, the shell tools in ``utils/`` and each recipe's
``run.sh`` options.

A case makes its files under a folder of its own and returns the command, the
exit status it must end with and what stderr must name (``file:line`` where
there is a line). :func:`run_case` runs it (in its own session, killed with
its children on a timeout) and classifies the outcome:

    ok          the expected status, no traceback, the message names the file (and line)
    traceback   a Python traceback anywhere in the output
    silent      exit 0 where an error was due (the input was accepted)
    hang        still running after the timeout
    wrong       another failure (other exit status, the message misses the file/line)

``tests/test_hostile_table.py`` asserts "ok" for every row;
``python tests/hostile_cases.py [--root CHECKOUT]`` prints the census
(cases, tracebacks, silent accepts, hangs) of a checkout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, List, Optional

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
RECIPES = {"nvv_asr_en": "nvv_asr.sh", "nvv_asr_zh": "nvv_asr.sh", "nvv_tts": "nvv_tts.sh",
           "sqa": "sqa.sh", "vivc": "vc.sh"}


@dataclass
class Expect:
    argv: List[str]
    code: int = 2                  # exit status required (0 would be a success case)
    where: Optional[str] = None    # text stderr must hold: "path" or "path:line"
    text: Optional[str] = None     # another text stderr (or stdout) must hold
    cwd: Optional[str] = None
    timeout: float = 60.0
    nonzero: bool = False          # any non-zero status will do (shell tools: 1 or 2)
    fork: bool = True              # False: a new interpreter even for ``python -m`` (torch's thread
                                   # pool does not survive a fork of a process that already used it)


@dataclass
class Case:
    name: str
    make: Callable[[Path], Expect]
    tags: List[str] = field(default_factory=list)


# ----------------------------------------------------------------- helpers
def py(module: str, *args) -> List[str]:
    return [PY, "-m", module, *map(str, args)]


def score(*args):
    return py("pyutils.scoring.cli", *args)


def prep(*args):
    return py("pyutils.corpora.cli", *args)


def synth(*args):
    return py("pyutils.synth.cli", *args)


def sqa(*args):
    return py("pyutils.sqa.diagnose", *args)


def datadir(*args):
    return py("pyutils.datadir.cli", *args)


def decode_dir(*args):
    return py("pyutils.asr.decode_dir", *args)


def util(name, *args):
    return [str(ROOT / "utils" / name), *map(str, args)]


def write(path: Path, data) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


def jsonl(path: Path, rows) -> Path:
    return write(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def wav(path: Path, seconds: float = 0.5, sr: int = 16000) -> Path:
    import numpy as np
    import soundfile as sf
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(seconds * sr)) / sr
    sf.write(path, (0.1 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), sr, subtype="PCM_16")
    return path


def datadir_files(d: Path, n: int = 2, text=True) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    w = [wav(d.parent / "audio" / f"u{i}.wav") for i in range(n)]
    write(d / "wav.scp", "".join(f"u{i} {w[i]}\n" for i in range(n)))
    write(d / "utt2spk", "".join(f"u{i} u{i}\n" for i in range(n)))
    write(d / "spk2utt", "".join(f"u{i} u{i}\n" for i in range(n)))
    if text:
        write(d / "text", "".join(f"u{i} hello there\n" for i in range(n)))
    return d


LATIN1 = b"caf\xe9"
T1_REF = [{"utt_id": "u1", "language": "en", "text_with_nvvs": "hello there [laugh]"},
          {"utt_id": "u2", "language": "en", "text_with_nvvs": "good morning"}]
T1_HYP = [{"utt_id": "u1", "text_with_nvvs": "hello there [laugh]"},
          {"utt_id": "u2", "text_with_nvvs": "good morning"}]
SQA_ROWS = [{"utt_id": "a", "score": 3.0, "faults": {"noise": [[0.1, 0.5]]}},
            {"utt_id": "b", "score": 4.0, "faults": {}}]


def _lines(rows, bad_line: int, bad: bytes) -> bytes:
    lines = [json.dumps(r).encode() for r in rows]
    lines[bad_line - 1] = bad
    return b"\n".join(lines) + b"\n"


CASES: List[Case] = []


def case(name, *tags):
    def deco(fn):
        CASES.append(Case(name, fn, list(tags)))
        return fn
    return deco


# ----------------------------------------------------------------- chorus-score track1
def _t1(d, hyp_bytes, line, text=None, ref_rows=T1_REF):
    ref = jsonl(d / "ref.jsonl", ref_rows)
    hyp = write(d / "hyp.jsonl", hyp_bytes)
    return Expect(score("track1", "--single-language", "--ref", ref, "--hyp", hyp, "--output-json", d / "o.json"),
                  where=f"{hyp}:{line}" if line else str(hyp), text=text)


for _name, _bad, _line, _text in [
        ("nonutf8", b'{"utt_id": "u2", "text_with_nvvs": "' + LATIN1 + b'"}', 2, "INVALID_ENCODING"),
        ("badjson", b'{"utt_id": "u2", "text_with_nvvs": ', 2, None),
        ("array_row", b'["u2", "good morning"]', 2, None),
        ("text_is_number", b'{"utt_id": "u2", "text_with_nvvs": 5}', 2, None),
        ("text_is_list", b'{"utt_id": "u2", "text_with_nvvs": ["a"]}', 2, None),
        ("utt_id_null", b'{"utt_id": null, "text_with_nvvs": "good morning"}', 2, None),
        ("missing_text", b'{"utt_id": "u2"}', 2, None),
        ("duplicate", b'{"utt_id": "u1", "text_with_nvvs": "good morning"}', 2, None),
        ("unknown_tag", b'{"utt_id": "u2", "text_with_nvvs": "good [giggle] morning"}', 2, None),
        ("nul_byte", b'{"utt_id": "u2", "text_with_nvvs": "go\x00od"}', 2, None),
        ("nan_literal", b'{"utt_id": "u2", "text_with_nvvs": NaN}', 2, None)]:
    CASES.append(Case(f"score-track1-hyp-{_name}",
                      (lambda b, l, t: lambda d: _t1(d, _lines(T1_HYP, 2, b), l, t))(_bad, _line, _text)))


@case("score-track1-hyp-empty")
def _(d):
    return _t1(d, b"", None)


@case("score-track1-hyp-missing-file")
def _(d):
    ref = jsonl(d / "ref.jsonl", T1_REF)
    return Expect(score("track1", "--single-language", "--ref", ref, "--hyp", d / "nope.jsonl", "--output-json", d / "o.json"),
                  where=str(d / "nope.jsonl"))


@case("score-track1-hyp-is-dir")
def _(d):
    ref = jsonl(d / "ref.jsonl", T1_REF)
    (d / "hyp").mkdir()
    return Expect(score("track1", "--single-language", "--ref", ref, "--hyp", d / "hyp", "--output-json", d / "o.json"),
                  where=str(d / "hyp"))


@case("score-track1-ref-language-fr")
def _(d):
    ref = jsonl(d / "ref.jsonl", [T1_REF[0], dict(T1_REF[1], language="fr")])
    hyp = jsonl(d / "hyp.jsonl", T1_HYP)
    return Expect(score("track1", "--single-language", "--ref", ref, "--hyp", hyp, "--output-json", d / "o.json"),
                  where=f"{ref}:2", text="INVALID_LANGUAGE")


@case("score-track1-ref-nonutf8")
def _(d):
    ref = write(d / "ref.jsonl", _lines(T1_REF, 2, b'{"utt_id": "u2", "language": "en", "text_with_nvvs": "'
                                        + LATIN1 + b'"}'))
    hyp = jsonl(d / "hyp.jsonl", T1_HYP)
    return Expect(score("track1", "--single-language", "--ref", ref, "--hyp", hyp, "--output-json", d / "o.json"),
                  where=f"{ref}:2", text="INVALID_ENCODING")


@case("score-track1-ref-one-language")
def _(d):
    # the official evaluator refuses a reference without both languages; so does chorus-score by default
    ref = jsonl(d / "ref.jsonl", T1_REF)
    hyp = jsonl(d / "hyp.jsonl", T1_HYP)
    return Expect(score("track1", "--ref", ref, "--hyp", hyp, "--output-json", d / "o.json"),
                  where=str(ref), text="REFERENCE_LANGUAGE_COVERAGE_ERROR")


for _name, _digits in [("hundreds", 600), ("thousands", 5000)]:
    CASES.append(Case(f"score-track1-hyp-utt_id-int-{_name}-of-digits",
                      (lambda k: lambda d: _t1(d, _lines(T1_HYP, 2, b'{"utt_id": ' + b"9" * k
                                                          + b', "text_with_nvvs": "good morning"}'), 2))(_digits)))


@case("score-track1-output-unwritable")
def _(d):
    ref = jsonl(d / "ref.jsonl", T1_REF)
    hyp = jsonl(d / "hyp.jsonl", T1_HYP)
    out = d / "ref.jsonl" / "o.json"   # under a file
    return Expect(score("track1", "--single-language", "--ref", ref, "--hyp", hyp, "--output-json", out), where=str(out))


@case("score-track1-report-unwritable")
def _(d):
    ref = jsonl(d / "ref.jsonl", T1_REF)
    hyp = jsonl(d / "hyp.jsonl", T1_HYP)
    out = d / "ref.jsonl" / "r.txt"
    return Expect(score("track1", "--single-language", "--ref", ref, "--hyp", hyp, "--output-json", d / "o.json",
                        "--per-utt-report", out), where=str(out))


# ----------------------------------------------------------------- chorus-score sqa
def _sqa(d, bad: bytes, line=2, text=None, side="hyp"):
    good = jsonl(d / "good.jsonl", SQA_ROWS)
    bad_f = write(d / "bad.jsonl", _lines(SQA_ROWS, line, bad))
    ref, hyp = (good, bad_f) if side == "hyp" else (bad_f, good)
    return Expect(score("sqa", "--ref", ref, "--hyp", hyp, "--output-json", d / "o.json"),
                  where=f"{bad_f}:{line}", text=text)


for _name, _bad in [("score_text", b'{"utt_id": "b", "score": "good", "faults": {}}'),
                    ("score_nan", b'{"utt_id": "b", "score": NaN, "faults": {}}'),
                    ("score_inf", b'{"utt_id": "b", "score": Infinity, "faults": {}}'),
                    ("score_bool", b'{"utt_id": "b", "score": true, "faults": {}}'),
                    ("faults_list", b'{"utt_id": "b", "score": 4, "faults": [[0, 1]]}'),
                    ("unknown_fault", b'{"utt_id": "b", "score": 4, "faults": {"hum": [[0, 1]]}}'),
                    ("interval_reversed", b'{"utt_id": "b", "score": 4, "faults": {"noise": [[2, 1]]}}'),
                    ("interval_negative", b'{"utt_id": "b", "score": 4, "faults": {"noise": [[-1, 1]]}}'),
                    ("interval_nan", b'{"utt_id": "b", "score": 4, "faults": {"noise": [[NaN, 1]]}}'),
                    ("interval_3", b'{"utt_id": "b", "score": 4, "faults": {"noise": [[0, 1, 2]]}}'),
                    ("interval_text", b'{"utt_id": "b", "score": 4, "faults": {"noise": [["0", "1"]]}}'),
                    ("interval_huge", b'{"utt_id": "b", "score": 4, "faults": {"noise": [[0, 1e300]]}}'),
                    ("nonutf8", b'{"utt_id": "' + LATIN1 + b'", "score": 4}'),
                    ("badjson", b'{"utt_id": "b", "score": 4,'),
                    ("duplicate", b'{"utt_id": "a", "score": 4, "faults": {}}')]:
    CASES.append(Case(f"score-sqa-hyp-{_name}", (lambda b: lambda d: _sqa(d, b))(_bad)))
CASES.append(Case("score-sqa-ref-nonutf8",
                  lambda d: _sqa(d, b'{"utt_id": "' + LATIN1 + b'", "score": 4}', side="ref")))


# ----------------------------------------------------------------- chorus-score nvbench
@case("score-nvbench-kaldi-nonutf8")
def _(d):
    ref = write(d / "ref", "u1 hello there [laugh]\nu2 good morning\n")
    hyp = write(d / "hyp", b"u1 hello there\nu2 " + LATIN1 + b"\n")
    return Expect(score("nvbench", "--format", "kaldi", "--lang", "en", "--ref", ref, "--hyp", hyp,
                        "--output-json", d / "o.json"), where=f"{hyp}:2")


@case("score-nvbench-kaldi-no-lang")
def _(d):
    ref = write(d / "ref", "u1 hello there [laugh]\n")
    return Expect(score("nvbench", "--format", "kaldi", "--ref", ref, "--hyp", ref,
                        "--output-json", d / "o.json"), text="--lang")


@case("score-nvbench-jsonl-badjson")
def _(d):
    ref = jsonl(d / "ref.jsonl", T1_REF)
    hyp = write(d / "hyp.jsonl", _lines(T1_HYP, 2, b"{oops"))
    return Expect(score("nvbench", "--ref", ref, "--hyp", hyp, "--output-json", d / "o.json"),
                  where=f"{hyp}:2")


@case("score-nvbench-kaldi-unknown-utt")
def _(d):
    ref = write(d / "ref", "u1 hello there [laugh]\nu2 good morning\n")
    hyp = write(d / "hyp", "u1 hello there\nu9 good morning\n")
    return Expect(score("nvbench", "--format", "kaldi", "--lang", "en", "--ref", ref, "--hyp", hyp,
                        "--output-json", d / "o.json"), where=str(hyp))


# ----------------------------------------------------------------- chorus-score vc
VC_HEAD = "utt\tsim_ref_out\tsim_src_out\tmos\twer\n"


@case("score-vc-nonnumeric")
def _(d):
    hyp = write(d / "hyp.tsv", VC_HEAD + "a.wav\t80\t10\t70\t20\nb.wav\tten\t10\t70\t20\n")
    return Expect(score("vc", "--hyp", hyp, "--output-json", d / "o.json"), where=f"{hyp}:3")


@case("score-vc-nan")
def _(d):
    hyp = write(d / "hyp.tsv", VC_HEAD + "a.wav\t80\t10\t70\t20\nb.wav\tnan\t10\t70\t20\n")
    return Expect(score("vc", "--hyp", hyp, "--output-json", d / "o.json"), where=f"{hyp}:3")


@case("score-vc-missing-column")
def _(d):
    hyp = write(d / "hyp.tsv", "utt\tsim_ref_out\twer\na.wav\t10\t20\n")
    return Expect(score("vc", "--hyp", hyp, "--output-json", d / "o.json"), where=str(hyp))


@case("score-vc-short-row")
def _(d):
    hyp = write(d / "hyp.tsv", VC_HEAD + "a.wav\t80\t10\t70\t20\nb.wav\t10\n")
    return Expect(score("vc", "--hyp", hyp, "--output-json", d / "o.json"), where=f"{hyp}:3")


@case("score-vc-empty")
def _(d):
    hyp = write(d / "hyp.tsv", "")
    return Expect(score("vc", "--hyp", hyp, "--output-json", d / "o.json"), where=str(hyp))


@case("score-vc-header-only")
def _(d):
    hyp = write(d / "hyp.tsv", VC_HEAD)
    return Expect(score("vc", "--hyp", hyp, "--output-json", d / "o.json"), where=str(hyp))


@case("score-vc-ref-nonutf8")
def _(d):
    hyp = write(d / "hyp.tsv", VC_HEAD + "a.wav\t80\t10\t70\t20\n")
    ref = write(d / "ref.txt", b"a.wav\n" + LATIN1 + b".wav\n")
    return Expect(score("vc", "--hyp", hyp, "--ref", ref, "--output-json", d / "o.json"),
                  where=f"{ref}:2")


# ----------------------------------------------------------------- validate-track1 / package-track1
@case("score-validate-track1-missing-field")
def _(d):
    hyp = write(d / "hyp.jsonl", _lines(T1_HYP, 2, b'{"utt_id": "u2"}'))
    return Expect(score("validate-track1", "--hyp", hyp), where=f"{hyp}:2")


@case("score-validate-track1-ref-nonutf8")
def _(d):
    hyp = jsonl(d / "hyp.jsonl", T1_HYP)
    ref = write(d / "ref.jsonl", _lines(T1_REF, 2, b'{"utt_id": "' + LATIN1 + b'"}'))
    return Expect(score("validate-track1", "--hyp", hyp, "--ref", ref), where=f"{ref}:2")


@case("score-package-text-nonutf8")
def _(d):
    text = write(d / "text", b"u1 hello there\nu2 " + LATIN1 + b"\n")
    return Expect(score("package-track1", "--text", text, "--out", d / "sub.jsonl"), where=f"{text}:2")


@case("score-package-text-duplicate", "success")
def _(d):
    # a decode text is repaired (documented): the duplicate is dropped with a warning naming it
    text = write(d / "text", "u1 hello there\nu1 good morning\n")
    return Expect(score("package-track1", "--text", text, "--out", d / "sub.jsonl"), code=0,
                  text=f"WARNING duplicates dropped: 1 (first: {text}:2")


@case("score-package-text-unknown-tag", "success")
def _(d):
    text = write(d / "text", "u1 hello there\nu2 good [giggle] morning\n")
    return Expect(score("package-track1", "--text", text, "--out", d / "sub.jsonl"), code=0,
                  text=f"WARNING unsupported tags removed: 1 (first: {text}:2)")


@case("score-package-text-missing")
def _(d):
    return Expect(score("package-track1", "--text", d / "nope", "--out", d / "sub.jsonl"),
                  where=str(d / "nope"))


@case("score-package-zip-unwritable")
def _(d):
    text = write(d / "text", "u1 hello there\n")
    z = d / "text" / "sub.zip"
    return Expect(score("package-track1", "--text", text, "--out", d / "sub.jsonl", "--zip", z),
                  where=str(z))


@case("score-package-ref-ids-badjson")
def _(d):
    text = write(d / "text", "u1 hello there\nu2 good morning\n")
    ids = write(d / "ref.jsonl", b'{"utt_id": "u1"}\n{"utt_id": \n')
    return Expect(score("package-track1", "--text", text, "--out", d / "sub.jsonl", "--ref-ids", ids),
                  where=f"{ids}:2")


# ----------------------------------------------------------------- validate-track2 / validate-vc
@case("score-validate-track2-junk-wav")
def _(d):
    sub = d / "sub"
    wav(sub / "u1.wav")
    write(sub / "u2.wav", b"RIFF0000WAVEjunkjunkjunk")
    ref = jsonl(d / "ref.jsonl", [{"utt_id": "u1"}, {"utt_id": "u2"}])
    return Expect(score("validate-track2", "--dir", sub, "--ref", ref), where=str(sub / "u2.wav"))


@case("score-validate-track2-empty-wav")
def _(d):
    sub = d / "sub"
    wav(sub / "u1.wav")
    write(sub / "u2.wav", b"")
    ref = jsonl(d / "ref.jsonl", [{"utt_id": "u1"}, {"utt_id": "u2"}])
    return Expect(score("validate-track2", "--dir", sub, "--ref", ref), where=str(sub / "u2.wav"))


@case("score-validate-track2-missing-dir")
def _(d):
    ref = jsonl(d / "ref.jsonl", [{"utt_id": "u1"}])
    return Expect(score("validate-track2", "--dir", d / "nope", "--ref", ref), where=str(d / "nope"))


@case("score-validate-track2-ref-missing-utt-id")
def _(d):
    wav(d / "sub" / "u1.wav")
    ref = write(d / "ref.jsonl", b'{"utt_id": "u1"}\n{"id": "u2"}\n')
    return Expect(score("validate-track2", "--dir", d / "sub", "--ref", ref), where=f"{ref}:2")


@case("score-validate-vc-two-columns")
def _(d):
    pairs = write(d / "pairs.tsv", "s.wav\tt.wav\tc.wav\ns.wav\tt.wav\n")
    return Expect(score("validate-vc", "--pairs", pairs, "--dir", d), where=f"{pairs}:2")


@case("score-validate-vc-junk-wav")
def _(d):
    write(d / "out" / "c.wav", b"not a wav at all")
    pairs = write(d / "pairs.tsv", "s.wav\tt.wav\tc.wav\n")
    return Expect(score("validate-vc", "--pairs", pairs, "--dir", d / "out"), where=str(d / "out" / "c.wav"))


@case("score-validate-vc-missing-dir")
def _(d):
    pairs = write(d / "pairs.tsv", "s.wav\tt.wav\tc.wav\n")
    return Expect(score("validate-vc", "--pairs", pairs, "--dir", d / "nope"), where=str(d / "nope"))


# ----------------------------------------------------------------- chorus-prep
def _generic(d, content: bytes, name="m.jsonl", line=None, text=None, extra=()):
    wav(d / "a.wav")
    wav(d / "b.wav")
    man = write(d / name, content)
    return Expect(prep("generic", "--src", man, "--out", d / "out", "--lang", "en", *extra),
                  where=f"{man}:{line}" if line else str(man), text=text)


for _name, _content, _file, _line, _text in [
        ("jsonl-nonutf8", b'{"audio": "a.wav", "text": "hi"}\n{"audio": "b.wav", "text": "' + LATIN1 + b'"}\n',
         "m.jsonl", 2, "not UTF-8"),
        ("jsonl-badjson", b'{"audio": "a.wav", "text": "hi"}\n{"audio": "b.wav", \n', "m.jsonl", 2, None),
        ("jsonl-text-list", b'{"audio": "a.wav", "text": "hi"}\n{"audio": "b.wav", "text": ["x"]}\n',
         "m.jsonl", 2, None),
        ("jsonl-text-nan", b'{"audio": "a.wav", "text": "hi"}\n{"audio": "b.wav", "text": NaN}\n',
         "m.jsonl", 2, None),
        ("jsonl-row-not-object", b'{"audio": "a.wav", "text": "hi"}\n[1, 2]\n', "m.jsonl", 2, None),
        ("jsonl-audio-missing-field", b'{"audio": "a.wav", "text": "hi"}\n{"text": "yo"}\n', "m.jsonl", 2, None),
        ("jsonl-unknown-label", b'{"audio": "a.wav", "text": "hi [giggle]"}\n', "m.jsonl", 1, None),
        ("jsonl-stray-bracket", b'{"audio": "a.wav", "text": "hi [laugh"}\n', "m.jsonl", 1, None),
        ("jsonl-duplicate-id", b'{"audio": "a.wav", "text": "hi"}\n{"audio": "a.wav", "text": "yo"}\n',
         "m.jsonl", 2, None),
        ("jsonl-split-escape", b'{"audio": "a.wav", "text": "hi", "split": "../x"}\n', "m.jsonl", 1, None),
        ("jsonl-empty", b"", "m.jsonl", None, "no rows"),
        ("jsonl-blank-lines", b"\n\n\n", "m.jsonl", None, "no rows"),
        ("tsv-nonutf8", b"audio\ttext\na.wav\thi\nb.wav\t" + LATIN1 + b"\n", "m.tsv", 3, "not UTF-8"),
        ("tsv-header-only", b"audio\ttext\n", "m.tsv", None, "no rows"),
        ("tsv-short-row", b"audio\ttext\na.wav\thi\nb.wav\n", "m.tsv", 3, None),
        ("csv-nonutf8", b"audio,text\na.wav,hi\nb.wav," + LATIN1 + b"\n", "m.csv", 3, "not UTF-8"),
        ("csv-unclosed-quote", b'audio,text\na.wav,"hi\nb.wav,yo\n', "m.csv", None, None),
        ("csv-no-text-column", b"audio,words\na.wav,hi\n", "m.csv", 2, None),
        ("json-not-a-list", b'"just a string"', "m.json", None, None),
        ("jsonl-language-unknown", b'{"audio": "a.wav", "text": "hi"}\n{"audio": "b.wav", "text": "yo", '
         b'"language": "xx"}\n', "m.jsonl", 2, "names no language"),
        ("jsonl-language-not-a-code", b'{"audio": "a.wav", "text": "hi", "language": "Englsh"}\n', "m.jsonl", 1,
         "not a language code"),
        ("jsonl-utt-id-slash", b'{"audio": "a.wav", "text": "hi", "utt_id": "spk1/u1"}\n', "m.jsonl", 1,
         "path separator"),
        ("jsonl-speaker-slash", b'{"audio": "a.wav", "text": "hi", "speaker": "../s"}\n', "m.jsonl", 1,
         "path separator"),
        ("jsonl-markup-in-text", b'{"audio": "a.wav", "text": "what [gasp]<B> What? </B>"}\n', "m.jsonl", 1,
         "markup"),
        ("txt-three-columns", b"a.wav\thi\nb.wav\tyo\textra\n", "m.txt", 2, "got 3"),
        ("tsv-headerless-one-column", b"a.wav\thi\nb.wav\n", "m.tsv", 2, "got 1"),
        ("tsv-unknown-column", b"audio\ttext\tlangauge\na.wav\thi\ten\n", "m.tsv", 2, "'langauge'"),
        ("jsonl-unknown-key", b'{"audio": "a.wav", "text": "hi", "spekaer": "s1"}\n', "m.jsonl", 1, "'spekaer'")]:
    CASES.append(Case(f"prep-generic-{_name}",
                      (lambda c, f, l, t: lambda d: _generic(d, c, f, l, t))(_content, _file, _line, _text)))


@case("prep-nonverbalspeech38k-no-caption-files")
def _(d):
    (d / "src" / "dataset_demos" / "gasp").mkdir(parents=True)
    return Expect(prep("nonverbalspeech38k", "--src", d / "src", "--out", d / "out"), where=str(d / "src"))


@case("prep-nonverbalspeech38k-caption-line-fields")
def _(d):
    folder = d / "src" / "dataset_demos" / "gasp"
    wav(folder / "1_gasp.wav")
    txt = write(folder / "gasp.txt", "1| what [gasp] |what [gasp]<B> now </B>\n2 no bar here\n")
    return Expect(prep("nonverbalspeech38k", "--src", d / "src", "--out", d / "out"), where=f"{txt}:2")


@case("prep-nonverbalspeech38k-caption-nonutf8")
def _(d):
    folder = d / "src" / "gasp"
    wav(folder / "1_gasp.wav")
    txt = write(folder / "gasp.txt", b"1| what [gasp]\n2| " + LATIN1 + b" [gasp]\n")
    return Expect(prep("nonverbalspeech38k", "--src", d / "src", "--out", d / "out"), where=f"{txt}:2",
                  text="not UTF-8")


@case("prep-generic-lang-option-unknown")
def _(d):
    wav(d / "a.wav")
    man = jsonl(d / "m.jsonl", [{"audio": "a.wav", "text": "hi"}])
    return Expect(prep("generic", "--src", man, "--out", d / "out", "--lang", "qq"), text="--lang 'qq'")


@case("prep-generic-language-fr-not-in-track1-ref", "success")
def _(d):
    wav(d / "a.wav")
    man = jsonl(d / "m.jsonl", [{"audio": "a.wav", "text": "bonjour [laugh]", "language": "fr"},
                                {"audio": "a.wav", "utt_id": "b", "text": "hello [laugh]", "language": "en"}])
    return Expect(prep("generic", "--src", man, "--out", d / "out"), code=0,
                  text="ref.jsonl (the Track 1 reference) holds en/zh rows only")


@case("prep-generic-label-map-nonutf8")
def _(d):
    wav(d / "a.wav")
    man = jsonl(d / "m.jsonl", [{"audio": "a.wav", "text": "hi [giggle]"}])
    lm = write(d / "map.tsv", b"giggle\tlaugh\n" + LATIN1 + b"\tcough\n")
    return Expect(prep("generic", "--src", man, "--out", d / "out", "--lang", "en", "--label-map", lm),
                  where=f"{lm}:2")


@case("prep-generic-label-map-missing")
def _(d):
    wav(d / "a.wav")
    man = jsonl(d / "m.jsonl", [{"audio": "a.wav", "text": "hi"}])
    return Expect(prep("generic", "--src", man, "--out", d / "out", "--label-map", d / "nope.tsv"),
                  where=str(d / "nope.tsv"))


@case("prep-generic-label-map-bad-yaml")
def _(d):
    wav(d / "a.wav")
    man = jsonl(d / "m.jsonl", [{"audio": "a.wav", "text": "hi"}])
    lm = write(d / "map.yaml", "giggle: [laugh\nfoo: : bar\n")
    return Expect(prep("generic", "--src", man, "--out", d / "out", "--label-map", lm), where=str(lm))


@case("prep-generic-src-missing")
def _(d):
    return Expect(prep("generic", "--src", d / "nope.jsonl", "--out", d / "out"), where=str(d / "nope.jsonl"))


@case("prep-generic-nj-zero")
def _(d):
    wav(d / "a.wav")
    man = jsonl(d / "m.jsonl", [{"audio": "a.wav", "text": "hi"}])
    return Expect(prep("generic", "--src", man, "--out", d / "out", "--nj", "0"), text="--nj")


@case("prep-generic-max-duration-negative")
def _(d):
    wav(d / "a.wav")
    man = jsonl(d / "m.jsonl", [{"audio": "a.wav", "text": "hi"}])
    return Expect(prep("generic", "--src", man, "--out", d / "out", "--max-duration", "-1"),
                  text="--max-duration")


@case("prep-generic-audio-junk", "success")
def _(d):
    # unreadable audio is counted and skipped, named in the warning; nothing left -> error
    write(d / "a.wav", b"junk")
    man = jsonl(d / "m.jsonl", [{"audio": "a.wav", "text": "hi"}])
    return Expect(prep("generic", "--src", man, "--out", d / "out", "--lang", "en"), where=str(d / "a.wav"))


@case("prep-track1_test-empty-dir")
def _(d):
    (d / "src").mkdir()
    return Expect(prep("track1_test", "--src", d / "src", "--out", d / "out"), where=str(d / "src"))


@case("prep-track1_test-list-nonutf8")
def _(d):
    wav(d / "src" / "audio" / "zh_0001.wav")
    lst = write(d / "src" / "list", b"zh_0001 zh\n" + LATIN1 + b" zh\n")
    return Expect(prep("track1_test", "--src", d / "src", "--out", d / "out"), where=f"{lst}:2")


@case("prep-track1_test-manifest-language-fr")
def _(d):
    wav(d / "src" / "audio" / "x1.wav")
    man = jsonl(d / "src" / "test.jsonl", [{"utt_id": "x1", "language": "fr"}])
    return Expect(prep("track1_test", "--src", d / "src", "--out", d / "out"), where=f"{man}:1")


@case("prep-nvbench-nonutf8-json")
def _(d):
    wav(d / "src" / "a.wav")
    f = write(d / "src" / "en_single.json",
              b'[{"wav_path": "a.wav",\n "text": "' + LATIN1 + b'"}]\n')
    return Expect(prep("nvbench", "--src", d / "src", "--out", d / "out"), where=f"{f}:2")


@case("prep-nvbench-bad-json")
def _(d):
    f = write(d / "src" / "en_single.json", b'[{"wav_path": "a.wav",\n "text": }]\n')
    return Expect(prep("nvbench", "--src", d / "src", "--out", d / "out"), where=str(f))


@case("prep-nvbench-empty-dir")
def _(d):
    (d / "src").mkdir()
    return Expect(prep("nvbench", "--src", d / "src", "--out", d / "out"), where=str(d / "src"))


@case("prep-emilia_nv-junk-tar")
def _(d):
    f = write(d / "src" / "shard-000.tar", b"this is not a tar file" * 40)
    return Expect(prep("emilia_nv", "--src", d / "src", "--out", d / "out"), where=str(f))


@case("prep-emilia_nv-jsonl-nonutf8")
def _(d):
    wav(d / "src" / "a.wav")
    f = write(d / "src" / "train.jsonl", b'{"audio": "a.wav", "text": "hi"}\n{"audio": "a.wav", "text": "'
              + LATIN1 + b'"}\n')
    return Expect(prep("emilia_nv", "--src", d / "src", "--out", d / "out"), where=f"{f}:2")


@case("prep-nonverbaltts-junk-parquet")
def _(d):
    f = write(d / "src" / "train-00000-of-00001.parquet", b"PAR1 junk junk junk")
    return Expect(prep("nonverbaltts", "--src", d / "src", "--out", d / "out"), where=str(f))


@case("prep-nonverbaltts-csv-nonutf8")
def _(d):
    wav(d / "src" / "a.wav")
    f = write(d / "src" / "train.csv", b"audio,text\na.wav,hi\na.wav," + LATIN1 + b"\n")
    return Expect(prep("nonverbaltts", "--src", d / "src", "--out", d / "out"), where=f"{f}:3")


@case("prep-mnv17-nonutf8")
def _(d):
    wav(d / "src" / "a.wav")
    f = write(d / "src" / "train.jsonl", b'{"audio": "a.wav", "txt": "hi"}\n{"audio": "a.wav", "txt": "'
              + LATIN1 + b'"}\n')
    return Expect(prep("mnv17", "--src", d / "src", "--out", d / "out"), where=f"{f}:2")


@case("prep-smiip_nv-nonutf8")
def _(d):
    wav(d / "src" / "spk1" / "happy" / "a.wav")
    f = write(d / "src" / "spk1" / "happy" / "annotation.txt", b"a.wav\thi\nb.wav\t" + LATIN1 + b"\n")
    return Expect(prep("smiip_nv", "--src", d / "src", "--out", d / "out"), where=f"{f}:2")


@case("prep-smiip_nv-empty")
def _(d):
    (d / "src").mkdir()
    return Expect(prep("smiip_nv", "--src", d / "src", "--out", d / "out"), where=str(d / "src"))


@case("prep-deeply_nvv-empty")
def _(d):
    (d / "src").mkdir()
    return Expect(prep("deeply_nvv", "--src", d / "src", "--out", d / "out"), where=str(d / "src"))


@case("prep-deeply_nvv-badname")
def _(d):
    wav(d / "src" / "dataset" / "coughing" / "AB12_4_1_0_30_0_0_0.wav")
    wav(d / "src" / "dataset" / "coughing" / "AB12_cough.wav")
    return Expect(prep("deeply_nvv", "--src", d / "src", "--out", d / "out"),
                  where=str(d / "src" / "dataset" / "coughing" / "AB12_cough.wav"))


@case("prep-qualispeech-empty")
def _(d):
    (d / "src").mkdir()
    return Expect(prep("qualispeech", "--src", d / "src", "--out", d / "out"), where=str(d / "src"))


@case("prep-qualispeech-csv-nonutf8")
def _(d):
    wav(d / "src" / "a.wav")
    f = write(d / "src" / "train.csv", b"audio,Overall quality\na.wav,3\n" + LATIN1 + b".wav,4\n")
    return Expect(prep("qualispeech", "--src", d / "src", "--out", d / "out"), where=f"{f}:3")


@case("prep-vlsp_vc-empty")
def _(d):
    (d / "src").mkdir()
    return Expect(prep("vlsp_vc", "--src", d / "src", "--out", d / "out"), where=str(d / "src"))


# ----------------------------------------------------------------- chorus-synth
for _kind in ("nvv", "sqa", "vc"):
    for _args, _opt in [(["--num-train", "-5"], "--num-train"), (["--num-voices", "0"], "--num-voices"),
                        (["--nj", "0"], "--nj"), (["--nj", "abc"], "--nj"), (["--seed", "x"], "--seed"),
                        (["--preset", "huge"], "--preset")]:
        if _kind == "vc" and _opt in ("--num-train", "--num-voices"):
            continue
        CASES.append(Case(f"synth-{_kind}-{_args[0][2:]}-{_args[1]}",
                          (lambda k, a, o: lambda d: Expect(synth(k, "--preset", "ci", "--out", d / "c", *a)
                                                            if "--preset" not in a else
                                                            synth(k, "--out", d / "c", *a), text=o))(_kind, _args, _opt)))


@case("synth-nvv-unknown-language")
def _(d):
    return Expect(synth("nvv", "--preset", "ci", "--lang", "xx-nope", "--out", d / "c"), text="xx-nope")


for _kind in ("nvv", "sqa", "vc"):
    for _cmd, _why in [("/nonexistent/utils/run.pl", "no such file"), ("no-such-backend.pl", "no such program")]:
        CASES.append(Case(f"synth-{_kind}-cmd-{_why.replace(' ', '-')}",
                          (lambda k, c, w: lambda d: Expect(synth(k, "--preset", "ci", "--cmd", c, "--out", d / "c"),
                                                            text=w))(_kind, _cmd, _why)))


@case("synth-out-is-a-file")
def _(d):
    f = write(d / "c", "a file")
    return Expect(synth("sqa", "--preset", "ci", "--out", f), where=str(f))


# ----------------------------------------------------------------- NVV sound bank, YAMNet
_BANK_HEAD = ("clip_id\ttag\tsplit\ttalker\tgroup\tpackage\tversion\tlicence\tpath\tsha256\tseconds\t"
              "yamnet_class\tyamnet_score\tyamnet_top\tstatus\n")


@case("nvv-bank-manifest-short-row")
def _(d):
    m = write(d / "bank.tsv", "# comment\n" + _BANK_HEAD + "a\tlaugh\ttrain\n")
    return Expect(py("pyutils.synth.nvv_bank", "install", "--out", d / "b", "--manifest", m), where=f"{m}:3")


@case("nvv-bank-manifest-unknown-package")
def _(d):
    row = "\t".join(["a", "laugh", "train", "t", "g", "nope-data", "1", "GPL", "/x", "0" * 64, "1", "", "", "", "used"])
    m = write(d / "bank.tsv", _BANK_HEAD + row + "\n")
    return Expect(py("pyutils.synth.nvv_bank", "install", "--out", d / "b", "--manifest", m), where=f"{m}:2")


@case("synth-nvv-bank-weight-without-bank")
def _(d):
    return Expect(synth("nvv", "--preset", "ci", "--out", d / "c", "--nvv-sounds", "generated",
                        "--nvv-bank-weight", "3"), text="--nvv-bank-weight")


@case("synth-nvv-bank-weight-zero")
def _(d):
    return Expect(synth("nvv", "--preset", "ci", "--out", d / "c", "--nvv-bank-weight", "0"),
                  text="--nvv-bank-weight")


@case("audio-tagger-junk-audio")
def _(d):
    f = write(d / "junk.wav", b"RIFF0000WAVEjunk")
    return Expect(py("pyutils.audio_tagger", "tag", f), nonzero=True, where=str(f))


# ----------------------------------------------------------------- chorus-sqa
@case("sqa-model-missing")
def _(d):
    wav(d / "clips" / "a.wav")
    return Expect(sqa("--model", d / "nope", d / "clips"), where=str(d / "nope"), nonzero=True)


@case("sqa-model-junk")
def _(d):
    wav(d / "clips" / "a.wav")
    write(d / "m" / "model.pt", b"junk")
    return Expect(sqa("--model", d / "m", d / "clips"), where=str(d / "m" / "model.pt"), nonzero=True)


@case("sqa-model-zip-not-torch")
def _(d):
    import zipfile
    wav(d / "clips" / "a.wav")
    (d / "m").mkdir()
    with zipfile.ZipFile(d / "m" / "model.pt", "w") as z:
        z.writestr("a/data.pkl", b"\x80\x04junk")
    return Expect(sqa("--model", d / "m", d / "clips"), where=str(d / "m" / "model.pt"), nonzero=True)


@case("sqa-num-threads-zero")
def _(d):
    return Expect(sqa("--model", d, "--num-threads", "0", d), text="--num-threads")


@case("sqa-model-without-model-pt")
def _(d):
    wav(d / "clips" / "a.wav")
    (d / "m").mkdir()
    return Expect(sqa("--model", d / "m", d / "clips"), where=str(d / "m"), nonzero=True)


# ----------------------------------------------------------------- chorus-datadir
@case("datadir-validate-text-nonutf8")
def _(d):
    dd = datadir_files(d / "data")
    write(dd / "text", b"u0 hello\nu1 " + LATIN1 + b"\n")
    return Expect(datadir("validate", dd), where=f"{dd / 'text'}:2", nonzero=True)


@case("datadir-validate-unsorted")
def _(d):
    dd = datadir_files(d / "data")
    write(dd / "utt2spk", "u1 u1\nu0 u0\n")
    return Expect(datadir("validate", dd), where=f"{dd / 'utt2spk'}:2", nonzero=True)


@case("datadir-validate-missing-dir")
def _(d):
    return Expect(datadir("validate", d / "nope"), where=str(d / "nope"), nonzero=True)


@case("datadir-split-zero")
def _(d):
    dd = datadir_files(d / "data")
    return Expect(datadir("split", dd, "0"), text=">= 1", nonzero=True)


@case("datadir-subset-list-nonutf8")
def _(d):
    dd = datadir_files(d / "data")
    lst = write(d / "list", b"u0\n" + LATIN1 + b"\n")
    return Expect(datadir("subset", "--utt-list", lst, dd, d / "sub"), where=f"{lst}:2", nonzero=True)


@case("datadir-combine-missing-src")
def _(d):
    dd = datadir_files(d / "data")
    return Expect(datadir("combine", d / "out", dd, d / "nope"), where=str(d / "nope"), nonzero=True)


# ----------------------------------------------------------------- pyutils.asr.decode_dir
@case("decode_dir-asr-exp-missing")
def _(d):
    wav(d / "clips" / "a.wav")
    return Expect(decode_dir("--asr-exp", d / "nope", "--audio-dir", d / "clips", "--out", d / "o.text"),
                  where=str(d / "nope"), nonzero=True)


@case("decode_dir-asr-exp-incomplete")
def _(d):
    wav(d / "clips" / "a.wav")
    (d / "exp").mkdir()
    return Expect(decode_dir("--asr-exp", d / "exp", "--audio-dir", d / "clips", "--out", d / "o.text"),
                  where=str(d / "exp"), nonzero=True)


@case("decode_dir-audio-dir-empty")
def _(d):
    exp = _fake_asr_exp(d)
    (d / "clips").mkdir()
    return Expect(decode_dir("--asr-exp", exp, "--audio-dir", d / "clips", "--out", d / "o.text"),
                  where=str(d / "clips"), nonzero=True)


@case("decode_dir-wav-scp-nonutf8")
def _(d):
    exp = _fake_asr_exp(d)
    w = wav(d / "a.wav")
    scp = write(d / "wav.scp", f"a {w}\n".encode() + LATIN1 + b" " + str(w).encode() + b"\n")
    return Expect(decode_dir("--asr-exp", exp, "--wav-scp", scp, "--out", d / "o.text"),
                  where=f"{scp}:2", nonzero=True)


@case("decode_dir-nj-zero")
def _(d):
    exp = _fake_asr_exp(d)
    w = wav(d / "a.wav")
    scp = write(d / "wav.scp", f"a {w}\n")
    return Expect(decode_dir("--asr-exp", exp, "--wav-scp", scp, "--out", d / "o.text", "--nj", "0"),
                  text="--nj")


@case("decode_dir-recipe-options-junk")
def _(d):
    exp = _fake_asr_exp(d)
    write(exp / "recipe_options.sh", "lang=en\n$(touch pwned)\nrm -rf /\n")
    w = wav(d / "a.wav")
    scp = write(d / "wav.scp", f"a {w}\n")
    return Expect(decode_dir("--asr-exp", exp, "--wav-scp", scp, "--out", d / "o.text"),
                  where=str(exp / "recipe_options.sh"), nonzero=True)


def _fake_asr_exp(d: Path) -> Path:
    exp = d / "egs" / "r" / "exp" / "asr_x"
    write(d / "egs" / "r" / "path.sh", "")
    write(exp / "config.yaml", "token_list: []\n")
    write(exp / "valid.acc.ave.pth", b"junk")
    write(exp / "recipe_options.sh", "lang=en\ntoken_type=bpe\nnbpe=10\nnvv_tags=true\nfs=16000\n")
    return exp


# ----------------------------------------------------------------- pyutils.asr.cascade
def cascade(*args):
    return py("pyutils.asr.cascade", *args)


for _name, _row in [
        ("unknown-tag", {"utt_id": "a", "tag": "giggle", "start": 0.1, "end": 0.2}),
        ("end-before-start", {"utt_id": "a", "tag": "laugh", "start": 0.3, "end": 0.2}),
        ("start-not-number", {"utt_id": "a", "tag": "laugh", "start": "0.1", "end": 0.2}),
        ("start-missing", {"utt_id": "a", "tag": "laugh", "end": 0.2}),
        ("utt-id-empty", {"utt_id": " ", "tag": "laugh", "start": 0.1, "end": 0.2}),
        ("row-is-list", ["a", "laugh", 0.1, 0.2])]:
    CASES.append(Case(f"cascade-events-{_name}", (lambda row: lambda d: Expect(
        cascade("--audio-dir", wav(d / "clips" / "a.wav").parent, "--lang", "en", "--jsonl", d / "o.jsonl",
                "--events", jsonl(d / "ev.jsonl", [{"utt_id": "a", "tag": "cough", "start": 0, "end": 0.1}, row])),
        where=f"{d / 'ev.jsonl'}:2"))(_row)))


@case("cascade-events-nonutf8")
def _(d):
    ev = write(d / "ev.jsonl", b'{"utt_id": "a", "tag": "cough", "start": 0, "end": 1}\n{"utt_id": "' + LATIN1 + b'"}\n')
    return Expect(cascade("--audio-dir", wav(d / "clips" / "a.wav").parent, "--lang", "en",
                          "--jsonl", d / "o.jsonl", "--events", ev), where=f"{ev}:2")


@case("cascade-wav-scp-missing")
def _(d):
    return Expect(cascade("--wav-scp", d / "nope.scp", "--lang", "en", "--jsonl", d / "o.jsonl"),
                  where=str(d / "nope.scp"))


@case("cascade-audio-dir-empty")
def _(d):
    (d / "clips").mkdir()
    return Expect(cascade("--audio-dir", d / "clips", "--lang", "zh", "--jsonl", d / "o.jsonl"),
                  where=str(d / "clips"))


@case("cascade-jsonl-is-events")
def _(d):
    ev = jsonl(d / "ev.jsonl", [{"utt_id": "a", "tag": "cough", "start": 0, "end": 0.1}])
    return Expect(cascade("--audio-dir", wav(d / "clips" / "a.wav").parent, "--lang", "en",
                          "--jsonl", ev, "--events", ev), where=str(ev))


# ----------------------------------------------------------------- utils/*.sh
@case("utils-validate_data_dir-missing")
def _(d):
    return Expect(util("validate_data_dir.sh", d / "nope"), where=str(d / "nope"), nonzero=True)


@case("utils-validate_data_dir-nonutf8-text")
def _(d):
    dd = datadir_files(d / "data")
    write(dd / "text", b"u0 hello\nu1 " + LATIN1 + b"\n")
    return Expect(util("validate_data_dir.sh", dd), where=f"{dd / 'text'}:2", nonzero=True)


@case("utils-fix_data_dir-missing")
def _(d):
    return Expect(util("fix_data_dir.sh", d / "nope"), where=str(d / "nope"), nonzero=True)


@case("utils-split_data-zero")
def _(d):
    dd = datadir_files(d / "data")
    return Expect(util("split_data.sh", dd, "0"), text=">= 1", nonzero=True)


@case("utils-split_data-abc")
def _(d):
    dd = datadir_files(d / "data")
    return Expect(util("split_data.sh", dd, "abc"), text="abc", nonzero=True)


@case("utils-subset_data_dir-missing-list")
def _(d):
    dd = datadir_files(d / "data")
    return Expect(util("subset_data_dir.sh", "--utt-list", d / "nope", dd, d / "sub"),
                  where=str(d / "nope"), nonzero=True)


@case("utils-combine_data-missing-src")
def _(d):
    dd = datadir_files(d / "data")
    return Expect(util("combine_data.sh", d / "out", dd, d / "nope"), where=str(d / "nope"), nonzero=True)


@case("utils-copy_data_dir-missing-src")
def _(d):
    return Expect(util("copy_data_dir.sh", d / "nope", d / "out"), where=str(d / "nope"), nonzero=True)


def _dest_cases():
    """Each data-dir writer with the destination equal to the source (also through a symlink) or an existing file."""
    calls = {"subset_data_dir": lambda src, dest: ("subset_data_dir.sh", "--first", "1", src, dest),
             "combine_data": lambda src, dest: ("combine_data.sh", dest, src),
             "copy_data_dir": lambda src, dest: ("copy_data_dir.sh", src, dest)}
    for tool, argv in calls.items():
        def same(d, argv=argv):
            dd = datadir_files(d / "data")
            (d / "link").symlink_to(dd)
            return Expect(util(*argv(dd, d / "link")), where=str(d / "link"), text="is the source", nonzero=True)

        def onto_file(d, argv=argv):
            dd = datadir_files(d / "data")
            f = write(d / "notes.txt", "keep me\n")
            return Expect(util(*argv(dd, f)), where=str(f), text="existing file", nonzero=True)
        CASES.append(Case(f"utils-{tool}-dest-is-source", same))
        CASES.append(Case(f"utils-{tool}-dest-is-file", onto_file))


_dest_cases()


for _tool in ("validate_data_dir.sh", "get_utt2dur.sh"):
    CASES.append(Case(f"utils-{_tool[:-3]}-nj-zero",
                      (lambda t: lambda d: Expect(util(t, "--nj", "0", datadir_files(d / "data")), text="--nj",
                                                  code=2))(_tool)))


@case("utils-subset_data_dir-zero")
def _(d):
    dd = datadir_files(d / "data")
    return Expect(util("subset_data_dir.sh", dd, "0", d / "sub"), text=">= 1", nonzero=True)


@case("utils-subset_data_dir-more-than-the-set")
def _(d):
    dd = datadir_files(d / "data", n=2)
    return Expect(util("subset_data_dir.sh", "--first", dd, "3", d / "sub"), where=str(dd), text="has only 2",
                  nonzero=True)


@case("utils-subset_data_dir-list-selects-nothing")
def _(d):
    dd = datadir_files(d / "data")
    lst = write(d / "ids", "nobody\n")
    return Expect(util("subset_data_dir.sh", "--utt-list", lst, dd, d / "sub"), where=str(lst),
                  text="selects no utterance", nonzero=True)


@case("utils-get_utt2dur-missing")
def _(d):
    return Expect(util("get_utt2dur.sh", d / "nope"), where=str(d / "nope"), nonzero=True)


@case("utils-get_utt2dur-junk-audio")
def _(d):
    dd = datadir_files(d / "data", text=False)
    junk = write(d / "junk.wav", b"junk")
    write(dd / "wav.scp", f"u0 {junk}\nu1 {junk}\n")
    return Expect(util("get_utt2dur.sh", dd), where=str(junk), nonzero=True)


@case("utils-filter_scp-missing")
def _(d):
    f = write(d / "a.scp", "u0 x\n")
    return Expect(util("filter_scp.pl", d / "nope", f), where=str(d / "nope"), nonzero=True)


@case("utils-split_scp-no-outputs")
def _(d):
    f = write(d / "a.scp", "u0 x\n")
    return Expect(util("split_scp.pl", f), nonzero=True, text="split_scp")


@case("utils-split_scp-more-outputs-than-lines")
def _(d):
    f = write(d / "a.scp", "u0 x\n")
    return Expect(util("split_scp.pl", f, d / "1", d / "2"), where=str(f), nonzero=True)


@case("utils-utt2spk_to_spk2utt-missing")
def _(d):
    return Expect(util("utt2spk_to_spk2utt.pl", d / "nope"), where=str(d / "nope"), nonzero=True)


@case("utils-spk2utt_to_utt2spk-missing")
def _(d):
    return Expect(util("spk2utt_to_utt2spk.pl", d / "nope"), where=str(d / "nope"), nonzero=True)


@case("utils-run.pl-bad-range")
def _(d):
    return Expect(util("run.pl", "JOB=3:1", d / "log.JOB.log", "true"), text="JOB=3:1", nonzero=True)


@case("utils-run.pl-no-command")
def _(d):
    return Expect(util("run.pl", d / "log.log"), nonzero=True, text="run.pl")


@case("utils-run.pl-unknown-option", "success")
def _(d):
    # Kaldi's run.pl ignores queue options (one $cmd for every backend); a typo is warned about
    return Expect(util("run.pl", "--bogus", "1", d / "log.log", "true"), code=0,
                  text="unknown option --bogus ignored")


@case("utils-run.pl-failing-job-names-log")
def _(d):
    return Expect(util("run.pl", "JOB=1:2", d / "log.JOB.log", "exit", "3"),
                  where=str(d / "log.1.log"), nonzero=True)


@case("utils-slurm.pl-bad-range")
def _(d):
    return Expect(util("slurm.pl", "JOB=a:2", d / "log.JOB.log", "true"), text="JOB=a:2", nonzero=True)


@case("utils-fork_recipe-bad-lang")
def _(d):
    return Expect(util("fork_recipe.sh", ROOT / "egs" / "nvv_asr_en", d / "nvv_asr_xx", "--lang", "x y"),
                  text="x y", nonzero=True)


@case("utils-fork_recipe-missing-src")
def _(d):
    return Expect(util("fork_recipe.sh", d / "nope", d / "out", "--lang", "de"), where=str(d / "nope"),
                  nonzero=True)


@case("utils-fork_recipe-dest-exists")
def _(d):
    (d / "dest").mkdir()
    return Expect(util("fork_recipe.sh", ROOT / "egs" / "nvv_asr_en", d / "dest", "--lang", "de"),
                  where=str(d / "dest"), nonzero=True)


# ----------------------------------------------------------------- each recipe's run.sh options
def recipe_copy(d: Path, recipe: str) -> Path:
    """A recipe dir under ``d`` whose links point into this checkout (runs write only there)."""
    src = ROOT / "egs" / recipe
    dst = d / "egs" / recipe
    dst.mkdir(parents=True)
    for p in src.iterdir():
        if p.name in ("exp", "data", "dump", "corpus", "submission") or p.name.endswith(".md"):
            continue
        target = p.resolve()
        (dst / p.name).symlink_to(target)
    return dst


RUN_OPTS = [("stage-abc", ["--stage", "abc"], "--stage", 2),
            ("stage-99", ["--stage", "99"], "--stage", 2),
            ("stage-after-stop", ["--stage", "5", "--stop-stage", "2"], "--stage", 2),
            ("preset-bogus", ["--preset", "huge"], "--preset", 2),
            ("unknown-option", ["--no-such-option", "1"], "--no-such-option", None),
            ("missing-value", ["--stage"], "--stage", None),
            ("positional", ["extra"], "extra", 2),
            ("nj-zero", ["--nj", "0"], "--nj", 2),
            ("nj-abc", ["--nj", "abc"], "--nj", 2)]
RECIPE_OPTS = {  # options of one recipe: (name, args, text the message holds)
    "nvv_asr_en": [("token-type-bogus", ["--token_type", "words"], "--token_type"),
                   ("unmapped-bogus", ["--unmapped", "keep"], "--unmapped"),
                   ("whisper-maybe", ["--whisper", "maybe"], "--whisper"),
                   ("lang-unknown", ["--lang", "xx-nope"], "xx-nope"),
                   ("mini-dir-missing", ["--mini_dir", "/nonexistent/mini"], "/nonexistent/mini"),
                   ("asr-method-bogus", ["--asr_method", "kaldi"], "--asr_method")],
    "nvv_tts": [("corpus-bogus", ["--corpus", "bogus"], "--corpus"),
                ("world-voicing-bogus", ["--world_voicing", "1.5"], "--world_voicing"),
                ("corpus-not-in-db", ["--corpus", "nvbench"], "NVBENCH"),
                ("yamnet-bogus", ["--yamnet", "maybe"], "--yamnet"),
                ("vocoder-bogus", ["--vocoder", "wavenet"], "--vocoder"),
                ("infer-jsonl-missing", ["--stage", "6", "--stop-stage", "6", "--infer_jsonl", "/nonexistent.jsonl"],
                 "/nonexistent")],
    "vivc": [("corpus-bogus", ["--corpus", "bogus"], "--corpus"),
             ("corpus-not-in-db", ["--corpus", "vlsp2025_vc"], "VLSP2025_VC"),
             ("pairs-missing", ["--pairs", "/nonexistent/pairs.tsv"], "/nonexistent/pairs.tsv")],
    "sqa": [("corpus-bogus", ["--corpus", "bogus"], "--corpus"),
            ("corpus-not-in-db", ["--corpus", "qualispeech"], "QUALISPEECH"),
            ("region-tune-joint", ["--region_tune", "joint"], "--region_tune")],
}
for _recipe, _opts in RECIPE_OPTS.items():
    for _name, _args, _text in _opts:
        CASES.append(Case(
            f"run.sh-{_recipe}-{_name}",
            (lambda r, a, t: lambda d: Expect(["./run.sh", *(["--stop-stage", "0"] if "--stop-stage" not in a else []), *a],
                                              cwd=str(recipe_copy(d, r)), text=t, nonzero=True,
                                              timeout=90))(_recipe, _args, _text)))
for _recipe in RECIPES:
    for _name, _args, _text, _code in RUN_OPTS:
        CASES.append(Case(
            f"run.sh-{_recipe}-{_name}",
            (lambda r, a, t, c: lambda d: Expect(["./run.sh", "--stop-stage", "0", *a] if "--stop-stage" not in a
                                                 and a != ["--stage"] else ["./run.sh", *a],
                                                 cwd=str(recipe_copy(d, r)), text=t,
                                                 code=c if c is not None else 1, nonzero=c is None,
                                                 timeout=60))(_recipe, _args, _text, _code)))


# ----------------------------------------------------------------- more encodings and odd files
@case("score-vc-hyp-nonutf8")
def _(d):
    hyp = write(d / "hyp.tsv", VC_HEAD.encode() + b"a.wav\t80\t10\t70\t20\n" + LATIN1 + b".wav\t80\t10\t70\t20\n")
    return Expect(score("vc", "--hyp", hyp, "--output-json", d / "o.json"), where=f"{hyp}:3")


@case("score-vc-hyp-jsonl-badjson")
def _(d):
    hyp = write(d / "hyp.jsonl", b'{"utt": "a.wav", "sim_ref_out": 80, "sim_src_out": 10, "mos": 70, "wer": 20}\n{"utt": \n')
    return Expect(score("vc", "--hyp", hyp, "--output-json", d / "o.json"), where=f"{hyp}:2")


@case("score-nvbench-ref-nonutf8")
def _(d):
    ref = write(d / "ref", b"u1 hello there\nu2 " + LATIN1 + b"\n")
    hyp = write(d / "hyp", "u1 hello there\nu2 good\n")
    return Expect(score("nvbench", "--format", "kaldi", "--lang", "en", "--ref", ref, "--hyp", hyp,
                        "--output-json", d / "o.json"), where=f"{ref}:2")


@case("score-validate-track2-fix-to-unwritable")
def _(d):
    wav(d / "sub" / "u1.wav", sr=22050)
    ref = jsonl(d / "ref.jsonl", [{"utt_id": "u1"}])
    blocker = write(d / "blocker", "a file")
    return Expect(score("validate-track2", "--dir", d / "sub", "--ref", ref, "--fix-to", blocker / "x"),
                  where=str(blocker / "x"), nonzero=True)


@case("score-validate-vc-pairs-nonutf8")
def _(d):
    pairs = write(d / "pairs.tsv", b"s.wav\tt.wav\tc.wav\ns.wav\tt.wav\t" + LATIN1 + b".wav\n")
    return Expect(score("validate-vc", "--pairs", pairs, "--dir", d), where=f"{pairs}:2")


@case("score-track1-hyp-fifo")
def _(d):
    ref = jsonl(d / "ref.jsonl", T1_REF)
    os.mkfifo(d / "hyp.fifo")
    return Expect(score("track1", "--single-language", "--ref", ref, "--hyp", d / "hyp.fifo", "--output-json", d / "o.json"),
                  where=str(d / "hyp.fifo"), timeout=30)


@case("prep-generic-fifo-manifest")
def _(d):
    os.mkfifo(d / "m.jsonl")
    return Expect(prep("generic", "--src", d / "m.jsonl", "--out", d / "out"), where=str(d / "m.jsonl"),
                  timeout=30)


@case("datadir-fix-nonutf8")
def _(d):
    dd = datadir_files(d / "data")
    write(dd / "utt2spk", b"u0 u0\n" + LATIN1 + b" u1\n")
    return Expect(datadir("fix", dd), where=f"{dd / 'utt2spk'}:2", nonzero=True)


@case("datadir-copy-nonutf8")
def _(d):
    dd = datadir_files(d / "data")
    write(dd / "wav.scp", b"u0 a.wav\n" + LATIN1 + b" b.wav\n")
    return Expect(datadir("copy", dd, d / "copy"), where=f"{dd / 'wav.scp'}:2", nonzero=True)


@case("datadir-utt2dur-missing-audio")
def _(d):
    dd = datadir_files(d / "data", text=False)
    write(dd / "wav.scp", f"u0 {d / 'nope0.wav'}\nu1 {d / 'nope1.wav'}\n")
    return Expect(datadir("utt2dur", dd), where=str(d / "nope0.wav"), nonzero=True)


@case("datadir-split-wav-scp-nonutf8")
def _(d):
    dd = datadir_files(d / "data")
    write(dd / "wav.scp", b"u0 a.wav\n" + LATIN1 + b" b.wav\n")
    return Expect(datadir("split", dd, "2"), where=f"{dd / 'wav.scp'}:2", nonzero=True)


@case("synth-vc-nj-huge-out-unwritable")
def _(d):
    blocker = write(d / "blocker", "x")
    return Expect(synth("vc", "--preset", "ci", "--out", blocker / "c"), where=str(blocker), nonzero=True)


@case("decode_dir-data-dir-missing")
def _(d):
    exp = _fake_asr_exp(d)
    return Expect(decode_dir("--asr-exp", exp, "--data-dir", d / "nope", "--out", d / "o.text"),
                  where=str(d / "nope"), nonzero=True)


# ----------------------------------------------------------------- bad bytes far down, odd file names
@case("prep-generic-latin1-on-line-2999")
def _(d):
    wav(d / "a.wav")
    lines = [json.dumps({"audio": "a.wav", "utt_id": f"u{i}", "text": "hello"}).encode() for i in range(3000)]
    lines[2998] = lines[2998].replace(b"hello", b"h" + b"\xe9" + b"llo")
    man = write(d / "m.jsonl", b"\n".join(lines) + b"\n")
    return Expect(prep("generic", "--src", man, "--out", d / "out", "--lang", "en"), where=f"{man}:2999")


@case("datadir-validate-latin1-on-line-2999")
def _(d):
    dd = datadir_files(d / "data")
    ids = [f"u{i:04d}" for i in range(3000)]
    w = d / "audio" / "u0.wav"
    write(dd / "wav.scp", "".join(f"{u} {w}\n" for u in ids))
    write(dd / "utt2spk", "".join(f"{u} {u}\n" for u in ids))
    write(dd / "spk2utt", "".join(f"{u} {u}\n" for u in ids))
    text = [f"{u} hello".encode() for u in ids]
    text[2998] += b" caf\xe9"
    write(dd / "text", b"\n".join(text) + b"\n")
    return Expect(datadir("validate", "--no-wav", dd), where=f"{dd / 'text'}:2999", nonzero=True)


@case("score-validate-track2-latin1-file-name")
def _(d):
    # a name that is not UTF-8 is printed escaped (no UnicodeEncodeError under PYTHONIOENCODING=UTF-8)
    sub = d / "sub"
    wav(sub / "u1.wav")
    os.rename(wav(sub / "tmp.wav"), bytes(sub) + b"/caf\xe9.wav")
    ref = jsonl(d / "ref.jsonl", [{"utt_id": "u1"}])
    return Expect(score("validate-track2", "--dir", sub, "--ref", ref), where=f"{sub}/caf\\udce9.wav",
                  text="UNKNOWN_SAMPLES")


@case("decode_dir-audio-dir-latin1-file-name")
def _(d):
    exp = _fake_asr_exp(d)
    os.rename(wav(d / "clips" / "tmp.wav"), bytes(d) + b"/clips/caf\xe9 x.wav")
    return Expect(decode_dir("--asr-exp", exp, "--audio-dir", d / "clips", "--out", d / "o.text"),
                  text="file name without spaces", nonzero=True)


# ----------------------------------------------------------------- chorus-sqa with a (tiny, untrained) model
def _sqa_model(d: Path) -> Path:
    import numpy as np
    import torch
    from pyutils.sqa.common import FAULTS
    from pyutils.sqa.model import ModelConfig, SQAModel, save_model
    torch.manual_seed(0)
    m = d / "exp"
    m.mkdir(parents=True)
    save_model(str(m / "model.pt"), SQAModel(ModelConfig(input_dim=80, conv_channels=8, rnn_hidden=4, rnn_layers=1)),
               {"mean": np.zeros(80, np.float32), "std": np.ones(80, np.float32)})
    prm = {"median": 1, "threshold": 0.5, "merge_gap": 0.0, "min_dur": 0.0, "utt_threshold": 0.0}
    write(m / "postproc.json", json.dumps({"params": {f: prm for f in FAULTS}}))
    return m


@case("sqa-input-missing")
def _(d):
    return Expect(sqa("--model", _sqa_model(d), d / "nope.wav"), where=str(d / "nope.wav"), nonzero=True)


@case("sqa-input-latin1-file-name", "success")
def _(d):
    m = _sqa_model(d)
    os.rename(wav(d / "clips" / "tmp.wav", seconds=1.0), bytes(d) + b"/clips/caf\xe9.wav")
    return Expect(sqa("--model", m, d / "clips"), code=0, text="caf\\udce9.wav: score")


@case("sqa-input-only-junk")
def _(d):
    m = _sqa_model(d)
    junk = write(d / "clips" / "a.wav", b"RIFF junk")
    return Expect(sqa("--model", m, d / "clips"), where=str(junk), nonzero=True)


@case("sqa-postproc-json-broken")
def _(d):
    m = _sqa_model(d)
    write(m / "postproc.json", b'{"params": ' + LATIN1)
    wav(d / "clips" / "a.wav", seconds=1.0)
    return Expect(sqa("--model", m, d / "clips"), where=str(m / "postproc.json"), nonzero=True)


@case("sqa-postproc-region-threshold-bad")
def _(d):
    m = _sqa_model(d)
    pp = json.loads((m / "postproc.json").read_text())
    write(m / "postproc.json", json.dumps({**pp, "region_threshold": "high"}))
    wav(d / "clips" / "a.wav", seconds=1.0)
    return Expect(sqa("--model", m, d / "clips"), where=str(m / "postproc.json"), nonzero=True)


# ----------------------------------------------------------------- pyutils.vc.knn: unusable references
def _knn_pairs(d, ref: Path) -> Path:
    src = ROOT / "tools" / "models" / "real_speech" / "arctic_a0007.wav"
    return write(d / "pairs.tsv", f"{src}\t{ref}\tspk1-to-spk2.wav\n")


@case("vc-knn-reference-0.2s")
def _(d):
    pairs = _knn_pairs(d, wav(d / "short.wav", seconds=0.2))
    return Expect(py("pyutils.vc.knn", "--pairs", pairs, "--out", d / "out"), code=1,
                  where=str(d / "short.wav"), text="pair spk1-to-spk2", timeout=240, fork=False)


@case("vc-knn-reference-music-only")
def _(d):
    import numpy as np
    import soundfile as sf

    t = np.arange(4000) / 16000                       # 16 notes of 0.25 s, harmonics, decaying
    notes = [sum(0.5 ** h * np.sin(2 * np.pi * 220 * 2 ** (n % 7 / 12) * (h + 1) * t) for h in range(5))
             * np.exp(-6 * t) for n in range(16)]
    x = np.concatenate(notes)
    sf.write(d / "music.wav", (0.3 * x / np.abs(x).max()).astype(np.float32), 16000, subtype="PCM_16")
    pairs = _knn_pairs(d, d / "music.wav")
    return Expect(py("pyutils.vc.knn", "--pairs", pairs, "--out", d / "out"), code=1,
                  where=str(d / "music.wav"), text="YAMNet", timeout=240, fork=False)


# ----------------------------------------------------------------- pyutils.vc.pairs: source transcripts
def vc_pairs(*args):
    return py("pyutils.vc.pairs", *args)


@case("vc-pairs-text-column-on-some-lines")
def _(d):
    s, t = wav(d / "s.wav"), wav(d / "t.wav")
    pairs = write(d / "pairs.tsv", f"{s}\t{t}\ta.wav\txin chào\n{s}\t{t}\tb.wav\n")
    return Expect(vc_pairs("--pairs", pairs), where=f"{pairs}:2", text="TEXT_MISSING")


@case("vc-pairs-text-column-empty")
def _(d):
    s, t = wav(d / "s.wav"), wav(d / "t.wav")
    pairs = write(d / "pairs.tsv", f"{s}\t{t}\ta.wav\txin\n{s}\t{t}\tb.wav\t \n")
    return Expect(vc_pairs("--pairs", pairs), where=f"{pairs}:2", text="EMPTY_TEXT")


@case("vc-pairs-src-text-latin1")
def _(d):
    s, t = wav(d / "s.wav"), wav(d / "t.wav")
    pairs = write(d / "pairs.tsv", f"{s}\t{t}\ta.wav\n")
    text = write(d / "text", b"a xin\nb caf\xe9\n")
    return Expect(vc_pairs("--pairs", pairs, "--src-text", text), where=f"{text}:2", text="UNREADABLE_TEXT")


@case("vc-pairs-src-text-lacks-a-pair")
def _(d):
    s, t = wav(d / "s.wav"), wav(d / "t.wav")
    pairs = write(d / "pairs.tsv", f"{s}\t{t}\ta.wav\n{s}\t{t}\tb.wav\n")
    text = write(d / "text", "a xin chào\n")
    return Expect(vc_pairs("--pairs", pairs, "--src-text", text), where=f"{pairs}:2", text="NO_TRANSCRIPT")


@case("vc-pairs-src-text-missing")
def _(d):
    s, t = wav(d / "s.wav"), wav(d / "t.wav")
    pairs = write(d / "pairs.tsv", f"{s}\t{t}\ta.wav\n")
    return Expect(vc_pairs("--pairs", pairs, "--src-text", d / "nope.txt"), where=str(d / "nope.txt"))


# ----------------------------------------------------------------- running and classifying
def _env(root: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "LC_ALL": "C", "PYTHONIOENCODING": "UTF-8"}
    env["PATH"] = str(Path(PY).parent) + os.pathsep + env.get("PATH", "")
    return env


class _Running:
    """One case's command, started at once, polled by :func:`run_all`: a new process
    for shell commands, or for ``python -m module`` a fork of this (already importing)
    process that runs the module as ``__main__`` -- the same exit status, output and
    traceback as a new interpreter, without its start-up and imports for every case.
    Output goes to temp files; the command runs in a session of its own, killed
    whole on a timeout."""

    def __init__(self, e: Expect, cwd: str, env: dict, fork: bool):
        import tempfile
        import time
        self.e = e
        self.out = tempfile.TemporaryFile()
        self.err = tempfile.TemporaryFile()
        self.deadline = time.time() + e.timeout
        argv = [str(a) for a in e.argv]
        self.proc = None
        if fork and e.fork and is_python(e):
            sys.stdout.flush()
            sys.stderr.flush()
            self.pid = os.fork()
            if self.pid == 0:
                self._child(argv[2], argv[3:], cwd, env)
        else:
            self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                         stdout=self.out, stderr=self.err, start_new_session=True)
            self.pid = self.proc.pid

    def _child(self, module, args, cwd, env):  # never returns
        import runpy
        import traceback
        code = 1
        try:
            os.setsid()
            os.chdir(cwd)
            os.environ.clear()
            os.environ.update(env)
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            os.dup2(self.out.fileno(), 1)
            os.dup2(self.err.fileno(), 2)
            # fresh streams on fds 1/2 (under pytest sys.stdout/err are capture objects)
            sys.stdout = sys.__stdout__ = open(1, "w", encoding="utf-8", closefd=False)
            sys.stderr = sys.__stderr__ = open(2, "w", encoding="utf-8", errors="backslashreplace",
                                               closefd=False, buffering=1)
            sys.argv = [module, *args]
            sys.modules.pop(module, None)  # pre-imported by the parent: run it afresh as __main__
            try:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
                code = 0
            except SystemExit as e:
                if e.code is None or isinstance(e.code, int):
                    code = e.code or 0
                else:
                    print(e.code, file=sys.stderr)
            except BaseException:
                traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)

    def poll(self):
        """None while running; else (returncode or None after a timeout, stdout, stderr)."""
        import time
        if self.proc is not None:
            rc = self.proc.poll()
        else:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            rc = os.waitstatus_to_exitcode(status) if done else None
        if rc is None:
            if time.time() < self.deadline:
                return None
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            if self.proc is not None:
                self.proc.wait()
            else:
                os.waitpid(self.pid, 0)
            return None, "", ""
        texts = []
        for f in (self.out, self.err):
            f.seek(0)
            texts.append(f.read().decode("utf-8", "replace"))
            f.close()
        return rc, texts[0], texts[1]


def classify(e: Expect, rc, out, err) -> tuple[str, str]:
    if rc is None:
        return "hang", f"still running after {e.timeout:.0f} s"
    both = out + err
    detail = f"exit {rc}\n--- stderr:\n{err[-3000:]}\n--- stdout:\n{out[-1500:]}"
    if "Traceback (most recent call last)" in both:
        return "traceback", detail
    if e.code != 0 and rc == 0:
        return "silent", detail
    if e.nonzero:
        if rc == 0 or rc < 0:
            return "wrong", detail
    elif rc != e.code:
        return "wrong", detail
    if e.where and e.where not in err:
        return "wrong", f"{e.where!r} not named\n{detail}"
    if e.text and e.text not in both:
        return "wrong", f"{e.text!r} not in the output\n{detail}"
    return "ok", detail


def is_python(e: Expect) -> bool:
    return e.argv[:2] == [PY, "-m"]


def run_all(cases, base: Path, root: Path = ROOT, fork: bool = True, parallel: int = 4) -> dict:
    """{case name: (outcome, detail)}, ``parallel`` cases at a time. No threads: forking
    is safe only from a single-threaded process."""
    import time
    env = _env(root)
    made = {}
    for c in cases:
        d = base / c.name
        d.mkdir(parents=True, exist_ok=True)
        made[c.name] = c.make(d)
    if fork:
        for mod in {e.argv[2] for e in made.values() if is_python(e) and e.fork}:
            __import__(mod)  # imported once here, shared by every forked case
    todo = list(made.items())
    running: dict = {}
    results = {}
    while todo or running:
        while todo and len(running) < parallel:
            name, e = todo.pop(0)
            running[name] = _Running(e, e.cwd or str(base / name), env, fork)
        for name in list(running):
            r = running[name].poll()
            if r is not None:
                results[name] = classify(made[name], *r)
                del running[name]
        time.sleep(0.005)
    return results


def census(names=None, fork=True) -> dict:
    import tempfile
    base = Path(tempfile.mkdtemp(prefix="hostile."))
    chosen = [c for c in CASES if not names or c.name in names]
    results = run_all(chosen, base, fork=fork)
    counts: dict = {}
    for name, (outcome, detail) in results.items():
        counts[outcome] = counts.get(outcome, 0) + 1
        if outcome != "ok":
            first = detail.strip().splitlines()
            print(f"{outcome:9s} {name}: {' | '.join(first[:4])[:300]}")
    print(json.dumps({"cases": len(results), **counts}))
    return counts


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="census of the hostile-input table (of the checkout "
                                             "this file is in)")
    ap.add_argument("--subprocess", action="store_true", help="a new interpreter per case (slower)")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    census(a.names, fork=not a.subprocess)
