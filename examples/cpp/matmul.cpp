// matmul (C++) -- examples/matmul.c written with bspk.hpp: Cannon-style
// blocked matrix multiplication C = A B on a q x q process grid (p = q^2),
// after "Portable and efficient BSP RMA benchmarks" Figures 7 (blocks moved
// with stores) and 8 (with fetches).
//
// Process (r, c) holds one N x N block (N = n/q, column-major) of A and of B
// in the named regions ("A", pid) and ("B", pid): initially A(r, r+c) and
// B(r+c, c) (indices mod q). In round k it multiplies the blocks it holds
// into its block of C, and the blocks move one step round the grid, A to the
// left, B up, in one superstep with bspk::expect{2}:
//   store variant: copy(left's A, my A), copy(upper's B, my B);
//   fetch variant: copy(my A, right's A), copy(my B, lower's B).
// One buffer per matrix suffices: copies take effect at the superstep
// boundary, after this round's multiplication read the block [BSPk §3].
// Whole blocks are whole frames, so the runtime copies nothing.
//
// Every process checks its C block against a sequential product; pid 0
// prints time, Gflop/s and the largest difference (exit status 1 if above
// 1e-9).
//
// Usage: bspkrun -n P matmul_cpp [--n N] [--variant store|fetch]   (P a perfect square)
#include <bspk.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "example_util.hpp"

static double a_at(size_t i, size_t j) { return double((i * 31 + j * 17) % 97) / 97.0; }
static double b_at(size_t i, size_t j) { return double((i * 13 + j * 7) % 89) / 89.0 - 0.5; }

int main(int argc, char** argv) {
    bspk::runtime rt(argc, argv);
    size_t n = 512;
    std::string variant = "store";
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--n") && i + 1 < argc) n = std::stoull(argv[++i]);
        else if (!std::strcmp(argv[i], "--variant") && i + 1 < argc) variant = argv[++i];
        else rt.abort(std::string("usage: matmul [--n N] [--variant store|fetch] (unknown argument '") + argv[i] + "')");
    }
    const bool fetch = variant == "fetch";
    if (!fetch && variant != "store") rt.abort("--variant must be store or fetch, not '" + variant + "'");
    const int P = rt.nprocs(), me = rt.pid();
    int q = 0;
    while ((q + 1) * (q + 1) <= P) q++;
    if (q * q != P) rt.abort("matmul needs a square number of processes (1, 4, 9, ...), not " + std::to_string(P));
    if (n % size_t(q)) rt.abort("n = " + std::to_string(n) + " is not a multiple of sqrt(p) = " + std::to_string(q));
    const size_t N = n / size_t(q), NN = N * N;
    const int r = me / q, c = me % q;
    auto pid_of = [q](int rr, int cc) { return ((rr + q) % q) * q + (cc + q) % q; };

    bspk::region<double> A(rt, "A", me, NN), B(rt, "B", me, NN);
    std::vector<double> a(NN), b(NN), at(NN), C(NN);
    // A(r, r+c) and B(r+c, c), column-major: element (i, j) at j*N + i
    const size_t ka = size_t((r + c) % q);
    for (size_t j = 0; j < N; j++)
        for (size_t i = 0; i < N; i++) {
            a[j * N + i] = a_at(size_t(r) * N + i, ka * N + j);
            b[j * N + i] = b_at(ka * N + i, size_t(c) * N + j);
        }
    A.copy_from(a.data());
    B.copy_from(b.data());
    // Store: left's A and upper's B. Fetch: right's A and lower's B.
    auto Apeer = bspk::lookup<double>(rt, "A", fetch ? pid_of(r, c + 1) : pid_of(r, c - 1));
    auto Bpeer = bspk::lookup<double>(rt, "B", fetch ? pid_of(r + 1, c) : pid_of(r - 1, c));
    rt.sync();

    const double t0 = rt.time();
    for (int k = 0; k < q; k++) {
        const bool shift = q > 1 && k + 1 < q;  // the blocks move on after every round but the last
        if (shift && fetch) {
            bspk::copy(A, Apeer, NN);
            bspk::copy(B, Bpeer, NN);
        } else if (shift) {
            bspk::copy(Apeer, A, NN);
            bspk::copy(Bpeer, B, NN);
        }
        // C += A B with A transposed first (columns of a^t against columns of b)
        A.copy_to(a.data());
        B.copy_to(b.data());
        for (size_t j = 0; j < N; j++)
            for (size_t i = 0; i < N; i++) at[i * N + j] = a[j * N + i];
        for (size_t j = 0; j < N; j++)
            for (size_t i = 0; i < N; i++) {
                const double *x = &at[i * N], *y = &b[j * N];
                double s = 0;
                for (size_t l = 0; l < N; l++) s += x[l] * y[l];
                C[j * N + i] += s;
            }
        rt.sync(bspk::expect{shift ? 2 : 0});
    }
    const double elapsed = rt.time() - t0;

    double maxdiff = 0;
    for (size_t j = 0; j < N; j++)
        for (size_t i = 0; i < N; i++) {
            double s = 0;
            for (size_t l = 0; l < n; l++) s += a_at(size_t(r) * N + i, l) * b_at(l, size_t(c) * N + j);
            const double d = std::fabs(C[j * N + i] - s);
            if (d > maxdiff || d != d) maxdiff = d != d ? INFINITY : d;
        }
    const double worst = max_at_pid0(rt, maxdiff);
    if (me != 0) return 0;
    std::printf("matmul (%s variant): %zu x %zu on %d processes (%d x %d blocks of %zu): %.3f s, %.2f Gflop/s\n",
                variant.c_str(), n, n, P, q, q, N, elapsed, 2.0 * double(n) * double(n) * double(n) / elapsed / 1e9);
    std::printf("max abs difference vs sequential: %.3e (%s)\n", worst, worst <= 1e-9 ? "ok" : "FAILED");
    return worst <= 1e-9 ? 0 : 1;
}
