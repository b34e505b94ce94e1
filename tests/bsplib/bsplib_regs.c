/* tests/bsplib/bsplib_regs.c -- randomized registrations checked against a
 * replay: every superstep pushes and pops registrations at random (the same
 * registrations on every process, as the standard requires, but each
 * process registers ITS OWN variable for one: for a registration (b, h)
 * process s registers its variable (b + h s) mod NVAR, so that the address a
 * put names on the caller maps to another variable on the target, and one
 * address may be registered several times on some processes only) and issues
 * puts and gets through the registrations in force, some of them popped in
 * that superstep (which still work), some naming an address registered
 * several times (the newest registration of the address is the one used).
 * Every process replays every process's calls from (seed, pid, superstep)
 * and checks all its variables and its get results after each bsp_sync:
 * puts in ascending source pid then call order, gets reading the values from
 * before the superstep's puts. Sizes straddle frames (run it with a small
 * BSPK_FRAME_SIZE); the registered sizes differ per process.
 * Usage: bsplib_regs SEED STEPS OPS. Prints "regs ok". */
#include <bsp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "splitmix.h"

#define NVAR 4
#define VAR 50000    /* bytes of each variable */
#define MAXSLOTS 12  /* registrations in force at most */

static size_t var_size(int pid) { return VAR - 1000 * (size_t)(pid % 3); }

static unsigned char byte_of(int src, int step, int op, size_t k) {
    return (unsigned char)(src * 131 + step * 31 + op * 7 + k * 13 + (k >> 8) + 1);
}

/* The registrations in force, in push order: (base, h) of each. */
typedef struct { int n; int base[MAXSLOTS + 4], h[MAXSLOTS + 4]; } Regs;
/* The calls of one superstep (the same on every process). */
typedef struct { int npush, push[2], pushh[2], popslot; } Changes;

/* Process q's variable for registration (b, h). */
static int var_of(int b, int h, int q) { return (b + h * q) % NVAR; }
static int slot_var(const Regs *r, int j, int q) { return var_of(r->base[j], r->h[j], q); }

/* The registration process q's address of variable v names: the newest in
 * force that registered it there, or -1. */
static int slot_for(const Regs *r, int v, int q) {
    for (int k = r->n - 1; k >= 0; k--)
        if (slot_var(r, k, q) == v) return k;
    return -1;
}

static Changes changes_at(uint64_t seed, int step, int p, const Regs *r) {
    Changes c = {0, {0, 0}, {0, 0}, -1};
    rng_state = seed * 7777777u + (uint64_t)step * 15485863u;
    c.npush = r->n == 0 ? 1 : (int)(rnd() % 3);
    if (r->n + c.npush > MAXSLOTS) c.npush = 0;
    for (int i = 0; i < c.npush; i++) {
        c.push[i] = (int)(rnd() % NVAR);
        c.pushh[i] = (int)(rnd() % NVAR);
    }
    if (r->n > 1 && rnd() % 3 == 0) {
        int j = (int)(rnd() % (uint64_t)r->n);
        /* a pop names an address: on every process it must be the newest
         * registration of that address (what a pop removes), and no push of
         * this superstep may register that address (push then pop would
         * cancel each other) */
        int ok = 1;
        for (int q = 0; q < p; q++) {
            ok &= slot_for(r, slot_var(r, j, q), q) == j;
            for (int i = 0; i < c.npush; i++) ok &= var_of(c.push[i], c.pushh[i], q) != slot_var(r, j, q);
        }
        if (ok) c.popslot = j;
    }
    return c;
}

static Regs apply_changes(Regs r, const Changes *c) {
    for (int i = 0; i < c->npush; i++) {
        r.base[r.n] = c->push[i];
        r.h[r.n++] = c->pushh[i];
    }
    if (c->popslot >= 0) {
        for (int k = c->popslot; k + 1 < r.n; k++) {
            r.base[k] = r.base[k + 1];
            r.h[k] = r.h[k + 1];
        }
        r.n--;
    }
    return r;
}

typedef struct { int get, dest, var, slot; size_t off, n; } Op; /* var: the caller's variable named */

