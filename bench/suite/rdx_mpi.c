/*
 * rdx_mpi -- the Open MPI twin of rdx_bspk (Rdx suite [RMA §5]): LSD radix sort
 * (RDXSORT, [RMA Fig. 9]) of n 32-bit keys, block distributed (kernels.h), in 4
 * passes of count sort on 8-bit digits. Each pass: local count sort
 * (suite_count_sort), the count all-gather (MPI_Allgather of the 256 counts, in
 * every variant), the global position of every (process q, digit d) run from
 * the p x 256 count matrix (Fig. 9 line 3), and the routing of each digit run
 * to the process(es) owning those positions, split at block boundaries
 * (Fig. 9 lines 4-5).
 *
 * Variants (the routing):
 *   put-fence-allocate  MPI_Put of each run piece into the destination's window
 *                       (MPI_Win_allocate, m keys: the next pass's input) at its
 *                       offset, then MPI_Win_fence.
 *   put-fence-create    the same with MPI_Win_create on malloc'ed memory.
 *   isend-barrier       one message per run piece (tag = digit): the receiver
 *                       knows every piece from the count matrix and posts an
 *                       MPI_Irecv straight into its position (exact source and
 *                       tag); MPI_Isend of the pieces; MPI_Waitall; MPI_Barrier
 *                       (the BSP superstep of rdx_bspk's mp variants).
 *   alltoallv           the count-sorted keys are already grouped by destination
 *                       (they go to non-decreasing positions), so no packing:
 *                       MPI_Alltoallv, then the receiver copies each (q, d) piece
 *                       to its position (as rdx_bspk's mp-combined-expect).
 * For the put variants the window holds the pass's input; the count sort reads
 * it after the fence, and no process puts into it before every process has
 * count-sorted it (each must first return from the MPI_Allgather).
 *
 * Timing as in rdx_bspk: per repetition from an MPI_Barrier to the end of the
 * 4th pass; the input fill and the verification are not timed. max_median_s =
 * median over repetitions of the maximum over processes; avg_s = maximum over
 * processes of (sum of its timed repetitions) / reps; one warm-up. Verified
 * after the last repetition: each slice sorted, slices ordered across
 * processes, global suite_key_sum equal to the input's (computed at pid 0 from
 * suite_key), position table equal to suite_dest_pos.
 *
 * Usage: mpirun -n P rdx_mpi [--n N] [--seed S] [--reps R] [--variants a,b,...] [--quick]
 *   (options as rdx_bspk; default n = 2^22, seed 1, reps = 3; --quick: n = 2^18, reps = 10)
 * Exit status 1 if any verification failed, 2 on a usage error.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

enum { V_PUT_ALLOC, V_PUT_CREATE, V_ISEND_BARRIER, V_ALLTOALLV, NVAR };
static const char *const vname[NVAR] = {"put-fence-allocate", "put-fence-create", "isend-barrier", "alltoallv"};

#define R SUITE_RADIX

#define CKM(call)                                                                                          \
    do {                                                                                                   \
        int rc_ = (call);                                                                                  \
        if (rc_ != MPI_SUCCESS) {                                                                          \
            char s_[MPI_MAX_ERROR_STRING];                                                                 \
            int l_;                                                                                        \
            MPI_Error_string(rc_, s_, &l_);                                                                \
            fprintf(stderr, "rdx_mpi: pid %d: %s: %s\n", me, #call, s_);                                   \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                  \
        }                                                                                                  \
    } while (0)

static int me, p;
static uint64_t n, seed, lo, hi, m;
static uint64_t *blo;
static uint32_t *keys, *sorted, *tmp;
static uint64_t cnt[R], *all, *pos;
static MPI_Request *rq;
static int *scount, *sdispl, *rcount, *rdispl;

static void positions(void) {
    uint64_t base = 0;
    for (int d = 0; d < R; d++)
        for (int q = 0; q < p; q++) {
            pos[(size_t)q * R + d] = base;
            base += all[(size_t)q * R + d];
        }
}

static int piece(int q, int d, uint64_t *a, uint64_t *b) {
    uint64_t s = pos[(size_t)q * R + d], e = s + all[(size_t)q * R + d];
    *a = s > lo ? s : lo;
    *b = e < hi ? e : hi;
    return *a < *b;
}

/* One pass; in = the pass's input (keys, or the window for the put variants),
 * the output goes to keys (isend, alltoallv) or the window (put). */
