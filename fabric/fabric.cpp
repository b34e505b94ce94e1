#include "fabric/fabric.h"

#include <bspk.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <unistd.h>

#include <algorithm>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "base/clock.h"
#include "base/env.h"
#include "base/error.h"
#include "base/random.h"
#include "base/shm_segment.h"
#include "fabric/caps.h"
#include "fabric/getinfo.h"
#include "fabric/shm_names.h"

namespace bspk::fabric {

namespace {
// net: messages of up to this many frames travel whole, one message per
// frame; larger ones split (see Endpoint::Endpoint).
constexpr uint32_t kNetWholeFramesMax = 4;
}  // namespace

std::string errstr(ssize_t rc) {
  int e = static_cast<int>(rc < 0 ? -rc : rc);
  return strprintf("%s (%d)", fi_strerror(e), e);
}

namespace {

[[noreturn]] void fab_fail(const char* call, ssize_t rc, const std::string& what = "") {
  fail(BSPK_ERR_FABRIC, "%s failed%s%s: %s", call, what.empty() ? "" : " ", what.c_str(),
       errstr(rc).c_str());
}

bool is_ipv4_fabric(const fi_info* i) {
  return i->fabric_attr && i->fabric_attr->name && std::strchr(i->fabric_attr->name, '.');
}

bool is_loopback(const fi_info* i) {
  return (i->domain_attr && i->domain_attr->name && std::strcmp(i->domain_attr->name, "lo") == 0) ||
         (i->fabric_attr && i->fabric_attr->name && std::strncmp(i->fabric_attr->name, "127.", 4) == 0);
}

}  // namespace

Endpoint::Endpoint(const Config& cfg) : provider_(cfg.provider) {
  // libfabric 1.17's shm, finding its region's name taken (shm_open O_EXCL
  // fails), opens the existing file instead and maps it: a file planted in
  // /dev/shm by another local user would crash the process (SIGBUS) or share
  // its messages with that user. Names are unpredictable (api/init.cpp); a
  // name already present is refused here, before the provider sees it.
  if (!cfg.node_name.empty()) refuse_taken_shm_name(cfg.node_name);
  fi_info* hints = caps::hints(cfg.provider, cfg.off_host);
  if (!hints) fail(BSPK_ERR_NOMEM, "fi_allocinfo failed");
  fi_info* list = nullptr;
  // A provider that keeps its endpoint in a named shared-memory region (shm)
  // names it after `node`.
  const bool named = !cfg.node_name.empty();
  // Directed receives for split large messages (Config::split), if the
  // provider grants them; else every message whole.
  const SplitPolicy policy = cfg.split_header ? cfg.split : SplitPolicy::None;
  const bool split = policy != SplitPolicy::None;
  // And iovecs for bodies of several frames (cfg.split_iov), if granted: the
  // provider reports the iov_limit asked for, not its own.
  auto getinfo = [&](uint64_t extra_caps, size_t iov) {
    hints->caps |= extra_caps;
    hints->tx_attr->iov_limit = hints->rx_attr->iov_limit = std::max(iov, caps::kMinIov);
    int r = fabric::getinfo(FI_VERSION(1, 17), named ? cfg.node_name.c_str() : nullptr, nullptr,
                            named ? FI_SOURCE : 0, hints, &list);
    hints->caps &= ~extra_caps;
    if (r) list = nullptr;
    return r;
  };
  int rc = split ? getinfo(FI_DIRECTED_RECV, cfg.split_iov) : -FI_ENODATA;
  if (rc && split && cfg.split_iov > caps::kMinIov) rc = getinfo(FI_DIRECTED_RECV, caps::kMinIov);
  if (rc) rc = getinfo(0, caps::kMinIov);
  fi_freeinfo(hints);
  auto exact = [&](const fi_info* i) {
    return i->fabric_attr && i->fabric_attr->prov_name && cfg.provider == i->fabric_attr->prov_name;
  };
  bool any_exact = false;
  for (fi_info* i = list; i && rc == 0; i = i->next) any_exact |= exact(i);
  if (rc || !any_exact) {
    if (list) fi_freeinfo(list);
    std::string why = caps::why_unusable(cfg.provider, cfg.off_host);
    fail(BSPK_ERR_FABRIC, "provider '%s' cannot run BSPk: %s. Check `fi_info -v -p \"%s\"`; choose another with "
         "--provider or BSPK_PROVIDER.",
         cfg.provider.c_str(), why.empty() ? ("fi_getinfo: " + errstr(rc)).c_str() : why.c_str(),
         cfg.provider.c_str());
  }
  // Pick the entry: of the provider exactly as named (asking for "net" also
  // lists "net;ofi_rxm"); then the requested interface (domain name), else
  // for network providers the first IPv4 fabric (never a loopback one when
  // peers are on other hosts), else the first entry.
  bool any_ip = false;
  for (fi_info* i = list; i; i = i->next) any_ip |= exact(i) && is_ipv4_fabric(i);
  fi_info* pick = nullptr;
  for (fi_info* i = list; i && !pick; i = i->next) {
    if (!exact(i) || !caps::unmet(i, cfg.off_host).empty()) continue;
    if (!cfg.iface.empty()) {
      if (i->domain_attr && i->domain_attr->name && cfg.iface == i->domain_attr->name) pick = i;
    } else if (!any_ip || (is_ipv4_fabric(i) && !(cfg.off_host && is_loopback(i)))) {
      pick = i;
    }
  }
  if (!pick) {
    std::string seen;
    for (fi_info* i = list; i; i = i->next)
      if (exact(i) && i->domain_attr && i->domain_attr->name) seen += std::string(" ") + i->domain_attr->name;
    bool usable = false;
    for (fi_info* i = list; i; i = i->next) usable |= exact(i) && caps::unmet(i, cfg.off_host).empty();
    fi_freeinfo(list);
    if (!usable)
      fail(BSPK_ERR_FABRIC, "provider '%s' cannot run BSPk: %s", cfg.provider.c_str(),
           caps::why_unusable(cfg.provider, cfg.off_host).c_str());
    if (!cfg.iface.empty())
      fail(BSPK_ERR_FABRIC, "provider '%s' has no interface '%s' (available:%s)", cfg.provider.c_str(),
           cfg.iface.c_str(), seen.c_str());
    fail(BSPK_ERR_FABRIC, "provider '%s' offers no usable interface for a job across hosts (available:%s; loopback "
         "ones are not used): set BSPK_IFACE", cfg.provider.c_str(), seen.c_str());
  }
  info_ = fi_dupinfo(pick);
  fi_freeinfo(list);
  if (!info_) fail(BSPK_ERR_NOMEM, "fi_dupinfo failed");

  mr_mode_ = info_->domain_attr->mr_mode;
  virt_addr_ = (mr_mode_ & FI_MR_VIRT_ADDR) != 0;
  // The provider's default. Not asked larger on purpose: tcp;ofi_rxm 1.17
  // grants up to its bounce buffer when hints->tx_attr->inject_size asks
  // (4160 instead of 64), but across hosts (tests/cluster/slurm_netns.sh,
  // radix_sort at p = 6) injected messages of 1.6-3.5 KiB then arrived as
  // zeros, as if the buffer were read after fi_tinjectv returned.
  inject_size_ = native_inject_ = info_->tx_attr->inject_size;
  // Larger sends complete at once all the same through bounce buffers of our
  // own (Config::bounce_size), which stay untouched until the send completes.
  if (cfg.bounce_size > native_inject_ && !cfg.bound_inflight) {
    bounce_len_ = (cfg.bounce_size + 63) & ~size_t{63};
    inject_size_ = cfg.bounce_size;
  }
  // rxm sends a message of up to its eager limit (FI_OFI_RXM_EAGER_LIMIT,
  // default 16384 bytes, all iovecs) through bounce buffers; a larger one by
  // rendezvous: the receiver reads every iovec of the sender's separately
  // (one read request and reply each). A header + payload message then costs
  // two of them: raw libfabric ping-pong with the same two iovecs took 46-48
  // us at 64 KiB against 42-43 us with one, 71-72 against 62-64 us at 256 KiB
  // (tcp, 2 interleaved runs). So for rxm the engine sends large messages as
  // header + one-iovec payload, received by directed receives.
  const bool directed = (info_->caps & FI_DIRECTED_RECV) != 0;
  if (policy == SplitPolicy::PastRxmEagerLimit && directed)
    eager_limit_ = std::max<uint64_t>(env::get_size("FI_OFI_RXM_EAGER_LIMIT", 16384), 1);
  // net 1.17 sends every message whole, but a message of many frames, sent as
  // one message per frame, stalled: bench/pingpong at 8 MiB (32 frames of
  // 256 KiB) took 2.3-7.8x raw libfabric's time in half the runs (every send
  // complete while the data was still on its way, 16-20 ms receive waits), and 0.7-1.1x
  // when split as on rxm (header, then one body of up to BSPK_SPLIT_FRAMES
  // frames into a directed receive). A message of up to kNetWholeFramesMax
  // frames stays whole, one message per frame: split, a 256 KiB one took 1.3x
  // raw's time against 1.1x whole, and a body of 2-4 frames was the slow part
  // of the long collectives: tcp p = 2, 1 MiB (coll_bspk, 5 alternated runs
  // of each), broadcast 146-198 -> 132-160 us, allreduce 510-579 -> 358-363,
  // alltoall 292-332 -> 194-217 with messages of up to 4 frames whole; at 2
  // MiB (8 frames) whole was slower (pingpong 540-660 against 384-422 us).
  if (policy == SplitPolicy::SeveralFrames && directed) {
    eager_limit_ = 16384;
    split_min_frames_ = kNetWholeFramesMax + 1;
  }
  max_msg_size_ = info_->ep_attr->max_msg_size;
  cq_data_size_ = info_->domain_attr->cq_data_size;
  remote_write_ = env::get_bool("FI_OFI_RXM_USE_RNDV_WRITE", false);
  // The tag bits the provider matches: mem_tag_format's leading zero bits are
  // ignored (fi_endpoint(3)); 0 means no format given, all 64 bits.
  if (uint64_t f = info_->ep_attr->mem_tag_format) tag_width_ = 64 - __builtin_clzll(f);
  mr_key_size_ = std::clamp<size_t>(info_->domain_attr->mr_key_size, 1, sizeof(uint64_t));
  iov_limit_ = std::min(info_->tx_attr->iov_limit, info_->rx_attr->iov_limit);
  tx_size_ = info_->tx_attr->size;
  rx_size_ = info_->rx_attr->size;
  domain_name_ = info_->domain_attr->name ? info_->domain_attr->name : "";
  control_manual_ = info_->domain_attr->control_progress == FI_PROGRESS_MANUAL;
  data_manual_ = info_->domain_attr->data_progress == FI_PROGRESS_MANUAL;
  rma_event_ = (info_->caps & FI_RMA_EVENT) != 0;
  delivery_complete_ = (info_->tx_attr->op_flags & FI_DELIVERY_COMPLETE) != 0 ||
                       (info_->tx_attr->caps & FI_DELIVERY_COMPLETE) != 0;
  if ((rc = fi_fabric(info_->fabric_attr, &fabric_, nullptr))) fab_fail("fi_fabric", rc);
  if ((rc = fi_domain(fabric_, info_, &domain_, nullptr))) fab_fail("fi_domain", rc);

  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_DATA;
  cq_attr.size = tx_size_ + rx_size_;
  // Block on a file descriptor where the provider has one (tcp, verbs) and
  // the caller wants it (cfg.cq_wait_fd). shm (1.17) refuses FI_WAIT_FD with
  // -FI_ENOSYS, and its FI_WAIT_UNSPEC sread is a sched_yield loop that
  // ignores the time-out: there, and when asked, we open the CQ without a
  // wait object and the engine backs off by itself (sync/wait.cpp).
  cq_attr.wait_obj = cfg.cq_wait_fd ? FI_WAIT_FD : FI_WAIT_NONE;
  rc = fi_cq_open(domain_, &cq_attr, &cq_, nullptr);
  if (rc && cq_attr.wait_obj == FI_WAIT_FD) {
    cq_attr.wait_obj = FI_WAIT_NONE;
    rc = fi_cq_open(domain_, &cq_attr, &cq_, nullptr);
  }
  if (rc) fab_fail("fi_cq_open", rc);
  can_block_ = cq_attr.wait_obj == FI_WAIT_FD;

  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  av_attr.count = static_cast<size_t>(cfg.nprocs);
  if ((rc = fi_av_open(domain_, &av_attr, &av_, nullptr))) fab_fail("fi_av_open", rc);

  // (shm makes its region in /dev/shm from here to fi_enable)
  auto shm_guard = shm_creation_guard();
  if ((rc = fi_endpoint(domain_, info_, &ep_, nullptr))) fab_fail("fi_endpoint", rc);
  if ((rc = fi_ep_bind(ep_, &av_->fid, 0))) fab_fail("fi_ep_bind", rc, "(address vector)");
  // Selective completion: only operations posted with FI_COMPLETION report
  // (all of ours except small injected sends, which need no bookkeeping).
  if ((rc = fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)))
    fab_fail("fi_ep_bind", rc, "(completion queue)");
  if ((rc = fi_enable(ep_))) {
    // shm's endpoint is a region in /dev/shm: say so when that is the cause
    // (chosen by name; auto leaves shm out there: select.cpp).
    const std::string why = cfg.provider == "shm" ? dev_shm_unusable() : std::string();
    if (!why.empty())
      fail(BSPK_ERR_FABRIC, "fi_enable failed: %s: provider 'shm' keeps its endpoints in /dev/shm, which %s here; "
           "choose tcp (--provider tcp, BSPK_PROVIDER=tcp) or leave the choice to BSPk",
           errstr(rc).c_str(), why.c_str());
    fab_fail("fi_enable", rc);
  }
  shm_guard.unlock();
  // The shm provider has created this endpoint's region in /dev/shm: hold it
  // for this process's life, so that if the whole job is killed, the next
  // BSPk process of this user on the host removes it (fabric/shm_names.h).
  // (A provider that creates it later is held at insert_peers.)
  shm_name_ = cfg.node_name;
  if (!shm_name_.empty()) shm_lock_fd_ = hold_shm_region(shm_name_);

