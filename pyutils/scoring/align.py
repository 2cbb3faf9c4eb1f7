"""Alignment pieces of the Track 1 protocol: boundary map, F1 matching, mNTD.

Why own dynamic programmes here: rapidfuzz gives the edit *distance* fast
(used for tagged WER/CER and to bound the search below), but its alignment
backtrace breaks ties differently (it prefers deletions first), while the
protocol fixes the backtrace order "diagonal, then delete a reference unit,
then insert a hypothesis unit". The mapping of tag positions depends on that
order, so :func:`boundary_map` re-runs the DP with the protocol's tie-break.

Speed: a common *suffix* is matched diagonally by the backtrace (it starts
at the end and prefers the diagonal), so it is trimmed first. A common
*prefix* of length p cannot simply be cut (the backtrace may leave the
diagonal inside it), but every cell with min(i, j) <= p has the closed-form
value |i - j|, so the DP runs on the remainders only and the backtrace
continues on the closed form. The remainder's DP is computed row by row as
bit vectors of +1/-1 deltas (Hyyro's bit-parallel algorithm, the one rapidfuzz
uses in C) on Python integers, and the backtrace reads the deltas.
"""

from __future__ import annotations

from typing import List, Sequence, Tuple

from pyutils.scoring.textnorm import Event


def edit_distance(ref: Sequence, hyp: Sequence) -> int:
    """Unit-cost Levenshtein distance between two token sequences (rapidfuzz, C)."""
    # imported here: the C scorer (track1_native.c) never needs it, so it stays out of its start-up
    from rapidfuzz.distance import Levenshtein
    return Levenshtein.distance(ref, hyp)


def boundary_map(ref: Sequence[int], hyp: Sequence[int], lowest: int = 0) -> List[int]:
    """Map each hypothesis boundary j (after j units) to a reference boundary.

    Minimum-edit alignment, backtrace from the end preferring diagonal, then
    deletion of a reference unit, then insertion of a hypothesis unit; walking
    the path forward, boundary j maps to the smallest reference boundary
    visited while at j (the first one visited). Tokens: any hashable values
    compared with ``==`` (strings as they are). ``lowest``: entries below this hypothesis
    boundary are not needed (the backtrace may stop early; they are left 0).
    """
    n, m = len(ref), len(hyp)
    if n == m and ref == hyp:
        return list(range(m + 1))
    # Trim the common suffix: matched diagonally, j -> j + (n - m) there.
    s = 0
    while s < n and s < m and ref[n - 1 - s] == hyp[m - 1 - s]:
        s += 1
    n2, m2 = n - s, m - s
    if lowest > m2:  # every needed boundary lies inside the common suffix
        return [0] * (m2 + 1) + list(range(n2 + 1, n + 1))
    r = ref[:n2]
    h = hyp[:m2]
    out = _boundary_map_core(r, h, n2, m2, lowest)
    out.extend(range(n2 + 1, n + 1))
    return out


