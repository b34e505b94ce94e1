/*
 * as_paired -- the small-message tests of the As suite [RMA §3] with BSPk and
 * Open MPI in the SAME processes, measured in alternating short chunks, so that
 * both libraries see the same cores, the same placement of those cores and the
 * same moment. as_bspk and as_mpi (its twins, whose tests, data, verification
 * and timing this program shares through as_common.h) run one after the other;
 * on this VM the host moves the two vCPUs between near and far placements
 * within a second, and every small superstep of either library moves with it,
 * so a ratio of two separate runs can compare a near run with a far one. Here
 * every ratio is of chunks a few milliseconds apart (the structure is that of
 * bench/bsplib/paired_bench.c, for the BSPlib layer).
 *
 *   mpirun -n P [--bind-to core] [MCA flags] as_paired [--quick] [--rounds K]
 *          [--reps R] [--hmax H] [--hmin H] [--tests LIST]
 *   (BSPk bootstraps through mpirun's PMIx server; shm: --mca pml ob1 --mca btl
 *   self,vader --mca osc rdma,pt2pt; tcp: --mca pml ob1 --mca btl self,tcp
 *   --mca osc pt2pt -x BSPK_PROVIDER=tcp -x BSPK_SHM_RINGS=off
 *   -x BSPK_COUNT_EXCHANGE=messages)
 *
 * Tests (one superstep per repetition, 32-bit words, as in the twins): Empty,
 * Full, Simple, Scatter, and Total for h = p, 2p, 4p, ... <= hmax (--hmax,
 * default 64 words per process, the small-message end; at most 2^20, for
 * goal 4's bandwidth rows from h = 2^16: --tests Total --hmin 65536 --hmax
 * 1048576; --hmin and --tests select, as in the twins; Comp has no
 * communication and is not run). Blocks are verified as the twins verify
 * them: every word up to h = AS_FULLCHECK, the stamped ones beyond.
 * Variants, the twins' ones:
 *   BSPk  mp-expect      bspk_send per destination, bspk_expect(arrivals);
 *         mp-counted     the same without bspk_expect;
 *         store-expect   bspk_copy into every process's named region (the
 *                        pointers looked up before the timed loop), with
 *                        bspk_expect(arrivals) (bspk.h rule 5: a local copy
 *                        counts at its issuer, like a message to itself);
 *         store-counted  the same without bspk_expect;
 *   MPI   put-fence-allocate  MPI_Put per destination into a window from
 *                        MPI_Win_allocate (two copies, repetition r puts into
 *                        copy r % 2, as in as_mpi), MPI_Win_fence;
 *         isend-barrier  MPI_Irecv / MPI_Isend / MPI_Waitall, MPI_Barrier.
 * Empty has four: BSPk expect-sync (bspk_expect(0) + bspk_sync) and sync (a
 * bare, counted bspk_sync); MPI fence (an empty MPI_Win_fence) and barrier
 * (MPI_Barrier). Every word of every repetition (warm-up included) is checked
 * against as_block_word after the sync; a lost, stale or misplaced word counts
 * as a failure (described on stderr, the first 20 per process).
 *
 * Timing: a round runs one chunk of each variant, in an order that rotates
 * from round to round (round k starts with variant k mod the count), and
 * before it, on one host with a CPU per process, pids 0 and 1 ping-pong one
 * cache line 200 times through a /dev/shm mapping: the core round trip of
 * that moment. A chunk: an untimed MPI_Barrier, as_warmup(R) untimed
 * repetitions, another MPI_Barrier, R timed ones (--reps, default 300,
 * --quick 100; past h = 64 R * 64 / h, at least 30); t_r from
 * before the first communication call to the return of the call ending the
 * superstep (receiving, verifying and freeing follow, outside t_r). The t_r
 * go to pid 0 with MPI_Gather (untimed); the chunk's time is the median over
 * its repetitions of the slowest process. Its loop average is the slowest
 * process's time for the R repetitions (receiving, verifying and freeing
 * included) over R, as the twins' loop average: where processes are not in
 * lock step (under bspk_expect, or several processes per core) the slowest
 * process of a repetition can span parts of two, and the issue asks for
 * both. --rounds rounds per test (default
 * 15, --quick 6). Per round: declared = the better of mp-expect and
 * store-expect, counted = the better of mp-counted and store-counted, MPI =
 * the better of the two MPI variants (for Empty: expect-sync, sync and
 * MPI_Barrier alone), and the ratios declared / MPI and counted / MPI.
 *
 * Output (pid 0), per test:
 *   csv,as_paired,<test>,<p>,<h>,<variant>,<median over rounds of the chunk times, s>
 *   csv,as_paired,<test>,<p>,<h>,<variant>-loop,<median over rounds of the loop averages, s>
 *   csv,as_paired,<test>,<p>,<h>,ratio-declared|ratio-counted,<median>,<min>,<max>
 *   csv,as_paired,Total,<p>,<h>,ratio-mp-isend|ratio-store-put,<median>,<min>,<max>
 *       (goal 4's pairs: the better MP variant / isend-barrier, the better
 *       stores variant / put-fence-allocate, per round)
 *   each ratio line again as ratio-...-loop: the same pairs of loop averages
 *   csv,as_paired,<test>,<p>,<h>,roundtrip,<median s>,<min s>,<max s>   (with the probe)
 * (h: words per process for Total, 0 otherwise), then
 *   csv,as_paired,roundtrip,<p>,0,probe,<median s>,<min s>,<max s>  (every round)
 * and a Markdown table with a row per test: the medians over rounds of the
 * best declared, counted and MPI times (with the variant most often best),
 * the ratios (median [min-max] over rounds), the median ratios of the loop
 * averages, and the bounds (declared
 * <= 1.0 and counted <= 1.5 times MPI; Empty against MPI_Barrier: declared
 * <= 0.1 at p = 4, counted <= 1.0), judged on the median ratio; Total past
 * h = 64 goes to a second table instead: the better MP variant and
 * isend-barrier, the better stores variant and put-fence-allocate, their
 * ratios and goal 4's bound (each <= 1.0, from h = 2^16). Diagnostics on
 * stderr. Exit status 1 on every process if any word failed verification.
 */
