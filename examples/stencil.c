/*
 * stencil -- the DSM program of the BSPk paper, Figure 5, as a 2D Jacobi
 * heat-diffusion solver. The n x n grid is split into slices of rows; the
 * top edge is held at 1.0, the other edges at 0.0. Every iteration replaces
 * each interior point by the mean of its four neighbours.
 *
 *   (0-3) FromNorth/FromSouth/ToNorth/ToSouth = bspk_malloc(name, MyId, n, 8)
 *   (4)   MyArray = malloc(...)
 *   (5-6) NorthBufName = bspk_lookup("FromSouth", north)
 *         SouthBufName = bspk_lookup("FromNorth", south)
 *   (7)   bspk_sync()
 *   per iteration (one superstep):
 *   (8)   bspk_expect(numNeighbors)       -- the barrier costs nothing [BSPk §6.2]
 *   (9)   compute the new first row (needed by north) into ToNorth
 *   (10)  bspk_copy(NorthBufName, ToNorth, n)
 *   (11)  compute the new last row (needed by south) into ToSouth
 *   (12)  bspk_copy(SouthBufName, ToSouth, n)
 *   (13)  compute the rest of MyArray, using FromNorth and FromSouth as they
 *         were stored in the last superstep (the neighbours are storing the
 *         next values into them meanwhile: they appear only after the sync)
 *   (14)  bspk_sync()
 * One extra superstep before the loop stores the initial boundary rows.
 *
 * Every process then runs the sequential solver and compares its rows; pid 0
 * prints the largest absolute difference (exit status 1 if above 1e-12).
 *
 * Usage: bspkrun -n P stencil [--n N] [--iters K]
 */
#include <bspk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_util.h"

/* New value of row i (global index gi) from the rows above/below. */
static void update_row(double *out, const double *up, const double *row, const double *down, size_t n, size_t gi,
                       size_t N) {
    if (gi == 0 || gi == N - 1) {  /* fixed edges */
        memcpy(out, row, n * sizeof(double));
        return;
    }
    out[0] = row[0];
    out[n - 1] = row[n - 1];
    for (size_t j = 1; j + 1 < n; j++) out[j] = 0.25 * (up[j] + down[j] + row[j - 1] + row[j + 1]);
}

static void init_row(double *row, size_t n, size_t gi) {
    for (size_t j = 0; j < n; j++) row[j] = gi == 0 ? 1.0 : 0.0;
}

#define DIE(...) bspk_abort(__VA_ARGS__)