def _boundary_map_core(r: Sequence[int], h: Sequence[int], n: int, m: int, lowest: int = 0) -> List[int]:
    if n == 0:
        return [0] * (m + 1)
    if m == 0:
        return [0]
    # Common prefix p: every cell with min(i, j) <= p has dp[i][j] = |i - j|
    # (one of the two prefixes is a prefix of the other), and cells with
    # i, j >= p equal the DP of the remainders (a common prefix does not
    # change edit distances). So the DP is only run on the remainders and
    # the backtrace reads the closed form once it reaches row/column p.
    p = 0
    top = n if n < m else m
    while p < top and r[p] == h[p]:
        p += 1
    out = [0] * (m + 1)
    i, j = n, m
    out[m] = n
    if p < top:
        rr, hh = r[p:], h[p:]
        a, b = n - p, m - p
        diag_same, up_plus = _bit_parallel_rows(rr, hh)
        # Backtrace in the remainder, in its coordinates a = i - p, b = j - p
        # (a, b >= 1), reading the stored bits (bit b-1 of row a):
        #   diagonal   dp[a][b] == dp[a-1][b-1] + cost: tokens equal (then the
        #              diagonal delta is always 0), or different and the
        #              diagonal delta is 1 (it is always 0 or 1);
        #   deletion   dp[a][b] == dp[a-1][b] + 1;
        #   insertion  otherwise (the value came from one of the three moves).
        # out[j] is final once the path moves left of j, so it may stop below ``lowest``.
        stop = lowest - p
        while a > 0 and b > 0 and b >= stop:
            bit = 1 << (b - 1)
            if rr[a - 1] == hh[b - 1] or not diag_same[a] & bit:
                a -= 1
                b -= 1
            elif up_plus[a] & bit:
                a -= 1
            else:
                b -= 1
            out[b + p] = a + p
        i, j = a + p, b + p
    # Closed-form region: dp[i][j] = |i - j|. Diagonal when the tokens match
    # (equal cost), else delete a reference unit when i > j, else insert.
    while (i > 0 or j > 0) and j >= lowest:
        if i > 0 and j > 0 and (i == j or r[i - 1] == h[j - 1]):
            i -= 1
            j -= 1
        elif i > j:
            i -= 1
        else:
            j -= 1
        out[j] = i
    return out


def _bit_parallel_rows(r: Sequence, h: Sequence):
    """Per row of the edit-distance matrix, two bit vectors (Hyyro 2003).

    Row a = after a reference units; bit b-1 describes column b >= 1:
    ``diag_same[a]``: dp[a][b] == dp[a-1][b-1]; ``up_plus[a]``:
    dp[a][b] == dp[a-1][b] + 1. Python integers hold any width, so a row costs
    about a dozen integer operations whatever the hypothesis length (the
    bit-parallel algorithm rapidfuzz runs in C for the distance alone).
    """
    m = len(h)
    full = (1 << m) - 1
    peq = {}
    for k, tok in enumerate(h):
        peq[tok] = peq.get(tok, 0) | (1 << k)
    vp, vn = full, 0  # horizontal deltas of row 0: dp[0][b] = b, all +1
    diag_same, up_plus = [0], [0]
    get = peq.get
    for tok in r:
        x = get(tok, 0)
        d0 = ((((x & vp) + vp) ^ vp) | x | vn) & full
        hp = (vn | ~(d0 | vp)) & full  # vertical +1 deltas of this row
        hn = d0 & vp                   # vertical -1 deltas
        diag_same.append(d0)
        up_plus.append(hp)
        hp = ((hp << 1) | 1) & full
        hn = (hn << 1) & full
        vp = (hn | ~(d0 | hp)) & full  # horizontal deltas of this row
        vn = hp & d0
    return diag_same, up_plus


