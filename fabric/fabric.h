// fabric/fabric.h -- the only part of BSPk that calls libfabric.
//
// One reliable-datagram endpoint (FI_EP_RDM) per process, one completion queue
// for both directions, and an address vector of type FI_AV_TABLE filled in
// rank order, so that the fi_addr_t of process r is r.
//
// Memory registration follows one strict code path whatever the provider
// (libfabric fi_mr(3)): we always register (one region per frame slab), always
// pass fi_mr_desc() on every data call (needed by FI_MR_LOCAL), always send the
// fi_mr_key() value to peers (needed by FI_MR_PROV_KEY; harmless otherwise; we
// still pass a unique requested_key), register only allocated memory
// (FI_MR_ALLOCATED), and address remote memory as base + offset when the
// provider returns FI_MR_VIRT_ADDR and as an offset into the region otherwise.
// On this project's test machine tcp;ofi_rxm returns no mr_mode bits (offset
// addressing) and shm returns FI_MR_VIRT_ADDR, so both branches run in CI.
//
// Progress is manual on tcp, shm and verbs: completions (and the provider's
// own protocol work) happen only inside poll()/wait().
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bspk::fabric {

// Map a user-facing provider name to libfabric's: "tcp" -> "tcp;ofi_rxm",
// "verbs" -> "verbs;ofi_rxm", "shm" -> "shm"; full names pass through.
// Throws BSPK_ERR_ARG for "sockets" (deprecated; it lost messages in our
// tests) and for names BSPk has not been validated on.
std::string canonical_provider(const std::string& name);

// True if fi_getinfo offers an RDM endpoint of this provider on this host
// (used to prefer verbs over tcp when InfiniBand is present).
bool provider_available(const std::string& canonical_name);

struct Config {
  std::string provider;  // canonical name, see canonical_provider()
  std::string iface;     // tcp/verbs: domain (interface) to use, "" = first IPv4 one
  std::string shm_name;  // shm: endpoint name (its /dev/shm region); "" = libfabric's (the pid),
                         // which collides with regions left by killed processes once pids are reused
  int nprocs = 1;        // size of the address vector
  bool off_host = false; // peers on other hosts: never pick a loopback interface by default
};

// One registered memory region (a frame slab or a small header pool).
struct MemoryRegion {
  fid_mr* mr = nullptr;
  void* desc = nullptr;  // fi_mr_desc(): pass with every local buffer in it
  uint64_t key = 0;      // fi_mr_key(): what a peer needs to address it
  uintptr_t base = 0;    // local start address
  size_t len = 0;
};

// Result of poll()/wait() when the CQ reports an error completion.
struct CompletionError {
  void* context = nullptr;  // op_context of the failed operation
  int err = 0;              // positive FI_* errno
  std::string message;      // fi_cq_strerror() text
};

class Endpoint {
 public:
  // fi_getinfo + fi_fabric + fi_domain + fi_cq_open + fi_av_open + fi_endpoint,
  // bind, fi_enable. Throws bspk::Error(BSPK_ERR_FABRIC) naming the failing call.
  explicit Endpoint(const Config& cfg);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // Close the endpoint (cancelling posted receives) but keep the domain, so
  // that memory regions can still be deregistered afterwards. Idempotent.
  void close_endpoint() noexcept;

  // This endpoint's address (fi_getname), to be published through the bootstrap.
  std::vector<uint8_t> name() const;

  // fi_av_insert of every process's address in rank order; checks that the
  // resulting fi_addr_t of rank r is r.
  void insert_peers(const std::vector<std::vector<uint8_t>>& names);

  // fi_mr_reg with every access flag BSPk uses (send, recv, read, write, remote
  // read/write). Throws BSPK_ERR_FABRIC.
  MemoryRegion register_memory(void* base, size_t len);
  void deregister(MemoryRegion& mr) noexcept;

  // All BSPk traffic is tagged (FI_TAGGED) with a receive class, so that small
  // messages land in small buffers and large ones in whole frames.

  // Post a receive of up to count iovecs from any source for messages tagged
  // `tag` (fi_trecvmsg). Returns 0, or -FI_EAGAIN when the receive queue is
  // full. Other errors throw.
  ssize_t post_recv(const iovec* iov, void** desc, size_t count, void* context, uint64_t tag);

  // Post a send tagged `tag` to rank dest (fi_tsendmsg, FI_COMPLETION). Returns
  // 0 or -FI_EAGAIN (transmit queue full: progress and retry). Other errors throw.
  ssize_t post_send(int dest, const iovec* iov, void** desc, size_t count, void* context, uint64_t tag);

  // One-sided read of len bytes at remote address raddr (see remote_addr())
  // under key from rank src into local (registered, desc). FI_COMPLETION.
  // Returns 0 or -FI_EAGAIN.
  ssize_t post_read(int src, void* local, size_t len, void* desc, uint64_t raddr, uint64_t key,
                    void* context);

  // fi_sendmsg with FI_INJECT and no FI_COMPLETION: the buffers are reusable
  // at once and no completion is generated (the CQ is bound with
  // FI_SELECTIVE_COMPLETION). Total length <= inject_size(). Returns 0 or -FI_EAGAIN.
  ssize_t inject_msg(int dest, const iovec* iov, void** desc, size_t count, uint64_t tag);

  // Non-blocking fi_cq_read of up to n entries. Returns the count read (>= 0),
  // or -1 with *err filled when an error completion was read.
  ssize_t poll(fi_cq_data_entry* out, size_t n, CompletionError* err);

  // Like poll(), but blocks on the CQ's file descriptor (fi_cq_sread) for up
  // to timeout_ms when nothing is ready. Without a wait object (can_block()
  // false, e.g. shm) it is poll(): the caller backs off itself.
  ssize_t wait(fi_cq_data_entry* out, size_t n, int timeout_ms, CompletionError* err);

  // Remote address of byte `offset` of a peer's region whose base (as the peer
  // reported it) is remote_base: base + offset under FI_MR_VIRT_ADDR, else offset.
  uint64_t remote_addr(uint64_t remote_base, uint64_t offset) const {
    return ((mr_mode_ & FI_MR_VIRT_ADDR) ? remote_base : 0) + offset;
  }

  uint64_t mr_mode() const { return mr_mode_; }
  size_t inject_size() const { return inject_size_; }
  size_t max_msg_size() const { return max_msg_size_; }
  size_t cq_data_size() const { return cq_data_size_; }
  size_t iov_limit() const { return iov_limit_; }
  size_t tx_size() const { return tx_size_; }
  size_t rx_size() const { return rx_size_; }
  const std::string& provider() const { return provider_; }
  const std::string& domain_name() const { return domain_name_; }
  bool can_block() const { return can_block_; }

  // Human-readable summary for BSPK_VERBOSE / bench headers.
  std::string describe() const;

 private:
  ssize_t send_tagged(int dest, const iovec* iov, void** desc, size_t count, void* context, uint64_t tag,
                      uint64_t flags);

  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_av* av_ = nullptr;
  fid_ep* ep_ = nullptr;
  std::vector<fi_addr_t> addrs_;
  uint64_t mr_mode_ = 0;
  uint64_t next_key_ = 1;
  size_t inject_size_ = 0, max_msg_size_ = 0, cq_data_size_ = 0, iov_limit_ = 1;
  size_t tx_size_ = 0, rx_size_ = 0;
  std::string provider_, domain_name_;
  bool can_block_ = true;
};

// Text of a libfabric error code (fi_strerror of its absolute value).
std::string errstr(ssize_t rc);

}  // namespace bspk::fabric
