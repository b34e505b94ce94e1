/*
 * bench/suite/kernels.h -- what the BSPk and Open MPI twins of the suites of
 * "Remote memory access: a case for portable, efficient and library independent
 * parallel programming" (Gerbessiotis and Lee; ../shared/seeds/
 * rma-portable-bsp-benchmarks.txt, cited as [RMA §n]) share: the input data, the
 * compute kernels, the verification and the timing statistics. Nothing here
 * communicates, so both sides run exactly the same local work.
 *
 * Output: every program prints, from pid 0 only, one line per measurement
 *   csv,<suite>,<test>,<library>,<variant>,<p>,<h>,<n>,<max_median_s>,<avg_s>,<reps>,<ok>
 * suite: As | Mult | Rdx; test: Empty, Comp, Full, Simple, Scatter, Total (g(h)),
 * Cannon, Radix; library: bspk | mpi; variant: the way of communicating and
 * synchronising (e.g. mp-expect, mp-counted, store-expect, store-counted,
 * fetch-expect, put-fence-allocate, put-fence-create, isend-barrier, alltoall);
 * h: words (32-bit) per process for Total, 0 otherwise; n: problem size (matrix
 * order, keys) or 0; max_median_s: per repetition the maximum over processes,
 * then the median over repetitions (seconds); avg_s: the timed loop's total
 * time divided by the repetitions, maximum over processes (seconds); ok: 1 when
 * the result was verified (exactly), 0 when verification failed.
 * bench/suite.sh collects these lines into suite.csv and the tables.
 */
#ifndef BSPK_BENCH_SUITE_KERNELS_H
#define BSPK_BENCH_SUITE_KERNELS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- Timing ------------------------------------------------------------------ */

/* Seconds on CLOCK_MONOTONIC (the clock bspk_time and MPI_Wtime use here). */
static inline double suite_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int suite_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v in place). n >= 1. */
static inline double suite_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, suite_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One result line (see the header comment for the fields). */
static inline void suite_emit(const char *suite, const char *test, const char *library, const char *variant,
                              int p, long h, long n, double max_median_s, double avg_s, int reps, int ok) {
    printf("csv,%s,%s,%s,%s,%d,%ld,%ld,%.9g,%.9g,%d,%d\n", suite, test, library, variant, p, h, n, max_median_s,
           avg_s, reps, ok);
    fflush(stdout);
}

/* ---- As: Comp ---------------------------------------------------------------- */

/* 100 dependent floating-point operations [RMA §3 Test 2] (50 multiply-adds in
 * a chain the compiler cannot fold). Returns the result so it stays live. */
static inline double suite_comp(double x) {
    volatile double seed = 1.000001;
    double a = seed;
    for (int i = 0; i < 50; i++) x = x * a + 1e-9;
    return x;
}

/* ---- Input data ---------------------------------------------------------------- */

/* SplitMix64: the i-th value of a seeded stream, independent of p. */
static inline uint64_t suite_mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Word sent in As tests from process `from` to process `to` in repetition r:
 * the receiver checks it, so a lost or misplaced word fails verification. */
static inline uint32_t suite_as_word(int from, int to, long r) {
    return (uint32_t)suite_mix64(((uint64_t)r << 32) ^ ((uint64_t)from << 16) ^ (uint64_t)to);
}

/* ---- Mult: Cannon's algorithm [RMA §4, Fig. 7] ----------------------------------
 * n x n matrices of doubles, column major (A[i,j] at j*n+i), on a P x P grid of
 * processes (p = P*P), block N = n/P; process pid has pi = pid % P, pj = pid / P
 * and owns the blocks A_{pi,pj}, B_{pi,pj}, C_{pi,pj} (each N x N, column major).
 * Entries are small integers, so every product and sum is exact in double and
 * the result is verified with ==. */
static inline double suite_a(long i, long j) { return (double)((i + 2 * j) % 7 - 3); }
static inline double suite_b(long i, long j) { return (double)((3 * i + j) % 5 - 2); }