  // Operations in flight (fabric.h), when bounded: a sixteenth of the smaller
  // queue shared by every process, since all may send to one receiver at
  // once (udp;ofi_rxd 1.17, 1,000 messages per process and superstep: with
  // 128 in flight at p = 2 it stalled in 1 of 5 runs, with 32 in none of 16).
  if (cfg.bound_inflight) {
    size_t nprocs = static_cast<size_t>(std::max(cfg.nprocs, 1));
    inflight_limit_ = std::max<size_t>(std::min(tx_size_, rx_size_) / (16 * nprocs), 8);
  }
}

void Endpoint::close_endpoint() noexcept {
  if (ep_) fi_close(&ep_->fid);
  ep_ = nullptr;
  release_bounces();
}

void Endpoint::setup_bounces() {
  const size_t len = kBounces * bounce_len_;
  void* mem = nullptr;
  if (posix_memalign(&mem, 4096, len) != 0 || !mem) fail(BSPK_ERR_NOMEM, "no memory for %zu bytes of bounce buffers", len);
  try {
    bounce_mr_ = register_memory(mem, len);
  } catch (...) {
    std::free(mem);
    throw;
  }
  bounce_mem_ = static_cast<char*>(mem);
  bounce_ctx_.resize(kBounces);  // never resized again: contexts in flight point into it
  bounce_free_.reserve(kBounces);
  for (size_t i = kBounces; i-- > 0;) bounce_free_.push_back(static_cast<uint32_t>(i));
}

