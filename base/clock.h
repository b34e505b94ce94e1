// base/clock.h -- monotonic wall-clock time in seconds, and durations as timespecs.
#pragma once
#include <ctime>

namespace bspk {
inline double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
// A duration in seconds (>= 0) as a timespec, for nanosleep and futex waits.
inline timespec to_timespec(double seconds) {
  const time_t whole = static_cast<time_t>(seconds);
  return timespec{whole, static_cast<long>((seconds - static_cast<double>(whole)) * 1e9)};
}
// A loop that looks at the clock at least every few hundred milliseconds
// while it runs (a wait's time-out checks, the job hub's heartbeats) and
// sees a longer gap between two looks was not running: the process was
// stopped (^Z, SIGSTOP of the whole job, a batch system's suspend) or not
// scheduled. Time-outs do not count such a gap as silence of the others.
constexpr double kPauseGap = 2.0;  // s
}  // namespace bspk
