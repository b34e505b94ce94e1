/*
 * list -- a linked list spread over all processes, whose next-pointers are
 * comem pointers [BSPk §4]: a bspk_ptr names (owner, region, element) and no
 * local address, so a pointer written into a node by one process means the
 * same thing to the process that later fetches the node.
 *
 * Each process owns M nodes in the named region ("nodes", pid). Global node g
 * lives on process g % p at slot g / p; the list visits the nodes in a
 * scrambled order (position t holds node (t * a + b) mod (M p)). Every process
 * fills in the nodes it owns: the position t as the value, and as next a
 * pointer to the node at position t + 1 -- into another process's region,
 * obtained with bspk_lookup (resolved in the superstep before) and bspk_incr.
 *
 * Then pid 0 walks the list from the head: one superstep per node, fetching
 * the node (a 40-byte element) into a local buffer with bspk_copy and reading
 * its next pointer from the fetched bytes. The other processes take part in
 * the supersteps; the fetch is counted with bspk_will_send (pid 0 declares one
 * operation to the node's owner, itself when it owns the node: a copy between
 * two local regions counts at its issuer, bspk.h rule 5). The walk must see
 * positions 0, 1, 2, ... and end at a NULL pointer after M p nodes.
 *
 * Usage: bspkrun -n P list [--m M]
 */
#include <bspk.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t value;  /* position in the list */
    bspk_ptr next;  /* the next node, on any process; BSPK_NULL at the end */
} node;

static uint64_t gcd(uint64_t x, uint64_t y) { return y ? gcd(y, x % y) : x; }

int main(int argc, char **argv) {
    uint64_t M = 16;
    if (bspk_init(&argc, &argv) != BSPK_OK) {
        /* bspk_init has printed why on stderr (unless BSPK_ERRORS=quiet) */
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--m") && i + 1 < argc) M = strtoull(argv[++i], NULL, 10);
        else bspk_abort("usage: list [--m M] (unknown argument '%s')", argv[i]);
    }
    const int P = bspk_nprocs(), me = bspk_pid();
    const uint64_t total = M * (uint64_t)P;
    uint64_t a = total / 2 + 1, b = 3 % total;
    while (gcd(a, total) != 1) a++;                      /* t -> t*a + b is a permutation */
    uint64_t *pos_of = malloc(total * sizeof *pos_of);  /* node -> position */
    if (!pos_of) bspk_abort("out of memory");
    for (uint64_t t = 0; t < total; t++) pos_of[(t * a + b) % total] = t;

    bspk_ptr nodes = bspk_malloc("nodes", me, M, sizeof(node));
    if (bspk_is_null(nodes)) bspk_abort("bspk_malloc: %s", bspk_error_string());
    bspk_ptr *region = malloc((size_t)P * sizeof *region);
    for (int q = 0; q < P; q++) region[q] = bspk_lookup("nodes", q);
    if (bspk_sync() != BSPK_OK) bspk_abort("sync: %s", bspk_error_string());
    for (int q = 0; q < P; q++) region[q] = bspk_lookup("nodes", q);  /* resolved now: exact pointers */

    for (uint64_t s = 0; s < M; s++) {
        uint64_t g = s * (uint64_t)P + (uint64_t)me, t = pos_of[g];
        node *nd = bspk_elemP(bspk_incr(nodes, (ptrdiff_t)s));
        nd->value = (int64_t)t;
        nd->next = BSPK_NULL;
        if (t + 1 < total) {
            uint64_t h = ((t + 1) * a + b) % total;
            nd->next = bspk_incr(region[h % (uint64_t)P], (ptrdiff_t)(h / (uint64_t)P));
        }
    }
    uint64_t g0 = b % total;
    bspk_ptr head = bspk_incr(region[g0 % (uint64_t)P], (ptrdiff_t)(g0 / (uint64_t)P));
    if (bspk_sync() != BSPK_OK) bspk_abort("sync: %s", bspk_error_string());

    bspk_ptr buf = bspk_malloc("", 0, 1, sizeof(node));
    int *v = calloc((size_t)P, sizeof *v);
    bspk_ptr cur = head;
    uint64_t seen = 0;
    int ok = 1;
    double t0 = bspk_time();
    for (uint64_t step = 0; step < total; step++) {
        memset(v, 0, (size_t)P * sizeof *v);
        if (me == 0) {
            if (bspk_is_null(cur)) bspk_abort("the list ended after %llu nodes", (unsigned long long)seen);
            /* counted at its target, src's owner (a fetch from our own
             * region is a local copy, counted here: v[me]) */
            v[bspk_owner(cur)] = 1;
        }
        if (bspk_will_send(v) != BSPK_OK) bspk_abort("will_send: %s", bspk_error_string());
        if (me == 0 && bspk_copy(buf, cur, 1) != BSPK_OK) bspk_abort("copy: %s", bspk_error_string());
        if (bspk_sync() != BSPK_OK) bspk_abort("sync: %s", bspk_error_string());
        if (me == 0) {
            const node *nd = bspk_elemP(buf);
            if (nd->value != (int64_t)seen) ok = 0;
            seen++;
            cur = nd->next;
        }
    }
    if (me == 0) {
        if (!bspk_is_null(cur)) ok = 0;
        printf("list: walked %llu nodes spread over %d processes with %llu fetches in %.3f s: %s\n",
               (unsigned long long)seen, P, (unsigned long long)total, bspk_time() - t0,
               ok ? "positions in order, ends at NULL, ok" : "WRONG");
    }
    bspk_free(buf);
    free(v);
    free(region);
    free(pos_of);
    bspk_finalize();
    return me == 0 && !ok ? 1 : 0;
}