void Endpoint::release_bounces() noexcept {
  if (!bounce_mem_) return;
  deregister(bounce_mr_);
  std::free(bounce_mem_);
  bounce_mem_ = nullptr;
  bounce_free_.clear();
}

bool Endpoint::bounce_of(const OpContext* c, size_t* index) const {
  if (bounce_ctx_.empty() || c < bounce_ctx_.data() || c >= bounce_ctx_.data() + bounce_ctx_.size()) return false;
  *index = static_cast<size_t>(c - bounce_ctx_.data());
  return true;
}

Endpoint::~Endpoint() {
  close_endpoint();
  if (av_) fi_close(&av_->fid);
  if (cq_) fi_close(&cq_->fid);
  if (domain_) fi_close(&domain_->fid);
  if (fabric_) fi_close(&fabric_->fid);
  if (info_) fi_freeinfo(info_);
  if (shm_lock_fd_ >= 0) ::close(shm_lock_fd_);
}

std::vector<uint8_t> Endpoint::name() const {
  size_t len = 0;
  int rc = fi_getname(&ep_->fid, nullptr, &len);
  if (rc != -FI_ETOOSMALL && rc != 0) fab_fail("fi_getname", rc);
  std::vector<uint8_t> buf(len);
  if ((rc = fi_getname(&ep_->fid, buf.data(), &len))) fab_fail("fi_getname", rc);
  buf.resize(len);
  return buf;
}

