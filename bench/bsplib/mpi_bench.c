/*
 * mpi_bench -- the Open MPI twin of bsplib_bench.c: r, g and l measured the
 * way BSPlib-over-MPI libraries communicate, with MPI_Put into a window from
 * MPI_Win_allocate and MPI_Win_fence(0, win) as the superstep's end. Same
 * h-relations, data, rate kernel, timing and fit (bench_common.h).
 *
 *   mpirun -n P ... mpi_bench [--quick] [--hmax H] [--budget S] [--reps MIN,MAX]
 *   shm: --mca pml ob1 --mca btl self,vader --mca osc rdma,pt2pt
 *   tcp: --mca pml ob1 --mca btl self,tcp --mca osc pt2pt
 *   (/work/shared/reference/mpi/NOTES.md; bench/bsplib_bench.sh passes them)
 *
 * Measurements, one superstep per repetition:
 *   rate     r, as bsplib_bench;
 *   barrier  MPI_Barrier;
 *   fence    an empty MPI_Win_fence(0, win);
 *   put      the h-relation of single-word MPI_Put's (bench_common.h), each
 *            repetition closed by MPI_Win_fence(0, win); h as bsplib_bench
 *            (so h = p is on the curve: the comparison for put-expect);
 *   get      its mirror: MPI_Get of the same words by their destination, from a
 *            second window (gsrc, MPI_Win_allocate), closed by MPI_Win_fence.
 * g and l: least-squares fit of T(h) = g h + l over the put and the get curve.
 * Timing as bsplib_bench: warm-up, timed repetitions in chunks until the
 * budget is spent (MPI_Allreduce between chunks), MPI_Gather of the
 * times at pid 0 (median over repetitions of the slowest process). Puts and
 * gets are verified after the timed loop. Exit status 1 if any verification
 * failed.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime in bench_common.h */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

enum { V_BARRIER, V_FENCE, V_PUT, V_GET };
static const char *const variant_name[] = {"barrier", "fence", "put", "get"};

static bb_opts O;
static int me, P, stride;
static double *src, *dst, *gath, *times;
static double *gsrc; /* window gwin: the get variant's words of the h-relation (hmax) */
static MPI_Win win, gwin;
static long bad_total;

static void one_rep(int v, int h) {
    switch (v) {
    case V_BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case V_FENCE:
        MPI_Win_fence(0, win);
        break;
    case V_PUT:
        for (int i = 0; i < h; i++)
            MPI_Put(&src[i], 1, MPI_DOUBLE, bb_dest(me, i, P), bb_index(me, i, P, O.hmax), 1, MPI_DOUBLE, win);
        MPI_Win_fence(0, win);
        break;
    case V_GET:
        /* As bsplib_bench: word i of owner s = me - 1 - i mod (P-1) (mod P),
         * the one whose put would land here, into the same place of dst. */
        for (int i = 0; i < h; i++) {
            int s = P == 1 ? 0 : (me - 1 - i % (P - 1) + P) % P;
            MPI_Get(&dst[bb_index(s, i, P, O.hmax)], 1, MPI_DOUBLE, s, i, 1, MPI_DOUBLE, gwin);
        }
        MPI_Win_fence(0, gwin);
        break;
    }
}

static double measure(int v, int h) {
    if (v == V_PUT) bb_fill_src(src, me, h, P);
    if (v == V_GET) bb_fill_src(gsrc, me, h, P);
    /* Local stores to the window, then a fence: no put of this measurement
     * reaches dst before every process has cleared its own (and no get reads
     * gsrc before its owner has filled it). */
    memset(dst, 0, (size_t)P * O.hmax * sizeof *dst);
    MPI_Win_fence(0, v == V_GET ? gwin : win);

    for (int r = 0; r < BB_WARMUP; r++) one_rep(v, h);

    long bad = 0;
    int reps = 0;
    double loop = 0, spent = 0;
    for (int chunk = O.rmin; chunk > 0; chunk = bb_next_chunk(&O, reps, spent)) {
        double tl = MPI_Wtime();
        for (int r = reps; r < reps + chunk; r++) {
            double t0 = MPI_Wtime();
            one_rep(v, h);
            times[r] = MPI_Wtime() - t0;
        }
        loop += MPI_Wtime() - tl;
        reps += chunk;
        MPI_Allreduce(&loop, &spent, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    times[reps] = loop;
    if (v == V_PUT || v == V_GET) bad = bb_check_dst(dst, me, h, P, O.hmax);
    times[reps + 1] = (double)bad;
    if (bad) fprintf(stderr, "mpi_bench: pid %d: %s h=%d: %ld words wrong or missing\n", me, variant_name[v], h, bad);

    /* Every process sends the whole `stride` (the counts of a collective
     * must match: a shorter send than the root's receive count is erroneous
     * MPI, and the TCP BTL's gather at p = 4 hung on it). */
    MPI_Gather(times, stride, MPI_DOUBLE, gath, stride, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return bb_report_times("mpi", variant_name[v], me, gath, P, stride, reps, h, &bad_total);
}

/* The h-relation curve of variant v and its fit (printed by pid 0). */
static void curve(int v, const int *hv, int nh) { bb_curve("mpi", variant_name[v], measure, v, hv, nh, me, P, &bad_total); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (bb_parse(&O, argc, argv)) {
        MPI_Finalize();
        return 2;
    }
    stride = O.rmax + 2;
    src = calloc((size_t)O.hmax, sizeof *src);
    gath = calloc((size_t)P * stride, sizeof *gath);
    times = calloc((size_t)stride, sizeof *times);
    if (!src || !gath || !times) MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Win_allocate((MPI_Aint)P * O.hmax * (MPI_Aint)sizeof(double), sizeof(double), MPI_INFO_NULL,
                     MPI_COMM_WORLD, &dst, &win);
    MPI_Win_fence(0, win);
    MPI_Win_allocate((MPI_Aint)O.hmax * (MPI_Aint)sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD,
                     &gsrc, &gwin);
    MPI_Win_fence(0, gwin);

    MPI_Barrier(MPI_COMM_WORLD);
    double r = bb_rate(O.rtime), rsum, rmin;
    MPI_Reduce(&r, &rsum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&r, &rmin, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    if (me == 0) bb_emit("mpi", "rate", "daxpy", P, 0, rsum / P, rmin, 0, 1);

    int hv[BB_MAX_POINTS];
    int nh = bb_hvalues(hv, &O, P);
    measure(V_BARRIER, 0);
    measure(V_FENCE, 0);
    curve(V_PUT, hv, nh);
    curve(V_GET, hv, nh);

    MPI_Win_fence(0, gwin);
    MPI_Win_free(&gwin);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);
    free(times);
    free(gath);
    free(src);
    int status = me == 0 && bad_total ? 1 : 0;
    MPI_Finalize();
    return status;
}
