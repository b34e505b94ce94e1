/*
 * scan -- parallel prefix sum with fetches: Algorithm 1 of "Formal semantics
 * for the DRMA programming style subset of BSPlib" (Tesson, Loulergue):
 *
 *   i := 1
 *   while 2^(i-1) < p:                 (the paper writes <=; the last round
 *     if pid >= 2^(i-1): get(pid - 2^(i-1), X, Xin)     would fetch nothing)
 *     sync
 *     if pid >= 2^(i-1): X := Xin + X
 *     i := i + 1
 *
 * Here X is a vector of m doubles in the named region ("X", pid), so each get
 * is a bspk_copy fetching the whole vector. A fetch issued in a superstep sees
 * X as its owner leaves that superstep (the owner adds Xin only after the
 * sync), which is exactly what the algorithm needs. Process j is fetched from
 * by j + 2^(i-1), if that exists: bspk_expect counts it.
 *
 * Process j starts with X[k] = j * 1000 + k; the result must be
 * X[k] = sum over i <= j of (i * 1000 + k), checked exactly on every process.
 *
 * Usage: bspkrun -n P scan [--m M]
 */
#include <bspk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_util.h"

int main(int argc, char **argv) {
    size_t m = 100000;
    if (bspk_init(&argc, &argv) != BSPK_OK) {
        /* bspk_init has printed why on stderr (unless BSPK_ERRORS=quiet) */
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--m") && i + 1 < argc) m = strtoull(argv[++i], NULL, 10);
        else bspk_abort("usage: scan [--m M] (unknown argument '%s')", argv[i]);
    }
    int P = bspk_nprocs(), me = bspk_pid();
    bspk_ptr X = bspk_malloc("X", me, m, sizeof(double));
    bspk_ptr Xin = bspk_malloc("", 0, m, sizeof(double));
    double *x = malloc(m * sizeof(double)), *xin = malloc(m * sizeof(double));
    if (bspk_is_null(X) || bspk_is_null(Xin) || !x || !xin) bspk_abort("out of memory: %s", bspk_error_string());
    for (size_t k = 0; k < m; k++) x[k] = (double)me * 1000.0 + (double)k;
    to_comem(X, x, m);
    if (bspk_sync() != BSPK_OK) bspk_abort("sync: %s", bspk_error_string());  /* registrations known */

    double t0 = bspk_time();
    int rounds = 0;
    for (int d = 1; d < P; d *= 2, rounds++) {
        if (bspk_expect(me + d < P ? 1 : 0) != BSPK_OK) bspk_abort("expect: %s", bspk_error_string());
        if (me >= d && bspk_copy(Xin, bspk_lookup("X", me - d), m) != BSPK_OK)
            bspk_abort("copy: %s", bspk_error_string());
        if (bspk_sync() != BSPK_OK) bspk_abort("sync: %s", bspk_error_string());
        if (me >= d) {
            from_comem(x, X, m);
            from_comem(xin, Xin, m);
            for (size_t k = 0; k < m; k++) x[k] += xin[k];
            to_comem(X, x, m);
        }
    }
    double elapsed = bspk_time() - t0;

    from_comem(x, X, m);
    double bad = 0;
    for (size_t k = 0; k < m; k++) {
        double want = 1000.0 * (double)me * (double)(me + 1) / 2.0 + (double)(me + 1) * (double)k;
        if (x[k] != want) bad = 1;
    }
    double worst = max_at_pid0(bad);
    if (me == 0)
        printf("scan: prefix sums of %zu-element vectors over %d processes in %d fetch rounds, %.3f s: %s\n", m, P,
               rounds, elapsed, worst == 0 ? "all exact, ok" : "WRONG");
    free(x);
    free(xin);
    bspk_finalize();
    return me == 0 && worst != 0 ? 1 : 0;
}
