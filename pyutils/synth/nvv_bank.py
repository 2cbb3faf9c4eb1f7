"""A bank of recorded nonverbal vocalisations (real human voices) for the NVV corpus.

Sources (Debian packages, acted NVVs of game characters; licences in
``pyutils/synth/README.md``): ``hedgewars-data`` voice packs (``Laugh``,
``PoisonCough``, ``PoisonMoan``, ``Hmm``), ``openarena-081-players`` player
sounds inside ``pak2-players.pk3`` (``gasp``: the gasp for air of a character
surfacing), ``fillets-ng-data`` (the viking laughs ``viking2/en/dr-7-sm*``),
``frozen-bubble-data`` (``snd/snore.ogg``, a snore).

``conf/nvv_bank.tsv`` is the manifest: every candidate clip with its tag, talker,
talker group, split, source (package, version, licence, file), SHA-256 of the
source bytes, YAMNet's agreement and a status (``used`` or ``rejected: why``). It is
written by ``python -m pyutils.synth.nvv_bank manifest`` (needs the packages and
YAMNet) and read by ``install`` (``make -C tools nvv_bank``), which checks every
source file against its pinned SHA-256, decodes it to 16 kHz mono, trims silence
(frames 40 dB under the peak) and writes ``tools/models/nvv_bank/<clip_id>.wav``
plus ``index.jsonl``.

Selection rules (``manifest``), in order:

* effected packs are rejected by name: hedgewars ``Robot`` (vocoder) and ``Singer``
  (sung), OpenArena ``skelebot`` (robot) and the creature voices ``gargoyle``,
  ``liz`` and ``merman`` (pitch-shifted);
* a clip whose bytes equal an earlier clip's is a duplicate;
* a clip whose YAMNet top class is not a human sound (AudioSet class index >= 67:
  animals, music, things) is rejected as non-human or effected (e.g. a laugh heard
  as "Turkey"). The clip's *agreement* is the score of the best class of its tag
  (:data:`pyutils.audio_tagger.TAG_CLASSES`), kept but never used to select.

Splits are by talker group, so no recording and no talker is on two sides: packs
or voices that share any identical file (e.g. hedgewars ``Default_pl`` and
``Russian_pl``) form one group; groups are ordered by a hash of their name and,
for every tag with >= 3 groups, the first unassigned group holding it (and leaving every
tag it holds another unassigned group, for train) goes to
``test`` and the next to ``dev`` (fewest groups first); the rest is ``train``.

The installed bank at run time (its checked index, the draw of an event's clip, extra banks):
:mod:`pyutils.synth.nvv_bank_index`.

Extra banks (``chorus-synth nvv --nvv-bank-extra DIR``): clips of a user's corpus with event
spans, e.g. the train speakers of ``chorus-prep deeply_nvv`` (``python -m
pyutils.synth.nvv_bank from-prep --prep data/deeply_nvv --out corpus/deeply_nvv/bank``),
built under the recipe's own dir and never shipped (:func:`build_from_prep`).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections import defaultdict
from pathlib import Path
from typing import Dict, Iterator, List, Sequence, Tuple

import numpy as np

from pyutils.io import atomic_dir, atomic_write
from pyutils.synth import SAMPLE_RATE
from pyutils.synth.nvv_bank_index import (EXTRA_DIGEST, INSTALL_TARGET, MANIFEST, BankError, default_dir,
                                          is_installed, manifest_digest)

COLUMNS = ("clip_id", "tag", "split", "talker", "group", "package", "version", "licence", "path",
           "sha256", "seconds", "yamnet_class", "yamnet_score", "yamnet_top", "status")

HW_ROOT = "/usr/share/games/hedgewars/Data/Sounds/voices"
OA_PK3 = "/usr/share/games/openarena/baseoa/pak2-players.pk3"
FI_ROOT = "/usr/share/games/fillets-ng/sound"
FB_SND = "/usr/share/games/frozen-bubble/snd"
PACKAGES = {
    "hedgewars-data": {"version": "1.0.2-6", "licence": "GFDL-1.3", "probe": HW_ROOT},
    "openarena-081-players": {"version": "0.8.5split-14", "licence": "GPL-2+", "probe": OA_PK3},
    "fillets-ng-data": {"version": "1.0.1-1.1", "licence": "GPL-2+", "probe": FI_ROOT},
    "frozen-bubble-data": {"version": "2.212-11", "licence": "GPL-2", "probe": FB_SND},
}
HW_TAGS = {"Laugh.ogg": "laugh", "PoisonCough.ogg": "cough", "PoisonMoan.ogg": "moan", "Hmm.ogg": "hum"}
EFFECTED = {"hedgewars-data": {"Robot": "vocoded voice pack", "Singer": "sung voice pack"},
            "openarena-081-players": {"skelebot": "robot voice", "gargoyle": "creature voice",
                                      "liz": "creature voice", "merman": "creature voice"}}
FIRST_NON_HUMAN_CLASS = 67          # YAMNet/AudioSet order: 0-66 human sounds, then animals, music, things


def sha256_bytes(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


# ------------------------------------------------------------------ sources
def read_source(package: str, path: str) -> bytes:
    """Bytes of a manifest ``path`` (``archive.pk3:member`` for a file inside a zip)."""
    probe = PACKAGES[package]["probe"]
    if not os.path.exists(probe):
        raise BankError(f"Debian package {package} is not installed ({probe} is missing); "
                        f"run `{INSTALL_TARGET}` as root (or apt-get install {package})")
    if ".pk3:" in path:
        archive, member = path.split(":", 1)
        try:
            with zipfile.ZipFile(archive) as z:
                return z.read(member)
        except (KeyError, zipfile.BadZipFile) as e:
            raise BankError(f"{archive} ({package}): cannot read {member}: {e}; "
                            f"reinstall {package} and rerun `{INSTALL_TARGET}`") from e
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise BankError(f"{path} ({package}): {e.strerror}; reinstall {package} and rerun "
                        f"`{INSTALL_TARGET}`") from e


def decode(b: bytes, sr_out: int = SAMPLE_RATE) -> np.ndarray:
    """Mono float32 at ``sr_out`` from WAV/OGG bytes (libsndfile)."""
    import soundfile as sf

    from pyutils.audio import resample

    x, sr = sf.read(io.BytesIO(b), dtype="float32", always_2d=True)
    return np.asarray(resample(x.mean(axis=1), sr, sr_out), dtype=np.float32)


def candidates() -> Iterator[dict]:
    """Every candidate clip of the installed packages: tag, talker, package, path, bytes."""
    for pack in sorted(os.listdir(HW_ROOT)):
        for name, tag in HW_TAGS.items():
            p = Path(HW_ROOT) / pack / name
            if p.is_file():
                yield {"tag": tag, "talker": f"hedgewars:{pack}", "package": "hedgewars-data",
                       "path": str(p), "pack_key": pack, "bytes": p.read_bytes()}
    with zipfile.ZipFile(OA_PK3) as z:
        for member in sorted(z.namelist()):
            parts = member.split("/")
            if len(parts) == 4 and parts[:2] == ["sound", "player"] and parts[3].lower() == "gasp.wav":
                yield {"tag": "gasp", "talker": f"openarena:{parts[2]}", "package": "openarena-081-players",
                       "path": f"{OA_PK3}:{member}", "pack_key": parts[2], "bytes": z.read(member)}
    for i in range(1, 9):
        p = Path(FI_ROOT) / "viking2" / "en" / f"dr-7-sm{i}.ogg"
        if p.is_file():
            yield {"tag": "laugh", "talker": "fillets-ng:viking2", "package": "fillets-ng-data",
                   "path": str(p), "pack_key": "viking2", "bytes": p.read_bytes()}
    p = Path(FB_SND) / "snore.ogg"
    if p.is_file():
        yield {"tag": "snore", "talker": "frozen-bubble:snore", "package": "frozen-bubble-data",
               "path": str(p), "pack_key": "snore", "bytes": p.read_bytes()}


def _pack_files(package: str, key: str) -> Dict[str, bytes]:
    if package == "hedgewars-data":
        d = Path(HW_ROOT) / key
        return {p.name: p.read_bytes() for p in sorted(d.glob("*.ogg"))}
    if package == "openarena-081-players":
        with zipfile.ZipFile(OA_PK3) as z:
            pre = f"sound/player/{key}/"
            return {m[len(pre):]: z.read(m) for m in z.namelist() if m.startswith(pre) and m.endswith(".wav")}
    return {}


def talker_groups(talkers: List[Tuple[str, str, str]]) -> Dict[str, str]:
    """talker -> group: talkers whose packs share any identical file are one group (union-find)."""
    parent = {t: t for t, _, _ in talkers}

    def find(t):
        while parent[t] != t:
            parent[t] = parent[parent[t]]
            t = parent[t]
        return t

    owner: Dict[str, str] = {}
    for talker, package, key in talkers:
        for data in _pack_files(package, key).values():
            h = sha256_bytes(data)
            if h in owner:
                a, b = find(owner[h]), find(talker)
                if a != b:
                    parent[max(a, b)] = min(a, b)
            else:
                owner[h] = talker
    return {t: find(t) for t in parent}


def assign_splits(group_tags: Dict[str, set]) -> Dict[str, str]:
    """group -> split (module docstring: test and dev get one group of every tag with >= 3 groups)."""
    order = sorted(group_tags, key=lambda g: hashlib.sha256(g.encode()).hexdigest())
    split: Dict[str, str] = {}
    tags = sorted({t for ts in group_tags.values() for t in ts},
                  key=lambda t: (sum(t in ts for ts in group_tags.values()), t))
    for target in ("test", "dev"):
        for tag in tags:
            holders = [g for g in order if tag in group_tags[g]]
            if len(holders) < 3 or any(split.get(g) == target for g in holders):
                continue
            # a group may go only if every tag it holds keeps an unassigned group (for train)
            free = [g for g in holders if g not in split and all(
                any(h != g and h not in split and u in group_tags[h] for h in order) for u in group_tags[g])]
            if free:
                split[free[0]] = target
    return {g: split.get(g, "train") for g in order}


def build_manifest(tagger=None) -> List[dict]:
    """Rows of ``conf/nvv_bank.tsv`` from the installed packages (see the module docstring)."""
    from pyutils.audio_tagger import YamNet, judge_scores

    tagger = tagger or YamNet.load()
    rows, seen = [], {}
    cands = list(candidates())
    groups = talker_groups(sorted({(c["talker"], c["package"], c["pack_key"]) for c in cands}))
    for c in cands:
        pkg = PACKAGES[c["package"]]
        x = decode(c["bytes"])
        scores = tagger.interval_scores(x, SAMPLE_RATE)
        top = int(np.argmax(scores))
        _, agree = judge_scores(scores, tagger, c["tag"])
        cls = max(tagger_classes(c["tag"]), key=lambda n: scores[tagger.index[n]], default="")
        h = sha256_bytes(c["bytes"])
        clip_id = f"{c['talker'].replace(':', '-')}-{c['tag']}-{Path(c['path']).stem}".replace(" ", "_")
        status = "used"
        effect = EFFECTED.get(c["package"], {}).get(c["pack_key"])
        if effect:
            status = f"rejected: {effect}"
        elif h in seen:
            status = f"rejected: duplicate of {seen[h]}"
        elif top >= FIRST_NON_HUMAN_CLASS:
            status = f"rejected: YAMNet hears a non-human sound ({tagger.classes[top]})"
        seen.setdefault(h, clip_id)
        rows.append({"clip_id": clip_id, "tag": c["tag"], "split": "", "talker": c["talker"],
                     "group": groups[c["talker"]], "package": c["package"], "version": pkg["version"],
                     "licence": pkg["licence"], "path": c["path"], "sha256": h,
                     "seconds": f"{len(x) / SAMPLE_RATE:.3f}", "yamnet_class": cls,
                     "yamnet_score": f"{agree:.3f}" if agree is not None else "",
                     "yamnet_top": "; ".join(f"{n} {s:.3f}" for n, s in tagger.top(scores, 3)),
                     "status": status})
    used = [r for r in rows if r["status"] == "used"]
    group_tags: Dict[str, set] = defaultdict(set)
    for r in used:
        group_tags[r["group"]].add(r["tag"])
    splits = assign_splits(group_tags)
    for r in rows:
        r["split"] = splits.get(r["group"], "") if r["status"] == "used" else ""
    return rows


def tagger_classes(tag: str):
    from pyutils.audio_tagger import TAG_CLASSES

    return TAG_CLASSES.get(tag, ())


def write_manifest(rows: List[dict], path: Path = MANIFEST) -> None:
    with atomic_write(path) as f:
        f.write("# Recorded NVV clips: written by `python -m pyutils.synth.nvv_bank manifest`, read by "
                f"`{INSTALL_TARGET}`; pyutils/synth/nvv_bank.py says how rows are chosen.\n")
        w = csv.DictWriter(f, COLUMNS, delimiter="\t", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def read_manifest(path: Path = MANIFEST) -> List[dict]:
    """Rows of the manifest; a malformed row raises ValueError naming the file and line."""
    with open(path, encoding="utf-8", newline="") as f:
        lines = [(i, ln) for i, ln in enumerate(f, 1) if not ln.startswith("#")]
    reader = csv.DictReader([ln for _, ln in lines], delimiter="\t")
    if tuple(reader.fieldnames or ()) != COLUMNS:
        raise ValueError(f"{path}: header {reader.fieldnames} is not {list(COLUMNS)}")
    rows = []
    for (lineno, _), row in zip(lines[1:], reader):
        if None in row or any(row[c] is None for c in COLUMNS) or row["package"] not in PACKAGES:
            raise ValueError(f"{path}:{lineno}: malformed row (columns or unknown package)")
        rows.append(row)
    return rows


# ------------------------------------------------------------------ install
def install(out: Path, manifest: Path = MANIFEST) -> int:
    """Check, decode and write every used clip (temp dir, then rename). Returns the clip count."""
    from pyutils.synth.audio import trim_silence, write_wav

    rows = [r for r in read_manifest(manifest) if r["status"] == "used"]
    for package in sorted({r["package"] for r in rows}):
        _check_version(package)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_dir(out) as tmp:
        index = []
        for r in rows:
            b = read_source(r["package"], r["path"])
            got = sha256_bytes(b)
            if got != r["sha256"]:
                raise BankError(f"{r['path']} (Debian package {r['package']}): SHA-256 {got} differs from "
                                f"the pinned {r['sha256']} in {manifest}; install {r['package']}="
                                f"{r['version']} and rerun `{INSTALL_TARGET}`")
            x = trim_silence(decode(b), SAMPLE_RATE, thresh_db=-40.0)
            wav = tmp / f"{r['clip_id']}.wav"
            write_wav(wav, x, SAMPLE_RATE)
            index.append({"clip_id": r["clip_id"], "tag": r["tag"], "split": r["split"],
                          "talker": r["talker"], "package": r["package"], "version": r["version"],
                          "licence": r["licence"], "path": r["path"], "sha256": r["sha256"],
                          "wav_sha256": hashlib.sha256(wav.read_bytes()).hexdigest(),
                          "yamnet_score": r["yamnet_score"]})
        (tmp / "index.jsonl").write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in index))
        (tmp / "MANIFEST_DIGEST").write_text(manifest_digest(manifest) + "\n")
    return len(index)


def _check_version(package: str) -> None:
    """The installed package's version is the pinned one (dpkg-query; skipped where absent)."""
    probe = PACKAGES[package]["probe"]
    if not os.path.exists(probe):
        raise BankError(f"Debian package {package} is not installed ({probe} is missing); "
                        f"run `{INSTALL_TARGET}` as root (or apt-get install {package})")
    if shutil.which("dpkg-query") is None:
        return
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True)
    want = PACKAGES[package]["version"]
    if r.returncode == 0 and r.stdout.strip() and r.stdout.strip() != want:
        print(f"nvv_bank: note: {package} {r.stdout.strip()} is installed, the manifest was made with {want}; "
              f"the SHA-256 of every clip decides", file=sys.stderr)


