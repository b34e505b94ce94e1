// fabric/fabric.h -- the only part of BSPk that calls libfabric.
//
// Layers above see a Transport: post a tagged send or receive of two iovecs,
// a one-sided read, an injected send, and read back opaque completions
// {context, sent | received | read, length}. No libfabric type, flag or call
// is visible above this folder (this header includes no <rdma/...> header);
// the one implementation over libfabric is Endpoint, and tests substitute an
// in-process fake (tests/fake_fabric.h) to drive the engine deterministically.
//
// Endpoint: one reliable-datagram endpoint (FI_EP_RDM) per process, one
// completion queue for both directions, and an address vector of type
// FI_AV_TABLE filled in rank order, so that the fi_addr_t of process r is r.
//
// Any provider that offers what fabric/caps.h lists is used, whatever its name;
// one that lacks something is refused with a message naming the capability.
//
// Memory registration follows one strict code path whatever the provider
// (libfabric fi_mr(3)): we always register (one region per frame slab), always
// pass fi_mr_desc() on every data call (needed by FI_MR_LOCAL), always send the
// fi_mr_key() value to peers (needed by FI_MR_PROV_KEY; otherwise we pass an
// unpredictable requested_key, issue 13), register only allocated memory
// (FI_MR_ALLOCATED), bind each region to the endpoint and enable it when the
// provider returns FI_MR_ENDPOINT, and address remote memory as base + offset
// when the provider returns FI_MR_VIRT_ADDR and as an offset into the region
// otherwise. On this project's test machine tcp;ofi_rxm, udp;ofi_rxd and net
// return no mr_mode bits (offset addressing) and shm returns FI_MR_VIRT_ADDR,
// so both addressing branches run in CI; no provider here needs FI_MR_LOCAL,
// FI_MR_PROV_KEY or FI_MR_ENDPOINT (verbs needs the first two).
//
// Progress: completions (and the provider's own protocol work, where its
// progress is manual, as on tcp, shm, udp;ofi_rxd and verbs) happen only
// inside poll()/wait().
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

// libfabric's handles, opaque here (fabric.cpp includes <rdma/...>).
struct fi_info;
struct fid_fabric;
struct fid_domain;
struct fid_cq;
struct fid_av;
struct fid_ep;
struct fid_mr;

namespace bspk::fabric {

// Where the provider keeps its per-operation state while an operation is in
// flight (libfabric's FI_CONTEXT / FI_CONTEXT2 mode: the context pointer must
// point at 64 bytes the provider may use). Every operation's context object
// starts with one; the same pointer comes back in its Completion.
struct alignas(8) OpContext {
  unsigned char provider_space[64];
};

enum class CompletionKind : uint8_t {
  Sent,      // a send posted with post_send left (its buffers are reusable)
  Received,  // a posted receive was filled (`len` bytes in its iovecs)
  Read,      // a post_read finished (the local buffer holds the data)
};

// Trivial (no member initializers): the engine's wait loop declares an array
// of 16 on every poll, which a waiting process spins on; poll() fills the
// first n it returns.
struct Completion {
  OpContext* context;  // the context the operation was posted with
  CompletionKind kind;
  size_t len;          // Received: bytes written into the iovecs
};

// Result of poll()/wait() when the completion queue reports an error.
struct CompletionError {
  OpContext* context = nullptr;  // the failed operation's context (may be null)
  bool canceled = false;         // cancelled at close (FI_ECANCELED): not an error
  std::string message;           // the provider's text (fi_cq_strerror)
};

// One registered memory region (a frame slab or a header pool).
struct MemoryRegion {
  fid_mr* mr = nullptr;
  void* desc = nullptr;  // fi_mr_desc(): pass with every local buffer in it
  uint64_t key = 0;      // fi_mr_key(): what a peer needs to address it
  uintptr_t base = 0;    // local start address
  size_t len = 0;
};

// What the engine needs of a fabric. All calls are made by one thread.
class Transport {
 public:
  virtual ~Transport() = default;