#define _GNU_SOURCE /* clock_gettime; ftruncate, mmap */
#include <bspk.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AS_PROG "as_paired" /* (as_common.h: as_fail) */
#include "as_common.h"
#include "../paired.h"

enum { V_MP_EXPECT, V_MP_COUNTED, V_STORE_EXPECT, V_STORE_COUNTED, V_PUT_FENCE, V_ISEND_BARRIER, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"mp-expect",     "mp-counted",         "store-expect",
                                                     "store-counted", "put-fence-allocate", "isend-barrier"};
/* Empty runs four of them, under these names (NULL: not run) */
static const char *const empty_names[NVARIANTS] = {"expect-sync", "sync", NULL, NULL, "fence", "barrier"};

#define HMAX_SMALL 64       /* default largest h: the small-message end (every block a few cache lines) */
#define HMAX_LIMIT AS_HMAX  /* largest h accepted (--hmax): goal 4's bandwidth rows */
#define REPS_MIN_LARGE 30   /* repetitions per chunk at least, for h > HMAX_SMALL (see reps_for) */
#define GOAL4_HMIN 65536L   /* goal 4 (bandwidth) bounds the rows from this h up */
#define MAXROUNDS 1000
#define MAXROWS (NTESTS + 24) /* every test once, Total at each h = p * 2^k up to HMAX_LIMIT (at most 21) */

static int me, P, rounds, reps;
static long as_rep;   /* repetition stamp: counts every repetition run (both libraries), identical on all pids */
static long bad_words; /* verification failures on this process (all tests) */
static int bad_reported;
static double *times, *gath;  /* one chunk's t_r; all processes' at pid 0 */
static _Atomic long *probe;   /* /dev/shm line for the round trip (one host), else NULL */

#define CK(call, what)                                                                      \
    do {                                                                                    \
        if ((call) != BSPK_OK) bspk_abort("as_paired: %s: %s", what, bspk_error_string()); \
    } while (0)

static int is_bspk(int v) { return v <= V_STORE_COUNTED; }
static int is_store(int v) { return v == V_STORE_EXPECT || v == V_STORE_COUNTED; }
static int is_expect(int v) { return v == V_MP_EXPECT || v == V_STORE_EXPECT; }
static const char *vname(int t, int v) { return t == T_EMPTY ? empty_names[v] : variant_names[v]; }


/* ---- One test: the state of all six variants ---------------------------------- */

typedef struct {
    int t;
    long h, b;          /* h: csv column (Total, else 0); b: words per block */
    long nw;            /* words of p blocks */
    int arrivals;       /* blocks arriving here per repetition: the bspk_expect value */
    int reps;           /* timed repetitions per chunk (reps_for) */
    int full;           /* verify every word (else the stamped ones, as the twins beyond AS_FULLCHECK) */
    /* BSPk */
    bspk_ptr src;       /* p blocks of b words, block j for process j */
    bspk_ptr *sendp;    /* sendp[j]: block j of src */
    bspk_ptr dst;       /* store variants: this process's named region (p blocks) */
    bspk_ptr *dstp;     /* dstp[j]: block `me` of process j's region */
    /* MPI */
    uint32_t *msrc;     /* p blocks of b words, block j for process j */
    uint32_t *mdst;     /* isend-barrier: block k from process k */
    uint32_t *wdst;     /* put-fence-allocate: window memory, two copies of p blocks */
    MPI_Win win;
    MPI_Request *req;   /* isend-barrier: 2p requests */
} as_test;

/* Copy n words between plain memory w and a comem region p, frame by frame:
 * into p when to_comem, else out of it. */
