// base/end_of_job.h -- the value bspkrun queues with the SIGTERM that ends a
// job to the process that started it (a BSPlib program run without a
// launcher, which spawned bspkrun: bsplib/spawn.cpp), header-only: bspkrun
// builds the value, spawn.cpp's handler recognises it and exits with the
// job's status, so `./prog` ends as `bspkrun ... prog` would (139 after a
// crash, 1 after bsp_abort) instead of "Terminated".
//
// sigqueue value: kEndOfJob | status, status in the low 8 bits (never 0: an
// ended job failed).
#pragma once

namespace bspk {

inline constexpr int kEndOfJob = 0x42530000;  // "BS" in the high bits

inline constexpr int end_of_job_value(int status) { return kEndOfJob | ((status & 0xff) ? status & 0xff : 1); }

inline constexpr bool is_end_of_job(int value) { return (value & ~0xffff) == kEndOfJob; }

}  // namespace bspk
