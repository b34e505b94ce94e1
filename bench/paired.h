/*
 * bench/paired.h -- what the programs that measure BSPk and Open MPI in the
 * same processes (bench/bsplib/paired_bench.c, bench/suite/as_paired.c)
 * share: a chunk's times reduced to the slowest process, and the core round
 * trip probe. This VM's host moves its two vCPUs between near
 * and far placements within a second (a cache line's round trip between the
 * cores 0.05-0.1 us or 0.3-0.6 us), and every small superstep of either
 * library moves with it; the programs print the round trip of the moment next
 * to their pairs of chunks.
 *
 *   pp_map(&probe, me, p)   collective (MPI_COMM_WORLD): on one host, with a
 *                           CPU per process, pids 0 and 1 map one line of a
 *                           /dev/shm file (removed again at once); elsewhere,
 *                           and oversubscribed (the two spinning ends could
 *                           share a CPU), *probe stays NULL everywhere.
 *   pp_round_trip(probe, me) collective: MPI_Barrier, then pids 0 and 1
 *                           ping-pong the line 200 times; returns the round
 *                           trip in seconds at pids 0 and 1, 0 elsewhere and
 *                           without a probe.
 *   pp_slowest(times, reps, gath, me, p)  collective: this process's `reps`
 *                           repetition times to pid 0 (MPI_Gather into gath,
 *                           p * reps doubles), where gath[r] becomes the
 *                           slowest process's time of repetition r; returns 1
 *                           at pid 0 (the caller takes its median), 0 elsewhere.
 *   pp_loop_slowest(secs, reps) collective: this process's loop time (secs for
 *                           reps repetitions) as an average per repetition,
 *                           the slowest process's at pid 0 (MPI_Reduce, MAX),
 *                           0 elsewhere.
 * Needs <mpi.h> included first.
 */
#ifndef BSPK_BENCH_PAIRED_H
#define BSPK_BENCH_PAIRED_H

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static inline double pp_round_trip(_Atomic long *probe, int me) {
    enum { N = 200 };
    static long v = 0; /* both ends count alike (the line starts at 0) */
    MPI_Barrier(MPI_COMM_WORLD);
    if (!probe || me > 1) return 0;
    double t0 = MPI_Wtime();
    for (int i = 0; i < N; i++, v += 2) {
        if (me == 0) {
            atomic_store_explicit(probe, v + 1, memory_order_release);
            while (atomic_load_explicit(probe, memory_order_acquire) != v + 2) {}
        } else {
            while (atomic_load_explicit(probe, memory_order_acquire) != v + 1) {}
            atomic_store_explicit(probe, v + 2, memory_order_release);
        }
    }
    return (MPI_Wtime() - t0) / N;
}

static inline void pp_map(_Atomic long **probe, int me, int p) {
    MPI_Comm node;
    int nsize;
    *probe = NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &nsize);
    MPI_Comm_free(&node);
    if (nsize != p || p < 2 || p > sysconf(_SC_NPROCESSORS_ONLN)) return; /* (the same on every process) */
    long id = me == 0 ? (long)getpid() : 0;
    MPI_Bcast(&id, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    char name[64];
    snprintf(name, sizeof name, "/dev/shm/bspk-paired-probe-%ld", id);
    int fd = -1;
    if (me == 0) {
        fd = open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0 && ftruncate(fd, 4096) != 0) {
            close(fd);
            fd = -1;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 1) fd = open(name, O_RDWR);
    if (me <= 1 && fd >= 0) {
        void *a = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (a != MAP_FAILED) *probe = (_Atomic long *)a;
        close(fd);
    }
    int have = me > 1 || *probe != NULL, all = 0;
    MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) unlink(name);
    if (!all) *probe = NULL; /* (no probe anywhere unless both ends have it) */
}

static inline int pp_slowest(double *times, int reps, double *gath, int me, int p) {
    MPI_Gather(times, reps, MPI_DOUBLE, gath, reps, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (me != 0) return 0;
    for (int r = 0; r < reps; r++)
        for (int j = 1; j < p; j++)
            if (gath[(size_t)j * reps + r] > gath[r]) gath[r] = gath[(size_t)j * reps + r];
    return 1;
}

static inline double pp_loop_slowest(double secs, int reps) {
    double mine = secs / reps, slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    return slowest;
}

#endif /* BSPK_BENCH_PAIRED_H */
