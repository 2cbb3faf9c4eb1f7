"""Data-dir steps of the VC recipe that no generic tool covers.

Commands::

    python -m pyutils.vc.prep holdout --data DIR --n-per-spk 2 --train OUT --dev OUT
    python -m pyutils.vc.prep norm-text IN_TEXT OUT_TEXT
    python -m pyutils.vc.prep tts-dir --text TEXT --utt2spk U2S --embed XVECTOR_SCP \
        [--wav-scp WAV_SCP] [--strict [--empty-text PLACEHOLDER]] [--lang vi] --out DIR

``holdout`` keeps every training speaker in both parts (speaker-stratified):
the last ``n`` utterances (byte order) of each speaker with at least ``n + 2``
go to the dev part, so validation (ASR accuracy, TTS loss, speaker EER)
uses unseen utterances of known speakers. ``tts-dir`` assembles a TTS data
dir whose ``spk_embed.scp`` holds one embedding per utterance (for a pairs
set: the embedding of the pair's reference clip).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, List, Optional, Tuple

from pyutils.datadir import read_kv, spk2utt_from_utt2spk, write_kv

_PER_UTT = ("wav.scp", "text", "utt2spk", "utt2dur", "text.orig")


def holdout(utt2spk: Dict[str, str], n_per_spk: int) -> Tuple[List[str], List[str]]:
    """Split utterances into (train, dev) keeping each speaker in train."""
    by_spk: Dict[str, List[str]] = {}
    for utt in sorted(utt2spk, key=lambda u: u.encode()):
        by_spk.setdefault(utt2spk[utt], []).append(utt)
    train, dev = [], []
    for spk in sorted(by_spk):
        utts = by_spk[spk]
        k = n_per_spk if len(utts) >= n_per_spk + 2 else 0
        train += utts[: len(utts) - k]
        dev += utts[len(utts) - k:]
    if not dev:
        raise ValueError(f"no speaker has >= {n_per_spk + 2} utterances: nothing to hold out")
    return train, dev


def write_subset(src: str, utts: List[str], out: str) -> int:
    os.makedirs(out, exist_ok=True)
    keep = set(utts)
    for name in _PER_UTT:
        path = os.path.join(src, name)
        if os.path.isfile(path):
            table = read_kv(path, allow_empty_value=True)
            write_kv(os.path.join(out, name), {u: v for u, v in table.items() if u in keep})
    u2s = read_kv(os.path.join(out, "utt2spk"))
    write_kv(os.path.join(out, "spk2utt"), spk2utt_from_utt2spk(u2s))
    return len(keep)


def normalize_text_file(src: str, out: str) -> Tuple[int, int]:
    """Vietnamese normalisation of a Kaldi text (utterances left empty are dropped)."""
    from pyutils.corpora.vi_text import normalize_vi

    table = read_kv(src, allow_empty_value=True)
    norm = {u: normalize_vi(t) for u, t in table.items()}
    kept = {u: t for u, t in norm.items() if t}
    write_kv(out, kept)
    return len(table), len(table) - len(kept)


def frontend_safe(text: str, lang: str) -> Tuple[str, str]:
    """``text`` without what the TTS front-end would refuse; returns (text, removed chars).

    A transcript of a conversion set comes from an ASR (or a user), not from the TTS's
    training data: brackets (read as NVV tags by pyutils.tts.frontend) and letters of another
    script (:func:`pyutils.langscript.foreign_letters`) would stop the synthesis of every pair, so
    they are removed here and the pair is reported instead.
    """
    from pyutils.langscript import foreign_letters

    removed = "".join(dict.fromkeys(ch for ch in text if ch in "[]"))
    clean = text.replace("[", " ").replace("]", " ")
    bad = foreign_letters(clean, lang)
    if bad:
        removed += bad
        clean = "".join(" " if ch in bad else ch for ch in clean)
    return " ".join(clean.split()), removed


def tts_dir(text: str, utt2spk: str, embed: str, out: str, wav_scp: Optional[str] = None,
            strict: bool = False, empty_text: Optional[str] = None,
            lang: Optional[str] = None) -> Tuple[int, List[str]]:
    """A TTS data dir: text, utt2spk, spk2utt, spk_embed.scp (+ wav.scp).

    Training sets (``strict=False``) keep the utterances that have text, speaker,
    embedding (and audio). A conversion set (``strict=True``) must convert every
    utterance of ``utt2spk`` (every pair): one without a speaker embedding (its
    reference clip was not embedded) is an error naming it, and one with an empty
    or missing transcript is an error too, unless ``empty_text`` gives a placeholder
    text for it (a counted fallback: the ids are returned and written to
    ``<out>/empty_text_fallback``). With ``lang`` (conversion sets), characters the TTS
    front-end of that language would refuse are removed first (:func:`frontend_safe`;
    the ids and the removed characters are listed in ``<out>/text_cleaned``), and a
    transcript left empty gets the placeholder. Returns (number of utterances, fallback ids).
    """
    texts = read_kv(text, allow_empty_value=True)
    u2s = read_kv(utt2spk)
    emb = read_kv(embed)
    wav = read_kv(wav_scp) if wav_scp else None
    fallback: List[str] = []
    cleaned: Dict[str, str] = {}
    if lang:
        for u, t in list(texts.items()):
            clean, removed = frontend_safe(t, lang)
            if removed:
                texts[u] = clean
                cleaned[u] = " ".join(repr(c) for c in removed)
    if strict:
        no_emb = sorted(u for u in u2s if u not in emb)
        if no_emb:
            raise ValueError(f"{embed}: no speaker embedding for {len(no_emb)} of {len(u2s)} "
                             f"utterance(s) (reference clip not embedded): {' '.join(no_emb)}")
        empty = sorted(u for u in u2s if not texts.get(u, "").strip())
        if empty and empty_text is None:
            raise ValueError(f"{text}: empty or missing transcript for {len(empty)} of {len(u2s)} "
                             f"utterance(s): {' '.join(empty)}")
        if empty:
            if not empty_text.strip():
                raise ValueError("the placeholder for empty transcripts must not be empty")
            texts.update({u: empty_text for u in empty})
            fallback = empty
    texts = {u: t for u, t in texts.items() if t.strip()}
    utts = [u for u in texts if u in u2s and u in emb]
    if wav is not None:
        utts = [u for u in utts if u in wav]
    if not utts:
        raise ValueError(f"{out}: no utterance has text, speaker and embedding")
    os.makedirs(out, exist_ok=True)
    write_kv(os.path.join(out, "text"), {u: texts[u] for u in utts})
    write_kv(os.path.join(out, "utt2spk"), {u: u2s[u] for u in utts})
    write_kv(os.path.join(out, "spk2utt"), spk2utt_from_utt2spk({u: u2s[u] for u in utts}))
    write_kv(os.path.join(out, "spk_embed.scp"), {u: emb[u] for u in utts})
    if wav is not None:
        write_kv(os.path.join(out, "wav.scp"), {u: wav[u] for u in utts})
    for name, table in (("empty_text_fallback", {u: empty_text for u in fallback}),
                        ("text_cleaned", {u: v for u, v in cleaned.items() if u in utts})):
        listing = os.path.join(out, name)
        if table:
            write_kv(listing, table)
        elif os.path.exists(listing):
            os.remove(listing)
    return len(utts), fallback


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("holdout")
    p.add_argument("--data", required=True)
    p.add_argument("--n-per-spk", type=int, default=2)
    p.add_argument("--train", required=True)
    p.add_argument("--dev", required=True)
    p = sub.add_parser("norm-text")
    p.add_argument("src")
    p.add_argument("out")
    p = sub.add_parser("tts-dir")
    p.add_argument("--text", required=True)
    p.add_argument("--utt2spk", required=True)
    p.add_argument("--embed", required=True)
    p.add_argument("--wav-scp", default=None)
    p.add_argument("--out", required=True)
    p.add_argument("--strict", action="store_true",
                   help="conversion set: every utterance of --utt2spk needs an embedding and a transcript")
    p.add_argument("--empty-text", default=None,
                   help="with --strict: placeholder text for empty transcripts (counted, listed)")
    p.add_argument("--lang", default=None,
                   help="remove characters the TTS front-end of this language refuses "
                        "(brackets, other scripts; listed in <out>/text_cleaned)")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "holdout":
            train, dev = holdout(read_kv(os.path.join(args.data, "utt2spk")), args.n_per_spk)
            write_subset(args.data, train, args.train)
            write_subset(args.data, dev, args.dev)
            print(f"{args.data}: {len(train)} utterances -> {args.train}, {len(dev)} -> {args.dev}")
        elif args.cmd == "norm-text":
            n, dropped = normalize_text_file(args.src, args.out)
            print(f"{args.out}: {n - dropped} of {n} transcripts normalised"
                  + (f" ({dropped} empty after normalisation dropped)" if dropped else ""))
        elif args.cmd == "tts-dir":
            n, fallback = tts_dir(args.text, args.utt2spk, args.embed, args.out, args.wav_scp,
                                  strict=args.strict, empty_text=args.empty_text, lang=args.lang)
            print(f"{args.out}: {n} utterances with text and speaker embedding")
            listing = os.path.join(args.out, "text_cleaned")
            if os.path.exists(listing):
                cleaned = read_kv(listing)
                print(f"WARNING: {len(cleaned)} of {n} transcripts had characters the {args.lang} TTS "
                      f"front-end cannot read, removed (listed in {listing}): {' '.join(cleaned)}",
                      file=sys.stderr)
            if fallback:
                print(f"WARNING: {len(fallback)} of {n} utterances had an empty transcript and get the "
                      f"placeholder {args.empty_text!r} (listed in {args.out}/empty_text_fallback): "
                      f"{' '.join(fallback)}", file=sys.stderr)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
