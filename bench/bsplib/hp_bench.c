/*
 * hp_bench -- what a block-sized bsp_hpput / bsp_hpget / bsp_put / bsp_get
 * costs per superstep on BSPlib over BSPk: every process moves one block of
 * n bytes to (put variants) or from (get variants) the next process and
 * calls bsp_sync. Its Open MPI twin is mpi_hp_bench.c (MPI_Put / MPI_Get +
 * MPI_Win_fence on an MPI_Win_allocate window, what BSPlib-over-MPI
 * libraries do); bench/hp_bench.sh runs both, and the BSPk side with and
 * without zero copy (BSPK_HP_ZEROCOPY_MIN=off), in one invocation.
 *
 *   bsprun -n P hp_bench [--min BYTES] [--max BYTES]
 *
 * Per (variant, n): 3 untimed supersteps, then 1000 timed ones up to 64 KiB
 * and 256 MiB / n (at least 10) above; the time is the timed loop's average
 * per superstep, maximum over processes. Every block is verified after its loop
 * (each process's block carries its pid and the byte index).
 * Output, pid 0: csv,bsplib,<variant>,<p>,<n>,<seconds>,<copied>,<ok>
 * where copied = bytes_copied per superstep on pid 0 (bspk_stats).
 */
#define _POSIX_C_SOURCE 200809L
#include <bsp.h>
#include <bspk.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hp_common.h"

int main(int argc, char **argv) {
    size_t nmin, nmax;
    if (hp_parse(argc, argv, &nmin, &nmax)) return 2;
    bsp_begin(bsp_nprocs());
    const int me = bsp_pid(), P = bsp_nprocs(), R = (me + 1) % P;
    unsigned char *mine = malloc(nmax), *into = malloc(nmax);
    double *times = malloc(sizeof(double) * (size_t)P);
    if (!mine || !into || !times) bsp_abort("hp_bench: out of memory\n");
    for (size_t i = 0; i < nmax; i++) mine[i] = hp_val(me, i);
    bsp_push_reg(mine, (bsp_size_t)nmax);  /* get sources */
    bsp_push_reg(into, (bsp_size_t)nmax);  /* put destinations */
    bsp_push_reg(times, (bsp_size_t)(sizeof(double) * (size_t)P));
    bsp_sync();
    static const char *const names[] = {"hpput", "put", "hpget", "get"};
    int bad = 0;
    for (size_t n = nmin; n <= nmax; n *= 4) {
        for (int v = 0; v < 4; v++) {
            memset(into, 0, n);
            bsp_sync();
            bspk_stats s0, s1;
            /* the same count on every process (they sync together) */
            const int reps = hp_reps(n);
            double t0 = 0, t = 0;
            for (int r = 0; r < reps + 3; r++) {
                if (r == 3) {
                    bspk_get_stats(&s0);
                    t0 = bsp_time();
                }
                switch (v) {
                case 0: bsp_hpput(R, mine, into, 0, (bsp_size_t)n); break;
                case 1: bsp_put(R, mine, into, 0, (bsp_size_t)n); break;
                case 2: bsp_hpget(R, mine, 0, into, (bsp_size_t)n); break;
                default: bsp_get(R, mine, 0, into, (bsp_size_t)n); break;
                }
                bsp_sync();
            }
            t = bsp_time() - t0;
            bspk_get_stats(&s1);
            const int from = v < 2 ? (me + P - 1) % P : R;
            for (size_t i = 0; i < n; i++)
                if (into[i] != hp_val(from, i)) { bad++; break; }
            double mine_t = t / reps;
            for (int q = 0; q < P; q++) bsp_put(q, &mine_t, times, me * (bsp_size_t)sizeof(double), sizeof(double));
            bsp_sync();
            double mx = 0;
            for (int q = 0; q < P; q++) if (times[q] > mx) mx = times[q];
            if (me == 0)
                printf("csv,bsplib,%s,%d,%zu,%.9g,%.0f,%d\n", names[v], P, n, mx,
                       (double)(s1.bytes_copied - s0.bytes_copied) / reps, bad == 0);
            fflush(stdout);
        }
    }
    if (bad) fprintf(stderr, "hp_bench: pid %d: %d blocks wrong\n", me, bad);
    bsp_end();
    return bad != 0;
}
