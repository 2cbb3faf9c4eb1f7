"""Spectrogram page for the TTS report: real vs synthesised audio of a few test
utterances, with the spans where each tag was asked for.

Real audio: tag spans from the corpus' per-event times (events.jsonl).
Synthesis: the span of the tag's input token, from the model's per-token
durations (attention for Tacotron2, the duration predictor for VITS). The NVV-ASR
transcript of the synthesis is printed under the panel, tags in upper case.
"""

from __future__ import annotations

import os
import re
import textwrap
from typing import Dict, List, Optional, Sequence

import numpy as np

from pyutils.io import read_jsonl
from pyutils.tts.metrics import read_durations
from pyutils.tts.nvv_heard import tag_spans


def _read_events(path: str) -> Dict[str, List[dict]]:
    if not path or not os.path.isfile(path):
        return {}
    return {row["utt_id"]: row.get("events", []) for row in read_jsonl(path)}


def _logmel(x: np.ndarray, sr: int) -> np.ndarray:
    import librosa

    m = librosa.feature.melspectrogram(y=x, sr=sr, n_fft=1024, hop_length=160, n_mels=80)
    return librosa.power_to_db(m, ref=np.max, top_db=80.0)


def _shade(ax, spans, color):
    xlim = ax.get_xlim()
    xmax = xlim[1]
    for label, s, e in spans:
        if e - s < 0.02:  # the model gave the tag token (almost) no time
            label += " (~0 s)"
        ax.axvspan(s, max(e, s + 0.01), color=color, alpha=0.3)
        ax.text(min(s, 0.85 * xmax), ax.get_ylim()[1] * 0.92, label, color="white", fontsize=8,
                bbox=dict(facecolor=color, alpha=0.8, pad=1, edgecolor="none"))
    ax.set_xlim(*xlim)


def plot_examples(png: str, utts: Sequence[str], refs: Dict[str, str], real: Dict[str, np.ndarray],
                  synth: Dict[str, np.ndarray], sr: int, events_path: str, tokens: Dict[str, str],
                  durations_path: Optional[str], asr_synth: Dict[str, str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    events = _read_events(events_path)
    durs = read_durations(durations_path)
    fig, axes = plt.subplots(len(utts), 2, figsize=(14, 2.9 * len(utts)), squeeze=False)
    for row, u in enumerate(utts):
        for col, (name, wavs) in enumerate((("real", real), ("synthesised", synth))):
            ax = axes[row][col]
            x = wavs.get(u)
            if x is None or len(x) == 0:
                ax.set_axis_off()
                continue
            dur = len(x) / sr
            ax.imshow(_logmel(x, sr), origin="lower", aspect="auto", extent=[0, dur, 0, 80], cmap="magma")
            ax.set_ylabel("mel bin")
            spans = []
            if name == "real":
                spans = [(f"[{e['tag']}]", e["start"], e["end"]) for e in events.get(u, [])]
            elif u in durs and u in tokens:   # a tag's later parts extend its span
                spans = [(f"[{t}]", s, e) for t, s, e in tag_spans(tokens[u].split(), durs[u], dur)]
            _shade(ax, spans, "tab:cyan" if name == "real" else "tab:green")
            title = f"{u} ({name}): {refs[u]}"
            if name == "synthesised":
                hyp = asr_synth.get(u)
                hyp = re.sub(r"\[([^\]]*)\]", lambda m: "[" + m.group(1).upper() + "]", hyp) if hyp is not None else "(no ASR)"
                ax.set_xlabel("ASR: " + textwrap.shorten(hyp or "(empty)", 90) + "   | time (s)", fontsize=8)
            else:
                ax.set_xlabel("time (s); shaded: tag as recorded in the corpus events", fontsize=8)
            ax.set_title(textwrap.shorten(title, 95), fontsize=9)
    fig.suptitle("Where each tag was asked for (shaded; synthesis: span of the tag token from the model's durations)",
                 fontsize=10)
    fig.tight_layout()
    tmp = png + ".tmp.png"
    fig.savefig(tmp, dpi=80)
    plt.close(fig)
    os.replace(tmp, png)
