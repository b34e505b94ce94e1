/*
 * bench/bsplib/hp_common.h -- what hp_bench.c (BSPlib on BSPk) and its Open
 * MPI twin mpi_hp_bench.c share, so both do exactly the same local work: the
 * command line, the bytes of each process's block, and the repetitions per
 * block size.
 */
#ifndef BSPK_BENCH_HP_COMMON_H
#define BSPK_BENCH_HP_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Byte i of pid's block. */
static inline unsigned char hp_val(int pid, size_t i) { return (unsigned char)(pid * 37 + i * 11 + (i >> 12)); }

/* Timed supersteps per block of n bytes (the same on every process): 1000 up
 * to 64 KiB, 256 MiB / n above, at least 10. */
static inline int hp_reps(size_t n) {
    if (n <= 65536) return 1000;
    size_t r = ((size_t)256 << 20) / n;
    return r < 10 ? 10 : (int)r;
}

/* --min BYTES --max BYTES (defaults 4096, 4 MiB). Returns 0, or 2 after
 * printing the usage. */
static inline int hp_parse(int argc, char **argv, size_t *nmin, size_t *nmax) {
    *nmin = 4096;
    *nmax = (size_t)4 << 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--min") && i + 1 < argc) *nmin = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--max") && i + 1 < argc) *nmax = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: %s [--min BYTES] [--max BYTES]\n", argv[0]);
            return 2;
        }
    }
    if (*nmax > (size_t)1 << 30 || *nmin == 0 || *nmin > *nmax) {
        fprintf(stderr, "%s: need 0 < --min <= --max <= 1 GiB\n", argv[0]);
        return 2;
    }
    return 0;
}

#endif
