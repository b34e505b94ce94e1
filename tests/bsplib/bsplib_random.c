/* tests/bsplib/bsplib_random.c -- randomized BSPlib supersteps checked
 * against a replay: every process regenerates every process's operations
 * from (seed, pid, superstep) and computes what its registered array and its
 * message queue must hold after each bsp_sync (puts applied in ascending
 * source pid then call order; queue: highest source first, last sent first;
 * gets reading values from before the puts). Sizes straddle frames (run it
 * with a small BSPK_FRAME_SIZE), puts of 1..N bytes and a few larger than a
 * frame, 0-byte messages, messages larger than a frame, operations on the
 * process itself. Usage: bsplib_random SEED STEPS OPS [nogets|runs|getruns|hp] (without
 * gets a superstep is one BSPk superstep and puts are written while the
 * batches are read: the other path of the layer; runs: mostly messages, of a
 * few sizes, often several in a row to one destination, with the tag size
 * changing every superstep (0, 4, 8, 12 bytes), so that consecutive messages
 * of one shape travel as one record; getruns: mostly gets, often reading on
 * where the last get from the same process ended, into memory right after
 * its destination, so that they are combined, or reading bytes of the same
 * size at a constant stride (strided runs: GetRun records), into memory
 * right after the last destination or a few words past it, some larger
 * than a frame;
 * hp: bsp_hpput and bsp_hpget next to puts and gets in a larger area, the
 * hpputs from every source back to back in its own slice of the upper half
 * and the puts in the lower half (zero-copy hpputs of the same bytes, or an
 * hpput and a put of them, land in no order the test could check), the
 * hpgets from the lower half (an hpget of bytes a zero-copy hpput writes in
 * the same superstep may or may not see it); run it with a small
 * BSPK_HP_ZEROCOPY_MIN to take the zero-copy paths at these sizes).
 * A fifth argument "declare": every process calls bspk_expect(m) before each
 * bsp_sync, m = the other processes that send it a batch in that superstep
 * (a put, hpput or message to it, a get or hpget from it; p - 1 where the
 * tag size changes), from the replay: the lazy barrier under random traffic.
 * And "skew": in superstep t process t mod p sleeps 2 ms before its
 * bsp_sync, and process (t + 1) mod p before its operations (the others race
 * ahead into the next superstep; with "declare" they do not wait for it).
 * Prints "random ok". */
#include <bsp.h>
#include <bspk.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "splitmix.h"
#include <time.h>

#define AREA 200000    /* bytes of the registered array */
#define HP_AREA 800000 /* the same in the hp mode */

static unsigned char byte_of(int src, int step, int op, size_t k) {
    return (unsigned char)(src * 131 + step * 31 + op * 7 + k * 13 + (k >> 8));
}

typedef struct { int kind, dest; size_t off, n, gap; } Op; /* 0 put, 1 send, 2 get; gap: bytes left free after a get's destination */

