"""SQA datasets: features + labels rasterised on the 20 ms grid.

A training example holds the 10 ms features ``(T, F)``, the grid length
``N = ceil(duration / 20 ms)``, frame labels ``(N, 3)`` (centre rule, see
:mod:`pyutils.sqa.common`), utterance presence ``(3,)``, the number of
reference intervals per type ``(3,)`` and the score.

With ``augment_prob > 0`` an example is, with that probability, re-made from
its waveform with random faults from :mod:`pyutils.synth.faults` (exact
intervals); its score is then unknown, so ``score_weight`` is 0 for it.
With ``channel_prob > 0`` an example is, with that probability, also passed
through a random benign recording channel (:mod:`pyutils.synth.channel`:
microphone colouring, band, a noise floor far under the speech) before any
new fault; its labels and score are kept, since a channel is not a fault.
Recordings that already hold a distortion get no channel (it would come after
the distortion and could filter its cue away).

With ``embed_scp`` every example also carries its cached utterance embedding
(:mod:`pyutils.sqa.embed`); an augmented example keeps the clean one, which
only the score head reads and which gets no score loss there. An example made
only through a channel keeps it too, with its score loss: the embedding does
not hear that channel (DNSMOS and Whisper per example would cost more than the
training), only the frame path does.
"""

from __future__ import annotations

import random
from typing import Callable, Dict, List, Optional

import numpy as np
import torch

from pyutils.sqa.common import FAULTS, num_grid_frames, rasterise
from pyutils.io import read_jsonl, read_scp


def load_refs(path: str) -> Dict[str, dict]:
    return {row["utt_id"]: row for row in read_jsonl(path)}


class SQADataset(torch.utils.data.Dataset):
    def __init__(self, feats_scp: str, utt2dur: str, ref_jsonl: Optional[str] = None,
                 wav_scp: Optional[str] = None, augment_prob: float = 0.0,
                 augmenter: Optional[Callable] = None, seed: int = 0, feats_cfg: Optional[dict] = None,
                 embed_scp: Optional[str] = None,
                 channel_prob: float = 0.0, channel: Optional[Callable] = None):
        import kaldiio

        self.feats = kaldiio.load_scp(feats_scp)
        durs = {k: float(v) for k, v in read_scp(utt2dur)}
        refs = load_refs(ref_jsonl) if ref_jsonl else {}
        self.wavs = dict(read_scp(wav_scp)) if wav_scp else {}
        self.embeds = None
        if embed_scp:
            from pyutils.sqa.embed import load_embeddings

            self.embeds = load_embeddings(embed_scp)
        self.utts: List[str] = [u for u in self.feats.keys() if u in durs and (not refs or u in refs)
                                and (self.embeds is None or u in self.embeds)]
        if refs:
            missing = [u for u in self.feats.keys() if u not in refs]
            if missing:
                print(f"WARNING: {len(missing)} utterances have features but no reference "
                      f"(e.g. {missing[0]}); they are not used", flush=True)
        self.durs, self.refs = durs, refs
        self.augment_prob = augment_prob if augmenter is not None and self.wavs else 0.0
        self.augmenter = augmenter
        self.channel_prob = channel_prob if channel is not None and self.wavs else 0.0
        self.channel = channel
        self.rng = np.random.default_rng(seed)
        self.feats_cfg = feats_cfg

    def __len__(self) -> int:
        return len(self.utts)

    def num_frames(self, i: int) -> int:
        return num_grid_frames(self.durs[self.utts[i]])

    def __getitem__(self, i: int) -> dict:
        utt = self.utts[i]
        faults = self.augment_prob > 0 and self.rng.random() < self.augment_prob
        # no draw at all when channels are off: the default run keeps its random sequence
        channel = self.channel_prob > 0 and self.rng.random() < self.channel_prob
        if faults or channel:
            item = self._augmented(utt, faults, channel)
            if item is not None:
                return item
        feats = np.array(self.feats[utt], dtype=np.float32)  # writable copy
        n = num_grid_frames(self.durs[utt])
        return self._item(utt, feats, n, self.refs.get(utt))

    def _item(self, utt: str, feats: np.ndarray, n: int, ref: Optional[dict], score_weight: float = 1.0) -> dict:
        labels = np.zeros((n, len(FAULTS)), dtype=np.float32)
        presence = np.zeros(len(FAULTS), dtype=np.float32)
        score = 3.0
        if ref is not None:
            faults = ref.get("faults", {})
            for j, name in enumerate(FAULTS):
                ivs = faults.get(name, []) or []
                labels[:, j] = rasterise(ivs, n)
                presence[j] = 1.0 if ivs else 0.0
            score = float(ref.get("score", 3.0))
        else:
            score_weight = 0.0
        item = {"utt": utt, "feats": torch.from_numpy(feats), "labels": torch.from_numpy(labels),
                "presence": torch.from_numpy(presence), "score": torch.tensor(score),
                "score_weight": torch.tensor(score_weight), "n": n}
        if self.embeds is not None:
            item["embed"] = torch.from_numpy(self.embeds[utt])
        return item

    def _augmented(self, utt: str, faults: bool = True, channel: bool = False) -> Optional[dict]:
        """The example re-made from its waveform: through a channel, then with new faults."""
        from pyutils.sqa.audio import AudioError, load_checked
        from pyutils.sqa.features import extract

        ref = self.refs.get(utt)
        try:
            y = load_checked(self.wavs[utt])
        except AudioError:
            return None
        if channel and not (ref or {}).get("faults", {}).get("distortion"):
            # a channel comes before any distortion (codecs, clipping, packet loss happen
            # after the microphone): on a recording that already has one it would filter
            # away the very cue its label names, so such a recording gets no channel
            y = self.channel(y, self.rng)
        weight = 1.0
        new_ref = ref
        if faults:
            y, new_faults = self.augmenter(y, self.rng, ref)
            if y is None:
                return None
            new_ref, weight = {"faults": new_faults, "score": 3.0}, 0.0
        feats = extract(y, self.feats_cfg)
        n = num_grid_frames(len(y) / 16000.0)
        return self._item(utt, feats, n, new_ref, score_weight=weight)