static void copy_comem(bspk_ptr p, uint32_t *w, long n, int to_comem) {
    while (n > 0) {
        void *base;
        size_t k = bspk_span(p, &base);
        if (!k) bspk_abort("as_paired: bspk_span: %s", bspk_error_string());
        if ((long)k > n) k = (size_t)n;
        if (to_comem)
            memcpy(base, w, k * sizeof *w);
        else
            memcpy(w, base, k * sizeof *w);
        w += k;
        n -= (long)k;
        p = bspk_incr(p, (ptrdiff_t)k);
    }
}

/* Verify word i (value w) of the b-word block from `from` in repetition r;
 * returns 1 if it is wrong (the block's first wrong word is described). */
static long check_word(uint32_t w, long i, long b, int from, long r, const as_test *c, int v, long bad) {
    uint32_t e = as_block_word(from, me, i, b, r);
    if (w == e) return 0;
    if (!bad)
        as_fail(test_names[c->t], vname(c->t, v), c->h, "word %ld from pid %d is 0x%08x, expected 0x%08x", i, from, w,
                e);
    return 1;
}

/* Verify the b-word block w from `from` in repetition r: every word when
 * c->full, else the stamped ones. Returns the number of wrong words. */
static long check_words(const uint32_t *w, long b, int from, long r, const as_test *c, int v) {
    long bad = 0;
    for (long i = 0; i < b; i = c->full ? i + 1 : as_next_stamp(i, b)) bad += check_word(w[i], i, b, from, r, c, v, bad);
    return bad;
}

/* The same for a block in comem (a message, or a block of the store region),
 * read in place frame by frame. */
static void check_comem(bspk_ptr p, long b, int from, long r, const as_test *c, int v) {
    long bad = 0;
    if (!c->full) {
        for (long i = 0; i < b; i = as_next_stamp(i, b)) {
            const uint32_t *w = bspk_elemP(bspk_incr(p, (ptrdiff_t)i));
            if (!w) bspk_abort("as_paired: bspk_elemP: %s", bspk_error_string());
            bad += check_word(*w, i, b, from, r, c, v, bad);
        }
        return;
    }
    for (long i = 0; i < b;) {
        void *base;
        size_t k = bspk_span(bspk_incr(p, (ptrdiff_t)i), &base);
        if (!k) bspk_abort("as_paired: bspk_span: %s", bspk_error_string());
        if ((long)k > b - i) k = (size_t)(b - i);
        const uint32_t *w = base;
        for (size_t j = 0; j < k; j++, i++) bad += check_word(w[j], i, b, from, r, c, v, bad);
    }
}

/* Timed repetitions per chunk at h: --reps (default 300) up to HMAX_SMALL
 * words, then scaled down with h, at least REPS_MIN_LARGE (a superstep of
 * the total exchange at h = 2^20 takes 0.2-5 ms here). */
static int reps_for(long h) {
    if (h <= HMAX_SMALL) return reps;
    long r = (long)reps * HMAX_SMALL / h;
    return r < REPS_MIN_LARGE ? (reps < REPS_MIN_LARGE ? reps : REPS_MIN_LARGE) : (int)r;
}

/* Set up test t (h words per process for Total): every variant's buffers,
 * BSPk's named store region, MPI's window (its first epoch open). Collective. */
static void test_setup(as_test *c, int t, long h) {
    static int serial; /* names of the store regions: a fresh one per test */
    memset(c, 0, sizeof *c);
    c->t = t;
    c->h = t == T_TOTAL ? h : 0;
    c->b = t == T_TOTAL ? h / P : 1;
    c->nw = (long)P * c->b;
    c->reps = reps_for(c->h);
    c->full = t != T_TOTAL || h <= AS_FULLCHECK;
    for (int k = 0; k < P; k++) c->arrivals += as_sends(t, k, me, P);
    c->sendp = calloc((size_t)P, sizeof *c->sendp);
    c->dstp = calloc((size_t)P, sizeof *c->dstp);
    c->msrc = malloc((size_t)c->nw * sizeof *c->msrc);
    c->mdst = calloc((size_t)c->nw, sizeof *c->mdst);
    c->req = malloc(2 * (size_t)P * sizeof *c->req);
    if (!c->sendp || !c->dstp || !c->msrc || !c->mdst || !c->req) bspk_abort("as_paired: out of memory");
    /* the source blocks (the stamped words are rewritten in every repetition) */
    for (int j = 0; j < P; j++)
        for (long i = 0; i < c->b; i++) c->msrc[j * c->b + i] = as_block_word(me, j, i, c->b, -1);
    if (t >= T_FULL) {
        c->src = bspk_malloc("", 0, (size_t)c->nw, sizeof(uint32_t));
        if (bspk_is_null(c->src)) bspk_abort("as_paired: bspk_malloc: %s", bspk_error_string());
        copy_comem(c->src, c->msrc, c->nw, 1);
        for (int j = 0; j < P; j++) c->sendp[j] = bspk_incr(c->src, (ptrdiff_t)(j * c->b));
        char name[32];
        snprintf(name, sizeof name, "as_paired%d", serial++);
        c->dst = bspk_malloc(name, me, (size_t)c->nw, sizeof(uint32_t));
        if (bspk_is_null(c->dst)) bspk_abort("as_paired: bspk_malloc(%s): %s", name, bspk_error_string());
        for (int j = 0; j < P; j++) bspk_lookup(name, j);
        CK(bspk_sync(), "bspk_sync (lookup)");
        for (int j = 0; j < P; j++) { /* resolved now: exact pointers */
            bspk_ptr d = bspk_lookup(name, j);
            if (bspk_is_null(d)) bspk_abort("as_paired: bspk_lookup: %s", bspk_error_string());
            c->dstp[j] = bspk_incr(d, (ptrdiff_t)(me * c->b));
        }
    }
    MPI_Aint wbytes = 2 * (MPI_Aint)c->nw * (MPI_Aint)sizeof(uint32_t);
    MPI_Win_allocate(wbytes, (int)sizeof(uint32_t), MPI_INFO_NULL, MPI_COMM_WORLD, &c->wdst, &c->win);
    memset(c->wdst, 0, (size_t)wbytes);
    MPI_Win_fence(0, c->win); /* opens the first epoch */
}

