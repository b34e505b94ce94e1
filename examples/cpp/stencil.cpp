// stencil (C++) -- examples/stencil.c written with bspk.hpp: the DSM program
// of the BSPk paper, Figure 5, as a 2D Jacobi heat-diffusion solver. The
// n x n grid is split into slices of rows; the top edge is held at 1.0, the
// other edges at 0.0. Every iteration replaces each interior point by the
// mean of its four neighbours. Steps (0)-(14) are Figure 5's; one extra
// superstep before the loop stores the initial boundary rows. Every process
// then runs the sequential solver and compares its rows; pid 0 prints the
// largest absolute difference (exit status 1 if above 1e-12).
//
// Usage: bspkrun -n P stencil_cpp [--n N] [--iters K]
#include <bspk.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "example_util.hpp"

// New value of a row (global index gi) from the rows above/below.
static void update_row(double* out, const double* up, const double* row, const double* down, size_t n, size_t gi,
                       size_t N) {
    if (gi == 0 || gi == N - 1) {  // fixed edges
        std::memcpy(out, row, n * sizeof(double));
        return;
    }
    out[0] = row[0];
    out[n - 1] = row[n - 1];
    for (size_t j = 1; j + 1 < n; j++) out[j] = 0.25 * (up[j] + down[j] + row[j - 1] + row[j + 1]);
}

static void init_row(double* row, size_t n, size_t gi) {
    for (size_t j = 0; j < n; j++) row[j] = gi == 0 ? 1.0 : 0.0;
}

int main(int argc, char** argv) {
    bspk::runtime rt(argc, argv);
    size_t N = 256;
    int iters = 200;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--n") && i + 1 < argc) N = std::stoull(argv[++i]);
        else if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) iters = std::stoi(argv[++i]);
        else rt.abort(std::string("usage: stencil [--n N] [--iters K] (unknown argument '") + argv[i] + "')");
    }
    const int P = rt.nprocs(), MyId = rt.pid();
    if (N < 3 || N < size_t(P)) rt.abort("need n >= 3 and n >= p (n = " + std::to_string(N) + ")");
    const size_t r0 = size_t(MyId) * N / size_t(P), r1 = size_t(MyId + 1) * N / size_t(P), rows = r1 - r0;
    const int north = MyId - 1, south = MyId + 1;  // -1 / P: no neighbour
    const bool has_north = north >= 0, has_south = south < P;
    const int numNeighbors = has_north + has_south;

    // (0)-(3): the comem buffers, named for bspk::lookup
    bspk::region<double> FromNorth(rt, "FromNorth", MyId, N), FromSouth(rt, "FromSouth", MyId, N);
    bspk::region<double> ToNorth(rt, "ToNorth", MyId, N), ToSouth(rt, "ToSouth", MyId, N);
    // (4): the slice of the grid, in ordinary memory
    std::vector<double> MyArray(rows * N), NewArray(rows * N), up(N), down(N);
    for (size_t i = 0; i < rows; i++) init_row(&MyArray[i * N], N, r0 + i);
    // (5)-(6)
    bspk::remote<double> NorthBufName, SouthBufName;
    if (has_north) NorthBufName = bspk::lookup<double>(rt, "FromSouth", north);
    if (has_south) SouthBufName = bspk::lookup<double>(rt, "FromNorth", south);
    rt.sync();  // (7)

    // The initial boundary rows.
    ToNorth.copy_from(&MyArray[0]);
    ToSouth.copy_from(&MyArray[(rows - 1) * N]);
    if (has_north) bspk::copy(NorthBufName, ToNorth, N);
    if (has_south) bspk::copy(SouthBufName, ToSouth, N);
    rt.sync(bspk::expect{numNeighbors});

    const double t0 = rt.time();
    for (int it = 0; it < iters; it++) {
        // Ghost rows: what the neighbours stored in the last superstep.
        if (has_north) FromNorth.copy_to(up.data());
        if (has_south) FromSouth.copy_to(down.data());
        auto row = [&](size_t i) { return &MyArray[i * N]; };
        auto above = [&](size_t i) { return i == 0 ? (has_north ? up.data() : nullptr) : row(i - 1); };
        auto below = [&](size_t i) { return i + 1 == rows ? (has_south ? down.data() : nullptr) : row(i + 1); };
        // (9)-(10): the new first row, needed by north
        update_row(&NewArray[0], above(0), row(0), below(0), N, r0, N);
        if (has_north) {
            ToNorth.copy_from(&NewArray[0]);
            bspk::copy(NorthBufName, ToNorth, N);
        }
        // (11)-(12): the new last row, needed by south
        const size_t last = rows - 1;
        update_row(&NewArray[last * N], above(last), row(last), below(last), N, r0 + last, N);
        if (has_south) {
            ToSouth.copy_from(&NewArray[last * N]);
            bspk::copy(SouthBufName, ToSouth, N);
        }
        // (13): the rest
        for (size_t i = 1; i + 1 < rows; i++) update_row(&NewArray[i * N], row(i - 1), row(i), row(i + 1), N, r0 + i, N);
        std::swap(MyArray, NewArray);
        rt.sync(bspk::expect{numNeighbors});  // (8) and (14): the barrier costs nothing [BSPk §6.2]
    }
    const double elapsed = rt.time() - t0;

    // Sequential reference for my rows (same arithmetic, same order).
    std::vector<double> A(N * N), B(N * N);
    for (size_t i = 0; i < N; i++) init_row(&A[i * N], N, i);
    for (int it = 0; it < iters; it++) {
        for (size_t i = 0; i < N; i++)
            update_row(&B[i * N], i ? &A[(i - 1) * N] : nullptr, &A[i * N], i + 1 < N ? &A[(i + 1) * N] : nullptr, N, i,
                       N);
        std::swap(A, B);
    }
    double maxdiff = 0;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < N; j++) {
            const double d = std::fabs(MyArray[i * N + j] - A[(r0 + i) * N + j]);
            if (d > maxdiff || d != d) maxdiff = d != d ? INFINITY : d;
        }

    const double worst = max_at_pid0(rt, maxdiff);
    if (MyId != 0) return 0;
    std::printf("stencil: %zu x %zu grid, %d iterations on %d processes: %.3f s, center %.6f\n", N, N, iters, P,
                elapsed, A[(N / 2) * N + N / 2]);
    std::printf("max abs difference vs sequential: %.3e (%s)\n", worst, worst <= 1e-12 ? "ok" : "FAILED");
    return worst <= 1e-12 ? 0 : 1;
}