  // Memory for a frame slab: len bytes aligned to align (a power of two),
  // from wherever this transport moves data best, released with
  // free_memory(base, len). Private memory here (posix_memalign);
  // LocalTransport with pulls hands out host-shared memory that the other
  // processes of the host can map (fabric/local.h), the way UCX's memory
  // domains allocate memory their transport can reach (uct_md_mem_alloc).
  // Returns nullptr when out of memory.
  virtual void* alloc_memory(size_t len, size_t align);
  virtual void free_memory(void* base, size_t len) noexcept;
  // Memory for a contiguous run of frames (bspk_malloc_contiguous): as
  // alloc_memory, for memory that comes and goes with its region while the
  // job runs, released with free_run_memory(base, len). Private memory here;
  // LocalTransport carves it from a host-shared arena. Returns nullptr when
  // out of memory.
  virtual void* alloc_run_memory(size_t len, size_t align) { return Transport::alloc_memory(len, align); }
  virtual void free_run_memory(void* base, size_t len) noexcept { Transport::free_memory(base, len); }

  // Register [base, base+len) for local and remote access. Throws
  // bspk::Error(BSPK_ERR_FABRIC).
  virtual MemoryRegion register_memory(void* base, size_t len) = 0;
  virtual void deregister(MemoryRegion& mr) noexcept = 0;

  // All BSPk traffic is tagged with a receive class, so that small messages
  // land in small buffers and large ones in whole frames.

  // Post a receive of up to `count` iovecs from any source for messages tagged
  // `tag`. Returns false when the receive queue is full (progress and retry).
  // Other errors throw BSPK_ERR_FABRIC.
  virtual bool post_recv(const iovec* iov, void** desc, size_t count, OpContext* ctx, uint64_t tag) = 0;

  // Post a receive like post_recv, matching only messages from rank src
  // (FI_DIRECTED_RECV). Messages from src with this tag are matched in the
  // order src sent them; one that arrived before its receive waits in the
  // provider (for a rendezvous message, only its announcement does). Only on
  // transports with eager_limit() > 0; elsewhere BSPK_ERR_INTERNAL.
  virtual bool post_recv_from(int src, const iovec* iov, void** desc, size_t count, OpContext* ctx, uint64_t tag);

  // Post a send tagged `tag` to rank dest; a Sent completion reports it.
  // Returns false when the transmit queue is full (progress and retry).
  virtual bool post_send(int dest, const iovec* iov, void** desc, size_t count, OpContext* ctx,
                         uint64_t tag) = 0;

  // Send at once, with no completion: the buffers are reusable on return.
  // Total length <= inject_size(). Returns false when the queue is full.
  virtual bool inject(int dest, const iovec* iov, void** desc, size_t count, uint64_t tag) = 0;

  // One-sided read of len bytes at remote address raddr (see remote_addr())
  // under key from rank src into local (registered, desc); a Read completion
  // reports it. Returns false when the queue is full.
  virtual bool post_read(int src, void* local, size_t len, void* desc, uint64_t raddr, uint64_t key,
                         OpContext* ctx) = 0;

  // Read up to n completions without blocking. Returns the count (>= 0), or -1
  // with *err filled when the operation at the head of the queue failed.
  virtual ssize_t poll(Completion* out, size_t n, CompletionError* err) = 0;

  // True while this transport has operations of its own in flight (posted
  // sends and reads not yet completed, bounce buffers in use) that need
  // poll() to progress. A wrapper that sees nothing else can be waiting
  // (LocalTransport) may then skip polling it. Conservatively true here.
  virtual bool busy() const { return true; }

  // Whether poll() may find an arrival now: a cheap look for a caller that
  // waits for something else first (the engine's shared-memory count board)
  // and would take arrivals in while it waits if there are any. False only
  // when it is sure there are none. Conservatively true here.
  virtual bool may_have_arrivals() const { return true; }

  // Like poll(), but blocks up to timeout_ms when nothing is ready. Without a
  // wait object (can_block() false, e.g. shm) it is poll(): the caller backs
  // off itself.
  virtual ssize_t wait(Completion* out, size_t n, int timeout_ms, CompletionError* err) = 0;

  // Arrivals handed to the caller as poll() finds them, without a posted
  // receive and a Completion, by a transport that sees a message's bytes in
  // place (LocalTransport: ring messages, read out of the ring's cells).
  // take(src, pieces, count, len): the message from pid src, len bytes, is
  // the concatenation of pieces[0..count), valid during the call only.
  // Returns true if it took the message (the transport frees its cells),
  // false to have it delivered the usual way, into a posted receive of its
  // tag. take() must not call poll(); a poll() from inside it delivers no
  // such arrival. It must not throw.
  class ArrivalSink {
   public:
    virtual bool take(int src, const iovec* pieces, size_t count, size_t len) = 0;

