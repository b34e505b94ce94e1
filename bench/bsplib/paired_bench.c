/*
 * paired_bench -- BSPlib on BSPk and Open MPI in the SAME processes, measured
 * in alternating short chunks, so that both see the same cores, the same
 * placement of those cores and the same moment. bsplib_bench and mpi_bench
 * (the issue-11 tables) run one program after the other; on this VM the host
 * moves the two vCPUs between near and far placements within a second (a
 * core-to-core round trip of 0.05-0.1 us or 0.3-0.6 us), and every small
 * superstep of either library moves with it, so a ratio of two separate runs
 * can compare a near run with a far one. Here every ratio is of two chunks a
 * few milliseconds apart.
 *
 *   mpirun -n P [--bind-to core] [MCA flags] paired_bench [--quick] [--pairs K]
 *          [--reps R] [--hmax H]
 *   (BSPk bootstraps through mpirun's PMIx server; bench/bsplib_bench.sh runs
 *   it after the separate programs, with the same MCA flags and BSPk settings)
 *
 * Quantities, one superstep per repetition (bench_common.h's h-relation):
 *   sync    an empty bsp_sync                   | MPI_Barrier
 *   put h   h single-word bsp_put's + bsp_sync  | MPI_Put's + MPI_Win_fence
 *           (window from MPI_Win_allocate), h = 0, p, 16, 64, 256, 1024, hmax
 *   expect  the put h-relation at h = p with bspk_expect(m) before bsp_sync
 *           (m = the processes that put to this one)  | puts + fence at h = p
 * Each quantity: K pairs of chunks (--pairs; default 15, --quick 6), a chunk
 * being a few untimed repetitions and then R timed ones (--reps, default 300,
 * --quick 100; fewer for large h: R * 32 / h, at least 10), BSPk's and MPI's
 * chunk of a pair back to back (which goes first alternates by pair), after
 * an untimed MPI_Barrier. A chunk's time: per repetition the slowest process
 * (times gathered at pid 0 after the chunk, untimed), median over the chunk.
 * Reported per quantity: the median over pairs of each side's chunk time, the
 * ratio of those medians, and the median, minimum and maximum over pairs of
 * the pair's ratio; the same for the chunks' loop averages (the slowest
 * process's time for the R repetitions over R, bspbench's own T(h), timed
 * from an MPI_Barrier after the warm-up): where processes are not in lock
 * step (bspk_expect across hosts, several processes per core) the slowest
 * process of a repetition can span parts of two; g and l: least-squares fit of T(h) = g h + l over the put
 * medians. On one host with a CPU per process, before every pair, pids 0
 * and 1 ping-pong one cache line 200 times through a /dev/shm mapping: the
 * core round trip of that moment (its median and range are printed). The words of every put
 * are verified after the quantity's last pair, on both sides.
 *
 * Output (pid 0): csv lines
 *   csv,paired,<quantity>,<p>,<h>,<bspk s>,<mpi s>,<ratio>,<pair ratio median>,
 *       <pair ratio min>,<pair ratio max>,<pairs>,<ok>
 *   csv,paired,<quantity>-loop,... the same of the loop averages
 *   csv,paired,fit,<p>,<points>,<bspk g>,<mpi g>,<g ratio>,<bspk l>,<mpi l>,0,0,<ok>
 *   csv,paired,roundtrip,<p>,0,<min s>,<median s>,<max s>,0,0,0,<pairs>,1
 * then a Markdown table of the same. Exit status 1 if a word went wrong.
 */
#define _GNU_SOURCE /* clock_gettime; ftruncate, mmap */
#include <bsp.h>
#include <bspk.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "../paired.h"

enum { Q_SYNC, Q_PUT, Q_EXPECT };
enum { MAXPAIRS = 64, MAXH = 8 };

static int me, P, hmax, pairs = 15, reps0 = 300, quick;
static double *src, *dst_b; /* dst_b: registered with BSPlib */
static double *dst_m;       /* MPI window memory */
static MPI_Win win;
static double *times, *gath; /* one chunk's repetitions; all processes' at pid 0 */
static _Atomic long *probe;  /* /dev/shm line for the round trip (one host), else NULL */
static long bad_total;

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

static void rep_bspk(int q, int h) {
    if (q != Q_SYNC) {
        for (int i = 0; i < h; i++)
            bsp_put(bb_dest(me, i, P), &src[i], dst_b, bb_index(me, i, P, hmax) * (bsp_size_t)sizeof(double),
                    sizeof(double));
        if (q == Q_EXPECT && bspk_expect(bb_senders(h, P)) != BSPK_OK)
            bsp_abort("paired_bench: bspk_expect(%d): %s\n", bb_senders(h, P), bspk_error_string());
    }
    bsp_sync();
}

static void rep_mpi(int q, int h) {
    if (q == Q_SYNC) {
        MPI_Barrier(MPI_COMM_WORLD);
        return;
    }
    for (int i = 0; i < h; i++)
        MPI_Put(&src[i], 1, MPI_DOUBLE, bb_dest(me, i, P), bb_index(me, i, P, hmax), 1, MPI_DOUBLE, win);
    MPI_Win_fence(0, win);
}

