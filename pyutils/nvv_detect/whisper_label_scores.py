"""Whisper as a zero-shot NVV classifier: the decoder's likelihood of a subtitle label given a span.

Whisper was trained on subtitles that write nonverbal sounds as labels, "(laughs)", "(coughs)",
"[sighs]", "(clears throat)". For an audio crop ``x`` (the event's span, padded by ``PAD_S`` on
both sides), the decoder is forced through each surface form ``y`` of each tag ``k``
(:data:`FORMS`) after the prefix ``<|startoftranscript|><|en|><|transcribe|><|notimestamps|>``
and scores

    log P(y | x) = sum_i log P(y_i | y_<i, prefix, x)        (y ends with <|endoftext|>)

and the tag's score is ``l_k(x) = log sum_{y in FORMS[k]} P(y | x) - log |FORMS[k]|`` (mean of the
forms' probabilities, so a tag with more phrasings is not favoured). The labels' prior stays in
(Whisper writes "(laughs)" far more often than "(smacks lips)"): removing it as in contextual
calibration (Zhao et al., 2021: ``l_k(x) - l_k(silence)``) named 33 % of 60 real Deeply NVV clips
right against 35 % with the prior, and 40 % against 52 % fused with YAMNet.
:mod:`pyutils.nvv_detect.naming` fuses ``softmax_k(l_k)`` with YAMNet and the detector heads.

The crop goes to the encoder unpadded (the frame detector's convention; cost proportional to the
crop). The same installed openai-whisper checkpoint as the encoder frames
(:func:`pyutils.whisper.weights.resolve`), loaded with ``weights_only=True``.
"""

from __future__ import annotations

from typing import Dict, List, Sequence

import numpy as np

SR = 16000
PAD_S = 0.25
MIN_CROP_S = 1.0

#: subtitle labels Whisper's training data uses for each challenge tag
FORMS: Dict[str, Sequence[str]] = {
    "breath": ("(breathing)", "(panting)", "(inhales)"),
    "sniff": ("(sniffs)", "(sniffles)"),
    "laugh": ("(laughs)", "(laughing)", "(chuckles)"),
    "cry": ("(crying)", "(sobbing)"),
    "cough": ("(coughs)", "(coughing)"),
    "throat clearing": ("(clears throat)",),
    "sneeze": ("(sneezes)",),
    "sigh": ("(sighs)",),
    "gasp": ("(gasps)",),
    "snore": ("(snoring)",),
    "hum": ("(humming)",),
    "moan": ("(moaning)", "(groans)"),
    "hiss": ("(hissing)",),
    "burp": ("(burps)",),
    "yawn": ("(yawns)",),
    "lipsmack": ("(smacks lips)",),
}


def crop(audio: np.ndarray, start: float, end: float, pad_s: float = PAD_S,
         min_s: float = MIN_CROP_S) -> np.ndarray:
    """Samples of ``[start - pad_s, end + pad_s]``, widened about its centre to ``min_s`` (shifted
    inside the audio at its edges)."""
    t0, t1 = start - pad_s, end + pad_s
    if t1 - t0 < min_s:
        c = 0.5 * (t0 + t1)
        t0, t1 = c - min_s / 2, c + min_s / 2
        dur = len(audio) / SR
        shift = max(0.0, -t0) - max(0.0, t1 - dur)
        t0, t1 = t0 + shift, t1 + shift
    a, b = max(0, int(round(t0 * SR))), min(len(audio), int(round(t1 * SR)))
    return np.asarray(audio[a:max(b, a + 1)], dtype=np.float32)


