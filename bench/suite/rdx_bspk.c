/*
 * rdx_bspk -- the Rdx suite [RMA §5] on BSPk: LSD radix sort (RDXSORT,
 * [RMA Fig. 9]) of n 32-bit keys, block distributed (kernels.h: process j holds
 * global positions [suite_block_start(n, p, j), suite_block_start(n, p, j+1)),
 * key g = suite_key(g, seed)), in 4 passes of count sort on 8-bit digits.
 *
 * Each pass is two supersteps:
 *   1. local count sort (suite_count_sort, plain arrays) and the count
 *      all-gather: the 256 digit counts go to every process with bspk_send,
 *      bspk_expect(p) -- the same in every variant;
 *   2. from the p x 256 count matrix, the global position of every (process q,
 *      digit d) run (the prefix of Fig. 9 line 3); each process routes each of
 *      its digit runs to the process(es) owning those positions, split where a
 *      run crosses a block boundary (Fig. 9 lines 4-5).
 * The runs are sent from a comem region (the sources of sends and stores must
 * be comem) into which the count-sorted keys are copied frame by frame; the
 * keys that arrive are copied into the plain array of the next pass's input.
 * Both copies are part of the timed work: the kernels need contiguous arrays
 * and regions are contiguous only within a 64 KiB frame.
 *
 * Variants (superstep 2):
 *   mp-expect           one bspk_send per run piece; bspk_expect(pieces arriving,
 *                       known from the count matrix). Messages come in order of
 *                       sender, then of digit, so the receiver knows which
 *                       (q, d) piece each one is and copies it to its position.
 *   mp-counted          the same without bspk_expect (the runtime counts: cost L).
 *   store-expect        each piece is a bspk_copy store into the destination's
 *                       named region ("rdx_out", pid) at its offset; expect =
 *                       pieces arriving, a piece a process keeps included (a
 *                       local copy counts at its issuer: bspk.h DSM rule 5).
 *                       The next pass copies "rdx_out" into its plain input.
 *   store-counted       the same without bspk_expect.
 *   mp-combined-expect  one message per destination with all its pieces in digit
 *                       order ([RMA §5]'s enhanced variant). The count-sorted keys
 *                       go to non-decreasing global positions, so the pieces for
 *                       one destination are one contiguous range: no packing.
 *                       bspk_expect(senders with keys for this process).
 *   mp-combined-counted the same without bspk_expect (as a BSPlib program
 *                       would run it).
 *   contig-expect       mp-combined-expect with a contiguous send region
 *                       (bspk_malloc_contiguous), as a user who needs a plain
 *                       array writes it now: the count sort writes straight
 *                       into the region that is sent (no copy into frames),
 *                       and the keys a process keeps are copied from there
 *                       straight into its next input (nothing is sent to
 *                       oneself: a message to oneself would be copied twice,
 *                       at bspk_send and out of the message).
 *                       (Storing each piece into a contiguous "rdx_in" instead,
 *                       so that the receiver needs no copy either, measured
 *                       slower: 256 stores per destination, and stores into a
 *                       contiguous region are copied in at the boundary.)
 *   contig-counted      the same without bspk_expect.
 *   inplace-expect      contig-expect, and the next pass's count sort reads the
 *                       keys where they are: in the messages as they arrived
 *                       (frame by frame, bspk_span) and, for the keys a process
 *                       keeps, in its own send region of the pass before (two
 *                       contiguous send regions, used in turn), so nothing is
 *                       copied into a plain input array and nothing is sent to
 *                       oneself; a piece is read in global position order
 *                       (digit, then sender), which keeps the sort stable. The
 *                       last pass copies the keys into the output array (timed).
 *                       The keys cross once per pass (the receiver's pull from
 *                       the sender's frames, on one host), as with Open MPI's
 *                       put into a window that the next pass reads.
 *   inplace-counted     the same without bspk_expect.
 *
 * Timing: per repetition, from a barrier (counted bspk_sync) to the end of the
 * 4th pass (for the mp variants the keys copied into the output array; for the
 * store variants the keys in "rdx_out"); the input fill and the verification
 * are not timed. max_median_s = median over repetitions of the maximum over
 * processes; avg_s = maximum over processes of (sum of its timed repetitions)
 * / reps. One warm-up repetition per variant. Verified after the last
 * repetition: each slice sorted (suite_sorted), slices ordered across processes,
 * global suite_key_sum of the output equal to that of the input (pid 0 computes
 * it from suite_key), and the position table equal to suite_dest_pos.
 *
 * Usage: bspkrun -n P rdx_bspk [--n N] [--seed S] [--reps R] [--variants a,b,...] [--quick]
 *   --n N        number of keys (default 4194304 = 2^22)
 *   --seed S     input seed (default 1)
 *   --reps R     timed repetitions after one warm-up (default 3)
 *   --variants   comma-separated subset of the variants above (default all)
 *   --quick      n = 2^18, reps = 10 (unless --n / --reps are given)
 * Output: kernels.h csv lines from pid 0. Exit status 1 if any verification
 * failed, 2 on a usage error.
 */
