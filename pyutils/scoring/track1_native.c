/* Track 1 per-utterance scoring in C, a batch of utterances per call
 * (built by pyutils/scoring/native_build.py; driven by pyutils/scoring/track1_batch.py).
 *
 * The rules of pyutils/scoring/align.py and LangAccumulator.add (track1_counts.py), on integer
 * codes (see ReferenceTable in track1_table.py): tagged-token edit distance, the
 * boundary map (the protocol's backtrace: diagonal, then delete a reference
 * unit, then insert), per-tag TP by the two-pointer sweep, the tag-confusion
 * leftovers, and mNTD with the official script's float operations in the same
 * order (IEEE double, no contraction), so every number is bit-identical; the
 * tests compare this with the Python path on random data.
 *
 * Why our own code: rapidfuzz breaks alignment ties differently and has no
 * event matching, and these small dynamic programmes, run in Python, were
 * most of the scorer's time.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t *buf;
    size_t cap;
} scratch_t;

/* at least n int64 in s (grown, never shrunk); NULL when out of memory */
static int64_t *reserve(scratch_t *s, size_t n) {
    if (n > s->cap) {
        size_t cap = n > 2 * s->cap ? n : 2 * s->cap;
        int64_t *p = realloc(s->buf, cap * sizeof(int64_t));
        if (!p) return NULL;
        s->buf = p;
        s->cap = cap;
    }
    return s->buf;
}

/* lexical codes with the tag codes of the events (position * ntags + tag) inserted */
static void tagged(const uint32_t *lex, int64_t n, const uint64_t *ev, int64_t ne, int64_t ntags, int64_t *out) {
    int64_t k = 0, e = 0;
    for (int64_t i = 0; i <= n; i++) {
        while (e < ne && (int64_t)(ev[e] / ntags) == i) out[k++] = (int64_t)(ev[e++] % ntags);
        if (i < n) out[k++] = lex[i];
    }
}

