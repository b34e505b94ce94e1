#include "base/stats.h"

#include "base/error.h"

namespace bspk {

std::string Stats::line(int pid) const {
  return strprintf(
      "bspk-stats pid=%d supersteps=%llu msgs_sent=%llu bytes_sent=%llu msgs_recv=%llu "
      "bytes_recv=%llu bytes_copied=%llu ctrl_sent=%llu flow_waits=%llu frames_peak=%llu "
      "small_peak=%llu pool_bytes=%llu sync_wait_s=%.6f",
      pid, (unsigned long long)supersteps, (unsigned long long)msgs_sent,
      (unsigned long long)bytes_sent, (unsigned long long)msgs_recv,
      (unsigned long long)bytes_recv, (unsigned long long)bytes_copied,
      (unsigned long long)ctrl_sent, (unsigned long long)flow_waits,
      (unsigned long long)frames_peak, (unsigned long long)small_peak, (unsigned long long)pool_bytes,
      sync_wait_s);
}

}  // namespace bspk
