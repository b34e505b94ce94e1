/*
 * bench/bsplib/bench_common.h -- what the BSPlib benchmark (bsplib_bench.c)
 * and its Open MPI twin (mpi_bench.c) share: the command line, the h values,
 * the words sent and where they land, the computing-rate kernel, the timing
 * statistics, the least-squares fit and the output lines. Nothing here
 * communicates, so both sides do exactly the same local work.
 *
 * The h-relation (the BSP cost model's g and l, as in Bisseling's bspbench):
 * every process sends h single-word (8-byte double) puts spread cyclically
 * over the OTHER processes -- its i-th word goes to process
 * (s + 1 + i mod (p-1)) mod p as that destination's k = i div (p-1)-th word
 * from s -- so every process also receives h words. A superstep of it costs
 * T(h) = g h + l; g and l come from the least-squares fit of T over the h of
 * the run. The destination array holds hmax words per source: word k from s
 * lands at index s * hmax + k. With p = 1 the words go to the process itself.
 *
 * Timing: BB_WARMUP untimed repetitions, then timed ones in chunks until the
 * time budget (--budget, per measurement) is spent (bb_next_chunk): a
 * measurement costs about the budget whatever one repetition costs, within
 * --reps MIN,MAX repetitions.
 *
 * Output, pid 0 only, one line per measurement:
 *   csv,<library>,<kind>,<variant>,<p>,<h>,<a>,<b>,<reps>,<ok>
 * library: bsplib | mpi. kind:
 *   time  a = per repetition the maximum over processes, median over the
 *         repetitions (s); b = timed loop time / repetitions, maximum over
 *         processes (s); ok = 1 when the data arrived (verified);
 *   fit   h = number of points, a = g (s per word), b = l (s), reps = 0,
 *         ok = all points verified;
 *   rate  a = r (flop/s), mean over processes, b = minimum over processes.
 * bench/bsplib_bench.sh collects them; bench/bsplib/report.py makes the tables.
 */
#ifndef BSPK_BENCH_BSPLIB_COMMON_H
#define BSPK_BENCH_BSPLIB_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- Command line ------------------------------------------------------------- */

#define BB_MAX_H 65536   /* largest --hmax accepted */
#define BB_MAX_POINTS 64 /* h values at most */
#define BB_WARMUP 3      /* untimed repetitions before each timed loop */

typedef struct {
    int hmax;       /* --hmax: largest h (default 2048) */
    double budget;  /* --budget: seconds of timed repetitions per measurement */
    int rmin, rmax; /* --reps MIN,MAX: bounds on the repetitions per measurement */
    double rtime;   /* seconds spent measuring the computing rate */
    int quick;      /* --quick */
    int dense;      /* h = 0,1,2,3,4,6,8,12,... (1) or 0,1,2,4,8,... (0) */
} bb_opts;

static inline void bb_usage(const char *prog) {
    fprintf(stderr,
            "usage: %s [--quick] [--hmax H] [--budget SECONDS] [--reps MIN,MAX]\n"
            "  --quick   h = 0,1,2,4,...,hmax (and p), short time budget\n"
            "  --hmax    largest h in words (default 2048)\n"
            "  --budget  seconds of timed repetitions per measurement (default 0.15, quick 0.05)\n"
            "  --reps    bounds on the repetitions per measurement (default 10,2000; quick 5,1000)\n",
            prog);
}

/* Parses the options; returns 0, or 2 after printing the usage. */
static inline int bb_parse(bb_opts *o, int argc, char **argv) {
    double budget = 0;
    int rmin = 0, rmax = 0;
    memset(o, 0, sizeof *o);
    o->hmax = 2048;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--quick"))
            o->quick = 1;
        else if (!strcmp(a, "--hmax") && i + 1 < argc)
            o->hmax = atoi(argv[++i]);
        else if (!strcmp(a, "--budget") && i + 1 < argc)
            budget = atof(argv[++i]);
        else if (!strcmp(a, "--reps") && i + 1 < argc) {
            if (sscanf(argv[++i], "%d,%d", &rmin, &rmax) != 2) return bb_usage(argv[0]), 2;
        } else
            return bb_usage(argv[0]), 2;
    }
    if (o->hmax < 1 || o->hmax > BB_MAX_H) {
        fprintf(stderr, "%s: --hmax must be in [1, %d]\n", argv[0], BB_MAX_H);
        return 2;
    }
    o->budget = budget > 0 ? budget : o->quick ? 0.05 : 0.15;
    o->rmin = rmin > 0 ? rmin : o->quick ? 5 : 10;
    o->rmax = rmax >= o->rmin ? rmax : o->quick ? 1000 : 2000;
    o->rtime = o->quick ? 0.2 : 0.4;
    o->dense = !o->quick;
    return 0;
}

