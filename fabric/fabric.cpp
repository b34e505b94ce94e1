#include "fabric/fabric.h"

#include <bspk.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <algorithm>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "base/error.h"

namespace bspk::fabric {

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
  fi_info* hints = fi_allocinfo();
  if (!hints) fail(BSPK_ERR_NOMEM, "fi_allocinfo failed");
  hints->ep_attr->type = FI_EP_RDM;
  // FI_RMA and remote CQ data are requested now so that DSM copies (fi_writedata /
  // fi_read on frames) use the same endpoint.
  hints->caps = FI_TAGGED | FI_MSG | FI_RMA | FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
                FI_REMOTE_WRITE;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;  // every op context starts with fi_context2
  // Offer every registration mode we implement; the provider clears what it does
  // not need and we honour what it returns (see fabric.h).
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  hints->domain_attr->av_type = FI_AV_TABLE;
  hints->domain_attr->cq_data_size = 4;  // verbs gives 4 bytes; we never need more
  hints->fabric_attr->prov_name = strdup(cfg.provider.c_str());

  fi_info* list = nullptr;
  // shm names its shared-memory region after `node` (default: the pid).
  const bool named = cfg.provider == "shm" && !cfg.shm_name.empty();
  int rc = fi_getinfo(FI_VERSION(1, 17), named ? cfg.shm_name.c_str() : nullptr, nullptr,
                      named ? FI_SOURCE : 0, hints, &list);
  fi_freeinfo(hints);
  if (rc) {
    fail(BSPK_ERR_FABRIC,
         "fi_getinfo found no usable '%s' provider (reliable datagram endpoint with send/recv "
         "and RMA): %s. Check `fi_info -p \"%s\"`; choose another with --provider or "
         "FI_PROVIDER.",
         cfg.provider.c_str(), errstr(rc).c_str(), cfg.provider.c_str());
  }
  // Pick the entry: for network providers prefer the requested interface (domain
  // name), else the first IPv4 fabric; shm has a single entry.
  fi_info* pick = nullptr;
  for (fi_info* i = list; i; i = i->next) {
    if (!cfg.iface.empty()) {
      if (i->domain_attr && i->domain_attr->name && cfg.iface == i->domain_attr->name) {
        pick = i;
        break;
      }
    } else if (provider_ == "shm" || (is_ipv4_fabric(i) && !(cfg.off_host && is_loopback(i)))) {
      pick = i;
      break;
    }
  }
  if (!pick && !cfg.iface.empty()) {
    std::string seen;
    for (fi_info* i = list; i; i = i->next)
      if (i->domain_attr && i->domain_attr->name) seen += std::string(" ") + i->domain_attr->name;
    fi_freeinfo(list);
    fail(BSPK_ERR_FABRIC, "provider '%s' has no interface '%s' (available:%s)",
         cfg.provider.c_str(), cfg.iface.c_str(), seen.c_str());
  }
  if (!pick) pick = list;
  info_ = fi_dupinfo(pick);
  fi_freeinfo(list);
  if (!info_) fail(BSPK_ERR_NOMEM, "fi_dupinfo failed");

  mr_mode_ = info_->domain_attr->mr_mode;
  virt_addr_ = (mr_mode_ & FI_MR_VIRT_ADDR) != 0;
  inject_size_ = info_->tx_attr->inject_size;
  max_msg_size_ = info_->ep_attr->max_msg_size;
  cq_data_size_ = info_->domain_attr->cq_data_size;
  iov_limit_ = std::min(info_->tx_attr->iov_limit, info_->rx_attr->iov_limit);
  tx_size_ = info_->tx_attr->size;
  rx_size_ = info_->rx_attr->size;
  domain_name_ = info_->domain_attr->name ? info_->domain_attr->name : "";
  if (iov_limit_ < 2)
    fail(BSPK_ERR_FABRIC, "provider '%s' supports %zu iovecs per message; BSPk needs 2",
         provider_.c_str(), iov_limit_);

