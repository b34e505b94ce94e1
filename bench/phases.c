/*
 * bench/phases -- where the time of a one-word total exchange goes, phase by
 * phase, on every process (the As suite's "Full" test, [RMA §3]: every
 * process sends one 32-bit word to every process, itself included).
 *
 *   bspkrun -n P [--provider NAME] [--bind core] phases [--reps R] [--counted]
 *
 * Per repetition, timed on each process with the time-stamp counter (x86;
 * elsewhere clock_gettime), converted to nanoseconds:
 *   send self    bspk_send of the word to this process;
 *   send others  bspk_send of the word to each other process;
 *   sync         bspk_expect(P) (unless --counted) and bspk_sync: waiting
 *                for the others' words and taking them in;
 *   recv+free    bspk_recv, reading the word, bspk_free, for all P messages
 *                (outside the superstep, but on the path to the next one:
 *                a process sends its next words only after this);
 *   total        the four.
 * Prints, per process, the median and the 10th / 90th percentiles over R
 * repetitions (after R/10 warm-up ones). Run at p = 1 too: there no phase
 * waits for another process, so the p = 1 figures are the runtime's own
 * work for a message to oneself. Every received word is checked (sender and
 * repetition); a wrong one aborts the job.
 */
#include <bspk.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static uint64_t ticks(void) { return __rdtsc(); }
#else
static uint64_t ticks(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
#endif

enum { SEND_SELF, SEND_OTHERS, SYNC, RECV_FREE, TOTAL, NPHASES };
static const char *const phase_names[NPHASES] = {"send self", "send others", "sync", "recv+free", "total"};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Nanoseconds per tick, measured against CLOCK_MONOTONIC over 20 ms. */
static double ns_per_tick(void) {
    double t0 = now_s();
    uint64_t k0 = ticks();
    while (now_s() - t0 < 0.02) {
    }
    return (now_s() - t0) * 1e9 / (double)(ticks() - k0);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (bspk_init(&argc, &argv) != BSPK_OK) {
        fprintf(stderr, "phases: bspk_init: %s\n", bspk_error_string());
        return 1;
    }
    const int me = bspk_pid(), p = bspk_nprocs();
    long reps = 20000;
    int counted = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atol(argv[++i]);
        else if (!strcmp(argv[i], "--counted")) counted = 1;
        else {
            if (me == 0) fprintf(stderr, "usage: phases [--reps R] [--counted]\n");
            return bspk_finalize(), 2;
        }
    }
    if (reps < 10) {
        if (me == 0) fprintf(stderr, "phases: --reps must be at least 10\n");
        return bspk_finalize(), 2;
    }
    /* word j of src goes to process j */
    bspk_ptr src = bspk_malloc("", 0, (size_t)p, sizeof(uint32_t));
    if (bspk_is_null(src)) bspk_abort("phases: bspk_malloc: %s", bspk_error_string());
    uint64_t *t = malloc(sizeof(uint64_t) * (size_t)reps * NPHASES);
    if (!t) bspk_abort("phases: out of memory");
    const double ns = ns_per_tick();
    bspk_sync();
    for (long r = -reps / 10; r < reps; r++) {
        const uint32_t stamp = (uint32_t)(r + reps / 10) * 1024u;
        for (int j = 0; j < p; j++) *(uint32_t *)bspk_elemP(bspk_incr(src, j)) = stamp + (uint32_t)me;
        uint64_t k0 = ticks();
        if (bspk_send(me, bspk_incr(src, me), 1) != BSPK_OK) bspk_abort("phases: bspk_send: %s", bspk_error_string());
        uint64_t k1 = ticks();
        for (int i = 1; i < p; i++) {
            int j = (me + i) % p;
            if (bspk_send(j, bspk_incr(src, j), 1) != BSPK_OK)
                bspk_abort("phases: bspk_send: %s", bspk_error_string());
        }
        uint64_t k2 = ticks();
        if (!counted && bspk_expect(p) != BSPK_OK) bspk_abort("phases: bspk_expect: %s", bspk_error_string());
        if (bspk_sync() != BSPK_OK) bspk_abort("phases: bspk_sync: %s", bspk_error_string());
        uint64_t k3 = ticks();
        int n = 0;
        for (bspk_ptr in; !bspk_is_null(in = bspk_recv()); n++) {
            int from = bspk_sender_id(in);
            uint32_t w = *(const uint32_t *)bspk_elemP(in);
            if (w != stamp + (uint32_t)from)
                bspk_abort("phases: pid %d, repetition %ld: word %#x from pid %d, expected %#x", me, r, w, from,
                           stamp + (uint32_t)from);
            bspk_free(in);
        }
        uint64_t k4 = ticks();
        if (n != p) bspk_abort("phases: pid %d, repetition %ld: %d messages, expected %d", me, r, n, p);
        if (r < 0) continue;
        t[SEND_SELF * reps + r] = k1 - k0;
        t[SEND_OTHERS * reps + r] = k2 - k1;
        t[SYNC * reps + r] = k3 - k2;
        t[RECV_FREE * reps + r] = k4 - k3;
        t[TOTAL * reps + r] = k4 - k0;
    }
    /* one process's table at a time, in pid order (counted supersteps between) */
    for (int q = 0; q < p; q++) {
        if (q == me) {
            if (me == 0)
                printf("# phases: p=%d, one 32-bit word to every process, %s; ns per repetition over %ld\n"
                       "%4s %-12s %8s %8s %8s\n",
                       p, counted ? "counted" : "bspk_expect(p)", reps, "pid", "phase", "median", "p10", "p90");
            for (int f = 0; f < NPHASES; f++) {
                uint64_t *v = t + (size_t)f * (size_t)reps;
                qsort(v, (size_t)reps, sizeof *v, cmp_u64);
                printf("%4d %-12s %8.0f %8.0f %8.0f\n", me, phase_names[f], v[reps / 2] * ns, v[reps / 10] * ns,
                       v[reps - 1 - reps / 10] * ns);
            }
            fflush(stdout);
        }
        bspk_sync();
    }
    free(t);
    bspk_free(src);
    return bspk_finalize() ? 1 : 0;
}