static int nogets, runs, getruns, hp;
/* The tag size in force in superstep `step`. */
static int tagsize_at(int step) {
    static const int cycle[4] = {4, 8, 12, 0};
    return runs ? cycle[step % 4] : 4;
}
static int gen(uint64_t seed, int src, int step, int nops, int p, Op *ops) {
    rng_state = seed * 1000003u + (uint64_t)src * 7919u + (uint64_t)step * 104729u;
    int k = (int)(rnd() % (uint64_t)(nops + 1));
    int dest = (int)(rnd() % (uint64_t)p);
    size_t hp_used = 0; /* bytes of src's hpput slice taken in this superstep */
    for (int i = 0; i < k; i++) {
        Op o;
        o.gap = 0;
        if (hp) { /* kinds: 0 put, 2 get, 3 hpput, 4 hpget */
            static const size_t sizes[8] = {1, 8, 100, 3000, 9000, 40000, 70000, 150000};
            const size_t half = HP_AREA / 2, slice = half / (size_t)p;
            uint64_t r = rnd() % 100;
            o.kind = r < 20 ? 0 : r < 35 ? 2 : r < 70 ? 3 : 4;
            o.dest = (int)(rnd() % (uint64_t)p);
            o.n = sizes[rnd() % 8];
            if (o.kind == 3 && hp_used + o.n > slice) o.n = slice - hp_used;
            if (o.kind == 3 && o.n == 0) o.kind = 0, o.n = 8; /* the slice is full: a put instead */
            if (o.kind == 3) {
                o.off = half + (size_t)src * slice + hp_used;
                hp_used += o.n;
            } else {
                o.off = rnd() % ((o.kind == 2 ? HP_AREA : half) - o.n);
            }
            ops[i] = o;
            continue;
        }
        if (getruns) {
            static const size_t sizes[9] = {1, 4, 8, 8, 8, 16, 100, 3000, 9000};
            o.kind = rnd() % 5 == 0 ? 0 : 2;
            if (rnd() % 4 == 0) dest = (int)(rnd() % (uint64_t)p);
            o.dest = dest;
            o.n = sizes[rnd() % 9];
            o.off = rnd() % (AREA - o.n);
            if (rnd() % 2) o.gap = (size_t)(rnd() % 3) * 8; /* (its destination then not right after the last) */
            uint64_t r = rnd() % 10;
            if (i > 0 && r < 5 && ops[i - 1].off + ops[i - 1].n + o.n <= AREA) {
                o.off = ops[i - 1].off + ops[i - 1].n; /* reads on where the last op ended */
            } else if (i > 0 && r < 8 && ops[i - 1].kind == 2 && o.kind == 2) {
                /* the same size at a stride from the last get (a strided run:
                 * the stride of the two before it when they made one, else a
                 * new one, overlapping the last get's bytes or not) */
                const Op q = ops[i - 1];
                size_t st;
                if (i > 1 && ops[i - 2].kind == 2 && ops[i - 2].dest == q.dest && ops[i - 2].n == q.n &&
                    q.off > ops[i - 2].off)
                    st = q.off - ops[i - 2].off;
                else {
                    const size_t choice[6] = {q.n / 2 + 1, q.n + 8, 3 * q.n, q.n + 4096, 2, 24};
                    st = choice[rnd() % 6];
                }
                if (q.off + st + q.n <= AREA) {
                    o.dest = dest = q.dest;
                    o.n = q.n;
                    o.off = q.off + st;
                    o.gap = q.gap; /* (destinations at a constant stride too) */
                }
            }
            ops[i] = o;
            continue;
        }
        if (runs) {
            static const size_t sizes[10] = {0, 1, 4, 8, 8, 8, 12, 16, 100, 300};
            o.kind = rnd() % 5 == 0 ? 0 : 1;
            if (rnd() % 4 == 0) dest = (int)(rnd() % (uint64_t)p);
            o.dest = dest;
            o.n = rnd() % 3 ? sizes[rnd() % 10] : 8;
            o.off = rnd() % (AREA - o.n);
            ops[i] = o;
            continue;
        }
        o.kind = (int)(rnd() % (nogets ? 2u : 3u));
        o.dest = (int)(rnd() % (uint64_t)p);
        uint64_t r = rnd() % 100;
        o.n = r < 60 ? 1 + rnd() % 16 : r < 90 ? rnd() % 3000 : r < 97 ? 5000 + rnd() % 20000 : 70000 + rnd() % 60000;
        if (o.kind == 1 && rnd() % 10 == 0) o.n = 0;
        if (o.n > AREA) o.n = AREA;
        o.off = o.n >= AREA ? 0 : rnd() % (AREA - o.n);
        ops[i] = o;
    }
    return k;
}

