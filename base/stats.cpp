#include "base/stats.h"

#include "base/error.h"

namespace bspk {

std::string Stats::line(int pid) const {
  // The documented keys first (README, BSPK_STATS), in that order; extras follow.
  return strprintf(
      "bspk-stats pid=%d supersteps=%llu msgs_sent=%llu bytes_sent=%llu bytes_copied=%llu "
      "sync_wait_s=%.6f msgs_recv=%llu bytes_recv=%llu ctrl_sent=%llu flow_waits=%llu "
      "frames_peak=%llu small_peak=%llu pool_bytes=%llu copies=%llu bytes_stored=%llu "
      "bytes_fetched=%llu frames_flipped=%llu reads=%llu bytes_read=%llu",
      pid, (unsigned long long)supersteps, (unsigned long long)msgs_sent,
      (unsigned long long)bytes_sent, (unsigned long long)bytes_copied, sync_wait_s,
      (unsigned long long)msgs_recv, (unsigned long long)bytes_recv, (unsigned long long)ctrl_sent,
      (unsigned long long)flow_waits, (unsigned long long)frames_peak, (unsigned long long)small_peak,
      (unsigned long long)pool_bytes, (unsigned long long)copies, (unsigned long long)bytes_stored,
      (unsigned long long)bytes_fetched, (unsigned long long)frames_flipped, (unsigned long long)reads,
      (unsigned long long)bytes_read);
}

}  // namespace bspk