   protected:
    ~ArrivalSink() = default;
  };
  // Set (or clear, nullptr) the sink for the messages of this transport's
  // arrival tag (LocalTransport: the ring tag). Default: no such arrivals,
  // nothing to set.
  virtual void set_arrival_sink(ArrivalSink* sink) { (void)sink; }

  // An idle caller backing off (no wait object, or nothing to block on):
  // sleep up to `seconds`, less when this transport learns of new work.
  // `ready` (may be null): the caller's own condition, looked at once more
  // after the sleeper has made itself known to wakers and before it sleeps
  // (no sleep if true), so that news a peer published and announced with
  // wake_local() just before is not slept through. It may throw (the nap
  // ends). Default: nanosleep. LocalTransport wakes the sleeper as soon as a
  // process of its host pushes into one of its rings or pull queues, sends it
  // a message through the provider, or calls wake_local().
  virtual void nap(double seconds, const std::function<bool()>* ready);
  // Wake every process of this host napping in nap(): for news that is no
  // message (the engine's shared-memory count board). Default: nothing.
  virtual void wake_local() {}
  // Called by a process that waits with nothing to poll (and a CPU of its
  // own): do part of a transfer a peer is working on that this process can
  // do as well. LocalTransport: copy chunks of a pulled message of ours into
  // its receiver's buffer while the receiver copies the rest (local.h,
  // "Assisted pulls"). True when it did some work. Default: nothing.
  virtual bool assist() { return false; }

  // Remote address of byte `offset` of a peer's region whose base (as the peer
  // reported it) is remote_base: base + offset under FI_MR_VIRT_ADDR, else offset.
  uint64_t remote_addr(uint64_t remote_base, uint64_t offset) const {
    return (virt_addr_ ? remote_base : 0) + offset;
  }
  bool virt_addr() const { return virt_addr_; }
  size_t inject_size() const { return inject_size_; }
  bool can_block() const { return can_block_; }
  // Largest message (all iovecs) the provider sends eagerly, when messages
  // above it pay a rendezvous per iovec and post_recv_from works: then the
  // engine sends a large message's header as a message of its own and the
  // payload as one iovec (sync/wire.h, kFlagBodyFollows). 0: never split.
  size_t eager_limit() const { return eager_limit_; }
  // With eager_limit() > 0: the fewest frames of a message that is split
  // (rxm: 1, every message; net: kNetWholeFramesMax + 1, fabric.cpp).
  uint32_t split_min_frames() const { return split_min_frames_; }
  // Most iovecs one send or receive may carry (the provider's tx and rx
  // iov_limit, the smaller): a split body of several frames uses up to this many.
  size_t iov_limit() const { return iov_limit_; }