/* The h values, ascending: 0, 1, 2, 4, ... (and 3, 6, 12, ... when dense) up to
 * hmax, hmax itself, and p (so T(p) is on the curve). Returns how many. */
static inline int bb_hvalues(int *hv, const bb_opts *o, int p) {
    int n = 0;
    hv[n++] = 0;
    for (long h = 1; h <= o->hmax && n < BB_MAX_POINTS - 3; h *= 2) {
        hv[n++] = (int)h;
        if (o->dense && h >= 2 && h + h / 2 <= o->hmax) hv[n++] = (int)(h + h / 2);
    }
    if (hv[n - 1] != o->hmax) hv[n++] = o->hmax;
    if (p <= o->hmax) {
        int i = n;
        while (i > 0 && hv[i - 1] > p) i--;
        if (hv[i - 1] != p) {
            memmove(hv + i + 1, hv + i, (size_t)(n - i) * sizeof *hv);
            hv[i] = p;
            n++;
        }
    }
    return n;
}

/* ---- The h-relation's words ------------------------------------------------------ */

/* Destination of process s's i-th word, and its index there (k-th from s). */
static inline int bb_dest(int s, int i, int p) { return p == 1 ? 0 : (s + 1 + i % (p - 1)) % p; }
static inline int bb_index(int s, int i, int p, int hmax) { return s * hmax + (p == 1 ? i : i / (p - 1)); }

/* Value of the k-th word from s in the h-relation of size h: exact in a double,
 * different for every (s, k, h). */
static inline double bb_word(int s, int k, int h) { return ((double)h * 65536.0 + k) * 4096.0 + s + 1; }

/* Words process t receives from s in an h-relation (0 for s == t unless p = 1). */
static inline int bb_count_from(int s, int t, int h, int p) {
    if (p == 1) return h;
    if (s == t) return 0;
    int j = ((t - s - 1) % p + p) % p; /* s's words i with i mod (p-1) == j go to t */
    return h > j ? (h - j + p - 2) / (p - 1) : 0;
}

/* Processes other than t that send t anything in an h-relation (bspk_expect's m). */
static inline int bb_senders(int h, int p) { return h < p - 1 ? h : p - 1; }

/* Fills src[i] with this process's i-th word of the h-relation. */
static inline void bb_fill_src(double *src, int s, int h, int p) {
    for (int i = 0; i < h; i++) src[i] = bb_word(s, p == 1 ? i : i / (p - 1), h);
}

/* Words of the h-relation missing or wrong in process t's destination array. */
static inline long bb_check_dst(const double *dst, int t, int h, int p, int hmax) {
    long bad = 0;
    for (int s = 0; s < p; s++) {
        int c = bb_count_from(s, t, h, p);
        for (int k = 0; k < c; k++) bad += dst[(size_t)s * hmax + k] != bb_word(s, k, h);
    }
    return bad;
}

/* Sum of the words t receives in an h-relation (checks bsp_send's payloads). */
static inline double bb_sum_to(int t, int h, int p) {
    double sum = 0;
    for (int s = 0; s < p; s++) {
        int c = bb_count_from(s, t, h, p);
        for (int k = 0; k < c; k++) sum += bb_word(s, k, h);
    }
    return sum;
}

/* ---- Computing rate ----------------------------------------------------------------- */

static inline double bb_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* r in flop/s of a DAXPY pair on vectors of n doubles (y += a x; z -= a x:
 * 4n flops), averaged over n = 16, 64, 256, 1024 (in cache, as in bspbench),
 * about `seconds` in all. */
static inline double bb_rate(double seconds) {
    enum { NMAX = 1024 };
    static double x[NMAX], y[NMAX], z[NMAX];
    static const int ns[] = {16, 64, 256, 1024};
    volatile double va = 1.0 / 3.0;
    double a = va, rsum = 0;
    for (int i = 0; i < NMAX; i++) x[i] = y[i] = z[i] = (double)i;
    for (int c = 0; c < 4; c++) {
        int n = ns[c];
        long iters = 0, batch = 1 + 100000 / n;
        double t0 = bb_now(), t;
        do {
            for (long it = 0; it < batch; it++) {
                for (int i = 0; i < n; i++) y[i] += a * x[i];
                for (int i = 0; i < n; i++) z[i] -= a * x[i];
                __asm__ volatile("" ::"r"(y), "r"(z) : "memory"); /* keep every iteration */
            }
            iters += batch;
        } while ((t = bb_now() - t0) < seconds / 4);
        rsum += 4.0 * n * (double)iters / t;
    }
    volatile double sink = y[NMAX - 1] + z[NMAX - 1];
    (void)sink;
    return rsum / 4;
}