static void test_free(as_test *c) {
    MPI_Win_free(&c->win);
    if (c->t >= T_FULL) {
        CK(bspk_free(c->src), "bspk_free");
        CK(bspk_free(c->dst), "bspk_free");
    }
    free(c->sendp);
    free(c->dstp);
    free(c->msrc);
    free(c->mdst);
    free(c->req);
}

/* ---- Repetitions ---------------------------------------------------------------- */

/* One BSPk repetition of variant v; returns t_r (seconds). */
static double rep_bspk(as_test *c, int v) {
    long r = as_rep++;
    int t = c->t, store = is_store(v);
    if (t >= T_FULL) /* stamps for this repetition, before the clock */
        for (int j = 0; j < P; j++)
            if (as_sends(t, me, j, P))
                for (long i = 0; i < c->b; i = as_next_stamp(i, c->b)) {
                    uint32_t *w = bspk_elemP(bspk_incr(c->sendp[j], (ptrdiff_t)i));
                    if (!w) bspk_abort("as_paired: bspk_elemP: %s", bspk_error_string());
                    *w = as_block_word(me, j, i, c->b, r);
                }
    double t0 = suite_now();
    if (is_expect(v)) CK(bspk_expect(c->arrivals), "bspk_expect");
    if (t >= T_FULL)
        for (int k = 0; k < P; k++) { /* staggered: process me starts with itself, then me+1, ... */
            int j = (me + k) % P;
            if (!as_sends(t, me, j, P)) continue;
            if (store) CK(bspk_copy(c->dstp[j], c->sendp[j], (size_t)c->b), "bspk_copy");
            else CK(bspk_send(j, c->sendp[j], (size_t)c->b), "bspk_send");
        }
    CK(bspk_sync(), "bspk_sync");
    double t1 = suite_now();
    if (t < T_FULL) return t1 - t0;
    const char *tn = test_names[t], *vn = variant_names[v];
    if (store) {
        for (int k = 0; k < P; k++)
            if (as_sends(t, k, me, P)) check_comem(bspk_incr(c->dst, (ptrdiff_t)(k * c->b)), c->b, k, r, c, v);
    } else { /* messages come in order of sender pid */
        int k = 0;
        for (bspk_ptr in; !bspk_is_null(in = bspk_recv());) {
            while (k < P && !as_sends(t, k, me, P)) k++;
            int from = bspk_sender_id(in);
            if (k >= P) as_fail(tn, vn, c->h, "unexpected message from pid %d (%zu words)", from, bspk_nelems(in));
            else if (from != k || (long)bspk_nelems(in) != c->b)
                as_fail(tn, vn, c->h, "message from pid %d with %zu words, expected pid %d with %ld", from,
                        bspk_nelems(in), k, c->b);
            else
                check_comem(in, c->b, k, r, c, v);
            k++;
            CK(bspk_free(in), "bspk_free");
        }
        while (k < P && !as_sends(t, k, me, P)) k++;
        if (k < P) as_fail(tn, vn, c->h, "message from pid %d missing", k);
    }
    return t1 - t0;
}

