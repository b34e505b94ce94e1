/*
 * radix_sort -- parallel LSD radix sort of 32-bit keys with BSPk message passing.
 *
 * The RDXSORT algorithm of the Rdx suite ("RMA portable BSP benchmarks", section
 * 5, Fig. 9): four rounds of count sort on 8-bit digits, least significant
 * first. Each round
 *   1. counts the digits of the local keys and sends the 256 counts to every
 *      process (superstep 1, bspk_expect(p): p messages arrive);
 *   2. derives from the p x 256 counts the global position of every key (the
 *      parallel prefix of Fig. 9 line 3), count-sorts the local keys into one
 *      comem region, and for each digit value routes its run of keys to the
 *      process(es) owning those positions with bspk_send (Fig. 9 lines 4-5),
 *      straight from the sorted region: no packing copy (superstep 2, with
 *      bspk_expect(exact number of runs arriving), so the barrier costs nothing).
 * Received runs are not copied either: the next round reads them in place, in
 * global-position order.
 *
 * Usage: bspkrun -n P radix_sort [--n N] [--seed S] [--input FILE]
 *   --n N      number of keys (default 16M = 16777216), uniform random
 *   --seed S   random seed (default 1); the input is the same for every P
 *   --input F  raw little-endian uint32 keys instead (N = file size / 4)
 * Verifies the global order and an order-independent checksum against the
 * input; prints time and keys/s; exits non-zero if the result is wrong.
 */
#include <bspk.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RADIX 256

static int me, P;

static void die(const char *what) { bspk_abort("radix_sort: %s: %s", what, bspk_error_string()); }

static uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Block distribution of N positions over P processes. */
static uint64_t block_start(uint64_t N, int j) {
    uint64_t q = N / (uint64_t)P, r = N % (uint64_t)P;
    return (uint64_t)j * q + ((uint64_t)j < r ? (uint64_t)j : r);
}
static int owner_of(uint64_t N, uint64_t pos) {
    int lo = 0, hi = P - 1; /* largest j with block_start(j) <= pos */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (block_start(N, mid) <= pos) lo = mid; else hi = mid - 1;
    }
    return lo;
}

/* The local keys: runs of comem elements in global-position order. */
typedef struct { bspk_ptr p; uint64_t n; } run_t;
typedef struct { run_t *r; int n, cap; } runs_t;

static void runs_push(runs_t *rs, bspk_ptr p, uint64_t n) {
    if (rs->n == rs->cap) {
        rs->cap = rs->cap ? 2 * rs->cap : 16;
        rs->r = realloc(rs->r, (size_t)rs->cap * sizeof *rs->r);
        if (!rs->r) bspk_abort("radix_sort: out of memory");
    }
    rs->r[rs->n].p = p;
    rs->r[rs->n].n = n;
    rs->n++;
}

/* Visit every key of the runs, frame by frame (bspk_span). */
#define FOR_EACH_KEY(rs, k, BODY)                                          \
    for (int ri_ = 0; ri_ < (rs)->n; ri_++) {                              \
        bspk_ptr q_ = (rs)->r[ri_].p;                                      \
        uint64_t left_ = (rs)->r[ri_].n;                                   \
        while (left_) {                                                    \
            void *b_;                                                      \
            size_t m_ = bspk_span(q_, &b_);                                \
            if (m_ > left_) m_ = left_;                                    \
            const uint32_t *kp_ = b_;                                      \
            for (size_t i_ = 0; i_ < m_; i_++) { uint32_t k = kp_[i_]; BODY } \
            left_ -= m_;                                                   \
            q_ = bspk_incr(q_, (ptrdiff_t)m_);                             \
        }                                                                  \
    }

/* A write cursor into a comem region: the current frame span (it starts at
 * p and holds len elements, left of them still free). The region pointer
 * moves once per span, not once per key: a key costs a store. */
typedef struct { bspk_ptr p; uint32_t *at; size_t left, len; } cursor_t;

static void cursor_seek(cursor_t *c, bspk_ptr p) {
    void *b = NULL;
    c->p = p;
    c->len = c->left = bspk_span(p, &b);
    c->at = b;
}
static inline void cursor_put(cursor_t *c, uint32_t v) {
    if (c->left == 0) cursor_seek(c, bspk_incr(c->p, (ptrdiff_t)c->len));
    *c->at++ = v;
    c->left--;
}

static void checksums(const runs_t *rs, uint64_t *sum, uint64_t *cnt) {
    uint64_t s = 0, c = 0;
    FOR_EACH_KEY(rs, k, { s += mix64(k); c++; })
    *sum = s;
    *cnt = c;
}

