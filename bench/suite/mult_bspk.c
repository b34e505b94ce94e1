/*
 * mult_bspk -- the Mult suite [RMA §4] on BSPk: C = A B by the pipelined
 * Cannon algorithm of [RMA Fig. 7] (MatMul, put/send) and [RMA Fig. 8]
 * (MatMulG, get) on a P x P grid of processes (p = P*P), block N = n/P.
 *
 * Process pid (pi = pid % P, pj = pid / P) owns A_{pi,pj} and B_{pi,pj} in the
 * named comem regions ("mult_own_a", pid) and ("mult_own_b", pid); they never
 * change. In round l (0 <= l < P) it
 *   put/send variants [Fig. 7]: sends A_pid to ((2P - pi - pj + l) mod P)*P + pi
 *       and B_pid to ((2P - pi - pj + l) mod P) + pj*P, and so receives
 *       A_{pi,k}, B_{k,pj} with k = (l - pi - pj) mod P;
 *   fetch variant [Fig. 8]: fetches A of ((pi + pj + l) mod P)*P + pi and B of
 *       ((pi + pj + l) mod P) + pj*P, i.e. A_{pi,k}, B_{k,pj}, k = (pi + pj + l) mod P;
 * then C_pid += A_{pi,k} B_{k,pj} (a transposed first: suite_transpose,
 * suite_block_mult). Round l's communication is one superstep; round l-1's
 * multiplication runs in the same superstep, after the round-l copies/sends
 * are issued (P supersteps, then the last multiplication).
 *
 * Variants (each round: one A block and one B block out, one of each in):
 *   mp-expect      bspk_send of the own blocks; received blocks are message
 *                  regions (bspk_recv, bspk_free); bspk_expect(2).
 *   mp-counted     the same without bspk_expect (the runtime counts: cost L).
 *   store-expect   bspk_copy stores of the own blocks into the receiver's named
 *                  regions ("mult_a", pid), ("mult_b", pid); expect(2): the
 *                  stores arriving, a local copy included (bspk.h DSM rule 5).
 *                  One buffer per matrix suffices: stores issued in superstep l
 *                  take effect at the boundary l -> l+1 (rule 1), after this
 *                  superstep's multiplication has read round l-1's blocks.
 *   store-counted  the same without bspk_expect.
 *   fetch-expect   bspk_copy fetches from ("mult_own_a"/"mult_own_b", src) into
 *                  the local ("mult_a"/"mult_b", pid); expect(2): the fetches
 *                  of this process's two blocks (rule 5: the owner of the source
 *                  counts a fetch, the issuer a local copy).
 * Regions are built from frames and are contiguous only within a frame, so the
 * kernels read the blocks frame by frame (bspk_span), in place, as a BSPk user
 * would: A is transposed straight from its frames (suite_transpose_part, the
 * transpose both twins need anyway), and B's columns are read where they lie,
 * except those that straddle two frames (one in 14 at n = 576, p = 1, with
 * 64 KiB frames), which are copied into a scratch array -- part of the timed
 * work. (Until 2026-12-02 both blocks were copied whole into plain arrays
 * first: two copies per round that Open MPI's twin, reading its window or
 * receive buffer in place, does not make.)
 *
 * Timing: per repetition, from a barrier (counted bspk_sync) to the end of the
 * last multiplication, including C = 0, copies and transposes; excluding the
 * fill and the verification. max_median_s = median over repetitions of the
 * maximum over processes; avg_s = maximum over processes of (sum of its timed
 * repetitions) / reps. One warm-up repetition per variant. The result of the
 * last repetition is verified exactly (suite_check_c).
 *
 * Usage: bspkrun -n P mult_bspk [--n N] [--reps R] [--variants a,b,...] [--quick]
 *   --n N        matrix order (default 576; must be a multiple of sqrt(p))
 *   --reps R     timed repetitions after one warm-up (default 5)
 *   --variants   comma-separated subset of the variants above (default all)
 *   --quick      n = 192, reps = 10 (unless --n / --reps are given)
 * p must be a square (1, 4, 9, ...): otherwise the program prints a note on
 * stderr, nothing on stdout, and exits 0. Output: kernels.h csv lines from
 * pid 0. Exit status 1 if any verification failed, 2 on a usage error.
 */
#include <bspk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

enum { V_MP_EXPECT, V_MP_COUNTED, V_STORE_EXPECT, V_STORE_COUNTED, V_FETCH_EXPECT, NVAR };
static const char *const vname[NVAR] = {"mp-expect", "mp-counted", "store-expect", "store-counted", "fetch-expect"};

static int me, p, P, pi_, pj_;
static long n, N, NN;

