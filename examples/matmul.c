/*
 * matmul -- Cannon-style blocked matrix multiplication C = A B on a q x q
 * process grid (p = q^2), after "Portable and efficient BSP RMA benchmarks"
 * Figures 7 (blocks moved with stores: MatMul) and 8 (with fetches: MatMulG).
 *
 * Process (r, c) holds one N x N block (N = n/q, column-major) of A and of B in
 * named comem regions ("A", pid) and ("B", pid). Initially it holds
 * A(r, r+c) and B(r+c, c) (indices mod q); in round k it multiplies the blocks
 * it holds into its block of C, and the blocks move one step round the grid:
 * A to the left, B up. Each round is one superstep with bspk_expect(2):
 *   store variant: bspk_copy(left's A, my A), bspk_copy(upper's B, my B);
 *                  the target of each store counts it;
 *   fetch variant: bspk_copy(my A, right's A), bspk_copy(my B, lower's B);
 *                  the owner of each fetched block counts it.
 * A single buffer per matrix suffices: the copies take effect at the superstep
 * boundary, after this round's multiplication has read the block [BSPk §3].
 * Whole blocks are whole frames, so the runtime copies nothing (BSPK_STATS=1).
 *
 * Every process checks its C block against a sequential product; pid 0 prints
 * time, Gflop/s and the largest difference (exit status 1 if above 1e-9).
 *
 * Usage: bspkrun -n P matmul [--n N] [--variant store|fetch]   (P a perfect square)
 */
#include <bspk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_util.h"

static double a_at(size_t i, size_t j) { return (double)((i * 31 + j * 17) % 97) / 97.0; }
static double b_at(size_t i, size_t j) { return (double)((i * 13 + j * 7) % 89) / 89.0 - 0.5; }

int main(int argc, char **argv) {
    size_t n = 512;
    const char *variant = "store";
    if (bspk_init(&argc, &argv) != BSPK_OK) {
        /* bspk_init has printed why on stderr (unless BSPK_ERRORS=quiet) */
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc) n = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--variant") && i + 1 < argc) variant = argv[++i];
        else bspk_abort("usage: matmul [--n N] [--variant store|fetch] (unknown argument '%s')", argv[i]);
    }
    int fetch = !strcmp(variant, "fetch");
    if (!fetch && strcmp(variant, "store")) bspk_abort("--variant must be store or fetch, not '%s'", variant);
    int P = bspk_nprocs(), me = bspk_pid(), q = 0;
    while ((q + 1) * (q + 1) <= P) q++;
    if (q * q != P) bspk_abort("matmul needs a square number of processes (1, 4, 9, ...), not %d", P);
    if (n % (size_t)q) bspk_abort("n = %zu is not a multiple of sqrt(p) = %d", n, q);
    const size_t N = n / (size_t)q, NN = N * N;
    const int r = me / q, c = me % q;
#define PID(rr, cc) ((((rr) + q) % q) * q + (((cc) + q) % q))

    bspk_ptr A = bspk_malloc("A", me, NN, sizeof(double));
    bspk_ptr B = bspk_malloc("B", me, NN, sizeof(double));
    if (bspk_is_null(A) || bspk_is_null(B)) bspk_abort("bspk_malloc: %s", bspk_error_string());
    double *a = malloc(NN * sizeof(double)), *b = malloc(NN * sizeof(double)), *at = malloc(NN * sizeof(double));
    double *C = calloc(NN, sizeof(double));
    if (!a || !b || !at || !C) bspk_abort("out of memory");
    /* A(r, r+c) and B(r+c, c), column-major: element (i, j) at j*N + i */
    size_t ka = (size_t)((r + c) % q);
    for (size_t j = 0; j < N; j++)
        for (size_t i = 0; i < N; i++) {
            a[j * N + i] = a_at((size_t)r * N + i, ka * N + j);
            b[j * N + i] = b_at(ka * N + i, (size_t)c * N + j);
        }
    to_comem(A, a, NN);
    to_comem(B, b, NN);
    /* Store: left's A and upper's B. Fetch: right's A and lower's B. */
    bspk_ptr Apeer = bspk_lookup("A", fetch ? PID(r, c + 1) : PID(r, c - 1));
    bspk_ptr Bpeer = bspk_lookup("B", fetch ? PID(r + 1, c) : PID(r - 1, c));
    if (bspk_sync() != BSPK_OK) bspk_abort("sync: %s", bspk_error_string());

    double t0 = bspk_time();
    for (int k = 0; k < q; k++) {
        int shift = q > 1 && k + 1 < q;  /* the blocks move on after every round but the last */
        if (bspk_expect(shift ? 2 : 0) != BSPK_OK) bspk_abort("expect: %s", bspk_error_string());
        if (shift) {
            int rc = fetch ? bspk_copy(A, Apeer, NN) : bspk_copy(Apeer, A, NN);
            if (rc == BSPK_OK) rc = fetch ? bspk_copy(B, Bpeer, NN) : bspk_copy(Bpeer, B, NN);
            if (rc != BSPK_OK) bspk_abort("copy: %s", bspk_error_string());
        }
        /* C += A B with A transposed first (columns of a^t against columns of b) */
        from_comem(a, A, NN);
        from_comem(b, B, NN);
        for (size_t j = 0; j < N; j++)
            for (size_t i = 0; i < N; i++) at[i * N + j] = a[j * N + i];
        for (size_t j = 0; j < N; j++)
            for (size_t i = 0; i < N; i++) {
                const double *x = at + i * N, *y = b + j * N;
                double s = 0;
                for (size_t l = 0; l < N; l++) s += x[l] * y[l];
                C[j * N + i] += s;
            }
        if (bspk_sync() != BSPK_OK) bspk_abort("sync: %s", bspk_error_string());
    }
    double elapsed = bspk_time() - t0;

    double maxdiff = 0;
    for (size_t j = 0; j < N; j++)
        for (size_t i = 0; i < N; i++) {
            double s = 0;
            for (size_t l = 0; l < n; l++) s += a_at((size_t)r * N + i, l) * b_at(l, (size_t)c * N + j);
            double d = fabs(C[j * N + i] - s);
            if (d > maxdiff || d != d) maxdiff = d != d ? INFINITY : d;
        }
    double worst = max_at_pid0(maxdiff);
    int status = 0;
    if (me == 0) {
        printf("matmul (%s variant): %zu x %zu on %d processes (%d x %d blocks of %zu): %.3f s, %.2f Gflop/s\n",
               variant, n, n, P, q, q, N, elapsed, 2.0 * (double)n * (double)n * (double)n / elapsed / 1e9);
        printf("max abs difference vs sequential: %.3e (%s)\n", worst, worst <= 1e-9 ? "ok" : "FAILED");
        status = worst <= 1e-9 ? 0 : 1;
    }
    free(a);
    free(b);
    free(at);
    free(C);
    bspk_finalize();
    return status;
}