int main(int argc, char **argv) {
    if (bspk_init(&argc, &argv) != BSPK_OK) {
        /* bspk_init has printed why on stderr (unless BSPK_ERRORS=quiet) */
        return 1;
    }
    me = bspk_pid();
    P = bspk_nprocs();
    uint64_t N = 16u << 20, seed = 1;
    const char *input = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc) N = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--input") && i + 1 < argc) input = argv[++i];
        else {
            if (me == 0) fprintf(stderr, "usage: radix_sort [--n N] [--seed S] [--input FILE]\n");
            bspk_finalize();
            return 2;
        }
    }
    FILE *in = NULL;
    if (input) {
        in = fopen(input, "rb");
        if (!in) bspk_abort("radix_sort: cannot open %s", input);
        fseek(in, 0, SEEK_END);
        N = (uint64_t)ftell(in) / 4;
    }

    /* ---- input: this process's block of the global sequence ---- */
    uint64_t lo = block_start(N, me), nloc = block_start(N, me + 1 < P ? me + 1 : P) - lo;
    if (me + 1 == P) nloc = N - lo;
    bspk_ptr keys = bspk_malloc("", 0, nloc, sizeof(uint32_t));
    if (bspk_is_null(keys)) die("bspk_malloc");
    {
        cursor_t c;
        cursor_seek(&c, keys);
        if (in) {
            fseek(in, (long)(lo * 4), SEEK_SET);
            for (uint64_t i = 0; i < nloc; i++) {
                uint32_t k;
                if (fread(&k, 4, 1, in) != 1) bspk_abort("radix_sort: short read from %s", input);
                cursor_put(&c, k);
            }
            fclose(in);
        } else {
            for (uint64_t i = 0; i < nloc; i++) cursor_put(&c, (uint32_t)mix64(seed * 0x1000003ull + lo + i));
        }
    }
    runs_t cur = {0}, next = {0};
    runs_push(&cur, keys, nloc);
    uint64_t in_sum, in_cnt;
    checksums(&cur, &in_sum, &in_cnt);

    uint64_t *C = malloc((size_t)P * RADIX * sizeof *C); /* C[q*256+d]: keys of digit d on q */
    uint64_t *posdq = malloc((size_t)P * RADIX * sizeof *posdq); /* first position of (d, q) */
    uint64_t cnt[RADIX];
    if (!C || !posdq) bspk_abort("radix_sort: out of memory");
    bspk_ptr cnt_msg = bspk_malloc("", 0, RADIX, sizeof(uint64_t));
    if (bspk_is_null(cnt_msg)) die("bspk_malloc");

    if (bspk_sync() != BSPK_OK) die("bspk_sync"); /* start timing together */
    double t0 = bspk_time();

    for (int round = 0; round < 4; round++) {
        const int shift = 8 * round;
        /* ---- superstep 1: local histogram to everyone ---- */
        memset(cnt, 0, sizeof cnt);
        FOR_EACH_KEY(&cur, k, { cnt[(k >> shift) & 0xFF]++; })
        memcpy(bspk_elemP(cnt_msg), cnt, sizeof cnt); /* 2 KiB: one frame */
        for (int q = 0; q < P; q++)
            if (bspk_send(q, cnt_msg, RADIX) != BSPK_OK) die("bspk_send counts");
        if (bspk_expect(P) != BSPK_OK) die("bspk_expect");
        if (bspk_sync() != BSPK_OK) die("bspk_sync counts");
        for (bspk_ptr m; !bspk_is_null(m = bspk_recv());) {
            memcpy(&C[(size_t)bspk_sender_id(m) * RADIX], bspk_elemP(m), sizeof cnt);
            bspk_free(m);
        }

        /* ---- parallel prefix: global position of (digit d, process q)'s first key ---- */
        /* pos(d, q) = sum_{d'<d} total(d') + sum_{q'<q} C[q'][d] */
        uint64_t base = 0;
        static uint64_t off[RADIX]; /* my first position per digit */
        for (int d = 0; d < RADIX; d++)
            for (int q = 0; q < P; q++) {
                posdq[(size_t)d * P + q] = base;
                base += C[(size_t)q * RADIX + d];
            }
        base = 0;
        uint64_t my_lo = block_start(N, me), my_hi = me + 1 < P ? block_start(N, me + 1) : N;
        int expected = 0;
        for (int d = 0; d < RADIX; d++) {
            uint64_t pos = base;
            for (int q = 0; q < P; q++) {
                uint64_t c = C[(size_t)q * RADIX + d];
                if (q == me) off[d] = pos;
                /* pieces of q's run [pos, pos+c) that land in my block */
                if (c) {
                    uint64_t a = pos > my_lo ? pos : my_lo, b = pos + c < my_hi ? pos + c : my_hi;
                    if (a < b) expected++;
                }
                pos += c;
            }
            base = pos;
        }

        /* ---- superstep 2: count-sort locally into one region, route runs ---- */
        bspk_ptr sorted = bspk_malloc("", 0, nloc, sizeof(uint32_t));
        if (bspk_is_null(sorted)) die("bspk_malloc");
        static cursor_t wc[RADIX];
        uint64_t start[RADIX], acc = 0;
        for (int d = 0; d < RADIX; d++) {
            start[d] = acc;
            if (cnt[d]) cursor_seek(&wc[d], bspk_incr(sorted, (ptrdiff_t)acc));
            acc += cnt[d];
        }
        FOR_EACH_KEY(&cur, k, { cursor_put(&wc[(k >> shift) & 0xFF], k); })
        /* the keys of digit d go to positions [off[d], off[d]+cnt[d]) */
        for (int d = 0; d < RADIX; d++) {
            uint64_t done = 0;
            while (done < cnt[d]) {
                uint64_t pos = off[d] + done;
                int dest = owner_of(N, pos);
                uint64_t end = dest + 1 < P ? block_start(N, dest + 1) : N;
                uint64_t len = end - pos < cnt[d] - done ? end - pos : cnt[d] - done;
                if (bspk_send(dest, bspk_incr(sorted, (ptrdiff_t)(start[d] + done)), len) != BSPK_OK)
                    die("bspk_send keys");
                done += len;
            }
        }
        if (bspk_expect(expected) != BSPK_OK) die("bspk_expect");
        if (bspk_sync() != BSPK_OK) die("bspk_sync keys");

        /* The previous round's keys, and the sorted region whose runs were sent
         * (its sends completed at the sync), are no longer needed. */
        for (int i = 0; i < cur.n; i++) bspk_free(cur.r[i].p);
        bspk_free(sorted);

        /* Received runs arrive by sender, then digit; position order is by digit,
         * then sender: place each message in its (d, q) slot. */
        bspk_ptr *slot = calloc((size_t)RADIX * P, sizeof *slot);
        uint64_t *slen = calloc((size_t)RADIX * P, sizeof *slen);
        int *next_d = calloc((size_t)P, sizeof *next_d);
        if (!slot || !slen || !next_d) bspk_abort("radix_sort: out of memory");
        next.n = 0;
        for (bspk_ptr m; !bspk_is_null(m = bspk_recv());) {
            int q = bspk_sender_id(m);
            /* next digit d for which q has a non-empty piece in my block */
            int d = next_d[q];
            for (; d < RADIX; d++) {
                uint64_t pos = posdq[(size_t)d * P + q];
                uint64_t c = C[(size_t)q * RADIX + d];
                uint64_t a = pos > my_lo ? pos : my_lo, b = pos + c < my_hi ? pos + c : my_hi;
                if (c && a < b) break;
            }
            if (d >= RADIX) bspk_abort("radix_sort: unexpected message from pid %d", q);
            next_d[q] = d + 1;
            slot[(size_t)d * P + q] = m;
            slen[(size_t)d * P + q] = bspk_nelems(m);
        }
        for (size_t i = 0; i < (size_t)RADIX * P; i++)
            if (!bspk_is_null(slot[i])) runs_push(&next, slot[i], slen[i]);
        free(slot);
        free(slen);
        free(next_d);
        runs_t t = cur;
        cur = next;
        next = t;
    }
    double t1 = bspk_time();

    /* ---- verify: local order, order across processes, checksum ---- */
    uint64_t bad = 0, first = UINT64_MAX, last = 0, prev = 0, have = 0;
    FOR_EACH_KEY(&cur, k, {
        if (have && k < prev) bad++;
        if (!have) first = k;
        prev = k;
        last = k;
        have = 1;
    })
    uint64_t out_sum, out_cnt;
    checksums(&cur, &out_sum, &out_cnt);
    bspk_ptr rep = bspk_malloc("", 0, 8, sizeof(uint64_t));
    uint64_t *rv = bspk_elemP(rep);
    rv[0] = in_sum; rv[1] = in_cnt; rv[2] = out_sum; rv[3] = out_cnt;
    rv[4] = bad; rv[5] = first; rv[6] = last; rv[7] = have;
    bspk_send(0, rep, 8);
    bspk_expect(me == 0 ? P : 0);
    if (bspk_sync() != BSPK_OK) die("bspk_sync report");
    int ok = 1;
    if (me == 0) {
        uint64_t is = 0, ic = 0, os = 0, oc = 0, nbad = 0, prev_last = 0, seen = 0;
        for (bspk_ptr m; !bspk_is_null(m = bspk_recv());) { /* in pid order */
            uint64_t *v = bspk_elemP(m);
            is += v[0]; ic += v[1]; os += v[2]; oc += v[3]; nbad += v[4];
            if (v[7]) {
                if (seen && v[5] < prev_last) nbad++;
                prev_last = v[6];
                seen = 1;
            }
            bspk_free(m);
        }
        ok = nbad == 0 && is == os && ic == N && oc == N;
        double s = t1 - t0;
        printf("radix_sort: %" PRIu64 " keys on %d processes: %.3f s, %.2f Mkeys/s; order %s, checksum %s "
               "(%016" PRIx64 ")\n",
               N, P, s, s > 0 ? (double)N / s / 1e6 : 0.0, nbad ? "WRONG" : "ok",
               (is == os && ic == oc && oc == N) ? "ok" : "WRONG", os);
    }
    bspk_free(rep);
    for (int i = 0; i < cur.n; i++) bspk_free(cur.r[i].p);
    bspk_free(cnt_msg);
    free(C);
    free(posdq);
    free(cur.r);
    free(next.r);
    bspk_finalize();
    return ok ? 0 : 1;
}
