// tests/bsplib/bsplib_scenarios.cpp -- multi-process checks of the BSPlib
// layer (bsplib/bsp.h), through the BSPlib interface only (plus bspk_expect
// from <bspk.h> for the lazy-barrier runs). Run as
// `bspkrun -n P bsplib_scenarios NAME [args]`; each scenario verifies its own
// results and ends the job with bsp_abort ("CHECK FAILED ...") on the first
// violation. What each run must end with is in the SCENARIO_ROW next to the
// scenario (tests/scenario_table.h); `bsplib_scenarios --list` prints the
// table and tests/test_multiproc.cpp runs it (p = 1..8, tcp and shm).
//
// The positive scenarios (start, drma, reg, bsmp) run under injected skew:
// some (pid, superstep) pairs sleep 20-45 ms before or after bsp_sync, so
// that under lazy barriers (mode "expect": bspk_expect(m) before every
// bsp_sync, m as documented in bsp.h) processes run supersteps apart. Mode
// "counted" is the plain BSPlib program.
//
// Error scenarios (err_*) each provoke one error and expect the job to end,
// non-zero, before the row's time limit, with a message naming the function
// and the problem.
#include <bsp.h>
#include <bspk.h>
#include <sys/stat.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "scenario_table.h"

// ---- Types: signed int, as in BSPlib 1998 / BSPonMPI.
static_assert(std::is_same_v<bsp_pid_t, int>, "bsp_pid_t is int");
static_assert(std::is_same_v<bsp_nprocs_t, int>, "bsp_nprocs_t is int");
static_assert(std::is_same_v<bsp_size_t, int>, "bsp_size_t is int");

