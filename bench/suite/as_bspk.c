/*
 * as_bspk -- the As suite [RMA §3] on BSPk, with 32-bit words. Its Open MPI
 * twin is as_mpi.c: same tests, data, verification and timing.
 *
 *   bspkrun -n P [--provider shm|tcp] as_bspk [--tests LIST] [--variants LIST]
 *           [--hmin H] [--hmax H] [--reps R] [--quick]
 *
 * Tests (one superstep per repetition):
 *   Empty    the superstep's synchronisation alone;
 *   Comp     x = suite_comp(x) (100 flops), then the synchronisation;
 *   Full     every process sends one word to every process, itself included;
 *   Simple   one word from pid 0 to pid p-1;
 *   Scatter  pid 0 sends one word to every other process;
 *   Total    g(h): every process sends h/p words to every process (itself
 *            included), h = p, 2p, 4p, ... while h <= hmax (default 2^20).
 * Variants:
 *   mp-expect      bspk_send from a preallocated region (one message per
 *                  destination, bspk_incr offsets), exact bspk_expect, then after
 *                  the sync bspk_recv, verify and bspk_free every message;
 *   mp-counted     the same without bspk_expect (the runtime counts);
 *   store-expect   bspk_copy into the named region ("as_dst<k>", pid) of every
 *                  process at offset from*(h/p) (a local copy for itself), the
 *                  pointers looked up before the timed loop; bspk_expect of the
 *                  stores arriving (expected_stores); the region is verified;
 *   store-counted  the same without bspk_expect.
 * Empty and Comp run under every variant: bspk_expect(0) + sync for the -expect
 * ones, a bare (counted) sync for the -counted ones.
 *
 * Data: the word at position i of the block process `from` sends to process
 * `to` in repetition r is as_block_word(from, to, i, b, r): positions stamped
 * with r (the first, the last and every AS_STAMP-th word) are rewritten before
 * the clock starts in each repetition, the others are filled once; a lost,
 * stale or misplaced block (or frame of one) fails verification. For one-word
 * tests the word is suite_as_word(from, to, r). Blocks of totals h <= 64K are
 * verified word by word, larger ones at their stamped positions.
 *
 * Timing: W warm-up then R timed repetitions after a counted sync; t_r is the
 * time from before the first communication call (bspk_expect / sends) to the
 * return of bspk_sync; receiving, verifying and freeing follow, outside t_r but
 * inside the loop time. The t_r and loop times go to pid 0 in an untimed
 * superstep: max_median_s = median over r of the max over processes of t_r,
 * avg_s = max over processes of loop time / R. Output: kernels.h's csv lines
 * on stdout (pid 0), diagnostics on stderr; exit status 1 if any verification
 * failed.
 */
#include <bspk.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AS_PROG "as_bspk" /* (as_common.h: as_fail) */
#include "as_common.h"

/* ---- BSPk side ----------------------------------------------------------------- */

enum { V_MP_EXPECT, V_MP_COUNTED, V_STORE_EXPECT, V_STORE_COUNTED, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"mp-expect", "mp-counted", "store-expect", "store-counted"};

static int me, P;
static long as_rep;             /* repetition stamp: counts every repetition run, identical on all pids */
static volatile double comp_sink;
static long bad_words;          /* verification failures on this process (all measurements) */
static int bad_reported;

#define CK(call, what)                                                                    \
    do {                                                                                  \
        if ((call) != BSPK_OK) bspk_abort("as_bspk: %s: %s", what, bspk_error_string()); \
    } while (0)


/* Region holding uint32 words i..i+n: the address of word i (checked). */
static uint32_t *word_at(bspk_ptr p, long i) {
    uint32_t *w = bspk_elemP(bspk_incr(p, i));
    if (!w) bspk_abort("as_bspk: bspk_elemP: %s", bspk_error_string());
    return w;
}

/* Copy n doubles between plain memory and a comem region, frame by frame. */
static void doubles_to_comem(bspk_ptr p, const double *v, size_t n) {
    while (n) {
        void *base;
        size_t k = bspk_span(p, &base);
        if (!k) bspk_abort("as_bspk: bspk_span: %s", bspk_error_string());
        if (k > n) k = n;
        memcpy(base, v, k * sizeof *v);
        v += k;
        n -= k;
        p = bspk_incr(p, (ptrdiff_t)k);
    }
}
static void doubles_from_comem(double *v, bspk_ptr p, size_t n) {
    while (n) {
        void *base;
        size_t k = bspk_span(p, &base);
        if (!k) bspk_abort("as_bspk: bspk_span: %s", bspk_error_string());
        if (k > n) k = n;
        memcpy(v, base, k * sizeof *v);
        v += k;
        n -= k;
        p = bspk_incr(p, (ptrdiff_t)k);
    }
}

