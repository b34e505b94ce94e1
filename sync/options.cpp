#include "sync/options.h"

#include <sched.h>

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
  if (local_procs > ncpu) o.spin_s = 0;
  using config::Var;
  o.max_ahead = static_cast<uint32_t>(config::get_int(Var::MAX_AHEAD));
  o.timeout_s = config::get_seconds(Var::SYNC_TIMEOUT);
  if (o.timeout_s == 0) o.timeout_s = std::numeric_limits<double>::infinity();  // "off": never
  o.spin_s = 1e-6 * static_cast<double>(config::get_int(Var::SPIN_US, static_cast<int64_t>(o.spin_s * 1e6)));
  o.rx_depth = static_cast<uint32_t>(config::get_int(Var::RX_DEPTH));
  o.small_rx_depth = static_cast<uint32_t>(config::get_int(Var::SMALL_RX_DEPTH));
  o.split_frames = static_cast<uint32_t>(config::get_int(Var::SPLIT_FRAMES));
  o.first_step = static_cast<uint32_t>(config::get_int(Var::TEST_FIRST_SUPERSTEP));
  std::string how = config::get_enum(Var::COUNT_EXCHANGE);
  // Direct: one round, but p-1 messages to send and receive per process. With
  // many more processes than CPUs the message count matters more than the
  // rounds: tree then. Measured with bench/sync on tcp, 2 cores, empty counted
  // superstep: p = 8 (4 per CPU) direct 333-355 us, tree 294-297 us; p = 4
  // (2 per CPU) direct 90-91 us, tree 126-179 us. The inputs are job-wide
  // (not this host's load), so every process agrees.
  o.count_direct = how == "direct" || ((how == "auto" || how == "board") && nprocs <= kDirectMaxProcs &&
                                       oversubscription <= kDirectMaxOversubscription);
  return o;
}

}  // namespace bspk::sync