/* ---- Statistics --------------------------------------------------------------------- */

static int bb_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n), n >= 1 (sorts v). */
static inline double bb_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bb_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Timed repetitions run in chunks: o->rmin first, then as many again as have
 * run (doubling), until the slowest process has spent the time budget or
 * o->rmax repetitions have run. Returns the next chunk's size, 0 when done;
 * `spent` is the maximum over processes of the timed time so far, so every
 * process decides the same. A chunk boundary costs one untimed superstep. */
static inline int bb_next_chunk(const bb_opts *o, int done, double spent) {
    if (done >= o->rmax || spent >= o->budget) return 0;
    return done < o->rmax - done ? done : o->rmax - done;
}

/* Statistics of one measurement from the gathered times: all[q * stride + r]
 * is process q's repetition r (r < reps), all[q * stride + reps] its loop time.
 * *med = median over r of the maximum over q; *avg = max over q of loop / reps. */
static inline void bb_stats(const double *all, int p, int stride, int reps, double *med, double *avg) {
    double *mx = (double *)malloc((size_t)reps * sizeof *mx);
    double loop = 0;
    for (int r = 0; r < reps; r++) {
        mx[r] = 0;
        for (int q = 0; q < p; q++)
            if (all[(size_t)q * stride + r] > mx[r]) mx[r] = all[(size_t)q * stride + r];
    }
    for (int q = 0; q < p; q++)
        if (all[(size_t)q * stride + reps] > loop) loop = all[(size_t)q * stride + reps];
    *med = bb_median(mx, reps);
    *avg = loop / reps;
    free(mx);
}

/* Least-squares fit of t[i] = g h[i] + l over n points. */
static inline void bb_fit(const int *h, const double *t, int n, double *g, double *l) {
    double sh = 0, st = 0, shh = 0, sht = 0;
    for (int i = 0; i < n; i++) {
        sh += h[i];
        st += t[i];
        shh += (double)h[i] * h[i];
        sht += h[i] * t[i];
    }
    double den = n * shh - sh * sh;
    *g = den != 0 ? (n * sht - sh * st) / den : 0;
    *l = (st - *g * sh) / n;
}

/* ---- Output ---------------------------------------------------------------------------- */

static inline void bb_emit(const char *library, const char *kind, const char *variant, int p, long h, double a,
                           double b, int reps, int ok) {
    printf("csv,%s,%s,%s,%d,%ld,%.9g,%.9g,%d,%d\n", library, kind, variant, p, h, a, b, reps, ok);
    fflush(stdout);
}

/* The h-relation curve of variant v of `library`: measure(v, h) for every h
 * of hv (the slowest process's time at pid 0), then pid 0 prints the fit line
 * of T(h) = g h + l, verified when *bad_total did not grow meanwhile. */
static inline void bb_curve(const char *library, const char *variant, double (*measure)(int, int), int v,
                            const int *hv, int nh, int me, int p, const long *bad_total) {
    double t[BB_MAX_POINTS];
    long bad0 = *bad_total;
    for (int i = 0; i < nh; i++) t[i] = measure(v, hv[i]);
    if (me == 0) {
        double g, l;
        bb_fit(hv, t, nh, &g, &l);
        bb_emit(library, "fit", variant, p, nh, g, l, 0, *bad_total == bad0);
    }
}

/* On pid 0, after every process's times reached `gath` (stride values per
 * process: reps times, then the words wrong or missing at [reps + 1]): print
 * one "time" line (slowest process per repetition, median and mean), add the
 * wrong words to *bad_total, and return the median (0 elsewhere). */
static inline double bb_report_times(const char *library, const char *variant, int me, const double *gath, int p,
                                     int stride, int reps, long h, long *bad_total) {
    double med = 0, avg = 0;
    if (me != 0) return 0;
    long allbad = 0;
    for (int q = 0; q < p; q++) allbad += (long)gath[(size_t)q * stride + reps + 1];
    bb_stats(gath, p, stride, reps, &med, &avg);
    bb_emit(library, "time", variant, p, h, med, avg, reps, allbad == 0);
    *bad_total += allbad;
    return med;
}

#endif /* BSPK_BENCH_BSPLIB_COMMON_H */
