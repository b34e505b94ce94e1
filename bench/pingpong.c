/*
 * bench/pingpong -- BSPk message round trip against raw libfabric, same
 * provider, same process, same invocation.
 *
 *   bspkrun -n 2 [--provider NAME] pingpong [--max BYTES] [--time SECONDS]
 *
 * BSPk: one message per superstep, bspk_expect(1) on the receiver and
 * bspk_expect(0) on the sender; pid 1 sends the received region straight back
 * (zero copy both ways). A round trip is two supersteps.
 * Raw: fi_send/fi_recv ping-pong on a separately opened endpoint, receive
 * pre-posted, busy polling.
 * Prints half round-trip latency and bandwidth (bytes / half round trip) for
 * 8 B .. 8 MiB, the BSPk/raw ratios, and the bytes the runtime copied (0).
 * To resist noise on shared machines, each size runs 7 interleaved chunks
 * (raw, BSPk, raw, BSPk, ...) and reports the median chunk of each.
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

static int iters_for(size_t bytes, double budget_s, double est_us) {
    (void)bytes;
    int n = (int)(budget_s * 1e6 / (2 * est_us));
    if (n < 10) n = 10;
    if (n > 20000) n = 20000;
    return n;
}

static double bspk_pingpong(bspk_ptr m, size_t bytes, int iters) {
    double t0 = 0;
    for (int it = -iters / 10 - 1; it < iters; it++) {
        if (it == 0) t0 = bspk_time();
        if (me == 0) {
            bspk_send(1, m, bytes);
            bspk_expect(0);
            bspk_sync();
            bspk_expect(1);
            bspk_sync();
            bspk_ptr back = bspk_recv();
            if (bspk_is_null(back) || bspk_nelems(back) != bytes) bspk_abort("pingpong: reply missing");
            bspk_free(back);
        } else {
            bspk_expect(1);
            bspk_sync();
            bspk_ptr r = bspk_recv();
            if (bspk_is_null(r)) bspk_abort("pingpong: message missing");
            bspk_send(0, r, bytes); /* the received frames go straight back */
            bspk_expect(0);
            bspk_sync();
            bspk_free(r);
        }
    }
    return (bspk_time() - t0) / iters / 2;
}

int main(int argc, char **argv) {
    bspk_init(&argc, &argv);
    me = bspk_pid();
    size_t max = 8u << 20;
    double budget = 0.3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max") && i + 1 < argc) max = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--time") && i + 1 < argc) budget = atof(argv[++i]);
    }
    if (bspk_nprocs() != 2) {
        if (me == 0) fprintf(stderr, "pingpong: run with exactly 2 processes (bspkrun -n 2)\n");
        bspk_finalize();
        return 2;
    }
    rawfab raw;
    rawfab_open(&raw, max);
    bspk_ptr m = bspk_malloc("", 0, max, 1);
    memset(bspk_elemP(m), 0, 1); /* touch */
    for (size_t i = 0; i < max;) {
        void *b;
        size_t n = bspk_span(bspk_incr(m, (ptrdiff_t)i), &b);
        memset(b, (int)i, n);
        i += n;
    }
    bspk_stats st0, st1;
    bspk_get_stats(&st0);
    if (me == 0) {
        printf("# pingpong: provider %s, frame %llu bytes; half round trip, median of 7 interleaved chunks\n",
               getenv("FI_PROVIDER") ? getenv("FI_PROVIDER") : "?", (unsigned long long)st0.frame_size);
        printf("%10s %12s %12s %8s %12s %12s %8s\n", "bytes", "raw_us", "bspk_us", "lat_x", "raw_MB/s",
               "bspk_MB/s", "bw_%");
    }
    for (size_t bytes = 8; bytes <= max; bytes *= (bytes < 64 ? 8 : 4)) {
        /* estimate with a few raw iterations, then size both runs alike */
        double est = rawfab_pingpong(&raw, me, bytes, 10) * 1e6;
        int iters = iters_for(bytes, budget, est > 1 ? est : 1);
        /* both processes must agree on iters: take pid 0's */
        bspk_ptr im = bspk_malloc("", 0, 1, sizeof(int));
        *(int *)bspk_elemP(im) = iters;
        if (me == 0) bspk_send(1, im, 1);
        bspk_expect(me == 1);
        bspk_sync();
        bspk_free(im);
        if (me == 1) {
            bspk_ptr r = bspk_recv();
            iters = *(int *)bspk_elemP(r);
            bspk_free(r);
        }
        enum { CHUNKS = 7 };
        double tr[CHUNKS], tb[CHUNKS];
        int per = iters / CHUNKS > 5 ? iters / CHUNKS : 5;
        for (int c = 0; c < CHUNKS; c++) {
            tr[c] = rawfab_pingpong(&raw, me, bytes, per);
            tb[c] = bspk_pingpong(m, bytes, per);
        }
        qsort(tr, CHUNKS, sizeof *tr, cmp_double);
        qsort(tb, CHUNKS, sizeof *tb, cmp_double);
        double traw = tr[CHUNKS / 2], tbspk = tb[CHUNKS / 2];
        if (me == 0)
            printf("%10zu %12.2f %12.2f %8.2f %12.1f %12.1f %8.1f\n", bytes, traw * 1e6, tbspk * 1e6,
                   tbspk / traw, bytes / traw / 1e6, bytes / tbspk / 1e6, 100.0 * traw / tbspk);
        fflush(stdout);
        if (bytes == max) break;
        if (bytes * 4 > max && bytes < max) bytes = max / 4;
    }
    bspk_get_stats(&st1);
    if (me == 0)
        printf("# runtime bytes copied during the BSPk runs: %llu (both directions, zero-copy forward on pid 1)\n",
               (unsigned long long)(st1.bytes_copied - st0.bytes_copied));
    bspk_free(m);
    rawfab_close(&raw);
    return bspk_finalize() ? 1 : 0;
}
