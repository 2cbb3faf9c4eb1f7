"""Kaldi ``text`` (official tagged form) -> ESPnet training text.

Each line ``<utt> <transcript>`` is normalised with ``text_norm.normalise(lang)`` and
its tags rewritten in the internal form (``[throat_clearing]``); with
``--nvv-tags false`` the tags are removed instead (plain ASR, e.g. for VC).

    python -m pyutils.asr.prepare_text --lang en --nvv-tags true IN_TEXT OUT_TEXT
"""

from __future__ import annotations

import argparse
import sys

from pyutils.asr import tags_text, text_norm
from pyutils.cli_types import str2bool
from pyutils.io import atomic_write


def convert_line(transcript: str, lang: str, nvv_tags: bool) -> str:
    text = text_norm.normalise(transcript, lang)
    if nvv_tags:
        text = tags_text.to_internal(text, strict=True)
    else:
        text = tags_text.strip_tags(text)
        if text_norm.char_units(lang):
            text = text_norm.remove_cjk_spaces(text)
    return text


def convert_file(src: str, dst: str, lang: str, nvv_tags: bool) -> int:
    """Convert every line; errors name the file and line. Returns the number of lines."""
    out_lines = []
    with open(src, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            parts = line.split(maxsplit=1)
            utt, transcript = parts[0], parts[1] if len(parts) > 1 else ""
            try:
                out_lines.append(f"{utt} {convert_line(transcript, lang, nvv_tags)}".rstrip() + "\n")
            except ValueError as e:
                raise SystemExit(f"{src}:{n}: utterance {utt}: {e}")
    with atomic_write(dst) as f:
        f.writelines(out_lines)
    return len(out_lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lang", required=True)
    p.add_argument("--nvv-tags", type=str2bool, default=True)
    p.add_argument("src")
    p.add_argument("dst")
    a = p.parse_args(argv)
    n = convert_file(a.src, a.dst, a.lang, a.nvv_tags)
    print(f"prepare_text: {n} lines {a.src} -> {a.dst} (lang={a.lang}, nvv_tags={a.nvv_tags})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
