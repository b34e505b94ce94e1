#include "api/profile.h"

#include <bspk.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/clock.h"
#include "base/error.h"

namespace bspk::api {

namespace {
constexpr size_t kBlock = size_t{64} << 10;  // bytes of rows written at once

double thread_cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
}

const char* Profile::header() {
  return "pid,superstep,mode,w_s,issue_s,msgs_out,bytes_out,msgs_in,bytes_in,remote_out,self_bytes,"
         "stored_out,stored_in,fetched_out,fetched_in,wait_s,wall_s,end_s,host,comem_bytes,cpu_s,cpus\n";
}

Profile::Profile(const std::string& path, int pid, int host_cpus, bool cpu_clock)
    : pid_(pid), host_cpus_(host_cpus), cpu_clock_(cpu_clock), path_(path) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  for (char* c = host; *c; ++c)
    if (*c == ',' || *c == '\n') *c = '_';
  host_ = host[0] ? host : "unknown";
  const bool per_pid = path.find("%p") != std::string::npos;
  if (per_pid) path_.replace(path_.find("%p"), 2, std::to_string(pid));
  // One shared file: pid 0 creates it (bspk_init has an out-of-band barrier
  // after this, so no one appends before the truncation).
  const bool owner = per_pid || pid == 0;
  fd_ = open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | (owner ? O_CREAT | O_TRUNC : O_CREAT), 0644);
  if (fd_ < 0) fail(BSPK_ERR_ARG, "BSPK_PROFILE: cannot open %s for writing: %s", path_.c_str(), std::strerror(errno));
  if (owner) {
    buf_ = header();
    flush();
  }
  buf_.reserve(2 * kBlock);
}

Profile::~Profile() {
  flush();
  if (fd_ >= 0) close(fd_);
}

Profile::Marks Profile::marks(const Stats& s) {
  // One-sided reads of program memory (bspk_mem_read) count as fetches:
  // the reader's fetched_in, the owner's fetched_out (bspk_note_read_by).
  return Marks{s.msgs_sent,
               s.bytes_sent,
               s.msgs_delivered,
               s.bytes_delivered,
               s.msgs_sent + s.copies - s.ops_self,
               s.bytes_self,
               s.bytes_stored,
               s.bytes_stored_in,
               s.bytes_fetched + s.bytes_read_by,
               s.bytes_fetched_in + s.bytes_read_remote,
               s.sync_wait_s};
}

void Profile::start(const Stats& s) {
  issue_ = 0;
  last_ = marks(s);
  t_start_ = now_s();
  if (cpu_clock_) cpu_start_ = thread_cpu_s();
}

void Profile::sync_called() {
  t_call_ = now_s();
  if (cpu_clock_) cpu_call_ = thread_cpu_s();
}

void Profile::sync_done(uint32_t step, const char* mode, const Stats& s, uint64_t comem_bytes) {
  double t = now_s();
  Marks m = marks(s);
  char cpu[32] = "";
  if (cpu_clock_) std::snprintf(cpu, sizeof cpu, "%.9f", std::max(0.0, cpu_call_ - cpu_start_));
  char row[700];
  int n = std::snprintf(
      row, sizeof row, "%d,%u,%s,%.9f,%.9f,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.9f,%.9f,%.9f,%s,%llu,%s,%d\n", pid_,
      step, mode, std::max(0.0, t_call_ - t_start_ - issue_), issue_, (unsigned long long)(m.msgs_out - last_.msgs_out),
      (unsigned long long)(m.bytes_out - last_.bytes_out), (unsigned long long)(m.msgs_in - last_.msgs_in),
      (unsigned long long)(m.bytes_in - last_.bytes_in), (unsigned long long)(m.remote_out - last_.remote_out),
      (unsigned long long)(m.self_bytes - last_.self_bytes), (unsigned long long)(m.stored_out - last_.stored_out),
      (unsigned long long)(m.stored_in - last_.stored_in), (unsigned long long)(m.fetched_out - last_.fetched_out),
      (unsigned long long)(m.fetched_in - last_.fetched_in), m.wait - last_.wait, t - t_start_, t, host_.c_str(), (unsigned long long)comem_bytes, cpu, host_cpus_);
  buf_.append(row, std::min(static_cast<size_t>(n), sizeof row - 1));
  last_ = m;
  t_start_ = t;
  if (cpu_clock_) cpu_start_ = thread_cpu_s();
  issue_ = 0;
  if (buf_.size() >= kBlock) flush();
}

void Profile::flush() {
  // One write(2) per block, whole rows only: appends of processes sharing the
  // file interleave by blocks, never inside a row (a local file system
  // serialises O_APPEND writes).
  size_t off = 0;
  while (off < buf_.size() && fd_ >= 0) {
    ssize_t w = write(fd_, buf_.data() + off, buf_.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      std::fprintf(stderr, "bspk: pid %d: BSPK_PROFILE: writing %s failed: %s; profile rows lost\n", pid_,
                   path_.c_str(), std::strerror(errno));
      break;
    }
    off += static_cast<size_t>(w);
  }
  buf_.clear();
}

}  // namespace bspk::api