/* Number of stores arriving at process `to` in one repetition of test t, as
 * bspk_expect must declare them for the store-expect variant. bspk.h rule 5:
 * every copy counts as one message at its target, whoever issued it; the
 * store a process makes into its own region (a local copy) counts at that
 * process too, like a message to itself. So every sender counts, `to`
 * included. */
static int expected_stores(int t, int to, int p) {
    int n = 0;
    for (int from = 0; from < p; from++)
        if (as_sends(t, from, to, p)) n++;
    return n;
}

/* Messages arriving at `to` in one repetition of test t (mp-expect). */
static int expected_msgs(int t, int to, int p) {
    int n = 0;
    for (int from = 0; from < p; from++) n += as_sends(t, from, to, p);
    return n;
}

/* Verify the b-word block from `from` starting at p (a message or a region
 * offset), rep r: all words when full, else the stamped ones. fixed[i] holds
 * the words that do not depend on r. Returns the number of wrong words. */
static long check_block(bspk_ptr p, long b, int from, long r, const uint32_t *fixed, int full, const char *test,
                        const char *variant, long h) {
    long bad = 0;
    uint32_t s = suite_as_word(from, me, r);
    if (full) {
        for (long i = 0; i < b;) {
            void *base;
            size_t k = bspk_span(bspk_incr(p, i), &base);
            if (!k) bspk_abort("as_bspk: bspk_span: %s", bspk_error_string());
            if ((long)k > b - i) k = (size_t)(b - i);
            const uint32_t *w = base;
            for (size_t j = 0; j < k; j++, i++) {
                uint32_t e = as_stamped(i, b) ? s + (uint32_t)i : fixed[i];
                if (w[j] != e) {
                    if (!bad) as_fail(test, variant, h, "word %ld from pid %d is 0x%08x, expected 0x%08x", i, from, w[j], e);
                    bad++;
                }
            }
        }
    } else {
        for (long i = 0; i < b; i = as_next_stamp(i, b)) {
            uint32_t w = *word_at(p, i);
            if (w != s + (uint32_t)i) {
                if (!bad) as_fail(test, variant, h, "word %ld from pid %d is 0x%08x, expected 0x%08x", i, from, w, s + (uint32_t)i);
                bad++;
            }
        }
    }
    return bad;
}

typedef struct {
    int t, v;
    long h, b;       /* h: csv column (Total) ; b: words per block */
    bspk_ptr src;    /* p blocks of b words, block j for process j */
    bspk_ptr *sendp; /* sendp[j]: block j of src */
    bspk_ptr dst;    /* store variants: this process's named region (p blocks) */
    bspk_ptr *dstp;  /* dstp[j]: block `me` of process j's region */
    uint32_t **fixed; /* fixed[k]: the r-independent words of the block from k (NULL if none) */
    int expect;      /* bspk_expect value (-1: counted) */
    int full;        /* verify every word */
} as_run;