# ------------------------------------------------------------------ extra banks (a user's corpus)
def build_from_prep(prep: Path, out: Path, splits: Sequence[str] = ("train",),
                    licence: str = "CC BY-NC-ND 4.0", source: str = "deeply_nvv") -> Dict[str, int]:
    """An extra bank from a ``chorus-prep`` output with event spans (``chorus-prep deeply_nvv``):
    every utterance of ``splits`` with exactly one event is one clip, cut to the event span
    (``PREP/events/<split>.jsonl``), decoded to 16 kHz mono, in that split, talker = its speaker.
    Writes ``OUT/<clip_id>.wav``, ``OUT/index.jsonl`` (the columns of the installed bank) and
    ``OUT/BANK_DIGEST`` (SHA-256 of ``index.jsonl``). Built under a recipe's own dir from a
    user's copy of the corpus, never shipped. Returns clips per tag."""
    from pyutils.datadir.io import read_kv
    from pyutils.synth.audio import write_wav

    prep, counts = Path(prep), defaultdict(int)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_dir(out) as tmp:
        index = []
        for split in splits:
            d, evp = prep / split, prep / "events" / f"{split}.jsonl"
            if not (d / "wav.scp").is_file() or not evp.is_file():
                raise BankError(f"{prep}: no {split}/wav.scp or events/{split}.jsonl (run chorus-prep first)")
            scp = read_kv(d / "wav.scp")
            spk = read_kv(d / "utt2spk")
            for n, line in enumerate(evp.read_text(encoding="utf-8").splitlines(), 1):
                try:
                    row = json.loads(line)
                    utt, evs = row["utt_id"], row["events"]
                    path = scp[utt]
                except (ValueError, KeyError, TypeError) as e:
                    raise BankError(f"{evp}:{n}: bad events row or utterance not in wav.scp ({e})") from None
                if path.endswith("|"):
                    raise BankError(f"{d / 'wav.scp'}: {utt}: a pipe; an extra bank reads 16 kHz mono files")
                if len(evs) != 1:
                    continue
                ev = evs[0]
                b = Path(path).read_bytes()
                x = decode(b)
                a, z = int(ev["start"] * SAMPLE_RATE), int(ev["end"] * SAMPLE_RATE)
                x = x[max(0, a):min(len(x), z)]
                if len(x) < SAMPLE_RATE // 10:
                    continue
                clip_id = f"{source}-{utt}"
                wav = tmp / f"{clip_id}.wav"
                write_wav(wav, x, SAMPLE_RATE)
                index.append({"clip_id": clip_id, "tag": ev["tag"], "split": split,
                              "talker": f"{source}:{spk.get(utt, utt)}", "package": source, "version": "",
                              "licence": licence, "path": path, "sha256": sha256_bytes(b),
                              "wav_sha256": hashlib.sha256(wav.read_bytes()).hexdigest(), "yamnet_score": ""})
                counts[ev["tag"]] += 1
        if not index:
            raise BankError(f"{prep}: no clip with one event in the splits {', '.join(splits)}")
        text = "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in index)
        (tmp / "index.jsonl").write_text(text, encoding="utf-8")
        (tmp / EXTRA_DIGEST).write_text(hashlib.sha256(text.encode("utf-8")).hexdigest() + "\n")
    return dict(sorted(counts.items()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Recorded NVV sound bank: write the manifest, install, list")
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("manifest", help="scan the Debian packages and write conf/nvv_bank.tsv (needs YAMNet)")
    m.add_argument("--out", default=str(MANIFEST))
    i = sub.add_parser("install", help=f"check + decode the clips of the manifest ({INSTALL_TARGET})")
    i.add_argument("--out", default=str(default_dir()))
    i.add_argument("--manifest", default=str(MANIFEST))
    f = sub.add_parser("from-prep", help="an extra bank (chorus-synth nvv --nvv-bank-extra) from a chorus-prep "
                       "output with events/<split>.jsonl, e.g. chorus-prep deeply_nvv")
    f.add_argument("--prep", required=True, help="the chorus-prep --out dir")
    f.add_argument("--out", required=True, help="the bank dir (under the recipe's own dir; never shipped)")
    f.add_argument("--splits", default="train", help="comma-separated splits whose clips go in (default train)")
    f.add_argument("--licence", default="CC BY-NC-ND 4.0", help="the corpus licence, kept in index.jsonl")
    f.add_argument("--source", default="deeply_nvv", help="corpus name: clip id prefix and package column")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "from-prep":
            counts = build_from_prep(Path(a.prep), Path(a.out), [s for s in a.splits.split(",") if s],
                                     a.licence, a.source)
            print(f"nvv_bank: {sum(counts.values())} clips -> {a.out} ("
                  + ", ".join(f"{k}: {v}" for k, v in counts.items()) + ")")
            return 0
        if a.cmd == "manifest":
            rows = build_manifest()
            write_manifest(rows, Path(a.out))
            print(f"nvv_bank: {sum(r['status'] == 'used' for r in rows)} of {len(rows)} clips used -> {a.out}")
            return 0
        out, man = Path(a.out), Path(a.manifest)
        if is_installed(out, man):
            print(f"[tools] NVV sound bank ok in {out}")
            return 0
        n = install(out, man)
        print(f"[tools] NVV sound bank: {n} recorded clips in {out}")
        return 0
    except ValueError as e:                    # a malformed manifest: file:line in the message
        print(f"nvv_bank: error: {e}", file=sys.stderr)
        return 2
    except (BankError, OSError) as e:
        print(f"nvv_bank: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
