// fabric/signals.cpp -- the PSM libraries' signal handlers taken back (see signals.h).
#include "fabric/signals.h"

#include <dlfcn.h>
#include <signal.h>

#include <cstdlib>
#include <cstring>

namespace bspk::fabric {

namespace {

// Whether the code at `fn` belongs to libinfinipath or a libpsm* library.
bool in_psm_library(void* fn) {
  Dl_info info;
  if (!fn || dladdr(fn, &info) == 0 || !info.dli_fname) return false;
  const char* base = std::strrchr(info.dli_fname, '/');
  base = base ? base + 1 : info.dli_fname;
  return std::strncmp(base, "libinfinipath", 13) == 0 || std::strncmp(base, "libpsm", 6) == 0;
}

// At load time of libbspk (after its dependencies' constructors; in a static
// link this object comes in through getinfo.cpp's call). The environment is
// set here only, normally before main, when no other thread can be reading
// it (setenv racing a getenv is undefined).
__attribute__((constructor)) void release_at_load() {
  setenv("IPATH_NO_BACKTRACE", "1", 0);  // (0: a value the user set stays)
  setenv("HFI_NO_BACKTRACE", "1", 0);
  release_psm_signal_handlers();
}

}  // namespace

void release_psm_signal_handlers() {
  for (int s = 1; s < NSIG; ++s) {
    if (s == SIGKILL || s == SIGSTOP) continue;
    struct sigaction sa;
    if (sigaction(s, nullptr, &sa) != 0) continue;
    void* fn = (sa.sa_flags & SA_SIGINFO) ? reinterpret_cast<void*>(sa.sa_sigaction)
                                           : reinterpret_cast<void*>(sa.sa_handler);
    if (fn == reinterpret_cast<void*>(SIG_DFL) || fn == reinterpret_cast<void*>(SIG_IGN) || !in_psm_library(fn))
      continue;
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(s, &dfl, nullptr);
  }
}

}  // namespace bspk::fabric