def match_events_f1(refs: Sequence[Event], preds: Sequence[Event], collar: int) -> List[Tuple[Event, Event]]:
    """One-to-one same-tag matching of the protocol (the pairs, for reports).

    DP over events sorted by (position, order): maximise the number of
    matches, then minimise total |distance|; a match needs |p-g| <= collar;
    exact ties prefer match, then skipping a reference, then a prediction.
    """
    refs = sorted(refs)
    preds = sorted(preds)
    n, m = len(refs), len(preds)
    # cell = (matches, -cost, priority, action): larger tuple is better.
    dp = [[(0, 0, 0, "")] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        dp[i][0] = (0, 0, 2, "R")
    for j in range(1, m + 1):
        dp[0][j] = (0, 0, 1, "P")
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            a = dp[i - 1][j]
            best = (a[0], a[1], 2, "R")
            b = dp[i][j - 1]
            cand = (b[0], b[1], 1, "P")
            if cand > best:
                best = cand
            dist = abs(refs[i - 1].position - preds[j - 1].position)
            if dist <= collar:
                c = dp[i - 1][j - 1]
                cand = (c[0] + 1, c[1] - dist, 3, "M")
                if cand > best:
                    best = cand
            dp[i][j] = best
    pairs = []
    i, j = n, m
    while i > 0 or j > 0:
        action = dp[i][j][3]
        if action == "M":
            pairs.append((refs[i - 1], preds[j - 1]))
            i -= 1
            j -= 1
        elif action == "R":
            i -= 1
        else:
            j -= 1
    pairs.reverse()
    return pairs


def count_matches_f1(ref_pos: Sequence[int], pred_pos: Sequence[int], collar: int) -> int:
    """Number of pairs :func:`match_events_f1` finds, by a two-pointer sweep.

    The DP maximises the number of matches first, so only that maximum
    matters for TP. Positions sorted ascending; each reference can match a
    contiguous, monotone window of predictions, where taking the first
    feasible pair is optimal (exchange argument). Tests check it against
    the DP on random cases.
    """
    return len(sweep_pairs(ref_pos, pred_pos, collar))


def sweep_pairs(ref_pos: Sequence[int], pred_pos: Sequence[int], collar: int) -> List[Tuple[int, int]]:
    """Index pairs of the two-pointer sweep behind :func:`count_matches_f1`
    (a maximum matching; which events pair up may differ from the DP's)."""
    i = j = 0
    n, m = len(ref_pos), len(pred_pos)
    pairs = []
    while i < n and j < m:
        g, p = ref_pos[i], pred_pos[j]
        if p < g - collar:
            j += 1
        elif p > g + collar:
            i += 1
        else:
            pairs.append((i, j))
            i += 1
            j += 1
    return pairs


def utterance_mntd(refs: Sequence[Event], preds: Sequence[Event], ref_length: int) -> float:
    """mNTD of one utterance: alignment cost / max(#ref, #pred), clipped to [0, 1]."""
    n, m = len(refs), len(preds)
    if n == 0:
        return 0.0 if m == 0 else 1.0
    if m == 0:
        return 1.0  # n deletions at cost 1: float(n) / n
    if n == 1 and m == 1:
        # The 1x1 DP: skip/skip costs 2.0, the pair costs <= 1 and wins, and
        # 0.0 + pair == pair, so the value is the pair cost itself.
        g, p = refs[0], preds[0]
        if g.tag != p.tag:
            return 1.0
        return max(0.0, min(1.0, min(abs(g.position - p.position) / max(ref_length, 1), 1.0)))
    if n > 1:
        refs = sorted(refs)
    if m > 1:
        preds = sorted(preds)
    return max(0.0, min(1.0, _mntd_cost(refs, preds, max(ref_length, 1)) / max(n, m)))


def _mntd_cost(refs: Sequence[Event], preds: Sequence[Event], denom: int) -> float:
    """Cost of the monotone event alignment of mNTD (events sorted by (position, order)).

    Same-tag pair cost ``min(|p-g|/L, 1)`` (``denom`` = L = max(ref_length, 1)); different tags,
    an unmatched reference or an unmatched prediction cost 1. Ties (within 1e-12) prefer the
    diagonal, then skipping a reference, then a prediction: the same float operations in the
    same order as the official script, so the sums are bit-identical.
    """
    m = len(preds)
    prev = [float(j) for j in range(m + 1)]
    ptags = [p.tag for p in preds]
    ppos = [p.position for p in preds]
    for i, g in enumerate(refs, start=1):
        g_tag, g_pos = g.tag, g.position
        left = float(i)
        cur = [left]
        for j in range(1, m + 1):
            if g_tag == ptags[j - 1]:
                pair = min(abs(g_pos - ppos[j - 1]) / denom, 1.0)
            else:
                pair = 1.0
            best = prev[j] + 1.0          # skip the reference (priority 2)
            c = left + 1.0                # skip the prediction (priority 1)
            if c < best - 1e-12:
                best = c
            c = prev[j - 1] + pair        # diagonal (priority 3)
            if c < best - 1e-12 or abs(c - best) <= 1e-12:
                best = c
            cur.append(best)
            left = best
        prev = cur
    return prev[m]