void Endpoint::insert_peers(const std::vector<std::vector<uint8_t>>& names) {
  static_assert(sizeof(fi_addr_t) == sizeof(uint64_t));
  addrs_.assign(names.size(), FI_ADDR_NOTAVAIL);
  for (size_t r = 0; r < names.size(); ++r) {
    int n = fi_av_insert(av_, names[r].data(), 1, reinterpret_cast<fi_addr_t*>(&addrs_[r]), 0, nullptr);
    if (n != 1) fab_fail("fi_av_insert", n < 0 ? n : -FI_EINVAL, strprintf("(pid %zu)", r));
    if (addrs_[r] != r)
      fail(BSPK_ERR_FABRIC, "fi_av_insert gave address %llu to pid %zu (expected %zu)",
           (unsigned long long)addrs_[r], r, r);
  }
  // Peers map our region by its name from here on: it exists by now.
  if (!shm_name_.empty() && shm_lock_fd_ < 0) shm_lock_fd_ = hold_shm_region(shm_name_);
}

void Endpoint::set_job_token(uint64_t token) {
  if (tag_width_ <= kClassBits) return;  // no room beside the class: no token (describe() says so)
  uint64_t mask = tag_width_ >= 64 ? ~uint64_t{0} : (uint64_t{1} << tag_width_) - 1;
  tag_key_ = (token << kClassBits) & mask;
  if (!tag_key_) tag_key_ = uint64_t{1} << kClassBits;  // a token that masked to 0 would look unset
}

