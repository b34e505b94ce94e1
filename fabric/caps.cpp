#include "fabric/caps.h"
#include <algorithm>

#include <rdma/fi_domain.h>

#include <cstring>

#include "base/error.h"
#include "base/shm_segment.h"
#include "fabric/getinfo.h"

namespace bspk::fabric::caps {

namespace {

// What each required capability is for, as the refusal says it.
struct CapUse {
  uint64_t bit;
  const char* name;
  const char* use;
};
constexpr CapUse kCapUses[] = {
    {FI_MSG, "FI_MSG", "messages"},
    {FI_TAGGED, "FI_TAGGED", "tagged messages: each BSPk message is received by its class"},
    {FI_SEND, "FI_SEND", "sending messages"},
    {FI_RECV, "FI_RECV", "receiving messages"},
    {FI_RMA, "FI_RMA", "one-sided access to registered memory (the registration check at bspk_init)"},
    {FI_READ, "FI_READ", "one-sided reads (the registration check at bspk_init)"},
    {FI_REMOTE_READ, "FI_REMOTE_READ", "peers reading this process's registered frames"},
    {FI_WRITE, "FI_WRITE", "one-sided writes (rendezvous of large messages)"},
    {FI_REMOTE_WRITE, "FI_REMOTE_WRITE", "peers writing into this process's registered frames"},
};

// libfabric's text for a bit set of type `t` (fi_tostr), without the brackets.
std::string bits_text(uint64_t bits, fi_type t) {
  std::string s = fi_tostr(&bits, t);
  for (char c : {'[', ']'})
    for (size_t at; (at = s.find(c)) != std::string::npos;) s.erase(at, 1);
  while (!s.empty() && s.front() == ' ') s.erase(0, 1);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

fi_info* hints(const std::string& prov_name, bool remote) {
  fi_info* h = fi_allocinfo();
  if (!h) return nullptr;
  h->ep_attr->type = FI_EP_RDM;
  // fi_getinfo echoes the primary capabilities asked for: asking for
  // FI_REMOTE_COMM alone would return entries without FI_LOCAL_COMM.
  h->caps = kRequiredCaps | (remote ? FI_LOCAL_COMM | FI_REMOTE_COMM : 0);
  h->mode = kHonouredModes;
  // Offer every registration mode we implement; the provider clears what it
  // does not need and Endpoint honours what it returns (fabric.h).
  h->domain_attr->mr_mode = static_cast<int>(kHonouredMrModes);
  h->domain_attr->threading = FI_THREAD_DOMAIN;
  h->domain_attr->av_type = FI_AV_TABLE;
  h->tx_attr->iov_limit = kMinIov;
  h->rx_attr->iov_limit = kMinIov;
  if (!prov_name.empty()) h->fabric_attr->prov_name = strdup(prov_name.c_str());
  return h;
}

std::vector<std::string> unmet(const fi_info* e, bool remote) {
  std::vector<std::string> out;
  if (!e->ep_attr || e->ep_attr->type != FI_EP_RDM)
    out.push_back("FI_EP_RDM (a reliable, unconnected endpoint; this entry is " +
                  bits_text(e->ep_attr ? static_cast<uint64_t>(e->ep_attr->type) : 0, FI_TYPE_EP_TYPE) + ")");
  for (const CapUse& c : kCapUses)
    if (!(e->caps & c.bit)) out.push_back(strprintf("%s (%s)", c.name, c.use));
  // A provider that lists neither FI_LOCAL_COMM nor FI_REMOTE_COMM (shm)
  // reaches this host only.
  if ((e->caps & FI_REMOTE_COMM) && !(e->caps & FI_LOCAL_COMM))
    out.push_back("FI_LOCAL_COMM (processes on this host, this process included)");
  if (remote && !(e->caps & FI_REMOTE_COMM)) out.push_back("FI_REMOTE_COMM (processes on other hosts)");
  if (uint64_t m = e->mode & ~kHonouredModes)
    out.push_back("a provider that works without mode " + bits_text(m, FI_TYPE_MODE) +
                  " (BSPk honours FI_CONTEXT and FI_CONTEXT2 only)");
  if (e->domain_attr) {
    if (uint64_t m = static_cast<uint64_t>(e->domain_attr->mr_mode) & ~kHonouredMrModes)
      out.push_back("a provider that works without mr_mode " + bits_text(m, FI_TYPE_MR_MODE) +
                    " (BSPk honours FI_MR_LOCAL, FI_MR_VIRT_ADDR, FI_MR_ALLOCATED, FI_MR_PROV_KEY, FI_MR_ENDPOINT)");
    if (e->domain_attr->mr_key_size > sizeof(uint64_t))
      out.push_back(strprintf("memory-region keys of at most 8 bytes (this provider's are %zu)",
                              e->domain_attr->mr_key_size));
  }
  size_t tx_iov = e->tx_attr ? e->tx_attr->iov_limit : 0, rx_iov = e->rx_attr ? e->rx_attr->iov_limit : 0;
  if (tx_iov < kMinIov || rx_iov < kMinIov)
    out.push_back(strprintf("%zu iovecs per send and receive (header and payload; this provider offers %zu / %zu)",
                            kMinIov, tx_iov, rx_iov));
  return out;
}

namespace {
// fi_getinfo of `prov_name` with no requirement but the mode bits offered.
fi_info* offered(const std::string& prov_name, uint64_t modes, int* rc) {
  fi_info* h = fi_allocinfo();
  if (!h) return nullptr;
  h->mode = modes;
  h->domain_attr->mr_mode = ~0 & ~FI_MR_BASIC & ~FI_MR_SCALABLE;
  h->fabric_attr->prov_name = strdup(prov_name.c_str());
  fi_info* list = nullptr;
  *rc = getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, h, &list);
  fi_freeinfo(h);
  return *rc ? nullptr : list;
}
}  // namespace

std::string why_unusable(const std::string& prov_name, bool remote) {
  // Everything the provider has on this host, first with the mode bits BSPk
  // honours (a provider lists optional modes it could use when offered more),
  // then with any, to name a mode it requires.
  int rc = 0;
  fi_info* list = offered(prov_name, kHonouredModes, &rc);
  if (!list) list = offered(prov_name, ~0ULL, &rc);
  if (rc || !list) {
    std::string text =
        strprintf("fi_getinfo finds no endpoint of provider '%s' on this host (%s): the name is unknown to this "
                  "libfabric (see `fi_info -l`), or its device or library is missing",
                  prov_name.c_str(), fi_strerror(rc < 0 ? -rc : rc));
    // libfabric's shm provider also hides itself when /dev/shm cannot hold
    // the regions it sizes for every core of the host (its log says "Not
    // enough available space in /dev/shm" at FI_LOG_LEVEL=warn; fi_getinfo
    // then answers "no data" for the whole list): containers often mount a
    // 64 MiB /dev/shm.
    if (prov_name == "shm")  // (not "shm;ofi_rxm", which no libfabric offers)
      if (const std::string room = dev_shm_room(); !room.empty())
        text += strprintf("; or /dev/shm has too little free space for it (%s here; libfabric's shm sizes its "
                          "regions by the host's cores: enlarge /dev/shm, e.g. `docker run --shm-size=1g`, or leave "
                          "the provider unset: on one host BSPk then runs on tcp with its own shared-memory rings "
                          "and count board)",
                          room.c_str());
    return text;
  }
  // The entry closest to usable: of this provider exactly, an RDM one if any,
  // with the fewest unmet requirements.
  const fi_info* best = nullptr;
  std::vector<std::string> best_unmet;
  bool any_rdm = false;
  std::vector<std::string> layered_rdm;  // "udp;ofi_rxd" and the like, as fi_getinfo lists them here
  for (const fi_info* e = list; e; e = e->next) {
    if (e->fabric_attr && e->fabric_attr->prov_name && prov_name != e->fabric_attr->prov_name) {
      const std::string name = e->fabric_attr->prov_name;
      if (name.compare(0, prov_name.size() + 1, prov_name + ";") == 0 && e->ep_attr &&
          e->ep_attr->type == FI_EP_RDM && std::find(layered_rdm.begin(), layered_rdm.end(), name) == layered_rdm.end())
        layered_rdm.push_back(name);
      continue;
    }
    any_rdm |= e->ep_attr && e->ep_attr->type == FI_EP_RDM;
    std::vector<std::string> u = unmet(e, remote);
    if (!best || u.size() < best_unmet.size()) best = e, best_unmet = std::move(u);
  }
  std::string text;
  if (!best) {
    text = strprintf("fi_getinfo lists no endpoint named exactly '%s' (only layered ones)", prov_name.c_str());
  } else if (!any_rdm) {
    text = strprintf("provider '%s' offers no reliable-datagram endpoint (FI_EP_RDM) on this host", prov_name.c_str());
    // Name only the layered providers this libfabric lists over it here
    // (rxm needs a connected core endpoint, rxd a datagram one).
    if (!layered_rdm.empty()) {
      text += "; a utility provider layered on it offers one here: ";
      for (size_t i = 0; i < layered_rdm.size(); ++i) text += (i ? ", '" : "'") + layered_rdm[i] + "'";
    } else if (prov_name.find(';') == std::string::npos) {
      text += "; fi_getinfo lists no utility provider layered on it here either";
    }
  } else if (!best_unmet.empty()) {
    text = strprintf("provider '%s' lacks what BSPk needs: ", prov_name.c_str());
    for (size_t i = 0; i < best_unmet.size(); ++i) text += (i ? "; " : "") + best_unmet[i];
  } else {
    text = strprintf("provider '%s' has an entry with every capability BSPk needs, but fi_getinfo did not return it "
                     "for BSPk's hints (FI_THREAD_DOMAIN, FI_AV_TABLE, at least %zu iovecs): see `fi_info -v -p "
                     "\"%s\"`",
                     prov_name.c_str(), kMinIov, prov_name.c_str());
  }
  fi_freeinfo(list);
  return text;
}

}  // namespace bspk::fabric::caps