namespace {

using namespace scen;

int me = -1, P = 0;
bool expect_mode = false;
int step = 0;  // supersteps completed (by sync_m)

#define CHECK(cond, ...)                                                          \
  do {                                                                            \
    if (!(cond)) {                                                                \
      char _m[600];                                                               \
      std::snprintf(_m, sizeof _m, __VA_ARGS__);                                  \
      bsp_abort("CHECK FAILED at %s:%d (%s): pid %d superstep %d: %s\n", __FILE__, \
                __LINE__, #cond, me, step, _m);                                   \
    }                                                                             \
  } while (0)

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
uint8_t pat(int src, int tag, size_t byte) {
  return static_cast<uint8_t>(mix((static_cast<uint64_t>(src) << 40) ^ (static_cast<uint64_t>(tag) << 24) ^ byte));
}
void fill(void* p, size_t n, int src, int tag) {
  for (size_t i = 0; i < n; ++i) static_cast<uint8_t*>(p)[i] = pat(src, tag, i);
}
bool holds(const void* p, size_t n, int src, int tag, size_t from = 0) {
  for (size_t i = 0; i < n; ++i)
    if (static_cast<const uint8_t*>(p)[i] != pat(src, tag, from + i)) return false;
  return true;
}

int right() { return (me + 1) % P; }
int left() { return (me + P - 1) % P; }

// The number of distinct processes other than this one among `senders`.
int others(std::initializer_list<int> senders) {
  std::set<int> s;
  for (int x : senders)
    if (x != me) s.insert(x);
  return static_cast<int>(s.size());
}
int all_others() { return P - 1; }

// A sleep of 20-45 ms on some (pid, superstep, where) triples.
void skew(int where) {
  uint64_t r = mix(static_cast<uint64_t>(me) * 1000003u + static_cast<uint64_t>(step) * 31u + where);
  if (r % 4 == 0) usleep(static_cast<useconds_t>(20000 + (r >> 8) % 25000));
}

// End the superstep; m: how many OTHER processes send this one a batch in it
// (bsp.h's header comment). In mode "expect" it is declared with bspk_expect.
void sync_m(int m) {
  skew(1);
  if (expect_mode) {
    int rc = bspk_expect(m);
    CHECK(rc == BSPK_OK, "bspk_expect(%d): %s", m, bspk_error_string());
  }
  bsp_sync();
  ++step;
  skew(2);
}

// Do this job's syncs go through the board (one host, BSPK_BSPLIB_BOARD not
// off)? There a declaration is checked, not used: every sync behaves as a
// counted one (README "BSPlib programs", "On one host").
bool board_path() {
  const char* v = std::getenv("BSPK_BSPLIB_BOARD");
  bool off = false;
  for (const char* w : {"off", "0", "no", "false"}) off |= v && strcasecmp(v, w) == 0;
  return bspk_sync_allgather_shared() == 1 && !off;
}

// This process's counters now (bspk_get_stats), or the job ends.
bspk_stats stats_now() {
  bspk_stats s{};
  CHECK(bspk_get_stats(&s) == BSPK_OK, "bspk_get_stats: %s", bspk_error_string());
  return s;
}

void set_mode(int argc, char** argv) {
  std::string mode = argc > 2 ? argv[2] : "counted";
  CHECK(mode == "counted" || mode == "expect", "mode '%s' is neither counted nor expect", mode.c_str());
  expect_mode = mode == "expect";
}

void begin_all() {
  bsp_begin(bsp_nprocs());
  me = bsp_pid();
  P = bsp_nprocs();
}

// Rows of the positive scenarios: every p, tcp and shm, counted and expect.
// _Counted: on one host a counted sync's batches ride the shared-memory
// board; _LazyExpect: with bspk_expect before every sync (on one host taken
// back and checked, the board as for _Counted); _CountedMessages and
// _LazyExpectMessages: batches as messages (BSPK_BSPLIB_BOARD=off, the path
// of jobs across hosts), where the declaration is the sync's.
#define POSITIVE_ROWS(Test, name, marker)                                                      \
  SCENARIO_ROW({.test = Test "_Counted", .args = name " counted", .out = once_per_process(marker), \
                .limit_s = 90, .suite = "BSPlib"});                                            \
  SCENARIO_ROW({.test = Test "_CountedMessages", .args = name " counted", .procs = p_list({2, 4}), \
                .env = "BSPK_BSPLIB_BOARD=off", .out = once_per_process(marker), .limit_s = 90, .suite = "BSPlib"}); \
  SCENARIO_ROW({.test = Test "_LazyExpect", .args = name " expect", .out = once_per_process(marker), .limit_s = 90, \
                .suite = "BSPlib"});                                                                 \
  SCENARIO_ROW({.test = Test "_LazyExpectMessages", .args = name " expect", .procs = p_list({2, 4}), \
                .env = "BSPK_BSPLIB_BOARD=off", .out = once_per_process(marker), .limit_s = 90, .suite = "BSPlib"})

// ================================================================ start
// Before bsp_begin, bsp_nprocs() is the number of processes launched.
// bsp_begin(maxprocs) takes maxprocs from pid 0 only (the others pass 0 here;
// pid 0 is known from BSPK_RANK, set by the launcher); with maxprocs < N the
// processes with pid >= maxprocs leave at bsp_begin with status 0; maxprocs >
// N runs N. Without bsp_init every process runs main (a line after bsp_end
// per process of the SPMD section). Every process's stdout arrives whole, line
// by line: 200 lines each, every one counted per pid. bsp_time runs from 0.
// Every pid of the section is distinct and in range (pid 0 collects them).
Matches start_out(int p, int maxprocs) {
  const int q = std::min(p, maxprocs);
  Matches m = {exactly(p, "before begin nprocs=" + std::to_string(p) + "\n"),
               exactly(q, Re{"spmd pid=\\d+ nprocs=" + std::to_string(q) + "\\n"}),
               exactly(q, Re{"after end pid=\\d+\\n"}), exactly(1, "pids complete\n"),
               exactly(200 * q, Re{"<<out pid=\\d+ i=\\d+ [a-z]+>>\\n"})};
  for (int k = 0; k < q; ++k) {
    m.push_back(exactly(200, Re{"<<out pid=" + std::to_string(k) + " i=\\d+ abcdefghijklmnopqrstuvwxyz>>\\n"}));
    m.push_back(exactly(1, "after end pid=" + std::to_string(k) + "\n"));
  }
  return m;
}
SCENARIO_ROW({.test = "StartNprocsBeforeBeginAndEveryProcessRunsMainAndOutputWhole", .args = "start all",
              .out = [](int p) { return start_out(p, 1 << 20); }, .suite = "BSPlib"});
SCENARIO_ROW({.test = "StartMaxprocsFromPid0LeavesTheOthersWithStatus0", .args = "start 2", .procs = p_range(3, 8),
              .out = [](int p) { return start_out(p, 2); }, .suite = "BSPlib"});
SCENARIO_ROW({.test = "StartMaxprocsAboveLaunchedRunsLaunched", .args = "start 100", .procs = p_list({2, 3}),
              .providers = {"shm"}, .out = [](int p) { return start_out(p, 100); }, .suite = "BSPlib"});
int start(int argc, char** argv) {
  const int launched = bsp_nprocs();
  std::printf("before begin nprocs=%d\n", launched);
  std::fflush(stdout);
  const char* r = std::getenv("BSPK_RANK");
  const bool pid0 = !r || std::atoi(r) == 0;
  const std::string arg = argc > 2 ? argv[2] : "all";
  const int want = arg == "all" ? launched : std::atoi(arg.c_str());
  bsp_begin(pid0 ? want : 0);
  me = bsp_pid();
  P = bsp_nprocs();
  const int q = std::min(want, launched);
  CHECK(P == q, "bsp_nprocs() is %d in the SPMD section, expected %d (launched %d, maxprocs %d)", P, q, launched, want);
  CHECK(me >= 0 && me < P, "bsp_pid() %d out of [0, %d)", me, P);
  CHECK(!pid0 || me == 0, "the process with BSPK_RANK=0 is pid %d", me);
  const double t0 = bsp_time();
  CHECK(t0 >= 0 && t0 < 30, "bsp_time() right after bsp_begin is %g", t0);
  std::printf("spmd pid=%d nprocs=%d\n", me, P);
  // Every pid distinct: each puts a 1 into its own slot at pid 0.
  std::vector<int> seen(static_cast<size_t>(P), 0);
  bsp_push_reg(seen.data(), P * static_cast<int>(sizeof(int)));
  sync_m(all_others());
  const int one = 1;
  bsp_put(0, &one, seen.data(), me * static_cast<int>(sizeof(int)), sizeof(int));
  sync_m(me == 0 ? P - 1 : 0);
  if (me == 0) {
    for (int k = 0; k < P; ++k) CHECK(seen[static_cast<size_t>(k)] == 1, "no process has pid %d", k);
    std::printf("pids complete\n");
  }
  // A superstep with gets, one word and 16 KiB (whose reply, past the
  // board's 8 KiB per batch, goes as a message): the processes that left at
  // bsp_begin (P < launched) take part in its phase-2 superstep too.
  std::vector<int> mine(4096, 1000 + me), got(4096, -1);
  bsp_push_reg(mine.data(), static_cast<int>(mine.size() * sizeof(int)));
  sync_m(all_others());
  const int R = (me + 1) % P, L = (me + P - 1) % P;
  int one_got = -1;
  bsp_get(R, mine.data(), 8, &one_got, sizeof one_got);
  bsp_get(R, mine.data(), 0, got.data(), static_cast<int>(got.size() * sizeof(int)));
  sync_m(others({L}));
  CHECK(one_got == 1000 + R && got[0] == 1000 + R && got[4095] == 1000 + R,
        "gets from pid %d: %d, %d .. %d, expected %d", R, one_got, got[0], got[4095], 1000 + R);
  bsp_pop_reg(mine.data());
  sync_m(all_others());
  for (int i = 0; i < 200; ++i) {
    std::printf("<<out pid=%d i=%d abcdefghijklmnopqrstuvwxyz>>\n", me, i);
    if (i % 50 == 0) std::fflush(stdout);
    if (i == 100) usleep(static_cast<useconds_t>(1000 * (me % 3)));
  }
  usleep(20000);
  const double t1 = bsp_time();
  CHECK(t1 >= t0 + 0.015, "bsp_time() went from %g to %g over a 20 ms sleep", t0, t1);
  bsp_pop_reg(seen.data());
  sync_m(all_others());
  bsp_end();
  CHECK(bsp_nprocs() >= 1, "bsp_nprocs() after bsp_end is %d", bsp_nprocs());  // allowed after bsp_end
  // A put or get of 0 bytes does nothing and checks nothing (issue 11), not
  // even the SPMD section (BSPonMPI 1.1: "unless nbytes is zero").
  bsp_put(0, nullptr, nullptr, 0, 0);
  bsp_hpput(0, nullptr, nullptr, 0, 0);
  bsp_get(0, nullptr, 0, nullptr, 0);
  bsp_hpget(0, nullptr, 0, nullptr, 0);
  std::printf("after end pid=%d\n", me);
  return 0;
}

// ================================================================ drma
// bsp_put reads its source at the call; bsp_get reads the remote source at
// the sync, after all of its owner's computation in the superstep (the owner
// writes it late, after a sleep), and before the puts of that sync land (a get
// and a put of one location: the get sees the old value); the get result is
// written before the puts (a put and a get into one destination: the put
// wins); overlapping puts land in ascending source pid then call order (the
// highest pid's last put wins: exact values checked, also for partially
// overlapping byte ranges); bsp_hpput/bsp_hpget deliver; 0-byte puts and gets
// do nothing and check nothing; offsets address the target's registration,
// whose size differs from the caller's (addresses and sizes differ per
// process), up to its last byte; overlapping gets land in ascending source
// pid (the process's own among them) whatever the call order.
POSITIVE_ROWS("DrmaPutGetOrderAndOffsetsUnderSkew", "drma", "drma ok");
int drma(int argc, char** argv) {
  set_mode(argc, argv);
  begin_all();
  const int R = right(), L = left();
  // Registered variables, all on the heap, at different sizes per process.
  int* x = new int(-1);             // ring put: source changed after the call
  int* y = new int(0);              // get source written late by its owner
  int* z = new int(0);              // get and put of the same location
  int* d = new int(0);              // put and get into the same destination
  int* gsrc = new int(42000 + me);  // source of the get into d
  int* w = new int(-1);             // overlapping puts from every process
  const size_t ovn = static_cast<size_t>(P) + 8;
  std::vector<uint8_t> ov(ovn + 16 * static_cast<size_t>(me), 0xEE);  // partially overlapping puts
  const int bsz = 16 + 8 * me;                                         // size differs per process
  std::vector<uint8_t> buf(static_cast<size_t>(bsz) + 3);
  fill(buf.data(), static_cast<size_t>(bsz), me, 1);
  std::vector<int> hp(64, -1), hsrc(64), hdst(64, -5);
  for (int i = 0; i < 64; ++i) hsrc[static_cast<size_t>(i)] = me * 77 + i;
  bsp_push_reg(x, sizeof(int));
  bsp_push_reg(y, sizeof(int));
  bsp_push_reg(z, sizeof(int));
  bsp_push_reg(d, sizeof(int));
  bsp_push_reg(gsrc, sizeof(int));
  bsp_push_reg(w, sizeof(int));
  bsp_push_reg(ov.data(), static_cast<int>(ov.size()));  // bigger on higher pids
  bsp_push_reg(buf.data(), bsz);
  bsp_push_reg(hp.data(), 64 * sizeof(int));
  bsp_push_reg(hsrc.data(), 64 * sizeof(int));
  sync_m(all_others());

  // ---- superstep 1: to the right (puts, gets), from the left (hpget, get).
  int v = 100 + me;
  bsp_put(R, &v, x, 0, sizeof v);
  v = -1;  // the target must see 100 + me
  int gy = -7, gz = -7;
  bsp_get(R, y, 0, &gy, sizeof gy);  // R writes y late in this superstep
  bsp_get(R, z, 0, &gz, sizeof gz);  // ... and z, which I also put into:
  int zput = 9000 + me;
  bsp_put(R, &zput, z, 0, sizeof zput);
  zput = -2;
  bsp_get(R, gsrc, 0, d, sizeof(int));  // into my d, which L puts into
  int dput = 3000 + me;
  bsp_put(R, &dput, d, 0, sizeof dput);
  // The last 8 bytes of R's buffer: offset 8 + 8R, past the end of mine when R > me.
  uint8_t tail[8];
  fill(tail, 8, me, 2);
  bsp_put(R, tail, buf.data(), 8 + 8 * R, 8);
  std::memset(tail, 0, sizeof tail);
  uint8_t lhead[8];
  std::memset(lhead, 0, sizeof lhead);
  bsp_get(L, buf.data(), 8 * L, lhead, 8);  // bytes [8L, 8L+8) of L's buffer, before L's put lands
  std::vector<int> hv(64);
  for (int i = 0; i < 64; ++i) hv[static_cast<size_t>(i)] = me * 1000 + i;
  bsp_hpput(R, hv.data(), hp.data(), 0, 64 * sizeof(int));
  bsp_hpget(L, hsrc.data(), 0, hdst.data(), 64 * sizeof(int));
  // 0 bytes: nothing happens and nothing is checked (pid out of range,
  // unregistered address, NULL, negative offset).
  int unreg = 5;
  bsp_put(P + 5, nullptr, &unreg, 0, 0);
  bsp_put(-1, &v, &unreg, 0, 0);
  bsp_put(R, nullptr, &unreg, 0, 0);
  bsp_put(R, &v, x, 1000, 0);
  bsp_hpput(P, nullptr, nullptr, 0, 0);
  bsp_get(P + 1, &unreg, 0, nullptr, 0);
  bsp_get(R, &unreg, 0, &v, 0);
  bsp_get(R, x, 1000, &v, 0);
  bsp_hpget(-3, nullptr, 0, nullptr, 0);
  CHECK(unreg == 5 && v == -1, "a 0-byte put or get changed something");
  // The owner's late computation (after a sleep on some pids).
  if (me % 2 == 0) usleep(30000);
  *y = 500 + me;
  *z = 7000 + me;
  sync_m(others({L, R}));
  CHECK(*x == 100 + L, "put of a source changed after the call: x = %d, expected %d", *x, 100 + L);
  CHECK(gy == 500 + R, "get of a source its owner wrote late in the superstep: %d, expected %d", gy, 500 + R);
  CHECK(gz == 7000 + R, "get of a location also put into in the superstep read %d, expected the old value %d", gz,
        7000 + R);
  CHECK(*z == 9000 + L, "z after the sync is %d, expected the put's %d", *z, 9000 + L);
  CHECK(*d == 3000 + L, "put and get into one destination: %d, expected the put's value %d (the get's would be %d)",
        *d, 3000 + L, 42000 + R);
  CHECK(holds(lhead, 8, L, 1, static_cast<size_t>(8 * L)), "get at offset %d of pid %d's buffer", 8 * L, L);
  CHECK(holds(buf.data() + 8 + 8 * me, 8, L, 2), "put into the last 8 bytes of a %d-byte registration", bsz);
  CHECK(holds(buf.data(), static_cast<size_t>(8 + 8 * me), me, 1), "a put at an offset wrote before it");
  for (int i = 0; i < 64; ++i) {
    CHECK(hp[static_cast<size_t>(i)] == L * 1000 + i, "hpput element %d: %d", i, hp[static_cast<size_t>(i)]);
    CHECK(hdst[static_cast<size_t>(i)] == L * 77 + i, "hpget element %d: %d", i, hdst[static_cast<size_t>(i)]);
  }

  // ---- superstep 2: every process puts into every process's w (3 times) and
  // ov (two overlapping ranges): applied in ascending pid, then call order.
  for (int t = 0; t < P; ++t) {
    for (int k = 0; k < 3; ++k) {
      int val = me * 10 + k;
      bsp_put(t, &val, w, 0, sizeof val);
    }
    uint8_t four[4];
    std::memset(four, static_cast<int>(me + 1), 4);
    bsp_put(t, four, ov.data(), me, 4);
    uint8_t one = static_cast<uint8_t>(0x80 + me);
    bsp_put(t, &one, ov.data(), me + 1, 1);
  }
  // Overlapping gets from every process, this one included, into one word:
  // written in ascending source pid whatever the call order (BSPonMPI's
  // get_4), so the highest pid's value wins both times.
  int gg_up = -1, gg_down = -1;
  for (int t = 0; t < P; ++t) bsp_get(t, gsrc, 0, &gg_up, sizeof gg_up);
  for (int t = P - 1; t >= 0; --t) bsp_get(t, gsrc, 0, &gg_down, sizeof gg_down);
  sync_m(all_others());
  CHECK(gg_up == 42000 + P - 1 && gg_down == 42000 + P - 1,
        "overlapping gets from every pid: %d (ascending calls), %d (descending calls), expected pid %d's %d", gg_up,
        gg_down, P - 1, 42000 + P - 1);
  CHECK(*w == (P - 1) * 10 + 2, "overlapping puts: w = %d, expected the highest pid's last put %d", *w,
        (P - 1) * 10 + 2);
  std::vector<uint8_t> want(ovn, 0xEE);
  for (int s = 0; s < P; ++s) {
    for (int b = 0; b < 4; ++b) want[static_cast<size_t>(s + b)] = static_cast<uint8_t>(s + 1);
    want[static_cast<size_t>(s + 1)] = static_cast<uint8_t>(0x80 + s);
  }
  for (size_t b = 0; b < ovn; ++b)
    CHECK(ov[b] == want[b], "partially overlapping puts: byte %zu is 0x%02x, expected 0x%02x", b, ov[b], want[b]);

  // ---- superstep 3: the get source is read at its owner's sync, not later
  // (the owner overwrites it as soon as its sync returns).
  *y = 600 + me;
  gy = -1;
  bsp_get(R, y, 0, &gy, sizeof gy);
  sync_m(others({L}));
  *y = -600;
  CHECK(gy == 600 + R, "get: %d, expected %d", gy, 600 + R);
  sync_m(0);  // a superstep with no communication

  for (void* a : std::initializer_list<void*>{x, y, z, d, gsrc, w, ov.data(), buf.data(), hp.data(), hsrc.data()})
    bsp_pop_reg(a);
  sync_m(all_others());
  std::printf("drma ok pid=%d p=%d\n", me, P);
  bsp_end();
  for (int* v : {x, y, z, d, gsrc, w}) delete v;  // (LeakSanitizer runs check this program too)
  return 0;
}

// ================================================================ combine
// Runs of small puts that continue each other (same registration, each
// starting where the previous one ended) are combined into one record by the
// layer (bsplib.cpp, small_put_here); the result must be that of applying
// every put in call order. Word by word into R's array, across several batch
// frames (80,000 puts of 8 bytes: 640 KB, more than one 256 KiB frame),
// with 4-byte and 3-byte runs (padding), a word put again after its run (the
// later call wins), runs broken by a put elsewhere, a get and a send, and the
// same into this process's own array (the local batch). Then a run whose
// source is changed after each call (bsp_put copies at the call).
// ================================================================ stridedget
// Gets of one size at a constant stride from one process into consecutive
// memory travel as one request (a GetRun record: bsplib.cpp, get_common) and
// are answered by one gather on the owner; the result must be that of the
// gets one by one. From R: 10,000 words at a stride of 3 words (80 KB of
// replies, more than one frame), 16-byte gets at an 8-byte stride (each
// overlapping the last), 3-byte gets at a 5-byte stride, a run broken by a
// new stride and by a destination elsewhere, runs into memory at a stride
// (consecutive words into every third word, as a cyclic distribution is
// gathered); from this process itself, words at a stride of 7. Same superstep: this process puts into the first ten
// words R's run reads (the gets see the old values: sources are read before
// any put lands), R writes ten more of them after the calls (the gets see
// the new values: sources are read at the sync, after the owner's
// computation), and L puts into a word this process's run writes (the put
// wins: get results are written before puts).
POSITIVE_ROWS("DrmaStridedGetRunsAsGetsOneByOne", "stridedget", "stridedget ok");
int stridedget(int argc, char** argv) {
  set_mode(argc, argv);
  begin_all();
  const int R = right(), L = left();
  const int W = 30000, N1 = 10000;
  auto word = [](int src, int i) { return (static_cast<uint64_t>(src) << 32) | static_cast<uint64_t>(i); };
  // src[i] of process s at its sync, before the puts land (its late writes made).
  auto late = [&](int src, int i) { return word(src, i) ^ (i % 3 == 0 && i >= 30 && i < 60 ? 0xFFFFu : 0u); };
  auto put_value = [](int src, int k) { return (uint64_t{0xF0} << 56) | (static_cast<uint64_t>(src) << 16) | k; };
  std::vector<uint64_t> src(W), d1(N1, 0), d2(400, 0), d3(8, 0), d5(64, 0), mine(50, 0), d6(900, 0), d7(500, 0),
      d8(250, 0), d9(20, 0), d10(160, 0);
  std::vector<uint8_t> bytes(4000), d4(3 * 600, 0);
  for (int i = 0; i < W; ++i) src[static_cast<size_t>(i)] = word(me, i);
  fill(bytes.data(), bytes.size(), me, 9);
  bsp_push_reg(src.data(), static_cast<int>(W * sizeof(uint64_t)));
  bsp_push_reg(bytes.data(), static_cast<int>(bytes.size()));
  bsp_push_reg(d3.data(), static_cast<int>(d3.size() * sizeof(uint64_t)));
  sync_m(all_others());

  for (int k = 0; k < N1; ++k) bsp_get(R, src.data(), 3 * k * 8, &d1[static_cast<size_t>(k)], 8);
  for (int k = 0; k < 200; ++k) bsp_get(R, src.data(), (20000 + k) * 8, &d2[2 * static_cast<size_t>(k)], 16);
  for (int k = 0; k < 600; ++k) bsp_get(R, bytes.data(), 5 * k, &d4[3 * static_cast<size_t>(k)], 3);
  for (int k = 0; k < 10; ++k) bsp_get(R, src.data(), (25000 + 3 * k) * 8, &d5[static_cast<size_t>(k)], 8);
  for (int k = 0; k < 5; ++k) bsp_get(R, src.data(), (25029 + 2 * k) * 8, &d5[10 + static_cast<size_t>(k)], 8);
  bsp_get(R, src.data(), 25100 * 8, &d5[20], 8);  // (the next offset of the stride-2 run, elsewhere)
  bsp_get(R, src.data(), 25039 * 8, &d5[21], 8);  // (it continues that run's offsets, not its destinations)
  for (int k = 0; k < 50; ++k) bsp_get(me, src.data(), 7 * k * 8, &mine[static_cast<size_t>(k)], 8);
  for (int k = 0; k < 8; ++k) bsp_get(R, src.data(), (26000 + 5 * k) * 8, &d3[static_cast<size_t>(k)], 8);
  // Into memory at a stride: consecutive words into every third word (a
  // cyclic distribution gathered), every other word into every fifth, a
  // 16-byte piece every 40 bytes, descending destinations (no run), and from
  // this process itself.
  for (int k = 0; k < 300; ++k) bsp_get(R, src.data(), (27000 + k) * 8, &d6[3 * static_cast<size_t>(k)], 8);
  for (int k = 0; k < 100; ++k) bsp_get(R, src.data(), (28000 + 2 * k) * 8, &d7[5 * static_cast<size_t>(k)], 8);
  for (int k = 0; k < 50; ++k) bsp_get(R, src.data(), (28500 + 3 * k) * 8, &d8[5 * static_cast<size_t>(k)], 16);
  for (int k = 0; k < 20; ++k) bsp_get(R, src.data(), (29000 + k) * 8, &d9[19 - static_cast<size_t>(k)], 8);
  for (int k = 0; k < 40; ++k) bsp_get(me, src.data(), (29500 + k) * 8, &d10[4 * static_cast<size_t>(k)], 8);
  for (int k = 0; k < 10; ++k) {
    const uint64_t v = put_value(me, k);
    bsp_put(R, &v, src.data(), 3 * k * 8, 8);
  }
  const uint64_t beef = 0xBEEF00 + static_cast<uint64_t>(me);
  bsp_put(R, &beef, d3.data(), 2 * 8, 8);
  for (int i = 30; i < 60; i += 3) src[static_cast<size_t>(i)] ^= 0xFFFFu;  // after the gets were issued
  sync_m(others({L}));

  for (int k = 0; k < N1; ++k)
    if (d1[static_cast<size_t>(k)] != late(R, 3 * k))
      CHECK(false, "strided get %d of %d from pid %d: %llx, expected %llx", k, N1, R,
            static_cast<unsigned long long>(d1[static_cast<size_t>(k)]),
            static_cast<unsigned long long>(late(R, 3 * k)));
  for (int k = 0; k < 200; ++k)
    CHECK(d2[2 * static_cast<size_t>(k)] == late(R, 20000 + k) && d2[2 * static_cast<size_t>(k) + 1] == late(R, 20001 + k),
          "overlapping 16-byte get %d: %llx %llx", k, static_cast<unsigned long long>(d2[2 * static_cast<size_t>(k)]),
          static_cast<unsigned long long>(d2[2 * static_cast<size_t>(k) + 1]));
  for (int k = 0; k < 600; ++k)
    CHECK(holds(&d4[3 * static_cast<size_t>(k)], 3, R, 9, 5 * static_cast<size_t>(k)), "3-byte get %d at a 5-byte stride", k);
  for (int k = 0; k < 10; ++k)
    CHECK(d5[static_cast<size_t>(k)] == late(R, 25000 + 3 * k), "broken run: get %d (stride 3 words)", k);
  for (int k = 0; k < 5; ++k)
    CHECK(d5[10 + static_cast<size_t>(k)] == late(R, 25029 + 2 * k), "broken run: get %d (stride 2 words)", k);
  CHECK(d5[15] == 0 && d5[19] == 0 && d5[20] == late(R, 25100) && d5[21] == late(R, 25039) && d5[22] == 0,
        "gets after the broken run: d5[20] = %llx, d5[21] = %llx", static_cast<unsigned long long>(d5[20]),
        static_cast<unsigned long long>(d5[21]));
  for (int k = 0; k < 50; ++k)
    CHECK(mine[static_cast<size_t>(k)] == late(me, 7 * k), "strided get %d from this process itself: %llx", k,
          static_cast<unsigned long long>(mine[static_cast<size_t>(k)]));
  for (int k = 0; k < 8; ++k) {
    const uint64_t want = k == 2 ? 0xBEEF00 + static_cast<uint64_t>(L) : late(R, 26000 + 5 * k);
    CHECK(d3[static_cast<size_t>(k)] == want, "d3[%d] = %llx, expected %llx (%s)", k,
          static_cast<unsigned long long>(d3[static_cast<size_t>(k)]), static_cast<unsigned long long>(want),
          k == 2 ? "the put over a get result wins" : "a strided get");
  }
  for (int k = 0; k < 10; ++k)
    CHECK(src[3 * static_cast<size_t>(k)] == put_value(L, k), "src[%d] after the put from pid %d", 3 * k, L);
  for (size_t i = 0; i < d6.size(); ++i)
    CHECK(d6[i] == (i % 3 ? 0 : late(R, 27000 + static_cast<int>(i / 3))), "d6[%zu] = %llx (words into every third)", i,
          static_cast<unsigned long long>(d6[i]));
  for (size_t i = 0; i < d7.size(); ++i)
    CHECK(d7[i] == (i % 5 ? 0 : late(R, 28000 + 2 * static_cast<int>(i / 5))), "d7[%zu] = %llx (every other word into every fifth)",
          i, static_cast<unsigned long long>(d7[i]));
  for (size_t i = 0; i < d8.size(); ++i) {
    const int k = static_cast<int>(i / 5), at = static_cast<int>(i % 5);
    CHECK(d8[i] == (at >= 2 ? 0 : late(R, 28500 + 3 * k + at)), "d8[%zu] = %llx (16-byte pieces every 40 bytes)", i,
          static_cast<unsigned long long>(d8[i]));
  }
  for (size_t i = 0; i < d9.size(); ++i)
    CHECK(d9[i] == late(R, 29000 + 19 - static_cast<int>(i)), "d9[%zu] (descending destinations)", i);
  for (size_t i = 0; i < d10.size(); ++i)
    CHECK(d10[i] == (i % 4 ? 0 : late(me, 29500 + static_cast<int>(i / 4))), "d10[%zu] (from this process, every fourth)", i);

  for (void* a : std::initializer_list<void*>{src.data(), bytes.data(), d3.data()}) bsp_pop_reg(a);
  sync_m(all_others());
  std::printf("stridedget ok pid=%d p=%d\n", me, P);
  bsp_end();
  return 0;
}

// ================================================================ zerocopy
// bsp_hpput and bsp_hpget of at least BSPK_HP_ZEROCOPY_MIN bytes (set here to
// 64K, the default) to and from other processes move by fabric reads from
// program memory into program memory: the runtime copies nothing
// (bytes_copied grows by exactly the one 4-byte bsp_get's two copies; at
// p = 1 everything is local and copied). Under bspk_expect an hpget is read
// directly only when its owner sent the reader a batch in the superstep
// (supersteps 1 and 2: the owner hpputs to the reader), else it is answered
// as a bsp_get (superstep 3, p >= 3: the owner sends the reader nothing). Checked under skew: the data are
// there after the sync; the issuer overwrites its hpput source the moment
// its sync returns (the target's read is over by then: the issuer waits for
// its acknowledgement); a bsp_get of bytes also hpput to in the superstep
// sees the old value (get sources are read before the reads land); a
// bsp_put of bytes also hpput to wins (puts land after the reads); two
// adjacent hpputs (one run) land whole; a bsp_hpget of a registration popped
// in the same superstep still reads it.
POSITIVE_ROWS("DrmaZeroCopyHpputHpget", "zerocopy", "zerocopy ok");
int zerocopy(int argc, char** argv) {
  setenv("BSPK_HP_ZEROCOPY_MIN", "64K", 1);  // before bsp_begin, whatever the environment says
  set_mode(argc, argv);
  begin_all();
  const int R = right(), L = left();
  const int N = 65536;  // ints per block: 256 KiB
  const int NB = N * static_cast<int>(sizeof(int));
  std::vector<int> a(static_cast<size_t>(P) * N, -1), hsrc(static_cast<size_t>(N)), gdst(static_cast<size_t>(N), -5);
  std::vector<int> src(static_cast<size_t>(N)), e(static_cast<size_t>(N));
  for (int i = 0; i < N; ++i) {
    hsrc[static_cast<size_t>(i)] = me * 7 + i;
    e[static_cast<size_t>(i)] = me * 3 - i;
  }
  bsp_push_reg(a.data(), NB * P);
  bsp_push_reg(hsrc.data(), NB);
  bsp_push_reg(e.data(), NB);
  sync_m(all_others());
  bspk_stats s0{}, s1{};
  s0 = stats_now();

  // ---- superstep 1: hpput my block into R's a (two adjacent halves: one
  // run), hpget L's hsrc, and get a word of the block I hpput into.
  for (int i = 0; i < N; ++i) src[static_cast<size_t>(i)] = me * 1000000 + i;
  bsp_hpput(R, src.data(), a.data(), me * NB, NB / 2);
  bsp_hpput(R, src.data() + N / 2, a.data(), me * NB + NB / 2, NB / 2);
  bsp_hpget(L, hsrc.data(), 0, gdst.data(), NB);
  int old = 0;
  bsp_get(R, a.data(), me * NB + 4 * 5, &old, sizeof old);
  sync_m(others({L, R}));
  for (int i = 0; i < N; ++i) src[static_cast<size_t>(i)] = -77;  // the reads are over
  s1 = stats_now();
  const uint64_t want = P == 1 ? 4ull * static_cast<uint64_t>(NB) + 8 : 8;
  // Copying paths may also grow a batch region the first time it holds this
  // much (its records so far are copied over: counted, a few headers).
  const uint64_t got = s1.bytes_copied - s0.bytes_copied;
  const bool zero_copy = P > 1;
  CHECK(zero_copy ? got == want : got >= want && got - want <= 4096,
        "bytes_copied grew by %llu in a superstep of a %d-byte hpput, a %d-byte hpget and a 4-byte get, expected %llu%s",
        (unsigned long long)got, NB, NB, (unsigned long long)want, zero_copy ? "" : " (+ up to 4096 of batch growth)");
  // What moved by fabric reads instead: the hpput into this process, and its hpget.
  const uint64_t read = P == 1 ? 0 : 2ull * static_cast<uint64_t>(NB);
  CHECK(s1.bytes_read - s0.bytes_read == read, "bytes_read grew by %llu, expected %llu",
        (unsigned long long)(s1.bytes_read - s0.bytes_read), (unsigned long long)read);
  for (int i = 0; i < N; ++i) {
    CHECK(a[static_cast<size_t>(L) * N + i] == L * 1000000 + i, "hpput element %d from pid %d: %d", i, L,
          a[static_cast<size_t>(L) * N + i]);
    CHECK(gdst[static_cast<size_t>(i)] == L * 7 + i, "hpget element %d from pid %d: %d", i, L, gdst[static_cast<size_t>(i)]);
  }
  CHECK(old == -1, "a get of bytes hpput to in the same superstep read %d, expected the old -1", old);

  // ---- superstep 2: hpput and a put of its first word (the put wins);
  // hpget of e while every process pops e.
  for (int i = 0; i < N; ++i) src[static_cast<size_t>(i)] = me * 2000000 + i;
  const int marker = -123456 - me;
  bsp_hpput(R, src.data(), a.data(), me * NB, NB);
  bsp_put(R, &marker, a.data(), me * NB, sizeof marker);
  std::fill(gdst.begin(), gdst.end(), -5);
  bsp_hpget(L, e.data(), 0, gdst.data(), NB);
  bsp_pop_reg(e.data());
  sync_m(all_others());  // (a superstep with bsp_pop_reg: every process sends every other one its ops)
  for (int i = 0; i < N; ++i) src[static_cast<size_t>(i)] = -78;
  CHECK(a[static_cast<size_t>(L) * N] == -123456 - L, "a put and an hpput of one word: %d, expected the put's %d",
        a[static_cast<size_t>(L) * N], -123456 - L);
  for (int i = 1; i < N; ++i)
    CHECK(a[static_cast<size_t>(L) * N + i] == L * 2000000 + i, "hpput element %d from pid %d: %d", i, L,
          a[static_cast<size_t>(L) * N + i]);
  for (int i = 0; i < N; ++i)
    CHECK(gdst[static_cast<size_t>(i)] == L * 3 - i, "hpget of a registration popped in the superstep: element %d: %d",
          i, gdst[static_cast<size_t>(i)]);
  // ---- superstep 3: only an hpget of R's hsrc. R sends this process a batch
  // only at p = 2 (R's own hpget goes to R + 1): under bspk_expect the read
  // is direct there and a bsp_get's reply (two copies each side) from p = 3
  // (on the message path; on the board every sync proves the owner is done).
  for (int i = 0; i < N; ++i) hsrc[static_cast<size_t>(i)] = me * 11 + i;
  sync_m(0);
  std::fill(gdst.begin(), gdst.end(), -5);
  s0 = stats_now();
  bsp_hpget(R, hsrc.data(), 0, gdst.data(), NB);
  sync_m(others({L}));  // L hpgets from this process
  s1 = stats_now();
  for (int i = 0; i < N; ++i)
    CHECK(gdst[static_cast<size_t>(i)] == R * 11 + i, "hpget element %d from pid %d: %d", i, R,
          gdst[static_cast<size_t>(i)]);
  const bool direct = P == 2 || (P > 2 && (!expect_mode || board_path()));
  const uint64_t want3 = P == 1 || !direct ? 2ull * static_cast<uint64_t>(NB) : 0;
  CHECK(s1.bytes_copied - s0.bytes_copied >= want3 && s1.bytes_copied - s0.bytes_copied <= want3 + 4096 &&
            s1.bytes_read - s0.bytes_read == (P > 1 && direct ? static_cast<uint64_t>(NB) : 0),
        "hpget from pid %d %s: bytes_copied grew by %llu (expected %llu), bytes_read by %llu", R,
        direct ? "read directly" : "answered as a get", (unsigned long long)(s1.bytes_copied - s0.bytes_copied),
        (unsigned long long)want3, (unsigned long long)(s1.bytes_read - s0.bytes_read));
  bsp_pop_reg(hsrc.data());
  bsp_pop_reg(a.data());
  sync_m(all_others());
  std::printf("zerocopy ok\n");
  bsp_end();
  return 0;
}

// ================================================================ direct_get
// bsp_direct_get (MulticoreBSP) reads at the call, not at the sync. Superstep
// 1: every process puts a new value into every process's s, then reads every
// process's s (its own too) with bsp_direct_get before its own sync: it gets
// the old value (the owner cannot have ended the superstep: it waits for this
// process's batch, and puts land only at the sync), and a block of R's array
// across more than one frame, at an offset, from a registration whose size
// differs per process (up to R's last byte); the read from another process
// moves by a fabric read (bytes_read grows by its size, bytes_copied not at
// all). 0 bytes do nothing and check nothing. Superstep 2: the values the
// sync wrote are read (the highest pid's put wins), while pid 1 sleeps
// 300 ms before it calls anything (a read of an owner that is computing:
// over tcp it completes once the owner's runtime polls). All under skew.
POSITIVE_ROWS("DrmaDirectGetReadsAtTheCall", "direct_get", "direct_get ok");
int direct_get(int argc, char** argv) {
  set_mode(argc, argv);
  begin_all();
  const int R = right(), L = left();
  const int N = 65536 + 40;  // ints in the largest part: more than one 256 KiB frame
  auto part = [&](int j) { return N - 8 * j; };  // ints registered by pid j
  std::vector<int> a(static_cast<size_t>(part(me)));
  for (int i = 0; i < part(me); ++i) a[static_cast<size_t>(i)] = me * 1000003 + i;
  int* s = new int(500 + me);
  bsp_push_reg(a.data(), part(me) * static_cast<int>(sizeof(int)));
  bsp_push_reg(s, sizeof(int));
  sync_m(all_others());

  // ---- superstep 1
  for (int j = 0; j < P; ++j) {
    int nv = 700 + me;
    bsp_put(j, &nv, s, 0, sizeof nv);
  }
  for (int j = 0; j < P; ++j) {
    int got = -1;
    bsp_direct_get(j, s, 0, &got, sizeof got);
    CHECK(got == 500 + j, "bsp_direct_get of pid %d's s before the sync: %d, expected the old %d", j, got, 500 + j);
  }
  const int off = 7, cnt = part(R) - off;  // to R's last int
  std::vector<int> big(static_cast<size_t>(cnt) + 2, -5);
  const bspk_stats s0 = stats_now();
  bsp_direct_get(R, a.data(), off * static_cast<int>(sizeof(int)), big.data() + 1, cnt * static_cast<int>(sizeof(int)));
  const bspk_stats s1 = stats_now();
  for (int i = 0; i < cnt; ++i)
    CHECK(big[static_cast<size_t>(i) + 1] == R * 1000003 + off + i, "bsp_direct_get of pid %d's a: element %d is %d", R,
          off + i, big[static_cast<size_t>(i) + 1]);
  CHECK(big[0] == -5 && big[static_cast<size_t>(cnt) + 1] == -5, "bsp_direct_get wrote outside its destination");
  if (R != me)
    CHECK(s1.bytes_read - s0.bytes_read == static_cast<uint64_t>(cnt) * sizeof(int) &&
              s1.bytes_copied == s0.bytes_copied,
          "a %zu-byte bsp_direct_get from pid %d: bytes_read grew by %llu, bytes_copied by %llu (expected the size and 0)",
          static_cast<size_t>(cnt) * sizeof(int), R, (unsigned long long)(s1.bytes_read - s0.bytes_read),
          (unsigned long long)(s1.bytes_copied - s0.bytes_copied));
  int unreg = 5;  // 0 bytes: nothing happens, nothing is checked
  bsp_direct_get(P + 5, nullptr, -1, nullptr, 0);
  bsp_direct_get(R, &unreg, 1 << 30, &unreg, 0);
  CHECK(unreg == 5, "a 0-byte bsp_direct_get wrote its destination");
  sync_m(all_others());
  CHECK(*s == 700 + P - 1, "s after the sync: %d, expected the highest pid's put %d", *s, 700 + P - 1);

  // ---- superstep 2: what the sync wrote, while pid 1 computes.
  if (me == 1) usleep(300000);
  for (int k = 0; k < P; ++k) {
    const int j = (L + P - k) % P;  // every process, the left one first
    int got = -1;
    bsp_direct_get(j, s, 0, &got, sizeof got);
    CHECK(got == 700 + P - 1, "bsp_direct_get of pid %d's s after the sync: %d, expected %d", j, got, 700 + P - 1);
  }
  sync_m(0);
  bsp_pop_reg(s);
  bsp_pop_reg(a.data());
  sync_m(all_others());
  delete s;
  std::printf("direct_get ok\n");
  bsp_end();
  return 0;
}

// ================================================================ bigput
// bsp_put of at least BSPK_PUT_ZEROCOPY_MIN bytes (64K here) to another
// process copies its source once, at the call, into a staging buffer; the
// target reads it from there by a fabric read, straight into the
// destination when no other write of the sync touches those bytes, else
// into a buffer of its own, written in the put order. Checked under skew:
// superstep 1, every process puts a block into R's array and overwrites the
// source at once (buffered: the call-time bytes arrive); it also gets a word
// of that block (the old value). bytes_copied grows by the one copy of the
// block plus the get's two 4-byte copies, bytes_read by the block read from
// L (at p = 1 the put is local: copied twice, as a buffered put to itself
// must be). Superstep 2: the same block put again while this process hpgets
// it (the hpget sees the old bytes), and a block put into the source of this
// process's hpput to R (R receives the old bytes). Superstep 3: every process puts a block
// into pid 0's array at partially overlapping offsets, then a word at the
// end of its range; pid 0 also gets a word into the array from pid 1: the
// result is every put applied in ascending source pid and call order, after
// the get result (the put wins).
POSITIVE_ROWS("DrmaLargePutCopiedOnce", "bigput", "bigput ok");
int bigput(int argc, char** argv) {
  setenv("BSPK_PUT_ZEROCOPY_MIN", "64K", 1);  // before bsp_begin, whatever the environment says
  setenv("BSPK_HP_ZEROCOPY_MIN", "64K", 1);   // (superstep 2's hpget reads directly)
  set_mode(argc, argv);
  begin_all();
  const int R = right(), L = left();
  const int N = 32768;  // ints per block: 128 KiB
  const int NB = N * static_cast<int>(sizeof(int));
  const int Q = N / 4;  // superstep 3: source s writes [s Q, s Q + N)
  std::vector<int> a(static_cast<size_t>(P) * N, -1), src(static_cast<size_t>(N)), hg(static_cast<size_t>(N), -5);
  std::vector<int> ov(static_cast<size_t>((P - 1) * Q + N), -1);
  std::vector<int> hs(static_cast<size_t>(N)), a2(static_cast<size_t>(N), -1);
  for (int i = 0; i < N; ++i) hs[static_cast<size_t>(i)] = me * 5 + i;
  int x = 4000 + me;
  bsp_push_reg(a.data(), NB * P);
  bsp_push_reg(ov.data(), static_cast<int>(ov.size() * sizeof(int)));
  bsp_push_reg(&x, sizeof x);
  bsp_push_reg(hs.data(), NB);
  bsp_push_reg(a2.data(), NB);
  sync_m(all_others());
  bspk_stats s0{}, s1{};

  // ---- superstep 1
  s0 = stats_now();
  for (int i = 0; i < N; ++i) src[static_cast<size_t>(i)] = me * 1000000 + i;
  bsp_put(R, src.data(), a.data(), me * NB, NB);
  std::fill(src.begin(), src.end(), -77);  // buffered: the call's bytes travel
  int old = 0;
  bsp_get(R, a.data(), me * NB + 4 * 5, &old, sizeof old);
  sync_m(others({L}));
  s1 = stats_now();
  for (int i = 0; i < N; ++i)
    CHECK(a[static_cast<size_t>(L) * N + i] == L * 1000000 + i, "put element %d from pid %d: %d", i, L,
          a[static_cast<size_t>(L) * N + i]);
  CHECK(old == -1, "a get of bytes put to in the same superstep read %d, expected the old -1", old);
  const uint64_t want = (P == 1 ? 2ull : 1ull) * static_cast<uint64_t>(NB) + 8;
  const uint64_t got = s1.bytes_copied - s0.bytes_copied;
  CHECK(P > 1 ? got == want : got >= want && got - want <= 4096,
        "bytes_copied grew by %llu in a superstep of a %d-byte put and a 4-byte get, expected %llu",
        (unsigned long long)got, NB, (unsigned long long)want);
  CHECK(s1.bytes_read - s0.bytes_read == (P > 1 ? static_cast<uint64_t>(NB) : 0),
        "bytes_read grew by %llu, expected %d", (unsigned long long)(s1.bytes_read - s0.bytes_read), P > 1 ? NB : 0);

  // ---- superstep 2: put the block again while hpgetting it; and hpput hs
  // to R while L puts into hs (R reads the old hs)
  for (int i = 0; i < N; ++i) src[static_cast<size_t>(i)] = me * 2000000 + i;
  bsp_put(R, src.data(), a.data(), me * NB, NB);
  bsp_hpget(R, a.data(), me * NB, hg.data(), NB);
  bsp_hpput(R, hs.data(), a2.data(), 0, NB);
  for (int i = 0; i < N; ++i) src[static_cast<size_t>(i)] = me * 3000000 + i;
  bsp_put(R, src.data(), hs.data(), 0, NB);
  sync_m(others({L}));
  for (int i = 0; i < N; ++i) {
    CHECK(a2[static_cast<size_t>(i)] == L * 5 + i,
          "hpput of a source put to in the superstep: element %d is %d, expected the old %d", i,
          a2[static_cast<size_t>(i)], L * 5 + i);
    CHECK(hs[static_cast<size_t>(i)] == L * 3000000 + i, "put into an hpput source: element %d is %d, expected %d", i,
          hs[static_cast<size_t>(i)], L * 3000000 + i);
  }
  for (int i = 0; i < N; ++i) {
    CHECK(a[static_cast<size_t>(L) * N + i] == L * 2000000 + i, "put element %d from pid %d: %d", i, L,
          a[static_cast<size_t>(L) * N + i]);
    CHECK(hg[static_cast<size_t>(i)] == me * 1000000 + i,
          "hpget of bytes put to in the superstep: element %d is %d, expected the old %d", i,
          hg[static_cast<size_t>(i)], me * 1000000 + i);
  }

  // ---- superstep 3: overlapping puts into pid 0's array
  std::vector<int> big(static_cast<size_t>(N));
  for (int i = 0; i < N; ++i) big[static_cast<size_t>(i)] = (me + 1) * 1000000 + i;
  const int tail = 7000 + me;
  bsp_put(0, big.data(), ov.data(), me * Q * 4, NB);
  bsp_put(0, &tail, ov.data(), (me * Q + N - 1) * 4, sizeof tail);
  std::fill(big.begin(), big.end(), -9);
  if (me == 0 && P > 1) bsp_get(1, &x, 0, &ov[static_cast<size_t>((P - 1) * Q)], sizeof x);
  sync_m(me == 0 ? all_others() : (me == 1 ? 1 : 0));
  if (me == 0) {
    std::vector<int> w(ov.size(), -1);
    if (P > 1) w[static_cast<size_t>((P - 1) * Q)] = 4001;  // the get result, written before the puts
    for (int s = 0; s < P; ++s) {
      for (int i = 0; i < N; ++i) w[static_cast<size_t>(s * Q + i)] = (s + 1) * 1000000 + i;
      w[static_cast<size_t>(s * Q + N - 1)] = 7000 + s;
    }
    for (size_t i = 0; i < ov.size(); ++i)
      CHECK(ov[i] == w[i], "overlapping puts: word %zu is %d, expected %d", i, ov[i], w[i]);
  }
  bsp_pop_reg(a2.data());
  bsp_pop_reg(hs.data());
  bsp_pop_reg(&x);
  bsp_pop_reg(ov.data());
  bsp_pop_reg(a.data());
  sync_m(all_others());
  std::printf("bigput ok\n");
  bsp_end();
  return 0;
}

// By default (BSPK_PUT_ZEROCOPY_MIN unset: auto) large puts are staged only
// to processes on other hosts; here every process shares the host
// (bspk_same_host says so, and rejects a pid out of range), so a 1 MiB put
// goes through the batch: copied at the call and into the destination,
// nothing read.
SCENARIO_ROW({.test = "DrmaLargePutOnOneHostGoesThroughTheBatch", .args = "bigput_auto counted", .procs = p_list({1, 2, 3}),
              .out = once_per_process("bigput_auto ok"), .limit_s = 90, .suite = "BSPlib"});
int bigput_auto(int argc, char** argv) {
  unsetenv("BSPK_PUT_ZEROCOPY_MIN");
  set_mode(argc, argv);
  begin_all();
  for (int j = 0; j < P; ++j) CHECK(bspk_same_host(j) == 1, "bspk_same_host(%d) is %d, expected 1", j, bspk_same_host(j));
  CHECK(bspk_same_host(P + 3) == BSPK_ERR_ARG, "bspk_same_host(%d) is %d, expected BSPK_ERR_ARG", P + 3,
        bspk_same_host(P + 3));
  CHECK(bspk_same_host(-1) == BSPK_ERR_ARG, "bspk_same_host(-1) is %d, expected BSPK_ERR_ARG", bspk_same_host(-1));
  const int R = right(), L = left();
  const int N = 1 << 18;  // ints: 1 MiB
  const int NB = N * static_cast<int>(sizeof(int));
  std::vector<int> a(static_cast<size_t>(N), -1), src(static_cast<size_t>(N));
  bsp_push_reg(a.data(), NB);
  sync_m(all_others());
  for (int i = 0; i < N; ++i) src[static_cast<size_t>(i)] = me * 7 + i;
  bspk_stats s0{}, s1{};
  s0 = stats_now();
  bsp_put(R, src.data(), a.data(), 0, NB);
  sync_m(others({L}));
  s1 = stats_now();
  for (int i = 0; i < N; ++i)
    CHECK(a[static_cast<size_t>(i)] == L * 7 + i, "put element %d from pid %d: %d", i, L, a[static_cast<size_t>(i)]);
  const uint64_t want = 2ull * static_cast<uint64_t>(NB), got = s1.bytes_copied - s0.bytes_copied;
  // (+ the batch's growth to hold the put the first time: its records so far, copied over)
  CHECK(got >= want && got - want <= 4096 && s1.bytes_read == s0.bytes_read,
        "a 1 MiB put on one host: bytes_copied grew by %llu (expected %llu + up to 4096), bytes_read by %llu (expected 0)",
        (unsigned long long)got, (unsigned long long)want, (unsigned long long)(s1.bytes_read - s0.bytes_read));
  bsp_pop_reg(a.data());
  sync_m(all_others());
  std::printf("bigput_auto ok\n");
  bsp_end();
  return 0;
}

// On one host a counted bsp_sync carries each batch of up to 8 KiB through
// the board (no message: msgs_sent does not grow), and a larger one as a
// message in one more superstep (README "BSPlib programs", "On one host").
// A put of 6,000 bytes to the right neighbour (a batch of about 6 KiB), then
// one of 10,000 bytes; both land whole either way, and with the batches as
// messages (BSPK_BSPLIB_BOARD=off) every batch is a message.
SCENARIO_ROW({.test = "BoardCarriesBatchesOfUpTo8KiB", .args = "board_batch counted", .procs = p_range(2, 4),
              .out = once_per_process("board_batch ok"), .limit_s = 90, .suite = "BSPlib"});
SCENARIO_ROW({.test = "BoardCarriesBatchesOfUpTo8KiB_Messages", .args = "board_batch counted", .procs = p_list({2, 3}),
              .env = "BSPK_BSPLIB_BOARD=off", .out = once_per_process("board_batch ok"), .limit_s = 90,
              .suite = "BSPlib"});
int board_batch(int argc, char** argv) {
  set_mode(argc, argv);
  begin_all();
  const int R = right(), L = left();
  const int N = 2500;  // ints: room for the larger put
  std::vector<int> a(static_cast<size_t>(N), -1), src(static_cast<size_t>(N));
  bsp_push_reg(a.data(), N * static_cast<int>(sizeof(int)));
  sync_m(all_others());
  const bool board = board_path();
  int round = 0;
  for (int n : {1500, 2500}) {  // 6,000 and 10,000 bytes
    for (int i = 0; i < n; ++i) src[static_cast<size_t>(i)] = me * 100000 + round * 10000 + i;
    const bspk_stats s0 = stats_now();
    bsp_put(R, src.data(), a.data(), 0, n * static_cast<int>(sizeof(int)));
    sync_m(others({L}));
    const bspk_stats s1 = stats_now();
    for (int i = 0; i < n; ++i)
      CHECK(a[static_cast<size_t>(i)] == L * 100000 + round * 10000 + i, "%d-byte put: element %d from pid %d is %d",
            n * 4, i, L, a[static_cast<size_t>(i)]);
    const uint64_t msgs = s1.msgs_sent - s0.msgs_sent;
    const bool inline_expected = board && n * sizeof(int) < 8192 - 64;
    CHECK(inline_expected ? msgs == 0 : msgs >= 1, "a %d-byte put (%s): %llu messages sent, expected %s", n * 4,
          board ? "board" : "batches as messages", (unsigned long long)msgs, inline_expected ? "0" : "at least 1");
    ++round;
  }
  bsp_pop_reg(a.data());
  sync_m(all_others());
  std::printf("board_batch ok\n");
  bsp_end();
  return 0;
}

// A zero-copy size that is not one ends the job at bsp_begin, naming the variable.
SCENARIO_ROW({.test = "ErrPutZeroCopyMinNotASize", .args = "combine counted", .procs = p_list({2}),
              .providers = {"shm"}, .env = "BSPK_SYNC_TIMEOUT=60 BSPK_PUT_ZEROCOPY_MIN=12Q",
              .status = fails_before_limit(),
              .out = {lacks("CHECK FAILED"), lacks("combine ok"),
                      has(Re{"bsp_begin\\b[^\\n]*BSPK_PUT_ZEROCOPY_MIN='12Q' is not a size in bytes"})},
              .limit_s = 30, .within_s = 25, .suite = "BSPlib"});
// BSPK_BSPLIB_BOARD takes on or off; anything else ends the job at bsp_begin
// (until 2026-12-07 "maybe" or "false" silently meant on).
SCENARIO_ROW({.test = "ErrBsplibBoardNotOnOrOff", .args = "combine counted", .procs = p_list({2}),
              .providers = {"shm"}, .env = "BSPK_SYNC_TIMEOUT=60 BSPK_BSPLIB_BOARD=maybe",
              .status = fails_before_limit(),
              .out = {lacks("CHECK FAILED"), lacks("combine ok"),
                      has(Re{"bsp_begin\\b[^\\n]*BSPK_BSPLIB_BOARD='maybe' is not on or off"})},
              .limit_s = 30, .within_s = 25, .suite = "BSPlib"});
// ... and "False" is off (board_batch counts the messages a put takes)
SCENARIO_ROW({.test = "BsplibBoardFalseIsOff", .args = "board_batch counted", .procs = p_list({2}),
              .providers = {"shm"}, .env = "BSPK_BSPLIB_BOARD=False", .out = once_per_process("board_batch ok"),
              .limit_s = 60, .suite = "BSPlib"});

POSITIVE_ROWS("DrmaCombinedRunsOfSmallPutsKeepCallOrder", "combine", "combine ok");
int combine(int argc, char** argv) {
  set_mode(argc, argv);
  begin_all();
  const int R = right(), L = left();
  const int W = 80000;  // words of the long run
  std::vector<uint64_t> a(static_cast<size_t>(W), 0), b(64, 0);
  std::vector<uint8_t> c(256, 0xEE);
  std::vector<uint64_t> mine(64, 0);
  uint64_t gsrc = 5000 + static_cast<uint64_t>(me), got = 0;
  bsp_push_reg(a.data(), static_cast<int>(a.size() * sizeof(uint64_t)));
  bsp_push_reg(b.data(), static_cast<int>(b.size() * sizeof(uint64_t)));
  bsp_push_reg(c.data(), static_cast<int>(c.size()));
  bsp_push_reg(mine.data(), static_cast<int>(mine.size() * sizeof(uint64_t)));
  bsp_push_reg(&gsrc, sizeof gsrc);
  sync_m(all_others());

  auto word = [](int src, int i) { return (static_cast<uint64_t>(src) << 32) | static_cast<uint64_t>(i); };
  // The long run, word by word (the source variable is reused: copied at the call).
  for (int i = 0; i < W; ++i) {
    uint64_t v = word(me, i);
    bsp_put(R, &v, a.data(), i * 8, 8);
  }
  uint64_t again = 777;
  bsp_put(R, &again, a.data(), 5 * 8, 8);  // a[5] again, after its run: this call wins
  // b: a run broken by a put into c, by a get from R and by a send, then continued.
  for (int i = 0; i < 64; ++i) {
    uint64_t v = word(me, 1000 + i);
    bsp_put(R, &v, b.data(), i * 8, 8);
    if (i == 10) {
      uint8_t x = 0x55;
      bsp_put(R, &x, c.data(), 200, 1);
    }
    if (i == 20) bsp_get(R, &gsrc, 0, &got, sizeof got);
    if (i == 30) bsp_send(R, nullptr, &v, sizeof v);
  }
  // c: 4-byte then 3-byte pieces, contiguous (padding inside the record).
  for (int i = 0; i < 10; ++i) {
    uint8_t piece[4];
    fill(piece, 4, me, 100 + i);
    bsp_put(R, piece, c.data(), i * 4, 4);
  }
  for (int i = 0; i < 20; ++i) {
    uint8_t piece[3];
    fill(piece, 3, me, 200 + i);
    bsp_put(R, piece, c.data(), 40 + i * 3, 3);
  }
  // Into this process's own array: the local batch combines the same way.
  for (int i = 0; i < 64; ++i) {
    uint64_t v = word(me, 2000 + i);
    bsp_put(me, &v, mine.data(), i * 8, 8);
  }
  sync_m(others({L}));
  for (int i = 0; i < W; ++i) {
    const uint64_t want = i == 5 ? 777 : word(L, i);
    if (a[static_cast<size_t>(i)] != want)
      CHECK(false, "a[%d] = %llx, expected %llx (run of %d puts from pid %d)", i,
            static_cast<unsigned long long>(a[static_cast<size_t>(i)]), static_cast<unsigned long long>(want), W, L);
  }
  for (int i = 0; i < 64; ++i) {
    CHECK(b[static_cast<size_t>(i)] == word(L, 1000 + i), "b[%d] = %llx after a broken run", i,
          static_cast<unsigned long long>(b[static_cast<size_t>(i)]));
    CHECK(mine[static_cast<size_t>(i)] == word(me, 2000 + i), "own array [%d] = %llx", i,
          static_cast<unsigned long long>(mine[static_cast<size_t>(i)]));
  }
  for (int i = 0; i < 10; ++i) CHECK(holds(c.data() + i * 4, 4, L, 100 + i), "4-byte piece %d", i);
  for (int i = 0; i < 20; ++i) CHECK(holds(c.data() + 40 + i * 3, 3, L, 200 + i), "3-byte piece %d", i);
  CHECK(c[100] == 0xEE && c[200] == 0x55, "bytes past the pieces: %#x at 100, %#x at 200", c[100], c[200]);
  CHECK(got == 5000 + static_cast<uint64_t>(R), "the get in the middle of a run: %llu",
        static_cast<unsigned long long>(got));
  int nmsg = -1, nbytes = -1;
  bsp_qsize(&nmsg, &nbytes);
  CHECK(nmsg == 1 && nbytes == 8, "the send in the middle of a run: %d messages, %d bytes", nmsg, nbytes);

  for (void* p : std::initializer_list<void*>{a.data(), b.data(), c.data(), mine.data(), static_cast<void*>(&gsrc)})
    bsp_pop_reg(p);
  sync_m(all_others());
  std::printf("combine ok pid=%d p=%d\n", me, P);
  bsp_end();
  return 0;
}

// ================================================================ reg
// Registration: collective and matched by order (addresses and sizes differ
// per process); takes effect at the next sync (a registration popped in a
// superstep still works in it); the same address registered twice: the newest
// is used (sizes differ, so the bounds tell which: a 16-byte put fits only
// the newer one) and popped first (8, 16, pop, 4, pop: an 8-byte put fits
// again); pops need not be LIFO across addresses;
// NULL registrations with size 0 on odd pids, named by NULL there in a put
// into the even pids' parts, and a NULL pop there matching
// a real pop on the even pids (not the latest registration: the one below
// must stay usable). Push then pop in one superstep cancel (the error side
// is err_push_pop_cancel).
POSITIVE_ROWS("RegistrationOrderNullWildcardAndReuse", "reg", "reg ok");
int reg(int argc, char** argv) {
  set_mode(argc, argv);
  begin_all();
  const int R = right(), L = left();
  const bool even = me % 2 == 0;
  // Different addresses per process: heap blocks of pid-dependent sizes.
  std::vector<char> pad(static_cast<size_t>(1 + 100 * me));
  int* a = new int(0);
  int* b = new int(0);
  int* c = new int(0);
  uint8_t* arr = new uint8_t[16 + static_cast<size_t>(me)];
  std::memset(arr, 0, 16);
  int* e = new int(0);
  uint64_t* q1 = new uint64_t(0);
  uint64_t* q2 = new uint64_t(0);
  int* r = new int(0);
  bsp_push_reg(a, sizeof(int));
  bsp_push_reg(b, sizeof(int));
  bsp_push_reg(c, sizeof(int));
  bsp_push_reg(arr, 8);
  bsp_push_reg(even ? q1 : nullptr, even ? 8 : 0);
  bsp_push_reg(even ? q2 : nullptr, even ? 8 : 0);
  sync_m(all_others());

  // ---- 1: pop a and put into it in the same superstep (still works); push
  // and pop e (cancel); register arr again, 16 bytes (used from the next sync).
  bsp_pop_reg(a);
  int av = 100 + me;
  bsp_put(R, &av, a, 0, sizeof av);
  bsp_push_reg(e, sizeof(int));
  bsp_pop_reg(e);
  bsp_push_reg(arr, 16);
  uint8_t eight[8];
  fill(eight, 8, me, 10);
  bsp_put(R, eight, arr, 0, 8);  // the 8-byte registration is the one in force
  sync_m(all_others());
  CHECK(*a == 100 + L, "put to a registration popped in the same superstep: %d, expected %d", *a, 100 + L);
  CHECK(holds(arr, 8, L, 10), "8-byte put into arr");

  // ---- 2: 16 bytes into arr: the newer registration (16 bytes) is in use.
  uint8_t sixteen[16];
  fill(sixteen, 16, me, 11);
  bsp_put(R, sixteen, arr, 0, 16);
  int bv = 200 + me;
  bsp_put(R, &bv, b, 0, sizeof bv);
  sync_m(others({L}));
  CHECK(holds(arr, 16, L, 11), "16-byte put into the newest registration of arr");
  CHECK(*b == 200 + L, "b = %d", *b);

  // ---- 3: pops, not LIFO: arr (the newest, 16 bytes; the 8-byte one stays),
  // b (registered before c and arr), and q1 -- NULL on odd pids, a wildcard
  // matching the even pids' q1, which is not their newest registration.
  bsp_pop_reg(arr);
  bsp_pop_reg(b);
  bsp_pop_reg(even ? static_cast<void*>(q1) : nullptr);
  sync_m(all_others());

  // ---- 4: arr is the 8-byte registration again; c, and q2 on even pids, still
  // line up (every even pid puts into every even pid's q2).
  fill(eight, 8, me, 12);
  bsp_put(R, eight, arr, 0, 8);
  int cv = 300 + me;
  bsp_put(R, &cv, c, 0, sizeof cv);
  // Odd pids name q2 by NULL, their own (size 0) address of it, and put into
  // every even pid's q2 (as BSPedupack's bspmv does from processes that own
  // no part of a vector).
  std::vector<int> to_me = {L};
  for (int t = 0; t < P; t += 2) {
    uint64_t qv = (even ? 0x5100 : 0x5200) + static_cast<uint64_t>(me);
    bsp_put(t, &qv, even ? static_cast<void*>(q2) : nullptr, 0, 8);
  }
  if (even)
    for (int s = 0; s < P; ++s) to_me.push_back(s);
  std::set<int> senders(to_me.begin(), to_me.end());
  senders.erase(me);
  sync_m(static_cast<int>(senders.size()));
  CHECK(holds(arr, 8, L, 12), "8-byte put into the older registration of arr");
  CHECK(holds(arr + 8, 8, L, 11, 8), "bytes 8..15 of arr changed by an 8-byte put");
  CHECK(*c == 300 + L, "c = %d after popping b: registrations no longer line up", *c);
  // Every pid put into q2: the highest pid's put wins.
  const uint64_t last_q2 = ((P - 1) % 2 == 0 ? 0x5100 : 0x5200) + static_cast<uint64_t>(P - 1);
  if (even) CHECK(*q2 == last_q2, "q2 = 0x%llx, expected 0x%llx", (unsigned long long)*q2, (unsigned long long)last_q2);
  CHECK(*q1 == 0, "q1 was written");

  // ---- 5: a registration made after the NULL pops lines up too; arr gets a
  // third, smaller registration (4 bytes; the 8-byte one below it).
  bsp_push_reg(r, sizeof(int));
  bsp_push_reg(arr, 4);
  sync_m(all_others());
  // ---- 6: r; 4 bytes into arr, whose newest (4-byte) registration is popped
  // in this superstep.
  int rv = 400 + me;
  bsp_put(R, &rv, r, 0, sizeof rv);
  uint8_t four[4];
  fill(four, 4, me, 13);
  bsp_put(R, four, arr, 0, 4);
  bsp_pop_reg(arr);
  sync_m(all_others());
  CHECK(*r == 400 + L, "r = %d", *r);
  CHECK(holds(arr, 4, L, 13) && holds(arr + 4, 4, L, 12, 4), "4-byte put into the newest registration of arr");
  // ---- 7: the pop removed the newest (4 bytes): 8 bytes fit again.
  fill(eight, 8, me, 14);
  bsp_put(R, eight, arr, 0, 8);
  sync_m(others({L}));
  CHECK(holds(arr, 8, L, 14), "8-byte put into arr after popping its newest (4-byte) registration");

  // ---- 8: bsp_pop_reg(NULL) on every process pops the oldest registration
  // that is NULL on every process (BSPonMPI), not each process's newest NULL
  // one: n1 is NULL on pid 0 only, n2 everywhere, n3 on the last pid only.
  // Afterwards n1 and n3 still line up (named by NULL where they are NULL).
  if (P >= 2) {
    int* n1 = new int(0);
    int* n3 = new int(0);
    void* a1 = me == 0 ? nullptr : n1;
    void* a3 = me == P - 1 ? nullptr : n3;
    bsp_push_reg(a1, a1 ? sizeof(int) : 0);
    bsp_push_reg(nullptr, 0);
    bsp_push_reg(a3, a3 ? sizeof(int) : 0);
    sync_m(all_others());
    bsp_pop_reg(nullptr);  // every process: n2
    sync_m(all_others());
    int v1 = 500 + me, v3 = 600 + me;
    if (R != 0) bsp_put(R, &v1, a1, 0, sizeof v1);
    if (R != P - 1) bsp_put(R, &v3, a3, 0, sizeof v3);
    sync_m(others({L}));
    if (me != 0) CHECK(*n1 == 500 + L, "n1 = %d after everyone popped NULL, expected %d", *n1, 500 + L);
    if (me != P - 1) CHECK(*n3 == 600 + L, "n3 = %d after everyone popped NULL, expected %d", *n3, 600 + L);
    bsp_pop_reg(a1);  // NULL on pid 0: a wildcard matching the others' n1
    bsp_pop_reg(a3);
    sync_m(all_others());
    delete n1;
    delete n3;
  }

  bsp_pop_reg(r);
  bsp_pop_reg(even ? static_cast<void*>(q2) : nullptr);
  bsp_pop_reg(arr);
  bsp_pop_reg(c);
  sync_m(all_others());
  std::printf("reg ok pid=%d p=%d\n", me, P);
  bsp_end();
  for (int* v : {a, b, c, e, r}) delete v;
  delete q1;
  delete q2;
  delete[] arr;
  return 0;
}

// ================================================================ bsmp
// Tag size: default 0; bsp_set_tagsize is collective, returns the size
// requested by the previous call in this superstep or the size in force, and
// takes effect at the next sync; a message keeps the tag size in force when it
// was sent. bsp_send/bsp_hpsend copy tag and payload at the call; a 0-byte
// message is a message. Messages of superstep s are read in s+1 only; unread
// ones are discarded at the next sync. Queue order: highest source pid first,
// within one source the last sent first. bsp_qsize counts messages and
// payload bytes. bsp_get_tag on an empty queue: status -1, tag untouched.
// bsp_move copies min(size, payload) bytes and removes the message;
// bsp_hpmove returns the payload size and pointers (aligned for any type
// that fits: to max_align_t, or to 8 for at most 8 bytes)
// valid until the next sync, -1 on an empty queue. Includes a 150000-byte
// payload (many frames).
POSITIVE_ROWS("BsmpTagSizeQueueOrderMoveAndHpmove", "bsmp", "bsmp ok");
constexpr int kBig = 150000;
int payload_size(int src, int k) { return k == 0 ? 0 : k == 1 ? 5 + src : k == 2 ? 17 + 3 * src : kBig; }
// Aligned for any type of at most n bytes (alignof(T) <= sizeof(T)).
size_t align_for(size_t n) { return n > 8 ? alignof(std::max_align_t) : 8; }
bool aligned(const void* p, size_t n) { return reinterpret_cast<uintptr_t>(p) % align_for(n) == 0; }

int bsmp(int argc, char** argv) {
  set_mode(argc, argv);
  begin_all();
  const int R = right(), L = left();
  bsp_nprocs_t nm = -1;
  bsp_size_t nb = -1;

  // ---- superstep 0: tag size 0 in force; request 8, then 4.
  bsp_size_t t = 8;
  bsp_set_tagsize(&t);
  CHECK(t == 0, "first bsp_set_tagsize returned %d, expected the default 0", t);
  t = 4;
  bsp_set_tagsize(&t);
  CHECK(t == 8, "second bsp_set_tagsize returned %d, expected the previous request 8", t);
  bsp_qsize(&nm, &nb);
  CHECK(nm == 0 && nb == 0, "qsize in superstep 0: %d messages, %d bytes", nm, nb);
  bsp_send(R, nullptr, "abc", 3);  // tag size 0: the tag may be NULL
  sync_m(all_others());

  // ---- superstep 1: tag size 4 in force.
  bsp_qsize(&nm, &nb);
  CHECK(nm == 1 && nb == 3, "qsize: %d messages, %d bytes; expected 1, 3", nm, nb);
  uint8_t tagbuf[16];
  std::memset(tagbuf, 0xEE, sizeof tagbuf);
  bsp_size_t st = -5;
  bsp_get_tag(&st, tagbuf);
  CHECK(st == 3, "bsp_get_tag status %d, expected 3", st);
  for (int i = 0; i < 16; ++i) CHECK(tagbuf[i] == 0xEE, "a message sent with tag size 0 wrote tag byte %d", i);
  char abc[8] = "zzzzzzz";
  bsp_move(abc, 8);
  CHECK(std::memcmp(abc, "abczzzz", 8) == 0, "bsp_move: '%s'", abc);
  bsp_qsize(&nm, &nb);
  CHECK(nm == 0 && nb == 0, "qsize after the move: %d, %d", nm, nb);
  t = 8;
  bsp_set_tagsize(&t);
  CHECK(t == 4, "bsp_set_tagsize returned %d, expected the size in force 4", t);
  // To every process (itself too), k = 0..2: 0-byte, small and medium
  // payloads; to R also a big one, last. Tag and payload changed after the call.
  std::vector<uint8_t> pl(kBig);
  for (int dst = 0; dst < P; ++dst)
    for (int k = 0; k < (dst == R ? 4 : 3); ++k) {
      int32_t tag[2] = {me * 100 + k, 0x77777777};  // only 4 bytes go (tag size 4 in force)
      const int n = payload_size(me, k);
      fill(pl.data(), static_cast<size_t>(n), me, 20 + k);
      if (k == 1)
        bsp_hpsend(dst, tag, pl.data(), n);
      else
        bsp_send(dst, tag, pl.data(), n);
      tag[0] = -1;
      std::memset(pl.data(), 0, static_cast<size_t>(n));
    }
  bsp_qsize(&nm, &nb);
  CHECK(nm == 0 && nb == 0, "messages sent in this superstep are visible in it: %d, %d", nm, nb);
  sync_m(all_others());

  // ---- superstep 2: tag size 8 in force; the messages above carry 4-byte tags.
  int want_n = 0, want_b = 0;
  for (int s = 0; s < P; ++s)
    for (int k = 0; k < (s == L ? 4 : 3); ++k) {
      ++want_n;
      want_b += payload_size(s, k);
    }
  bsp_qsize(&nm, &nb);
  CHECK(nm == want_n && nb == want_b, "qsize: %d messages, %d bytes; expected %d, %d (tags excluded)", nm, nb, want_n,
        want_b);
  struct Kept {
    void* tag;
    void* payload;
    int src, k, n;
  };
  std::vector<Kept> kept;
  std::vector<uint8_t> rb(kBig + 64);
  int idx = 0;
  for (int s = P - 1; s >= 0; --s)
    for (int k = (s == L ? 3 : 2); k >= 0; --k, ++idx) {
      const int n = payload_size(s, k);
      uint8_t tg[16];
      std::memset(tg, 0xEE, sizeof tg);
      bsp_get_tag(&st, tg);
      int32_t tv;
      std::memcpy(&tv, tg, 4);
      CHECK(st == n && tv == s * 100 + k, "message %d: status %d tag %d, expected pid %d's message %d (%d bytes): "
            "order is highest pid first, last sent first", idx, st, tv, s, k, n);
      for (int i = 4; i < 16; ++i) CHECK(tg[i] == 0xEE, "4-byte tag wrote byte %d (tag size 8 now in force)", i);
      if ((s + k) % 2 == 0) {
        // bsp_move, with a buffer 3 bytes short (or 5 bytes long).
        const int cap = n >= 3 && idx % 4 == 0 ? n - 3 : n + 5;
        std::memset(rb.data(), 0xEE, rb.size());
        bsp_move(rb.data(), cap);
        const int got = std::min(cap, n);
        CHECK(holds(rb.data(), static_cast<size_t>(got), s, 20 + k), "bsp_move payload of pid %d's message %d", s, k);
        for (size_t i = static_cast<size_t>(got); i < rb.size(); ++i)
          CHECK(rb[i] == 0xEE, "bsp_move(%d) of a %d-byte payload wrote byte %zu", cap, n, i);
      } else {
        void* tp = nullptr;
        void* pp = nullptr;
        bsp_size_t hn = bsp_hpmove(&tp, &pp);
        CHECK(hn == n, "bsp_hpmove returned %d, expected %d", hn, n);
        CHECK(tp != nullptr && aligned(tp, 4), "bsp_hpmove tag pointer %p (4 bytes) not aligned to %zu", tp,
              align_for(4));
        CHECK(n == 0 || (pp != nullptr && aligned(pp, static_cast<size_t>(n))),
              "bsp_hpmove payload pointer %p (%d bytes) not aligned to %zu", pp, n, align_for(static_cast<size_t>(n)));
        kept.push_back({tp, pp, s, k, n});
      }
      bsp_qsize(&nm, &nb);
      want_n -= 1;
      want_b -= n;
      CHECK(nm == want_n && nb == want_b, "qsize after removing a message: %d, %d; expected %d, %d", nm, nb, want_n,
            want_b);
    }
  // hpmove'd storage stays valid until the next sync.
  for (const Kept& kp : kept) {
    int32_t tv;
    std::memcpy(&tv, kp.tag, 4);
    CHECK(tv == kp.src * 100 + kp.k, "hpmove tag of pid %d's message %d now %d", kp.src, kp.k, tv);
    CHECK(holds(kp.payload, static_cast<size_t>(kp.n), kp.src, 20 + kp.k), "hpmove payload of pid %d's message %d",
          kp.src, kp.k);
  }
  // The empty queue.
  std::memset(tagbuf, 0xEE, sizeof tagbuf);
  st = 12345;
  bsp_get_tag(&st, tagbuf);
  CHECK(st == -1, "bsp_get_tag on an empty queue: status %d", st);
  for (int i = 0; i < 16; ++i) CHECK(tagbuf[i] == 0xEE, "bsp_get_tag on an empty queue wrote tag byte %d", i);
  void* tp = &st;
  void* pp = &st;
  CHECK(bsp_hpmove(&tp, &pp) == -1, "bsp_hpmove on an empty queue did not return -1");
  // Two messages to R with 8-byte tags.
  for (int k = 0; k < 2; ++k) {
    uint64_t tag8 = 0xA0A0000000000000ull + static_cast<uint64_t>(me * 10 + k);
    int val = me * 10 + k;
    bsp_send(R, &tag8, &val, sizeof val);
  }
  sync_m(others({L}));

  // ---- superstep 3: read one of the two; send one to myself (not visible now).
  bsp_qsize(&nm, &nb);
  CHECK(nm == 2 && nb == 8, "qsize: %d, %d; expected 2 messages, 8 bytes", nm, nb);
  std::memset(tagbuf, 0xEE, sizeof tagbuf);
  bsp_get_tag(&st, tagbuf);
  uint64_t t8;
  std::memcpy(&t8, tagbuf, 8);
  CHECK(st == 4 && t8 == 0xA0A0000000000000ull + static_cast<uint64_t>(L * 10 + 1) && tagbuf[8] == 0xEE,
        "8-byte tag 0x%llx, status %d", (unsigned long long)t8, st);
  int val = -1;
  bsp_move(&val, sizeof val);
  CHECK(val == L * 10 + 1, "payload %d", val);
  uint64_t selftag = 77;
  bsp_send(me, &selftag, "self", 4);
  bsp_qsize(&nm, &nb);
  CHECK(nm == 1 && nb == 4, "qsize: %d, %d; expected 1, 4", nm, nb);
  t = 2;
  bsp_set_tagsize(&t);
  CHECK(t == 8, "bsp_set_tagsize returned %d, expected 8", t);
  t = 6;
  bsp_set_tagsize(&t);
  CHECK(t == 2, "bsp_set_tagsize returned %d, expected 2 (the previous request)", t);
  sync_m(all_others());

  // ---- superstep 4: the unread message is gone; the self message is here.
  bsp_qsize(&nm, &nb);
  CHECK(nm == 1 && nb == 4, "qsize: %d, %d; expected only the message to myself (unread ones are discarded)", nm, nb);
  std::memset(tagbuf, 0xEE, sizeof tagbuf);
  bsp_get_tag(&st, tagbuf);
  std::memcpy(&t8, tagbuf, 8);
  CHECK(st == 4 && t8 == 77, "self message: status %d tag %llu", st, (unsigned long long)t8);
  t = 6;
  bsp_set_tagsize(&t);
  CHECK(t == 6, "bsp_set_tagsize returned %d, expected the size in force 6", t);
  sync_m(all_others());
  bsp_qsize(&nm, &nb);
  CHECK(nm == 0 && nb == 0, "qsize: %d, %d after a superstep without messages", nm, nb);
  std::printf("bsmp ok pid=%d p=%d\n", me, P);
  bsp_end();
  return 0;
}

// ================================================================ errors
// Each ends the job: non-zero status, before the row's limit (a hang is a
// failure: the sync timeout is longer than the limit), a message naming the
// function and the problem, and no CHECK failure of ours.
constexpr int kErrLimit = 30;
#define ERR_ROW(Test, name, procs_, provs, ...)                                                                 \
  SCENARIO_ROW({.test = Test, .args = name, .procs = procs_, .providers = provs, .status = fails_before_limit(), \
                .out = {lacks("CHECK FAILED"), lacks("reached past"), __VA_ARGS__}, .limit_s = kErrLimit, .within_s = 25, .suite = "BSPlib"})
// The message names the function, then the problem, on one line, once.
Match msg(const std::string& fn, const std::string& problem) {
  return exactly(1, Re{fn + "\\b[^\\n]*(" + problem + ")"});
}
#define SHM std::vector<std::string>{"shm"}
#define TCP std::vector<std::string>{"tcp"}
#define BOTH std::vector<std::string>{"tcp", "shm"}

// Common start of the error scenarios: x (8 bytes on every process; on pid
// 1, 16 bytes) registered and in force.
uint8_t ex[16];
void err_begin() {
  begin_all();
  bsp_push_reg(ex, me == 1 ? 16 : 8);
  bsp_sync();
}
// After the erroneous call: a sync the error must not let anyone through.
[[noreturn]] void reached(const char* what) {
  bsp_sync();
  std::printf("reached past %s on pid %d\n", what, me);  // the error did not end the job
  std::fflush(stdout);
  bsp_end();
  std::exit(0);
}

ERR_ROW("ErrPutPidOutOfRange", "err_put_pid", p_list({2}), BOTH, msg("bsp_put", "out of range"), has("pid 2"));
ERR_ROW("ErrGetPidOutOfRange", "err_get_pid", p_list({3}), SHM, msg("bsp_get", "out of range"), has("pid -1"));
ERR_ROW("ErrPutUnregistered", "err_put_unreg", p_list({2}), BOTH, msg("bsp_put", "not registered"));
ERR_ROW("ErrGetUnregistered", "err_get_unreg", p_list({3}), SHM, msg("bsp_get", "not registered"));
ERR_ROW("ErrPutToRegistrationPushedThisSuperstep", "err_put_same_step", p_list({2}), SHM,
        msg("bsp_put", "this superstep|same superstep|not yet|next bsp_sync"));
ERR_ROW("ErrGetFromRegistrationPushedThisSuperstep", "err_get_same_step", p_list({2}), SHM,
        msg("bsp_get", "this superstep|same superstep|not yet|next bsp_sync"));
ERR_ROW("ErrPutPastTheEndSaysHowFar", "err_put_past", p_list({2, 3}), BOTH, msg("bsp_put", "\\b3 bytes? past"));
ERR_ROW("ErrPutPastTheTargetsSmallerRegistration", "err_put_past_target", p_list({2}), SHM,
        msg("bsp_put", "\\b4 bytes? past"));
ERR_ROW("ErrGetPastTheEndSaysHowFar", "err_get_past", p_list({2}), SHM, msg("bsp_get", "\\b5 bytes? past"));
ERR_ROW("ErrDirectGetPastTheEndSaysHowFar", "err_direct_get_past", p_list({2}), BOTH,
        msg("bsp_direct_get", "\\b5 bytes? past"));
ERR_ROW("ErrDirectGetUnregistered", "err_direct_get_unreg", p_list({3}), SHM, msg("bsp_direct_get", "not registered"));
ERR_ROW("ErrDirectGetPidOutOfRange", "err_direct_get_pid", p_list({2}), SHM, msg("bsp_direct_get", "out of range"));
ERR_ROW("ErrDirectGetFromRegistrationPushedThisSuperstep", "err_direct_get_same_step", p_list({2}), SHM,
        msg("bsp_direct_get", "this superstep|next bsp_sync"));
// Without fabric registrations (zero copy off both ways) a direct read is
// impossible: said at the call, with the cause.
SCENARIO_ROW({.test = "ErrDirectGetWithoutFabricRegistration", .args = "err_direct_get_past ok", .procs = p_list({2}),
              .env = "BSPK_HP_ZEROCOPY_MIN=off BSPK_PUT_ZEROCOPY_MIN=off", .status = fails_before_limit(),
              .out = {lacks("CHECK FAILED"), lacks("reached past"),
                      msg("bsp_direct_get", "not registered with the fabric[^\\n]*both off")},
              .limit_s = kErrLimit, .within_s = 25, .suite = "BSPlib"});
ERR_ROW("ErrPutNegativeSize", "err_put_neg_size", p_list({2}), SHM, msg("bsp_put", "negative"));
ERR_ROW("ErrPutNegativeOffset", "err_put_neg_offset", p_list({2}), SHM, msg("bsp_put", "negative"));
ERR_ROW("ErrGetNegativeOffset", "err_get_neg_offset", p_list({2}), SHM, msg("bsp_get", "negative"));
ERR_ROW("ErrGetNegativeSize", "err_get_neg_size", p_list({2}), SHM, msg("bsp_get", "negative"));
ERR_ROW("ErrPushRegNegativeSize", "err_push_neg", p_list({2}), SHM, msg("bsp_push_reg", "negative"));
ERR_ROW("ErrPushRegNullWithSize", "err_push_null", p_list({2}), SHM, msg("bsp_push_reg", "NULL"));
ERR_ROW("ErrPutNullSource", "err_put_null_src", p_list({2}), SHM, msg("bsp_put", "NULL"));
ERR_ROW("ErrPutToNullWithoutNullRegistration", "err_put_null_unreg", p_list({2}), SHM,
        msg("bsp_put", "NULL is not registered"));
ERR_ROW("ErrGetNullDestination", "err_get_null_dst", p_list({2}), SHM, msg("bsp_get", "NULL"));
ERR_ROW("ErrSendNullPayload", "err_send_null", p_list({2}), SHM, msg("bsp_send", "NULL"));
ERR_ROW("ErrSendNullTagWithTagSize", "err_send_null_tag", p_list({2}), SHM, msg("bsp_send", "NULL"));
ERR_ROW("ErrSendPidOutOfRange", "err_send_pid", p_list({2}), SHM, msg("bsp_send", "out of range"));
ERR_ROW("ErrPopRegWithoutRegistration", "err_pop_unreg", p_list({2}), BOTH,
        msg("bsp_pop_reg", "no registration|not registered"));
ERR_ROW("ErrPushPopCancelThenPut", "err_push_pop_cancel", p_list({2}), SHM, msg("bsp_put", "not registered"));
ERR_ROW("ErrPutAfterPop", "err_put_after_pop", p_list({2}), SHM, msg("bsp_put", "not registered"));
ERR_ROW("ErrPopRemovesNewestRegistration", "err_pop_newest", p_list({2}), SHM, msg("bsp_put", "\\b8 bytes? past"));
// Collective mismatches, reported at the sync, naming the first process that
// differs from pid 0 (pids >= 2 differ; pid 1 agrees with pid 0).
ERR_ROW("ErrPushCountsDiffer", "err_push_count", p_list({3, 4}), BOTH, has("bsp_push_reg"), has(Re{"\\b0 and 2\\b"}),
        exactly(0, Re{"\\b0 and [13]\\b"}));
ERR_ROW("ErrPopCountsDiffer", "err_pop_count", p_list({3}), SHM, has("bsp_pop_reg"), has(Re{"\\b0 and 2\\b"}));
ERR_ROW("ErrPopsOfDifferentRegistrations", "err_pop_different", p_list({3, 4}), SHM, has("bsp_pop_reg"),
        has(Re{"\\b0 and 2\\b"}), exactly(0, Re{"\\b0 and [13]\\b"}));
// bsp_pop_reg(NULL) is a wildcard; the processes naming addresses must agree
// among themselves (pid 0 popped NULL); every process popping NULL needs a
// registration that is NULL on every process (BSPonMPI's pop_reg_7).
ERR_ROW("ErrNullAndNamedPopsOfDifferentRegistrations", "err_pop_null_different", p_list({3}), SHM, has("bsp_pop_reg"),
        has(Re{"\\b1 and 2\\b"}));
ERR_ROW("ErrPopNullEverywhereWithoutACommonNullRegistration", "err_pop_null_none", p_list({2, 3}), BOTH,
        msg("bsp_sync", "NULL on every process"));
ERR_ROW("ErrTagsizeCallCountsDiffer", "err_tagsize_count", p_list({3}), SHM, has("bsp_set_tagsize"),
        has(Re{"\\b0 and 2\\b"}));
ERR_ROW("ErrTagsizeValuesDiffer", "err_tagsize_value", p_list({3}), BOTH, has("bsp_set_tagsize"),
        has(Re{"\\b0 and 2\\b"}));
ERR_ROW("ErrMoveOnEmptyQueue", "err_move_empty", p_list({2}), SHM, msg("bsp_move", "empty"));
ERR_ROW("ErrSyncWhileOthersEnd", "err_sync_vs_end", p_list({2, 3}), BOTH, msg("bsp_end", "bsp_sync"));
// A declaration while bsp_begin left processes idle, without the board (a
// job across hosts): named as such, not as an engine's mixed-kinds error.
SCENARIO_ROW({.test = "ErrExpectWithIdleProcesses", .args = "err_expect_idle", .procs = p_list({3}),
              .providers = {"tcp"}, .env = "BSPK_BSPLIB_BOARD=off", .status = fails_before_limit(),
              .out = {lacks("reached past"),
                      at_least(1, Re{"bsp_sync \\(pid [01], superstep 0\\): bspk_expect / bspk_will_send was called, "
                                     "but bsp_begin\\(2\\) left 1 of the job's 3 processes idle"})},
              .limit_s = kErrLimit, .within_s = 25, .suite = "BSPlib"});
ERR_ROW("ErrBeginTwice", "err_begin_twice", p_list({2}), SHM, msg("bsp_begin", "twice|second|again"));
// BSPK_BSPLIB_BOARD must be the same on every process: pid 1 alone with off
// synced by messages while the others used the board (until 2026-12-08 "more
// messages than declared" in the first bsp_sync). Refused in bsp_begin,
// naming the process (the SPMD section has not begun: "starting").
ERR_ROW("ErrBoardSettingDiffers", "err_board_differs", p_list({2, 4}), BOTH,
        has("bsplib: error: bsp_begin \\(pid 1, starting\\): BSPK_BSPLIB_BOARD"_re),
        msg("bsp_begin", "BSPK_BSPLIB_BOARD is off on this process but on on pid 0: it must be the same on every "
                         "process of a job"),
        lacks("more messages than declared"));
ERR_ROW("ErrPidBeforeBegin", "err_before_begin bsp_pid", p_list({2}), SHM, msg("bsp_pid", "outside|before bsp_begin"));
ERR_ROW("ErrSyncBeforeBegin", "err_before_begin bsp_sync", p_list({2}), SHM, msg("bsp_sync", "outside|before bsp_begin"));
ERR_ROW("ErrPushRegBeforeBegin", "err_before_begin bsp_push_reg", p_list({2}), SHM,
        msg("bsp_push_reg", "outside|before bsp_begin"));
ERR_ROW("ErrTimeBeforeBegin", "err_before_begin bsp_time", p_list({2}), SHM, msg("bsp_time", "outside|before bsp_begin"));
ERR_ROW("ErrSyncAfterEnd", "err_after_end bsp_sync", p_list({2}), SHM, msg("bsp_sync", "outside|after bsp_end"));
ERR_ROW("ErrPidAfterEnd", "err_after_end bsp_pid", p_list({3}), TCP, msg("bsp_pid", "outside|after bsp_end"));
ERR_ROW("ErrSendAfterEnd", "err_after_end bsp_send", p_list({2}), SHM, msg("bsp_send", "outside|after bsp_end"));
ERR_ROW("ErrQsizeAfterEnd", "err_after_end bsp_qsize", p_list({2}), SHM, msg("bsp_qsize", "outside|after bsp_end"));
// One SPMD section per program: a bsp_begin after bsp_end is the second one.
ERR_ROW("ErrBeginAfterEnd", "err_after_end bsp_begin", p_list({2}), TCP, msg("bsp_begin", "twice"));
ERR_ROW("ErrInitAfterEnd", "err_after_end bsp_init", p_list({2}), SHM,
        msg("bsp_init", "one SPMD section per program"));
// A wrong (too small) bspk_expect: an error, not a hang or silent corruption.
// The declaration may be refused by bspk_expect itself (the batches are in
// already) or found wrong by bsp_sync; a program that ignores bspk_expect's
// result gets the error from bsp_sync.
ERR_ROW("ErrExpectTooSmall_ProgramChecksBspkExpect", "err_expect_small check", p_list({2, 4, 8}), BOTH,
        has(Re{"(bspk_expect|bsp_sync)\\b[^\\n]*declared"}));
ERR_ROW("ErrExpectTooSmall_ProgramIgnoresBspkExpect", "err_expect_small ignore", p_list({2, 3, 8}), BOTH,
        msg("bsp_sync", "declared"));
// The same with the batches as messages (on one host the board superstep
// checks the declaration against the batches that came; here the count does).
SCENARIO_ROW({.test = "ErrExpectTooSmall_Messages", .args = "err_expect_small ignore", .procs = p_list({2, 3}),
              .env = "BSPK_BSPLIB_BOARD=off", .status = fails_before_limit(),
              .out = {lacks("CHECK FAILED"), lacks("reached past"), msg("bsp_sync", "declared")},
              .limit_s = kErrLimit, .within_s = 25, .suite = "BSPlib"});
// A too large declaration on one host: found by the board superstep at once
// (on the message path it is the time-out's).
SCENARIO_ROW({.test = "ErrExpectTooLargeFoundAtOnceOnOneHost", .args = "err_expect_large", .procs = p_list({2, 4}),
              .status = fails_before_limit(),
              .out = {lacks("CHECK FAILED"), lacks("reached past"), msg("bsp_sync", "bspk_expect\\(\\d+\\) declared")},
              .limit_s = kErrLimit, .within_s = 15, .suite = "BSPlib"});

// A process that dies: the launcher's report names BSPlib's superstep, BSPk's
// next to it (bsp.h's layer counts, bspk_set_layer_superstep). err_begin's
// sync ends BSPlib superstep 0; three more, each with a get (whose reply
// superstep puts BSPk's count ahead of BSPlib's), and the last pid dies
// computing in BSPlib superstep 4 while the others wait in its sync.
#define CRASH_ROW(Test, name, report)                                                                         \
  SCENARIO_ROW({.test = Test, .args = name, .procs = p_list({2, 3}), .providers = BOTH,                     \
                .status = fails_before_limit(),                                                             \
                .out = {lacks("CHECK FAILED"), lacks("reached past"),                                       \
                        exactly(1, Re{report " in BSPlib superstep 4 \\(computing; BSPk superstep [0-9]+\\)"})}, \
                .limit_s = kErrLimit, .within_s = 25, .suite = "BSPlib"})
CRASH_ROW("CrashReportNamesTheBsplibSuperstep", "err_crash segv", "was killed by signal 11 \\(Segmentation fault\\)");
// A BSPlib program calls neither bspk_finalize nor bspk_abort itself: the
// reports say its layer did (boot/protocol.h, unfinalized_text, abort_text).
CRASH_ROW("ExitReportNamesTheBsplibSuperstep", "err_crash exit",
          "exited without calling bspk_finalize \\(BSPlib's end\\)");
CRASH_ROW("AbortReportNamesTheBsplibSuperstep", "err_crash abort",
          "called bspk_abort \\(through BSPlib: its abort or an error it found\\)");

// bsp_abort: the message as given, exactly once, every process non-zero.
#define ABORT_ROW(Test, name, procs_, provs)                                                                    \
  SCENARIO_ROW({.test = Test, .args = name, .procs = procs_, .providers = provs, .status = fails_before_limit(), \
                .out = {lacks("CHECK FAILED"), lacks("reached past"), exactly(1, "abort says 42 and xyz% done\n")}, \
                .limit_s = kErrLimit, .within_s = 25, .suite = "BSPlib"})
ABORT_ROW("AbortFromOneProcessPrintsOnce", "abort_one", p_list({2, 3, 8}), BOTH);
ABORT_ROW("AbortFromEveryProcessPrintsOnce", "abort_all", p_list({2, 8}), BOTH);
ABORT_ROW("AbortBeforeBegin", "abort_before_begin", p_list({2}), SHM);
ABORT_ROW("AbortFromEveryProcessBeforeBeginPrintsOnce", "abort_all_before_begin", p_list({4}), SHM);
ABORT_ROW("AbortAfterEnd", "abort_after_end", p_list({3}), SHM);
ABORT_ROW("AbortFromEveryProcessAfterEndPrintsOnce", "abort_all_after_end", p_list({4}), SHM);

// Outside the SPMD section, without BSPlib: act together, at a moment every
// process of the job agrees on -- 1.5 s after the launcher created its
// rendezvous socket (BSPK_BOOT_SOCKET).
void together() {
  const char* sock = std::getenv("BSPK_BOOT_SOCKET");
  struct stat st;
  if (!sock || stat(sock, &st) != 0) return;
  const double t = static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec * 1e-9 + 1.5;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  const double wait = t - (static_cast<double>(now.tv_sec) + now.tv_nsec * 1e-9);
  if (wait > 0 && wait < 5) usleep(static_cast<useconds_t>(wait * 1e6));
}

int err(const std::string& name, int argc, char** argv) {
  int v4 = 7;
  uint8_t src[32];
  std::memset(src, 1, sizeof src);
  std::string arg = argc > 2 ? argv[2] : "";
  const char* rank = std::getenv("BSPK_RANK");
  const bool rank0 = !rank || std::atoi(rank) == 0;
  if (name == "err_before_begin") {  // on pid 0 only: the others wait in bsp_begin
    if (!rank0) arg.clear();
    if (arg == "bsp_pid") std::printf("%d\n", bsp_pid());
    if (arg == "bsp_sync") bsp_sync();
    if (arg == "bsp_push_reg") bsp_push_reg(ex, 8);
    if (arg == "bsp_time") std::printf("%g\n", bsp_time());
    begin_all();
    reached("a call before bsp_begin");
  }
  if (name == "err_board_differs") {  // BSPK_BSPLIB_BOARD=off on pid 1 only
    if (rank && std::atoi(rank) == 1) setenv("BSPK_BSPLIB_BOARD", "off", 1);
    begin_all();
    bsp_sync();
    reached("bsp_sync with BSPK_BSPLIB_BOARD differing");
  }
  if (name == "abort_all_before_begin") {
    together();
    bsp_abort("abort says %d and %s%% done\n", 42, "xyz");
  }
  if (name == "abort_before_begin") {
    if (rank0) bsp_abort("abort says %d and %s%% done\n", 42, "xyz");
    begin_all();
    reached("bsp_abort before bsp_begin");
  }
  if (name == "err_expect_idle") {
    // bsp_begin(P - 1) leaves the last process idle; without the board its
    // counted supersteps rule out a declaration: named at the bsp_sync.
    bsp_begin(bsp_nprocs() - 1);
    me = bsp_pid();
    P = bsp_nprocs();
    bspk_expect(0);
    reached("a declared bsp_sync with an idle process and no board");
  }
  err_begin();
  const int R = right();
  if (name == "err_put_pid") {
    if (me == 1) bsp_put(P, &v4, ex, 0, 4);
    reached("bsp_put to pid P");
  }
  if (name == "err_get_pid") {
    if (me == 1) bsp_get(-1, ex, 0, &v4, 4);
    reached("bsp_get from pid -1");
  }
  if (name == "err_put_unreg") {
    if (me == 1) bsp_put(R, &v4, &v4, 0, 4);
    reached("bsp_put to an unregistered address");
  }
  if (name == "err_get_unreg") {
    if (me == 1) bsp_get(R, &v4, 0, src, 4);
    reached("bsp_get from an unregistered address");
  }
  if (name == "err_put_same_step" || name == "err_get_same_step") {
    static int fresh = 0;
    bsp_push_reg(&fresh, sizeof fresh);
    if (me == 1) {
      if (name == "err_put_same_step")
        bsp_put(R, &v4, &fresh, 0, 4);
      else
        bsp_get(R, &fresh, 0, &v4, 4);
    }
    reached("a put/get to a registration pushed in the same superstep");
  }
  if (name == "err_put_past") {  // 8-byte target (pid 2 or 0), 5 bytes at offset 6: 3 past
    if (me == 1) bsp_put(R, src, ex, 6, 5);
    reached("bsp_put past the end");
  }
  if (name == "err_put_past_target") {  // pid 1 registered 16 bytes, pid 0 8: 12 bytes are 4 past
    if (me == 1) bsp_put(0, src, ex, 0, 12);
    reached("bsp_put past the end of the target's registration");
  }
  if (name == "err_direct_get_past") {  // 8 bytes at offset 5 of pid 0's 8: 5 past ("ok": 8 at 0, in range)
    if (me == 1) bsp_direct_get(0, ex, arg == "ok" ? 0 : 5, src, 8);
    reached("bsp_direct_get past the end");
  }
  if (name == "err_direct_get_unreg") {
    if (me == 1) bsp_direct_get(R, &v4, 0, src, 4);
    reached("bsp_direct_get from an unregistered address");
  }
  if (name == "err_direct_get_pid") {
    if (me == 1) bsp_direct_get(P, ex, 0, src, 4);
    reached("bsp_direct_get from pid P");
  }
  if (name == "err_direct_get_same_step") {
    static int fresh = 0;
    bsp_push_reg(&fresh, sizeof fresh);
    if (me == 1) bsp_direct_get(R, &fresh, 0, &v4, 4);
    reached("bsp_direct_get from a registration pushed in the same superstep");
  }
  if (name == "err_get_past") {  // 8 bytes at offset 5 of pid 0's 8: 5 past
    if (me == 1) bsp_get(0, ex, 5, src, 8);
    reached("bsp_get past the end");
  }
  if (name == "err_put_neg_size") {
    if (me == 1) bsp_put(R, src, ex, 0, -4);
    reached("bsp_put of -4 bytes");
  }
  if (name == "err_put_neg_offset") {
    if (me == 1) bsp_put(R, src, ex, -1, 4);
    reached("bsp_put at offset -1");
  }
  if (name == "err_get_neg_offset") {
    if (me == 1) bsp_get(R, ex, -2, src, 4);
    reached("bsp_get at offset -2");
  }
  if (name == "err_get_neg_size") {
    if (me == 1) bsp_get(R, ex, 0, src, -1);
    reached("bsp_get of -1 bytes");
  }
  if (name == "err_push_neg") {
    bsp_push_reg(src, me == 1 ? -8 : 8);
    reached("bsp_push_reg of size -8");
  }
  if (name == "err_push_null") {
    bsp_push_reg(me == 1 ? nullptr : src, 8);
    reached("bsp_push_reg(NULL, 8)");
  }
  if (name == "err_put_null_src") {
    if (me == 1) bsp_put(R, nullptr, ex, 0, 4);
    reached("bsp_put from NULL");
  }
  if (name == "err_put_null_unreg") {
    int v = 1;
    if (me == 1) bsp_put(R, &v, nullptr, 0, 4);
    reached("bsp_put to NULL, which this process did not register");
  }
  if (name == "err_get_null_dst") {
    if (me == 1) bsp_get(R, ex, 0, nullptr, 4);
    reached("bsp_get into NULL");
  }
  if (name == "err_send_null") {
    if (me == 1) bsp_send(R, nullptr, nullptr, 4);
    reached("bsp_send of a NULL payload");
  }
  if (name == "err_send_null_tag") {
    bsp_size_t t = 4;
    bsp_set_tagsize(&t);
    bsp_sync();
    if (me == 1) bsp_send(R, nullptr, src, 4);
    reached("bsp_send with a NULL tag and tag size 4");
  }
  if (name == "err_send_pid") {
    if (me == 1) bsp_send(P + 1, nullptr, src, 4);
    reached("bsp_send to pid P+1");
  }
  if (name == "err_pop_unreg") {
    if (me == 1) bsp_pop_reg(src);
    reached("bsp_pop_reg of an unregistered address");
  }
  if (name == "err_push_pop_cancel") {
    static int e = 0;
    bsp_push_reg(&e, sizeof e);
    bsp_pop_reg(&e);
    bsp_sync();
    if (me == 1) bsp_put(R, &v4, &e, 0, 4);
    reached("bsp_put to a registration pushed and popped in one superstep");
  }
  if (name == "err_put_after_pop") {
    bsp_pop_reg(ex);
    bsp_sync();
    if (me == 1) bsp_put(R, &v4, ex, 0, 4);
    reached("bsp_put to a popped registration");
  }
  if (name == "err_pop_newest") {  // ex: 8 (16 on pid 1), then 16 (24): pop the newest, put 16 bytes into 8
    bsp_push_reg(ex, me == 1 ? 24 : 16);
    bsp_sync();
    bsp_put(R, src, ex, 0, 16);  // fits the newest registration
    bsp_sync();
    bsp_pop_reg(ex);
    bsp_sync();
    if (me == 1) bsp_put(0, src, ex, 0, 16);
    reached("a 16-byte put into an 8-byte registration");
  }
  if (name == "err_push_count") {
    static int extra = 0;
    if (me >= 2) bsp_push_reg(&extra, sizeof extra);
    bsp_sync();
    reached("a superstep in which pid 2 pushed one more registration");
  }
  if (name == "err_pop_count") {
    static int a = 0, b = 0;
    bsp_push_reg(&a, sizeof a);
    bsp_push_reg(&b, sizeof b);
    bsp_sync();
    bsp_pop_reg(&a);
    if (me == 2) bsp_pop_reg(&b);
    bsp_sync();
    reached("a superstep in which pid 2 popped one more registration");
  }
  if (name == "err_pop_different") {
    static int a = 0, b = 0;
    bsp_push_reg(&a, sizeof a);
    bsp_push_reg(&b, sizeof b);
    bsp_sync();
    bsp_pop_reg(me >= 2 ? &b : &a);
    bsp_sync();
    reached("a superstep in which pid 2 popped another registration");
  }
  if (name == "err_pop_null_different") {
    static int a = 0, b = 0;
    bsp_push_reg(&a, sizeof a);
    bsp_push_reg(&b, sizeof b);
    bsp_sync();
    bsp_pop_reg(me == 0 ? nullptr : me == 1 ? &a : &b);
    bsp_sync();
    reached("a superstep in which pids 1 and 2 popped different registrations");
  }
  if (name == "err_pop_null_none") {
    static int x = 0;
    bsp_push_reg(me ? nullptr : &x, 0);
    bsp_push_reg(!me ? nullptr : &x, 0);
    bsp_pop_reg(nullptr);
    bsp_sync();
    reached("a superstep in which every process popped NULL with no registration NULL on all");
  }
  if (name == "err_tagsize_count") {
    bsp_size_t t = 4;
    bsp_set_tagsize(&t);
    if (me == 2) {
      t = 4;
      bsp_set_tagsize(&t);
    }
    bsp_sync();
    reached("a superstep in which pid 2 called bsp_set_tagsize twice");
  }
  if (name == "err_tagsize_value") {
    bsp_size_t t = me == 2 ? 8 : 4;
    bsp_set_tagsize(&t);
    bsp_sync();
    reached("a superstep in which pid 2 set another tag size");
  }
  if (name == "err_move_empty") {
    if (me == 1) bsp_move(src, 4);
    reached("bsp_move on an empty queue");
  }
  if (name == "err_sync_vs_end") {
    if (me == 0) {
      bsp_end();
      std::printf("reached past bsp_end while others are in bsp_sync on pid 0\n");
      std::fflush(stdout);
      std::exit(0);
    }
    bsp_sync();
    reached("bsp_sync while pid 0 is in bsp_end");
  }
  if (name == "err_begin_twice") {
    if (me == 1) bsp_begin(P);
    reached("a second bsp_begin");
  }
  if (name == "err_after_end") {
    bsp_end();
    if (me == 1) {
      bsp_nprocs_t n;
      bsp_size_t b;
      if (arg == "bsp_sync") bsp_sync();
      if (arg == "bsp_pid") std::printf("%d\n", bsp_pid());
      if (arg == "bsp_send") bsp_send(0, nullptr, src, 4);
      if (arg == "bsp_qsize") bsp_qsize(&n, &b);
      if (arg == "bsp_begin") bsp_begin(P);
      if (arg == "bsp_init") bsp_init([] {}, 0, nullptr);  // (MulticoreBSP's second section)
      std::printf("reached past a call after bsp_end on pid 1\n");
      std::fflush(stdout);
    }
    return 0;
  }
  if (name == "err_expect_small") {
    // Every process puts into every other one: P - 1 batches arrive, P - 2
    // declared (P = 2: 0). Then more supersteps, so that a late batch has
    // somewhere to land.
    for (int t = 0; t < P; ++t)
      if (t != me) bsp_put(t, &v4, ex, 0, 4);
    // "check": the program checks what bspk_expect returns (a refused
    // declaration is an error too); "ignore": it does not, bsp_sync must.
    if (bspk_expect(P - 2) != BSPK_OK && arg == "check")
      bsp_abort("bspk_expect refused the declaration: %s\n", bspk_error_string());
    bsp_sync();
    for (int s = 0; s < 3; ++s) {
      bsp_put(R, &v4, ex, 0, 4);
      bspk_expect(R == me ? 0 : 1);
      bsp_sync();
    }
    reached("a sync with a too small bspk_expect");
  }
  if (name == "err_expect_large") {
    // One put to the right neighbour, P - 1 batches declared (P = 2: 1, right).
    bsp_put(R, &v4, ex, 0, 4);
    if (P > 2) bspk_expect(P - 1);
    else bspk_expect(2);
    bsp_sync();
    reached("a sync with a too large bspk_expect");
  }
  if (name == "err_crash") {
    for (int i = 0; i < 3; ++i) {
      bsp_get(R, ex, 0, src, 4);
      bsp_sync();
    }
    if (me == P - 1) {
      usleep(50000);  // the others are waiting in the sync
      if (arg == "segv") raise(SIGSEGV);
      if (arg == "abort") bsp_abort("err_crash: pid %d aborts\n", me);
      std::exit(0);  // no bsp_end (atexit runs: under srun the exit is reported as one)
    }
    reached("a process that died");
  }
  if (name == "abort_one") {
    bsp_sync();
    if (me == P - 1) {
      usleep(20000);
      bsp_abort("abort says %d and %s%% done\n", 42, "xyz");
    }
    bsp_sync();
    reached("bsp_abort on the last pid");
  }
  if (name == "abort_all") {
    bsp_sync();
    bsp_abort("abort says %d and %s%% done\n", 42, "xyz");
  }
  if (name == "abort_after_end") {
    bsp_end();
    if (me == 1) bsp_abort("abort says %d and %s%% done\n", 42, "xyz");
    return 0;
  }
  if (name == "abort_all_after_end") {
    bsp_end();
    together();
    bsp_abort("abort says %d and %s%% done\n", 42, "xyz");
  }
  bsp_abort("unknown scenario '%s'", name.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bsplib_scenarios NAME [args] | bsplib_scenarios --list\n");
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--list") return scen::print_table(stdout);  // before any bsp call
  if (name == "start") return start(argc, argv);
  if (name == "drma") return drma(argc, argv);
  if (name == "combine") return combine(argc, argv);
  if (name == "stridedget") return stridedget(argc, argv);
  if (name == "zerocopy") return zerocopy(argc, argv);
  if (name == "direct_get") return direct_get(argc, argv);
  if (name == "bigput") return bigput(argc, argv);
  if (name == "bigput_auto") return bigput_auto(argc, argv);
  if (name == "board_batch") return board_batch(argc, argv);
  if (name == "reg") return reg(argc, argv);
  if (name == "bsmp") return bsmp(argc, argv);
  if (name.compare(0, 4, "err_") == 0 || name.compare(0, 6, "abort_") == 0) return err(name, argc, argv);
  std::fprintf(stderr, "bsplib_scenarios: unknown scenario '%s'\n", name.c_str());
  return 2;
}