namespace {
// An unpredictable key of the provider's key size; a peer (or a stranger who
// reaches the endpoint) cannot guess the key of a region it was not told about.
uint64_t random_key(size_t key_size) {
  uint64_t k = random_u64();
  if (key_size < sizeof k) k &= (uint64_t{1} << (8 * key_size)) - 1;
  return k ? k : 1;
}
}  // namespace

MemoryRegion Endpoint::register_memory(void* base, size_t len) {
  MemoryRegion m;
  // Access: what BSPk's operations use, no more. Sends and receives from and
  // into frames, reads into them (FI_READ), and peers reading them
  // (FI_REMOTE_READ: the start-up registration check, and ofi_rxm's rendezvous,
  // which reads a large message from the sender's frame). Remote writes only
  // when FI_OFI_RXM_USE_RNDV_WRITE makes rxm's rendezvous write into the
  // receiver's frame instead; otherwise no peer can write into this process.
  uint64_t access = FI_SEND | FI_RECV | FI_READ | FI_REMOTE_READ;
  if (remote_write_) access |= FI_WRITE | FI_REMOTE_WRITE;
  // Keys: the provider's own under FI_MR_PROV_KEY (requested_key ignored),
  // else a random one; a key already in use (-FI_ENOKEY) is drawn again.
  int rc = 0;
  for (int attempt = 0; attempt < 8; ++attempt) {
    uint64_t key = (mr_mode_ & FI_MR_PROV_KEY) ? 0 : random_key(mr_key_size_);
    rc = fi_mr_reg(domain_, base, len, access, 0, key, 0, &m.mr, nullptr);
    if (rc != -FI_ENOKEY) break;
  }
  if (rc) fab_fail("fi_mr_reg", rc, strprintf("(%zu bytes)", len));
  // FI_MR_ENDPOINT: the region is usable (and its key known) only once bound
  // to the endpoint and enabled.
  if (mr_mode_ & FI_MR_ENDPOINT) {
    if (!ep_) {
      fi_close(&m.mr->fid);
      fail(BSPK_ERR_INTERNAL, "memory registered after the endpoint was closed (FI_MR_ENDPOINT)");
    }
    if ((rc = fi_mr_bind(m.mr, &ep_->fid, 0)) || (rc = fi_mr_enable(m.mr))) {
      fi_close(&m.mr->fid);
      fab_fail("fi_mr_bind/fi_mr_enable", rc, "(FI_MR_ENDPOINT)");
    }
  }
  m.desc = fi_mr_desc(m.mr);
  m.key = fi_mr_key(m.mr);
  if (m.key == FI_KEY_NOTAVAIL) {
    fi_close(&m.mr->fid);
    fail(BSPK_ERR_FABRIC, "fi_mr_key returned FI_KEY_NOTAVAIL (keys longer than 64 bits are not supported)");
  }
  m.base = reinterpret_cast<uintptr_t>(base);
  m.len = len;
  return m;
}