/* One chunk of `reps` timed repetitions of library `lib` (0 BSPk, 1 MPI);
 * pid 0 returns its time (median over repetitions of the slowest process) and
 * sets *loop to the loop's average per repetition (the slowest process's time
 * for all `reps`, over reps: bspbench's own T(h)); the others return 0. */
static double chunk(int lib, int q, int h, int reps, double *loop) {
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < BB_WARMUP; r++) lib ? rep_mpi(q, h) : rep_bspk(q, h);
    MPI_Barrier(MPI_COMM_WORLD);
    double l0 = bb_now();
    for (int r = 0; r < reps; r++) {
        double t0 = bb_now();
        lib ? rep_mpi(q, h) : rep_bspk(q, h);
        times[r] = bb_now() - t0;
    }
    *loop = pp_loop_slowest(bb_now() - l0, reps);
    return pp_slowest(times, reps, gath, me, P) ? bb_median(gath, reps) : 0;
}

static double round_trip(void) { return pp_round_trip(probe, me); }

static void emit(const char *q, long h, double b, double m, double *ratio, int n, int ok) {
    double lo = ratio[0], hi = ratio[0];
    for (int k = 1; k < n; k++) {
        if (ratio[k] < lo) lo = ratio[k];
        if (ratio[k] > hi) hi = ratio[k];
    }
    double med = bb_median(ratio, n);
    printf("csv,paired,%s,%d,%ld,%.9g,%.9g,%.4f,%.4f,%.4f,%.4f,%d,%d\n", q, P, h, b, m, m > 0 ? b / m : 0, med, lo, hi, n,
           ok);
}

/* Quantity q at h: `pairs` pairs of chunks; pid 0 prints its lines (the
 * chunk times, then the loop averages as <quantity>-loop) and returns BSPk's
 * and MPI's medians in *b, *m and the ratio of their loop averages' medians
 * in *loop_ratio (if not NULL). rt[k] gets pair k's round trip. */
static void quantity(int q, int h, double *b, double *m, double *loop_ratio, double *rt) {
    int reps = q == Q_SYNC || h <= 32 ? reps0 : reps0 * 32 / h;
    if (reps < 10) reps = 10;
    if (q != Q_SYNC) bb_fill_src(src, me, h, P);
    double tb[MAXPAIRS], tm[MAXPAIRS], ratio[MAXPAIRS], lb[MAXPAIRS], lm[MAXPAIRS], lratio[MAXPAIRS];
    for (int k = 0; k < pairs; k++) {
        double t = round_trip();
        if (rt) rt[k] = t;
        int first = k % 2;
        double lx, ly;
        double x = chunk(first, q, h, reps, &lx);
        double y = chunk(!first, q, h, reps, &ly);
        tb[k] = first ? y : x;
        tm[k] = first ? x : y;
        ratio[k] = tm[k] > 0 ? tb[k] / tm[k] : 0;
        lb[k] = first ? ly : lx;
        lm[k] = first ? lx : ly;
        lratio[k] = lm[k] > 0 ? lb[k] / lm[k] : 0;
    }
    long bad = 0;
    if (q != Q_SYNC) {
        bad = bb_check_dst(dst_b, me, h, P, hmax);
        MPI_Win_fence(0, win); /* (the last fence already completed the puts; this orders the local reads) */
        long badm = bb_check_dst(dst_m, me, h, P, hmax);
        if (bad || badm)
            fprintf(stderr, "paired_bench: pid %d: h=%d: %ld words wrong or missing (BSPk), %ld (MPI)\n", me, h, bad,
                    badm);
        bad += badm;
    }
    long allbad = 0;
    MPI_Reduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me != 0) return;
    bad_total += allbad;
    *b = bb_median(tb, pairs);
    *m = bb_median(tm, pairs);
    const char *name = q == Q_SYNC ? "sync" : q == Q_PUT ? "put" : "expect";
    emit(name, h, *b, *m, ratio, pairs, allbad == 0);
    char lname[16];
    snprintf(lname, sizeof lname, "%s-loop", name);
    double mb = bb_median(lb, pairs), mm = bb_median(lm, pairs);
    emit(lname, h, mb, mm, lratio, pairs, allbad == 0);
    if (loop_ratio) *loop_ratio = mm > 0 ? mb / mm : 0;
}

static int parse(int argc, char **argv) {
    hmax = 2048;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = 1;
            pairs = 6;
            reps0 = 100;
        } else if (!strcmp(argv[i], "--pairs") && i + 1 < argc)
            pairs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps0 = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--hmax") && i + 1 < argc)
            hmax = atoi(argv[++i]);
        else
            return 2;
    }
    if (pairs < 1 || pairs > MAXPAIRS || reps0 < 10 || hmax < 16 || hmax > BB_MAX_H) return 2;
    return 0;
}

