#include "sync/options.h"

#include <sched.h>

#include <algorithm>
#include <limits>
#include <string>

#include "base/config.h"

namespace bspk::sync {

Options Options::from_env(int local_procs, int host_cpus, int nprocs, double oversubscription) {
  Options o;
  int ncpu = host_cpus;
  if (ncpu <= 0) {
    cpu_set_t set;
    ncpu = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  }
  // Oversubscribed (e.g. 8 processes on 2 cores): the process we wait for may
  // need this CPU, so yield at once instead of spinning.
  // And stop yielding sooner: yielders take time slices from the processes
  // that compute (BSPK_YIELD_MS).
  o.oversubscribed = local_procs > ncpu;
  o.host_cpus = ncpu;
  if (o.oversubscribed) {
    o.spin_s = 0;
    o.yield_s = 2e-3;
  }
  using config::Var;
  o.max_ahead = static_cast<uint32_t>(config::get_int(Var::MAX_AHEAD));
  o.timeout_s = config::get_seconds(Var::SYNC_TIMEOUT);
  if (o.timeout_s == 0) o.timeout_s = std::numeric_limits<double>::infinity();  // "off": never
  o.spin_s = 1e-6 * static_cast<double>(config::get_int(Var::SPIN_US, static_cast<int64_t>(o.spin_s * 1e6)));
  o.yield_s = 1e-3 * static_cast<double>(config::get_int(Var::YIELD_MS, static_cast<int64_t>(o.yield_s * 1e3)));
  o.rx_depth = static_cast<uint32_t>(config::get_int(Var::RX_DEPTH));
  o.rx_depth_start = config::is_set(Var::RX_DEPTH) ? o.rx_depth : std::min<uint32_t>(kRxDepthStart, o.rx_depth);
  o.small_rx_depth = static_cast<uint32_t>(config::get_int(Var::SMALL_RX_DEPTH));
  o.split_frames = static_cast<uint32_t>(config::get_int(Var::SPLIT_FRAMES));
  o.first_step = static_cast<uint32_t>(config::get_int(Var::TEST_FIRST_SUPERSTEP));
  std::string how = config::get_enum(Var::COUNT_EXCHANGE);
  // Direct: one round, but p-1 messages to send and receive per process. With
  // more processes than CPUs the messages cost more than the rounds, and the
  // tree (2(p-1) messages in all) beats both direct (p(p-1)) and halving
  // (p log2 p). Measured on tcp, rings off, 2 cores, 2026-11-26 (as_bspk
  // mp-counted, maximum over processes, median over repetitions, Empty / Full
  // / Scatter in us): p = 3 direct 77 / 121 / 96, halving 35 / 72 / 48, tree
  // 34 / 77 / 55; p = 4 direct 88 / 136-181 / 108-112, halving 61-80 /
  // 136-210 / 95-103, tree 49-51 / 101-144 / 63; p = 16 Empty direct 1478,
  // halving 800, tree 415. Halving has the fewest rounds for large p with a
  // CPU per process, which this 2-core machine cannot measure: opt-in. The
  // inputs are job-wide (not this host's load), so every process agrees.
  using X = Options::Exchange;
  if (how == "direct") o.count_exchange = X::Direct;
  else if (how == "halving") o.count_exchange = X::Halving;
  else if (how == "tree") o.count_exchange = X::Tree;
  else  // auto, messages, board (the board replaces the exchange where every process is on one host)
    o.count_exchange = nprocs <= kDirectMaxProcs && oversubscription <= kDirectMaxOversubscription ? X::Direct : X::Tree;
  o.count_carry = config::get_enum(Var::COUNT_CARRY) != "off";
  return o;
}

}  // namespace bspk::sync
