"""Whisper's byte-level BPE as ESPnet ``word`` tokens, with the 16 NVV tags atomic.

espnet2's own Whisper tokenizer (``token_type: whisper_multilingual``) expects the
transformers-based tokenizer of early openai-whisper releases, which current releases
no longer have; so the recipe pre-tokenises instead: each training transcript becomes
the Whisper token strings (``ĠThat Ġwas ...``) separated by spaces, and ESPnet reads
them with ``token_type: word`` and a token list whose order keeps Whisper's ids:

    ESPnet id 0          <blank>   (never a target; ESPnet drops id 0 from 1-best output)
    ESPnet id 1 + w      Whisper token w (w = 0 .. n_vocab-1; an empty entry -> <|unused_w|>)
    then                 the 16 tags ([laugh], [throat_clearing], ...), then <unk>

so that :class:`pyutils.whisper.espnet_models.ChorusWhisperDecoder` can place the
pretrained embedding rows at offset 1. A transcript's tokens start with Whisper's task
prefix ``<|en|> <|transcribe|> <|notimestamps|>`` (ESPnet adds ``<|startoftranscript|>``
and ``<|endoftext|>`` as sos/eos), as in Whisper's own training.

    python -m pyutils.asr.whisper_tokens token-list --model base --out tokens.txt
    python -m pyutils.asr.whisper_tokens encode --model base --lang en [--keys K] IN_TEXT OUT_TEXT
    python -m pyutils.asr.whisper_tokens decode --model base --lang zh IN_TEXT OUT_TEXT
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import unicodedata

from pyutils.asr import tags_text
from pyutils.asr.text_norm import NO_SPACE_LANGS
from pyutils.datadir.io import read_kv
from pyutils.io import atomic_write
from pyutils.langscript import to_simplified
from pyutils.whisper.weights import WhisperWeightsError, resolve

BLANK, UNK = "<blank>", "<unk>"
SOS, EOS = "<|startoftranscript|>", "<|endoftext|>"


class WhisperTokens:
    """Whisper's multilingual tokenizer (openai-whisper's tiktoken files, shipped in the
    package) for a model with ``n_vocab`` entries, and its token strings: GPT-2's
    byte-to-unicode form for text pieces (``Ġthe``), ``<|...|>`` for special tokens."""

    def __init__(self, n_vocab: int = 51865):
        import whisper.tokenizer as wtok

        # openai-whisper: n_vocab = 51765 + multilingual + num_languages
        num_languages = n_vocab - 51765 - 1
        if num_languages < 1:
            raise WhisperWeightsError(f"vocabulary of {n_vocab} entries: an English-only Whisper; "
                                      f"Chorus needs a multilingual one")
        self.tokenizer = wtok.get_tokenizer(True, num_languages=num_languages)
        enc = self.tokenizer.encoding
        if enc.n_vocab != n_vocab:
            raise WhisperWeightsError(f"tokenizer has {enc.n_vocab} entries, the model {n_vocab}")
        b2u = _bytes_to_unicode()
        special = {i: t for t, i in self.tokenizer.special_tokens.items()}
        self.vocab = [special.get(i) or "".join(b2u[b] for b in enc.decode_single_token_bytes(i))
                      for i in range(n_vocab)]
        self.vocab = [v if v and v == "".join(v.split()) else f"<|unused_{i}|>"
                      for i, v in enumerate(self.vocab)]
        self.ids = {v: i for i, v in enumerate(self.vocab)}
        self.eot = self.tokenizer.eot

    @functools.cached_property
    def languages(self) -> set[str]:
        return {v[2:-2] for v in self.vocab if v.startswith("<|") and v.endswith("|>")
                and 2 <= len(v) - 4 <= 3 and v[2:-2].isalpha() and v[2:-2].islower()}

    def token_list(self) -> list[str]:
        return [BLANK, *self.vocab, *tags_text.internal_tokens(), UNK]

    def prefix(self, lang: str) -> list[str]:
        lang = lang.replace("-", "_").split("_")[0]  # pt_br -> pt: Whisper knows base languages
        if lang not in self.languages:
            raise WhisperWeightsError(f"Whisper has no language token <|{lang}|>: use a Whisper "
                                      f"language ({', '.join(sorted(self.languages)[:12])}, ...)")
        return [f"<|{lang}|>", "<|transcribe|>", "<|notimestamps|>"]

    def encode(self, text: str, lang: str) -> list[str]:
        """Official tagged transcript -> token strings (prefix, BPE pieces, atomic tags)."""
        text = unicodedata.normalize("NFC", tags_text.to_internal(text, strict=True))
        out = self.prefix(lang)
        pos = 0
        spaced = lang not in NO_SPACE_LANGS
        for m in tags_text.BRACKET_RE.finditer(text):
            out += self._bpe(text[pos:m.start()], spaced)
            out.append(m.group(0))
            pos = m.end()
        out += self._bpe(text[pos:], spaced)
        return out

    def _bpe(self, segment: str, spaced: bool) -> list[str]:
        segment = " ".join(segment.split())
        if not segment:
            return []
        if spaced:  # Whisper transcripts put a space before each word, the first too
            segment = " " + segment
        return [self.vocab[i] for i in self.tokenizer.encoding.encode(segment)]

    def decode(self, tokens: list[str], lang: str) -> str:
        """Token strings -> text with internal tags; special and unknown tokens dropped, and a
        run of 3 or more identical tags (Whisper's repetition loop) kept once."""
        tag_set = set(tags_text.internal_tokens())
        tokens = collapse_tag_loops(tokens, tag_set)
        parts, run = [], []

        def flush():
            if run:
                parts.append(self.tokenizer.encoding.decode(run))
                run.clear()

        for t in tokens:
            if t in tag_set:
                flush()
                parts.append(f" {t} ")
            elif t in self.ids and self.ids[t] < self.eot:
                run.append(self.ids[t])
        flush()
        text = " ".join("".join(parts).split())
        if lang.startswith("zh"):
            text = to_simplified(text)
        return text


def collapse_tag_loops(tokens: list[str], tag_set: set, min_run: int = 3) -> list[str]:
    """Keep one of each run of >= ``min_run`` identical adjacent tags: greedy Whisper
    decoding can loop on a tag ("[laugh]" x 60); two in a row are left as they are."""
    out, i = [], 0
    while i < len(tokens):
        j = i
        while j < len(tokens) and tokens[j] == tokens[i]:
            j += 1
        out.extend(tokens[i:j] if tokens[i] not in tag_set or j - i < min_run else tokens[i:i + 1])
        i = j
    return out


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map (byte-level BPE token strings).
    Written out here because tiktoken works on bytes and has no such helper."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("\u00a1"), ord("\u00ac") + 1),
            *range(ord("\u00ae"), ord("\u00ff") + 1)]
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return out