static void map_probe(void) { pp_map(&probe, me, P); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (parse(argc, argv)) {
        fprintf(stderr, "usage: mpirun -n P %s [--quick] [--pairs K (1..%d)] [--reps R (>= 10)] [--hmax H (16..%d)]\n",
                argv[0], MAXPAIRS, BB_MAX_H);
        MPI_Finalize();
        return 2;
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    bsp_begin(size);
    me = bsp_pid();
    P = bsp_nprocs();
    if (me != rank || P != size) bsp_abort("paired_bench: BSPlib pid %d of %d is MPI rank %d of %d\n", me, P, rank, size);
    src = calloc((size_t)hmax, sizeof *src);
    dst_b = calloc((size_t)P * hmax, sizeof *dst_b);
    times = calloc((size_t)reps0, sizeof *times);
    gath = calloc((size_t)P * reps0, sizeof *gath);
    if (!src || !dst_b || !times || !gath) bsp_abort("paired_bench: out of memory\n");
    MPI_Win_allocate((MPI_Aint)P * hmax * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &dst_m, &win);
    memset(dst_m, 0, (size_t)P * hmax * sizeof *dst_m);
    MPI_Win_fence(0, win);
    bsp_push_reg(dst_b, P * hmax * (bsp_size_t)sizeof *dst_b);
    bsp_sync();
    map_probe();

    double rt[MAXPAIRS], b, m, sync_l = 0, exp_l = 0;
    quantity(Q_SYNC, 0, &b, &m, &sync_l, rt);
    double sync_b = b, sync_m = m;
    int hv[MAXH], nh = 0;
    const int cand[] = {0, P, 16, 64, 256, 1024, hmax};
    for (size_t c = 0; c < sizeof cand / sizeof *cand; c++) {
        int h = cand[c], dup = h > hmax;
        for (int i = 0; i < nh; i++) dup |= hv[i] == h;
        if (!dup) hv[nh++] = h;
    }
    qsort(hv, (size_t)nh, sizeof *hv, cmp_int);
    double tb[MAXH], tm[MAXH];
    long bad0 = bad_total;
    for (int i = 0; i < nh; i++) quantity(Q_PUT, hv[i], &tb[i], &tm[i], NULL, NULL);
    double exp_b = 0, exp_m = 0;
    if (P <= hmax) quantity(Q_EXPECT, P, &exp_b, &exp_m, &exp_l, NULL);

    if (me == 0) {
        double gb, lb, gm, lm;
        bb_fit(hv, tb, nh, &gb, &lb);
        bb_fit(hv, tm, nh, &gm, &lm);
        printf("csv,paired,fit,%d,%d,%.9g,%.9g,%.4f,%.9g,%.9g,0,0,%d\n", P, nh, gb, gm, gm > 0 ? gb / gm : 0, lb, lm,
               bad_total == bad0);
        double rlo = 0, rmed = 0, rhi = 0;
        if (probe) {
            rlo = rhi = rt[0];
            for (int k = 1; k < pairs; k++) {
                if (rt[k] < rlo) rlo = rt[k];
                if (rt[k] > rhi) rhi = rt[k];
            }
            rmed = bb_median(rt, pairs);
            printf("csv,paired,roundtrip,%d,0,%.9g,%.9g,%.9g,0,0,0,%d,1\n", P, rlo, rmed, rhi, pairs);
        }
        printf("\n| p = %d, same processes, %d pairs | BSPk (BSPlib) | Open MPI | BSPk / MPI (goal) | loop averages: "
               "BSPk / MPI |\n",
               P, pairs);
        printf("|---|---:|---:|---:|---:|\n");
        printf("| empty bsp_sync / MPI_Barrier, us | %.3g | %.3g | %.2f (<= 1.0) | %.2f |\n", sync_b * 1e6,
               sync_m * 1e6, sync_m > 0 ? sync_b / sync_m : 0, sync_l);
        printf("| g per bsp_put / MPI_Put (+ fence), us/word | %.3g | %.3g | %.2f (<= 1.0) | - |\n", gb * 1e6,
               gm * 1e6, gm > 0 ? gb / gm : 0);
        printf("| l of that fit, us | %.3g | %.3g | - | - |\n", lb * 1e6, lm * 1e6);
        if (P <= hmax)
            printf("| h = p: puts + bspk_expect + bsp_sync / puts + fence, us | %.3g | %.3g | %.2f (<= 0.5) | %.2f |\n",
                   exp_b * 1e6, exp_m * 1e6, exp_m > 0 ? exp_b / exp_m : 0, exp_l);
        if (probe)
            printf("| core round trip pid 0 - pid 1 before the pairs, us | %.3g (%.3g-%.3g) | | | |\n", rmed * 1e6,
                   rlo * 1e6, rhi * 1e6);
        printf("\n");
        fflush(stdout);
    }

    bsp_pop_reg(dst_b);
    bsp_sync();
    int status = me == 0 && bad_total ? 1 : 0;
    bsp_end();
    MPI_Win_free(&win);
    MPI_Finalize();
    free(gath);
    free(times);
    free(dst_b);
    free(src);
    return status;
}
