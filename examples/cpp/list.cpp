// list (C++) -- examples/list.c written with bspk.hpp: a linked list spread
// over all processes, whose next-pointers are typed comem pointers,
// bspk::remote<node> [BSPk §4]: a comem pointer names (owner, region,
// element) and no local address, so a pointer written into a node by one
// process means the same thing to the process that later fetches the node.
//
// Each process owns M nodes in the named region ("nodes", pid). Global node
// g lives on process g % p at slot g / p; the list visits the nodes in a
// scrambled order (position t holds node (t * a + b) mod (M p)). Every
// process fills in the nodes it owns: the position t as the value, and as
// next a pointer to the node at position t + 1, on any process (bspk::lookup,
// resolved in the superstep before, plus an offset).
//
// Then pid 0 walks the list from the head: one superstep per node, fetching
// the node into a local buffer with bspk::copy and reading its next pointer
// from the fetched bytes. The fetch is counted with bspk::will_send (one
// operation to the node's owner; itself when it owns the node, bspk.h DSM
// rule 5). The walk must see positions 0, 1, 2, ... and end at a NULL
// pointer after M p nodes.
//
// Usage: bspkrun -n P list_cpp [--m M]
#include <bspk.hpp>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

struct node {
    int64_t value;            // position in the list
    bspk::remote<node> next;  // the next node, on any process; NULL at the end
};

int main(int argc, char** argv) {
    bspk::runtime rt(argc, argv);
    uint64_t M = 16;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--m") && i + 1 < argc) M = std::stoull(argv[++i]);
        else rt.abort(std::string("usage: list [--m M] (unknown argument '") + argv[i] + "')");
    }
    const int P = rt.nprocs(), me = rt.pid();
    const uint64_t total = M * uint64_t(P);
    uint64_t a = total / 2 + 1;
    const uint64_t b = 3 % total;
    while (std::gcd(a, total) != 1) a++;  // t -> t*a + b is a permutation
    std::vector<uint64_t> pos_of(total);  // node -> position
    for (uint64_t t = 0; t < total; t++) pos_of[(t * a + b) % total] = t;

    bspk::region<node> nodes(rt, "nodes", me, M);
    std::vector<bspk::remote<node>> region(P);
    for (int q = 0; q < P; q++) region[q] = bspk::lookup<node>(rt, "nodes", q);
    rt.sync();
    for (int q = 0; q < P; q++) region[q] = bspk::lookup<node>(rt, "nodes", q);  // resolved now: exact pointers
    auto node_ptr = [&](uint64_t g) { return region[g % P] + std::ptrdiff_t(g / P); };

    for (uint64_t s = 0; s < M; s++) {
        const uint64_t t = pos_of[s * uint64_t(P) + uint64_t(me)];
        nodes[s] = node{int64_t(t), t + 1 < total ? node_ptr(((t + 1) * a + b) % total) : bspk::remote<node>()};
    }
    const bspk::remote<node> head = node_ptr(b % total);
    rt.sync();

    bspk::region<node> buf(rt, 1);
    std::vector<int> v(P);
    bspk::remote<node> cur = head;
    uint64_t seen = 0;
    bool ok = true;
    const double t0 = rt.time();
    for (uint64_t step = 0; step < total; step++) {
        std::fill(v.begin(), v.end(), 0);
        if (me == 0) {
            if (!cur) rt.abort("the list ended after " + std::to_string(seen) + " nodes");
            // counted at its target, the owner of cur (a local copy when it is ours: v[me])
            v[cur.owner()] = 1;
            bspk::copy(buf, cur, 1);
        }
        rt.sync(bspk::will_send{v});
        if (me == 0) {
            const node nd = buf[0];
            ok = ok && nd.value == int64_t(seen);
            seen++;
            cur = nd.next;
        }
    }
    if (me != 0) return 0;
    ok = ok && !cur;
    std::printf("list: walked %" PRIu64 " nodes spread over %d processes with %" PRIu64 " fetches in %.3f s: %s\n", seen,
                P, total, rt.time() - t0, ok ? "positions in order, ends at NULL, ok" : "WRONG");
    return ok ? 0 : 1;
}
