// api/profile.h -- the per-superstep profile behind BSPK_PROFILE (issue 14).
//
// One CSV row per process and superstep, for the cost model of
// bsp-cost-functions-nows.txt (Bianco and Pucci, section 1): what a superstep
// computed (w), what it sent and received, how long it waited and how long it
// took. bspk-predict reads these rows, takes h_o and h_i as the maximum over
// processes and M as the total, and compares each cost function's prediction
// with the measured communication time (wall time minus the largest w, as the
// paper's section 4 does).
//
// Columns (bytes are payload bytes; s = seconds, CLOCK_MONOTONIC):
//   pid, superstep   the process and the superstep the row describes (0 = first)
//   mode             how the superstep ended: expect, will_send, counted, finalize
//   w_s              local computation: from the end of the previous boundary (or
//                    of bspk_init) to the call of bspk_sync, less issue_s
//   issue_s          time inside the calls that issue communication (bspk_send,
//                    bspk_send_tag, bspk_send_buf, bspk_copy, bspk_put and the
//                    collectives' and BSPlib layer's calls built on them): data a
//                    transport moves there (tcp writes a message into the kernel
//                    inside the send) is communication, not computation
//   msgs_out, bytes_out      bspk_send messages issued in the superstep (their payload)
//   msgs_in, bytes_in        messages of this superstep readable after its boundary
//   remote_out       operations issued to other processes: bspk_send messages,
//                    stores and fetches (not those to this process, which never
//                    reach the fabric); bspk-predict's per-message term counts them
//   self_bytes       payload bytes of the messages this process sent to itself
//                    (also in bytes_out and bytes_in: copied, never on the fabric;
//                    bspk-predict leaves them out of h_o, h_i and M)
//   stored_out, stored_in    bytes of stores issued here / landed here at the boundary
//   fetched_out, fetched_in  bytes this process served to others' fetches / its own
//                            fetches brought in
//   wait_s           time blocked inside bspk_sync (0 when a declared superstep
//                    found everything there)
//   wall_s           the superstep's wall time: w_s + issue_s + the time in bspk_sync
//   end_s            CLOCK_MONOTONIC at the end of the superstep (comparable
//                    between processes of one host: under lazy barriers processes
//                    are not in lock-step, and bspk-predict takes the superstep's
//                    time as the latest end minus the latest end of the one before)
//   host             the host name (commas replaced)
//   comem_bytes      bytes of the comem frames and small buffers this process
//                    holds data in at the end of the superstep (its regions,
//                    received messages, sends in flight; not the frames posted
//                    for receiving), whole frames: a 6 KiB message in a 64 KiB
//                    frame counts 64 KiB, as it spreads the data over memory
//                    and cache sets. With the other processes of its host,
//                    against the last-level cache: whether the data a superstep
//                    moves come from cache or from memory (bspk-predict
//                    --cold-machine)
//   cpu_s            the CPU time this process's thread ran from the end of
//                    the previous boundary to the call of bspk_sync
//                    (CLOCK_THREAD_CPUTIME_ID over the span of w_s + issue_s),
//                    written only when its host runs more processes than it
//                    has CPUs (the clock costs a system call, 0.4 us here);
//                    empty otherwise. w_s + issue_s - cpu_s is the time the
//                    process waited for a CPU (bspk-predict's warning)
//   cpus             the CPUs this host's processes may use (affinity or the
//                    launcher's count)
// So h_o = bytes_out + stored_out + fetched_out and h_i = bytes_in + stored_in
// + fetched_in for this process.
//
// Files: BSPK_PROFILE=path; all processes append whole rows to one file (pid 0
// truncates it and writes the header in bspk_init, before a start-up barrier),
// or, when the name contains %p, each process writes its own file with %p
// replaced by its pid (for hosts that do not share a file system). Rows are
// buffered in memory and written in blocks of at least 64 KiB and at
// bspk_finalize; a job that dies loses its last block.
//
// Cost when off: bspk_sync tests one pointer. Measured on bench/sync (README,
// "Profiling and the cost model").
#pragma once

#include <cstdint>
#include <string>

#include "base/clock.h"
#include "base/stats.h"

namespace bspk::api {

class Profile {
 public:
  // Open path (see above) for process pid, on a host whose processes may use
  // host_cpus CPUs; cpu_clock: fill the cpu_s column (oversubscribed hosts).
  // Throws bspk::Error(BSPK_ERR_ARG) naming the file when it cannot be opened.
  Profile(const std::string& path, int pid, int host_cpus, bool cpu_clock);
  ~Profile();  // writes what is buffered
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;

  // The superstep clock starts (end of bspk_init).
  void start(const Stats& s);
  // bspk_sync (or the final superstep of bspk_finalize) is entered.
  void sync_called();
  // A communication call of this superstep took `seconds` (IssueTimer).
  void issued(double seconds) { issue_ += seconds; }
  // The boundary of `step` is behind us: write its row.
  // comem_bytes: the bytes of comem frames holding data now (Runtime::comem_bytes).
  void sync_done(uint32_t step, const char* mode, const Stats& s, uint64_t comem_bytes);
  // Write the buffered rows (bspk_finalize). Errors are reported, not thrown.
  void flush();

  static const char* header();

 private:
  struct Marks {  // the counters at the start of the superstep
    uint64_t msgs_out, bytes_out, msgs_in, bytes_in, remote_out, self_bytes, stored_out, stored_in, fetched_out,
        fetched_in;
    double wait;
  };
  static Marks marks(const Stats& s);

  int fd_ = -1;
  int pid_;
  int host_cpus_;
  bool cpu_clock_;
  std::string path_;
  std::string host_;
  std::string buf_;
  Marks last_{};
  double t_start_ = 0, t_call_ = 0, issue_ = 0;
  double cpu_start_ = 0, cpu_call_ = 0;  // thread CPU time (cpu_clock_ only)
};

// Times one communication call into the profile's issue_s; does nothing (one
// pointer test) when profiling is off.
class IssueTimer {
 public:
  explicit IssueTimer(Profile* p) : p_(p), t0_(p ? now_s() : 0) {}
  ~IssueTimer() {
    if (p_) p_->issued(now_s() - t0_);
  }
  IssueTimer(const IssueTimer&) = delete;
  IssueTimer& operator=(const IssueTimer&) = delete;

 private:
  Profile* p_;
  double t0_;
};

}  // namespace bspk::api