/* One repetition; returns t_r (seconds). */
static double one_rep(as_run *m) {
    const char *tn = test_names[m->t], *vn = variant_names[m->v];
    long r = as_rep++;
    int store = m->v == V_STORE_EXPECT || m->v == V_STORE_COUNTED;
    /* stamps for this repetition, before the clock */
    if (m->t >= T_FULL)
        for (int j = 0; j < P; j++) {
            if (!as_sends(m->t, me, j, P)) continue;
            uint32_t s = suite_as_word(me, j, r);
            for (long i = 0; i < m->b; i = as_next_stamp(i, m->b))
                *word_at(m->sendp[j], i) = s + (uint32_t)i;
        }
    double t0 = suite_now();
    if (m->expect >= 0) CK(bspk_expect(m->expect), "bspk_expect");
    if (m->t == T_COMP) comp_sink = suite_comp(comp_sink);
    if (m->t >= T_FULL)
        for (int k = 0; k < P; k++) { /* staggered: process me starts with itself, then me+1, ... */
            int j = (me + k) % P;
            if (!as_sends(m->t, me, j, P)) continue;
            if (store) CK(bspk_copy(m->dstp[j], m->sendp[j], (size_t)m->b), "bspk_copy");
            else CK(bspk_send(j, m->sendp[j], (size_t)m->b), "bspk_send");
        }
    CK(bspk_sync(), "bspk_sync");
    double t1 = suite_now();
    if (m->t < T_FULL) return t1 - t0;
    if (store) {
        for (int k = 0; k < P; k++)
            if (as_sends(m->t, k, me, P))
                check_block(bspk_incr(m->dst, (ptrdiff_t)(k * m->b)), m->b, k, r, m->fixed[k], m->full, tn, vn,
                            m->h);
    } else {
        int k = 0;
        for (bspk_ptr in; !bspk_is_null(in = bspk_recv());) {
            while (k < P && !as_sends(m->t, k, me, P)) k++;
            int from = bspk_sender_id(in);
            if (k >= P) as_fail(tn, vn, m->h, "unexpected message from pid %d (%zu words)", from, bspk_nelems(in));
            else if (from != k || (long)bspk_nelems(in) != m->b)
                as_fail(tn, vn, m->h, "message from pid %d with %zu words, expected pid %d with %ld", from,
                        bspk_nelems(in), k, m->b);
            else
                check_block(in, m->b, k, r, m->fixed[k], m->full, tn, vn, m->h);
            k++;
            CK(bspk_free(in), "bspk_free");
        }
        while (k < P && !as_sends(m->t, k, me, P)) k++;
        if (k < P) as_fail(tn, vn, m->h, "message from pid %d missing", k);
    }
    return t1 - t0;
}

/* One (test, variant, h) measurement: set up, warm up, time, gather, emit. */
static void measure(const as_opts *o, int t, int v, long h) {
    static int serial; /* names of the store regions: a fresh one per measurement */
    as_run m;
    memset(&m, 0, sizeof m);
    m.t = t;
    m.v = v;
    m.h = t == T_TOTAL ? h : 0;
    m.b = t == T_TOTAL ? h / P : 1;
    m.full = t != T_TOTAL || h <= AS_FULLCHECK;
    int store = v == V_STORE_EXPECT || v == V_STORE_COUNTED;
    int expect = v == V_MP_EXPECT || v == V_STORE_EXPECT;
    m.expect = !expect ? -1 : t < T_FULL ? 0 : store ? expected_stores(t, me, P) : expected_msgs(t, me, P);
    long nw = (long)P * m.b;
    long bad0 = bad_words;

    m.sendp = calloc((size_t)P, sizeof *m.sendp);
    m.dstp = calloc((size_t)P, sizeof *m.dstp);
    m.fixed = calloc((size_t)P, sizeof *m.fixed);
    if (t >= T_FULL) {
        m.src = bspk_malloc("", 0, (size_t)nw, sizeof(uint32_t));
        if (bspk_is_null(m.src)) bspk_abort("as_bspk: bspk_malloc: %s", bspk_error_string());
        for (int j = 0; j < P; j++) {
            m.sendp[j] = bspk_incr(m.src, (ptrdiff_t)(j * m.b));
            /* the r-independent words (stamps are written per repetition) */
            for (long i = 0; i < m.b;) {
                void *base;
                size_t k = bspk_span(bspk_incr(m.sendp[j], i), &base);
                if (!k) bspk_abort("as_bspk: bspk_span: %s", bspk_error_string());
                if ((long)k > m.b - i) k = (size_t)(m.b - i);
                for (size_t q = 0; q < k; q++, i++) ((uint32_t *)base)[q] = as_block_word(me, j, i, m.b, -1);
            }
            if (m.full && as_sends(t, j, me, P)) {
                m.fixed[j] = malloc((size_t)m.b * sizeof(uint32_t));
                for (long i = 0; i < m.b; i++) m.fixed[j][i] = as_block_word(j, me, i, m.b, -1);
            }
        }
    }
    if (store) {
        char name[32];
        snprintf(name, sizeof name, "as_dst%d", serial++);
        m.dst = bspk_malloc(name, me, (size_t)nw, sizeof(uint32_t));
        if (bspk_is_null(m.dst)) bspk_abort("as_bspk: bspk_malloc(%s): %s", name, bspk_error_string());
        for (int j = 0; j < P; j++) m.dstp[j] = bspk_lookup(name, j);
        CK(bspk_sync(), "bspk_sync (lookup)");
        for (int j = 0; j < P; j++) { /* resolved now: exact pointers */
            bspk_ptr d = bspk_lookup(name, j);
            if (bspk_is_null(d)) bspk_abort("as_bspk: bspk_lookup: %s", bspk_error_string());
            m.dstp[j] = bspk_incr(d, (ptrdiff_t)(me * m.b));
        }
    }

    int R = as_reps(o, h), W = as_warmup(R);
    double *tr = malloc((size_t)R * sizeof *tr);
    CK(bspk_sync(), "bspk_sync (start)");
    for (int w = 0; w < W; w++) one_rep(&m);
    CK(bspk_sync(), "bspk_sync (start)");
    double l0 = suite_now();
    for (int r = 0; r < R; r++) tr[r] = one_rep(&m);
    double loop = suite_now() - l0;

    /* gather t_r, loop time and the verification flag at pid 0 (untimed) */
    bspk_ptr g = bspk_malloc("", 0, (size_t)R + 2, sizeof(double));
    if (bspk_is_null(g)) bspk_abort("as_bspk: bspk_malloc: %s", bspk_error_string());
    doubles_to_comem(g, tr, (size_t)R);
    double tail[2] = {loop, bad_words == bad0 ? 1.0 : 0.0};
    doubles_to_comem(bspk_incr(g, R), tail, 2);
    CK(bspk_send(0, g, (size_t)R + 2), "bspk_send (gather)");
    CK(bspk_expect(me == 0 ? P : 0), "bspk_expect (gather)");
    CK(bspk_sync(), "bspk_sync (gather)");
    if (me == 0) {
        double *mx = malloc((size_t)R * sizeof *mx), *row = malloc((size_t)R * sizeof *row);
        double avg = 0;
        int ok = 1, n = 0;
        for (int k = 0; k < R; k++) mx[k] = 0;
        for (bspk_ptr in; !bspk_is_null(in = bspk_recv()); n++) {
            if ((long)bspk_nelems(in) != R + 2) bspk_abort("as_bspk: gather: message of %zu", bspk_nelems(in));
            doubles_from_comem(row, in, (size_t)R);
            doubles_from_comem(tail, bspk_incr(in, R), 2);
            for (int k = 0; k < R; k++)
                if (row[k] > mx[k]) mx[k] = row[k];
            if (tail[0] / R > avg) avg = tail[0] / R;
            if (tail[1] != 1.0) ok = 0;
            CK(bspk_free(in), "bspk_free");
        }
        if (n != P) bspk_abort("as_bspk: gather: %d of %d messages", n, P);
        suite_emit("As", test_names[t], "bspk", variant_names[v], P, m.h, 0, suite_median(mx, R), avg, R, ok);
        if (!ok) bad_words += bad_words == bad0; /* pid 0 exits non-zero when any process failed */
        free(mx);
        free(row);
    }
    CK(bspk_free(g), "bspk_free");
    if (t >= T_FULL) CK(bspk_free(m.src), "bspk_free");
    if (store) CK(bspk_free(m.dst), "bspk_free");
    for (int j = 0; j < P; j++) free(m.fixed[j]);
    free(m.fixed);
    free(m.sendp);
    free(m.dstp);
    free(tr);
}