/* One MPI repetition of variant v; returns t_r (seconds). */
static double rep_mpi(as_test *c, int v) {
    long r = as_rep++;
    int t = c->t;
    const MPI_Datatype U32 = MPI_UINT32_T;
    long half = v == V_PUT_FENCE ? (r & 1) * c->nw : 0; /* the window copy this repetition puts into */
    if (t >= T_FULL) /* stamps for this repetition, before the clock */
        for (int j = 0; j < P; j++)
            if (as_sends(t, me, j, P))
                for (long i = 0; i < c->b; i = as_next_stamp(i, c->b))
                    c->msrc[j * c->b + i] = as_block_word(me, j, i, c->b, r);
    double t0 = suite_now();
    if (v == V_ISEND_BARRIER) {
        int n = 0;
        if (t >= T_FULL) {
            for (int k = 0; k < P; k++)
                if (as_sends(t, k, me, P))
                    MPI_Irecv(c->mdst + k * c->b, (int)c->b, U32, k, 0, MPI_COMM_WORLD, &c->req[n++]);
            for (int k = 0; k < P; k++) {
                int j = (me + k) % P;
                if (as_sends(t, me, j, P))
                    MPI_Isend(c->msrc + j * c->b, (int)c->b, U32, j, 0, MPI_COMM_WORLD, &c->req[n++]);
            }
            MPI_Waitall(n, c->req, MPI_STATUSES_IGNORE);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        if (t >= T_FULL)
            for (int k = 0; k < P; k++) {
                int j = (me + k) % P;
                if (as_sends(t, me, j, P))
                    MPI_Put(c->msrc + j * c->b, (int)c->b, U32, j, (MPI_Aint)(half + me * c->b), (int)c->b, U32,
                            c->win);
            }
        MPI_Win_fence(0, c->win);
    }
    double t1 = suite_now();
    if (t >= T_FULL) {
        const uint32_t *in = v == V_PUT_FENCE ? c->wdst + half : c->mdst;
        for (int k = 0; k < P; k++)
            if (as_sends(t, k, me, P)) check_words(in + k * c->b, c->b, k, r, c, v);
    }
    return t1 - t0;
}

/* One chunk of variant v: an untimed MPI_Barrier, as_warmup(c->reps) untimed
 * repetitions, another MPI_Barrier, c->reps timed ones. pid 0 returns the
 * chunk's time (median over the repetitions of the slowest process) and sets
 * *loop to the loop's average per repetition (the slowest process's time for
 * the c->reps repetitions, receiving and verifying included, divided by
 * c->reps: the twins' loop average); the others return 0. */
static double chunk(as_test *c, int v, double *loop) {
    double (*rep)(as_test *, int) = is_bspk(v) ? rep_bspk : rep_mpi;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int w = 0, W = as_warmup(c->reps); w < W; w++) rep(c, v);
    MPI_Barrier(MPI_COMM_WORLD); /* (as the twins' bspk_sync / MPI_Barrier before their loop) */
    double l0 = suite_now();
    for (int r = 0; r < c->reps; r++) times[r] = rep(c, v);
    *loop = pp_loop_slowest(suite_now() - l0, c->reps);
    return pp_slowest(times, c->reps, gath, me, P) ? suite_median(gath, c->reps) : 0;
}

/* ---- The core round trip probe (as in paired_bench) ------------------------------- */

static double round_trip(void) { return pp_round_trip(probe, me); }
static void map_probe(void) { pp_map(&probe, me, P); }

/* ---- Statistics and report (pid 0) ------------------------------------------------ */

typedef struct { double med, lo, hi; } span3;

/* Median, minimum and maximum of v[0..n) (v is sorted in place). */
static span3 stats(double *v, int n) {
    span3 s;
    s.med = suite_median(v, n);
    s.lo = v[0];
    s.hi = v[n - 1];
    return s;
}

/* One comparison over the rounds: per round the better of two BSPk variants
 * against the better of two MPI variants (see pair_up). */
typedef struct {
    double bspk, mpi;                /* medians over rounds of the per-round best, s */
    const char *bspk_v, *mpi_v;      /* the variant most often best */
    span3 r;                         /* BSPk / MPI per round: median, minimum, maximum */
} pairing;

typedef struct {
    int t;
    long h;
    int reps;                        /* timed repetitions per chunk */
    pairing decl, cnt;               /* declared and counted BSPk against the best MPI variant */
    pairing mp, st;                  /* goal 4 (Total): MP against isend-barrier, stores against put-fence */
    pairing decl_l, cnt_l, mp_l, st_l; /* the same pairs of the chunks' loop averages */
    long bad;                        /* failed words, all processes */
} table_row;

/* A bandwidth row (goal 4's table): Total beyond the small-message end. */
static int large_row(const table_row *r) { return r->t == T_TOTAL && r->h > HMAX_SMALL; }

/* Per round k, the better of variants a and b (b < 0: a alone) into best[k];
 * returns the name of the one best in most rounds (a on a tie). */
static const char *best_of(double tv[][MAXROUNDS], int t, int a, int b, double *best) {
    int wins_a = 0;
    for (int k = 0; k < rounds; k++) {
        int pick_a = b < 0 || tv[a][k] <= tv[b][k];
        best[k] = pick_a ? tv[a][k] : tv[b][k];
        wins_a += pick_a;
    }
    return 2 * wins_a >= rounds ? vname(t, a) : vname(t, b);
}

/* Test t at h: per round the better of BSPk variants a and b against the
 * better of MPI variants ma and mb (b, mb < 0: the one alone); prints the
 * csv line of the ratios, named `what`. */
