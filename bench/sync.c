/*
 * bench/sync -- cost of an empty superstep under each way of counting, against
 * a raw libfabric dissemination barrier in the same process.
 *
 *   bspkrun -n P [--provider NAME] sync [--time SECONDS] [--chunks K]
 *
 * Modes (one empty superstep = bspk_sync with nothing sent):
 *   expect0    bspk_expect(0): nothing to wait for, no traffic at all (the lazy
 *              barrier of [BSPk §5]: processes do not wait for each other);
 *   will_send  bspk_will_send(zeros): the vectors are summed over a binomial tree
 *              (reduce + broadcast, 2 ceil(log2 p) message rounds);
 *   counted    no declaration: the runtime sums the actual send counts the same way.
 * Baseline: a dissemination barrier (ceil(log2 p) rounds of 8-byte fi_send/fi_recv)
 * on a raw endpoint of the same provider, polling with sched_yield when idle.
 * Run it for p = 2, 4, 8 (bench/run_sync.sh does, for tcp and shm).
 *
 * --chunks K: instead of one measurement per mode, each mode alternates with
 * the raw barrier in K pairs of chunks (each chunk --time / K seconds, the
 * order of the pair swapped every other chunk), and the vs_raw column is the
 * median of the K per-pair ratios, with their range. On a VM whose cores'
 * placement changes within seconds (README, Performance) a ratio of two
 * measurements taken seconds apart can compare two placements; a ratio of
 * chunks a few milliseconds apart compares like with like.
 */
#include <bspk.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rawfab.h"

#define NSLOTS 64
static int me, P;
static rawfab raw;
static struct fi_context2 slot_ctx[NSLOTS];
static int got[2][32];

static void post_slot(int i) {
    ssize_t rc;
    while ((rc = fi_recv(raw.ep, (char *)raw.buf + raw.len + 8 * (size_t)i, 8, raw.desc, FI_ADDR_UNSPEC,
                         &slot_ctx[i])) == -FI_EAGAIN) {
        struct fi_cq_entry e;
        (void)fi_cq_read(raw.cq, &e, 0);
    }
    RAW_CHECK(rc);
}

static void raw_progress(void) {
    struct fi_cq_entry e[16];
    ssize_t k = fi_cq_read(raw.cq, e, 16);
    if (k == -FI_EAGAIN) { sched_yield(); return; }
    if (k < 0) bspk_abort("raw barrier: cq error");
    for (ssize_t i = 0; i < k; i++) {
        if (e[i].op_context >= (void *)&slot_ctx[0] && e[i].op_context <= (void *)&slot_ctx[NSLOTS - 1]) {
            int s = (int)((struct fi_context2 *)e[i].op_context - slot_ctx);
            uint64_t v;
            memcpy(&v, (char *)raw.buf + raw.len + 8 * (size_t)s, 8);
            got[(v >> 8) & 1][v & 0xFF]++;
            post_slot(s);
        }
    }
}

static void raw_barrier(uint64_t iter) {
    static struct fi_context2 sctx;
    int round = 0;
    for (int d = 1; d < P; d <<= 1, round++) {
        uint64_t v = iter << 8 | (uint64_t)round;
        memcpy(raw.buf, &v, 8);
        ssize_t rc;
        while ((rc = fi_send(raw.ep, raw.buf, 8, raw.desc, raw.peers[(me + d) % P], &sctx)) == -FI_EAGAIN)
            raw_progress();
        RAW_CHECK(rc);
        while (got[iter & 1][round] == 0) raw_progress();
        got[iter & 1][round]--;
    }
}

static double run_mode(const char *mode, int iters, int *zeros) {
    double t0 = 0;
    for (int it = -iters / 10 - 1; it < iters; it++) {
        if (it == 0) t0 = bspk_time();
        if (!strcmp(mode, "raw")) {
            raw_barrier((uint64_t)(it + iters));
            continue;
        }
        if (!strcmp(mode, "expect0")) bspk_expect(0);
        else if (!strcmp(mode, "will_send")) bspk_will_send(zeros);
        if (bspk_sync() != BSPK_OK) bspk_abort("sync: %s", bspk_error_string());
    }
    return (bspk_time() - t0) / iters;
}

/* The iteration count for `seconds` of `mode`: calibrated on pid 0, the
 * same on every process. */