#define CK(call)                                                                                           \
    do {                                                                                                   \
        if ((call) != BSPK_OK) bspk_abort("mult_bspk: %s: %s", #call, bspk_error_string());               \
    } while (0)
#define CKP(ptr, what)                                                                                     \
    do {                                                                                                   \
        if (bspk_is_null(ptr)) bspk_abort("mult_bspk: %s: %s", what, bspk_error_string());                 \
    } while (0)

/* Copy cnt doubles from plain memory into a comem region, frame by frame (the fill). */
static void plain_to_region(bspk_ptr dst, const double *src, long cnt) {
    while (cnt > 0) {
        void *base;
        size_t k = bspk_span(dst, &base);
        if (k == 0) bspk_abort("mult_bspk: bspk_span: region too short: %s", bspk_error_string());
        if ((long)k > cnt) k = (size_t)cnt;
        memcpy(base, src, k * sizeof(double));
        src += k;
        cnt -= (long)k;
        dst = bspk_incr(dst, (ptrdiff_t)k);
    }
}

static int grid(int i, int j) { return (((j % P) + P) % P) * P + (((i % P) + P) % P); } /* pid of (pi=i, pj=j) */

/* Scratch for the kernels: sa (the blocks' fill), sat (A transposed), sb
 * (B's columns that straddle two frames), bcol (B's columns). */
static double *sa, *sat, *sb, *C;
static const double **bcol;

/* C += a b for blocks held in comem regions (a not yet transposed), read in
 * place frame by frame (see the top of the file). */
static void multiply(bspk_ptr a, bspk_ptr b) {
    for (long e = 0; e < NN;) {
        void *base;
        size_t k = bspk_span(a, &base);
        if (k == 0) bspk_abort("mult_bspk: bspk_span: region too short: %s", bspk_error_string());
        if ((long)k > NN - e) k = (size_t)(NN - e);
        suite_transpose_part(sat, base, e, (long)k, N);
        e += (long)k;
        a = bspk_incr(a, (ptrdiff_t)k);
    }
    for (long e = 0; e < NN;) { /* the span [e, e + k) of B */
        void *base;
        size_t k = bspk_span(b, &base);
        if (k == 0) bspk_abort("mult_bspk: bspk_span: region too short: %s", bspk_error_string());
        if ((long)k > NN - e) k = (size_t)(NN - e);
        const double *x = base;
        long end = e + (long)k;
        for (long c = e / N; c * N < end; c++) {
            long cs = c * N, ce = cs + N;
            if (cs >= e && ce <= end) {
                bcol[c] = x + (cs - e); /* the whole column lies in this frame */
            } else {                    /* this frame's part of a straddling column */
                long lo = cs > e ? cs : e, hi = ce < end ? ce : end;
                memcpy(sb + lo, x + (lo - e), (size_t)(hi - lo) * sizeof *sb);
                bcol[c] = sb + cs;
            }
        }
        e = end;
        b = bspk_incr(b, (ptrdiff_t)k);
    }
    suite_block_mult_cols(C, sat, bcol, N);
}

/* One multiplication C = A B with variant v. */
static void run(int v, bspk_ptr own_a, bspk_ptr own_b, bspk_ptr buf_a, bspk_ptr buf_b, const bspk_ptr *rem_a,
                const bspk_ptr *rem_b, const bspk_ptr *rem_own_a, const bspk_ptr *rem_own_b) {
    int mp = v == V_MP_EXPECT || v == V_MP_COUNTED;
    int expect = v == V_MP_EXPECT || v == V_STORE_EXPECT || v == V_FETCH_EXPECT;
    memset(C, 0, (size_t)NN * sizeof *C);
    for (int l = 0; l <= P; l++) {
        if (l < P) {
            /* round l's communication */
            int dest_a = grid(pi_, l - pi_ - pj_);         /* ((2P - pi - pj + l) mod P)*P + pi */
            int dest_b = grid(l - pi_ - pj_, pj_);         /* ((2P - pi - pj + l) mod P) + pj*P */
            if (mp) {
                CK(bspk_send(dest_a, own_a, (size_t)NN));
                CK(bspk_send(dest_b, own_b, (size_t)NN));
                if (expect) CK(bspk_expect(2));
            } else if (v == V_STORE_EXPECT || v == V_STORE_COUNTED) {
                CK(bspk_copy(rem_a[dest_a], own_a, (size_t)NN));
                CK(bspk_copy(rem_b[dest_b], own_b, (size_t)NN));
                if (expect) CK(bspk_expect(2)); /* self-stores included (rule 5) */
            } else { /* fetch (Fig. 8) */
                int k = (pi_ + pj_ + l) % P;
                int fa = grid(pi_, k), fb = grid(k, pj_);
                CK(bspk_copy(buf_a, rem_own_a[fa], (size_t)NN));
                CK(bspk_copy(buf_b, rem_own_b[fb], (size_t)NN));
                /* my A and B blocks are fetched once each (by myself: a local
                   copy, counted here too, rule 5) */
                CK(bspk_expect(2));
            }
        }
        if (l > 0) {
            /* round l-1's multiplication (its blocks arrived at the last boundary) */
            if (mp) {
                int kput = ((l - 1 - pi_ - pj_) % P + P) % P;
                int src_a = grid(pi_, kput);
                bspk_ptr m1 = bspk_recv(), m2 = bspk_recv();
                if (bspk_is_null(m1) || bspk_is_null(m2) || !bspk_is_null(bspk_recv()))
                    bspk_abort("mult_bspk: round %d: expected exactly 2 messages", l - 1);
                /* by sender pid, then send order: A is the one from src_a (the first if both are) */
                bspk_ptr ma = m1, mb = m2;
                if (bspk_sender_id(m1) != src_a) { ma = m2; mb = m1; }
                if (bspk_nelems(ma) != (size_t)NN || bspk_nelems(mb) != (size_t)NN)
                    bspk_abort("mult_bspk: round %d: message of wrong length", l - 1);
                multiply(ma, mb);
                CK(bspk_free(ma));
                CK(bspk_free(mb));
            } else {
                multiply(buf_a, buf_b);
            }
        }
        if (l < P) CK(bspk_sync());
    }
}

static void usage(void) {
    fprintf(stderr, "usage: bspkrun -n P mult_bspk [--n N] [--reps R] [--variants a,b,...] [--quick]\n"
                    "  variants: mp-expect mp-counted store-expect store-counted fetch-expect (default all)\n"
                    "  --quick: n = 192, reps = 10; p must be a square (1, 4, 9, ...)\n");
}

int main(int argc, char **argv) {
    if (bspk_init(&argc, &argv) != BSPK_OK) {
        fprintf(stderr, "mult_bspk: bspk_init: %s\n", bspk_error_string());
        return 1;
    }
    me = bspk_pid();
    p = bspk_nprocs();
    suite_app_opts o;
    int reps, want[NVAR];
    char err[256];
    if (suite_parse_app(argc, argv, vname, NVAR, 0, &o, want, err, sizeof err)) {
        if (me == 0) fprintf(stderr, "mult_bspk: %s\n", err), usage();
        bspk_finalize();
        return 2;
    }
    n = o.n > 0 ? (long)o.n : o.quick ? 192 : 576;
    reps = o.reps > 0 ? o.reps : o.quick ? 10 : 5;
    P = 0;
    while ((P + 1) * (P + 1) <= p) P++;
    if (P * P != p) {
        if (me == 0) fprintf(stderr, "mult_bspk: p = %d is not a square: skipped\n", p);
        bspk_finalize();
        return 0;
    }
    if (n % P) {
        if (me == 0) fprintf(stderr, "mult_bspk: n = %ld is not a multiple of sqrt(p) = %d\n", n, P);
        bspk_finalize();
        return 2;
    }
    N = n / P;
    NN = N * N;
    pi_ = me % P;
    pj_ = me / P;

    /* Own blocks (send/store/fetch sources) and receive buffers (store/fetch). */
    bspk_ptr own_a = bspk_malloc("mult_own_a", me, (size_t)NN, sizeof(double));
    bspk_ptr own_b = bspk_malloc("mult_own_b", me, (size_t)NN, sizeof(double));
    bspk_ptr buf_a = bspk_malloc("mult_a", me, (size_t)NN, sizeof(double));
    bspk_ptr buf_b = bspk_malloc("mult_b", me, (size_t)NN, sizeof(double));
    CKP(own_a, "bspk_malloc mult_own_a");
    CKP(own_b, "bspk_malloc mult_own_b");
    CKP(buf_a, "bspk_malloc mult_a");
    CKP(buf_b, "bspk_malloc mult_b");
    sa = malloc((size_t)NN * sizeof *sa);
    sat = malloc((size_t)NN * sizeof *sat);
    sb = malloc((size_t)NN * sizeof *sb);
    C = malloc((size_t)NN * sizeof *C);
    bcol = malloc((size_t)N * sizeof *bcol);
    bspk_ptr *rem = malloc((size_t)4 * p * sizeof *rem);
    if (!sa || !sat || !sb || !C || !bcol || !rem) bspk_abort("mult_bspk: out of memory");
    suite_fill_block(sa, 'A', N, pi_, pj_);
    plain_to_region(own_a, sa, NN);
    suite_fill_block(sb, 'B', N, pi_, pj_);
    plain_to_region(own_b, sb, NN);
    bspk_ptr *rem_a = rem, *rem_b = rem + p, *rem_own_a = rem + 2 * p, *rem_own_b = rem + 3 * p;
    for (int j = 0; j < p; j++) {
        rem_a[j] = bspk_lookup("mult_a", j);
        rem_b[j] = bspk_lookup("mult_b", j);
        rem_own_a[j] = bspk_lookup("mult_own_a", j);
        rem_own_b[j] = bspk_lookup("mult_own_b", j);
        CKP(rem_a[j], "bspk_lookup");
        CKP(rem_b[j], "bspk_lookup");
        CKP(rem_own_a[j], "bspk_lookup");
        CKP(rem_own_b[j], "bspk_lookup");
    }
    CK(bspk_sync());
    /* the lookups are exact from here on (bspk.h: resolved by the end of the superstep) */
    for (int j = 0; j < p; j++) {
        rem_a[j] = bspk_lookup("mult_a", j);
        rem_b[j] = bspk_lookup("mult_b", j);
        rem_own_a[j] = bspk_lookup("mult_own_a", j);
        rem_own_b[j] = bspk_lookup("mult_own_b", j);
    }

    double *t = malloc((size_t)reps * sizeof *t);
    bspk_ptr rep = bspk_malloc("", 0, (size_t)reps + 2, sizeof(double));
    CKP(rep, "bspk_malloc");
    double *mx = malloc((size_t)reps * sizeof *mx);
    if (!t || !mx) bspk_abort("mult_bspk: out of memory");
    int status = 0;
    for (int v = 0; v < NVAR; v++) {
        if (!want[v]) continue;
        double sum = 0;
        for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
            CK(bspk_sync());             /* counted: a barrier, so the processes start together */
            double t0 = suite_now();
            run(v, own_a, own_b, buf_a, buf_b, rem_a, rem_b, rem_own_a, rem_own_b);
            double dt = suite_now() - t0;
            if (r >= 0) {
                t[r] = dt;
                sum += dt;
            }
        }
        long bad = suite_check_c(C, n, N, pi_, pj_);
        if (bad) fprintf(stderr, "mult_bspk: %s: pid %d: %ld wrong entries of C\n", vname[v], me, bad);
        /* report (bad, sum, t[0..reps)) to pid 0 */
        double *rv = bspk_elemP(rep);
        if (!rv || bspk_span(rep, (void **)&rv) < (size_t)reps + 2)
            bspk_abort("mult_bspk: report region not contiguous");
        rv[0] = (double)bad;
        rv[1] = sum;
        memcpy(rv + 2, t, (size_t)reps * sizeof *t);
        CK(bspk_send(0, rep, (size_t)reps + 2));
        CK(bspk_expect(me == 0 ? p : 0));
        CK(bspk_sync());
        if (me == 0) {
            double nbad = 0, avg = 0;
            for (int r = 0; r < reps; r++) mx[r] = 0;
            for (bspk_ptr m; !bspk_is_null(m = bspk_recv());) {
                double *x;
                if (bspk_span(m, (void **)&x) < (size_t)reps + 2) bspk_abort("mult_bspk: short report");
                nbad += x[0];
                if (x[1] / reps > avg) avg = x[1] / reps;
                for (int r = 0; r < reps; r++)
                    if (x[2 + r] > mx[r]) mx[r] = x[2 + r];
                CK(bspk_free(m));
            }
            int ok = nbad == 0;
            if (!ok) status = 1;
            suite_emit("Mult", "Cannon", "bspk", vname[v], p, 0, n, suite_median(mx, reps), avg, reps, ok);
        }
    }
    /* every process learns the status (pid 0 decides it) */
    bspk_ptr st = bspk_malloc("", 0, 1, sizeof(int));
    CKP(st, "bspk_malloc");
    *(int *)bspk_elemP(st) = status;
    if (me == 0)
        for (int j = 0; j < p; j++) CK(bspk_send(j, st, 1));
    CK(bspk_expect(1));
    CK(bspk_sync());
    bspk_ptr m = bspk_recv();
    CKP(m, "bspk_recv status");
    status = *(int *)bspk_elemP(m);
    CK(bspk_free(m));
    CK(bspk_free(st));
    CK(bspk_free(rep));
    free(t);
    free(mx);
    free(sa);
    free(sat);
    free(sb);
    free(C);
    free((void *)bcol);
    free(rem);
    CK(bspk_finalize());
    return status;
}
