"""Select part of a data dir (Kaldi's subset_data_dir.sh).

Exactly one selector: ``first=N`` / ``last=N`` (in byte order of utterance
ids), ``random=N`` (seeded, reproducible), ``utt_list`` or ``spk_list``
(files with one id per line, first field used). Speakers and recordings
follow the kept utterances; spk2utt is regenerated.
"""

from __future__ import annotations

import random as _random
import sys

from .datadir import check_destination, load_data_dir, sorted_ids
from .io import DataDirError, read_list


def select_utts(data, *, first=None, last=None, random=None, seed=0,
                utt_list=None, spk_list=None) -> list[str]:
    chosen = [x is not None for x in (first, last, random, utt_list, spk_list)]
    if sum(chosen) != 1:
        raise ValueError("give exactly one of first, last, random, utt_list, spk_list")
    utts = data.utts
    n = next((x for x in (first, last, random) if x is not None), None)
    if n is not None:
        # as Kaldi's subset_data_dir.sh: an empty subset or one larger than the set is a mistake
        if n < 1:
            raise DataDirError(f"subset: the number of utterances must be >= 1, got {n}")
        if n > len(utts):
            raise DataDirError(f"subset: asked for {n} utterances but {data.path} has only {len(utts)}")
    if first is not None:
        return utts[:n]
    if last is not None:
        return utts[len(utts) - n:]
    if random is not None:
        return sorted_ids(_random.Random(seed).sample(utts, n))
    if utt_list is not None:
        wanted = set(read_list(utt_list))
        unknown = wanted - set(utts)
        if unknown:
            print(f"subset: {len(unknown)} id(s) of {utt_list} are not in {data.path}",
                  file=sys.stderr)
        return [u for u in utts if u in wanted]
    wanted = set(read_list(spk_list))
    return [u for u in utts if data.utt2spk.get(u) in wanted]


def _nonempty(utts: list[str], data, selector: dict) -> list[str]:
    if not utts:
        what = next(f"{k}={v}" for k, v in selector.items() if v is not None and k != "seed")
        raise DataDirError(f"subset: {what} selects no utterance of {data.path}")
    return utts


def subset_data_dir(src, dest, **selector) -> int:
    """Write the selected part of ``src`` to ``dest``; return #utterances."""
    dest = check_destination(dest, [src], "subset")
    data = load_data_dir(src)
    utts = _nonempty(select_utts(data, **selector), data, selector)
    data.subset(utts).write(dest)
    return len(utts)