/* unit-cost Levenshtein distance, one DP row */
static int64_t distance(const int64_t *a, int64_t n, const int64_t *b, int64_t m, int64_t *row) {
    for (int64_t j = 0; j <= m; j++) row[j] = j;
    for (int64_t i = 1; i <= n; i++) {
        int64_t diag = row[0];
        row[0] = i;
        for (int64_t j = 1; j <= m; j++) {
            int64_t up = row[j];
            int64_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[m];
}

/* hypothesis boundary j -> the smallest reference boundary on the protocol's path at j */
static void boundary_map(const uint32_t *r, int64_t n, const uint32_t *h, int64_t m, int64_t *d, int64_t *out) {
    const int64_t w = m + 1;
    for (int64_t j = 0; j <= m; j++) d[j] = j;
    for (int64_t i = 1; i <= n; i++) {
        d[i * w] = i;
        for (int64_t j = 1; j <= m; j++) {
            int64_t best = d[(i - 1) * w + j - 1] + (r[i - 1] != h[j - 1]);
            if (d[(i - 1) * w + j] + 1 < best) best = d[(i - 1) * w + j] + 1;
            if (d[i * w + j - 1] + 1 < best) best = d[i * w + j - 1] + 1;
            d[i * w + j] = best;
        }
    }
    int64_t i = n, j = m;
    out[m] = n;
    while (i > 0 || j > 0) {
        if (i > 0 && j > 0 && d[i * w + j] == d[(i - 1) * w + j - 1] + (r[i - 1] != h[j - 1])) {
            i--;
            j--;
        } else if (i > 0 && d[i * w + j] == d[(i - 1) * w + j] + 1) {
            i--;
        } else {
            j--;
        }
        out[j] = i; /* the backtrace reaches each column's smallest boundary last */
    }
}

/* mNTD of one utterance with n >= 1 reference events (sorted): align._mntd_cost's operations */
static double mntd(const int64_t *rpos, const int64_t *rtag, int64_t n, const int64_t *ppos, const int64_t *ptag,
                   int64_t m, int64_t ref_length, double *prev, double *cur) {
    if (m == 0) return 1.0;
    const double denom = (double)(ref_length > 1 ? ref_length : 1);
    for (int64_t j = 0; j <= m; j++) prev[j] = (double)j;
    for (int64_t i = 1; i <= n; i++) {
        double left = (double)i;
        cur[0] = left;
        for (int64_t j = 1; j <= m; j++) {
            double pair = 1.0;
            if (rtag[i - 1] == ptag[j - 1]) {
                int64_t dist = rpos[i - 1] - ppos[j - 1];
                pair = (double)(dist < 0 ? -dist : dist) / denom;
                if (pair > 1.0) pair = 1.0;
            }
            double best = prev[j] + 1.0;
            double c = left + 1.0;
            if (c < best - 1e-12) best = c;
            c = prev[j - 1] + pair;
            if (c < best - 1e-12 || fabs(c - best) <= 1e-12) best = c;
            cur[j] = best;
            left = best;
        }
        double *t = prev;
        prev = cur;
        cur = t;
    }
    double v = prev[m] / (double)(n > m ? n : m);
    if (!(v < 1.0)) v = 1.0;
    if (!(v > 0.0)) v = 0.0;
    return v;
}

/* the two-pointer sweep of align.sweep_pairs over the free events of `tag` (any tag when
   tag < 0); the pairs found are taken (no longer free) and written to pr/pp; returns their number */
static int64_t sweep(const int64_t *rpos, const int64_t *rtag, char *rfree, int64_t n, const int64_t *ppos,
                     const int64_t *ptag, char *pfree, int64_t m, int64_t tag, int64_t collar, int64_t *pr,
                     int64_t *pp) {
    int64_t i = 0, j = 0, k = 0;
    for (;;) {
        while (i < n && !(rfree[i] && (tag < 0 || rtag[i] == tag))) i++;
        while (j < m && !(pfree[j] && (tag < 0 || ptag[j] == tag))) j++;
        if (i >= n || j >= m) break;
        if (ppos[j] < rpos[i] - collar) {
            j++;
        } else if (ppos[j] > rpos[i] + collar) {
            i++;
        } else {
            pr[k] = i;
            pp[k] = j;
            k++;
            rfree[i++] = 0;
            pfree[j++] = 0;
        }
    }
    return k;
}

/* Score utterances u = 0..k-1: reference row rows[u] (ref_* : the reference table, codes
 * uint32, events position * ntags + tag) against the submission's hyp_*[u].
 * Out per utterance: tagged edits, TP, mNTD (NaN without a reference event). Added to:
 * per tag TP / reference / predicted counts (ntags), confusion[r * ntags + p]: leftover
 * pairs of different tags. Returns 0, or -1 when out of memory. */
int score_batch(const uint32_t *ref_lex, const uint64_t *ref_lex_starts, const uint64_t *ref_ev,
                const uint64_t *ref_ev_starts, const uint64_t *rows, int64_t k, const uint32_t *hyp_lex,
                const uint64_t *hyp_lex_starts, const uint64_t *hyp_ev, const uint64_t *hyp_ev_starts,
                int64_t ntags, int64_t collar, int64_t *out_edits, int64_t *out_tp, double *out_mntd,
                int64_t *tag_tp, int64_t *tag_ref, int64_t *tag_pred, int64_t *confusion) {
    scratch_t s = {NULL, 0};
    int rc = 0;
    for (int64_t u = 0; u < k; u++) {
        const uint64_t row = rows[u];
        const uint32_t *r = ref_lex + ref_lex_starts[row];
        const uint32_t *h = hyp_lex + hyp_lex_starts[u];
        const uint64_t *re = ref_ev + ref_ev_starts[row];
        const uint64_t *he = hyp_ev + hyp_ev_starts[u];
        const int64_t n = (int64_t)(ref_lex_starts[row + 1] - ref_lex_starts[row]);
        const int64_t m = (int64_t)(hyp_lex_starts[u + 1] - hyp_lex_starts[u]);
        const int64_t ne = (int64_t)(ref_ev_starts[row + 1] - ref_ev_starts[row]);
        const int64_t me = (int64_t)(hyp_ev_starts[u + 1] - hyp_ev_starts[u]);
        /* scratch: tagged ref/hyp + DP row, or the boundary-map matrix; events; pairs; mNTD rows */
        size_t need_a = (size_t)(n + ne) + (size_t)(m + me) + (size_t)(m + me + 1);
        size_t need_b = (size_t)(n + 1) * (size_t)(m + 1) + (size_t)(m + 1);
        size_t need = (need_a > need_b ? need_a : need_b) + 6 * (size_t)(ne + me) + 2 * (size_t)(me + 1);
        int64_t *base = reserve(&s, need);
        if (!base) {
            rc = -1;
            break;
        }
        int64_t *rpos = base + (need_a > need_b ? need_a : need_b);
        int64_t *rtag = rpos + ne, *ppos = rtag + ne, *ptag = ppos + me;
        int64_t *pr = ptag + me, *pp = pr + (ne + me);
        double *prev = (double *)(pp + (ne + me)), *cur = prev + (me + 1);

        int same_lex = n == m && (n == 0 || memcmp(r, h, (size_t)n * sizeof(uint32_t)) == 0);
        int same = same_lex && ne == me && (ne == 0 || memcmp(re, he, (size_t)ne * sizeof(uint64_t)) == 0);
        /* 1) tagged-token edit distance */
        if (same) {
            out_edits[u] = 0;
        } else {
            int64_t *rt = base, *ht = rt + (n + ne), *row_ = ht + (m + me);
            tagged(r, n, re, ne, ntags, rt);
            tagged(h, m, he, me, ntags, ht);
            out_edits[u] = distance(rt, n + ne, ht, m + me, row_);
        }
        /* 2) events; predictions mapped into reference coordinates */
        for (int64_t e = 0; e < ne; e++) {
            rpos[e] = (int64_t)(re[e] / ntags);
            rtag[e] = (int64_t)(re[e] % ntags);
            tag_ref[rtag[e]]++;
        }
        for (int64_t e = 0; e < me; e++) {
            ppos[e] = (int64_t)(he[e] / ntags);
            ptag[e] = (int64_t)(he[e] % ntags);
            tag_pred[ptag[e]]++;
        }
        if (me && !same_lex) {
            int64_t *bmap = base + (size_t)(n + 1) * (size_t)(m + 1);
            boundary_map(r, n, h, m, base, bmap);
            for (int64_t e = 0; e < me; e++) ppos[e] = bmap[ppos[e]];
        }
        /* 3) per-tag TP (sweep), then the leftovers of different tags (confusion) */
        int64_t tp = 0;
        if (ne && me) {
            char *rfree = malloc((size_t)(ne + me));
            if (!rfree) {
                rc = -1;
                break;
            }
            char *pfree = rfree + ne;
            memset(rfree, 1, (size_t)(ne + me));
            for (int64_t t = 0; t < ntags; t++) {
                int64_t c = sweep(rpos, rtag, rfree, ne, ppos, ptag, pfree, me, t, collar, pr, pp);
                tag_tp[t] += c;
                tp += c;
            }
            if (ne > tp && me > tp) {
                int64_t c = sweep(rpos, rtag, rfree, ne, ppos, ptag, pfree, me, -1, collar, pr, pp);
                for (int64_t q = 0; q < c; q++) confusion[rtag[pr[q]] * ntags + ptag[pp[q]]]++;
            }
            free(rfree);
        }
        out_tp[u] = tp;
        /* 4) mNTD */
        out_mntd[u] = ne ? mntd(rpos, rtag, ne, ppos, ptag, me, n, prev, cur) : NAN;
    }
    free(s.buf);
    return rc;
}
