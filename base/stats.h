// base/stats.h -- per-process counters behind BSPK_STATS=1.
//
// bytes_copied counts only bytes the runtime itself memcpy()s of user data
// (never the transport's: the provider's internal copies, the shared-memory
// rings, the bounce buffers of fabric::Endpoint::inject for sends of up to
// 4 KiB); the zero-copy claim of [BSPk §4] is
// that it stays 0 for whole-message sends and receives between processes.
// What the runtime does copy, and counts: a message a process sends to
// itself (once, never through the fabric), local bspk_copy, bspk_put and
// bspk_send_buf sources, copies into contiguous regions, bspk_recv_contiguous
// of several frames.
#pragma once
#include <cstdint>
#include <string>

namespace bspk {

struct Stats {
  uint64_t supersteps = 0;
  uint64_t msgs_sent = 0, bytes_sent = 0;     // user messages (payload bytes)
  uint64_t msgs_recv = 0, bytes_recv = 0;     // user messages arrived (payload bytes)
  uint64_t bytes_copied = 0;                  // user bytes copied by the runtime
  uint64_t ctrl_sent = 0;                     // runtime control messages (collectives, flow control)
  uint64_t flow_waits = 0;                    // sends held back by the supersteps-ahead window
  uint64_t frames_peak = 0;                   // most frames in use at once
  uint64_t small_peak = 0;                    // most small (4 KiB) buffers in use at once
  uint64_t pool_bytes = 0;                    // bytes of registered frame slabs
  uint64_t copies = 0;                        // bspk_copy and bspk_put operations issued (n > 0)
  uint64_t bytes_stored = 0;                  // payload bytes of stores issued
  uint64_t bytes_fetched = 0;                 // payload bytes this process served to fetches
  uint64_t frames_flipped = 0;                // copy fragments that became a region's frame (no copy)
  double sync_wait_s = 0;                     // seconds spent waiting inside bspk_sync
  // By the superstep the data belongs to (added at that superstep's boundary),
  // for the per-superstep profile (api/profile.h):
  uint64_t msgs_delivered = 0, bytes_delivered = 0;  // messages (payload bytes) readable after a boundary
  uint64_t bytes_stored_in = 0;                      // payload bytes of stores that landed here
  uint64_t bytes_fetched_in = 0;                     // payload bytes this process's fetches brought in
  uint64_t ops_self = 0;    // messages and both-local copies a process issued to itself (no fabric)
  uint64_t bytes_self = 0;  // payload bytes of the messages among them (in bytes_sent and bytes_delivered too)
  uint64_t reads = 0;       // one-sided reads of program memory this process started (bspk_mem_read, n > 0)
  uint64_t bytes_read = 0;  // their bytes (a read from itself: also in bytes_copied)
  // For the per-superstep profile (fetched_in / fetched_out): bytes of the
  // reads of other processes' memory, and bytes other processes read from
  // this one's, as the layer that let them says (bspk_note_read_by).
  uint64_t bytes_read_remote = 0, bytes_read_by = 0;

  // "bspk-stats pid=0 supersteps=... " (one greppable line, no trailing newline)
  std::string line(int pid) const;
};

}  // namespace bspk
