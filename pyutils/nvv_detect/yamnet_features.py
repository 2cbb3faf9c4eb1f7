"""YAMNet patch logits and 1024-d embeddings of audio: the YAMNet evidence of the event namer
(:class:`pyutils.nvv_detect.naming.Evidence`).

YAMNet (:mod:`pyutils.audio_tagger`, int8 ONNX) scores 0.96 s log-mel patches every ``hop_s``
(0.24 s): the logits ``l_i = s_out (q_i - z_out)`` of the 521 AudioSet classes per patch
(:meth:`Features.logits_emb`) and, with ``embed``, the patch's 1024-d embedding ``e_i`` (the
dequantised global-average-pooled activations the classifier layer reads; the int8 export has
no such output, so :func:`embedding_session` adds one to the graph in memory). Inputs longer
than ``CHUNK_HOPS`` hops go in blocks (bounded memory).

(The YAMNet-patch NVV detector that read these as features, with its cached feature sets and
the naive zero-shot mapping, was not adopted and is removed; code: ``git show c9e6e28``.)
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from pyutils.nvv_detect.arrays import DetectorError

HOP_S = 0.24
CHUNK_HOPS = 1000              # Features.logits_emb: inputs longer than 1000 hops (240 s) go in blocks
PATCH_SAMPLES = 160 * 95 + 512
EMBED_OUTPUT, EMBED_DIM = "/model/Reshape_output_0_qdq", 1024


class Features:
    """YAMNet patch logits, and optionally the 1024-d embeddings (see the module docstring)."""

    def __init__(self, tagger=None, hop_s: float = HOP_S, num_threads: int = 1, embed: bool = False):
        from pyutils.audio_tagger import YamNet

        self.tagger = tagger or YamNet.load(num_threads=num_threads)
        self.hop_s, self.embed = hop_s, embed
        self._emb_session = embedding_session(num_threads) if embed else None

    def _run(self, p: np.ndarray) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        if self._emb_session is None:
            return self.tagger.logits(p).astype(np.float64), None
        t = self.tagger
        q = np.clip(np.round(p / t.s_in + t.z_in), 0, 255).astype(np.uint8)
        lg = np.empty((len(q), len(t.classes)))
        emb = np.empty((len(q), EMBED_DIM), dtype=np.float32)
        for i in range(len(q)):
            out, e = self._emb_session.run(None, {t.input_name: q[i][None, None]})
            lg[i] = t.s_out * (out.reshape(-1).astype(np.float64) - t.z_out)
            emb[i] = e.reshape(-1)
        return lg, emb

    def logits_emb(self, x: np.ndarray, sr: int) -> Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
        """Patch start times (s), (N, 521) logits and (N, 1024) embeddings (None unless ``embed``)."""
        from pyutils.audio import resample
        from pyutils.audio_tagger import HOP, SR, patches

        x = resample(np.asarray(x, dtype=np.float32).reshape(-1), sr, SR).astype(np.float32)
        hop_frames = max(1, int(round(self.hop_s * SR / HOP)))
        step = CHUNK_HOPS * hop_frames * HOP          # long inputs: blocks of ~4 min (bounded memory)
        if len(x) <= step + PATCH_SAMPLES:
            p, t = patches(x, hop_frames)
            return (t, *self._run(p))
        ts, lgs, embs = [], [], []
        for c in range(0, len(x), step):
            p, t = patches(x[c:c + step + PATCH_SAMPLES], hop_frames)
            last = c + step >= len(x) - PATCH_SAMPLES
            keep = slice(None) if last else t * SR < step
            ts.append(t[keep] + c / SR)
            lg, emb = self._run(p[keep])
            lgs.append(lg)
            embs.append(emb)
            if last:
                break
        return np.concatenate(ts), np.concatenate(lgs), (np.concatenate(embs) if self.embed else None)


def embedding_session(num_threads: int = 1):
    """An ONNX Runtime session of the YAMNet graph with a second output: the 1024-d embedding
    (the dequantised global-average-pooled activations the classifier reads; the int8 export
    does not expose it, so the graph is loaded with ``onnx`` and the output added in memory)."""
    import onnx
    import onnxruntime as ort

    from pyutils.audio_tagger import default_dir

    m = onnx.load(str(default_dir() / "model.onnx"))
    if EMBED_OUTPUT not in {o for n in m.graph.node for o in n.output}:
        raise DetectorError(f"{default_dir()}/model.onnx has no tensor {EMBED_OUTPUT}")
    m.graph.output.append(onnx.helper.make_tensor_value_info(EMBED_OUTPUT, onnx.TensorProto.FLOAT, None))
    so = ort.SessionOptions()
    so.intra_op_num_threads = num_threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