/* Process src's operations in superstep step, given the registrations in force. */
static int gen_ops(uint64_t seed, int src, int step, int nops, int p, const Regs *r, Op *ops) {
    rng_state = seed * 1000003u + (uint64_t)src * 7919u + (uint64_t)step * 104729u + 17;
    int regd[NVAR], ne = 0; /* src's registered variables */
    for (int v = 0; v < NVAR; v++)
        if (slot_for(r, v, src) >= 0) regd[ne++] = v;
    if (ne == 0) return 0;
    int k = (int)(rnd() % (uint64_t)(nops + 1));
    for (int i = 0; i < k; i++) {
        static const size_t sizes[8] = {1, 8, 8, 100, 3000, 9000, 20000, 40000};
        Op o;
        o.get = rnd() % 3 == 0;
        o.dest = (int)(rnd() % (uint64_t)p);
        o.var = regd[rnd() % (uint64_t)ne];
        o.slot = slot_for(r, o.var, src);
        o.n = sizes[rnd() % 8];
        size_t lim = var_size(o.dest);
        if (o.n > lim) o.n = lim;
        o.off = rnd() % (lim - o.n + 1);
        ops[i] = o;
    }
    return k;
}

int main(int argc, char **argv) {
    bsp_begin(bsp_nprocs());
    uint64_t seed = argc > 1 ? strtoull(argv[1], 0, 10) : 1;
    int steps = argc > 2 ? atoi(argv[2]) : 10, nops = argc > 3 ? atoi(argv[3]) : 16;
    int p = bsp_nprocs(), s = bsp_pid();
    unsigned char *var[NVAR];
    for (int v = 0; v < NVAR; v++) var[v] = calloc(VAR, 1);
    /* state[t][v]: process t's variable v as this process replays it */
    unsigned char *(*state)[NVAR] = malloc(sizeof *state * (size_t)p);
    for (int t = 0; t < p; t++)
        for (int v = 0; v < NVAR; v++) state[t][v] = calloc(VAR, 1);
    unsigned char *buf = malloc(VAR), *gbuf = malloc((size_t)nops * VAR + 1);
    Op *ops = malloc(sizeof(Op) * (size_t)(nops + 1)), *mine = malloc(sizeof(Op) * (size_t)(nops + 1));
    Regs r = {0, {0}, {0}};
    for (int step = 0; step < steps; step++) {
        Changes c = changes_at(seed, step, p, &r);
        int k = gen_ops(seed, s, step, nops, p, &r, mine);
        /* operations through the registrations in force (a slot popped in
         * this superstep still works), then this superstep's pushes and pops */
        size_t gused = 0;
        for (int i = 0; i < k; i++) {
            Op o = mine[i];
            unsigned char *local = var[o.var];
            if (o.get) {
                bsp_get(o.dest, local, (bsp_size_t)o.off, gbuf + gused, (bsp_size_t)o.n);
                gused += o.n;
            } else {
                for (size_t b = 0; b < o.n; b++) buf[b] = byte_of(s, step, i, b);
                bsp_put(o.dest, buf, local, (bsp_size_t)o.off, (bsp_size_t)o.n);
                memset(buf, 0xEE, o.n); /* buffered */
            }
        }
        for (int i = 0; i < c.npush; i++) bsp_push_reg(var[var_of(c.push[i], c.pushh[i], s)], (bsp_size_t)var_size(s));
        if (c.popslot >= 0) bsp_pop_reg(var[slot_var(&r, c.popslot, s)]);
        bsp_sync();
        /* my get results: the owners' variables before this superstep's puts */
        gused = 0;
        for (int i = 0; i < k; i++) {
            Op o = mine[i];
            if (!o.get) continue;
            const unsigned char *want = state[o.dest][slot_var(&r, o.slot, o.dest)] + o.off;
            if (memcmp(gbuf + gused, want, o.n) != 0)
                bsp_abort("regs: seed %llu step %d pid %d: get %d (%zu bytes at %zu of pid %d, slot %d) wrong\n",
                          (unsigned long long)seed, step, s, i, o.n, o.off, o.dest, o.slot);
            gused += o.n;
        }
        /* every process's variables after this superstep: puts in ascending
         * source pid, call order */
        for (int src = 0; src < p; src++) {
            int ks = gen_ops(seed, src, step, nops, p, &r, ops);
            for (int i = 0; i < ks; i++) {
                if (ops[i].get) continue;
                unsigned char *d = state[ops[i].dest][slot_var(&r, ops[i].slot, ops[i].dest)] + ops[i].off;
                for (size_t b = 0; b < ops[i].n; b++) d[b] = byte_of(src, step, i, b);
            }
        }
        for (int v = 0; v < NVAR; v++)
            if (memcmp(var[v], state[s][v], VAR) != 0) {
                size_t b = 0;
                while (var[v][b] == state[s][v][b]) b++;
                bsp_abort("regs: seed %llu step %d pid %d: variable %d byte %zu is %d, expected %d\n",
                          (unsigned long long)seed, step, s, v, b, var[v][b], state[s][v][b]);
            }
        r = apply_changes(r, &c);
    }
    if (s == 0) printf("regs ok (seed %llu, %d steps, p=%d)\n", (unsigned long long)seed, steps, p);
    bsp_end();
    return 0;
}
