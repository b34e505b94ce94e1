/*
 * bench/burst -- a superstep of many messages to one peer (as a radix sort
 * sends them) against raw libfabric, same provider, same process, same
 * invocation.
 *
 *   bspkrun -n P [--provider NAME] burst [--counts 8,64,256]
 *           [--sizes 1024,4096,16384] [--time SECONDS]
 *
 * Every process sends k messages of s bytes each to the next process
 * (pid + 1 mod p) per superstep, for every k of --counts and s of --sizes;
 * --time is the budget per (k, s) cell (default 0.2 s).
 * BSPk expect:  bspk_send of the k slices of one k*s-byte region (zero copy),
 *               bspk_expect(k), bspk_sync, then bspk_recv of the k messages,
 *               each checked (length, first and last byte) and freed.
 * BSPk counted: the same without bspk_expect (the runtime sums the send counts).
 * Raw: fi_send/fi_recv on a separately opened endpoint; receives of s bytes
 * are pre-posted (up to 2k, at most 512, into distinct buffers, each re-posted
 * as soon as it completes), k fi_send from distinct offsets, then busy polling
 * until this round's k sends and k receives completed (yielding the CPU when a
 * poll finds nothing and processes outnumber CPUs, as BSPk's waits then do).
 * Every process receives exactly k per round, so the rounds synchronise
 * themselves as BSPk's expect supersteps do; no barrier.
 * Time per superstep (round) = a timed loop's wall time / iterations, taken on
 * every process; the table shows the maximum over processes. Each cell runs 5
 * interleaved chunks (raw, expect, counted, raw, ...) and reports the median
 * chunk of each variant. "expect / raw" is what BSPk's superstep costs per
 * unit of the plain libfabric traffic it carries (1.00: BSPk adds nothing);
 * the last column is the expect superstep divided by k.
 * Written for BSPk's same-host rings (64 cells of 512 bytes per ordered
 * pair): bursts of more messages than a ring holds must not fall off a cliff.
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include <bspk.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rawfab.h"

enum { CHUNKS = 5, MAXLIST = 32, RAW_MAX_SLOTS = 512, CQ_POLL_EVERY = 32 };

static int me, P, next, kmax, oversubscribed;
static unsigned gen; /* superstep / round counter, the same sequence on every process */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void sync_or_die(void) {
    if (bspk_sync() != BSPK_OK) bspk_abort("burst: sync: %s", bspk_error_string());
}

/* ---- raw libfabric rounds ------------------------------------------------- */

static rawfab raw;
static struct fi_context2 *sctx, *rctx; /* one context per outstanding operation (FI_CONTEXT mode) */
static int *pending, npending;          /* receive slots whose receive completed, to re-post */
static int rslots;                      /* receive slots in use in this cell */
static size_t rsz;                      /* bytes per receive (s) */
static long long send_issued, send_done, recv_done, recv_posted, recv_needed;

static void raw_repost(void);

/* Read every completion available now; returns how many. */
static int raw_progress(void) {
    struct fi_cq_entry e[16];
    int got = 0;
    for (;;) {
        ssize_t n = fi_cq_read(raw.cq, e, 16);
        if (n == -FI_EAGAIN) return got;
        if (n < 0) {
            struct fi_cq_err_entry err;
            memset(&err, 0, sizeof err);
            fi_cq_readerr(raw.cq, &err, 0);
            bspk_abort("burst: raw libfabric: completion error: %s", fi_strerror(err.err));
        }
        for (ssize_t i = 0; i < n; i++) {
            struct fi_context2 *c = (struct fi_context2 *)e[i].op_context;
            if (c >= rctx && c < rctx + rslots) {
                recv_done++;
                pending[npending++] = (int)(c - rctx);
            } else if (c >= sctx && c < sctx + kmax) {
                send_done++;
            } else {
                bspk_abort("burst: raw libfabric: completion of an unknown operation");
            }
        }
        got += (int)n;
        if (n < 16) return got;
    }
}

/* Progress while waiting; with more processes than CPUs, give the CPU away
 * when there was nothing to do (as BSPk does: BSPK_SPIN_US is 0 then). */
static void raw_idle(void) {
    int got = raw_progress();
    raw_repost();
    if (!got && oversubscribed) sched_yield();
}

