// bench/pingpong_cpp -- bench/pingpong.c through the C++ API
// (include/bspk.hpp): BSPk message round trip against raw libfabric, same
// provider, same process, same invocation, same output as bench/pingpong
// (compare the two to see what the C++ layer adds: it should add nothing
// measurable, and no copies).
//
//   bspkrun -n 2 [--provider NAME] pingpong_cpp [--max BYTES] [--time SECONDS]
//
// BSPk: one message per superstep, bspk::expect{1} on the receiver and
// bspk::expect{0} on the sender; pid 1 sends the received message straight
// back (zero copy both ways). A round trip is two supersteps. Raw:
// fi_send/fi_recv ping-pong on a separately opened endpoint. Each size runs 7
// interleaved chunks (raw, BSPk, raw, BSPk, ...) and reports the median.
#include <bspk.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rawfab.h"

static int me;

static int iters_for(double budget_s, double est_us) {
    int n = int(budget_s * 1e6 / (2 * est_us));
    return std::clamp(n, 10, 20000);
}

static double bspk_pingpong(bspk::runtime& rt, const bspk::region<char>& m, size_t bytes, int iters) {
    double t0 = 0;
    for (int it = -iters / 10 - 1; it < iters; it++) {
        if (it == 0) t0 = rt.time();
        if (me == 0) {
            rt.send(1, m.slice(0, bytes));
            rt.sync(bspk::expect{0});
            rt.sync(bspk::expect{1});
            bspk::message<char> back = rt.recv<char>();
            if (!back || back.size() != bytes) rt.abort("pingpong: reply missing");
        } else {
            rt.sync(bspk::expect{1});
            bspk::message<char> r = rt.recv<char>();
            if (!r) rt.abort("pingpong: message missing");
            rt.send(0, r);  // the received frames go straight back
            rt.sync(bspk::expect{0});
        }
    }
    return (rt.time() - t0) / iters / 2;
}

int main(int argc, char** argv) {
    bspk::runtime rt(argc, argv);
    me = rt.pid();
    size_t max = 8u << 20;
    double budget = 0.3;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--max") && i + 1 < argc) max = std::strtoull(argv[++i], nullptr, 10);
        else if (!std::strcmp(argv[i], "--time") && i + 1 < argc) budget = std::atof(argv[++i]);
    }
    if (rt.nprocs() != 2) {
        if (me == 0) std::fprintf(stderr, "pingpong: run with exactly 2 processes (bspkrun -n 2)\n");
        return 2;
    }
    rawfab raw;
    rawfab_open(&raw, max);
    bspk::region<char> m(rt, max);
    size_t i = 0;
    for (bspk::span<char> f : m.frames()) {
        std::memset(f.data(), int(i), f.size());
        i += f.size();
    }
    const bspk_stats st0 = rt.stats();
    if (me == 0) {
        std::printf("# pingpong_cpp: provider %s, frame %llu bytes; half round trip, median of 7 interleaved chunks\n",
                    std::getenv("FI_PROVIDER") ? std::getenv("FI_PROVIDER") : "?", (unsigned long long)st0.frame_size);
        std::printf("%10s %12s %12s %8s %12s %12s %8s\n", "bytes", "raw_us", "bspk_us", "lat_x", "raw_MB/s", "bspk_MB/s",
                    "bw_%");
    }
    for (size_t bytes = 8; bytes <= max; bytes *= (bytes < 64 ? 8 : 4)) {
        // estimate with a few raw iterations, then size both runs alike
        const double est = rawfab_pingpong(&raw, me, bytes, 10) * 1e6;
        int iters = iters_for(budget, est > 1 ? est : 1);
        // both processes must agree on iters: take pid 0's
        {
            bspk::region<int> im(rt, 1);  // a region, not send_buf: bytes_copied stays the BSPk runs' own
            im[0] = iters;
            if (me == 0) rt.send(1, im);
            rt.sync(bspk::expect{me == 1});
            if (me == 1) iters = rt.recv<int>()[0];
        }
        constexpr int CHUNKS = 7;
        double tr[CHUNKS], tb[CHUNKS];
        const int per = iters / CHUNKS > 5 ? iters / CHUNKS : 5;
        for (int c = 0; c < CHUNKS; c++) {
            tr[c] = rawfab_pingpong(&raw, me, bytes, per);
            tb[c] = bspk_pingpong(rt, m, bytes, per);
        }
        std::sort(tr, tr + CHUNKS);
        std::sort(tb, tb + CHUNKS);
        const double traw = tr[CHUNKS / 2], tbspk = tb[CHUNKS / 2];
        if (me == 0)
            std::printf("%10zu %12.2f %12.2f %8.2f %12.1f %12.1f %8.1f\n", bytes, traw * 1e6, tbspk * 1e6, tbspk / traw,
                        double(bytes) / traw / 1e6, double(bytes) / tbspk / 1e6, 100.0 * traw / tbspk);
        std::fflush(stdout);
        if (bytes == max) break;
        if (bytes * 4 > max && bytes < max) bytes = max / 4;
    }
    const bspk_stats st1 = rt.stats();
    if (me == 0)
        std::printf("# runtime bytes copied during the BSPk runs: %llu (both directions, zero-copy forward on pid 1)\n",
                    (unsigned long long)(st1.bytes_copied - st0.bytes_copied));
    rawfab_close(&raw);
    rt.finalize();
    return 0;
}