static void one_pass(int v, int pass, uint32_t *in, MPI_Win win) {
    suite_count_sort(sorted, cnt, in, m, pass);
    CKM(MPI_Allgather(cnt, R, MPI_UINT64_T, all, R, MPI_UINT64_T, MPI_COMM_WORLD));
    positions();
    int nrq = 0;
    if (v == V_ISEND_BARRIER) /* receives first, straight into place */
        for (int q = 0; q < p; q++)
            for (int d = 0; d < R; d++) {
                uint64_t a, b;
                if (piece(q, d, &a, &b))
                    CKM(MPI_Irecv(keys + (a - lo), (int)(b - a), MPI_UINT32_T, q, d, MPI_COMM_WORLD, &rq[nrq++]));
            }
    if (v == V_ALLTOALLV)
        for (int q = 0; q < p; q++) scount[q] = 0;
    int dest = 0;
    uint64_t off = 0;
    for (int d = 0; d < R; d++) {
        uint64_t g = pos[(size_t)me * R + d], left = cnt[d];
        while (left) {
            while (g >= blo[dest + 1]) dest++;
            uint64_t len = blo[dest + 1] - g < left ? blo[dest + 1] - g : left;
            switch (v) {
            case V_PUT_ALLOC:
            case V_PUT_CREATE:
                CKM(MPI_Put(sorted + off, (int)len, MPI_UINT32_T, dest, (MPI_Aint)(g - blo[dest]), (int)len,
                            MPI_UINT32_T, win));
                break;
            case V_ISEND_BARRIER:
                CKM(MPI_Isend(sorted + off, (int)len, MPI_UINT32_T, dest, d, MPI_COMM_WORLD, &rq[nrq++]));
                break;
            case V_ALLTOALLV:
                scount[dest] += (int)len;
                break;
            }
            g += len;
            off += len;
            left -= len;
        }
    }
    switch (v) {
    case V_PUT_ALLOC:
    case V_PUT_CREATE:
        CKM(MPI_Win_fence(0, win));
        break;
    case V_ISEND_BARRIER:
        CKM(MPI_Waitall(nrq, rq, MPI_STATUSES_IGNORE));
        CKM(MPI_Barrier(MPI_COMM_WORLD));
        break;
    case V_ALLTOALLV: {
        int s = 0, r = 0;
        for (int q = 0; q < p; q++) {
            uint64_t c = 0, a, b;
            for (int d = 0; d < R; d++)
                if (piece(q, d, &a, &b)) c += b - a;
            rcount[q] = (int)c;
            rdispl[q] = r;
            r += (int)c;
            sdispl[q] = s;
            s += scount[q];
        }
        CKM(MPI_Alltoallv(sorted, scount, sdispl, MPI_UINT32_T, tmp, rcount, rdispl, MPI_UINT32_T, MPI_COMM_WORLD));
        const uint32_t *at = tmp;
        for (int q = 0; q < p; q++) /* tmp holds q's pieces in digit order */
            for (int d = 0; d < R; d++) {
                uint64_t a, b;
                if (piece(q, d, &a, &b)) {
                    memcpy(keys + (a - lo), at, (size_t)(b - a) * sizeof *keys);
                    at += b - a;
                }
            }
        break;
    }
    }
}