 protected:
  bool virt_addr_ = false;   // remote addresses are virtual addresses (FI_MR_VIRT_ADDR)
  size_t inject_size_ = 0;   // largest inject() (header + payload)
  bool can_block_ = true;    // wait() blocks on a file descriptor
  size_t eager_limit_ = 0;   // see eager_limit()
  uint32_t split_min_frames_ = 1;  // see split_min_frames()
  size_t iov_limit_ = 1;     // see iov_limit()
};

// How to open the endpoint (fabric/select.h computes it).
// Which large messages an Endpoint sends as their header, then their payload
// alone into a receive the receiver posts for it (FI_DIRECTED_RECV; sync/wire.h
// kTagBody), per provider (fabric/select.cpp):
//   None             every message whole (shm, and providers without a row);
//   PastRxmEagerLimit every payload past rxm's eager limit (FI_OFI_RXM_EAGER_LIMIT,
//                    16 KiB): one rendezvous read instead of one per iovec
//                    (tcp;ofi_rxm, verbs;ofi_rxm, any ;ofi_rxm);
//   SeveralFrames    only messages of more than a few frames (net: sent one
//                    message per frame they stalled; up to 4 frames, 1 MiB,
//                    are faster whole).
enum class SplitPolicy { None, PastRxmEagerLimit, SeveralFrames };

struct Config {
  std::string provider;   // libfabric provider name, exactly as fi_getinfo lists it ("tcp;ofi_rxm", "shm", "net", ...)
  std::string iface;      // network providers: domain (interface) to use, "" = first IPv4 one
  std::string node_name;  // passed to fi_getinfo as `node` (FI_SOURCE) when not empty: the shm provider
                          // names its endpoint's /dev/shm region after it; libfabric's default (the pid)
                          // collides with regions left by killed processes once pids are reused
  int nprocs = 1;        // size of the address vector
  bool off_host = false; // peers on other hosts: never pick a loopback interface by default
  SplitPolicy split = SplitPolicy::None;  // which large messages travel as header + directed-receive
                                          // body (eager_limit(), split_min_frames()); the provider's,
                                          // from fabric/select.cpp's table (split_policy())
  bool split_header = true;  // BSPK_SPLIT_HEADER: false turns `split` off
  size_t split_iov = 2;  // with split_header: ask for this many iovecs per send and receive (a body of that
                         // many frames), falling back to 2 where the provider offers fewer
  bool cq_wait_fd = true;  // open the completion queue with a file-descriptor wait object where the provider
                           // has one (then wait() blocks in fi_cq_sread); false: no wait object (wait()
                           // polls; the caller backs off). On tcp;ofi_rxm 1.17 a CQ with a wait object
                           // adds about 2 us to every small message's one-way time (bench/pingpong:
                           // 1.30x raw libfabric's, against 1.11x without)
  size_t bounce_size = 0;  // inject() of up to this many bytes (all iovecs) where the provider's own
                          // inject_size is smaller: copied into a registered bounce buffer of the endpoint
                          // and sent from there (the caller's buffers are reusable on return, as for a
                          // true inject; the send's completion only frees the bounce buffer). 0: off.
                          // On tcp;ofi_rxm 1.17 a posted send completes about one network latency after
                          // fi_tsendmsg (7 us here, raw libfabric), and a sync waits for its sends
  bool bound_inflight = false;  // keep at most min(tx_size, rx_size) / (16 nprocs) (>= 8) sends and reads
                                // in flight, and inject nothing (an injected send holds provider
                                // resources we cannot see)
};

class Endpoint final : public Transport {
 public:
  // fi_getinfo + fi_fabric + fi_domain + fi_cq_open + fi_av_open + fi_endpoint,
  // bind, fi_enable. Throws bspk::Error(BSPK_ERR_FABRIC) naming the failing call.
  explicit Endpoint(const Config& cfg);
  ~Endpoint() override;
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // Close the endpoint (cancelling posted receives) but keep the domain, so
  // that memory regions can still be deregistered afterwards. Idempotent.
  void close_endpoint() noexcept;

  // The job's fabric token (issue 13). Every tag this endpoint sends carries it
  // and every receive it posts matches only tags that carry it, so a message
  // from outside the job (from a stranger who reached the endpoint's address)
  // never matches a receive and never reaches the runtime: libfabric keeps it
  // as an unexpected message until the endpoint closes. Tags: bits 0..7 the
  // receive class (sync/wire.h), bits 8 up to the provider's tag width
  // (mem_tag_format: 55 or 56 bits of token on the providers here) the token.
  // Every process of the job must set the same token (pid 0 draws it, the
  // bootstrap hands it out), before its first receive is posted. Not
  // encryption: a listener on the wire sees it (README, Security).
  void set_job_token(uint64_t token);
  int token_bits() const { return tag_width_ > kClassBits ? tag_width_ - kClassBits : 0; }
  static constexpr int kClassBits = 8;

  // This endpoint's address (fi_getname), to be published through the bootstrap.
  std::vector<uint8_t> name() const;

  // fi_av_insert of every process's address in rank order; checks that the
  // resulting fi_addr_t of rank r is r.
  void insert_peers(const std::vector<std::vector<uint8_t>>& names);

  // fi_mr_reg with the access BSPk's operations use (send, recv, read, remote
  // read; remote write only for FI_OFI_RXM_USE_RNDV_WRITE) and a random key
  // where the provider takes the requested one (not FI_MR_PROV_KEY).
  MemoryRegion register_memory(void* base, size_t len) override;
  void deregister(MemoryRegion& mr) noexcept override;