  if ((rc = fi_fabric(info_->fabric_attr, &fabric_, nullptr))) fab_fail("fi_fabric", rc);
  if ((rc = fi_domain(fabric_, info_, &domain_, nullptr))) fab_fail("fi_domain", rc);

  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_DATA;
  cq_attr.size = tx_size_ + rx_size_;
  // Block on a file descriptor where the provider has one (tcp, verbs). shm
  // (1.17) refuses FI_WAIT_FD with -FI_ENOSYS, and its FI_WAIT_UNSPEC sread is
  // a sched_yield loop that ignores the time-out: there we open the CQ without
  // a wait object and the engine backs off by itself (see sync/engine.cpp).
  cq_attr.wait_obj = FI_WAIT_FD;
  rc = fi_cq_open(domain_, &cq_attr, &cq_, nullptr);
  if (rc) {
    cq_attr.wait_obj = FI_WAIT_NONE;
    can_block_ = false;
    if ((rc = fi_cq_open(domain_, &cq_attr, &cq_, nullptr))) fab_fail("fi_cq_open", rc);
  }

  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  av_attr.count = static_cast<size_t>(cfg.nprocs);
  if ((rc = fi_av_open(domain_, &av_attr, &av_, nullptr))) fab_fail("fi_av_open", rc);

  if ((rc = fi_endpoint(domain_, info_, &ep_, nullptr))) fab_fail("fi_endpoint", rc);
  if ((rc = fi_ep_bind(ep_, &av_->fid, 0))) fab_fail("fi_ep_bind", rc, "(address vector)");
  // Selective completion: only operations posted with FI_COMPLETION report
  // (all of ours except small injected sends, which need no bookkeeping).
  if ((rc = fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)))
    fab_fail("fi_ep_bind", rc, "(completion queue)");
  if ((rc = fi_enable(ep_))) fab_fail("fi_enable", rc);
}

void Endpoint::close_endpoint() noexcept {
  if (ep_) fi_close(&ep_->fid);
  ep_ = nullptr;
}

Endpoint::~Endpoint() {
  close_endpoint();
  if (av_) fi_close(&av_->fid);
  if (cq_) fi_close(&cq_->fid);
  if (domain_) fi_close(&domain_->fid);
  if (fabric_) fi_close(&fabric_->fid);
  if (info_) fi_freeinfo(info_);
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
}

MemoryRegion Endpoint::register_memory(void* base, size_t len) {
  MemoryRegion m;
  uint64_t access = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
  int rc = fi_mr_reg(domain_, base, len, access, 0, next_key_++, 0, &m.mr, nullptr);
  if (rc) fab_fail("fi_mr_reg", rc, strprintf("(%zu bytes)", len));
  m.desc = fi_mr_desc(m.mr);
  m.key = fi_mr_key(m.mr);
  if (m.key == FI_KEY_NOTAVAIL) fail(BSPK_ERR_FABRIC, "fi_mr_key returned FI_KEY_NOTAVAIL");
  m.base = reinterpret_cast<uintptr_t>(base);
  m.len = len;
  return m;
}

void Endpoint::deregister(MemoryRegion& m) noexcept {
  if (m.mr) fi_close(&m.mr->fid);
  m.mr = nullptr;
}

static_assert(sizeof(OpContext) >= sizeof(fi_context2), "OpContext must hold libfabric's FI_CONTEXT2 space");

bool Endpoint::post_recv(const iovec* iov, void** desc, size_t count, OpContext* ctx, uint64_t tag) {
  fi_msg_tagged msg{};
  msg.msg_iov = iov;
  msg.desc = desc;
  msg.iov_count = count;
  msg.addr = FI_ADDR_UNSPEC;
  msg.tag = tag;
  msg.ignore = 0;
  msg.context = ctx;
  ssize_t rc = fi_trecvmsg(ep_, &msg, FI_COMPLETION);
  if (rc && rc != -FI_EAGAIN) fab_fail("fi_trecvmsg", rc);
  return rc == 0;
}

bool Endpoint::send_tagged(int dest, const iovec* iov, void** desc, size_t count, void* context,
                           uint64_t tag, uint64_t flags) {
  fi_msg_tagged msg{};
  msg.msg_iov = iov;
  msg.desc = desc;
  msg.iov_count = count;
  msg.addr = addrs_.at(static_cast<size_t>(dest));
  msg.tag = tag;
  msg.context = context;
  ssize_t rc = fi_tsendmsg(ep_, &msg, flags);
  if (rc && rc != -FI_EAGAIN)
    fab_fail(flags & FI_INJECT ? "fi_tsendmsg(FI_INJECT)" : "fi_tsendmsg", rc, strprintf("to pid %d", dest));
  return rc == 0;
}