/* Post a receive into every free slot, as long as this cell needs more. */
static void raw_repost(void) {
    while (npending > 0 && recv_posted < recv_needed) {
        int slot = pending[npending - 1];
        ssize_t rc = fi_recv(raw.ep, (char *)raw.buf + raw.len + (size_t)slot * rsz, rsz, raw.desc, FI_ADDR_UNSPEC,
                             &rctx[slot]);
        if (rc == -FI_EAGAIN) {
            raw_progress();
            continue;
        }
        RAW_CHECK(rc);
        npending--;
        recv_posted++;
    }
}

/* Start a cell: post the first receives. All processes call it before the
 * superstep that agrees on the iteration count, so every receiver has posted
 * before any sender starts. */
static void raw_cell_begin(int k, size_t s) {
    rsz = s;
    rslots = 2 * k < RAW_MAX_SLOTS ? 2 * k : RAW_MAX_SLOTS;
    if ((size_t)rslots > raw.info->rx_attr->size) rslots = (int)raw.info->rx_attr->size;
    if (rslots < 1) rslots = 1;
    send_issued = send_done = recv_done = recv_posted = 0;
    recv_needed = LLONG_MAX; /* set exactly once the iterations are agreed */
    npending = 0;
    for (int i = rslots - 1; i >= 0; i--) pending[npending++] = i;
    raw_repost();
}

static void raw_cell_end(void) {
    if (recv_done != recv_needed || recv_posted != recv_needed || send_done != send_issued)
        bspk_abort("burst: raw libfabric: cell ended with %lld/%lld receives done (%lld posted), %lld/%lld sends",
                   recv_done, recv_needed, recv_posted, send_done, send_issued);
}

static void raw_round(int k, size_t s) {
    unsigned g = gen++;
    char *buf = (char *)raw.buf;
    for (int i = 0; i < k; i++) {
        char *m = buf + (size_t)i * s;
        m[0] = m[s - 1] = (char)(g + (unsigned)i);
        ssize_t rc;
        while ((rc = fi_send(raw.ep, m, s, raw.desc, raw.peers[next], &sctx[i])) == -FI_EAGAIN) raw_idle();
        RAW_CHECK(rc);
        send_issued++;
        /* keep the CQ (1024 entries) from overflowing when k is large */
        if (i % CQ_POLL_EVERY == CQ_POLL_EVERY - 1) {
            raw_progress();
            raw_repost();
        }
    }
    /* k receives per round: this round's are done when as many arrived as were sent */
    while (send_done < send_issued || recv_done < send_issued) raw_idle();
}

static double raw_chunk(int k, size_t s, int warm, int iters) {
    double t0 = 0;
    for (int it = -warm; it < iters; it++) {
        if (it == 0) t0 = bspk_time();
        raw_round(k, s);
    }
    return (bspk_time() - t0) / iters;
}

/* ---- BSPk supersteps ------------------------------------------------------ */

static unsigned char *byte_at(bspk_ptr p, size_t off) {
    unsigned char *b = (unsigned char *)bspk_elemP(bspk_incr(p, (ptrdiff_t)off));
    if (!b) bspk_abort("burst: bspk_elemP: %s", bspk_error_string());
    return b;
}

static double bspk_chunk(bspk_ptr src, int k, size_t s, int expect, int warm, int iters) {
    double t0 = 0;
    for (int it = -warm; it < iters; it++) {
        if (it == 0) t0 = bspk_time();
        unsigned g = gen++;
        for (int i = 0; i < k; i++) {
            bspk_ptr m = bspk_incr(src, (ptrdiff_t)((size_t)i * s));
            unsigned char v = (unsigned char)(g + (unsigned)i);
            *byte_at(m, 0) = v;
            *byte_at(m, s - 1) = v;
            if (bspk_send(next, m, s) != BSPK_OK) bspk_abort("burst: bspk_send: %s", bspk_error_string());
        }
        if (expect && bspk_expect(k) != BSPK_OK) bspk_abort("burst: bspk_expect: %s", bspk_error_string());
        sync_or_die();
        for (int i = 0; i < k; i++) {
            bspk_ptr r = bspk_recv();
            if (bspk_is_null(r)) bspk_abort("burst: message %d of %d missing", i, k);
            unsigned char v = (unsigned char)(g + (unsigned)i);
            if (bspk_nelems(r) != s) bspk_abort("burst: message %d: %zu bytes, not %zu", i, bspk_nelems(r), s);
            if (*byte_at(r, 0) != v || *byte_at(r, s - 1) != v)
                bspk_abort("burst: message %d: first byte %u, last %u, expected %u", i, *byte_at(r, 0),
                           *byte_at(r, s - 1), v);
            bspk_free(r);
        }
        if (!bspk_is_null(bspk_recv())) bspk_abort("burst: more than %d messages arrived", k);
    }
    return (bspk_time() - t0) / iters;
}

