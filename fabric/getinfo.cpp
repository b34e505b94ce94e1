// fabric/getinfo.cpp -- fi_getinfo under HideKallsyms (see getinfo.h); the
// guard's state, read by the fopen of fabric/kallsyms.cpp (libbspk.so only).
#include "fabric/getinfo.h"

#include <atomic>

#include "base/config.h"
#include "fabric/kallsyms.h"

namespace bspk::fabric {

namespace {
std::atomic<int> g_hiding{0};
}  // namespace

namespace detail {
bool kallsyms_hidden() { return g_hiding.load(std::memory_order_acquire) > 0; }
}  // namespace detail

HideKallsyms::HideKallsyms() { g_hiding.fetch_add(1, std::memory_order_acq_rel); }
HideKallsyms::~HideKallsyms() { g_hiding.fetch_sub(1, std::memory_order_acq_rel); }

int getinfo(uint32_t version, const char* node, const char* service, uint64_t flags, const fi_info* hints,
            fi_info** info) {
  static const bool probe = config::get_bool(config::Var::DMABUF_PROBE);
  if (probe) return fi_getinfo(version, node, service, flags, hints, info);
  HideKallsyms hide;
  return fi_getinfo(version, node, service, flags, hints, info);
}

}  // namespace bspk::fabric
