"""Decode a wav.scp (or a Kaldi data dir) with a trained NVV-ASR exp dir into a text file.

The entry point for other recipes (e.g. egs/nvv_tts decodes its synthesised audio)::

    python -m pyutils.asr.decode_dir --asr-exp ../nvv_asr_en/exp/asr_train_asr_default_en_bpe300 \\
        --wav-scp data/synth/wav.scp --out exp/asr_decode/synth/text [--nj 2] [--work-dir DIR]

Any folder of audio (wav, flac, mp3, ogg; any rate, mono or stereo) straight to a
Track 1 submission (the utterance id is the file name without extension)::

    python -m pyutils.asr.decode_dir --asr-exp egs/nvv_asr_en/exp/asr_train_asr_whisper_default_en_whisper \\
        --audio-dir my_clips/ --out my_clips.text --jsonl my_clips.track1.jsonl

It runs stages 2 (dump, any audio format/rate) and 6 (decode) of ``local/nvv_asr.sh`` in
the model's recipe dir (ESPnet's config.yaml holds paths relative to it) with
``--skip_train true``; all intermediate files go to ``--work-dir`` (default: next to
``--out``), nothing is written into the model's exp dir. ``--out`` gets one line
``<utt_id> <tagged transcript>`` per entry of the wav.scp (empty when nothing was
recognised), in the official Track 1 form. Recordings longer than ``--max-segment`` (28 s)
are split at pauses into parts that fit Whisper's 30 s window, decoded, and their texts
joined (``pyutils.asr.long_segments``), so nothing after 30 s is lost. The language and
token settings come from ``<asr-exp>/recipe_options.sh``, written when the model was trained.

A cascade exp dir (``local/nvv_asr.sh --asr_method cascade``, ``asr_method=cascade`` in its
``recipe_options.sh``) decodes without the recipe: its NVV detector
(``pyutils.nvv_detect.detect``) writes events, :mod:`pyutils.asr.cascade` transcribes
with frozen Whisper (long-form, never cut) and places them; ``--jsonl`` is validated with the
official Track 1 parser. A file that cannot be read gets an empty row and a message; the
others go on.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys

from pyutils.cli_types import non_negative_float, positive_int
from pyutils.io import atomic_write_lines


class DecodeDirError(Exception):
    """Invalid input (exit 2): the message names the file (and line)."""


# recipe_options.sh, written by stage 5: these keys, plain values. It comes with a model
# dir, i.e. from someone else: it is parsed here, never sourced by a shell.
RECIPE_OPTIONS = ("lang", "token_type", "nbpe", "nvv_tags", "fs", "whisper", "whisper_model", "asr_method")
_OPTION_LINE = re.compile(r"([a-z_]+)=([A-Za-z0-9_./:+@-]*)")


def read_recipe_options(path: str) -> dict:
    from pyutils.datadir.io import DataDirError, iter_lines
    opts = {}
    try:
        for lineno, line in iter_lines(path):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            m = _OPTION_LINE.fullmatch(line.strip())
            if not m or m.group(1) not in RECIPE_OPTIONS:
                raise DecodeDirError(f"{path}:{lineno}: expected one of {', '.join(RECIPE_OPTIONS)} "
                                     f"as key=plain-value, got {line[:60]!r}")
            opts[m.group(1)] = m.group(2)
    except DataDirError as exc:
        raise DecodeDirError(str(exc)) from None
    if "lang" not in opts:
        raise DecodeDirError(f"{path}: no lang= line (written by stage 5 of local/nvv_asr.sh)")
    return opts


def recipe_command(recipe_opts, exp, work, name, inference_model, gpu=False, nj=None, inference_config=None):
    """The ``local/nvv_asr.sh`` command line that dumps set ``name`` under ``work`` and decodes it
    with the trained model ``exp`` (stages 2-6, training skipped); ``recipe_opts`` are the options
    stage 5 recorded in the exp dir."""
    cmd = ["bash", "local/nvv_asr.sh"]
    for key, value in recipe_opts.items():
        cmd += [f"--{key}", value]
    cmd += ["--stage", "2", "--stop_stage", "6",
            "--skip_train", "true", "--asr_exp", exp,
            "--datadir", os.path.join(work, "data"), "--dumpdir", os.path.join(work, "dump"),
            "--expdir", os.path.join(work, "exp"), "--decode_root", os.path.join(work, "decode"),
            "--test_sets", name, "--package_sets", "", "--inference_model", inference_model,
            "--gpu_inference", "true" if gpu else "false"]
    if nj:
        cmd += ["--nj", str(nj)]
    if inference_config:
        cmd += ["--inference_config", os.path.abspath(inference_config)]
    return cmd


def main(argv=None) -> int:
    from pyutils.cli_types import tolerant_output
    tolerant_output()
    try:
        return _main(argv)
    except DecodeDirError as exc:
        print(f"decode_dir: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"decode_dir: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 1


def _main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--asr-exp", required=True, help="trained exp dir (ESPnet: config.yaml, valid.acc.ave.pth; "
                                                      "cascade: nvv_detector.npz, recipe_options.sh)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--wav-scp", help="wav.scp to decode (paths or pipes, any format/rate)")
    src.add_argument("--data-dir", help="Kaldi data dir to decode (its wav.scp, segments)")
    src.add_argument("--audio-dir", help="folder of audio files (searched recursively; id = file stem)")
    p.add_argument("--out", required=True, help="text file to write")
    p.add_argument("--jsonl", help="also write the Track 1 submission JSONL (chorus-score package-track1)")
    p.add_argument("--work-dir", default=None, help="dump/decode files (default: OUT's dir/decode_work)")
    p.add_argument("--nj", type=positive_int, default=None, help="parallel decode jobs (default: cores)")
    p.add_argument("--inference-config", default=None, help="default: the recipe's conf/decode_asr.yaml")
    p.add_argument("--inference-model", default="valid.acc.ave.pth")
    p.add_argument("--gpu", action="store_true", help="decode on GPU")
    p.add_argument("--max-segment", type=non_negative_float, default=28.0,
                   help="split longer recordings at pauses into parts of at most this many seconds, decode "
                        "each, join the texts (0: no split; Whisper models see 30 s); not with a --data-dir "
                        "that has its own segments")
    a = p.parse_args(argv)

    exp = os.path.abspath(a.asr_exp)
    opts = os.path.join(exp, "recipe_options.sh")
    if os.path.isfile(opts) and read_recipe_options(opts).get("asr_method") == "cascade":
        return decode_cascade(a, exp, read_recipe_options(opts))
    if not os.path.isfile(os.path.join(exp, "config.yaml")):
        raise DecodeDirError(f"{exp}/config.yaml not found: not a trained ASR exp dir")
    opts = os.path.join(exp, "recipe_options.sh")
    if not os.path.isfile(opts):
        raise DecodeDirError(f"{opts} not found (written by stage 5 of local/nvv_asr.sh)")
    recipe_opts = read_recipe_options(opts)
    # exp dirs are <recipe>/<expdir>/<asr_exp>: the recipe dir is two levels up.
    recipe = os.path.dirname(os.path.dirname(exp))
    if not os.path.isfile(os.path.join(recipe, "path.sh")):
        raise DecodeDirError(f"{recipe} (two levels above --asr-exp {exp}) is not a recipe dir (no path.sh)")
    out = os.path.abspath(a.out)
    work = os.path.abspath(a.work_dir or os.path.join(os.path.dirname(out), "decode_work"))
    src_dir = os.path.abspath(a.data_dir) if a.data_dir else None
    if a.audio_dir:
        wav_scp = os.path.join(work, "audio_dir.scp")
        os.makedirs(work, exist_ok=True)
        write_audio_dir_scp(a.audio_dir, wav_scp)
    else:
        wav_scp = os.path.abspath(a.wav_scp) if a.wav_scp else os.path.join(src_dir, "wav.scp")
    if not os.path.isfile(wav_scp):
        raise DecodeDirError(f"{wav_scp} not found")
    from pyutils.datadir.io import DataDirError, read_kv
    try:  # file:line errors now, not from inside a recipe stage
        if not read_kv(wav_scp):
            raise DecodeDirError(f"{wav_scp}: no entries")
    except DataDirError as exc:
        raise DecodeDirError(str(exc)) from None
    name = "set_" + hashlib.sha1(wav_scp.encode()).hexdigest()[:10]
    data = os.path.join(work, "data", name)
    os.makedirs(data, exist_ok=True)
    shutil.copyfile(wav_scp, os.path.join(data, "wav.scp"))
    segments = None
    if src_dir and os.path.isfile(os.path.join(src_dir, "segments")):
        shutil.copyfile(os.path.join(src_dir, "segments"), os.path.join(data, "segments"))
    elif a.max_segment > 0:
        segments = plan_long_inputs(wav_scp, os.path.join(data, "segments"), a.max_segment)

    cmd = recipe_command(recipe_opts, exp, work, name, a.inference_model, gpu=a.gpu, nj=a.nj,
                         inference_config=a.inference_config)
    print("decode_dir: (cd " + recipe + " && " + " ".join(cmd) + ")", file=sys.stderr)
    r = subprocess.run(cmd, cwd=recipe)
    if r.returncode != 0:
        return r.returncode
    hyp = os.path.join(work, "decode", name, "text")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    if segments:
        from pyutils.asr.long_segments import join_hypotheses
        from pyutils.datadir.io import write_kv

        write_kv(out, join_hypotheses(read_kv(hyp, allow_empty_value=True), segments))
    else:
        shutil.copyfile(hyp, out + ".tmp")
        os.replace(out + ".tmp", out)
    print(f"decode_dir: wrote {out}", file=sys.stderr)
    if a.jsonl:
        # the scorer of this interpreter (chorus-score need not be on PATH)
        r = subprocess.run([sys.executable, "-m", "pyutils.scoring.cli", "package-track1", "--text", out,
                            "--ref-ids", wav_scp, "--out", os.path.abspath(a.jsonl)])
        if r.returncode != 0:
            return r.returncode
        print(f"decode_dir: wrote {a.jsonl} (Track 1 JSONL)", file=sys.stderr)
    return 0


def decode_cascade(a, exp: str, opts: dict) -> int:
    """A cascade exp dir (``local/nvv_asr.sh --asr_method cascade``): its NVV detector's events,
    then :mod:`pyutils.asr.cascade` (frozen Whisper, long-form: no --max-segment split needed)."""
    lang = opts["lang"]
    if lang not in ("en", "zh"):
        raise DecodeDirError(f"{exp}/recipe_options.sh: lang={lang}: the cascade knows en and zh")
    det = os.path.join(exp, "nvv_detector.npz")
    if not os.path.isfile(det):
        raise DecodeDirError(f"{det} not found (written by stage 5 of local/nvv_asr.sh --asr_method cascade)")
    out = os.path.abspath(a.out)
    work = os.path.abspath(a.work_dir or os.path.join(os.path.dirname(out), "decode_work"))
    os.makedirs(work, exist_ok=True)
    if a.audio_dir:
        wav_scp = os.path.join(work, "audio_dir.scp")
        write_audio_dir_scp(a.audio_dir, wav_scp)
    else:
        wav_scp = os.path.abspath(a.wav_scp or os.path.join(a.data_dir, "wav.scp"))
        if a.data_dir and os.path.isfile(os.path.join(a.data_dir, "segments")):
            raise DecodeDirError(f"{a.data_dir}/segments: the cascade decodes whole recordings; give a wav.scp "
                                 f"of the segments' audio (or the recordings themselves: long inputs are fine)")
    if not os.path.isfile(wav_scp):
        raise DecodeDirError(f"{wav_scp} not found")
    from pyutils.datadir.io import DataDirError, read_kv
    try:
        if not read_kv(wav_scp):
            raise DecodeDirError(f"{wav_scp}: no entries")
    except DataDirError as exc:
        raise DecodeDirError(str(exc)) from None
    events = os.path.join(work, "events.jsonl")
    jsonl = os.path.abspath(a.jsonl) if a.jsonl else os.path.join(work, "track1.jsonl")
    py = sys.executable
    steps = [[py, "-m", "pyutils.nvv_detect.detect", "--wav-scp", wav_scp, "--model", det, "--out", events],
             [py, "-m", "pyutils.asr.cascade", "--wav-scp", wav_scp, "--lang", lang, "--events", events,
              "--model", opts.get("whisper_model") or "base", "--jsonl", jsonl, "--text", out,
              "--details", os.path.join(work, "details.jsonl"), "--threads", str(a.nj or 0)]]
    for cmd in steps:
        print("decode_dir: " + " ".join(cmd[1:]), file=sys.stderr)
        r = subprocess.run(cmd)
        if r.returncode != 0:
            return r.returncode
    print(f"decode_dir: wrote {out}" + (f" and {jsonl} (Track 1 JSONL, validated)" if a.jsonl else ""),
          file=sys.stderr)
    return 0


def plan_long_inputs(wav_scp: str, segments_path: str, max_s: float):
    """Kaldi ``segments`` splitting the recordings of ``wav_scp`` longer than ``max_s`` at pauses
    (:mod:`pyutils.asr.long_segments`); None (no file written) when every recording fits."""
    from pyutils.asr.long_segments import segments_for
    from pyutils.datadir.io import AudioReadError, read_kv, read_wav_scp_entry, wav_scp_entry_duration

    entries = read_kv(wav_scp)
    durations = {}
    for utt, entry in entries.items():
        try:
            durations[utt] = wav_scp_entry_duration(entry)
        except (AudioReadError, OSError, ValueError):
            durations[utt] = 0.0  # stage 2 reports it and decodes silence instead
    if max(durations.values()) <= max_s:
        return None

    def audio_of(utt):
        x, sr = read_wav_scp_entry(entries[utt])
        return (x.mean(axis=1) if x.ndim == 2 else x), sr

    try:
        segs = segments_for(durations, audio_of, max_s)
    except (AudioReadError, ValueError) as exc:
        raise DecodeDirError(f"{wav_scp}: {exc}") from None
    atomic_write_lines(segments_path, (f"{seg} {rec} {start:.3f} {end:.3f}\n" if end >= 0 else f"{seg} {rec} 0 -1\n"
                                       for seg, (rec, start, end) in segs.items()))
    n_long = sum(d > max_s for d in durations.values())
    print(f"decode_dir: {n_long} recordings longer than {max_s:g} s split at pauses into "
          f"{len(segs) - (len(durations) - n_long)} parts (joined after decoding)", file=sys.stderr)
    return segs


AUDIO_EXTS = (".wav", ".flac", ".mp3", ".ogg", ".opus")


def audio_dir_entries(folder: str) -> dict:
    """``{file stem: absolute path}`` of every audio file under ``folder`` (any of AUDIO_EXTS);
    ids must be unique and without spaces."""
    if not os.path.isdir(folder):
        raise DecodeDirError(f"--audio-dir {folder} is not a directory")
    found: dict = {}
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for f in sorted(files):
            stem, ext = os.path.splitext(f)
            if ext.lower() not in AUDIO_EXTS:
                continue
            path = os.path.abspath(os.path.join(root, f))
            if not stem or any(c.isspace() for c in stem):
                raise DecodeDirError(f"{path}: a file name without spaces is needed (it becomes the utt_id)")
            if stem in found:
                raise DecodeDirError(f"{path} and {found[stem]} have the same id {stem!r}")
            found[stem] = path
    if not found:
        raise DecodeDirError(f"no audio ({', '.join(AUDIO_EXTS)}) under {folder}")
    return dict(sorted(found.items(), key=lambda kv: kv[0].encode()))


def write_audio_dir_scp(folder: str, scp: str) -> int:
    """wav.scp of every audio file under ``folder`` (libsndfile reads all of AUDIO_EXTS;
    stage 2 resamples to 16 kHz mono). Ids are file stems and must be unique."""
    from pyutils.datadir.io import write_kv

    found = audio_dir_entries(folder)
    write_kv(scp, found)
    return len(found)


if __name__ == "__main__":
    sys.exit(main())