int main(int argc, char **argv) {
    bsp_begin(bsp_nprocs());
    uint64_t seed = argc > 1 ? strtoull(argv[1], 0, 10) : 1;
    int steps = argc > 2 ? atoi(argv[2]) : 10, nops = argc > 3 ? atoi(argv[3]) : 20;
    nogets = argc > 4 && (strcmp(argv[4], "nogets") == 0 || strcmp(argv[4], "runs") == 0);
    runs = argc > 4 && strcmp(argv[4], "runs") == 0;
    getruns = argc > 4 && strcmp(argv[4], "getruns") == 0;
    hp = argc > 4 && strcmp(argv[4], "hp") == 0;
    int declare = 0, skew = 0;
    for (int a = 5; a < argc; a++) {
        declare |= strcmp(argv[a], "declare") == 0;
        skew |= strcmp(argv[a], "skew") == 0;
    }
    const struct timespec two_ms = {0, 2000000};
    const size_t area_n = hp ? HP_AREA : AREA;
    int p = bsp_nprocs(), s = bsp_pid();
    unsigned char *area = calloc(area_n, 1), *expect = calloc(area_n, 1), *before = malloc(area_n);
    unsigned char *buf = malloc(area_n), *gotbuf = malloc(area_n);
    Op *ops = malloc(sizeof(Op) * (size_t)(nops + 1));
    int tag = tagsize_at(0);
    bsp_push_reg(area, (bsp_size_t)area_n);
    bsp_set_tagsize(&tag);
    bsp_sync();
    /* every process's area starts zero; expectations are replayed per target */
    for (int step = 0; step < steps; step++) {
        /* my operations */
        if (skew && s == (step + 1) % p) nanosleep(&two_ms, NULL);
        int k = gen(seed, s, step, nops, p, ops);
        int ts = tagsize_at(step), next_ts = tagsize_at(step + 1);
        if (runs) bsp_set_tagsize(&next_ts); /* (in force from the next superstep) */
        unsigned char **getdst = malloc(sizeof(unsigned char *) * (size_t)(k + 1));
        /* the gets' destinations back to back in one buffer (combinable) */
        size_t gtotal = 0, htotal = 0;
        for (int i = 0; i < k; i++) gtotal += ops[i].kind == 2 || ops[i].kind == 4 ? ops[i].n + ops[i].gap : 0;
        for (int i = 0; i < k; i++) htotal += ops[i].kind == 3 ? ops[i].n : 0;
        unsigned char *gbuf = malloc(gtotal + 1), *gnext = gbuf;
        /* the hpputs' sources: unbuffered, untouched until the sync returns */
        unsigned char *hbuf = malloc(htotal + 1), *hnext = hbuf;
        for (int i = 0; i < k; i++) {
            Op o = ops[i];
            for (size_t b = 0; b < o.n; b++) buf[b] = byte_of(s, step, i, b);
            getdst[i] = NULL;
            if (o.kind == 0) bsp_put(o.dest, buf, area, (int)o.off, (int)o.n);
            else if (o.kind == 1) {
                unsigned char t[16];
                memcpy(t, &i, sizeof i); /* the op index, then a pattern */
                for (int b = (int)sizeof i; b < 16; b++) t[b] = (unsigned char)(i * 3 + b);
                bsp_send(o.dest, ts ? t : NULL, buf, (int)o.n);
            }
            else if (o.kind == 3) {
                for (size_t b = 0; b < o.n; b++) hnext[b] = byte_of(s, step, i, b);
                bsp_hpput(o.dest, hnext, area, (int)o.off, (int)o.n);
                hnext += o.n;
            }
            else if (o.n > 0) {
                getdst[i] = gnext;
                gnext += o.n + o.gap;
                if (o.kind == 4) bsp_hpget(o.dest, area, (int)o.off, getdst[i], (int)o.n);
                else bsp_get(o.dest, area, (int)o.off, getdst[i], (int)o.n);
            }
            memset(buf, 0xEE, o.n); /* buffered: changing the source now must not matter */
        }
        memcpy(before, expect, area_n);
        if (declare) {
            /* the other processes that send this one a batch in this superstep */
            int m = 0;
            for (int src = 0; src < p; src++) {
                if (src == s) continue;
                int ks = gen(seed, src, step, nops, p, ops), sends = runs; /* runs: the tag size changes */
                for (int i = 0; i < ks; i++)
                    sends |= ops[i].dest == s && (ops[i].n > 0 || ops[i].kind == 1);
                m += sends;
            }
            if (bspk_expect(m) != BSPK_OK) bsp_abort("random: bspk_expect(%d): %s\n", m, bspk_error_string());
        }
        if (skew && s == step % p) nanosleep(&two_ms, NULL);
        bsp_sync();
        /* expected area: puts from every source in ascending pid, call order
         * (hpputs: bytes no other write of the superstep touches) */
        for (int src = 0; src < p; src++) {
            int ks = gen(seed, src, step, nops, p, ops);
            for (int i = 0; i < ks; i++)
                if ((ops[i].kind == 0 || ops[i].kind == 3) && ops[i].dest == s)
                    for (size_t b = 0; b < ops[i].n; b++) expect[ops[i].off + b] = byte_of(src, step, i, b);
        }
        if (memcmp(area, expect, area_n) != 0) {
            size_t b = 0;
            while (area[b] == expect[b]) b++;
            bsp_abort("random: seed %llu step %d pid %d: area byte %zu is %d, expected %d\n",
                      (unsigned long long)seed, step, s, b, area[b], expect[b]);
        }
        /* my gets read the owners' areas as they were before this sync's puts:
         * replay the owner's expectation before this step */
        k = gen(seed, s, step, nops, p, ops);
        Op *mine = malloc(sizeof(Op) * (size_t)(k + 1));
        memcpy(mine, ops, sizeof(Op) * (size_t)k);
        for (int i = 0; i < k; i++) {
            if ((mine[i].kind != 2 && mine[i].kind != 4) || mine[i].n == 0) continue;
            /* owner's area before this step = all puts (and hpputs) to it in steps < step */
            memset(gotbuf, 0, area_n);
            for (int st = 0; st < step; st++)
                for (int src = 0; src < p; src++) {
                    int ks = gen(seed, src, st, nops, p, ops);
                    for (int j = 0; j < ks; j++)
                        if ((ops[j].kind == 0 || ops[j].kind == 3) && ops[j].dest == mine[i].dest)
                            for (size_t b = 0; b < ops[j].n; b++) gotbuf[ops[j].off + b] = byte_of(src, st, j, b);
                }
            if (memcmp(getdst[i], gotbuf + mine[i].off, mine[i].n) != 0)
                bsp_abort("random: seed %llu step %d pid %d: get %d from pid %d wrong\n",
                          (unsigned long long)seed, step, s, i, mine[i].dest);
        }
        free(mine);
        free(getdst);
        free(gbuf);
        free(hbuf);
        /* expected queue: highest source first, within a source last sent first */
        int want_n = 0, want_bytes = 0, got_n = -1, got_bytes = -1;
        for (int src = 0; src < p; src++) {
            int ks = gen(seed, src, step, nops, p, ops);
            for (int i = 0; i < ks; i++)
                if (ops[i].kind == 1 && ops[i].dest == s) {
                    want_n++;
                    want_bytes += (int)ops[i].n;
                }
        }
        bsp_qsize(&got_n, &got_bytes);
        if (got_n != want_n || got_bytes != want_bytes)
            bsp_abort("random: seed %llu step %d pid %d: bsp_qsize %d messages, %d bytes; expected %d, %d\n",
                      (unsigned long long)seed, step, s, got_n, got_bytes, want_n, want_bytes);
        for (int src = p - 1; src >= 0; src--) {
            int ks = gen(seed, src, step, nops, p, ops);
            for (int i = ks - 1; i >= 0; i--) {
                if (ops[i].kind != 1 || ops[i].dest != s) continue;
                int st = -2, t = -1;
                unsigned char tb[16];
                memset(tb, 0xAB, sizeof tb);
                bsp_get_tag(&st, tb);
                if (ts) memcpy(&t, tb, sizeof t);
                int tag_ok = ts ? t == i : tb[0] == 0xAB; /* (tag size 0: nothing written) */
                for (int b = (int)sizeof t; b < ts; b++) tag_ok &= tb[b] == (unsigned char)(i * 3 + b);
                if (st != (int)ops[i].n || !tag_ok)
                    bsp_abort("random: seed %llu step %d pid %d: message from %d op %d: status %d tag %d (%d bytes), expected %zu %d\n",
                              (unsigned long long)seed, step, s, src, i, st, t, ts, ops[i].n, i);
                void *tp, *pp;
                int n = bsp_hpmove(&tp, &pp);
                /* aligned for any type that fits: 16 bytes, or 8 for at most 8 */
                if (((uintptr_t)pp & (ops[i].n > 8 ? 15 : 7)) != 0 || ((uintptr_t)tp & (ts > 8 ? 15 : 7)) != 0)
                    bsp_abort("random: message %d from %d: payload (%zu bytes) at %p or tag (%d bytes) at %p misaligned\n",
                              i, src, ops[i].n, pp, ts, tp);
                if (ts && memcmp(tp, tb, (size_t)ts) != 0)
                    bsp_abort("random: message %d from %d: bsp_hpmove's tag differs from bsp_get_tag's\n", i, src);
                for (int b = 0; b < n; b++)
                    if (((unsigned char *)pp)[b] != byte_of(src, step, i, (size_t)b))
                        bsp_abort("random: seed %llu step %d pid %d: payload byte %d of message %d from %d wrong\n",
                                  (unsigned long long)seed, step, s, b, i, src);
            }
        }
        int left, bytes;
        bsp_qsize(&left, &bytes);
        if (left != 0) bsp_abort("random: %d messages too many on pid %d\n", left, s);
        (void)before;
    }
    if (s == 0) printf("random ok (seed %llu, %d steps, p=%d)\n", (unsigned long long)seed, steps, p);
    bsp_pop_reg(area);
    bsp_end();
    free(area);
    free(expect);
    free(before);
    free(buf);
    free(gotbuf);
    free(ops);
    return 0;
}