static int iterations(const char *mode, double seconds, int *zeros) {
    double est = run_mode(mode, 20, zeros);
    int iters = (int)(seconds / (est > 1e-7 ? est : 1e-7));
    if (iters > 200000) iters = 200000;
    if (iters < 50) iters = 50;
    bspk_ptr im = bspk_malloc("", 0, 1, sizeof(int));
    *(int *)bspk_elemP(im) = iters;
    if (me == 0)
        for (int q = 0; q < P; q++) bspk_send(q, im, 1);
    bspk_sync();
    bspk_ptr r = bspk_recv();
    iters = *(int *)bspk_elemP(r);
    bspk_free(r);
    bspk_free(im);
    return iters;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* --chunks K: mode and raw in K alternating pairs of chunks; prints the mode's
 * median time and the median [min-max] of the per-pair ratios. */
static void alternate(const char *mode, int chunks, double budget, int *zeros) {
    int it_raw = iterations("raw", budget / chunks, zeros), it = iterations(mode, budget / chunks, zeros);
    double *t = malloc(sizeof(double) * (size_t)chunks), *ratio = malloc(sizeof(double) * (size_t)chunks);
    double *traw = malloc(sizeof(double) * (size_t)chunks);
    if (!t || !ratio || !traw) bspk_abort("sync: out of memory");
    for (int c = 0; c < chunks; c++) {
        double a, b;
        bspk_sync();
        if (c & 1) {
            b = run_mode(mode, it, zeros);
            bspk_sync();
            a = run_mode("raw", it_raw, zeros);
        } else {
            a = run_mode("raw", it_raw, zeros);
            bspk_sync();
            b = run_mode(mode, it, zeros);
        }
        traw[c] = a;
        t[c] = b;
        ratio[c] = b / a;
    }
    bspk_sync();
    qsort(t, (size_t)chunks, sizeof *t, cmp_double);
    qsort(traw, (size_t)chunks, sizeof *traw, cmp_double);
    qsort(ratio, (size_t)chunks, sizeof *ratio, cmp_double);
    if (me == 0)
        printf("%4d %-10s %12.2f %10.2f  [%.2f-%.2f] (raw %.2f us; median of %d pairs)\n", P, mode,
               t[chunks / 2] * 1e6, ratio[chunks / 2], ratio[0], ratio[chunks - 1], traw[chunks / 2] * 1e6, chunks);
    fflush(stdout);
    free(t);
    free(traw);
    free(ratio);
}

int main(int argc, char **argv) {
    bspk_init(&argc, &argv);
    me = bspk_pid();
    P = bspk_nprocs();
    double budget = 0.5;
    int chunks = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--time") && i + 1 < argc) budget = atof(argv[++i]);
        else if (!strcmp(argv[i], "--chunks") && i + 1 < argc) chunks = atoi(argv[++i]);
        else {
            if (me == 0) fprintf(stderr, "usage: sync [--time SECONDS] [--chunks K]\n");
            return bspk_finalize(), 2;
        }
    }
    if (chunks < 0 || budget <= 0) {
        if (me == 0) fprintf(stderr, "sync: --time must be > 0 and --chunks >= 0\n");
        return bspk_finalize(), 2;
    }
    rawfab_open(&raw, 4096);
    for (int i = 0; i < NSLOTS; i++) post_slot(i);
    int *zeros = calloc((size_t)P, sizeof *zeros);
    /* A counted superstep aligns everyone before each measurement. */
    bspk_sync();
    double t_raw = 0;
    const char *modes[] = {"raw", "expect0", "will_send", "counted"};
    if (me == 0) {
        printf("# sync: p=%d provider %s; microseconds per empty superstep, %s\n", P,
               getenv("FI_PROVIDER") ? getenv("FI_PROVIDER") : "?",
               chunks ? "median over chunks alternated with the raw barrier" : "one run");
        printf("%4s %-10s %12s %10s\n", "p", "mode", "us/step", "vs_raw");
    }
    for (int m = chunks ? 1 : 0; m < 4; m++) {
        if (chunks) {
            alternate(modes[m], chunks, budget, zeros);
            continue;
        }
        int iters = iterations(modes[m], budget, zeros);
        double t = run_mode(modes[m], iters, zeros);
        bspk_sync();
        if (m == 0) t_raw = t;
        if (me == 0) printf("%4d %-10s %12.2f %10.2f\n", P, modes[m], t * 1e6, t / t_raw);
        fflush(stdout);
    }
    free(zeros);
    rawfab_close(&raw);
    return bspk_finalize() ? 1 : 0;
}
