/*
 * bsplib_bench -- the BSP parameters r, g and l of BSPlib on BSPk, in the
 * spirit of Bisseling's bspbench. Its Open MPI twin is mpi_bench.c; both share
 * bench_common.h (the h-relation, the rate kernel, the fit, the output lines).
 *
 *   bsprun -n P bsplib_bench [--quick] [--hmax H] [--budget S] [--reps MIN,MAX]
 *   (or bspkrun -n P --provider shm|tcp bsplib_bench ...; bench/bsplib_bench.sh
 *   runs it next to mpi_bench)
 *
 * Measurements, each one superstep per repetition:
 *   rate        r: flop/s of a DAXPY pair in cache (bb_rate), every process at once;
 *   sync        an empty bsp_sync;
 *   put         h-relation of single-word bsp_put's (bench_common.h), h = 0, 1,
 *               2, 4, ... hmax (and 3, 6, 12, ... without --quick, and p);
 *   hpput       the same with bsp_hpput;
 *   send        the same with bsp_send (tag size 0, one double of payload); the
 *               receiver drains its queue with bsp_qsize + bsp_move after the
 *               sync, inside the timed repetition;
 *   get         its mirror: each process bsp_get's the h words put brings it;
 *   put-expect  the put h-relation at h = p with bspk_expect(m) before bsp_sync,
 *               m = the number of other processes that put to this one (p - 1).
 * g and l: least-squares fit of T(h) = g h + l over the h of put, hpput, send, get.
 *
 * Timing: per measurement, BB_WARMUP untimed repetitions, then timed ones in
 * chunks until the --budget is spent (bb_next_chunk, bench_common.h). A
 * repetition's time runs from before its first communication call to the
 * return of bsp_sync (and, for send, the end of draining). Puts and gets are
 * verified after the timed loop, sends in every repetition (count and sum).
 * The times go to pid 0 in untimed supersteps; it prints bench_common.h's csv
 * lines. Exit status 1 if any verification failed.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime in bench_common.h */
#include <bsp.h>
#include <bspk.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

enum { V_SYNC, V_PUT, V_HPPUT, V_SEND, V_PUT_EXPECT, V_GET };
static const char *const variant_name[] = {"sync", "put", "hpput", "send", "put-expect", "get"};

static bb_opts O;
static int me, P, stride; /* stride: doubles per process in gath (rmax + 2) */
static double *src;       /* registered: this process's words of the h-relation (hmax) */
static double *dst;       /* registered: P * hmax words, index s * hmax + k */
static double *tbuf;      /* registered: P doubles, one from every process */
static double *gath;      /* registered: P * stride doubles, read at pid 0 */
static double *times;     /* this process's repetition times, loop time, bad words */
static long bad_total;

/* Every process's x in tbuf (one untimed superstep). */
static void all_gather1(double x) {
    for (int q = 0; q < P; q++)
        if (q != me) bsp_put(q, &x, tbuf, me * (bsp_size_t)sizeof(double), sizeof(double));
    tbuf[me] = x;
    bsp_sync();
}

static double max_all(double x) {
    all_gather1(x);
    double m = tbuf[0];
    for (int q = 1; q < P; q++)
        if (tbuf[q] > m) m = tbuf[q];
    return m;
}

/* One repetition of variant v at h; returns the words that went wrong (send). */
static long one_rep(int v, int h) {
    long bad = 0;
    switch (v) {
    case V_SYNC:
        bsp_sync();
        break;
    case V_PUT:
    case V_PUT_EXPECT:
        for (int i = 0; i < h; i++)
            bsp_put(bb_dest(me, i, P), &src[i], dst, bb_index(me, i, P, O.hmax) * (bsp_size_t)sizeof(double),
                    sizeof(double));
        if (v == V_PUT_EXPECT) {
            int rc = bspk_expect(bb_senders(h, P));
            if (rc != BSPK_OK) bsp_abort("bsplib_bench: bspk_expect(%d) failed: %d\n", bb_senders(h, P), rc);
        }
        bsp_sync();
        break;
    case V_HPPUT:
        for (int i = 0; i < h; i++)
            bsp_hpput(bb_dest(me, i, P), &src[i], dst, bb_index(me, i, P, O.hmax) * (bsp_size_t)sizeof(double),
                      sizeof(double));
        bsp_sync();
        break;
    case V_SEND: {
        for (int i = 0; i < h; i++) bsp_send(bb_dest(me, i, P), NULL, &src[i], sizeof(double));
        bsp_sync();
        bsp_nprocs_t n;
        bsp_size_t bytes;
        bsp_qsize(&n, &bytes);
        double sum = 0, w;
        for (int j = 0; j < n; j++) {
            bsp_move(&w, sizeof w);
            sum += w;
        }
        double want = bb_sum_to(me, h, P), diff = sum - want;
        if (n != h || bytes != h * (bsp_size_t)sizeof(double) || diff > 1e-12 * want || -diff > 1e-12 * want) bad++;
        break;
    }
    case V_GET:
        /* The put h-relation's words, fetched by their destination: word i of
         * owner s goes here when bb_dest(s, i, P) == me, i.e. for
         * s = me - 1 - i mod (P-1) (mod P); every i < h once, so each owner s
         * gives bb_count_from(s, me, h, P) words, to dst[s * hmax + k]. */
        for (int i = 0; i < h; i++) {
            int s = P == 1 ? 0 : (me - 1 - i % (P - 1) + P) % P;
            bsp_get(s, src, i * (bsp_size_t)sizeof(double), &dst[bb_index(s, i, P, O.hmax)], sizeof(double));
        }
        bsp_sync();
        break;
    }
    return bad;
}