int main(int argc, char **argv) {
    size_t N = 256;
    int iters = 200;
    if (bspk_init(&argc, &argv) != BSPK_OK) {
        /* bspk_init has printed why on stderr (unless BSPK_ERRORS=quiet) */
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc) N = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else DIE("usage: stencil [--n N] [--iters K] (unknown argument '%s')", argv[i]);
    }
    int P = bspk_nprocs(), MyId = bspk_pid();
    if (N < 3 || N < (size_t)P) DIE("need n >= 3 and n >= p (n = %zu, p = %d)", N, P);
    size_t r0 = (size_t)MyId * N / (size_t)P, r1 = (size_t)(MyId + 1) * N / (size_t)P, rows = r1 - r0;
    int north = MyId - 1, south = MyId + 1;  /* -1 / P: no neighbour */
    int numNeighbors = (north >= 0) + (south < P);

    /* (0)-(6) */
    bspk_ptr FromNorth = bspk_malloc("FromNorth", MyId, N, sizeof(double));
    bspk_ptr FromSouth = bspk_malloc("FromSouth", MyId, N, sizeof(double));
    bspk_ptr ToNorth = bspk_malloc("ToNorth", MyId, N, sizeof(double));
    bspk_ptr ToSouth = bspk_malloc("ToSouth", MyId, N, sizeof(double));
    if (bspk_is_null(FromNorth) || bspk_is_null(FromSouth) || bspk_is_null(ToNorth) || bspk_is_null(ToSouth))
        DIE("bspk_malloc: %s", bspk_error_string());
    double *MyArray = malloc(rows * N * sizeof(double)), *NewArray = malloc(rows * N * sizeof(double));
    double *up = malloc(N * sizeof(double)), *down = malloc(N * sizeof(double));
    if (!MyArray || !NewArray || !up || !down) DIE("out of memory");
    for (size_t i = 0; i < rows; i++) init_row(MyArray + i * N, N, r0 + i);
    bspk_ptr NorthBufName = BSPK_NULL, SouthBufName = BSPK_NULL;
    if (north >= 0) NorthBufName = bspk_lookup("FromSouth", north);
    if (south < P) SouthBufName = bspk_lookup("FromNorth", south);
    if (bspk_sync() != BSPK_OK) DIE("sync: %s", bspk_error_string());   /* (7) */

    /* The initial boundary rows. */
    if (bspk_expect(numNeighbors) != BSPK_OK) DIE("expect: %s", bspk_error_string());
    to_comem(ToNorth, MyArray, N);
    to_comem(ToSouth, MyArray + (rows - 1) * N, N);
    if (north >= 0 && bspk_copy(NorthBufName, ToNorth, N) != BSPK_OK) DIE("copy: %s", bspk_error_string());
    if (south < P && bspk_copy(SouthBufName, ToSouth, N) != BSPK_OK) DIE("copy: %s", bspk_error_string());
    if (bspk_sync() != BSPK_OK) DIE("sync: %s", bspk_error_string());

    double t0 = bspk_time();
    for (int it = 0; it < iters; it++) {
        if (bspk_expect(numNeighbors) != BSPK_OK) DIE("expect: %s", bspk_error_string());  /* (8) */
        /* Ghost rows: what the neighbours stored in the last superstep. */
        if (north >= 0) from_comem(up, FromNorth, N);
        if (south < P) from_comem(down, FromSouth, N);
        const double *above = north >= 0 ? up : NULL, *below = south < P ? down : NULL;
#define ROW(i) (MyArray + (size_t)(i) * N)
#define ABOVE(i) ((i) == 0 ? above : ROW((i) - 1))
#define BELOW(i) ((i) + 1 == rows ? below : ROW((i) + 1))
        /* (9)-(10): the new first row, needed by north */
        update_row(NewArray, ABOVE(0), ROW(0), BELOW(0), N, r0, N);
        if (north >= 0) {
            to_comem(ToNorth, NewArray, N);
            if (bspk_copy(NorthBufName, ToNorth, N) != BSPK_OK) DIE("copy: %s", bspk_error_string());
        }
        /* (11)-(12): the new last row, needed by south */
        size_t last = rows - 1;
        update_row(NewArray + last * N, ABOVE(last), ROW(last), BELOW(last), N, r0 + last, N);
        if (south < P) {
            to_comem(ToSouth, NewArray + last * N, N);
            if (bspk_copy(SouthBufName, ToSouth, N) != BSPK_OK) DIE("copy: %s", bspk_error_string());
        }
        /* (13): the rest */
        for (size_t i = 1; i + 1 < rows; i++) update_row(NewArray + i * N, ROW(i - 1), ROW(i), ROW(i + 1), N, r0 + i, N);
        double *t = MyArray;
        MyArray = NewArray;
        NewArray = t;
        if (bspk_sync() != BSPK_OK) DIE("sync: %s", bspk_error_string());  /* (14) */
    }
    double elapsed = bspk_time() - t0;

    /* Sequential reference for my rows (same arithmetic, same order). */
    double *A = malloc(N * N * sizeof(double)), *B = malloc(N * N * sizeof(double));
    if (!A || !B) DIE("out of memory (sequential reference, n = %zu)", N);
    for (size_t i = 0; i < N; i++) init_row(A + i * N, N, i);
    for (int it = 0; it < iters; it++) {
        for (size_t i = 0; i < N; i++)
            update_row(B + i * N, i ? A + (i - 1) * N : NULL, A + i * N, i + 1 < N ? A + (i + 1) * N : NULL, N, i, N);
        double *t = A;
        A = B;
        B = t;
    }
    double maxdiff = 0;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < N; j++) {
            double d = fabs(MyArray[i * N + j] - A[(r0 + i) * N + j]);
            if (d > maxdiff || d != d) maxdiff = d != d ? INFINITY : d;
        }

    double worst = max_at_pid0(maxdiff);
    int status = 0;
    if (MyId == 0) {
        printf("stencil: %zu x %zu grid, %d iterations on %d processes: %.3f s, center %.6f\n", N, N, iters, P,
               elapsed, A[(N / 2) * N + N / 2]);
        printf("max abs difference vs sequential: %.3e (%s)\n", worst, worst <= 1e-12 ? "ok" : "FAILED");
        status = worst <= 1e-12 ? 0 : 1;
    }
    free(A);
    free(B);
    free(MyArray);
    free(NewArray);
    free(up);
    free(down);
    bspk_finalize();
    return status;
}