def model_vocab_size(spec: str) -> int:
    """Number of token embeddings of a ``--whisper_model`` (without loading the weights
    where a small file tells)."""
    s = resolve(spec)
    if s.ct2_dir is not None and (s.ct2_dir / "vocabulary.txt").is_file():
        return sum(1 for _ in open(s.ct2_dir / "vocabulary.txt", encoding="utf-8"))
    if s.source.is_dir():
        return int(json.loads((s.source / "config.json").read_text(encoding="utf-8"))["vocab_size"])
    from pyutils.whisper.convert import from_openai_file

    return int(from_openai_file(s.source)["dims"]["n_vocab"])


@functools.lru_cache(maxsize=None)
def tokens_for(spec: str) -> WhisperTokens:
    """The tokenizer of a ``--whisper_model`` spec."""
    return WhisperTokens(model_vocab_size(spec))


def _encode_file(wt: WhisperTokens, src: str, dst: str, lang: str, keys: str | None) -> int:
    texts = read_kv(src, allow_empty_value=True)
    if keys:
        keep = read_kv(keys, allow_empty_value=True)
        texts = {k: v for k, v in texts.items() if k in keep}
    lines = []
    with open(src, encoding="utf-8") as f:
        line_of = {ln.split(maxsplit=1)[0]: n for n, ln in enumerate(f, 1) if ln.strip()}
    for utt, text in texts.items():
        try:
            lines.append(f"{utt} {' '.join(wt.encode(text, lang))}\n")
        except ValueError as e:
            raise SystemExit(f"{src}:{line_of.get(utt, '?')}: utterance {utt}: {e}")
    with atomic_write(dst) as f:
        f.writelines(sorted(lines, key=lambda s: s.split(" ", 1)[0].encode()))
    return len(lines)


def _decode_file(wt: WhisperTokens, src: str, dst: str, lang: str) -> int:
    hyps = read_kv(src, allow_empty_value=True)
    with atomic_write(dst) as f:
        for utt, toks in hyps.items():
            f.write(f"{utt} {wt.decode(toks.split(), lang)}".rstrip() + "\n")
    return len(hyps)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("token-list", help="write the ESPnet token list")
    p.add_argument("--model", default="base")
    p.add_argument("--out", required=True)
    for name, hlp in (("encode", "Kaldi text (official tags) -> token strings"),
                      ("decode", "ESPnet 1-best token strings -> text (internal tags)")):
        p = sub.add_parser(name, help=hlp)
        p.add_argument("--model", default="base")
        p.add_argument("--lang", required=True)
        if name == "encode":
            p.add_argument("--keys", help="keep only utterances listed in this file")
        p.add_argument("src")
        p.add_argument("dst")
    a = ap.parse_args(argv)
    try:
        wt = tokens_for(a.model)
        if a.cmd == "token-list":
            with atomic_write(a.out) as f:
                f.writelines(t + "\n" for t in wt.token_list())
            print(f"whisper tokens: {a.out}: {len(wt.token_list())} tokens", file=sys.stderr)
        elif a.cmd == "encode":
            n = _encode_file(wt, a.src, a.dst, a.lang, a.keys)
            print(f"whisper tokens: {n} transcripts {a.src} -> {a.dst}", file=sys.stderr)
        else:
            n = _decode_file(wt, a.src, a.dst, a.lang)
            print(f"whisper tokens: {n} hypotheses {a.src} -> {a.dst}", file=sys.stderr)
    except (WhisperWeightsError, OSError, json.JSONDecodeError) as e:
        print(f"whisper tokens: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
