// sync/options.h -- the engine's settings (BSPK_MAX_AHEAD, BSPK_SYNC_TIMEOUT,
// BSPK_SPIN_US, BSPK_YIELD_MS, BSPK_RX_DEPTH, BSPK_SMALL_RX_DEPTH, BSPK_SPLIT_FRAMES; ranges and defaults in
// base/config_defs.h).
#pragma once

#include <cstdint>

// Up to this many processes, and with no more processes than CPUs on any host,
// BSPK_COUNT_EXCHANGE=auto exchanges counts directly (p-1 messages per process
// in one round) when there is no board; otherwise over the tree (2 ceil(log2 p)
// rounds of one message).
constexpr int kDirectMaxProcs = 16;
// ... and at most this many processes per CPU on every host (BSPK_COUNT_EXCHANGE=auto).
constexpr double kDirectMaxOversubscription = 1.0;
// Frame receive slots posted at first when BSPK_RX_DEPTH is not set (then
// doubling up to its default as bursts need them, sync/rx.cpp). Few posted
// frames stay warm in the cache: the provider fills posted receives in order,
// so with 32 posted each arrival wrote the frame posted 32 arrivals ago.
// bench/pingpong, tcp p = 2, rings off, BSPK_RX_DEPTH alternated (% of raw
// libfabric's bandwidth, 2026-11-30): 64 KiB 85-86 with 32, 91-95 with 2;
// 256 KiB 90-91 with 32, 92-94 with 2 (the bar: 90).
constexpr uint32_t kRxDepthStart = 2;

namespace bspk::sync {

struct Options {
  uint32_t max_ahead = 16;       // W: supersteps a sender may run ahead of a receiver
  double timeout_s = 60;         // no-progress time-out in bspk_sync
  double spin_s = 200e-6;        // busy-poll before blocking (0 when processes outnumber CPUs)
  bool oversubscribed = false;   // more processes on this host than CPUs it may use
  int host_cpus = 1;             // the CPUs this host's processes may use (the profile's cpus column)
  double yield_s = 0.1;          // then poll and sched_yield this long before sleeping (2 ms oversubscribed)
  // Receive slots for whole frames: at most rx_depth kept posted, starting
  // with rx_depth_start and doubling whenever an arrival finds no other frame
  // posted (sync/rx.cpp); BSPK_RX_DEPTH set: that many from the start.
  uint32_t rx_depth = 32;
  uint32_t rx_depth_start = kRxDepthStart;
  uint32_t small_rx_depth = 64;  // receive slots for small messages (4 KiB buffers)
  uint32_t split_frames = 4;     // split messages: most frames of one message per body (sync/wire.h)
  // Message-based count exchange (when there is no shared-memory board):
  // direct (one round, p-1 messages each), halving (log2 p rounds of one
  // message; sync/exchange.h) or the binomial tree (sync/tree.h).
  enum class Exchange { Direct, Halving, Tree };
  Exchange count_exchange = Exchange::Direct;
  // Counts carried by data messages (BSPK_COUNT_CARRY; direct exchange only).
  bool count_carry = true;
  uint32_t first_step = 0;       // number of the first superstep (BSPK_TEST_FIRST_SUPERSTEP)
  // From the environment. local_procs: processes of the job on this host;
  // host_cpus: CPUs they may use here (0: this process's affinity). No busy
  // spinning if the processes outnumber the CPUs.
  // nprocs and oversubscription (the most processes per CPU on any host of
  // the job) must be the same on every process: the count exchange chosen
  // from them has to agree job-wide.
  static Options from_env(int local_procs, int host_cpus = 0, int nprocs = 1, double oversubscription = 0);
};

}  // namespace bspk::sync
