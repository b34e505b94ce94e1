#include "fabric/select.h"

#include <bspk.h>
#include <rdma/fabric.h>

#include <cstdlib>
#include <cstring>

#include "base/config.h"
#include "base/env.h"
#include "base/error.h"

namespace bspk::fabric {

namespace {

// One row per provider BSPk runs on: its tuning is data, not code.
struct ProviderRow {
  const char* name;            // user-facing short name
  const char* libfabric_name;  // what fi_getinfo is asked for
  size_t frame_size;           // default comem frame size (bytes)
  bool connect_all_pairs;      // first contact needs the peer to progress: connect all at start-up
  bool rxm;                    // runs over ofi_rxm (eager / segmented / rendezvous thresholds)
};

// Frame sizes measured with bench/pingpong on libfabric 1.17:
//  - tcp/verbs (rxm): 256 KiB. A frame above rxm's 128 KiB segmentation limit
//    moves by rendezvous (RMA), 77-85% of raw bandwidth at >= 256 KiB against
//    40-50% with 64 KiB frames.
//  - shm: 64 KiB. Bandwidth is no worse than with 256 KiB frames, and every
//    message occupies at least one frame on its receiver until freed, so small
//    messages cost 4x less memory. shm 1.17's first contact with a peer needs
//    that peer to progress, so every connection is opened at start-up.
constexpr ProviderRow kProviders[] = {
    {"tcp", "tcp;ofi_rxm", size_t{256} << 10, false, true},
    {"verbs", "verbs;ofi_rxm", size_t{256} << 10, false, true},
    {"shm", "shm", size_t{64} << 10, true, false},
};

const ProviderRow& row_of(const std::string& canonical) {
  for (const ProviderRow& r : kProviders)
    if (canonical == r.libfabric_name) return r;
  fail(BSPK_ERR_INTERNAL, "no tuning row for provider '%s'", canonical.c_str());
}

void set_default_env(const char* name, const std::string& value) {
  if (!env::get(name)) setenv(name, value.c_str(), 1);
}

}  // namespace

std::string canonical_provider(const std::string& name) {
  if (name.find("sockets") != std::string::npos)
    fail(BSPK_ERR_ARG,
         "the libfabric 'sockets' provider is deprecated and lost messages in BSPk's tests; "
         "use --provider tcp (or shm on one node, verbs on InfiniBand)");
  for (const ProviderRow& r : kProviders)
    if (name == r.name || name == r.libfabric_name) return r.libfabric_name;
  fail(BSPK_ERR_ARG, "unknown or unsupported provider '%s' (BSPk supports tcp, shm, verbs)",
       name.c_str());
}

bool provider_available(const std::string& name) {
  fi_info* hints = fi_allocinfo();
  if (!hints) return false;
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG | FI_RMA;
  hints->fabric_attr->prov_name = strdup(name.c_str());
  fi_info* list = nullptr;
  int rc = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &list);
  fi_freeinfo(hints);
  if (list) fi_freeinfo(list);
  return rc == 0;
}

Selection select(const JobFacts& f) {
  Selection s;
  Config& c = s.config;
  if (auto p = config::get_string(config::Var::PROVIDER)) {
    c.provider = canonical_provider(*p);
    s.reason = "BSPK_PROVIDER=" + *p;
  } else if (auto p2 = env::get("FI_PROVIDER")) {
    c.provider = canonical_provider(*p2);
    s.reason = "FI_PROVIDER=" + *p2;
  } else if (f.all_local) {
    c.provider = "shm";
    s.reason = "every process on this host";
  } else if (provider_available("verbs;ofi_rxm")) {
    c.provider = "verbs;ofi_rxm";
    s.reason = "several hosts, verbs present";
  } else {
    c.provider = "tcp;ofi_rxm";
    s.reason = "several hosts, no verbs";
  }
  const ProviderRow& row = row_of(c.provider);
  c.nprocs = f.nprocs;
  // Unique per job and rank, so a region left behind by a killed process (whose
  // pid may be reused) never blocks a new one.
  c.shm_name = f.local_name;
  if (auto i = config::get_string(config::Var::IFACE)) c.iface = *i;
  else if (auto i2 = env::get("FI_TCP_IFACE")) c.iface = *i2;
  else if (f.all_local && c.provider != "shm") c.iface = "lo";
  c.off_host = !f.all_local;
  s.default_frame_size = row.frame_size;
  s.connect_all_pairs = row.connect_all_pairs;

  // libfabric filters providers by FI_PROVIDER: keep it consistent with our choice.
  setenv("FI_PROVIDER", c.provider.c_str(), 1);
  set_default_env("FI_UNIVERSE_SIZE", std::to_string(f.nprocs));
  // rxm (tcp, verbs) picks eager / segmented / rendezvous by total message size
  // (16 KiB and 128 KiB by default). Every BSPk message carries a header, which
  // would push a 16 KiB payload onto the 5x slower segmented path: shift both
  // thresholds by the header so protocols switch at the same payload sizes.
  if (row.rxm) {
    set_default_env("FI_OFI_RXM_BUFFER_SIZE", std::to_string(16384 + f.header_bytes));
    set_default_env("FI_OFI_RXM_SAR_LIMIT", std::to_string(131072 + f.header_bytes));
  }
  return s;
}

}  // namespace bspk::fabric
