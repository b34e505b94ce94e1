#include "sync/options.h"

#include <sched.h>

#include "base/env.h"
#include "sync/wire.h"

namespace bspk::sync {

Options Options::from_env(int local_procs, int host_cpus) {
  Options o;
  int ncpu = host_cpus;
  if (ncpu <= 0) {
    cpu_set_t set;
    ncpu = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  }
  // Oversubscribed (e.g. 8 processes on 2 cores): the process we wait for may
  // need this CPU, so yield at once instead of spinning.
  if (local_procs > ncpu) o.spin_s = 0;
  o.max_ahead = static_cast<uint32_t>(env::get_int("BSPK_MAX_AHEAD", o.max_ahead, 1, wire::kMaxAheadLimit));
  o.timeout_s = env::get_seconds("BSPK_SYNC_TIMEOUT", o.timeout_s);
  o.spin_s = 1e-6 * static_cast<double>(env::get_int("BSPK_SPIN_US", static_cast<int64_t>(o.spin_s * 1e6), 0,
                                                     10'000'000));
  o.rx_depth = static_cast<uint32_t>(env::get_int("BSPK_RX_DEPTH", o.rx_depth, 2, 4096));
  o.small_rx_depth = static_cast<uint32_t>(env::get_int("BSPK_SMALL_RX_DEPTH", o.small_rx_depth, 2, 4096));
  return o;
}

}  // namespace bspk::sync