#include <bspk.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

enum { V_MP_EXPECT, V_MP_COUNTED, V_STORE_EXPECT, V_STORE_COUNTED, V_MP_COMB_EXPECT, V_MP_COMB_COUNTED,
       V_CONTIG_EXPECT, V_CONTIG_COUNTED, V_INPLACE_EXPECT, V_INPLACE_COUNTED, NVAR };
static const char *const vname[NVAR] = {"mp-expect",          "mp-counted",          "store-expect",
                                        "store-counted",      "mp-combined-expect",  "mp-combined-counted",
                                        "contig-expect",      "contig-counted",      "inplace-expect",
                                        "inplace-counted"};

#define R SUITE_RADIX

#define CK(call)                                                                                           \
    do {                                                                                                   \
        if ((call) != BSPK_OK) bspk_abort("rdx_bspk: %s: %s", #call, bspk_error_string());                 \
    } while (0)
#define CKP(ptr, what)                                                                                     \
    do {                                                                                                   \
        if (bspk_is_null(ptr)) bspk_abort("rdx_bspk: %s: %s", what, bspk_error_string());                  \
    } while (0)

static int me, p;
static uint64_t n, seed, lo, hi, m; /* my block [lo, hi), m = hi - lo */
static uint64_t *blo;               /* blo[j] = suite_block_start(n, p, j), j = 0..p */

static uint32_t *keys, *sorted;     /* plain: the pass input, the count-sorted keys */
static uint64_t cnt[R], *all, *pos; /* my counts; p x 256 counts; pos[q*256+d] = first position of (q, d) */
static bspk_ptr sendbuf, cnt_msg, outr; /* comem: sorted keys, my counts, my ("rdx_out", me) */
static bspk_ptr *outp;              /* ("rdx_out", j) for every j */
static bspk_ptr csend;              /* contig: the contiguous send region */
static bspk_ptr cbuf[2];            /* inplace: the send regions of even and odd passes */
static bspk_ptr *inmsg;             /* inplace: per sender, its message of the last pass (null: none) */
static bspk_ptr *seg;               /* inplace: seg[q*256+d], where piece (q, d) of my block lies */
static int *nextd;                  /* per sender: next digit to look at (mp receive) */

/* Copy cnt elements of size es from a region (from src on) to plain memory /
 * from plain memory into a region, frame by frame; return the pointer past
 * the range. */
static bspk_ptr r2p(void *dst, bspk_ptr src, uint64_t c, size_t es) {
    char *d = dst;
    while (c) {
        void *base;
        size_t k = bspk_span(src, &base);
        if (k == 0) bspk_abort("rdx_bspk: bspk_span: region too short: %s", bspk_error_string());
        if (k > c) k = (size_t)c;
        memcpy(d, base, k * es);
        d += k * es;
        c -= k;
        src = bspk_incr(src, (ptrdiff_t)k);
    }
    return src;
}
static void p2r(bspk_ptr dst, const void *src, uint64_t c, size_t es) {
    const char *s = src;
    while (c) {
        void *base;
        size_t k = bspk_span(dst, &base);
        if (k == 0) bspk_abort("rdx_bspk: bspk_span: region too short: %s", bspk_error_string());
        if (k > c) k = (size_t)c;
        memcpy(base, s, k * es);
        s += k * es;
        c -= k;
        dst = bspk_incr(dst, (ptrdiff_t)k);
    }
}

/* pos[q*256+d]: global position of the first digit-d key of q [RMA Fig. 9
 * line 3], as suite_dest_pos but all at once in O(p * 256). */
static void positions(void) {
    uint64_t base = 0;
    for (int d = 0; d < R; d++)
        for (int q = 0; q < p; q++) {
            pos[(size_t)q * R + d] = base;
            base += all[(size_t)q * R + d];
        }
}

/* The part [*a, *b) of run (q, d) that lands in my block; 1 if non-empty. */
static int piece(int q, int d, uint64_t *a, uint64_t *b) {
    uint64_t s = pos[(size_t)q * R + d], e = s + all[(size_t)q * R + d];
    *a = s > lo ? s : lo;
    *b = e < hi ? e : hi;
    return *a < *b;
}

/* Element 0 of a contiguous region: all of it lies there (bspk_span). */
static uint32_t *base_of(bspk_ptr r) {
    void *b = NULL;
    if (bspk_span(r, &b) == 0 && m > 0) bspk_abort("rdx_bspk: bspk_span: %s", bspk_error_string());
    return b;
}

/* inplace: this process's block as plain runs (pointer, length) in global
 * position order (digit, then sender), piece by piece, split where a piece
 * crosses a frame: built once per pass (one bspk_span per run), so the two
 * loops of the count sort run over plain arrays as suite_count_sort does.
 * (Walking the pieces with bspk_span/bspk_incr in both loops cost 230 us per
 * pass at n = 2^18, p = 2, against 185 us for suite_count_sort on a plain
 * array: 512 pieces of about 256 keys each, two library calls and the piece
 * bounds per piece and loop.) */
static const uint32_t **run_at;
static uint64_t *run_len;
static size_t nrun, run_cap;

static void build_runs(void) {
    nrun = 0;
    for (int d = 0; d < R; d++)
        for (int q = 0; q < p; q++) {
            uint64_t a, b;
            if (!piece(q, d, &a, &b)) continue;
            bspk_ptr at = seg[(size_t)q * R + d];
            for (uint64_t c = b - a; c;) {
                void *base;
                size_t k = bspk_span(at, &base);
                if (k == 0) bspk_abort("rdx_bspk: bspk_span: region too short: %s", bspk_error_string());
                if (k > c) k = (size_t)c;
                if (nrun == run_cap) {
                    run_cap = run_cap ? 2 * run_cap : (size_t)p * R + 64;
                    run_at = realloc(run_at, run_cap * sizeof *run_at);
                    run_len = realloc(run_len, run_cap * sizeof *run_len);
                    if (!run_at || !run_len) bspk_abort("rdx_bspk: out of memory");
                }
                run_at[nrun] = base;
                run_len[nrun++] = k;
                c -= k;
                at = bspk_incr(at, (ptrdiff_t)k);
            }
        }
}

/* inplace: the count sort of the keys where they lie (build_runs) into out. */
static void count_sort_inplace(uint32_t *out, int pass) {
    uint64_t start[R], s = 0;
    build_runs();
    memset(cnt, 0, sizeof cnt);
    for (size_t r = 0; r < nrun; r++) {
        const uint32_t *w = run_at[r];
        for (uint64_t i = 0, k = run_len[r]; i < k; i++) cnt[suite_digit(w[i], pass)]++;
    }
    for (int d = 0; d < R; d++) { start[d] = s; s += cnt[d]; }
    for (size_t r = 0; r < nrun; r++) {
        const uint32_t *w = run_at[r];
        for (uint64_t i = 0, k = run_len[r]; i < k; i++) out[start[suite_digit(w[i], pass)]++] = w[i];
    }
}

/* inplace: free the messages of the last pass. */
static void free_inmsg(void) {
    for (int q = 0; q < p; q++)
        if (!bspk_is_null(inmsg[q])) {
            CK(bspk_free(inmsg[q]));
            inmsg[q] = BSPK_NULL;
        }
}

static void one_pass(int v, int pass) {
    const int inplace = v == V_INPLACE_EXPECT || v == V_INPLACE_COUNTED;
    const int contig = v == V_CONTIG_EXPECT || v == V_CONTIG_COUNTED || inplace;
    const int mp =
        v == V_MP_EXPECT || v == V_MP_COUNTED || v == V_MP_COMB_EXPECT || v == V_MP_COMB_COUNTED || contig;
    const int store = v == V_STORE_EXPECT || v == V_STORE_COUNTED;
    const int expect = v == V_MP_EXPECT || v == V_STORE_EXPECT || v == V_MP_COMB_EXPECT || v == V_CONTIG_EXPECT ||
                       v == V_INPLACE_EXPECT;
    const int comb = v == V_MP_COMB_EXPECT || v == V_MP_COMB_COUNTED || contig;
    const bspk_ptr out = inplace ? cbuf[pass & 1] : csend; /* contig: the region sent */

    /* ---- superstep 1: count sort, counts to everyone ---- */
    if (inplace && pass > 0) {
        count_sort_inplace(base_of(out), pass);
        free_inmsg();
    } else if (contig) {
        suite_count_sort(base_of(out), cnt, keys, m, pass);
    } else {
        if (store && pass > 0) r2p(keys, outr, m, sizeof *keys);
        suite_count_sort(sorted, cnt, keys, m, pass);
        p2r(sendbuf, sorted, m, sizeof *sorted);
    }
    p2r(cnt_msg, cnt, R, sizeof *cnt);
    for (int q = 0; q < p; q++) CK(bspk_send(q, cnt_msg, R));
    CK(bspk_expect(p));
    CK(bspk_sync());
    for (bspk_ptr msg; !bspk_is_null(msg = bspk_recv());) {
        int q = bspk_sender_id(msg);
        if (q < 0 || q >= p || bspk_nelems(msg) != R) bspk_abort("rdx_bspk: bad count message");
        r2p(&all[(size_t)q * R], msg, R, sizeof *all);
        CK(bspk_free(msg));
    }

    /* ---- superstep 2: route the runs ---- */
    positions();
    int expected = 0;
    for (int q = 0; q < p; q++) {
        int any = 0;
        for (int d = 0; d < R; d++) {
            uint64_t a, b;
            if (piece(q, d, &a, &b)) {
                any = 1;
                if (!comb) expected++; /* every piece, kept ones included (rule 5) */
            }
        }
        if (comb && any && !(contig && q == me)) expected++;
    }
    int dest = 0;
    uint64_t off = 0;                  /* offset in sendbuf */
    uint64_t cstart = 0, clen = 0;     /* combined: the range for `dest` */
    const uint32_t *obase = contig ? base_of(out) : NULL; /* contig: the send region as an array */
    for (int d = 0; d < R; d++) {
        uint64_t g = pos[(size_t)me * R + d], left = cnt[d];
        while (left) {
            while (g >= blo[dest + 1]) {
                if (comb && clen && !(contig && dest == me))
                    CK(bspk_send(dest, bspk_incr(contig ? out : sendbuf, (ptrdiff_t)cstart), clen));
                clen = 0;
                dest++;
            }
            uint64_t len = blo[dest + 1] - g < left ? blo[dest + 1] - g : left;
            bspk_ptr src = bspk_incr(sendbuf, (ptrdiff_t)off);
            if (inplace && dest == me) seg[(size_t)me * R + d] = bspk_incr(out, (ptrdiff_t)off); /* kept */
            else if (contig && dest == me) memcpy(keys + (g - lo), obase + off, len * sizeof *keys); /* kept */
            if (comb) {
                if (!clen) cstart = off;
                clen += len;
            } else if (mp)
                CK(bspk_send(dest, src, len));
            else
                CK(bspk_copy(bspk_incr(outp[dest], (ptrdiff_t)(g - blo[dest])), src, len));
            g += len;
            off += len;
            left -= len;
        }
    }
    if (comb && clen && !(contig && dest == me))
        CK(bspk_send(dest, bspk_incr(contig ? out : sendbuf, (ptrdiff_t)cstart), clen));
    if (expect) CK(bspk_expect(expected));
    CK(bspk_sync());

    /* ---- inplace: where each piece lies; the last pass copies them out ---- */
    if (inplace) {
        for (bspk_ptr msg; !bspk_is_null(msg = bspk_recv());) {
            int q = bspk_sender_id(msg);
            if (q < 0 || q >= p || q == me || !bspk_is_null(inmsg[q]))
                bspk_abort("rdx_bspk: pass %d: unexpected message from %d", pass, q);
            inmsg[q] = msg;
            uint64_t used = 0;
            for (int d = 0; d < R; d++) { /* q's pieces, in digit order */
                uint64_t a, b;
                if (!piece(q, d, &a, &b)) continue;
                seg[(size_t)q * R + d] = bspk_incr(msg, (ptrdiff_t)used);
                used += b - a;
            }
            if (used != bspk_nelems(msg)) bspk_abort("rdx_bspk: pass %d: message from %d has the wrong length", pass, q);
        }
        for (int q = 0; q < p; q++)
            for (int d = 0; d < R && q != me; d++) {
                uint64_t a, b;
                if (piece(q, d, &a, &b) && bspk_is_null(inmsg[q]))
                    bspk_abort("rdx_bspk: pass %d: no message from %d", pass, q);
            }
        if (pass == SUITE_PASSES - 1) {
            for (int q = 0; q < p; q++)
                for (int d = 0; d < R; d++) {
                    uint64_t a, b;
                    if (piece(q, d, &a, &b)) r2p(keys + (a - lo), seg[(size_t)q * R + d], b - a, sizeof *keys);
                }
            free_inmsg();
        }
    } else if (mp) {
        for (int q = 0; q < p; q++) nextd[q] = 0;
        for (bspk_ptr msg; !bspk_is_null(msg = bspk_recv());) {
            int q = bspk_sender_id(msg);
            uint64_t got = bspk_nelems(msg), used = 0;
            bspk_ptr at = msg;
            do { /* mp: one piece per message; combined: all of q's pieces */
                int d = nextd[q];
                uint64_t a = 0, b = 0;
                while (d < R && !piece(q, d, &a, &b)) d++;
                if (d == R || got - used < b - a) bspk_abort("rdx_bspk: pass %d: unexpected message from %d", pass, q);
                nextd[q] = d + 1;
                at = r2p(keys + (a - lo), at, b - a, sizeof *keys);
                used += b - a;
            } while (comb && used < got);
            if (used != got) bspk_abort("rdx_bspk: pass %d: message from %d has the wrong length", pass, q);
            CK(bspk_free(msg));
        }
    }
}

static void usage(void) {
    fprintf(stderr, "usage: bspkrun -n P rdx_bspk [--n N] [--seed S] [--reps R] [--variants a,b,...] [--quick]\n"
                    "  variants: mp-expect mp-counted store-expect store-counted mp-combined-expect\n"
                    "            mp-combined-counted contig-expect contig-counted (default all)\n"
                    "  --quick: n = 2^18, reps = 10\n");
}

int main(int argc, char **argv) {
    if (bspk_init(&argc, &argv) != BSPK_OK) {
        fprintf(stderr, "rdx_bspk: bspk_init: %s\n", bspk_error_string());
        return 1;
    }
    me = bspk_pid();
    p = bspk_nprocs();
    suite_app_opts o;
    int reps, want[NVAR];
    char err[256];
    if (suite_parse_app(argc, argv, vname, NVAR, 1, &o, want, err, sizeof err)) {
        if (me == 0) fprintf(stderr, "rdx_bspk: %s\n", err), usage();
        bspk_finalize();
        return 2;
    }
    seed = o.seed;
    n = o.n > 0 ? (uint64_t)o.n : o.quick ? (1u << 18) : (1u << 22);
    reps = o.reps > 0 ? o.reps : o.quick ? 10 : 3;

    blo = malloc((size_t)(p + 1) * sizeof *blo);
    if (!blo) bspk_abort("rdx_bspk: out of memory");
    for (int j = 0; j <= p; j++) blo[j] = suite_block_start(n, p, j);
    lo = blo[me];
    hi = blo[me + 1];
    m = hi - lo;
    keys = malloc((size_t)(m + 1) * sizeof *keys);
    sorted = malloc((size_t)(m + 1) * sizeof *sorted);
    all = malloc((size_t)p * R * sizeof *all);
    pos = malloc((size_t)p * R * sizeof *pos);
    outp = malloc((size_t)p * sizeof *outp);
    nextd = malloc((size_t)p * sizeof *nextd);
    inmsg = malloc((size_t)p * sizeof *inmsg);
    seg = malloc((size_t)p * R * sizeof *seg);
    double *t = malloc((size_t)reps * sizeof *t), *mx = malloc((size_t)reps * sizeof *mx);
    if (!keys || !sorted || !all || !pos || !outp || !nextd || !inmsg || !seg || !t || !mx)
        bspk_abort("rdx_bspk: out of memory");
    for (int q = 0; q < p; q++) inmsg[q] = BSPK_NULL;
    sendbuf = bspk_malloc("", 0, (size_t)m, sizeof(uint32_t));
    cnt_msg = bspk_malloc("", 0, R, sizeof(uint64_t));
    outr = bspk_malloc("rdx_out", me, (size_t)m, sizeof(uint32_t));
    CKP(sendbuf, "bspk_malloc");
    CKP(cnt_msg, "bspk_malloc");
    CKP(outr, "bspk_malloc rdx_out");
    csend = bspk_malloc_contiguous("", 0, (size_t)m, sizeof(uint32_t));
    CKP(csend, "bspk_malloc_contiguous");
    cbuf[0] = bspk_malloc_contiguous("", 0, (size_t)m, sizeof(uint32_t));
    cbuf[1] = bspk_malloc_contiguous("", 0, (size_t)m, sizeof(uint32_t));
    CKP(cbuf[0], "bspk_malloc_contiguous");
    CKP(cbuf[1], "bspk_malloc_contiguous");
    for (int j = 0; j < p; j++) {
        outp[j] = bspk_lookup("rdx_out", j);
        CKP(outp[j], "bspk_lookup");
    }
    CK(bspk_sync());
    for (int j = 0; j < p; j++) outp[j] = bspk_lookup("rdx_out", j); /* exact now */


    /* the input checksum (pid 0), from the keys' definition */
    uint64_t in_sum = 0;
    if (me == 0) {
        uint32_t chunk[4096];
        for (uint64_t g = 0; g < n;) {
            uint64_t k = n - g < 4096 ? n - g : 4096;
            for (uint64_t i = 0; i < k; i++) chunk[i] = suite_key(g + i, seed);
            in_sum += suite_key_sum(chunk, k);
            g += k;
        }
    }

    const size_t nrep = 6 + (size_t)reps;
    bspk_ptr rep = bspk_malloc("", 0, nrep, sizeof(uint64_t));
    CKP(rep, "bspk_malloc");
    int status = 0;
    for (int v = 0; v < NVAR; v++) {
        if (!want[v]) continue;
        double sum = 0;
        for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
            for (uint64_t i = 0; i < m; i++) keys[i] = suite_key(lo + i, seed);
            CK(bspk_sync()); /* counted: a barrier, so the processes start together */
            double t0 = suite_now();
            for (int pass = 0; pass < SUITE_PASSES; pass++) one_pass(v, pass);
            double dt = suite_now() - t0;
            if (r >= 0) {
                t[r] = dt;
                sum += dt;
            }
        }
        /* ---- verify the last repetition ---- */
        if (v == V_STORE_EXPECT || v == V_STORE_COUNTED) r2p(keys, outr, m, sizeof *keys);
        uint64_t bad = !suite_sorted(keys, m);
        for (int q = 0; q < p; q++) /* the last pass's position table */
            for (int d = 0; d < R; d++) bad += pos[(size_t)q * R + d] != suite_dest_pos(all, p, q, d);
        if (bad) fprintf(stderr, "rdx_bspk: %s: pid %d: slice not sorted or positions wrong\n", vname[v], me);
        uint64_t rv[6 + 64];
        rv[0] = bad;
        rv[1] = m > 0;
        rv[2] = m ? keys[0] : 0;
        rv[3] = m ? keys[m - 1] : 0;
        rv[4] = suite_key_sum(keys, m);
        memcpy(&rv[5], &sum, sizeof sum);
        p2r(rep, rv, 6, sizeof *rv);
        p2r(bspk_incr(rep, 6), t, (uint64_t)reps, sizeof *t);
        CK(bspk_send(0, rep, nrep));
        CK(bspk_expect(me == 0 ? p : 0));
        CK(bspk_sync());
        if (me == 0) {
            uint64_t nbad = 0, out_sum = 0, prev_last = 0, seen = 0;
            double avg = 0;
            for (int r = 0; r < reps; r++) mx[r] = 0;
            for (bspk_ptr msg; !bspk_is_null(msg = bspk_recv());) { /* in pid order */
                if (bspk_nelems(msg) != nrep) bspk_abort("rdx_bspk: short report");
                bspk_ptr at = r2p(rv, msg, 6, sizeof *rv);
                r2p(t, at, (uint64_t)reps, sizeof *t);
                nbad += rv[0];
                if (rv[1]) {
                    if (seen && rv[2] < prev_last) nbad++;
                    prev_last = rv[3];
                    seen = 1;
                }
                out_sum += rv[4];
                double s;
                memcpy(&s, &rv[5], sizeof s);
                if (s / reps > avg) avg = s / reps;
                for (int r = 0; r < reps; r++)
                    if (t[r] > mx[r]) mx[r] = t[r];
                CK(bspk_free(msg));
            }
            if (out_sum != in_sum) {
                fprintf(stderr, "rdx_bspk: %s: checksum of the output differs from the input's\n", vname[v]);
                nbad++;
            }
            int ok = nbad == 0;
            if (!ok) status = 1;
            suite_emit("Rdx", "Radix", "bspk", vname[v], p, 0, (long)n, suite_median(mx, reps), avg, reps, ok);
        }
    }
    /* every process learns the status (pid 0 decides it) */
    bspk_ptr st = bspk_malloc("", 0, 1, sizeof(int));
    CKP(st, "bspk_malloc");
    *(int *)bspk_elemP(st) = status;
    if (me == 0)
        for (int j = 0; j < p; j++) CK(bspk_send(j, st, 1));
    CK(bspk_expect(1));
    CK(bspk_sync());
    bspk_ptr msg = bspk_recv();
    CKP(msg, "bspk_recv status");
    status = *(int *)bspk_elemP(msg);
    CK(bspk_free(msg));
    CK(bspk_free(st));
    CK(bspk_free(rep));
    CK(bspk_free(sendbuf));
    CK(bspk_free(cnt_msg));
    CK(bspk_free(csend));
    CK(bspk_free(cbuf[0]));
    CK(bspk_free(cbuf[1]));
    free(keys);
    free(sorted);
    free(all);
    free(pos);
    free(outp);
    free(nextd);
    free(inmsg);
    free(seg);
    free(run_at);
    free(run_len);
    free(blo);
    free(t);
    free(mx);
    CK(bspk_finalize());
    return status;
}