static pairing pair_up(double tv[][MAXROUNDS], int t, long h, int a, int b, int ma, int mb, const char *what) {
    double bb[MAXROUNDS], bm[MAXROUNDS], r[MAXROUNDS];
    pairing x;
    x.bspk_v = best_of(tv, t, a, b, bb);
    x.mpi_v = best_of(tv, t, ma, mb, bm);
    for (int k = 0; k < rounds; k++) r[k] = bm[k] > 0 ? bb[k] / bm[k] : 0;
    x.r = stats(r, rounds);
    x.bspk = suite_median(bb, rounds);
    x.mpi = suite_median(bm, rounds);
    printf("csv,as_paired,%s,%d,%ld,%s,%.4f,%.4f,%.4f\n", test_names[t], P, h, what, x.r.med, x.r.lo, x.r.hi);
    return x;
}

/* Run test t (h words per process for Total): `rounds` rounds of one chunk per
 * variant. pid 0 prints the csv lines and fills *row; rt gets the rounds'
 * round trips. */
static void run_test(int t, long h, table_row *row, double *rt) {
    static double tv[NVARIANTS][MAXROUNDS], tl[NVARIANTS][MAXROUNDS]; /* chunk medians, loop averages */
    int act[NVARIANTS], na = 0;
    for (int v = 0; v < NVARIANTS; v++)
        if (vname(t, v)) act[na++] = v;
    as_test c;
    long bad0 = bad_words;
    test_setup(&c, t, h);
    for (int k = 0; k < rounds; k++) {
        rt[k] = round_trip();
        for (int i = 0; i < na; i++) { /* rotated: round k starts with act[k % na] */
            int v = act[(k + i) % na];
            tv[v][k] = chunk(&c, v, &tl[v][k]);
        }
    }
    test_free(&c);
    long bad = bad_words - bad0, allbad = 0;
    MPI_Reduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me != 0) return;

    const char *tn = test_names[t];
    double tmp[MAXROUNDS];
    for (int i = 0; i < na; i++) {
        int v = act[i];
        memcpy(tmp, tv[v], (size_t)rounds * sizeof *tmp);
        printf("csv,as_paired,%s,%d,%ld,%s,%.9g\n", tn, P, c.h, vname(t, v), suite_median(tmp, rounds));
        memcpy(tmp, tl[v], (size_t)rounds * sizeof *tmp);
        printf("csv,as_paired,%s,%d,%ld,%s-loop,%.9g\n", tn, P, c.h, vname(t, v), suite_median(tmp, rounds));
    }
    /* per round: the best of each kind, and the ratios */
    const int empty = t == T_EMPTY; /* Empty: expect-sync, sync and MPI_Barrier alone */
    memset(row, 0, sizeof *row);
    row->t = t;
    row->h = c.h;
    row->reps = c.reps;
    row->bad = allbad;
    row->decl = pair_up(tv, t, c.h, V_MP_EXPECT, empty ? -1 : V_STORE_EXPECT, V_ISEND_BARRIER,
                        empty ? -1 : V_PUT_FENCE, "ratio-declared");
    row->cnt = pair_up(tv, t, c.h, V_MP_COUNTED, empty ? -1 : V_STORE_COUNTED, V_ISEND_BARRIER,
                       empty ? -1 : V_PUT_FENCE, "ratio-counted");
    row->decl_l = pair_up(tl, t, c.h, V_MP_EXPECT, empty ? -1 : V_STORE_EXPECT, V_ISEND_BARRIER,
                          empty ? -1 : V_PUT_FENCE, "ratio-declared-loop");
    row->cnt_l = pair_up(tl, t, c.h, V_MP_COUNTED, empty ? -1 : V_STORE_COUNTED, V_ISEND_BARRIER,
                         empty ? -1 : V_PUT_FENCE, "ratio-counted-loop");
    if (t == T_TOTAL) { /* goal 4's pairs */
        row->mp = pair_up(tv, t, c.h, V_MP_EXPECT, V_MP_COUNTED, V_ISEND_BARRIER, -1, "ratio-mp-isend");
        row->st = pair_up(tv, t, c.h, V_STORE_EXPECT, V_STORE_COUNTED, V_PUT_FENCE, -1, "ratio-store-put");
        row->mp_l = pair_up(tl, t, c.h, V_MP_EXPECT, V_MP_COUNTED, V_ISEND_BARRIER, -1, "ratio-mp-isend-loop");
        row->st_l = pair_up(tl, t, c.h, V_STORE_EXPECT, V_STORE_COUNTED, V_PUT_FENCE, -1, "ratio-store-put-loop");
    }
    if (probe) {
        memcpy(tmp, rt, (size_t)rounds * sizeof *tmp);
        span3 s = stats(tmp, rounds);
        printf("csv,as_paired,%s,%d,%ld,roundtrip,%.9g,%.9g,%.9g\n", tn, P, c.h, s.med, s.lo, s.hi);
    }
    if (allbad) fprintf(stderr, "as_paired: %s h=%ld: %ld words wrong or missing\n", tn, c.h, allbad);
    fflush(stdout);
}