void Endpoint::deregister(MemoryRegion& m) noexcept {
  if (m.mr) fi_close(&m.mr->fid);
  m.mr = nullptr;
}

static_assert(sizeof(OpContext) >= sizeof(fi_context2), "OpContext must hold libfabric's FI_CONTEXT2 space");

bool Endpoint::recv_tagged(uint64_t src, const iovec* iov, void** desc, size_t count, OpContext* ctx,
                           uint64_t tag) {
  fi_msg_tagged msg{};
  msg.msg_iov = iov;
  msg.desc = desc;
  msg.iov_count = count;
  msg.addr = src;
  msg.tag = tag | tag_key_;
  msg.ignore = 0;
  msg.context = ctx;
  ssize_t rc = fi_trecvmsg(ep_, &msg, FI_COMPLETION);
  if (rc && rc != -FI_EAGAIN)
    fab_fail("fi_trecvmsg", rc, src == FI_ADDR_UNSPEC ? std::string() : strprintf("(directed, from fi_addr %llu)",
                                                                                 (unsigned long long)src));
  return rc == 0;
}

bool Endpoint::post_recv(const iovec* iov, void** desc, size_t count, OpContext* ctx, uint64_t tag) {
  return recv_tagged(FI_ADDR_UNSPEC, iov, desc, count, ctx, tag);
}

bool Endpoint::post_recv_from(int src, const iovec* iov, void** desc, size_t count, OpContext* ctx, uint64_t tag) {
  return recv_tagged(addrs_.at(static_cast<size_t>(src)), iov, desc, count, ctx, tag);
}

bool Endpoint::send_tagged(int dest, const iovec* iov, void** desc, size_t count, void* context,
                           uint64_t tag, uint64_t flags) {
  fi_msg_tagged msg{};
  msg.msg_iov = iov;
  msg.desc = desc;
  msg.iov_count = count;
  msg.addr = addrs_.at(static_cast<size_t>(dest));
  msg.tag = tag | tag_key_;
  msg.context = context;
  ssize_t rc = fi_tsendmsg(ep_, &msg, flags);
  if (rc && rc != -FI_EAGAIN)
    fab_fail(flags & FI_INJECT ? "fi_tsendmsg(FI_INJECT)" : "fi_tsendmsg", rc, strprintf("to pid %d", dest));
  return rc == 0;
}

bool Endpoint::post_send(int dest, const iovec* iov, void** desc, size_t count, OpContext* ctx,
                         uint64_t tag) {
  if (inflight_limit_ && inflight_ >= inflight_limit_) return false;
  if (!send_tagged(dest, iov, desc, count, ctx, tag, FI_COMPLETION)) return false;
  ++inflight_;
  return true;
}

bool Endpoint::post_read(int src, void* local, size_t len, void* desc, uint64_t raddr, uint64_t key,
                         OpContext* ctx) {
  if (inflight_limit_ && inflight_ >= inflight_limit_) return false;
  iovec iov{local, len};
  fi_rma_iov riov{raddr, len, key};
  fi_msg_rma msg{};
  msg.msg_iov = &iov;
  msg.desc = &desc;
  msg.iov_count = 1;
  msg.addr = addrs_.at(static_cast<size_t>(src));
  msg.rma_iov = &riov;
  msg.rma_iov_count = 1;
  msg.context = ctx;
  ssize_t rc = fi_readmsg(ep_, &msg, FI_COMPLETION);
  if (rc && rc != -FI_EAGAIN) fab_fail("fi_readmsg", rc, strprintf("from pid %d", src));
  if (rc) return false;
  ++inflight_;
  return true;
}

