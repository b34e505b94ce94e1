#include "fabric/select.h"

#include <bspk.h>
#include <rdma/fabric.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/config.h"
#include "base/env.h"
#include "base/error.h"
#include "base/shm_segment.h"
#include "fabric/caps.h"
#include "fabric/getinfo.h"

namespace bspk::fabric {

namespace {

// Tuning of the providers measured here (and verbs, by design): data, not
// code. A provider without a row gets the defaults select() gives it.
struct ProviderRow {
  const char* libfabric_name;   // as fi_getinfo lists it
  size_t frame_size;            // default comem frame size (bytes)
  bool connect_all_pairs;       // first contact needs the peer to progress: connect all at start-up
  bool node_names_endpoint;     // fi_getinfo's `node` names the endpoint's shared-memory region
  bool bound_inflight;          // BSPK_TX_BOUND=auto: sends in flight bounded, no inject (fabric.h)
  SplitPolicy split;            // which large messages go as header + body (fabric.h)
};

// Frame sizes measured with bench/pingpong on libfabric 1.17:
//  - tcp/verbs (rxm): 256 KiB. A frame above rxm's 128 KiB segmentation limit
//    moves by rendezvous (RMA), 77-85% of raw bandwidth at >= 256 KiB against
//    40-50% with 64 KiB frames.
//  - shm: 64 KiB. Bandwidth is no worse than with 256 KiB frames, and every
//    message occupies at least one frame on its receiver until freed, so small
//    messages cost 4x less memory. shm 1.17's first contact with a peer needs
//    that peer to progress, so every connection is opened at start-up.
//  - net (libfabric 1.17's native RDM endpoint over TCP, what `tcp` means
//    here): 256 KiB as for rxm (bench/pingpong 256 KiB: 1.07x raw libfabric).
//    Sends in flight bounded: unbounded, 1,000 small messages per pair and
//    superstep at p = 4 (tests/scenarios.cpp `many`, rings off) took 4.3-8.6 s
//    against 0.55 s bounded (rxm: 0.8 s unbounded).
constexpr ProviderRow kTuned[] = {
    {"net", size_t{256} << 10, false, false, true, SplitPolicy::SeveralFrames},
    {"tcp;ofi_rxm", size_t{256} << 10, false, false, false, SplitPolicy::PastRxmEagerLimit},
    {"verbs;ofi_rxm", size_t{256} << 10, false, false, false, SplitPolicy::PastRxmEagerLimit},
    {"shm", size_t{64} << 10, true, true, false, SplitPolicy::None},
};

const ProviderRow* row_of(const std::string& canonical) {
  for (const ProviderRow& r : kTuned)
    if (canonical == r.libfabric_name) return &r;
  return nullptr;
}

// Across hosts, in order of preference: RDMA-class providers, then tcp.
constexpr const char* kAcrossHosts[] = {"verbs;ofi_rxm", "cxi", "efa", "opx", "psm3"};

void set_default_env(const char* name, const std::string& value) {
  if (!env::get(name)) setenv(name, value.c_str(), 1);
}

}  // namespace

std::string canonical_provider(const std::string& name) {
  if (name.empty()) fail(BSPK_ERR_ARG, "empty provider name (see `fi_info -l` for the providers of this host)");
  if (name.find("sockets") != std::string::npos)
    fail(BSPK_ERR_ARG,
         "the libfabric 'sockets' provider is deprecated and lost messages in BSPk's tests; "
         "use --provider tcp (or shm on one node, verbs on InfiniBand)");
  if (name == "tcp") return tcp_provider();
  if (name == "verbs") return "verbs;ofi_rxm";
  return name;
}

bool cq_wait_fd_auto(const std::string& canonical, bool oversubscribed) {
  return oversubscribed && (canonical == "net" || canonical == "tcp");
}

SplitPolicy split_policy(const std::string& canonical) {
  if (const ProviderRow* row = row_of(canonical)) return row->split;
  // rxm over any other core provider (udp;ofi_rxm, ...) has the same protocols.
  return canonical.find(";ofi_rxm") != std::string::npos ? SplitPolicy::PastRxmEagerLimit : SplitPolicy::None;
}

const std::string& tcp_provider() {
  // Decided once per process (an fi_getinfo); every process of a job runs the
  // same libfabric, so they agree.
  static const std::string chosen = provider_available("net", true) ? "net" : "tcp;ofi_rxm";
  return chosen;
}

bool provider_available(const std::string& name, bool remote) {
  fi_info* hints = caps::hints(name, remote);
  if (!hints) return false;
  fi_info* list = nullptr;
  int rc = getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &list);
  fi_freeinfo(hints);
  bool found = false;
  for (fi_info* i = list; i && !found; i = i->next)
    found = i->fabric_attr && i->fabric_attr->prov_name && name == i->fabric_attr->prov_name &&
            caps::unmet(i, remote).empty();
  if (list) fi_freeinfo(list);
  return rc == 0 && found;
}

