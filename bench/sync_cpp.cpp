// bench/sync_cpp -- bench/sync.c through the C++ API (include/bspk.hpp): the
// cost of an empty superstep under each way of counting, against a raw
// libfabric dissemination barrier in the same process. Same modes, same
// baseline, same output as bench/sync (compare the two to see what the C++
// layer adds: it should add nothing measurable).
//
//   bspkrun -n P [--provider NAME] sync_cpp [--time SECONDS]
//
// Modes (one empty superstep = rt.sync with nothing sent):
//   expect0    rt.sync(bspk::expect{0}): no traffic at all [BSPk §5];
//   will_send  rt.sync(bspk::will_send{zeros}): the vectors are summed;
//   counted    rt.sync(): the runtime sums the actual send counts.
#include <bspk.hpp>

#include <sched.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rawfab.h"

constexpr int NSLOTS = 64;
static int me, P;
static rawfab raw;
static struct fi_context2 slot_ctx[NSLOTS];
static int got[2][32];

static void post_slot(int i) {
    ssize_t rc;
    while ((rc = fi_recv(raw.ep, static_cast<char*>(raw.buf) + raw.len + 8 * size_t(i), 8, raw.desc, FI_ADDR_UNSPEC,
                         &slot_ctx[i])) == -FI_EAGAIN) {
        struct fi_cq_entry e;
        (void)fi_cq_read(raw.cq, &e, 0);
    }
    RAW_CHECK(rc);
}

static void raw_progress() {
    struct fi_cq_entry e[16];
    const ssize_t k = fi_cq_read(raw.cq, e, 16);
    if (k == -FI_EAGAIN) {
        sched_yield();
        return;
    }
    if (k < 0) bspk_abort("raw barrier: cq error");
    for (ssize_t i = 0; i < k; i++) {
        if (e[i].op_context >= static_cast<void*>(&slot_ctx[0]) && e[i].op_context <= static_cast<void*>(&slot_ctx[NSLOTS - 1])) {
            const int s = int(static_cast<struct fi_context2*>(e[i].op_context) - slot_ctx);
            uint64_t v;
            std::memcpy(&v, static_cast<char*>(raw.buf) + raw.len + 8 * size_t(s), 8);
            got[(v >> 8) & 1][v & 0xFF]++;
            post_slot(s);
        }
    }
}

static void raw_barrier(uint64_t iter) {
    static struct fi_context2 sctx;
    int round = 0;
    for (int d = 1; d < P; d <<= 1, round++) {
        const uint64_t v = iter << 8 | uint64_t(round);
        std::memcpy(raw.buf, &v, 8);
        ssize_t rc;
        while ((rc = fi_send(raw.ep, raw.buf, 8, raw.desc, raw.peers[(me + d) % P], &sctx)) == -FI_EAGAIN) raw_progress();
        RAW_CHECK(rc);
        while (got[iter & 1][round] == 0) raw_progress();
        got[iter & 1][round]--;
    }
}

// The same loop as bench/sync.c's (strcmp per iteration included), so that
// the two programs differ only in the API they call.
static double run_mode(bspk::runtime& rt, const char* mode, int iters, const std::vector<int>& zeros) {
    double t0 = 0;
    for (int it = -iters / 10 - 1; it < iters; it++) {
        if (it == 0) t0 = rt.time();
        if (!std::strcmp(mode, "raw")) {
            raw_barrier(uint64_t(it + iters));
            continue;
        }
        if (!std::strcmp(mode, "expect0")) rt.sync(bspk::expect{0});
        else if (!std::strcmp(mode, "will_send")) rt.sync(bspk::will_send{zeros});
        else rt.sync();
    }
    return (rt.time() - t0) / iters;
}

int main(int argc, char** argv) {
    bspk::runtime rt(argc, argv);
    me = rt.pid();
    P = rt.nprocs();
    double budget = 0.5;
    for (int i = 1; i < argc; i++)
        if (!std::strcmp(argv[i], "--time") && i + 1 < argc) budget = std::atof(argv[++i]);
    rawfab_open(&raw, 4096);
    for (int i = 0; i < NSLOTS; i++) post_slot(i);
    const std::vector<int> zeros(size_t(P), 0);
    rt.sync();  // a counted superstep aligns everyone before each measurement
    double t_raw = 0;
    const char* modes[] = {"raw", "expect0", "will_send", "counted"};
    if (me == 0) {
        std::printf("# sync_cpp: p=%d provider %s; microseconds per empty superstep, one run\n", P,
                    std::getenv("FI_PROVIDER") ? std::getenv("FI_PROVIDER") : "?");
        std::printf("%4s %-10s %12s %10s\n", "p", "mode", "us/step", "vs_raw");
    }
    for (int m = 0; m < 4; m++) {
        // calibrate on pid 0, share the iteration count
        const double est = run_mode(rt, modes[m], 20, zeros);
        int iters = int(budget / (est > 1e-7 ? est : 1e-7));
        if (iters > 200000) iters = 200000;
        if (iters < 50) iters = 50;
        {
            bspk::region<int> im(rt, 1);
            im[0] = iters;
            if (me == 0)
                for (int q = 0; q < P; q++) rt.send(q, im);
            rt.sync();
            iters = rt.recv<int>()[0];
        }
        const double t = run_mode(rt, modes[m], iters, zeros);
        rt.sync();
        if (m == 0) t_raw = t;
        if (me == 0) std::printf("%4d %-10s %12.2f %10.2f\n", P, modes[m], t * 1e6, t / t_raw);
        std::fflush(stdout);
    }
    rawfab_close(&raw);
    rt.finalize();
    return 0;
}