  bool post_recv(const iovec* iov, void** desc, size_t count, OpContext* ctx, uint64_t tag) override;  // fi_trecvmsg
  bool post_recv_from(int src, const iovec* iov, void** desc, size_t count, OpContext* ctx,
                      uint64_t tag) override;  // fi_trecvmsg from addrs[src]
  bool post_send(int dest, const iovec* iov, void** desc, size_t count, OpContext* ctx,
                 uint64_t tag) override;  // fi_tsendmsg(FI_COMPLETION)
  bool inject(int dest, const iovec* iov, void** desc, size_t count,
              uint64_t tag) override;  // fi_tsendmsg(FI_INJECT), no completion (FI_SELECTIVE_COMPLETION)
  bool post_read(int src, void* local, size_t len, void* desc, uint64_t raddr, uint64_t key,
                 OpContext* ctx) override;  // fi_readmsg(FI_COMPLETION)
  ssize_t poll(Completion* out, size_t n, CompletionError* err) override;              // fi_cq_read
  ssize_t wait(Completion* out, size_t n, int timeout_ms, CompletionError* err) override;  // fi_cq_sread
  // Posted sends or reads not completed yet, or bounce buffers in flight.
  bool busy() const override { return inflight_ > 0 || (bounce_mem_ && bounce_free_.size() < kBounces); }

  uint64_t mr_mode() const { return mr_mode_; }
  size_t max_msg_size() const { return max_msg_size_; }
  bool control_progress_manual() const { return control_manual_; }  // FI_PROGRESS_MANUAL for connections
  size_t cq_data_size() const { return cq_data_size_; }
  size_t tx_size() const { return tx_size_; }
  size_t rx_size() const { return rx_size_; }
  const std::string& provider() const { return provider_; }
  const std::string& domain_name() const { return domain_name_; }

  // Human-readable summary for BSPK_VERBOSE / bench headers.
  std::string describe() const;

 private:
  ssize_t to_completions(const void* entries, ssize_t n, Completion* out);
  bool recv_tagged(uint64_t src, const iovec* iov, void** desc, size_t count, OpContext* ctx, uint64_t tag);  // src: an fi_addr_t
  ssize_t read_error(CompletionError* err);

  bool send_tagged(int dest, const iovec* iov, void** desc, size_t count, void* context, uint64_t tag,
                   uint64_t flags);

  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_av* av_ = nullptr;
  fid_ep* ep_ = nullptr;
  std::vector<uint64_t> addrs_;  // fi_addr_t by rank
  uint64_t mr_mode_ = 0;
  size_t mr_key_size_ = sizeof(uint64_t);  // bytes of a requested key the provider takes
  bool remote_write_ = false;  // regions take remote writes (FI_OFI_RXM_USE_RNDV_WRITE)
  int tag_width_ = 64;         // tag bits the provider matches (mem_tag_format)
  uint64_t tag_key_ = 0;       // the job token, shifted into place (set_job_token)
  size_t max_msg_size_ = 0, cq_data_size_ = 0;
  size_t tx_size_ = 0, rx_size_ = 0;
  bool control_manual_ = false, data_manual_ = false;  // FI_PROGRESS_MANUAL
  bool rma_event_ = false, delivery_complete_ = false;  // reported only: BSPk uses neither
  // Bounded operations in flight (Config::bound_inflight).
  size_t inflight_ = 0, inflight_limit_ = 0;
  // Bounce buffers for inject() past the provider's inject_size
  // (Config::bounce_size): kBounces buffers of bounce_len_ bytes in one
  // registered block, set up at the first use; a context per buffer.
  static constexpr size_t kBounces = 256;
  size_t native_inject_ = 0;  // the provider's inject_size
  size_t bounce_len_ = 0;     // bytes per bounce buffer (0: no bounce buffers)
  char* bounce_mem_ = nullptr;
  MemoryRegion bounce_mr_;
  std::vector<OpContext> bounce_ctx_;
  std::vector<uint32_t> bounce_free_;
  bool bounce_of(const OpContext* c, size_t* index) const;
  void setup_bounces();
  void release_bounces() noexcept;
  std::string provider_, domain_name_;
  std::string shm_name_;  // Config::node_name: our shm region's name prefix in /dev/shm
  int shm_lock_fd_ = -1;  // the shared flock on that file (fabric/shm_names.h)
};

// Text of a libfabric error code (fi_strerror of its absolute value).
std::string errstr(ssize_t rc);

}  // namespace bspk::fabric
