// radix_sort (C++) -- examples/radix_sort.c written with bspk.hpp: parallel
// LSD radix sort of 32-bit keys with BSPk message passing.
//
// The RDXSORT algorithm of the Rdx suite ("RMA portable BSP benchmarks",
// section 5, Fig. 9): four rounds of count sort on 8-bit digits, least
// significant first. Each round
//   1. counts the digits of the local keys and sends the 256 counts to every
//      process (superstep 1, bspk::expect{p}: p messages arrive);
//   2. derives from the p x 256 counts the global position of every key,
//      count-sorts the local keys into one comem region, and for each digit
//      value routes its run of keys to the process(es) owning those positions
//      with rt.send, straight from the sorted region: no packing copy
//      (superstep 2, bspk::expect{runs arriving}: the barrier costs nothing).
// Received runs are not copied either: they are kept as regions (a received
// message is one) and the next round reads them in place, in global-position
// order.
//
// Usage: bspkrun -n P radix_sort_cpp [--n N] [--seed S] [--input FILE]
//   --n N      number of keys (default 16M = 16777216), uniform random
//   --seed S   random seed (default 1); the input is the same for every P
//   --input F  raw little-endian uint32 keys instead (N = file size / 4)
// Verifies the global order and an order-independent checksum against the
// input; prints time and keys/s; exits non-zero if the result is wrong.
#include <bspk.hpp>

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

constexpr int RADIX = 256;
static int me, P;

static uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Block distribution of N positions over P processes.
static uint64_t block_start(uint64_t N, int j) {
    const uint64_t q = N / uint64_t(P), r = N % uint64_t(P);
    return uint64_t(j) * q + (uint64_t(j) < r ? uint64_t(j) : r);
}
static int owner_of(uint64_t N, uint64_t pos) {
    int lo = 0, hi = P - 1;  // largest j with block_start(j) <= pos
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (block_start(N, mid) <= pos) lo = mid; else hi = mid - 1;
    }
    return lo;
}

// The local keys: regions in global-position order.
using Runs = std::vector<bspk::region<uint32_t>>;

template <class F>
static void for_each_key(const Runs& runs, F&& f) {
    for (const bspk::region<uint32_t>& r : runs)
        for (bspk::span<const uint32_t> frame : r.frames())
            for (uint32_t k : frame) f(k);
}

// Appends to a slice of a region, frame by frame.
class Writer {
 public:
    explicit Writer(const bspk::slice<uint32_t>& s) : it_(s.frames().begin()) { frame_ = *it_; }
    void put(uint32_t k) {
        if (at_ == frame_.size()) {
            frame_ = *++it_;
            at_ = 0;
        }
        frame_[at_++] = k;
    }

 private:
    bspk::frame_range<uint32_t>::iterator it_;
    bspk::span<uint32_t> frame_;
    size_t at_ = 0;
};

static std::pair<uint64_t, uint64_t> checksums(const Runs& runs) {
    uint64_t s = 0, c = 0;
    for_each_key(runs, [&](uint32_t k) { s += mix64(k); c++; });
    return {s, c};
}

