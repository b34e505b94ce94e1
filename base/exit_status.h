// base/exit_status.h -- run a function at exit() that is told the status the
// process passed to exit() (or returned from main), header-only. For exit
// handlers that must tell exit(0) from exit(3): pid 0 of a job started
// without a launcher takes bspkrun's failed status only where it would have
// exited with 0 (bsplib/spawn.cpp), and so does one process started without
// any launcher that exits before bspk_finalize (api/init.cpp).
//
// glibc's on_exit(3) passes the status; with another C library the function
// is called with -1 (not known). Handlers of both kinds run in the reverse
// order of their registration, as atexit's.
#pragma once

#include <cstdlib>

namespace bspk {

using ExitStatusHandler = void (*)(int status);

namespace detail {
template <ExitStatusHandler F>
void exit_status_trampoline(int status, void*) {
  F(status);
}
template <ExitStatusHandler F>
void exit_status_unknown() {
  F(-1);
}
}  // namespace detail

// Registers F to run at exit(), as atexit(F) would. True if registered.
template <ExitStatusHandler F>
bool at_exit_with_status() {
#ifdef __GLIBC__
  return on_exit(detail::exit_status_trampoline<F>, nullptr) == 0;
#else
  return std::atexit(detail::exit_status_unknown<F>) == 0;
#endif
}

}  // namespace bspk
