/*
 * mpi_hp_bench -- the Open MPI twin of hp_bench.c: every process moves one
 * block of n bytes to (MPI_Put) or from (MPI_Get) the next process in an
 * MPI_Win_allocate window, then MPI_Win_fence: what a BSPlib over MPI does
 * for a block-sized bsp_hpput / bsp_hpget and its bsp_sync. Same sizes,
 * repetition counts, verification and output as hp_bench (variants "put",
 * "get"; copied is -1: MPI keeps no such counter).
 *
 *   mpirun -n P mpi_hp_bench [--min BYTES] [--max BYTES]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hp_common.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    size_t nmin, nmax;
    if (hp_parse(argc, argv, &nmin, &nmax)) MPI_Abort(MPI_COMM_WORLD, 2);
    int me, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    const int R = (me + 1) % P;
    /* window: [0, nmax) get source (this process's block), [nmax, 2 nmax) put destination */
    unsigned char *win_mem, *into = malloc(nmax);
    MPI_Win win;
    MPI_Win_allocate((MPI_Aint)(2 * nmax), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_mem, &win);
    unsigned char *mine = malloc(nmax);
    for (size_t i = 0; i < nmax; i++) mine[i] = win_mem[i] = hp_val(me, i);
    MPI_Win_fence(0, win);
    static const char *const names[] = {"put", "get"};
    int bad = 0;
    for (size_t n = nmin; n <= nmax; n *= 4) {
        for (int v = 0; v < 2; v++) {
            memset(win_mem + nmax, 0, n);
            memset(into, 0, n);
            MPI_Win_fence(0, win);
            const int reps = hp_reps(n);
            double t0 = 0;
            for (int r = 0; r < reps + 3; r++) {
                if (r == 3) t0 = MPI_Wtime();
                if (v == 0)
                    MPI_Put(mine, (int)n, MPI_BYTE, R, (MPI_Aint)nmax, (int)n, MPI_BYTE, win);
                else
                    MPI_Get(into, (int)n, MPI_BYTE, R, 0, (int)n, MPI_BYTE, win);
                MPI_Win_fence(0, win);
            }
            double t = (MPI_Wtime() - t0) / reps, mx = 0;
            const unsigned char *got = v == 0 ? win_mem + nmax : into;
            const int from = v == 0 ? (me + P - 1) % P : R;
            for (size_t i = 0; i < n; i++)
                if (got[i] != hp_val(from, i)) { bad++; break; }
            MPI_Reduce(&t, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            int allok = 0, ok = bad == 0;
            MPI_Reduce(&ok, &allok, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
            if (me == 0) printf("csv,mpi,%s,%d,%zu,%.9g,-1,%d\n", names[v], P, n, mx, allok);
            fflush(stdout);
        }
    }
    if (bad) fprintf(stderr, "mpi_hp_bench: rank %d: %d blocks wrong\n", me, bad);
    MPI_Win_free(&win);
    free(into);
    free(mine);
    MPI_Finalize();
    return bad != 0;
}