bool Endpoint::inject(int dest, const iovec* iov, void** desc, size_t count, uint64_t tag) {
  // Bounded: no injection, whose resources the provider holds without telling
  // us when it lets them go; the caller posts the send as an operation.
  if (inflight_limit_) return false;
  size_t len = 0;
  for (size_t i = 0; i < count; ++i) len += iov[i].iov_len;
  if (len <= native_inject_) return send_tagged(dest, iov, desc, count, nullptr, tag, FI_INJECT);
  // Past the provider's inject size: copy into a bounce buffer and send from it.
  if (len > inject_size_ || !bounce_len_ || !ep_) return false;
  if (!bounce_mem_) setup_bounces();
  if (bounce_free_.empty()) return false;  // all in flight: the caller posts the send itself
  const uint32_t b = bounce_free_.back();
  char* buf = bounce_mem_ + static_cast<size_t>(b) * bounce_len_;
  for (size_t i = 0, off = 0; i < count; off += iov[i].iov_len, ++i)
    if (iov[i].iov_len) std::memcpy(buf + off, iov[i].iov_base, iov[i].iov_len);
  iovec one{buf, len};
  void* d = bounce_mr_.desc;
  if (!send_tagged(dest, &one, &d, 1, &bounce_ctx_[b], tag, FI_COMPLETION)) return false;
  bounce_free_.pop_back();
  return true;
}

ssize_t Endpoint::read_error(CompletionError* err) {
  fi_cq_err_entry e{};
  ssize_t rc = fi_cq_readerr(cq_, &e, 0);
  if (rc < 0) {
    if (rc == -FI_EAGAIN) return 0;
    fab_fail("fi_cq_readerr", rc);
  }
  err->context = static_cast<OpContext*>(e.op_context);
  size_t b;
  if (bounce_of(err->context, &b)) {  // an injected send through a bounce buffer: nobody else to tell
    bounce_free_.push_back(static_cast<uint32_t>(b));
    err->context = nullptr;
  } else if (!(e.flags & FI_RECV) && err->context && inflight_) {
    --inflight_;
  }
  err->canceled = e.err == FI_ECANCELED;
  err->message = fi_strerror(e.err);
  if (e.err == FI_ETRUNC)  // olen: the bytes that did not fit the posted buffer
    err->message += strprintf(": %zu byte(s) more than the buffer posted for it", e.olen);
  // The provider's own text, when it has one (prov_errno 0 reads "Success").
  char buf[256];
  const char* s = e.prov_errno != 0 ? fi_cq_strerror(cq_, e.prov_errno, e.err_data, buf, sizeof buf) : nullptr;
  if (s && *s) err->message += strprintf(" (provider: %s)", s);
  return -1;
}

namespace {
constexpr size_t kCqBatch = 16;  // completions read per fi_cq_read
}  // namespace

// libfabric's completion entries as opaque Completions: those of operations
// posted with a context (FI_SELECTIVE_COMPLETION: injected sends, posted
// without one, report nothing, or are skipped here).
ssize_t Endpoint::to_completions(const void* entries, ssize_t n, Completion* out) {
  auto* e = static_cast<const fi_cq_data_entry*>(entries);
  ssize_t k = 0;
  for (ssize_t i = 0; i < n; ++i) {
    Completion& c = out[k];
    c.context = static_cast<OpContext*>(e[i].op_context);
    size_t b;
    if (bounce_of(c.context, &b)) {  // an injected send through a bounce buffer left: the buffer is free
      bounce_free_.push_back(static_cast<uint32_t>(b));
      continue;
    }
    if (!(e[i].flags & FI_RECV) && c.context && inflight_) --inflight_;  // a send or read of ours left
    // Injected sends are posted without a context and without FI_COMPLETION;
    // under FI_SELECTIVE_COMPLETION they report nothing, but libfabric 1.17's
    // net provider reports each one anyway (flags FI_TAGGED | FI_SEND, null
    // context): nothing to settle, skip it.
    if (!c.context) continue;
    c.len = e[i].len;
    if (e[i].flags & FI_RECV) c.kind = CompletionKind::Received;
    else if (e[i].flags & FI_READ) c.kind = CompletionKind::Read;
    else if (e[i].flags & FI_SEND) c.kind = CompletionKind::Sent;
    else continue;
    ++k;
  }
  return k;
}

