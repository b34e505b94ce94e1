/*
 * bench/copy -- DSM stores and fetches (bspk_copy) against raw libfabric RMA
 * (fi_write / fi_read) on the same provider, in the same process and run.
 *
 *   bspkrun -n 2 [--provider tcp|shm] copy [--max BYTES] [--chunks C]
 *
 * Store stream: pid 0 stores n bytes into pid 1's named region every
 * superstep (pid 1: bspk_expect(1), pid 0: bspk_expect(0), so pid 0 may run up
 * to BSPK_MAX_AHEAD supersteps ahead: a stream). Raw: fi_write of n bytes from
 * a registered buffer, at most 16 outstanding, then a message round trip to
 * pid 1 (which progresses its CQ meanwhile). Both: time per operation on pid 0.
 * Fetch: pid 0 fetches n bytes from pid 1's region every superstep (its sync
 * waits for the reply: a round trip). Raw: fi_read of n bytes, waiting for its
 * completion each time.
 * Each size runs C interleaved chunks (raw, BSPk, raw, ...; default 5) and
 * reports the median chunk of each. Destination regions have exactly n bytes,
 * so whole-region copies travel as whole frames: bytes copied stays 0.
 */
#include <bspk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rawfab.h"

static int me;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void sync_or_die(void) {
    if (bspk_sync() != BSPK_OK) bspk_abort("sync: %s", bspk_error_string());
}

/* pid 0 tells pid 1 it is done and waits for the answer; pid 1 progresses
 * its CQ (RMA targets on tcp need it) until told. */
static void raw_handshake(rawfab *r) {
    if (me == 0) {
        rawfab_post_recv(r, 8);
        rawfab_send(r, 1, 8);
        rawfab_wait(r, 2);
    } else {
        rawfab_post_recv(r, 8);
        rawfab_wait(r, 1);
        rawfab_send(r, 0, 8);
        rawfab_wait(r, 1);
    }
}

static double raw_store(rawfab *r, size_t n, int iters) {
    double t0 = bspk_time();
    if (me == 0) {
        int out = 0;
        for (int i = 0; i < iters; i++) {
            while (out == 16) out -= rawfab_poll(r);
            rawfab_rma(r, 1, 1, 0, 0, n);
            out++;
        }
        while (out > 0) out -= rawfab_poll(r);
    }
    raw_handshake(r);
    return (bspk_time() - t0) / iters;
}

static double raw_fetch(rawfab *r, size_t n, int iters) {
    double t0 = bspk_time();
    if (me == 0)
        for (int i = 0; i < iters; i++) {
            rawfab_rma(r, 0, 1, 0, 0, n);
            rawfab_wait(r, 1);
        }
    raw_handshake(r);
    return (bspk_time() - t0) / iters;
}

/* One bspk_copy(dst, src, n) by pid 0 per superstep, counted at pid 1 (the
 * target of a store into its region and of a fetch from it alike). */
static double bspk_copies(bspk_ptr dst, bspk_ptr src, size_t n, int iters) {
    double t0 = bspk_time();
    for (int i = 0; i < iters; i++) {
        bspk_expect(me == 1 ? 1 : 0);
        if (me == 0 && bspk_copy(dst, src, n) != BSPK_OK) bspk_abort("copy: %s", bspk_error_string());
        sync_or_die();
    }
    sync_or_die(); /* counted: pid 0 waits for pid 1 to have applied the last one */
    return (bspk_time() - t0) / iters;
}

