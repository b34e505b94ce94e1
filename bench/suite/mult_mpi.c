/*
 * mult_mpi -- the Open MPI twin of mult_bspk (Mult suite [RMA §4]): C = A B by
 * the pipelined Cannon algorithm of [RMA Fig. 7] (MatMul, put/send) and
 * [RMA Fig. 8] (MatMulG, get) on a P x P grid (p = P*P), block N = n/P, with
 * the same communication pattern as mult_bspk: process pid (pi = pid % P,
 * pj = pid / P) keeps its own blocks A_pid, B_pid; in round l
 *   send/put variants [Fig. 7]: A_pid goes to ((2P - pi - pj + l) mod P)*P + pi
 *       and B_pid to ((2P - pi - pj + l) mod P) + pj*P, so pid receives
 *       A_{pi,k}, B_{k,pj} with k = (l - pi - pj) mod P;
 *   get variant [Fig. 8]: pid gets A of ((pi + pj + l) mod P)*P + pi and B of
 *       ((pi + pj + l) mod P) + pj*P, i.e. k = (pi + pj + l) mod P;
 * then C_pid += A_{pi,k} B_{k,pj} (suite_transpose, suite_block_mult).
 *
 * Variants (one A block and one B block out and in per round):
 *   isend-barrier       MPI_Irecv x2 into the free buffer, MPI_Isend x2, round
 *                       l-1's multiplication, MPI_Waitall, MPI_Barrier (the
 *                       BSP superstep of mult_bspk's mp variants).
 *   sendrecv            MPI_Sendrecv of A then of B (blocking; no overlap), then
 *                       the multiplication. (The classic Cannon uses
 *                       MPI_Sendrecv_replace on shifted blocks; with the
 *                       pipelined pattern every process keeps its own blocks, so
 *                       the send and receive buffers differ: MPI_Sendrecv.)
 *   put-fence-allocate  MPI_Put of the own blocks into the receiver's window
 *                       (MPI_Win_allocate: [a0 | a1 | b0 | b1]), round l-1's
 *                       multiplication, MPI_Win_fence.
 *   put-fence-create    the same with MPI_Win_create on malloc'ed memory.
 *   get-fence-allocate  MPI_Get from the owner's window holding its own blocks
 *                       (MPI_Win_allocate: [A_pid | B_pid]) into the free local
 *                       buffer, round l-1's multiplication, MPI_Win_fence.
 * Round l's communication overlaps round l-1's multiplication (as in
 * mult_bspk), so the buffers are double (round l receives into buffer l % 2).
 *
 * Timing as in mult_bspk: per repetition from an MPI_Barrier to the end of the
 * last multiplication (C = 0, transposes, the closing fence/barrier included);
 * max_median_s = median over repetitions of the maximum over processes; avg_s =
 * maximum over processes of (sum of its timed repetitions) / reps; one warm-up.
 * The last repetition's C is verified exactly (suite_check_c).
 *
 * Usage: mpirun -n P mult_mpi [--n N] [--reps R] [--variants a,b,...] [--quick]
 *   (options as mult_bspk; default n = 576, reps = 5; --quick: n = 192, reps = 10)
 * p must be a square (1, 4, 9, ...): otherwise a note on stderr, nothing on
 * stdout, exit 0. Exit status 1 if any verification failed, 2 on a usage error.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

enum { V_ISEND_BARRIER, V_SENDRECV, V_PUT_ALLOC, V_PUT_CREATE, V_GET_ALLOC, NVAR };
static const char *const vname[NVAR] = {"isend-barrier", "sendrecv", "put-fence-allocate", "put-fence-create",
                                        "get-fence-allocate"};

static int me, p, P, pi_, pj_;
static long n, N, NN;
static double *own_a, *own_b; /* own blocks (plain) */
static double *sat, *C;
static double *rbuf;          /* receive buffers [a0 | a1 | b0 | b1] (isend/sendrecv) */

