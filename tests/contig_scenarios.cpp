// tests/contig_scenarios.cpp -- multi-process checks of contiguous regions
// (bspk_malloc_contiguous, bspk_is_contiguous, bspk_recv_contiguous; the
// "Contiguous regions" section of include/bspk.h), through the public C API
// only. Run as `bspkrun -n P contig_scenarios NAME [args]`; each scenario
// verifies its results and ends the job with bspk_abort on the first
// violation. The rows run with 4 KiB frames, so that a few thousand elements
// make a region of many frames. What each run must end with is in the
// SCENARIO_ROW next to the scenario (tests/scenario_table.h); `contig_scenarios
// --list` prints the table and tests/test_multiproc.cpp runs it (p = 1..8, tcp
// and shm).
#include <bspk.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "scenario_table.h"
#include "scenario_util.h"

namespace {

using namespace scen;

#define CONTIG_ENV "BSPK_SYNC_TIMEOUT=60 BSPK_FRAME_SIZE=4096"

bspk_stats stats() {
  bspk_stats s;
  OK(bspk_get_stats(&s));
  return s;
}

// A few milliseconds of delay on some (pid, superstep) pairs, so that
// neighbours run ahead and their copies arrive before their superstep.
void jitter(int step, uint64_t salt) {
  uint64_t r = h3(static_cast<uint64_t>(me), static_cast<uint64_t>(step), salt);
  if (r % 3 == 0) usleep(static_cast<useconds_t>(1000 + r % 4000));
}

// The base address of region p, checked to be contiguous: bspk_is_contiguous,
// bspk_span from element 0 returns every element, and from every element k
// bspk_span returns n - k at base + k * elem_size (as does bspk_elemP).
char* whole(bspk_ptr p, const char* what) {
  const size_t n = bspk_nelems(p), es = bspk_elem_size(p);
  CHECK(bspk_is_contiguous(p) == 1, "%s: bspk_is_contiguous is 0", what);
  void* base = nullptr;
  size_t got = bspk_span(p, &base);
  CHECK(got == n, "%s: bspk_span from element 0 returned %zu of %zu elements", what, got, n);
  if (n == 0) return nullptr;
  auto* b = static_cast<char*>(base);
  CHECK(bspk_elemP(p) == base, "%s: bspk_elemP and bspk_span disagree", what);
  for (size_t k = 1; k < n; ++k) {
    bspk_ptr q = bspk_incr(p, static_cast<ptrdiff_t>(k));
    void* a = nullptr;
    size_t m = bspk_span(q, &a);
    CHECK(m == n - k && a == b + k * es, "%s: bspk_span from element %zu returned %zu elements at offset %td, expected %zu at %zu",
          what, k, m, static_cast<char*>(a) - b, n - k, k * es);
    CHECK(bspk_elemP(q) == a, "%s: bspk_elemP of element %zu", what, k);
  }
  return b;
}

// Verify n elements from p hold pattern(src, step, msg, byte0 + i) (region
// walked with bspk_span, so any region).
void verify_at(bspk_ptr p, size_t n, int src, int step, int msg, uint64_t byte0) {
  for_each_byte(p, n, [&](uint8_t* b, uint64_t i) {
    uint8_t want = pattern(src, step, msg, byte0 + i);
    CHECK(*b == want, "message/region %d from pid %d (superstep %d): byte %llu is %u, expected %u", msg, src, step,
          (unsigned long long)(byte0 + i), *b, want);
  });
}

// ---------------------------------------------------------------- layout
// A contiguous region of many frames, written through its base pointer as a
// plain array (elements of 8 bytes; of 24 bytes, which straddle the 4 KiB
// frames of the run; of a whole frame). Its neighbours see exactly those
// bytes through every way out of the region: a message sent from element 0
// and one from the middle (bspk_send), a fetch (bspk_copy from a remote
// source) and a store (bspk_copy into a remote region). None of them copies:
// bytes_copied stays 0 on every process (p = 1: the fetch and the store are
// local copies and the messages go to the process itself, which copy their
// bytes, and only those).
SCENARIO_ROW({.test = "ContigRegionSeenWholeByFetchSendAndStore_8B", .args = "layout 8 5000",
              .env = CONTIG_ENV, .out = once_per_process("contig layout ok")});
SCENARIO_ROW({.test = "ContigRegionSeenWholeByFetchSendAndStore_24B", .args = "layout 24 1500",
              .env = CONTIG_ENV, .out = once_per_process("contig layout ok")});
SCENARIO_ROW({.test = "ContigRegionSeenWholeByFetchSendAndStore_FrameSizedElements", .args = "layout 4096 6",
              .env = CONTIG_ENV, .out = once_per_process("contig layout ok")});
int layout(int argc, char** argv) {
  const size_t ES = argc > 2 ? strtoull(argv[2], nullptr, 10) : 8;
  const size_t N = argc > 3 ? strtoull(argv[3], nullptr, 10) : 5000;
  const size_t MID = N / 3;
  const int right = (me + 1) % P, left = (me + P - 1) % P;
  const size_t fs = stats().frame_size;
  CHECK(N * ES > 2 * fs, "the region must span several frames (%zu bytes, frames of %zu)", N * ES, fs);

  bspk_ptr c = bspk_malloc_contiguous("cl", me, N, ES);
  CHECK(!bspk_is_null(c), "bspk_malloc_contiguous: %s", bspk_error_string());
  CHECK(bspk_nelems(c) == N && bspk_elem_size(c) == ES && bspk_owner(c) == me, "accessors");
  char* base = whole(c, "fresh contiguous region");
  CHECK(reinterpret_cast<uintptr_t>(base) % fs == 0, "element 0 is not on a frame boundary");
  // An ordinary region of the same shape is not contiguous (the test would
  // not tell the two apart otherwise).
  bspk_ptr plain = bspk_malloc("", 0, N, ES);
  void* pb;
  CHECK(bspk_is_contiguous(plain) == 0 && bspk_span(plain, &pb) < N, "an ordinary region of %zu frames looks contiguous",
        N * ES / fs);
  for (size_t b = 0; b < N * ES; ++b) base[b] = static_cast<char>(pattern(me, 1, 0, b));  // a plain array

  bspk_ptr got = bspk_malloc("", 0, N, ES);       // fetch target (ordinary)
  bspk_ptr into = bspk_malloc("into", me, N, ES);  // store target (ordinary)
  bspk_ptr R = bspk_lookup("cl", right), INTO = bspk_lookup("into", right);
  OK(bspk_sync());
  CHECK(bspk_is_contiguous(R) == (right == me ? 1 : 0), "bspk_is_contiguous of a remote region is %d",
        bspk_is_contiguous(R));
  const bspk_stats s0 = stats();
  // Messages to me: two from the right; the left's fetch from and store into
  // my regions. With p = 1 those two are copies between local regions, whose
  // counting is not what this checks: no declaration then (counted superstep).
  if (P > 1) OK(bspk_expect(4));
  OK(bspk_send(left, c, N));
  OK(bspk_send(left, bspk_incr(c, static_cast<ptrdiff_t>(MID)), N - MID));
  OK(bspk_copy(got, R, N));
  OK(bspk_copy(INTO, c, N));
  jitter(1, 1);
  OK(bspk_sync());
  const bspk_stats s1 = stats();
  bspk_ptr m0 = bspk_recv(), m1 = bspk_recv();
  CHECK(!bspk_is_null(m0) && !bspk_is_null(m1) && bspk_is_null(bspk_recv()), "expected two messages");
  CHECK(bspk_sender_id(m0) == right && bspk_nelems(m0) == N && bspk_nelems(m1) == N - MID, "messages: sender %d, %zu and %zu elements",
        bspk_sender_id(m0), bspk_nelems(m0), bspk_nelems(m1));
  verify_at(m0, N, right, 1, 0, 0);
  verify_at(m1, N - MID, right, 1, 0, MID * ES);
  verify_at(got, N, right, 1, 0, 0);
  verify_at(into, N, left, 1, 0, 0);
  CHECK(whole(c, "the source after the sync") == base, "the contiguous region moved");
  // p = 1: the fetch, the store and the two messages to itself are copies.
  const uint64_t copied = s1.bytes_copied - s0.bytes_copied, want = P > 1 ? 0 : (2 * N + N + (N - MID)) * ES;
  CHECK(copied == want, "sends, stores and fetches from a contiguous region copied %llu bytes (expected %llu)",
        (unsigned long long)copied, (unsigned long long)want);
  OK(bspk_free(m0));
  OK(bspk_free(m1));
  std::printf("contig layout ok pid=%d es=%zu n=%zu\n", me, ES, N);
  return 0;
}

// ---------------------------------------------------------------- target
// A contiguous region as a store and fetch target, under skew. Every
// superstep t each process stores into its right neighbour's contiguous
// region ("ct", right) from element off(t): 0 (four whole frames and a
// partial one), 7 (every fragment partial) or 512 (from the second frame on),
// out of a contiguous source; and fetches its left neighbour's whole region
// into a local contiguous region. Delays let neighbours run ahead and store
// the next superstep's values early. The owner checks through the base
// pointer it got at allocation (it must stay valid: no frame flips) that
// before its sync the region holds the data of t-1 (rule 1), afterwards
// that of t; bspk_span returns the whole region after every boundary; the
// fetched copy is the left region as its owner left t (rule 2); every stored
// and fetched byte was copied into place (bytes_copied grows by exactly those
// bytes) and no frame was flipped.
SCENARIO_ROW({.test = "ContigStoreTargetStaysContiguousUnderSkew", .args = "target 12", .env = CONTIG_ENV,
              .out = once_per_process("contig target ok")});
int target(int argc, char** argv) {
  const int T = argc > 2 ? atoi(argv[2]) : 12;
  const uint64_t N = 4 * 512 + 100;  // uint64 elements: 4 whole 4 KiB frames and 800 bytes
  const int right = (me + 1) % P, left = (me + P - 1) % P, left2 = (me + 2 * P - 2) % P;
  auto off = [](int t) -> uint64_t { return t % 3 == 0 ? 0 : t % 3 == 1 ? 7 : 512; };
  auto I = [](int i, uint64_t k) { return h3(static_cast<uint64_t>(i) + 500, 0xC0, k); };
  auto S = [](int i, int t, uint64_t k) { return h3(static_cast<uint64_t>(i) + 900, static_cast<uint64_t>(t), k); };

  bspk_ptr reg = bspk_malloc_contiguous("ct", me, N, 8);
  bspk_ptr fx = bspk_malloc_contiguous("", 0, N, 8);
  bspk_ptr src = bspk_malloc_contiguous("", 0, N, 8);
  CHECK(!bspk_is_null(reg) && !bspk_is_null(fx) && !bspk_is_null(src), "malloc: %s", bspk_error_string());
  auto* mine = reinterpret_cast<uint64_t*>(whole(reg, "target region"));
  auto* fetched = reinterpret_cast<uint64_t*>(whole(fx, "fetch target"));
  auto* sb = reinterpret_cast<uint64_t*>(whole(src, "store source"));
  for (uint64_t k = 0; k < N; ++k) mine[k] = I(me, k);
  // Models of my region (written by the left) and of the left's (written by left2).
  std::vector<uint64_t> model(N), model_left(N);
  for (uint64_t k = 0; k < N; ++k) {
    model[k] = I(me, k);
    model_left[k] = I(left, k);
  }
  bspk_ptr R = bspk_lookup("ct", right), L = bspk_lookup("ct", left);
  OK(bspk_sync());
  const bspk_stats s0 = stats();
  uint64_t want_copied = 0;
  auto check_mine = [&](const char* when, int t) {
    for (uint64_t k = 0; k < N; ++k)
      CHECK(mine[k] == model[k], "%s of superstep %d: element %llu of my contiguous region holds %016llx, expected %016llx", when,
            t, (unsigned long long)k, (unsigned long long)mine[k], (unsigned long long)model[k]);
  };
  for (int t = 0; t < T; ++t) {
    // The left's store into my region, the right's fetch from it (p = 1: local
    // copies, whose counting is not what this checks: a counted superstep).
    if (P > 1) OK(bspk_expect(2));
    for (uint64_t k = 0; k < N; ++k) sb[k] = S(me, t, k);
    const uint64_t o = off(t), cnt = N - o;
    OK(bspk_copy(bspk_incr(R, static_cast<ptrdiff_t>(o)), src, cnt));
    OK(bspk_copy(fx, L, N));  // p = 1: a local copy, applied after the store above
    if (me == 0 && t == 1) usleep(30000);  // pid 0 a superstep behind its neighbours
    jitter(t, 2);
    check_mine("before the end", t);  // rule 1: not even a store that arrived early
    OK(bspk_sync());
    for (uint64_t k = o; k < N; ++k) {
      model[k] = S(left, t, k - o);
      model_left[k] = S(left2, t, k - o);
    }
    want_copied += cnt * 8 + N * 8;
    CHECK(whole(reg, "target region after a boundary") == reinterpret_cast<char*>(mine),
          "the contiguous region moved at the boundary of superstep %d", t);
    CHECK(whole(fx, "fetch target after a boundary") == reinterpret_cast<char*>(fetched), "the fetch target moved");
    check_mine("after the end", t);
    for (uint64_t k = 0; k < N; ++k)
      CHECK(fetched[k] == model_left[k], "superstep %d: fetched element %llu is %016llx, expected %016llx", t,
            (unsigned long long)k, (unsigned long long)fetched[k], (unsigned long long)model_left[k]);
    const bspk_stats s = stats();
    CHECK(s.frames_flipped == s0.frames_flipped, "superstep %d: %llu frame(s) flipped into contiguous regions", t,
          (unsigned long long)(s.frames_flipped - s0.frames_flipped));
    CHECK(s.bytes_copied - s0.bytes_copied == want_copied,
          "superstep %d: %llu bytes copied, expected %llu (every byte stored or fetched into a contiguous region)", t,
          (unsigned long long)(s.bytes_copied - s0.bytes_copied), (unsigned long long)want_copied);
  }
  std::printf("contig target ok pid=%d copied=%llu\n", me, (unsigned long long)want_copied);
  return 0;
}

// ---------------------------------------------------------------- recv
// bspk_recv_contiguous. Each process sends its right neighbour, in one
// superstep: (0) 1500 uint64 from element 0 of an ordinary region: 3 frames;
// (1) 300 uint64: one 4 KiB buffer; (2) 512 uint64 from element 0: exactly
// one frame; (3) an empty message; (4) 1000 24-byte elements from a
// contiguous region: 6 frames; (5) 100 uint64 from element 500: two frames;
// (6) message 0 again, for bspk_recv. The receiver takes 0-5 with
// bspk_recv_contiguous: each is contiguous with the right contents and
// sender; the multi-frame ones (0, 4, 5) add exactly their bytes to
// bytes_copied, the others nothing. Message 6 through bspk_recv is not
// contiguous and not copied. After everything is freed, the frames in use
// are back where they were.
SCENARIO_ROW({.test = "ContigRecvCopiesOnlyMessagesOfSeveralFrames", .args = "recv", .env = CONTIG_ENV,
              .out = once_per_process("contig recv ok")});
int recv(int, char**) {
  const int right = (me + 1) % P, left = (me + P - 1) % P;
  OK(bspk_sync());
  const bspk_stats base = stats();
  // A counted sync after the baseline: no process sends this test's messages
  // before every process has taken its baseline (otherwise the left
  // neighbour's messages could arrive early and be counted in it: seen under
  // ASan, tcp p = 3, 46 frames at the base against 32 at the end).
  OK(bspk_sync());
  bspk_ptr a = bspk_malloc("", 0, 1500, 8);
  bspk_ptr c24 = bspk_malloc_contiguous("", 0, 1000, 24);
  CHECK(!bspk_is_null(a) && !bspk_is_null(c24), "malloc: %s", bspk_error_string());
  fill(a, 1500, me, 1, 0);
  fill(c24, 1000, me, 1, 4);
  OK(bspk_expect(7));
  OK(bspk_send(right, a, 1500));
  OK(bspk_send(right, a, 300));
  OK(bspk_send(right, a, 512));
  OK(bspk_send(right, a, 0));
  OK(bspk_send(right, c24, 1000));
  OK(bspk_send(right, bspk_incr(a, 500), 100));
  OK(bspk_send(right, a, 1500));
  OK(bspk_sync());
  OK(bspk_free(a));
  OK(bspk_free(c24));
  struct Want {
    size_t n, es;
    uint64_t byte0;
    int msg;
    bool copied;
  };
  const Want wants[] = {{1500, 8, 0, 0, true}, {300, 8, 0, 0, false},   {512, 8, 0, 0, false},
                        {0, 8, 0, 0, false},   {1000, 24, 0, 4, true}, {100, 8, 4000, 0, true}};
  std::vector<bspk_ptr> keep;
  for (size_t i = 0; i < sizeof wants / sizeof *wants; ++i) {
    const Want& w = wants[i];
    const uint64_t before = stats().bytes_copied;
    bspk_ptr m = bspk_recv_contiguous();
    CHECK(!bspk_is_null(m), "message %zu: bspk_recv_contiguous returned BSPK_NULL: %s", i, bspk_error_string());
    CHECK(bspk_nelems(m) == w.n && bspk_elem_size(m) == w.es && bspk_sender_id(m) == left && bspk_owner(m) == me,
          "message %zu: %zu elements of %zu bytes from pid %d", i, bspk_nelems(m), bspk_elem_size(m), bspk_sender_id(m));
    whole(m, "a message from bspk_recv_contiguous");
    verify_at(m, w.n, left, 1, w.msg, w.byte0);
    const uint64_t copied = stats().bytes_copied - before;
    CHECK(copied == (w.copied ? w.n * w.es : 0), "message %zu (%zu bytes): bspk_recv_contiguous copied %llu bytes", i,
          w.n * w.es, (unsigned long long)copied);
    keep.push_back(m);
  }
  const uint64_t before = stats().bytes_copied;
  bspk_ptr m6 = bspk_recv();
  void* b;
  CHECK(!bspk_is_null(m6) && bspk_is_contiguous(m6) == 0 && bspk_span(m6, &b) < 1500,
        "bspk_recv gave a message of several frames as one piece");
  verify_at(m6, 1500, left, 1, 0, 0);
  CHECK(stats().bytes_copied == before, "bspk_recv copied");
  const std::string err = bspk_error_string();
  CHECK(bspk_is_null(bspk_recv_contiguous()), "a message too many");
  CHECK(err == bspk_error_string(), "an empty queue is not an error");
  OK(bspk_free(m6));
  for (bspk_ptr m : keep) OK(bspk_free(m));
  OK(bspk_sync());
  const bspk_stats end = stats();
  // (Frames posted for receiving, rx_frames, grow with bursts: not counted.)
  // (Freed runs kept for reuse, kept_bytes, are memory held, not leaked.)
  CHECK(end.frames_in_use - end.rx_frames == base.frames_in_use - base.rx_frames &&
            end.pool_bytes - end.kept_bytes == base.pool_bytes - base.kept_bytes,
        "frames in use %llu (were %llu; posted for receiving %llu, were %llu), pool bytes %llu (were %llu; kept "
        "runs %llu, were %llu)",
        (unsigned long long)end.frames_in_use, (unsigned long long)base.frames_in_use,
        (unsigned long long)end.rx_frames, (unsigned long long)base.rx_frames, (unsigned long long)end.pool_bytes,
        (unsigned long long)base.pool_bytes, (unsigned long long)end.kept_bytes, (unsigned long long)base.kept_bytes);
  std::printf("contig recv ok pid=%d\n", me);
  return 0;
}

// ---------------------------------------------------------------- named
// A named contiguous region per process, found with bspk_lookup and stored
// into by every process (its slice: 700 uint64, so slices start inside
// frames and some cover whole ones), in the superstep after registration and
// under jitter; the owner reads the result as one array. Then 1000
// allocate/free cycles of anonymous contiguous regions of 2 to 12 frames (and
// 20 of named ones, a new name each time) leave frames_in_use and pool_bytes
// exactly where they were, but for the freed runs kept for reuse
// (kept_bytes, at most 64 MiB): every run is returned.
SCENARIO_ROW({.test = "ContigNamedRegionStoredByEveryProcessAndFreedWithoutLeak", .args = "named", .env = CONTIG_ENV,
              .out = once_per_process("contig named ok")});
int named(int, char**) {
  const uint64_t M = 700, N = M * static_cast<uint64_t>(P);
  auto S = [](int q, uint64_t k) { return h3(static_cast<uint64_t>(q) + 77, 0x5EED, k); };
  bspk_ptr reg = bspk_malloc_contiguous("cn", me, N, 8);
  bspk_ptr src = bspk_malloc("", 0, M, 8);
  CHECK(!bspk_is_null(reg) && !bspk_is_null(src), "malloc: %s", bspk_error_string());
  auto* arr = reinterpret_cast<uint64_t*>(whole(reg, "named region"));
  for (uint64_t k = 0; k < M; ++k) *static_cast<uint64_t*>(bspk_elemP(bspk_incr(src, static_cast<ptrdiff_t>(k)))) = S(me, k);
  std::vector<bspk_ptr> regs;
  for (int j = 0; j < P; ++j) regs.push_back(bspk_lookup("cn", j));
  OK(bspk_sync());
  for (int j = 0; j < P; ++j)
    CHECK(bspk_owner(regs[j]) == j && bspk_nelems(regs[j]) == N, "lookup (\"cn\", %d): owner %d, %zu elements", j,
          bspk_owner(regs[j]), bspk_nelems(regs[j]));
  // No declaration (a counted superstep): the store of each process into its
  // own region is a local copy, and how those are counted is not what this checks.
  for (int j = 0; j < P; ++j) OK(bspk_copy(bspk_incr(regs[j], static_cast<ptrdiff_t>(M) * me), src, M));
  jitter(1, 3);
  OK(bspk_sync());
  CHECK(whole(reg, "named region after the stores") == reinterpret_cast<char*>(arr), "the region moved");
  for (int q = 0; q < P; ++q)
    for (uint64_t k = 0; k < M; ++k)
      CHECK(arr[q * M + k] == S(q, k), "element %llu (the slice of pid %d) holds %016llx", (unsigned long long)(q * M + k), q,
            (unsigned long long)arr[q * M + k]);
  OK(bspk_free(reg));
  OK(bspk_free(src));
  OK(bspk_sync());
  const bspk_stats b = stats();
  static const size_t ess[] = {8, 12, 24, 1};
  for (int i = 0; i < 1000; ++i) {
    const uint64_t r = h3(static_cast<uint64_t>(me), static_cast<uint64_t>(i), 11);
    const size_t es = ess[r % 4], n = (2 * b.frame_size + (r >> 8) % (10 * b.frame_size)) / es;
    bspk_ptr p = bspk_malloc_contiguous("", 0, n, es);
    CHECK(!bspk_is_null(p), "cycle %d: bspk_malloc_contiguous(%zu, %zu): %s", i, n, es, bspk_error_string());
    void* base;
    CHECK(bspk_span(p, &base) == n, "cycle %d: not contiguous", i);
    static_cast<char*>(base)[0] = 1;
    static_cast<char*>(base)[n * es - 1] = 2;
    OK(bspk_free(p));
  }
  for (int i = 0; i < 20; ++i) {
    bspk_ptr p = bspk_malloc_contiguous("cyc", me * 100 + i, 3000, 8);
    CHECK(!bspk_is_null(p), "named cycle %d: %s", i, bspk_error_string());
    OK(bspk_free(p));
    OK(bspk_sync());
  }
  const bspk_stats e = stats();
  // (Freed runs kept for reuse are memory held, not leaked: at most 64 MiB.)
  CHECK(e.frames_in_use - e.rx_frames == b.frames_in_use - b.rx_frames &&
            e.pool_bytes - e.kept_bytes == b.pool_bytes - b.kept_bytes && e.kept_bytes <= (uint64_t{64} << 20),
        "after the cycles: frames in use %llu (were %llu), pool bytes %llu (were %llu), kept runs %llu bytes (were %llu)",
        (unsigned long long)e.frames_in_use, (unsigned long long)b.frames_in_use, (unsigned long long)e.pool_bytes,
        (unsigned long long)b.pool_bytes, (unsigned long long)e.kept_bytes, (unsigned long long)b.kept_bytes);
  std::printf("contig named ok pid=%d\n", me);
  return 0;
}

// ---------------------------------------------------------------- errors
// bspk_malloc_contiguous fails exactly as bspk_malloc does (the same message
// after the call's name, which names bspk_malloc_contiguous; for too large
// an element, a reason of its own), before
// bspk_init too; bspk_is_contiguous is 0, setting no error, for NULL, freed,
// remote and ordinary multi-frame pointers.
SCENARIO_ROW({.test = "ContigErrorsAreThoseOfBspkMalloc", .args = "errors", .env = CONTIG_ENV,
              .out = once_per_process("contig errors ok")});
// The part of the error message after "CALL (pid P, superstep S): ".
std::string after_call(const char* call) {
  std::string e = bspk_error_string();
  CHECK(e.compare(0, std::strlen(call) + 2, std::string(call) + " (") == 0, "message does not name %s: %s", call, e.c_str());
  size_t colon = e.find("): ");
  CHECK(colon != std::string::npos, "message: %s", e.c_str());
  return e.substr(colon + 3);
}
void same_error(const char* name, int idx, size_t n, size_t es, const char* needle) {
  CHECK(bspk_is_null(bspk_malloc(name, idx, n, es)), "bspk_malloc(%zu, %zu) succeeded", n, es);
  std::string a = after_call("bspk_malloc");
  CHECK(bspk_is_null(bspk_malloc_contiguous(name, idx, n, es)), "bspk_malloc_contiguous(%zu, %zu) succeeded", n, es);
  std::string b = after_call("bspk_malloc_contiguous");
  CHECK(a == b, "bspk_malloc says '%s', bspk_malloc_contiguous '%s'", a.c_str(), b.c_str());
  CHECK(b.find(needle) != std::string::npos, "'%s' lacks '%s'", b.c_str(), needle);
}
int errors(int, char**) {
  const size_t fs = stats().frame_size;
  same_error("", 0, 10, 0, "element size is 0");
  // Too large an element: the same error, but the reason fits each call (an
  // element of a contiguous region may straddle frames: bspk.h; the message
  // said "elements never straddle frames" for both until 2026-12-08).
  CHECK(bspk_is_null(bspk_malloc("", 0, 10, fs + 1)), "bspk_malloc(10, frame + 1) succeeded");
  CHECK(after_call("bspk_malloc").find("exceeds the frame size " + std::to_string(fs) +
                                       " (elements never straddle frames; raise BSPK_FRAME_SIZE)") != std::string::npos,
        "%s", bspk_error_string());
  CHECK(bspk_is_null(bspk_malloc_contiguous("", 0, 10, fs + 1)), "bspk_malloc_contiguous(10, frame + 1) succeeded");
  CHECK(after_call("bspk_malloc_contiguous")
                .find("exceeds the frame size " + std::to_string(fs) +
                      " (an element of a contiguous region is at most a frame; raise BSPK_FRAME_SIZE)") !=
            std::string::npos,
        "%s", bspk_error_string());
  same_error(std::string(64, 'x').c_str(), 0, 10, 8, "longer than 63 bytes");
  same_error("", 0, SIZE_MAX / 2, 8, "needs");  // more frames than this machine holds
  bspk_ptr d = bspk_malloc_contiguous("dupc", me, 3000, 8);
  CHECK(!bspk_is_null(d), "%s", bspk_error_string());
  same_error("dupc", me, 10, 8, "already exists");
  OK(bspk_sync());
  const std::string before = bspk_error_string();
  bspk_ptr plain = bspk_malloc("", 0, 3000, 8), one = bspk_malloc("", 0, 10, 8);
  bspk_ptr gone = bspk_malloc_contiguous("", 0, 3000, 8);
  OK(bspk_free(gone));
  CHECK(bspk_is_contiguous(BSPK_NULL) == 0 && bspk_is_contiguous(gone) == 0 && bspk_is_contiguous(plain) == 0,
        "NULL, freed or ordinary multi-frame pointer taken as contiguous");
  CHECK(bspk_is_contiguous(one) == 1 && bspk_is_contiguous(d) == 1 && bspk_is_contiguous(bspk_incr(d, 2999)) == 1,
        "one-frame or contiguous region not taken as contiguous");
  if (P > 1) {
    bspk_ptr R = bspk_lookup("dupc", (me + 1) % P);
    OK(bspk_sync());
    CHECK(bspk_owner(R) == (me + 1) % P && bspk_is_contiguous(R) == 0, "a remote pointer taken as contiguous");
  }
  CHECK(before == bspk_error_string(), "bspk_is_contiguous set an error: %s", bspk_error_string());
  CHECK(bspk_is_null(bspk_recv_contiguous()) && before == bspk_error_string(), "an empty queue is not an error");
  std::printf("contig errors ok pid=%d\n", me);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: contig_scenarios NAME [args] | contig_scenarios --list\n");
    return 2;
  }
  std::string name = argv[1];
  if (name == "--list") return scen::print_table(stdout);  // before any bspk call
  if (name == "errors") {
    CHECK(bspk_is_null(bspk_malloc_contiguous("", 0, 1, 1)), "bspk_malloc_contiguous before bspk_init");
    CHECK(std::string(bspk_error_string()).find("bspk_malloc_contiguous (before bspk_init)") == 0, "%s",
          bspk_error_string());
    CHECK(bspk_is_null(bspk_recv_contiguous()) && bspk_is_contiguous(BSPK_NULL) == 0, "before bspk_init");
  }
  if (bspk_init(&argc, &argv) != BSPK_OK) {
    std::fprintf(stderr, "bspk_init failed: %s\n", bspk_error_string());
    return 1;
  }
  me = bspk_pid();
  P = bspk_nprocs();
  int rc;
  if (name == "layout") rc = layout(argc, argv);
  else if (name == "target") rc = target(argc, argv);
  else if (name == "recv") rc = recv(argc, argv);
  else if (name == "named") rc = named(argc, argv);
  else if (name == "errors") rc = errors(argc, argv);
  else bspk_abort("unknown scenario '%s'", name.c_str());
  if (rc == 0) OK(bspk_finalize());
  return rc;
}