def collate(batch: List[dict]) -> dict:
    """Pad to the longest example: feats (B, T, F), labels (B, N, 3) with masks."""
    b = len(batch)
    t = max(x["feats"].shape[0] for x in batch)
    n = max(x["n"] for x in batch)
    f = batch[0]["feats"].shape[1]
    feats = torch.zeros(b, t, f)
    labels = torch.zeros(b, n, len(FAULTS))
    mask = torch.zeros(b, n, dtype=torch.bool)
    for i, x in enumerate(batch):
        feats[i, : x["feats"].shape[0]] = x["feats"]
        labels[i, : x["n"]] = x["labels"]
        mask[i, : x["n"]] = True
    out = {"utts": [x["utt"] for x in batch], "feats": feats,
            "lengths": torch.tensor([x["feats"].shape[0] for x in batch]),
            "n_frames": torch.tensor([x["n"] for x in batch]),
            "labels": labels, "mask": mask,
            "presence": torch.stack([x["presence"] for x in batch]),
            "score": torch.stack([x["score"] for x in batch]),
            "score_weight": torch.stack([x["score_weight"] for x in batch])}
    if "embed" in batch[0]:
        out["embed"] = torch.stack([x["embed"] for x in batch])
    return out


class BucketBatchSampler(torch.utils.data.Sampler):
    """Batches of similar length (less padding): shuffle, sort in pools, shuffle batches."""

    def __init__(self, lengths: List[int], batch_size: int, seed: int = 0, pool: int = 20):
        self.lengths, self.bs, self.seed, self.pool, self.epoch = lengths, batch_size, seed, pool, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def _batches(self):
        rnd = random.Random(self.seed + self.epoch)
        idx = list(range(len(self.lengths)))
        rnd.shuffle(idx)
        batches = []
        step = self.bs * self.pool
        for k in range(0, len(idx), step):
            chunk = sorted(idx[k:k + step], key=lambda i: self.lengths[i])
            batches += [chunk[j:j + self.bs] for j in range(0, len(chunk), self.bs)]
        rnd.shuffle(batches)
        return batches

    def __iter__(self):
        return iter(self._batches())

    def __len__(self) -> int:
        return (len(self.lengths) + self.bs - 1) // self.bs