bool Endpoint::post_send(int dest, const iovec* iov, void** desc, size_t count, OpContext* ctx,
                         uint64_t tag) {
  return send_tagged(dest, iov, desc, count, ctx, tag, FI_COMPLETION);
}

bool Endpoint::post_read(int src, void* local, size_t len, void* desc, uint64_t raddr, uint64_t key,
                         OpContext* ctx) {
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
  return rc == 0;
}

bool Endpoint::inject(int dest, const iovec* iov, void** desc, size_t count, uint64_t tag) {
  return send_tagged(dest, iov, desc, count, nullptr, tag, FI_INJECT);
}

namespace {
ssize_t read_error(fid_cq* cq, CompletionError* err) {
  fi_cq_err_entry e{};
  ssize_t rc = fi_cq_readerr(cq, &e, 0);
  if (rc < 0) {
    if (rc == -FI_EAGAIN) return 0;
    fab_fail("fi_cq_readerr", rc);
  }
  err->context = static_cast<OpContext*>(e.op_context);
  err->canceled = e.err == FI_ECANCELED;
  char buf[256];
  const char* s = fi_cq_strerror(cq, e.prov_errno, e.err_data, buf, sizeof buf);
  err->message = strprintf("%s (%s)", fi_strerror(e.err), s ? s : "");
  return -1;
}

constexpr size_t kCqBatch = 16;  // completions read per fi_cq_read

// libfabric's completion entries as opaque Completions. Entries are ours only
// (FI_SELECTIVE_COMPLETION: injected sends report nothing).
ssize_t to_completions(const fi_cq_data_entry* e, ssize_t n, Completion* out) {
  ssize_t k = 0;
  for (ssize_t i = 0; i < n; ++i) {
    Completion& c = out[k];
    c.context = static_cast<OpContext*>(e[i].op_context);
    c.len = e[i].len;
    if (e[i].flags & FI_RECV) c.kind = CompletionKind::Received;
    else if (e[i].flags & FI_READ) c.kind = CompletionKind::Read;
    else if (e[i].flags & FI_SEND) c.kind = CompletionKind::Sent;
    else continue;
    ++k;
  }
  return k;
}
}  // namespace

ssize_t Endpoint::poll(Completion* out, size_t n, CompletionError* err) {
  fi_cq_data_entry e[kCqBatch];
  ssize_t rc = fi_cq_read(cq_, e, std::min(n, kCqBatch));
  if (rc == -FI_EAGAIN || rc == -EINTR) return 0;
  if (rc == -FI_EAVAIL) return read_error(cq_, err);
  if (rc < 0) fab_fail("fi_cq_read", rc);
  return to_completions(e, rc, out);
}

ssize_t Endpoint::wait(Completion* out, size_t n, int timeout_ms, CompletionError* err) {
  if (!can_block_) return poll(out, n, err);
  fi_cq_data_entry e[kCqBatch];
  ssize_t rc = fi_cq_sread(cq_, e, std::min(n, kCqBatch), nullptr, timeout_ms);
  if (rc == -FI_EAGAIN || rc == -EINTR || rc == -FI_ETIMEDOUT) return 0;
  if (rc == -FI_EAVAIL) return read_error(cq_, err);
  if (rc < 0) fab_fail("fi_cq_sread", rc);
  return to_completions(e, rc, out);
}

std::string Endpoint::describe() const {
  std::string modes;
  if (mr_mode_ & FI_MR_LOCAL) modes += "LOCAL|";
  if (mr_mode_ & FI_MR_VIRT_ADDR) modes += "VIRT_ADDR|";
  if (mr_mode_ & FI_MR_ALLOCATED) modes += "ALLOCATED|";
  if (mr_mode_ & FI_MR_PROV_KEY) modes += "PROV_KEY|";
  if (modes.empty()) modes = "none (offset addressing)";
  else modes.pop_back();
  return strprintf("provider=%s domain=%s mr_mode=%s inject=%zu cq_data=%zu iov=%zu tx=%zu rx=%zu%s",
                   provider_.c_str(), domain_name_.c_str(), modes.c_str(), inject_size_,
                   cq_data_size_, iov_limit_, tx_size_, rx_size_,
                   can_block_ ? " wait=fd" : " wait=backoff (no CQ wait object)");
}

}  // namespace bspk::fabric