int main(int argc, char** argv) {
    bspk::runtime rt(argc, argv);
    me = rt.pid();
    P = rt.nprocs();
    uint64_t N = 16u << 20, seed = 1;
    const char* input = nullptr;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--n") && i + 1 < argc) N = std::stoull(argv[++i]);
        else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) seed = std::stoull(argv[++i]);
        else if (!std::strcmp(argv[i], "--input") && i + 1 < argc) input = argv[++i];
        else {
            if (me == 0) std::fprintf(stderr, "usage: radix_sort [--n N] [--seed S] [--input FILE]\n");
            return 2;
        }
    }
    std::ifstream in;
    if (input) {
        in.open(input, std::ios::binary | std::ios::ate);
        if (!in) rt.abort(std::string("radix_sort: cannot open ") + input);
        N = uint64_t(in.tellg()) / 4;
    }

    // ---- input: this process's block of the global sequence ----
    const uint64_t lo = block_start(N, me), nloc = (me + 1 < P ? block_start(N, me + 1) : N) - lo;
    Runs cur;
    {
        bspk::region<uint32_t> keys(rt, nloc);
        uint64_t i = lo;
        if (input) in.seekg(std::streamoff(lo * 4));
        for (bspk::span<uint32_t> frame : keys.frames()) {
            if (input) {
                if (!in.read(reinterpret_cast<char*>(frame.data()), std::streamsize(frame.size_bytes())))
                    rt.abort(std::string("radix_sort: short read from ") + input);
            } else {
                for (uint32_t& k : frame) k = uint32_t(mix64(seed * 0x1000003ull + i++));
            }
        }
        cur.push_back(std::move(keys));
    }
    const auto [in_sum, in_cnt] = checksums(cur);

    std::vector<uint64_t> C(size_t(P) * RADIX);      // C[q*256+d]: keys of digit d on q
    std::vector<uint64_t> posdq(size_t(P) * RADIX);  // first position of (d, q)
    std::array<uint64_t, RADIX> cnt, off, start;
    bspk::region<uint64_t> cnt_msg(rt, RADIX);       // 2 KiB: one frame

    rt.sync();  // start timing together
    const double t0 = rt.time();
    const uint64_t my_lo = block_start(N, me), my_hi = me + 1 < P ? block_start(N, me + 1) : N;
    auto piece_in_my_block = [&](uint64_t pos, uint64_t c) {  // does [pos, pos+c) meet my block?
        return c && std::max(pos, my_lo) < std::min(pos + c, my_hi);
    };

    for (int round = 0; round < 4; round++) {
        const int shift = 8 * round;
        // ---- superstep 1: local histogram to everyone ----
        cnt.fill(0);
        for_each_key(cur, [&](uint32_t k) { cnt[(k >> shift) & 0xFF]++; });
        cnt_msg.copy_from(cnt.data());
        for (int q = 0; q < P; q++) rt.send(q, cnt_msg);
        rt.sync(bspk::expect{P});
        for (bspk::message<uint64_t>& m : rt.messages<uint64_t>()) m.copy_to(&C[size_t(m.sender()) * RADIX]);

        // ---- parallel prefix: global position of (digit d, process q)'s first key ----
        uint64_t base = 0;
        int expected = 0;
        for (int d = 0; d < RADIX; d++)
            for (int q = 0; q < P; q++) {
                const uint64_t c = C[size_t(q) * RADIX + d];
                posdq[size_t(d) * P + q] = base;
                if (q == me) off[d] = base;
                if (piece_in_my_block(base, c)) expected++;
                base += c;
            }

        // ---- superstep 2: count-sort locally into one region, route runs ----
        bspk::region<uint32_t> sorted(rt, nloc);
        std::vector<Writer> wc;
        wc.reserve(RADIX);
        uint64_t acc = 0;
        for (int d = 0; d < RADIX; d++) {
            start[d] = acc;
            wc.emplace_back(sorted.slice(acc, cnt[d]));
            acc += cnt[d];
        }
        for_each_key(cur, [&](uint32_t k) { wc[(k >> shift) & 0xFF].put(k); });
        // the keys of digit d go to positions [off[d], off[d]+cnt[d])
        for (int d = 0; d < RADIX; d++)
            for (uint64_t done = 0; done < cnt[d];) {
                const uint64_t pos = off[d] + done;
                const int dest = owner_of(N, pos);
                const uint64_t end = dest + 1 < P ? block_start(N, dest + 1) : N;
                const uint64_t len = std::min(end - pos, cnt[d] - done);
                rt.send(dest, sorted.slice(start[d] + done, len));
                done += len;
            }
        rt.sync(bspk::expect{expected});
        // The previous round's keys, and the sorted region whose runs were sent
        // (its sends completed at the sync), are no longer needed.
        cur.clear();

        // Received runs arrive by sender, then digit; position order is by
        // digit, then sender: place each message in its (d, q) slot.
        std::vector<bspk::region<uint32_t>> slot(size_t(RADIX) * P);
        std::vector<int> next_d(P);
        for (bspk::message<uint32_t>& m : rt.messages<uint32_t>()) {
            const int q = m.sender();
            int d = next_d[q];  // next digit for which q has a piece in my block
            while (d < RADIX && !piece_in_my_block(posdq[size_t(d) * P + q], C[size_t(q) * RADIX + d])) d++;
            if (d >= RADIX) rt.abort("radix_sort: unexpected message from pid " + std::to_string(q));
            next_d[q] = d + 1;
            slot[size_t(d) * P + q] = std::move(m);
        }
        for (bspk::region<uint32_t>& r : slot)
            if (r) cur.push_back(std::move(r));
    }
    const double t1 = rt.time();

    // ---- verify: local order, order across processes, checksum ----
    uint64_t bad = 0, first = UINT64_MAX, last = 0, have = 0;
    for_each_key(cur, [&](uint32_t k) {
        if (have && k < last) bad++;
        if (!have) first = k;
        last = k;
        have = 1;
    });
    const auto [out_sum, out_cnt] = checksums(cur);
    const uint64_t report[8] = {in_sum, in_cnt, out_sum, out_cnt, bad, first, last, have};
    rt.send_buf(0, report, 8);
    rt.sync(bspk::expect{me == 0 ? P : 0});
    if (me != 0) return 0;
    uint64_t is = 0, ic = 0, os = 0, oc = 0, nbad = 0, prev_last = 0, seen = 0;
    for (bspk::message<uint64_t>& v : rt.messages<uint64_t>()) {  // in pid order
        is += v[0], ic += v[1], os += v[2], oc += v[3], nbad += v[4];
        if (v[7]) {
            if (seen && v[5] < prev_last) nbad++;
            prev_last = v[6];
            seen = 1;
        }
    }
    const bool ok = nbad == 0 && is == os && ic == N && oc == N;
    const double s = t1 - t0;
    std::printf("radix_sort: %" PRIu64 " keys on %d processes: %.3f s, %.2f Mkeys/s; order %s, checksum %s "
                "(%016" PRIx64 ")\n",
                N, P, s, s > 0 ? double(N) / s / 1e6 : 0.0, nbad ? "WRONG" : "ok",
                (is == os && ic == oc && oc == N) ? "ok" : "WRONG", os);
    return ok ? 0 : 1;
}
