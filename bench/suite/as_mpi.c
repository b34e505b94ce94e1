/*
 * as_mpi -- the As suite [RMA §3] on Open MPI, with 32-bit words: the twin of
 * as_bspk.c (same tests, data, verification and timing; see its header).
 *
 *   mpirun -n P ... as_mpi [--tests LIST] [--variants LIST] [--hmin H] [--hmax H]
 *                          [--reps R] [--quick]
 *
 * Variants (the superstep's communication and its end):
 *   isend-barrier       MPI_Irecv of every incoming block, MPI_Isend of every
 *                       outgoing one, MPI_Waitall, then MPI_Barrier (the
 *                       superstep's barrier, as [RMA §3] times it); for Empty
 *                       and Comp the variant is called "barrier": MPI_Barrier alone;
 *   put-fence-allocate  window from MPI_Win_allocate, one MPI_Put per destination
 *                       (at offset from*(h/p) of its window), MPI_Win_fence(0, win)
 *                       ends the superstep; Empty and Comp: MPI_Win_fence alone;
 *   put-fence-create    the same on a window from MPI_Win_create over malloc'd
 *                       memory (skipped, with a note on stderr, where Open MPI
 *                       cannot create one: p = 1 with btl self,vader needs
 *                       --mca osc ^ucx to let osc pt2pt in);
 *   alltoall            Total only: MPI_Alltoall of h/p words per pair (no
 *                       barrier: the collective is the superstep).
 * The put-fence windows hold two copies of the destination blocks and
 * repetition r puts into copy r % 2: a fence ends one epoch and opens the next,
 * so a fast process may put its repetition r+1 data while the target still
 * verifies repetition r (in BSPk a store of superstep s+1 only takes effect at
 * the end of s+1, so as_bspk needs no second copy).
 * Blocks are sent in the same staggered order as as_bspk (itself first, then
 * me+1, me+2, ...). Timing: W warm-up and R timed repetitions after an
 * MPI_Barrier; t_r runs from before the first communication call to the return
 * of the call ending the superstep; verification follows, outside t_r but in
 * the loop time. MPI_Gather of the t_r at pid 0, MPI_Reduce of loop time (max)
 * and of the verification flag (min). Output: kernels.h's csv lines on stdout
 * (pid 0), diagnostics on stderr; exit status 1 if any verification failed.
 * Run as /work/shared/reference/mpi/NOTES.md says (shm: --mca pml ob1 --mca btl
 * self,vader; tcp: --mca pml ob1 --mca btl self,tcp --mca osc pt2pt).
 */
#include <mpi.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AS_PROG "as_mpi" /* (as_common.h: as_fail) */
#include "as_common.h"

/* ---- MPI side ------------------------------------------------------------------ */

enum { V_ISEND, V_FENCE_ALLOCATE, V_FENCE_CREATE, V_ALLTOALL, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"isend-barrier", "put-fence-allocate", "put-fence-create",
                                                     "alltoall"};

static int me, P;
static long as_rep;             /* repetition stamp: counts every repetition run, identical on all pids */
static volatile double comp_sink;
static long bad_words;          /* verification failures on this process (all measurements) */
static int bad_reported;


/* Verify the b-word block w from `from`, rep r: all words when full, else the
 * stamped ones. fixed[i] holds the words that do not depend on r. */
static long check_block(const uint32_t *w, long b, int from, long r, const uint32_t *fixed, int full,
                        const char *test, const char *variant, long h) {
    long bad = 0;
    uint32_t s = suite_as_word(from, me, r);
    if (full) {
        for (long i = 0; i < b; i++) {
            uint32_t e = as_stamped(i, b) ? s + (uint32_t)i : fixed[i];
            if (w[i] != e) {
                if (!bad) as_fail(test, variant, h, "word %ld from pid %d is 0x%08x, expected 0x%08x", i, from, w[i], e);
                bad++;
            }
        }
    } else {
        for (long i = 0; i < b; i = as_next_stamp(i, b))
            if (w[i] != s + (uint32_t)i) {
                if (!bad)
                    as_fail(test, variant, h, "word %ld from pid %d is 0x%08x, expected 0x%08x", i, from, w[i],
                            s + (uint32_t)i);
                bad++;
            }
    }
    return bad;
}