namespace {

// FI_PROVIDER as libfabric reads it (fabric(7)).
using ProviderFilter = env::NameFilter;

// Whether a name of FI_PROVIDER's names the provider BSPk would open as
// `canonical`: the same name, BSPk's alias of it (tcp, verbs), or its core
// provider ("tcp" names "tcp;ofi_rxm", "verbs" "verbs;ofi_rxm").
bool filter_names(const std::string& n, const std::string& canonical) {
  if (n == canonical || (n == "verbs" && canonical == "verbs;ofi_rxm")) return true;
  const size_t semi = canonical.find(';');
  if (semi != std::string::npos && canonical.compare(0, semi, n) == 0) return true;
  return n == "tcp" && canonical == tcp_provider();
}

bool filter_allows(const ProviderFilter& f, const std::string& canonical) {
  bool named = false;
  for (const std::string& n : f.names) named = named || filter_names(n, canonical);
  return f.exclude ? !named : named;
}

// shm keeps every endpoint in a region of /dev/shm: where that cannot be
// written (absent, mounted read-only, not this user's), libfabric 1.17 still
// offers it and the job failed in fi_enable ("Read-only file system"). A
// choice BSPk makes leaves it out there, with `note` saying why.
bool shm_usable(std::string* note) {
  if (!provider_available("shm", false)) return false;
  const std::string why = dev_shm_unusable();
  if (why.empty()) return true;
  if (note)
    *note = "/dev/shm " + why + ", so the shm provider is left out: the processes of this host talk through " +
            tcp_provider() + " on the loopback interface";
  return false;
}

// The provider for a job under an FI_PROVIDER filter of several names or of
// exclusions: BSPk's own order (one host: shm, then tcp; across hosts: the
// RDMA-class providers, then tcp), then the listed names in their order,
// the first that the filter allows and that this host offers with BSPk's
// capabilities (shm only where shm_usable; `note` then says why not).
// Throws BSPK_ERR_ARG naming what was tried if none is.
std::string choose_filtered(const ProviderFilter& filt, const char* var, const std::string& value, bool all_local,
                            std::string* note) {
  std::vector<std::string> order;
  if (all_local) {
    order = {"shm", tcp_provider()};
  } else {
    for (const char* n : kAcrossHosts) order.emplace_back(n);
    order.push_back(tcp_provider());
  }
  if (!filt.exclude)
    for (const std::string& n : filt.names)
      if (n.find("sockets") == std::string::npos) order.push_back(canonical_provider(n));
  std::string candidates, offered;  // (for the message)
  for (size_t i = 0; i < order.size(); ++i) {
    const std::string& c = order[i];
    if (std::find(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(i), c) != order.begin() + static_cast<std::ptrdiff_t>(i))
      continue;  // (listed twice)
    candidates += (candidates.empty() ? "" : ", ") + c;
    if (!filter_allows(filt, c)) continue;
    if (c == "shm" ? all_local && shm_usable(note) : provider_available(c, !all_local)) return c;
    offered += (offered.empty() ? "" : ", ") + c;
  }
  const bool own = std::strcmp(var, "FI_PROVIDER") != 0;
  fail(BSPK_ERR_ARG, "%s=%s allows no provider that can run BSPk %s: of %s, %s; %s", var,
       value.c_str(), all_local ? "on this host" : "across these hosts", candidates.c_str(),
       offered.empty() ? "it allows none" : ("it allows only " + offered + ", not offered here with BSPk's capabilities").c_str(),
       own ? "name one provider, or allow more (bspkrun --provider, BSPK_PROVIDER)"
           : "set BSPK_PROVIDER (or bspkrun --provider) to choose one, or change FI_PROVIDER");
}

}  // namespace