/* Measures variant v at h; returns (at pid 0) the median over repetitions of
 * the slowest process's time, and prints the csv line. */
static double measure(int v, int h) {
    if (v != V_SYNC) bb_fill_src(src, me, h, P);
    memset(dst, 0, (size_t)P * O.hmax * sizeof *dst);
    bsp_sync();

    for (int r = 0; r < BB_WARMUP; r++) one_rep(v, h);

    long bad = 0;
    int reps = 0;
    double loop = 0;
    for (int chunk = O.rmin; chunk > 0; chunk = bb_next_chunk(&O, reps, max_all(loop))) {
        double tl = bsp_time();
        for (int r = reps; r < reps + chunk; r++) {
            double t0 = bsp_time();
            bad += one_rep(v, h);
            times[r] = bsp_time() - t0;
        }
        loop += bsp_time() - tl;
        reps += chunk;
    }
    times[reps] = loop;
    if (v != V_SYNC && v != V_SEND) bad += bb_check_dst(dst, me, h, P, O.hmax);
    times[reps + 1] = (double)bad;
    if (bad)
        fprintf(stderr, "bsplib_bench: pid %d: %s h=%d: %ld words wrong or missing\n", me, variant_name[v], h, bad);

    if (me == 0)
        memcpy(gath, times, (size_t)(reps + 2) * sizeof *times);
    else
        bsp_put(0, times, gath, me * stride * (bsp_size_t)sizeof(double), (reps + 2) * (bsp_size_t)sizeof(double));
    bsp_sync();
    return bb_report_times("bsplib", variant_name[v], me, gath, P, stride, reps, h, &bad_total);
}

/* The h-relation curve of variant v and its fit (printed by pid 0). */
static void curve(int v, const int *hv, int nh) { bb_curve("bsplib", variant_name[v], measure, v, hv, nh, me, P, &bad_total); }

int main(int argc, char **argv) {
    if (bb_parse(&O, argc, argv)) return 2;
    bsp_begin(bsp_nprocs());
    me = bsp_pid();
    P = bsp_nprocs();
    stride = O.rmax + 2;
    src = calloc((size_t)O.hmax, sizeof *src);
    dst = calloc((size_t)P * O.hmax, sizeof *dst);
    tbuf = calloc((size_t)P, sizeof *tbuf);
    gath = calloc((size_t)P * stride, sizeof *gath);
    times = calloc((size_t)stride, sizeof *times);
    if (!src || !dst || !tbuf || !gath || !times) bsp_abort("bsplib_bench: out of memory\n");
    bsp_push_reg(dst, P * O.hmax * (bsp_size_t)sizeof *dst);
    bsp_push_reg(src, O.hmax * (bsp_size_t)sizeof *src);
    bsp_push_reg(tbuf, P * (bsp_size_t)sizeof *tbuf);
    bsp_push_reg(gath, P * stride * (bsp_size_t)sizeof *gath);
    bsp_sync();

    /* r: every process at once, as during a computation superstep. */
    bsp_sync();
    double r = bb_rate(O.rtime);
    all_gather1(r);
    if (me == 0) {
        double sum = 0, mn = tbuf[0];
        for (int q = 0; q < P; q++) {
            sum += tbuf[q];
            if (tbuf[q] < mn) mn = tbuf[q];
        }
        bb_emit("bsplib", "rate", "daxpy", P, 0, sum / P, mn, 0, 1);
    }

    int hv[BB_MAX_POINTS];
    int nh = bb_hvalues(hv, &O, P);
    measure(V_SYNC, 0);
    curve(V_PUT, hv, nh);
    curve(V_HPPUT, hv, nh);
    curve(V_SEND, hv, nh);
    curve(V_GET, hv, nh);
    if (P <= O.hmax) measure(V_PUT_EXPECT, P);

    bsp_pop_reg(gath);
    bsp_pop_reg(tbuf);
    bsp_pop_reg(src);
    bsp_pop_reg(dst);
    bsp_sync();
    int status = me == 0 && bad_total ? 1 : 0;
    bsp_end();
    free(times);
    free(gath);
    free(tbuf);
    free(dst);
    free(src);
    return status;
}