/* "0.85 [0.80-0.92]" */
static void print_ratio(span3 s) { printf(" %.2f [%.2f-%.2f] |", s.med, s.lo, s.hi); }

/* The bounds on the median ratios: declared <= 1.0 and counted <= 1.5
 * times MPI; Empty, against MPI_Barrier: declared <= 0.1 (stated for p = 4),
 * counted <= 1.0. */
static void print_bounds(const table_row *r) {
    int empty = r->t == T_EMPTY;
    double bd = empty ? 0.1 : 1.0, bc = empty ? 1.0 : 1.5;
    const char *dv = empty && P != 4 ? "n/a at this p" : r->decl.r.med <= bd ? "met" : "NOT met";
    printf(" declared <= %.1f%s (%s), counted <= %.1f (%s) |", bd, empty ? " at p = 4" : "", dv, bc,
           r->cnt.r.med <= bc ? "met" : "NOT met");
}

/* Goal 4's table: per bandwidth row, the better BSPk MP variant against
 * Isend/Irecv + MPI_Barrier and the better stores variant against MPI_Put +
 * MPI_Win_fence, each ratio at most 1.0 (judged on the median ratio). */
static void print_large_table(const table_row *rows, int n) {
    printf("\n| p = %d, same processes, %d rounds | h | reps | best MP BSPk, us | isend-barrier, us | MP / Isend "
           "[min-max] | best stores BSPk, us | put-fence-allocate, us | stores / put [min-max] | loop averages: MP / "
           "Isend, stores / put | bounds (median ratio) |\n",
           P, rounds);
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (int i = 0; i < n; i++) {
        const table_row *r = &rows[i];
        if (!large_row(r)) continue;
        printf("| Total%s | %ld | %d | %.3g (%s) | %.3g |", r->bad ? " (VERIFICATION FAILED)" : "", r->h, r->reps,
               r->mp.bspk * 1e6, r->mp.bspk_v, r->mp.mpi * 1e6);
        print_ratio(r->mp.r);
        printf(" %.3g (%s) | %.3g |", r->st.bspk * 1e6, r->st.bspk_v, r->st.mpi * 1e6);
        print_ratio(r->st.r);
        printf(" %.2f, %.2f |", r->mp_l.r.med, r->st_l.r.med);
        if (r->h >= GOAL4_HMIN)
            printf(" MP <= 1.0 (%s), stores <= 1.0 (%s) |\n", r->mp.r.med <= 1.0 ? "met" : "NOT met",
                   r->st.r.med <= 1.0 ? "met" : "NOT met");
        else
            printf(" - (goal 4 from h = %ld) |\n", GOAL4_HMIN);
    }
}

/* The small-message table: every row but the bandwidth ones. */
static void print_small_table(const table_row *rows, int n) {
    printf("\n| p = %d, same processes, %d rounds x %d reps | h | best declared BSPk, us | best counted BSPk, us "
           "| best MPI, us | declared / MPI [min-max] | counted / MPI [min-max] | loop averages: declared, counted / "
           "MPI | bounds (median ratio) |\n",
           P, rounds, reps);
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (int i = 0; i < n; i++) {
        const table_row *r = &rows[i];
        if (large_row(r)) continue;
        char h[24] = "-";
        if (r->t == T_TOTAL) snprintf(h, sizeof h, "%ld", r->h);
        printf("| %s%s | %s | %.3g (%s) | %.3g (%s) | %.3g (%s) |", test_names[r->t], r->bad ? " (VERIFICATION FAILED)" : "",
               h, r->decl.bspk * 1e6, r->decl.bspk_v, r->cnt.bspk * 1e6, r->cnt.bspk_v, r->decl.mpi * 1e6,
               r->decl.mpi_v);
        print_ratio(r->decl.r);
        print_ratio(r->cnt.r);
        printf(" %.2f, %.2f |", r->decl_l.r.med, r->cnt_l.r.med);
        print_bounds(r);
        printf("\n");
    }
}

static void print_table(const table_row *rows, int n, double *rt_all, int nrt) {
    int small = 0, large = 0;
    for (int i = 0; i < n; i++) {
        if (large_row(&rows[i])) large++;
        else small++;
    }
    if (small) print_small_table(rows, n);
    if (large) print_large_table(rows, n);
    if (nrt) {
        span3 s = stats(rt_all, nrt);
        printf("\ncore round trip pid 0 - pid 1 before each round: median %.3g us (%.3g-%.3g, %d rounds)\n",
               s.med * 1e6, s.lo * 1e6, s.hi * 1e6, nrt);
    }
    printf("\n");
    fflush(stdout);
}

/* ---- Command line ----------------------------------------------------------------- */

