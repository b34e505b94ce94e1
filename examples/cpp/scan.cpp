// scan (C++) -- examples/scan.c written with bspk.hpp: parallel prefix sum
// with fetches, Algorithm 1 of "Formal semantics for the DRMA programming
// style subset of BSPlib" (Tesson, Loulergue):
//
//   i := 1
//   while 2^(i-1) < p:
//     if pid >= 2^(i-1): get(pid - 2^(i-1), X, Xin)
//     sync
//     if pid >= 2^(i-1): X := Xin + X
//     i := i + 1
//
// X is a vector of m doubles in the named region ("X", pid); each get is a
// bspk::copy fetching the whole vector, which sees X as its owner leaves the
// superstep (the owner adds Xin only after the sync) [BSPk §3]. Process j is
// fetched from by j + 2^(i-1), if that exists: bspk::expect counts it.
// Process j starts with X[k] = j * 1000 + k; the result must be
// X[k] = sum over i <= j of (i * 1000 + k), checked exactly on every process.
//
// Usage: bspkrun -n P scan_cpp [--m M]
#include <bspk.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "example_util.hpp"

int main(int argc, char** argv) {
    bspk::runtime rt(argc, argv);
    size_t m = 100000;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--m") && i + 1 < argc) m = std::stoull(argv[++i]);
        else rt.abort(std::string("usage: scan [--m M] (unknown argument '") + argv[i] + "')");
    }
    const int P = rt.nprocs(), me = rt.pid();
    bspk::region<double> X(rt, "X", me, m), Xin(rt, m);
    std::vector<double> x(m), xin(m);
    for (size_t k = 0; k < m; k++) x[k] = double(me) * 1000.0 + double(k);
    X.copy_from(x.data());
    rt.sync();  // registrations known

    const double t0 = rt.time();
    int rounds = 0;
    for (int d = 1; d < P; d *= 2, rounds++) {
        if (me >= d) bspk::copy(Xin, bspk::lookup<double>(rt, "X", me - d), m);
        rt.sync(bspk::expect{me + d < P ? 1 : 0});
        if (me >= d) {
            X.copy_to(x.data());
            Xin.copy_to(xin.data());
            for (size_t k = 0; k < m; k++) x[k] += xin[k];
            X.copy_from(x.data());
        }
    }
    const double elapsed = rt.time() - t0;

    X.copy_to(x.data());
    double bad = 0;
    for (size_t k = 0; k < m; k++) {
        const double want = 1000.0 * double(me) * double(me + 1) / 2.0 + double(me + 1) * double(k);
        if (x[k] != want) bad = 1;
    }
    const double worst = max_at_pid0(rt, bad);
    if (me != 0) return 0;
    std::printf("scan: prefix sums of %zu-element vectors over %d processes in %d fetch rounds, %.3f s: %s\n", m, P,
                rounds, elapsed, worst == 0 ? "all exact, ok" : "WRONG");
    return worst != 0 ? 1 : 0;
}
