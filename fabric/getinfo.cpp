// fabric/getinfo.cpp -- fi_getinfo with the /proc/kallsyms guard up (see
// getinfo.h); the guard's state, read by the fopen of fabric/kallsyms.cpp.
#include "fabric/getinfo.h"

#include <atomic>

#include "base/config.h"
#include "fabric/signals.h"

namespace bspk::fabric {

namespace {
std::atomic<int> g_hiding{0};  // getinfo() calls holding the guard up
}  // namespace

bool detail::kallsyms_hidden() { return g_hiding.load(std::memory_order_acquire) > 0; }

int getinfo(uint32_t version, const char* node, const char* service, uint64_t flags, const fi_info* hints,
            fi_info** info) {
  static const bool hide = !config::get_bool(config::Var::DMABUF_PROBE);
  if (hide) g_hiding.fetch_add(1, std::memory_order_acq_rel);
  const int rc = fi_getinfo(version, node, service, flags, hints, info);
  if (hide) g_hiding.fetch_sub(1, std::memory_order_acq_rel);
  // A PSM library that the providers' initialization started may have
  // installed its signal handlers (fabric/signals.h).
  release_psm_signal_handlers();
  return rc;
}

}  // namespace bspk::fabric