static const char *usage =
    "usage: mpirun -n P [--bind-to core] [MCA flags] as_paired [--quick] [--rounds K (1..1000)] [--reps R]\n"
    "                   [--hmax H (<= 1048576)] [--hmin H] [--tests Empty,Full,Simple,Scatter,Total]\n"
    "  defaults: 15 rounds of 300 repetitions per variant (--quick: 6 of 100), hmax 64;\n"
    "  Total beyond h = 64: fewer repetitions (300 * 64 / h, at least 30) and a table of goal 4's pairs\n";

/* as_common.h's as_parse for the options shared with the twins; --rounds is
 * ours, --hmax has another default (64) here. 0 on success, 1 for
 * --help, -1 on a bad option (message in err). */
static int parse(int argc, char **argv, as_opts *o, char *err, size_t errlen) {
    char **rest = malloc((size_t)(argc + 1) * sizeof *rest);
    int nr = 0, hmax_given = 0, rounds_given = 0, rc;
    if (!rest) return -1;
    rest[nr++] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
            rounds_given = 1;
            continue;
        }
        if (!strcmp(argv[i], "--variants")) { /* every round needs every variant */
            free(rest);
            snprintf(err, errlen, "--variants: every variant runs in every round");
            return -1;
        }
        hmax_given |= !strcmp(argv[i], "--hmax");
        rest[nr++] = argv[i];
    }
    rest[nr] = NULL;
    rc = as_parse(nr, rest, o, NULL, 0, NULL, 0, err, errlen);
    free(rest);
    if (rc) return rc;
    if (!hmax_given) o->hmax = HMAX_SMALL;
    if (!rounds_given) rounds = o->quick ? 6 : 15;
    if (!o->reps) o->reps = o->quick ? 100 : 300;
    o->tests &= ~(1u << T_COMP); /* no communication: nothing to pair */
    if (o->hmax > HMAX_LIMIT) { snprintf(err, errlen, "--hmax: at most %ld words", (long)HMAX_LIMIT); return -1; }
    if (rounds < 1 || rounds > MAXROUNDS) { snprintf(err, errlen, "--rounds: 1..%d", MAXROUNDS); return -1; }
    if (!o->tests) { snprintf(err, errlen, "--tests: no test left to run (Comp is not paired)"); return -1; }
    return 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (bspk_init(&argc, &argv) != BSPK_OK) {
        fprintf(stderr, "as_paired: bspk_init: %s\n", bspk_error_string());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    me = bspk_pid();
    P = bspk_nprocs();
    if (me != rank || P != size) bspk_abort("as_paired: BSPk pid %d of %d is MPI rank %d of %d", me, P, rank, size);
    (void)as_usage; /* (the twins' usage text; ours is `usage`) */
    as_opts o;
    char err[256];
    int rc = parse(argc, argv, &o, err, sizeof err);
    if (rc) {
        if (me == 0) {
            if (rc < 0) fprintf(stderr, "as_paired: %s\n", err);
            fputs(usage, stderr);
        }
        int frc = bspk_finalize();
        MPI_Finalize();
        return rc < 0 || frc ? 2 : 0;
    }
    reps = as_reps(&o, 0); /* (= --reps, or the default set by parse) */
    times = calloc((size_t)reps, sizeof *times);
    gath = calloc((size_t)P * (size_t)reps, sizeof *gath);
    if (!times || !gath) bspk_abort("as_paired: out of memory");
    map_probe();

    table_row rows[MAXROWS];
    int nrows = 0, nrt = 0;
    double *rt_all = calloc((size_t)MAXROWS * (size_t)rounds, sizeof *rt_all);
    if (!rt_all) bspk_abort("as_paired: out of memory");
    for (int t = 0; t < NTESTS; t++) {
        if (!(o.tests >> t & 1)) continue;
        for (long h = P; t != T_TOTAL || h <= o.hmax; h *= 2) {
            if (t != T_TOTAL || h >= o.hmin) {
                run_test(t, h, &rows[nrows], rt_all + nrt);
                nrows++;
                if (probe) nrt += rounds;
            }
            if (t != T_TOTAL) break;
        }
    }
    if (me == 0) {
        if (nrt) {
            span3 s = stats(rt_all, nrt);
            printf("csv,as_paired,roundtrip,%d,0,probe,%.9g,%.9g,%.9g\n", P, s.med, s.lo, s.hi);
        }
        print_table(rows, nrows, rt_all, nrt);
    }

    long all = 0;
    MPI_Allreduce(&bad_words, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (bad_words) fprintf(stderr, "as_paired: pid %d: verification FAILED (%ld)\n", me, bad_words);
    if (me == 0 && all)
        printf("Verification FAILED: %ld words wrong or missing (all processes; details on stderr)\n\n", all);
    int status = all ? 1 : 0;
    if (bspk_finalize() != BSPK_OK) {
        fprintf(stderr, "as_paired: bspk_finalize: %s\n", bspk_error_string());
        status = 1;
    }
    MPI_Finalize();
    free(rt_all);
    free(gath);
    free(times);
    return status;
}