int main(int argc, char **argv) {
    if (bspk_init(&argc, &argv) != BSPK_OK) {
        fprintf(stderr, "as_bspk: bspk_init: %s\n", bspk_error_string());
        return 1;
    }
    me = bspk_pid();
    P = bspk_nprocs();
    as_opts o;
    char err[256];
    int rc = as_parse(argc, argv, &o, variant_names, NVARIANTS, NULL, 0, err, sizeof err);
    if (rc < 0) bspk_abort("as_bspk: %s\n%s", err, as_usage);
    if (rc > 0) {
        if (me == 0) fprintf(stderr, "%s  variants: mp-expect,mp-counted,store-expect,store-counted\n", as_usage);
        return bspk_finalize() ? 1 : 0;
    }
    comp_sink = 1.0;
    for (int t = 0; t < NTESTS; t++) {
        if (!(o.tests >> t & 1)) continue;
        for (int v = 0; v < NVARIANTS; v++) {
            if (!(o.variants >> v & 1)) continue;
            if (t != T_TOTAL) { measure(&o, t, v, 0); continue; }
            for (long h = P; h <= o.hmax; h *= 2)
                if (h >= o.hmin) measure(&o, t, v, h);
        }
    }
    if (bspk_finalize() != BSPK_OK) {
        fprintf(stderr, "as_bspk: bspk_finalize: %s\n", bspk_error_string());
        return 1;
    }
    if (bad_words) fprintf(stderr, "as_bspk: pid %d: verification FAILED (%ld)\n", me, bad_words);
    return bad_words ? 1 : 0;
}