int main(int argc, char **argv) {
    size_t max = (size_t)4 << 20;
    int chunks = 5;
    if (bspk_init(&argc, &argv) != BSPK_OK) {
        fprintf(stderr, "bspk_init: %s\n", bspk_error_string());
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max") && i + 1 < argc) max = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--chunks") && i + 1 < argc) chunks = atoi(argv[++i]);
        else bspk_abort("usage: copy [--max BYTES] [--chunks C] (unknown argument '%s')", argv[i]);
    }
    if (bspk_nprocs() != 2) bspk_abort("run with exactly 2 processes (bspkrun -n 2 copy)");
    if (chunks < 1 || chunks > 99) bspk_abort("--chunks must be in [1, 99]");
    me = bspk_pid();
    rawfab raw;
    rawfab_open_caps(&raw, max, FI_MSG | FI_RMA);

    size_t sizes[32];
    int ns = 0;
    for (size_t n = 8; n <= max && ns < 32; n *= (n < 4096 ? 8 : 4)) sizes[ns++] = n;
    /* One named destination region of exactly n bytes per size, on pid 1. */
    bspk_ptr dst[32], peer[32], local[32];
    for (int k = 0; k < ns; k++) {
        dst[k] = bspk_malloc(me == 1 ? "copy_bench" : "", k, sizes[k], 1);
        local[k] = bspk_malloc("", 0, sizes[k], 1);
        if (bspk_is_null(dst[k]) || bspk_is_null(local[k])) bspk_abort("malloc: %s", bspk_error_string());
        memset(bspk_elemP(local[k]), 0, 1);
    }
    sync_or_die();
    for (int k = 0; k < ns; k++) peer[k] = bspk_lookup("copy_bench", k);
    if (me == 0) {
        bspk_stats st;
        bspk_get_stats(&st);
        printf("# bspk copy benchmark, provider %s, frame %llu bytes; times per operation in us, median of %d chunks\n",
               getenv("FI_PROVIDER") ? getenv("FI_PROVIDER") : "?", (unsigned long long)st.frame_size, chunks);
        printf("# store: pid 0 -> pid 1 stream (bspk_copy vs fi_write, 16 outstanding); fetch: round trip (bspk_copy vs fi_read)\n");
        printf("%10s | %10s %10s %7s %10s | %10s %10s %7s %10s | %s\n", "bytes", "store us", "fi_write", "ratio",
               "store MB/s", "fetch us", "fi_read", "ratio", "fetch MB/s", "copied");
    }
    for (int k = 0; k < ns; k++) {
        size_t n = sizes[k];
        int iters = (int)((size_t)(32 << 20) / n);
        if (iters < 20) iters = 20;
        if (iters > 2000) iters = 2000;
        bspk_ptr from_peer = me == 0 ? peer[k] : dst[k];
        double rs[99], bs[99], rf[99], bf[99];
        bspk_stats s0, s1;
        bspk_get_stats(&s0);
        for (int c = 0; c < chunks; c++) {
            rs[c] = raw_store(&raw, n, iters);
            bs[c] = bspk_copies(from_peer, local[k], n, iters); /* store */
            rf[c] = raw_fetch(&raw, n, iters);
            bf[c] = bspk_copies(local[k], from_peer, n, iters); /* fetch */
        }
        bspk_get_stats(&s1);
        qsort(rs, (size_t)chunks, sizeof(double), cmp_double);
        qsort(bs, (size_t)chunks, sizeof(double), cmp_double);
        qsort(rf, (size_t)chunks, sizeof(double), cmp_double);
        qsort(bf, (size_t)chunks, sizeof(double), cmp_double);
        int m = chunks / 2;
        /* pid 1 applies the stores (and pid 0 the fetch replies): report both processes' copies. */
        bspk_ptr cm = bspk_malloc("", 0, 1, sizeof(uint64_t));
        *(uint64_t *)bspk_elemP(cm) = s1.bytes_copied - s0.bytes_copied;
        bspk_send(0, cm, 1);
        bspk_expect(me == 0 ? 2 : 0);
        sync_or_die();
        uint64_t copied = 0;
        for (bspk_ptr in; !bspk_is_null(in = bspk_recv());) {
            copied += *(uint64_t *)bspk_elemP(in);
            bspk_free(in);
        }
        bspk_free(cm);
        if (me == 0)
            printf("%10zu | %10.2f %10.2f %6.2fx %10.1f | %10.2f %10.2f %6.2fx %10.1f | %llu\n", n, bs[m] * 1e6,
                   rs[m] * 1e6, bs[m] / rs[m], (double)n / bs[m] / 1e6, bf[m] * 1e6, rf[m] * 1e6, bf[m] / rf[m],
                   (double)n / bf[m] / 1e6, (unsigned long long)copied);
    }
    rawfab_close(&raw);
    bspk_finalize();
    return 0;
}