/* Fill the N x N block (bi, bj) of A (which = 'A') or B ('B'), column major. */
static inline void suite_fill_block(double *blk, char which, long N, long bi, long bj) {
    for (long c = 0; c < N; c++)
        for (long r = 0; r < N; r++)
            blk[c * N + r] = which == 'A' ? suite_a(bi * N + r, bj * N + c) : suite_b(bi * N + r, bj * N + c);
}

/* at = transpose of a (both N x N, column major) [RMA Fig. 7 line 8]. */
static inline void suite_transpose(double *at, const double *a, long N) {
    for (long c = 0; c < N; c++)
        for (long r = 0; r < N; r++) at[r * N + c] = a[c * N + r];
}

/* Elements [e0, e0 + k) of an N x N column-major block a, given at src, into
 * at = transpose of a: what suite_transpose does, for a block held in pieces
 * (a comem region's frames: bench/suite/mult_bspk.c). */
static inline void suite_transpose_part(double *at, const double *src, long e0, long k, long N) {
    long c = e0 / N, r = e0 % N;
    for (long i = 0; i < k; i++) {
        at[r * N + c] = src[i];
        if (++r == N) {
            r = 0;
            c++;
        }
    }
}

/* C += A_blk x b, given at = transpose of the A block and bcol[c] = column c
 * of b: C[r,c] += sum_k at[r*N+k] * bcol[c][k] [RMA Fig. 7 line 9]: columns
 * of at times columns of b, both unit stride. The columns need not be
 * consecutive (a comem region's frames: mult_bspk.c); suite_block_mult is
 * this kernel for a b in one array. */
static inline void suite_block_mult_cols(double *C, const double *at, const double *const *bcol, long N) {
    for (long c = 0; c < N; c++) {
        const double *bc = bcol[c];
        for (long r = 0; r < N; r++) {
            const double *ar = at + r * N;
            double s = 0;
            for (long k = 0; k < N; k++) s += ar[k] * bc[k];
            C[c * N + r] += s;
        }
    }
}

/* C += A_blk x b for b in one array (column c at b + c*N): the same loops as
 * suite_block_mult_cols. */
static inline void suite_block_mult(double *C, const double *at, const double *b, long N) {
    for (long c = 0; c < N; c++) {
        const double *bc = b + c * N;
        for (long r = 0; r < N; r++) {
            const double *ar = at + r * N;
            double s = 0;
            for (long k = 0; k < N; k++) s += ar[k] * bc[k];
            C[c * N + r] += s;
        }
    }
}

/* Number of entries of the N x N block (bi, bj) of C = A B (n x n) that differ
 * from the exact product; 0 means verified. O(N^2 n). */
static inline long suite_check_c(const double *C, long n, long N, long bi, long bj) {
    long bad = 0;
    for (long c = 0; c < N; c++)
        for (long r = 0; r < N; r++) {
            double s = 0;
            long gi = bi * N + r, gj = bj * N + c;
            for (long k = 0; k < n; k++) s += suite_a(gi, k) * suite_b(k, gj);
            bad += C[c * N + r] != s;
        }
    return bad;
}

/* ---- Rdx: LSD radix sort [RMA §5, Fig. 9] ----------------------------------------
 * n 32-bit keys, block distributed: process j holds positions
 * [suite_block_start(n, p, j), suite_block_start(n, p, j+1)); the key at global
 * position g is suite_key(g, seed), so the input is the same for every p. Four
 * passes of count sort on 8-bit digits, least significant first. */
#define SUITE_RADIX 256
#define SUITE_PASSES 4

static inline uint32_t suite_key(uint64_t g, uint64_t seed) { return (uint32_t)suite_mix64(g ^ (seed << 40)); }

static inline uint64_t suite_block_start(uint64_t n, int p, int j) {
    uint64_t q = n / (uint64_t)p, r = n % (uint64_t)p;
    return (uint64_t)j * q + ((uint64_t)j < r ? (uint64_t)j : r);
}

/* Digit `pass` (0 = least significant) of key k. */
static inline unsigned suite_digit(uint32_t k, int pass) { return (k >> (8 * pass)) & 0xFF; }