#define CKM(call)                                                                                          \
    do {                                                                                                   \
        int rc_ = (call);                                                                                  \
        if (rc_ != MPI_SUCCESS) {                                                                          \
            char s_[MPI_MAX_ERROR_STRING];                                                                 \
            int l_;                                                                                        \
            MPI_Error_string(rc_, s_, &l_);                                                                \
            fprintf(stderr, "mult_mpi: pid %d: %s: %s\n", me, #call, s_);                                  \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                  \
        }                                                                                                  \
    } while (0)

static int grid(int i, int j) { return (((j % P) + P) % P) * P + (((i % P) + P) % P); } /* pid of (pi=i, pj=j) */

static void multiply(const double *a, const double *b) {
    suite_transpose(sat, a, N);
    suite_block_mult(C, sat, b, N);
}

/* One multiplication with variant v; win is the variant's window (or NULL),
 * wbuf its local memory. */
static void run(int v, MPI_Win win, double *wbuf) {
    memset(C, 0, (size_t)NN * sizeof *C);
    double *buf = (v == V_PUT_ALLOC || v == V_PUT_CREATE) ? wbuf : rbuf; /* [a0|a1|b0|b1] */
    for (int l = 0; l <= P; l++) {
        double *ca = buf + (size_t)((l + 1) % 2) * NN, *cb = buf + (size_t)(2 + (l + 1) % 2) * NN; /* round l-1 */
        double *na = buf + (size_t)(l % 2) * NN, *nb = buf + (size_t)(2 + l % 2) * NN;             /* round l */
        int kput = ((l - pi_ - pj_) % P + P) % P;
        int dest_a = grid(pi_, l - pi_ - pj_), dest_b = grid(l - pi_ - pj_, pj_);
        int src_a = grid(pi_, kput), src_b = grid(kput, pj_);
        switch (v) {
        case V_ISEND_BARRIER: {
            MPI_Request rq[4];
            if (l < P) {
                CKM(MPI_Irecv(na, (int)NN, MPI_DOUBLE, src_a, 0, MPI_COMM_WORLD, &rq[0]));
                CKM(MPI_Irecv(nb, (int)NN, MPI_DOUBLE, src_b, 1, MPI_COMM_WORLD, &rq[1]));
                CKM(MPI_Isend(own_a, (int)NN, MPI_DOUBLE, dest_a, 0, MPI_COMM_WORLD, &rq[2]));
                CKM(MPI_Isend(own_b, (int)NN, MPI_DOUBLE, dest_b, 1, MPI_COMM_WORLD, &rq[3]));
            }
            if (l > 0) multiply(ca, cb);
            if (l < P) {
                CKM(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
                CKM(MPI_Barrier(MPI_COMM_WORLD));
            }
            break;
        }
        case V_SENDRECV:
            if (l < P) {
                CKM(MPI_Sendrecv(own_a, (int)NN, MPI_DOUBLE, dest_a, 0, na, (int)NN, MPI_DOUBLE, src_a, 0,
                                 MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                CKM(MPI_Sendrecv(own_b, (int)NN, MPI_DOUBLE, dest_b, 1, nb, (int)NN, MPI_DOUBLE, src_b, 1,
                                 MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                multiply(na, nb);
            }
            break;
        case V_PUT_ALLOC:
        case V_PUT_CREATE:
            if (l < P) {
                CKM(MPI_Put(own_a, (int)NN, MPI_DOUBLE, dest_a, (MPI_Aint)(l % 2) * NN, (int)NN, MPI_DOUBLE, win));
                CKM(MPI_Put(own_b, (int)NN, MPI_DOUBLE, dest_b, (MPI_Aint)(2 + l % 2) * NN, (int)NN, MPI_DOUBLE,
                            win));
            }
            if (l > 0) multiply(ca, cb);
            if (l < P) CKM(MPI_Win_fence(0, win));
            break;
        case V_GET_ALLOC:
            if (l < P) {
                int k = (pi_ + pj_ + l) % P;
                CKM(MPI_Get(na, (int)NN, MPI_DOUBLE, grid(pi_, k), 0, (int)NN, MPI_DOUBLE, win));
                CKM(MPI_Get(nb, (int)NN, MPI_DOUBLE, grid(k, pj_), (MPI_Aint)NN, (int)NN, MPI_DOUBLE, win));
            }
            if (l > 0) multiply(ca, cb);
            if (l < P) CKM(MPI_Win_fence(0, win));
            break;
        }
    }
}

static void usage(void) {
    fprintf(stderr, "usage: mpirun -n P mult_mpi [--n N] [--reps R] [--variants a,b,...] [--quick]\n"
                    "  variants: isend-barrier sendrecv put-fence-allocate put-fence-create get-fence-allocate\n"
                    "  (default all); --quick: n = 192, reps = 10; p must be a square (1, 4, 9, ...)\n");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    suite_app_opts o;
    int reps, want[NVAR];
    char err[256];
    if (suite_parse_app(argc, argv, vname, NVAR, 0, &o, want, err, sizeof err)) {
        if (me == 0) fprintf(stderr, "mult_mpi: %s\n", err), usage();
        MPI_Finalize();
        return 2;
    }
    n = o.n > 0 ? (long)o.n : o.quick ? 192 : 576;
    reps = o.reps > 0 ? o.reps : o.quick ? 10 : 5;
    P = 0;
    while ((P + 1) * (P + 1) <= p) P++;
    if (P * P != p) {
        if (me == 0) fprintf(stderr, "mult_mpi: p = %d is not a square: skipped\n", p);
        MPI_Finalize();
        return 0;
    }
    if (n % P) {
        if (me == 0) fprintf(stderr, "mult_mpi: n = %ld is not a multiple of sqrt(p) = %d\n", n, P);
        MPI_Finalize();
        return 2;
    }
    N = n / P;
    NN = N * N;
    pi_ = me % P;
    pj_ = me / P;

    sat = malloc((size_t)NN * sizeof *sat);
    C = malloc((size_t)NN * sizeof *C);
    rbuf = malloc((size_t)4 * NN * sizeof *rbuf);
    double *t = malloc((size_t)reps * sizeof *t), *all = malloc((size_t)reps * p * sizeof *all);
    if (!sat || !C || !rbuf || !t || !all) {
        fprintf(stderr, "mult_mpi: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* Own blocks live in the get window (MPI_Win_allocate), used as send/put source by all variants. */
    MPI_Win gwin;
    CKM(MPI_Win_allocate((MPI_Aint)(2 * NN * sizeof(double)), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &own_a,
                         &gwin));
    MPI_Win_set_errhandler(gwin, MPI_ERRORS_RETURN);
    own_b = own_a + NN;
    suite_fill_block(own_a, 'A', N, pi_, pj_);
    suite_fill_block(own_b, 'B', N, pi_, pj_);

    int status = 0;
    for (int v = 0; v < NVAR; v++) {
        if (!want[v]) continue;
        MPI_Win win = MPI_WIN_NULL;
        double *wbuf = NULL, *cbuf = NULL;
        if (v == V_PUT_ALLOC || v == V_PUT_CREATE) {
            int rc, failed = 0, anyfailed = 0;
            if (v == V_PUT_ALLOC)
                rc = MPI_Win_allocate((MPI_Aint)(4 * NN * sizeof(double)), sizeof(double), MPI_INFO_NULL,
                                      MPI_COMM_WORLD, &wbuf, &win);
            else {
                cbuf = wbuf = malloc((size_t)4 * NN * sizeof *wbuf);
                if (!cbuf) MPI_Abort(MPI_COMM_WORLD, 1);
                rc = MPI_Win_create(wbuf, (MPI_Aint)(4 * NN * sizeof(double)), sizeof(double), MPI_INFO_NULL,
                                    MPI_COMM_WORLD, &win);
            }
            failed = rc != MPI_SUCCESS;
            CKM(MPI_Allreduce(&failed, &anyfailed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
            if (anyfailed) {
                /* e.g. MPI_Win_create at p = 1 with btl self,vader and Debian's osc = ^pt2pt: no osc
                 * component can serve it. Skip the variant (no csv line). */
                if (me == 0)
                    fprintf(stderr, "mult_mpi: %s: window creation failed in this MPI configuration: skipped "
                                    "(at p = 1 add --mca osc pt2pt)\n", vname[v]);
                if (!failed) CKM(MPI_Win_free(&win));
                free(cbuf);
                continue;
            }
            MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
        } else if (v == V_GET_ALLOC)
            win = gwin;
        if (win != MPI_WIN_NULL) CKM(MPI_Win_fence(0, win)); /* open the first epoch (after the fill) */
        double sum = 0;
        for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
            CKM(MPI_Barrier(MPI_COMM_WORLD));
            double t0 = suite_now();
            run(v, win, wbuf);
            double dt = suite_now() - t0;
            if (r >= 0) {
                t[r] = dt;
                sum += dt;
            }
        }
        if (win != MPI_WIN_NULL) CKM(MPI_Win_fence(0, win));
        if (v == V_PUT_ALLOC || v == V_PUT_CREATE) CKM(MPI_Win_free(&win));
        free(cbuf);
        long bad = suite_check_c(C, n, N, pi_, pj_);
        if (bad) fprintf(stderr, "mult_mpi: %s: pid %d: %ld wrong entries of C\n", vname[v], me, bad);
        long nbad = 0;
        double avg = 0;
        sum /= reps;
        CKM(MPI_Reduce(&bad, &nbad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
        CKM(MPI_Reduce(&sum, &avg, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
        CKM(MPI_Reduce(t, all, reps, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
        if (me == 0) {
            int ok = nbad == 0;
            if (!ok) status = 1;
            suite_emit("Mult", "Cannon", "mpi", vname[v], p, 0, n, suite_median(all, reps), avg, reps, ok);
        }
    }
    CKM(MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD));
    CKM(MPI_Win_free(&gwin));
    free(sat);
    free(C);
    free(rbuf);
    free(t);
    free(all);
    MPI_Finalize();
    return status;
}
