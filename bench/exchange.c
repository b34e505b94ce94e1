/*
 * bench/exchange -- two processes sending to each other at the same time,
 * BSPk against raw libfabric on the same provider, same processes, same
 * invocation (bench/pingpong measures one direction at a time).
 *
 *   bspkrun -n 2 [--provider NAME] exchange [--min BYTES] [--max BYTES] [--reps R]
 *
 * For each size (min .. max, factors of 4; default 64 KiB .. 4 MiB; --min 8
 * for the latency of small exchanges, a counted superstep's cost):
 *   bspk one way   pid 0 bspk_send's the region to pid 1; bspk_expect(0) /
 *                  bspk_expect(1); bspk_sync. One superstep per repetition.
 *   bspk both      both processes bspk_send to each other; bspk_expect(1).
 *   raw one way    fi_send of the whole buffer from pid 0, pre-posted fi_recv
 *                  on pid 1, then a 0-byte acknowledgement back (so that the
 *                  sender cannot run ahead; BSPk's sender with bspk_expect(0)
 *                  may, up to its flow control: its one-way figure is a
 *                  pipelined one, raw's includes one small-message latency).
 *   raw both       each posts its receive and sends, waits for both completions.
 *   raw both, frames   the same in frame-sized messages (what BSPk sends).
 * Prints us per repetition (median of 5 interleaved chunks), both / one way
 * for BSPk and for raw (the better raw "both"), and BSPk both / raw both. The finding it reproduces (README
 * Providers, "Where net loses"): on libfabric's net endpoint 1 MiB both
 * directions at once takes about 2x one direction (1.7-2.4x here), raw or
 * through BSPk, where Open MPI's TCP BTL takes 1.7x.
 */
#include <bspk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rawfab.h"

enum { CHUNKS = 5, MAXMSG = 256 };
static int me;
static rawfab raw;
static struct fi_context2 sctx[MAXMSG], rctx[MAXMSG];

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double bspk_run(bspk_ptr r, size_t n, int both, int reps) {
    double t0 = 0;
    for (int it = -2; it < reps; it++) {
        if (it == 0) t0 = bspk_time();
        if (both || me == 0)
            if (bspk_send(1 - me, r, n) != BSPK_OK) bspk_abort("exchange: bspk_send: %s", bspk_error_string());
        if (bspk_expect(both || me == 1) != BSPK_OK || bspk_sync() != BSPK_OK)
            bspk_abort("exchange: bspk_sync: %s", bspk_error_string());
        for (bspk_ptr m; !bspk_is_null(m = bspk_recv());) bspk_free(m);
    }
    return (bspk_time() - t0) / reps;
}

/* nmsg messages of bytes / nmsg each; the receive half of raw's buffer starts at raw.len. */
static void post_all(size_t bytes, int nmsg, int recv, int send, int *want) {
    const size_t len = bytes / (size_t)nmsg;
    ssize_t rc;
    if (recv)
        for (int k = 0; k < nmsg; k++, (*want)++)
            while ((rc = fi_recv(raw.ep, (char *)raw.buf + raw.len + (size_t)k * len, len, raw.desc, FI_ADDR_UNSPEC,
                                 &rctx[k])) != 0) {
                if (rc != -FI_EAGAIN) RAW_CHECK(rc);
                *want -= rawfab_poll(&raw);
            }
    if (send)
        for (int k = 0; k < nmsg; k++, (*want)++)
            while ((rc = fi_send(raw.ep, (char *)raw.buf + (size_t)k * len, len, raw.desc, raw.peers[1 - me],
                                 &sctx[k])) != 0) {
                if (rc != -FI_EAGAIN) RAW_CHECK(rc);
                *want -= rawfab_poll(&raw);
            }
}

static double raw_run(size_t bytes, int nmsg, int both, int reps) {
    double t0 = 0;
    for (int it = -2; it < reps; it++) {
        if (it == 0) t0 = bspk_time();
        int want = 0;
        post_all(bytes, nmsg, both || me == 1, both || me == 0, &want);
        while (want > 0) want -= rawfab_poll(&raw);
        if (!both) { /* the acknowledgement: 0 bytes from pid 1 to pid 0 */
            want = 0;
            post_all(0, 1, me == 0, me == 1, &want);
            while (want > 0) want -= rawfab_poll(&raw);
        }
    }
    return (bspk_time() - t0) / reps;
}

int main(int argc, char **argv) {
    size_t maxb = (size_t)4 << 20;
    size_t minb = 65536;
    int reps = 50;
    if (bspk_init(&argc, &argv) != BSPK_OK) {
        fprintf(stderr, "exchange: bspk_init: %s\n", bspk_error_string());
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max") && i + 1 < argc) maxb = (size_t)strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--min") && i + 1 < argc) minb = (size_t)strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else bspk_abort("exchange: usage: bspkrun -n 2 exchange [--min BYTES] [--max BYTES] [--reps R]");
    }
    me = bspk_pid();
    if (bspk_nprocs() != 2) bspk_abort("exchange: run it with 2 processes (bspkrun -n 2)");
    if (reps < 1) reps = 1;
    bspk_stats st;
    if (bspk_get_stats(&st) != BSPK_OK) bspk_abort("exchange: bspk_get_stats: %s", bspk_error_string());
    const size_t frame = st.frame_size;
    if (minb < 1) minb = 1;
    if (maxb < minb) maxb = minb;
    if (maxb / frame > MAXMSG) maxb = frame * MAXMSG;
    rawfab_open(&raw, maxb);
    bspk_ptr r = bspk_malloc("", 0, maxb, 1);
    if (bspk_is_null(r)) bspk_abort("exchange: bspk_malloc: %s", bspk_error_string());
    if (me == 0) {
        printf("# exchange: p=2, us per repetition (median of %d interleaved chunks of %d)\n", CHUNKS, reps);
        printf("| bytes | bspk one way | bspk both | both/one | raw one way | raw both | raw both, %zu KiB msgs | "
               "both/one | bspk both / raw both |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", frame >> 10);
    }
    for (size_t b = minb; b <= maxb; b *= 4) {
        double t[5][CHUNKS];
        const int nf = (int)((b + frame - 1) / frame);
        for (int c = 0; c < CHUNKS; c++) {
            t[0][c] = bspk_run(r, b, 0, reps);
            t[1][c] = bspk_run(r, b, 1, reps);
            bspk_sync();
            t[2][c] = raw_run(b, 1, 0, reps);
            t[3][c] = raw_run(b, 1, 1, reps);
            t[4][c] = raw_run(b, nf, 1, reps);
            bspk_sync();
        }
        double m[5];
        for (int k = 0; k < 5; k++) {
            qsort(t[k], CHUNKS, sizeof(double), cmp_double);
            m[k] = t[k][CHUNKS / 2] * 1e6;
        }
        const double rawbest = m[3] < m[4] ? m[3] : m[4];
        if (me == 0)
            printf("| %zu | %.1f | %.1f | %.2f | %.1f | %.1f | %.1f | %.2f | %.2f |\n", b, m[0], m[1], m[1] / m[0], m[2],
                   m[3], m[4], rawbest / m[2], m[1] / rawbest);
        fflush(stdout);
    }
    bspk_free(r);
    rawfab_close(&raw);
    return bspk_finalize() == BSPK_OK ? 0 : 1;
}