Selection select(const JobFacts& f) {
  Selection s;
  Config& c = s.config;
  // libfabric reads FI_PROVIDER once, at its first fi_getinfo, as the filter
  // of the providers it loads: a value the choice below overrides (e.g.
  // FI_PROVIDER=sockets under --provider tcp) must not be in force when
  // canonical_provider("tcp") asks whether net is offered. It is set to the
  // choice at the end.
  const std::optional<std::string> fi_provider = env::get("FI_PROVIDER");
  const ProviderFilter filt = env::parse_name_filter(fi_provider.value_or(""));
  const std::optional<std::string> bspk_provider = config::get_string(config::Var::PROVIDER);
  const ProviderFilter own = env::parse_name_filter(bspk_provider.value_or(""));
  if (bspk_provider && (own.exclude || own.names.size() > 1)) {
    // FI_PROVIDER's filter syntax in BSPK_PROVIDER (--provider '^shm',
    // 'tcp,shm'): chosen within it as for FI_PROVIDER, which it replaces
    // (an exclusion stays in force while libfabric loads its providers).
    if (own.exclude) setenv("FI_PROVIDER", bspk_provider->c_str(), 1);
    else unsetenv("FI_PROVIDER");
    c.provider = choose_filtered(own, "BSPK_PROVIDER", *bspk_provider, f.all_local, &s.note);
    s.reason = "BSPK_PROVIDER=" + *bspk_provider + " allows it";
  } else if (bspk_provider) {
    unsetenv("FI_PROVIDER");
    c.provider = canonical_provider(*bspk_provider);
    s.reason = "BSPK_PROVIDER=" + *bspk_provider;
  } else if (!filt.names.empty()) {
    const std::string& value = *fi_provider;
    if (!filt.exclude && filt.names.size() == 1) {  // one name: that provider
      unsetenv("FI_PROVIDER");
      c.provider = canonical_provider(filt.names[0]);
      s.reason = "FI_PROVIDER=" + value;
    } else {
      // A list, or exclusions ("^psm3", as sites set it): BSPk's choice
      // within it. Exclusions stay in force, so that libfabric never loads
      // what they name (a provider whose start-up misbehaves there).
      if (!filt.exclude) unsetenv("FI_PROVIDER");
      c.provider = choose_filtered(filt, "FI_PROVIDER", value, f.all_local, &s.note);
      s.reason = "FI_PROVIDER=" + value + " allows it";
    }
  } else if (f.all_local) {
    if (shm_usable(&s.note)) {
      c.provider = "shm";
      s.reason = "every process on this host";
    } else {
      c.provider = tcp_provider();
      s.reason = s.note.empty() ? "every process on this host, shm not offered"
                                : "every process on this host, shm left out (/dev/shm: see the note)";
    }
  } else {
    std::string skipped;
    for (const char* name : kAcrossHosts) {
      if (provider_available(name, true)) {
        c.provider = name;
        break;
      }
      skipped += std::string(skipped.empty() ? "" : ", ") + name;
    }
    if (c.provider.empty()) c.provider = tcp_provider();
    s.reason = "several hosts" + (skipped.empty() ? std::string() : "; not offered with BSPk's capabilities: " + skipped);
  }
  const ProviderRow* row = row_of(c.provider);
  c.nprocs = f.nprocs;
  // Unique per job and rank, so a region left behind by a killed process (whose
  // pid may be reused) never blocks a new one.
  if (row && row->node_names_endpoint) c.node_name = f.local_name;
  // The interface is a network provider's domain; shm's domain is not an
  // interface, so a site's BSPK_IFACE or FI_TCP_IFACE (exported for its
  // multi-host jobs) must not reach it: a one-host job on shm would fail
  // with "no interface 'eth0'".
  const bool network = row ? !row->node_names_endpoint : provider_available(c.provider, true);
  if (network) {
    if (auto i = config::get_string(config::Var::IFACE)) c.iface = *i;
    else if (auto i2 = env::get("FI_TCP_IFACE")) c.iface = *i2;
    else if (f.all_local) c.iface = "lo";
  }
  c.off_host = !f.all_local;
  // Without a row: 256 KiB (as tcp and verbs) for a provider that reaches
  // other hosts, 64 KiB (as shm) for one that does not.
  s.default_frame_size = row ? row->frame_size : provider_available(c.provider, true) ? size_t{256} << 10 : size_t{64} << 10;
  s.connect_all_pairs = row && row->connect_all_pairs;
  c.split = split_policy(c.provider);
  // A provider BSPk has not been measured on, and net (its row), runs with
  // its operations in flight bounded (fabric.h: Config::bound_inflight):
  // udp;ofi_rxd 1.17 stalls for good when a process fills its transmit queue
  // (its receive side then cannot get the entries it needs), which 1,000
  // small messages per process in one superstep do; net 1.17 crawls.
  const std::string bound = config::get_enum(config::Var::TX_BOUND);
  c.bound_inflight = bound == "on" || (bound == "auto" && (!row || row->bound_inflight));

  // libfabric filters providers by FI_PROVIDER: keep it consistent with our choice.
  setenv("FI_PROVIDER", c.provider.c_str(), 1);
  set_default_env("FI_UNIVERSE_SIZE", std::to_string(f.nprocs));
  // rxm (tcp, verbs, net;ofi_rxm, ...) picks eager / segmented / rendezvous by
  // total message size (16 KiB and 128 KiB by default). Every BSPk message
  // carries a header, which would push a 16 KiB payload onto the 5x slower
  // segmented path: shift both thresholds by the header so protocols switch at
  // the same payload sizes.
  if (c.provider.find("ofi_rxm") != std::string::npos) {
    set_default_env("FI_OFI_RXM_BUFFER_SIZE", std::to_string(16384 + f.header_bytes));
    set_default_env("FI_OFI_RXM_SAR_LIMIT", std::to_string(131072 + f.header_bytes));
  }
  return s;
}

}  // namespace bspk::fabric