/* Local count sort by digit `pass`: counts[d] = keys with digit d; out gets the
 * keys of in[0..m) grouped by digit (stable). counts has SUITE_RADIX entries. */
static inline void suite_count_sort(uint32_t *out, uint64_t *counts, const uint32_t *in, uint64_t m, int pass) {
    uint64_t start[SUITE_RADIX];
    memset(counts, 0, SUITE_RADIX * sizeof *counts);
    for (uint64_t i = 0; i < m; i++) counts[suite_digit(in[i], pass)]++;
    uint64_t s = 0;
    for (int d = 0; d < SUITE_RADIX; d++) { start[d] = s; s += counts[d]; }
    for (uint64_t i = 0; i < m; i++) out[start[suite_digit(in[i], pass)]++] = in[i];
}

/* Global destination of the digit-d keys of process q: given the p x 256 count
 * matrix (all[q*256+d] = keys of digit d on q), the position of q's first
 * digit-d key in the globally sorted order: all keys with smaller digits, then
 * those of digit d on processes before q [RMA Fig. 9 line 3]. O(p * 256). */
static inline uint64_t suite_dest_pos(const uint64_t *all, int p, int q, int d) {
    uint64_t pos = 0;
    for (int dd = 0; dd < d; dd++)
        for (int j = 0; j < p; j++) pos += all[(size_t)j * SUITE_RADIX + dd];
    for (int j = 0; j < q; j++) pos += all[(size_t)j * SUITE_RADIX + d];
    return pos;
}

/* Order-independent checksum of keys (sum of a hash of each key, mod 2^64). */
static inline uint64_t suite_key_sum(const uint32_t *k, uint64_t m) {
    uint64_t s = 0;
    for (uint64_t i = 0; i < m; i++) s += suite_mix64(k[i]);
    return s;
}

/* 1 if k[0..m) is non-decreasing. */
static inline int suite_sorted(const uint32_t *k, uint64_t m) {
    for (uint64_t i = 1; i < m; i++)
        if (k[i - 1] > k[i]) return 0;
    return 1;
}

/* ---- Command line of the Mult and Rdx programs ---------------------------------- */

typedef struct {
    long long n;             /* --n (0: the program's default) */
    int reps;                /* --reps (0: the program's default) */
    int quick;               /* --quick */
    unsigned long long seed; /* --seed (only where allowed; default 1) */
} suite_app_opts;

/* Parse --n N, --reps R, --quick, --variants a,b (names from vnames[0..nv)) and,
 * when with_seed, --seed S. want[v] = 1 for each variant asked for (every one
 * when --variants is absent). Returns 0, or 2 with the reason in err. */
static inline int suite_parse_app(int argc, char **argv, const char *const *vnames, int nv, int with_seed,
                                  suite_app_opts *o, int *want, char *err, size_t errlen) {
    int any = 0;
    memset(o, 0, sizeof *o);
    o->seed = 1;
    memset(want, 0, (size_t)nv * sizeof *want);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick")) { o->quick = 1; continue; }
        if (v && !strcmp(a, "--n")) o->n = atoll(v);
        else if (v && !strcmp(a, "--reps")) o->reps = atoi(v);
        else if (v && with_seed && !strcmp(a, "--seed")) o->seed = strtoull(v, NULL, 10);
        else if (v && !strcmp(a, "--variants")) {
            char list[512];
            snprintf(list, sizeof list, "%s", v);
            for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
                int k = 0;
                while (k < nv && strcmp(tok, vnames[k])) k++;
                if (k == nv) { snprintf(err, errlen, "unknown variant '%s'", tok); return 2; }
                want[k] = 1;
                any = 1;
            }
        } else { snprintf(err, errlen, "bad argument '%s'", a); return 2; }
        i++;
    }
    if (!any)
        for (int k = 0; k < nv; k++) want[k] = 1;
    return 0;
}

#endif /* BSPK_BENCH_SUITE_KERNELS_H */
