// base/clock.h -- monotonic wall-clock time in seconds.
#pragma once
#include <ctime>

namespace bspk {
inline double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
}  // namespace bspk