class WhisperLabelScorer:
    """Calibrated per-tag log-scores ``c_k`` of audio crops (see the module docstring)."""

    def __init__(self, tags: Sequence[str], model: str = "base", threads: int = 0) -> None:
        import torch
        import whisper.model as wm
        from whisper.tokenizer import get_tokenizer

        from pyutils.whisper.weights import WhisperWeightsError, resolve

        spec = resolve(model)
        if not str(spec.source).endswith(".pt"):
            raise WhisperWeightsError(f"{spec.source}: the label scorer needs an openai-whisper .pt "
                                      f"(the installed 'base' has one: make -C tools whisper)")
        ckpt = torch.load(str(spec.source), map_location="cpu", weights_only=True)
        self.model = wm.Whisper(wm.ModelDimensions(**ckpt["dims"]))
        self.model.load_state_dict(ckpt["model_state_dict"])
        self.model = self.model.float().eval()
        if threads:
            torch.set_num_threads(threads)
        tok = get_tokenizer(True, num_languages=self.model.num_languages, language="en", task="transcribe")
        self.prefix = list(tok.sot_sequence_including_notimestamps)
        self.tags = [t for t in tags if t in FORMS]
        missing = [t for t in tags if t not in FORMS]
        if missing:
            raise ValueError(f"no Whisper label forms for tags {missing}")
        self.forms: List[List[int]] = []
        self.form_tag: List[int] = []
        for k, tag in enumerate(self.tags):
            for text in FORMS[tag]:
                self.forms.append(tok.encode(" " + text) + [tok.eot])
                self.form_tag.append(k)
        self._tree = self._trie()

    def _encode(self, crops: Sequence[np.ndarray]):
        import torch
        import whisper

        n_mels = self.model.dims.n_mels
        mels = []
        for x in crops:
            mel = whisper.log_mel_spectrogram(torch.from_numpy(np.asarray(x, dtype=np.float32)), n_mels=n_mels)
            mels.append(mel[:, : 2 * (mel.shape[1] // 2)])
        width = max(m.shape[1] for m in mels)
        # unpadded crops of different lengths: pad with the log-mel floor (silence) to one width
        batch = torch.stack([torch.nn.functional.pad(m, (0, width - m.shape[1]), value=float(m.min()))
                             for m in mels])
        enc = self.model.encoder
        with torch.inference_mode():
            h = torch.nn.functional.gelu(enc.conv1(batch))
            h = torch.nn.functional.gelu(enc.conv2(h)).permute(0, 2, 1)
            h = h + enc.positional_embedding[: h.shape[1]]
            for block in enc.blocks:
                h = block(h)
            return enc.ln_post(h)

    def _trie(self):
        """The forms' token contexts as one tree: node ``i`` is a token whose ancestors are its
        context (the prefix, then the label's earlier tokens); ``ctx[y_<j]`` is the node whose
        output predicts ``y_j``. Each distinct context is computed once (tree attention)."""
        tokens, parent = list(self.prefix), list(range(-1, len(self.prefix) - 1))
        ctx: Dict[tuple, int] = {(): len(self.prefix) - 1}
        for f in self.forms:
            for j in range(len(f) - 1):
                key = tuple(f[:j + 1])
                if key not in ctx:
                    tokens.append(f[j])
                    parent.append(ctx[tuple(f[:j])])
                    ctx[key] = len(tokens) - 1
        n = len(tokens)
        allowed = np.zeros((n, n), dtype=bool)
        depth = np.zeros(n, dtype=np.int64)
        for i in range(n):
            j = i
            while j >= 0:
                allowed[i, j] = True
                j = parent[j]
            depth[i] = allowed[i].sum() - 1
        return tokens, depth, allowed, ctx

    def _form_logprobs(self, feats) -> np.ndarray:
        """(B, F) ``log P(y_f | x_b)`` for every crop ``b`` and surface form ``f``.

        The forms share the prefix and their first tokens (" (" ...): the decoder runs once over
        the tree of distinct contexts (:meth:`_trie`; self-attention restricted to each node's
        ancestors, positions = depths), which gives the same values as one pass per form."""
        import torch
        import torch.nn.functional as F

        tokens, depth, allowed, ctx = self._tree
        dec = self.model.decoder
        toks = torch.tensor(tokens)[None]
        mask = torch.from_numpy(allowed)

        def attend(att, q, k, v, m):
            b, n, d = q.shape
            split = lambda t: t.view(t.shape[0], t.shape[1], att.n_head, -1).transpose(1, 2)  # noqa: E731
            o = F.scaled_dot_product_attention(split(q), split(k), split(v), attn_mask=m)
            return att.out(o.transpose(1, 2).reshape(b, n, d))

        with torch.inference_mode():
            x = (dec.token_embedding(toks) + dec.positional_embedding[torch.from_numpy(depth)]).expand(
                feats.shape[0], -1, -1)
            for block in dec.blocks:
                a, h = block.attn, block.attn_ln(x)
                x = x + attend(a, a.query(h), a.key(h), a.value(h), mask)
                c, h = block.cross_attn, block.cross_attn_ln(x)
                x = x + attend(c, c.query(h), c.key(feats), c.value(feats), None)
                x = x + block.mlp(block.mlp_ln(x))
            logp = torch.log_softmax(dec.ln(x) @ dec.token_embedding.weight.T, dim=-1).numpy()
        out = np.zeros((feats.shape[0], len(self.forms)))
        for i, f in enumerate(self.forms):
            out[:, i] = sum(logp[:, ctx[tuple(f[:j])], f[j]] for j in range(len(f)))
        return out

    def _tag_scores(self, form_lp: np.ndarray) -> np.ndarray:
        k = len(self.tags)
        out = np.full((form_lp.shape[0], k), -np.inf)
        tag_of = np.asarray(self.form_tag)
        for j in range(k):
            cols = form_lp[:, tag_of == j]
            m = cols.max(axis=1, keepdims=True)
            out[:, j] = (m[:, 0] + np.log(np.exp(cols - m).sum(axis=1))) - np.log(cols.shape[1])
        return out

    def scores(self, crops: Sequence[np.ndarray]) -> np.ndarray:
        """(B, K) ``l_k(x)`` of each crop."""
        if not len(crops):
            return np.zeros((0, len(self.tags)))
        return self._tag_scores(self._form_logprobs(self._encode(crops)))


def softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)