/* ---- arguments ------------------------------------------------------------ */

static void usage(void) {
    if (me == 0)
        fprintf(stderr, "usage: bspkrun -n P [--provider NAME] burst [--counts 8,64,256] "
                        "[--sizes 1024,4096,16384] [--time SECONDS]\n"
                        "  counts: 1..65536 messages per superstep; sizes: 1..67108864 bytes per message;\n"
                        "  count * size <= 64 MiB; time: seconds per (count, size) cell, > 0 (default 0.2)\n");
}

/* Comma-separated positive integers <= max; returns how many, 0 on error. */
static int parse_list(const char *s, long *out, long max) {
    int n = 0;
    while (*s) {
        if (n == MAXLIST || *s < '0' || *s > '9') return 0;
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno || v < 1 || v > max || (*end && *end != ',')) return 0;
        out[n++] = v;
        s = *end ? end + 1 : end;
        if (*end == ',' && !*s) return 0;
    }
    return n;
}

int main(int argc, char **argv) {
    bspk_init(&argc, &argv);
    me = bspk_pid();
    P = bspk_nprocs();
    next = (me + 1) % P;
    cpu_set_t cpus;
    if (!sched_getaffinity(0, sizeof cpus, &cpus)) oversubscribed = P > CPU_COUNT(&cpus);

    long counts[MAXLIST] = {8, 64, 256}, sizes[MAXLIST] = {1024, 4096, 16384};
    int nc = 3, ns = 3, bad = 0;
    double budget = 0.2;
    for (int i = 1; i < argc && !bad; i++) {
        if (!strcmp(argv[i], "--counts") && i + 1 < argc) bad = !(nc = parse_list(argv[++i], counts, 65536));
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) bad = !(ns = parse_list(argv[++i], sizes, 64L << 20));
        else if (!strcmp(argv[i], "--time") && i + 1 < argc) {
            char *end;
            budget = strtod(argv[++i], &end);
            bad = *end || !(budget > 0 && budget <= 3600);
        } else bad = 1;
    }
    for (int a = 0; a < nc && !bad; a++)
        for (int b = 0; b < ns && !bad; b++)
            if ((size_t)counts[a] * (size_t)sizes[b] > ((size_t)64 << 20)) bad = 1;
    if (bad) {
        usage();
        bspk_finalize();
        return 2;
    }

    /* raw buffer halves: sends at [0, k*s), receive slots at [len, len + rslots*s) */
    size_t len = 0;
    for (int a = 0; a < nc; a++) {
        if (counts[a] > kmax) kmax = (int)counts[a];
        for (int b = 0; b < ns; b++) {
            long slots = 2 * counts[a] < RAW_MAX_SLOTS ? 2 * counts[a] : RAW_MAX_SLOTS;
            size_t need = (size_t)(slots > counts[a] ? slots : counts[a]) * (size_t)sizes[b];
            if (need > len) len = need;
        }
    }
    rawfab_open(&raw, len);
    sctx = (struct fi_context2 *)calloc((size_t)kmax + RAW_MAX_SLOTS, sizeof *sctx);
    rctx = sctx + kmax; /* sends use sctx[0, kmax), receives rctx[0, rslots) */
    pending = (int *)calloc(RAW_MAX_SLOTS, sizeof *pending);
    if (!sctx || !pending) bspk_abort("burst: out of memory");

    bspk_stats st0, st1;
    bspk_get_stats(&st0);
    if (me == 0) {
        const char *bp = getenv("BSPK_PROVIDER"), *fp = getenv("FI_PROVIDER");
        printf("# burst: provider %s (libfabric %s), p = %d, frame %llu bytes; each process sends k messages of s "
               "bytes to pid+1 per superstep; time per superstep, max over processes, median of %d interleaved "
               "chunks\n",
               bp ? bp : "auto", fp ? fp : "?", P, (unsigned long long)st0.frame_size, CHUNKS);
        printf("\n| k | s (bytes) | raw (us) | BSPk expect (us) | BSPk counted (us) | expect / raw | counted / raw "
               "| per message, expect (us) |\n");
        printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        fflush(stdout);
    }
    double copied_bytes = 0;

    for (int a = 0; a < nc; a++)
        for (int b = 0; b < ns; b++) {
            int k = (int)counts[a];
            size_t s = (size_t)sizes[b];
            bspk_ptr src = bspk_malloc(NULL, 0, (size_t)k * s, 1);
            if (bspk_is_null(src)) bspk_abort("burst: bspk_malloc: %s", bspk_error_string());
            for (size_t i = 0; i < (size_t)k * s;) { /* touch */
                void *base;
                size_t n = bspk_span(bspk_incr(src, (ptrdiff_t)i), &base);
                memset(base, 0, n);
                i += n;
            }
            raw_cell_begin(k, s);
            /* estimate with a few BSPk supersteps; all processes agree on the
             * slowest estimate (this superstep also tells every process that
             * all receivers have posted their raw receives) */
            double est = bspk_chunk(src, k, s, 1, 1, 3);
            for (int q = 0; q < P; q++) bspk_send_buf(q, &est, sizeof est);
            bspk_expect(P);
            sync_or_die();
            for (bspk_ptr in; !bspk_is_null(in = bspk_recv());) {
                double e;
                memcpy(&e, bspk_elemP(in), sizeof e);
                if (e > est) est = e;
                bspk_free(in);
            }
            double per_d = budget / (3.0 * CHUNKS * (est > 1e-7 ? est : 1e-7));
            int per = per_d < 5 ? 5 : per_d > 100000 ? 100000 : (int)per_d;
            int warm = per / 10 + 1;
            recv_needed = (long long)CHUNKS * (warm + per) * k;
            raw_repost();

            double t[3][CHUNKS];
            bspk_stats c0, c1;
            for (int c = 0; c < CHUNKS; c++) {
                t[0][c] = raw_chunk(k, s, warm, per);
                bspk_get_stats(&c0);
                t[1][c] = bspk_chunk(src, k, s, 1, warm, per);
                t[2][c] = bspk_chunk(src, k, s, 0, warm, per);
                bspk_get_stats(&c1);
                copied_bytes += (double)(c1.bytes_copied - c0.bytes_copied);
            }
            raw_cell_end();
            bspk_free(src);

            /* the maximum over processes of each chunk, at pid 0 */
            bspk_send_buf(0, t, sizeof t);
            bspk_expect(me == 0 ? P : 0);
            sync_or_die();
            if (me == 0) {
                double mx[3][CHUNKS];
                memcpy(mx, t, sizeof mx);
                for (bspk_ptr in; !bspk_is_null(in = bspk_recv());) {
                    double o[3][CHUNKS];
                    memcpy(o, bspk_elemP(in), sizeof o);
                    for (int v = 0; v < 3; v++)
                        for (int c = 0; c < CHUNKS; c++)
                            if (o[v][c] > mx[v][c]) mx[v][c] = o[v][c];
                    bspk_free(in);
                }
                double med[3];
                for (int v = 0; v < 3; v++) {
                    qsort(mx[v], CHUNKS, sizeof mx[v][0], cmp_double);
                    med[v] = mx[v][CHUNKS / 2] * 1e6;
                }
                printf("| %d | %zu | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", k, s, med[0], med[1], med[2],
                       med[1] / med[0], med[2] / med[0], med[1] / k);
                fflush(stdout);
            } else {
                for (bspk_ptr in; !bspk_is_null(in = bspk_recv());) bspk_free(in);
            }
        }

    bspk_get_stats(&st1);
    if (me == 0)
        printf("\n# pid 0: %d chunks x %d variants per cell; runtime bytes copied during the BSPk chunks: %.0f; "
               "supersteps: %llu\n",
               CHUNKS, 3, copied_bytes, (unsigned long long)(st1.supersteps - st0.supersteps));
    free(sctx);
    free(pending);
    rawfab_close(&raw);
    return bspk_finalize() ? 1 : 0;
}