ssize_t Endpoint::poll(Completion* out, size_t n, CompletionError* err) {
  fi_cq_data_entry e[kCqBatch];
  ssize_t rc = fi_cq_read(cq_, e, std::min(n, kCqBatch));
  if (rc == -FI_EAGAIN || rc == -EINTR) return 0;
  if (rc == -FI_EAVAIL) return read_error(err);
  if (rc < 0) fab_fail("fi_cq_read", rc);
  return to_completions(e, rc, out);
}

ssize_t Endpoint::wait(Completion* out, size_t n, int timeout_ms, CompletionError* err) {
  if (!can_block_) return poll(out, n, err);
  fi_cq_data_entry e[kCqBatch];
  ssize_t rc = fi_cq_sread(cq_, e, std::min(n, kCqBatch), nullptr, timeout_ms);
  if (rc == -FI_EAGAIN || rc == -EINTR || rc == -FI_ETIMEDOUT) return 0;
  if (rc == -FI_EAVAIL) return read_error(err);
  if (rc < 0) fab_fail("fi_cq_sread", rc);
  return to_completions(e, rc, out);
}

std::string Endpoint::describe() const {
  std::string modes;
  if (mr_mode_ & FI_MR_LOCAL) modes += "LOCAL|";
  if (mr_mode_ & FI_MR_VIRT_ADDR) modes += "VIRT_ADDR|";
  if (mr_mode_ & FI_MR_ALLOCATED) modes += "ALLOCATED|";
  if (mr_mode_ & FI_MR_PROV_KEY) modes += "PROV_KEY|";
  if (mr_mode_ & FI_MR_ENDPOINT) modes += "ENDPOINT|";
  if (modes.empty()) modes = "none (offset addressing)";
  else modes.pop_back();
  return strprintf("provider=%s domain=%s mr_mode=%s inject=%zu%s max_msg=%s cq_data=%zu (unused) iov=%zu tx=%zu rx=%zu "
                   "progress=%s/%s%s%s%s",
                   provider_.c_str(), domain_name_.c_str(), modes.c_str(), native_inject_,
                   bounce_len_ ? strprintf(" (up to %zu through bounce buffers)", inject_size_).c_str() : "",
                   max_msg_size_ == SIZE_MAX ? "unlimited" : std::to_string(max_msg_size_).c_str(), cq_data_size_,
                   iov_limit_, tx_size_, rx_size_, control_manual_ ? "manual" : "auto", data_manual_ ? "manual" : "auto",
                   rma_event_ ? " rma_event" : "", delivery_complete_ ? " delivery_complete" : "",
                   can_block_ ? " wait=fd" : " wait=backoff (no CQ wait object)") +
         (eager_limit_ ? strprintf(", header split above %zu bytes", eager_limit_) : std::string()) +
         (eager_limit_ && split_min_frames_ > 1
              ? strprintf(" (messages of up to %u frames whole while such frames to a peer in the superstep stay "
                          "within %u)",
                          split_min_frames_ - 1, split_min_frames_ - 1)
              : std::string()) +
         strprintf(", job token %s", tag_key_ ? strprintf("in %d tag bits", token_bits()).c_str() : "not set") +
         (inflight_limit_ ? strprintf(", sends in flight bounded to %zu, no injection", inflight_limit_) : "");
}

void Transport::nap(double seconds, const std::function<bool()>* ready) {
  if (ready && (*ready)()) return;
  const timespec ts = to_timespec(seconds);
  nanosleep(&ts, nullptr);
}

bool Transport::post_recv_from(int src, const iovec*, void**, size_t, OpContext*, uint64_t) {
  fail(BSPK_ERR_INTERNAL, "a directed receive from pid %d on a transport without them", src);
}

void* Transport::alloc_memory(size_t len, size_t align) {
  void* base = nullptr;
  return posix_memalign(&base, align, len) == 0 ? base : nullptr;
}

void Transport::free_memory(void* base, size_t) noexcept { std::free(base); }

}  // namespace bspk::fabric