static void usage(void) {
    fprintf(stderr, "usage: mpirun -n P rdx_mpi [--n N] [--seed S] [--reps R] [--variants a,b,...] [--quick]\n"
                    "  variants: put-fence-allocate put-fence-create isend-barrier alltoallv (default all)\n"
                    "  --quick: n = 2^18, reps = 10\n");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    suite_app_opts o;
    int reps, want[NVAR];
    char err[256];
    if (suite_parse_app(argc, argv, vname, NVAR, 1, &o, want, err, sizeof err)) {
        if (me == 0) fprintf(stderr, "rdx_mpi: %s\n", err), usage();
        MPI_Finalize();
        return 2;
    }
    seed = o.seed;
    n = o.n > 0 ? (uint64_t)o.n : o.quick ? (1u << 18) : (1u << 22);
    reps = o.reps > 0 ? o.reps : o.quick ? 10 : 3;

    blo = malloc((size_t)(p + 1) * sizeof *blo);
    if (!blo) MPI_Abort(MPI_COMM_WORLD, 1);
    for (int j = 0; j <= p; j++) blo[j] = suite_block_start(n, p, j);
    lo = blo[me];
    hi = blo[me + 1];
    m = hi - lo;
    keys = malloc((size_t)(m + 1) * sizeof *keys);
    sorted = malloc((size_t)(m + 1) * sizeof *sorted);
    tmp = malloc((size_t)(m + 1) * sizeof *tmp);
    all = malloc((size_t)p * R * sizeof *all);
    pos = malloc((size_t)p * R * sizeof *pos);
    rq = malloc(((size_t)p * R + R + (size_t)p) * sizeof *rq);
    scount = malloc((size_t)4 * p * sizeof *scount);
    double *t = malloc((size_t)reps * sizeof *t), *mx = malloc((size_t)reps * sizeof *mx);
    if (!keys || !sorted || !tmp || !all || !pos || !rq || !scount || !t || !mx) {
        fprintf(stderr, "rdx_mpi: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    sdispl = scount + p;
    rcount = scount + 2 * p;
    rdispl = scount + 3 * p;

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

    int status = 0;
    for (int v = 0; v < NVAR; v++) {
        if (!want[v]) continue;
        int put = v == V_PUT_ALLOC || v == V_PUT_CREATE;
        MPI_Win win = MPI_WIN_NULL;
        uint32_t *wbuf = NULL, *cbuf = NULL;
        if (put) {
            int rc, failed, anyfailed = 0;
            MPI_Aint bytes = (MPI_Aint)((m + 1) * sizeof(uint32_t));
            if (v == V_PUT_ALLOC)
                rc = MPI_Win_allocate(bytes, sizeof(uint32_t), MPI_INFO_NULL, MPI_COMM_WORLD, &wbuf, &win);
            else {
                cbuf = wbuf = malloc((size_t)bytes);
                if (!cbuf) MPI_Abort(MPI_COMM_WORLD, 1);
                rc = MPI_Win_create(wbuf, bytes, sizeof(uint32_t), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
            }
            failed = rc != MPI_SUCCESS;
            CKM(MPI_Allreduce(&failed, &anyfailed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
            if (anyfailed) {
                if (me == 0)
                    fprintf(stderr, "rdx_mpi: %s: window creation failed in this MPI configuration: skipped "
                                    "(at p = 1 add --mca osc pt2pt)\n", vname[v]);
                if (!failed) CKM(MPI_Win_free(&win));
                free(cbuf);
                continue;
            }
            MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
        }
        uint32_t *in = put ? wbuf : keys;
        double sum = 0;
        for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
            for (uint64_t i = 0; i < m; i++) in[i] = suite_key(lo + i, seed);
            if (put) CKM(MPI_Win_fence(0, win));
            CKM(MPI_Barrier(MPI_COMM_WORLD));
            double t0 = suite_now();
            for (int pass = 0; pass < SUITE_PASSES; pass++) one_pass(v, pass, in, win);
            double dt = suite_now() - t0;
            if (r >= 0) {
                t[r] = dt;
                sum += dt;
            }
        }
        /* ---- verify the last repetition ---- */
        uint64_t bad = !suite_sorted(in, m);
        for (int q = 0; q < p; q++)
            for (int d = 0; d < R; d++) bad += pos[(size_t)q * R + d] != suite_dest_pos(all, p, q, d);
        if (bad) fprintf(stderr, "rdx_mpi: %s: pid %d: slice not sorted or positions wrong\n", vname[v], me);
        uint64_t rv[5] = {bad, m > 0, m ? in[0] : 0, m ? in[m - 1] : 0, suite_key_sum(in, m)};
        uint64_t *rall = me == 0 ? malloc((size_t)5 * p * sizeof *rall) : NULL;
        double avg = 0;
        sum /= reps;
        CKM(MPI_Gather(rv, 5, MPI_UINT64_T, rall, 5, MPI_UINT64_T, 0, MPI_COMM_WORLD));
        CKM(MPI_Reduce(&sum, &avg, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
        CKM(MPI_Reduce(t, mx, reps, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
        if (put) {
            CKM(MPI_Win_free(&win));
            free(cbuf);
        }
        if (me == 0) {
            uint64_t nbad = 0, out_sum = 0, prev_last = 0, seen = 0;
            for (int q = 0; q < p; q++) {
                const uint64_t *x = rall + (size_t)5 * q;
                nbad += x[0];
                if (x[1]) {
                    if (seen && x[2] < prev_last) nbad++;
                    prev_last = x[3];
                    seen = 1;
                }
                out_sum += x[4];
            }
            if (out_sum != in_sum) {
                fprintf(stderr, "rdx_mpi: %s: checksum of the output differs from the input's\n", vname[v]);
                nbad++;
            }
            int ok = nbad == 0;
            if (!ok) status = 1;
            suite_emit("Rdx", "Radix", "mpi", vname[v], p, 0, (long)n, suite_median(mx, reps), avg, reps, ok);
            free(rall);
        }
    }
    CKM(MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD));
    free(keys);
    free(sorted);
    free(tmp);
    free(all);
    free(pos);
    free(rq);
    free(scount);
    free(blo);
    free(t);
    free(mx);
    MPI_Finalize();
    return status;
}