typedef struct {
    int t, v;
    long h, b;        /* h: csv column (Total); b: words per block */
    uint32_t *src;    /* p blocks of b words, block j for process j */
    uint32_t *dst;    /* received blocks: block k from process k (put-fence: two copies of p blocks) */
    long nw;          /* words of p blocks */
    MPI_Win win;      /* put-fence variants */
    MPI_Request *req; /* isend-barrier: 2p requests */
    uint32_t **fixed; /* fixed[k]: the r-independent words of the block from k (NULL if none) */
    int full;         /* verify every word */
    const char *vname;
} as_run;

/* One repetition; returns t_r (seconds). */
static double one_rep(as_run *m) {
    const char *tn = test_names[m->t];
    long r = as_rep++;
    const MPI_Datatype U32 = MPI_UINT32_T;
    int fence = m->v == V_FENCE_ALLOCATE || m->v == V_FENCE_CREATE;
    long half = fence ? (r & 1) * m->nw : 0; /* the window copy this repetition puts into */
    if (m->t >= T_FULL) /* stamps for this repetition, before the clock */
        for (int j = 0; j < P; j++) {
            if (!as_sends(m->t, me, j, P)) continue;
            uint32_t s = suite_as_word(me, j, r);
            for (long i = 0; i < m->b; i = as_next_stamp(i, m->b)) m->src[j * m->b + i] = s + (uint32_t)i;
        }
    double t0 = suite_now();
    if (m->t == T_COMP) comp_sink = suite_comp(comp_sink);
    switch (m->v) {
    case V_ISEND: {
        int n = 0;
        if (m->t >= T_FULL) {
            for (int k = 0; k < P; k++)
                if (as_sends(m->t, k, me, P))
                    MPI_Irecv(m->dst + k * m->b, (int)m->b, U32, k, 0, MPI_COMM_WORLD, &m->req[n++]);
            for (int k = 0; k < P; k++) {
                int j = (me + k) % P;
                if (as_sends(m->t, me, j, P))
                    MPI_Isend(m->src + j * m->b, (int)m->b, U32, j, 0, MPI_COMM_WORLD, &m->req[n++]);
            }
            MPI_Waitall(n, m->req, MPI_STATUSES_IGNORE);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    }
    case V_FENCE_ALLOCATE:
    case V_FENCE_CREATE:
        if (m->t >= T_FULL)
            for (int k = 0; k < P; k++) {
                int j = (me + k) % P;
                if (as_sends(m->t, me, j, P))
                    MPI_Put(m->src + j * m->b, (int)m->b, U32, j, (MPI_Aint)(half + me * m->b), (int)m->b, U32,
                            m->win);
            }
        MPI_Win_fence(0, m->win);
        break;
    case V_ALLTOALL:
        MPI_Alltoall(m->src, (int)m->b, U32, m->dst, (int)m->b, U32, MPI_COMM_WORLD);
        break;
    }
    double t1 = suite_now();
    if (m->t >= T_FULL)
        for (int k = 0; k < P; k++)
            if (as_sends(m->t, k, me, P))
                check_block(m->dst + half + k * m->b, m->b, k, r, m->fixed[k], m->full, tn, m->vname, m->h);
    return t1 - t0;
}

/* One (test, variant, h) measurement: set up, warm up, time, gather, emit. */
static void measure(const as_opts *o, int t, int v, long h) {
    as_run m;
    memset(&m, 0, sizeof m);
    m.t = t;
    m.v = v;
    m.h = t == T_TOTAL ? h : 0;
    m.b = t == T_TOTAL ? h / P : 1;
    m.full = t != T_TOTAL || h <= AS_FULLCHECK;
    m.vname = v == V_ISEND && t < T_FULL ? "barrier" : variant_names[v];
    long nw = (long)P * m.b, bad0 = bad_words;
    int fence = v == V_FENCE_ALLOCATE || v == V_FENCE_CREATE;
    MPI_Aint bytes = (MPI_Aint)nw * (MPI_Aint)sizeof(uint32_t), wbytes = fence ? 2 * bytes : bytes;
    m.nw = nw;

    m.fixed = calloc((size_t)P, sizeof *m.fixed);
    m.req = malloc(2 * (size_t)P * sizeof *m.req);
    m.src = malloc((size_t)bytes);
    for (int j = 0; j < P; j++)
        for (long i = 0; i < m.b; i++) m.src[j * m.b + i] = as_block_word(me, j, i, m.b, -1);
    if (t >= T_FULL)
        for (int k = 0; k < P; k++)
            if (m.full && as_sends(t, k, me, P)) {
                m.fixed[k] = malloc((size_t)m.b * sizeof(uint32_t));
                for (long i = 0; i < m.b; i++) m.fixed[k][i] = as_block_word(k, me, i, m.b, -1);
            }
    if (v == V_FENCE_ALLOCATE) {
        MPI_Win_allocate(wbytes, (int)sizeof(uint32_t), MPI_INFO_NULL, MPI_COMM_WORLD, &m.dst, &m.win);
    } else {
        m.dst = malloc((size_t)wbytes);
        if (v == V_FENCE_CREATE) {
            /* Open MPI may refuse (osc rdma at p = 1 on vader): skip, do not abort */
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
            int rc = MPI_Win_create(m.dst, wbytes, (int)sizeof(uint32_t), MPI_INFO_NULL, MPI_COMM_WORLD, &m.win);
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
            int failed = rc != MPI_SUCCESS, anyfailed = 0;
            MPI_Allreduce(&failed, &anyfailed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            if (anyfailed) {
                char msg[MPI_MAX_ERROR_STRING] = "";
                int len = 0;
                if (failed) MPI_Error_string(rc, msg, &len);
                if (me == 0)
                    fprintf(stderr, "as_mpi: %s/%s h=%ld skipped: MPI_Win_create failed (%s)%s\n", test_names[t],
                            m.vname, m.h, failed ? msg : "on another process",
                            P == 1 ? "; at p = 1 add --mca osc ^ucx" : "");
                for (int k = 0; k < P; k++) free(m.fixed[k]);
                free(m.fixed);
                free(m.req);
                free(m.src);
                if (failed) free(m.dst); /* else a window exists here only: not freeable alone, left */
                return;
            }
        }
    }
    memset(m.dst, 0, (size_t)wbytes);
    if (fence) MPI_Win_fence(0, m.win); /* opens the first epoch */

    int R = as_reps(o, h), W = as_warmup(R);
    double *tr = malloc((size_t)R * sizeof *tr);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int w = 0; w < W; w++) one_rep(&m);
    MPI_Barrier(MPI_COMM_WORLD);
    double l0 = suite_now();
    for (int r = 0; r < R; r++) tr[r] = one_rep(&m);
    double loop = suite_now() - l0;

    /* gather (untimed) */
    double *all = me == 0 ? malloc((size_t)P * (size_t)R * sizeof *all) : NULL, maxloop = 0;
    int ok = bad_words == bad0, allok = 0;
    MPI_Gather(tr, R, MPI_DOUBLE, all, R, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Reduce(&loop, &maxloop, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&ok, &allok, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
    if (me == 0) {
        for (int r = 0; r < R; r++)
            for (int q = 1; q < P; q++)
                if (all[(size_t)q * R + r] > all[r]) all[r] = all[(size_t)q * R + r];
        suite_emit("As", test_names[t], "mpi", m.vname, P, m.h, 0, suite_median(all, R), maxloop / R, R, allok);
        if (!allok) bad_words += bad_words == bad0; /* pid 0 exits non-zero when any process failed */
        free(all);
    }
    if (fence) MPI_Win_free(&m.win);
    if (v != V_FENCE_ALLOCATE) free(m.dst);
    for (int k = 0; k < P; k++) free(m.fixed[k]);
    free(m.fixed);
    free(m.req);
    free(m.src);
    free(tr);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    as_opts o;
    char err[256];
    int rc = as_parse(argc, argv, &o, variant_names, NVARIANTS, "barrier", V_ISEND, err, sizeof err);
    if (rc != 0) {
        if (me == 0) {
            if (rc < 0) fprintf(stderr, "as_mpi: %s\n", err);
            fprintf(stderr, "%s  variants: isend-barrier (alias barrier),put-fence-allocate,put-fence-create,alltoall\n",
                    as_usage);
        }
        MPI_Finalize();
        return rc < 0 ? 2 : 0;
    }
    comp_sink = 1.0;
    for (int t = 0; t < NTESTS; t++) {
        if (!(o.tests >> t & 1)) continue;
        for (int v = 0; v < NVARIANTS; v++) {
            if (!(o.variants >> v & 1)) continue;
            if (v == V_ALLTOALL && t != T_TOTAL) continue;
            if (t != T_TOTAL) { measure(&o, t, v, 0); continue; }
            for (long h = P; h <= o.hmax; h *= 2)
                if (h >= o.hmin) measure(&o, t, v, h);
        }
    }
    MPI_Finalize();
    if (bad_words) fprintf(stderr, "as_mpi: pid %d: verification FAILED (%ld)\n", me, bad_words);
    return bad_words ? 1 : 0;
}
