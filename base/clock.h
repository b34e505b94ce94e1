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
}  // namespace bspk
