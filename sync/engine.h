// sync/engine.h -- supersteps, lazy barriers and the progress loop [BSPk §5].
//
// The engine owns the endpoint's traffic: it keeps receive slots posted (a
// header slot plus a whole free frame each), issues every send, and counts
// arrivals per superstep. Upper layers (mp/, later dsm/) hand it frames to send
// and get incoming frames through a handler; they report each complete
// incoming message with message_arrived().
//
// A process leaves bspk_sync() for superstep s when
//   (1) the number of messages sent to it in s is known, and that many have
//       arrived (each header carries its superstep; messages for later
//       supersteps are held, never counted early [RBS §5]);
//   (2) every send it issued in s has completed locally.
// The count in (1) comes from bspk_expect (no traffic), or from a sum of
// per-destination vectors over a binomial tree rooted at pid 0: reduce up,
// broadcast down, 2*ceil(log2 p) rounds (bspk_will_send, or the actual send
// counts when nothing was declared).
//
// Flow control: a process never sends a message tagged with superstep t to a
// peer it cannot prove has reached t - W + 1 (W = BSPK_MAX_AHEAD, default 16).
// Proof comes free from the peer's own messages; failing that, one StepQuery is
// sent and the peer answers with a StepNotice when it gets there. So a producer
// that only sends (expect(0)) cannot run more than W supersteps ahead of its
// consumer, and the consumer holds at most W supersteps of early frames.
//
// Waiting spins briefly (BSPK_SPIN_US, default 200 us: rxm's segmented and
// rendezvous protocols need the sender to keep progressing) and then blocks on
// the completion queue's wait object. With more local processes than CPUs it
// does not spin at all, leaving the CPU to the processes it waits for.
#pragma once

#include <rdma/fabric.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "base/stats.h"
#include "boot/bootstrap.h"
#include "comem/pool.h"
#include "fabric/fabric.h"
#include "fabric/wire.h"

namespace bspk::sync {

enum class Mode : uint8_t { None = 0, Expect = 1, WillSend = 2 };

// Slots in per-superstep rings: covers supersteps [current, current + W] plus
// slack, rounded up to a power of two so that indexing is a mask.
inline size_t ring_size(uint32_t max_ahead) {
  size_t n = 1;
  while (n < size_t{max_ahead} + 3) n <<= 1;
  return n;
}

struct Options {
  uint32_t max_ahead = 16;    // W: supersteps a sender may run ahead of a receiver
  double timeout_s = 60;      // no-progress time-out in bspk_sync
  double spin_s = 200e-6;     // busy-poll before blocking (0 when processes outnumber CPUs)
  uint32_t rx_depth = 32;        // receive slots (whole frames) kept posted
  uint32_t small_rx_depth = 64;  // receive slots for small messages (4 KiB buffers)
  // BSPK_MAX_AHEAD, BSPK_SYNC_TIMEOUT, BSPK_SPIN_US, BSPK_RX_DEPTH, BSPK_SMALL_RX_DEPTH. local_procs:
  // processes of the job on this host; host_cpus: CPUs they may use here (0: this
  // process's affinity). No busy spinning if the processes outnumber the CPUs.
  static Options from_env(int local_procs, int host_cpus = 0);
};

// An in-flight send. libfabric needs the context to start with fi_context2.
struct SendOp {
  fi_context2 ctx;
  wire::Header* hdr = nullptr;  // from the header pool
  uintptr_t ctrl_frame = 0;     // frame holding a control payload (freed at completion)
  bool ctrl_small = false;      // ctrl_frame is a small buffer
  uint64_t tag = wire::kTagLarge;  // receive class of the message
  uint32_t region = 0;          // comem region the payload belongs to (0: none)
  uint32_t step = 0;
  int dest = 0;
  bool counted = false;         // part of this superstep's own sends (sync waits for it)
  bool* done = nullptr;         // set when a one-sided read completes
  iovec iov[2];
  void* desc[2];
  size_t iov_count = 1;
};

struct RecvSlot {
  fi_context2 ctx;
  wire::Header* hdr = nullptr;
  uintptr_t frame = 0;
  bool small = false;  // a small buffer for messages tagged kTagSmall
};

class Engine {
 public:
  // Handler for Data frames. Returns true if it kept the frame (the engine then
  // posts a fresh one), false if the frame can be reposted as is. small: the
  // frame is a small buffer (from the small pool), not a whole frame.
  using DataHandler =
      std::function<bool(const wire::Header&, uintptr_t frame, size_t payload, bool small)>;
  using SendDone = std::function<void(uint32_t region)>;
  using Advance = std::function<void(uint32_t new_step)>;
  // Called when superstep s is complete (all its arrivals counted, own sends
  // done), before the step number moves on: the DSM layer applies the copies
  // of s there [issue 3 rule 1]. May wait (wait_until) and throw.
  using Boundary = std::function<void(uint32_t s)>;

  Engine(int pid, int nprocs, fabric::Endpoint& ep, comem::FramePool& frames,
         comem::FramePool& small, boot::Bootstrap& boot, Stats& stats, const Options& opt);
  ~Engine();

  int pid() const { return pid_; }
  int nprocs() const { return nprocs_; }
  uint32_t step() const { return step_; }
  const Options& options() const { return opt_; }

  void set_data_handler(DataHandler h) { on_data_ = std::move(h); }
  void set_send_done(SendDone f) { on_send_done_ = std::move(f); }
  void set_advance(Advance f) { on_advance_ = std::move(f); }
  // Handler for the DSM kinds (wire::is_dsm_kind); same contract as DataHandler.
  void set_dsm_handler(DataHandler h) { on_dsm_ = std::move(h); }
  void set_boundary(Boundary f) { on_boundary_ = std::move(f); }

  // Receive class of a Data message: small only if the whole message fits a
  // small buffer (a piece of a multi-frame message always goes to a frame).
  static uint64_t class_tag(const wire::Header& h, size_t len) {
    return h.nframes <= 1 && len <= wire::kSmallPayload ? wire::kTagSmall : wire::kTagLarge;
  }

  // Post the initial receive slots. Call once after the peers are inserted.
  void start();

  // Queue one Data frame for dest (header fields other than magic/kind/step/src
  // are the caller's). Returns true if the send still reads the payload (then
  // the SendDone callback runs with `region` at completion); false if it was
  // injected (header + payload <= the provider's inject size: copied by the
  // provider at once, nothing to wait for).
  bool send_data(int dest, const wire::Header& h, void* payload, size_t len, void* desc,
                 uint32_t region) {
    return send_frame(dest, wire::Kind::Data, h, payload, len, desc, region, class_tag(h, len));
  }
  // The same for any frame-carrying kind, with an explicit receive class (tag).
  // The send counts as one of this superstep's own sends (the sync waits for it).
  bool send_frame(int dest, wire::Kind kind, const wire::Header& h, void* payload, size_t len,
                  void* desc, uint32_t region, uint64_t tag);
  // A control message of `kind` tagged with the current superstep carrying
  // `len` bytes (copied into a buffer of its own). Not counted, not flow
  // controlled (control messages are handled whatever the receiver's superstep).
  void send_control(int dest, wire::Kind kind, const void* bytes, size_t len);
  // Own sends tagged s not yet complete.
  uint64_t outstanding(uint32_t s) { return state(s).outstanding; }
  // Progress until ready() holds (ready may throw: it is where callers check
  // for errors). Throws errors found while progressing; fails with BSPK_ERR_TIMEOUT after
  // BSPK_SYNC_TIMEOUT seconds without any arrival or completion (the message
  // says what(): what was being waited for), or BSPK_ERR_PEER if the launcher
  // is gone.
  void wait_until(const std::function<bool()>& ready, const std::function<std::string()>& what);
  // Count one whole message sent to dest this superstep (for counted mode and
  // to check bspk_will_send).
  void count_sent(int dest) {
    if (sent_[static_cast<size_t>(dest)]++ == 0) sent_used_.push_back(dest);
  }

  // Report that a complete message tagged `step` from `src` arrived.
  void message_arrived(uint32_t step, int src);

  // Declarations for the current superstep (bspk_expect / bspk_will_send).
  void expect(int64_t nmsgs);
  void will_send(const int* nmsgs);

  // End the current superstep (bspk_sync). finalizing: the collective end of
  // the run (counted-mode exchange flagged as finalize).
  void sync(bool finalizing = false);

  // A barrier over the fabric, made while every process keeps progressing (so
  // provider first-contact handshakes complete). all_pairs: every process says
  // hello to every other (opens every connection; used on shm, whose
  // first-contact path needs the peer to progress); else a dissemination
  // barrier, ceil(log2 p) rounds. Not tied to a superstep.
  void fabric_barrier(bool all_pairs);

  // Blocking one-sided read of the 8-byte word at byte `offset` of rank src's
  // registered region (remote base and key as src published them). Used at
  // start-up to prove the registration path (keys, descriptors, and the
  // FI_MR_VIRT_ADDR / offset addressing branch) before any data moves.
  uint64_t read_word(int src, uint64_t remote_base, uint64_t offset, uint64_t key);

  // Drain every outstanding send (used before closing).
  void quiesce();

  // Make progress without blocking.
  void progress();
  // progress() only if sends of ours are in flight or queued (called from
  // bspk_send, so long messages move while the program computes; a send that
  // was injected leaves nothing to do).
  void progress_if_busy() {
    if (!backlog_.empty() || op_pool_.size() != all_ops_.size()) progress();
  }

  // An error found while progressing (e.g. more arrivals than declared);
  // recorded here, printed by the API layer, thrown by the next sync/expect.
  void raise_async(int code, const std::string& msg);
  void throw_pending();

 private:
  struct StepState {
    uint32_t step = UINT32_MAX;
    uint64_t arrived = 0;      // complete data messages tagged `step`
    uint64_t outstanding = 0;  // own counted sends tagged `step` not yet complete
    // reduction (will_send / counted / finalize)
    bool joined = false;          // this process contributed
    bool sent_up = false;
    int children_got = 0;
    uint32_t child_mask = 0;      // which children (by tree round) contributed
    std::vector<uint64_t> sum;    // element-wise sum so far (sized on first use)
    uint32_t kinds = 0;           // wire::kSync* seen in the subtree
    int32_t first[3] = {-1, -1, -1};  // lowest pid that used will_send / counted / finalize
    bool have_result = false;
    uint64_t result = 0;          // messages this process will receive
  };

  StepState& state(uint32_t s);
  std::vector<uint64_t>& sum_of(StepState& st);
  SendOp* new_op();
  void free_op(SendOp* op);
  wire::Header* new_header();
  void post(SendOp* op);
  bool try_post(SendOp* op);
  void retry_backlog();
  void flush_blocked(int dest);
  SendOp* ctrl_op(int dest, wire::Kind kind, uint32_t step);
  void attach_payload(SendOp* op, const void* bytes, size_t len);
  // A control message; vec/nvec: optional payload of counts (copied into a buffer).
  void send_ctrl(int dest, wire::Kind kind, uint32_t step, const uint32_t* inl, const uint64_t* vec,
                 size_t nvec, bool flow_controlled);
  void complete_op(SendOp* op);
  // Flow control: may a message tagged `step` go to dest now?
  bool window_open(int dest, uint32_t step) const {
    return dest == pid_ || step < known_[static_cast<size_t>(dest)] + opt_.max_ahead;
  }
  void post_slot(RecvSlot* slot);
  void flush_reposts();
  void dispatch(const fi_cq_data_entry& e);
  void on_recv(RecvSlot* slot, size_t len);
  void on_coll(const wire::Header& h, uintptr_t frame, bool down);
  void coll_try_advance(uint32_t s);
  void coll_result(uint32_t s, const uint64_t* sum, uint32_t kinds, const int32_t* first);
  void note_peer_step(int src, uint32_t step);
  void handle_error(const fabric::CompletionError& err);
  bool wait_once(double spin_until, int block_ms);
  void backoff(double idle_s);
  void advance();
  void finish_step(uint32_t s) {
    if (on_boundary_) on_boundary_(s);
    advance();
  }
  std::string waiting_for(const StepState& st) const;
  std::string kinds_text(uint32_t kinds, const int32_t* first) const;

  // binomial tree rooted at 0
  int parent() const { return pid_ == 0 ? -1 : (pid_ & (pid_ - 1)); }
  std::vector<int> children() const;

  int pid_, nprocs_;
  fabric::Endpoint& ep_;
  comem::FramePool& frames_;
  comem::FramePool& small_;   // small receive buffers (kSmallPayload bytes), registered
  comem::FramePool headers_;  // 64-byte wire headers, registered
  boot::Bootstrap& boot_;
  Stats& stats_;
  Options opt_;

  uint32_t step_ = 0;
  Mode mode_ = Mode::None;         // declaration in the current superstep
  int64_t declared_expect_ = 0;
  std::vector<uint64_t> declared_vec_;
  std::vector<uint64_t> sent_;     // messages sent per destination this superstep
  std::vector<int> sent_used_;     // destinations with sent_ != 0 (reset in O(touched))
  std::vector<StepState> ring_;

  // flow control
  std::vector<uint32_t> known_;          // highest superstep each peer is known to have reached
  std::vector<uint32_t> queried_;        // step asked for in our last StepQuery (0 = none)
  std::vector<uint32_t> notify_at_;      // peer asked to hear when we reach this step (0 = no)
  std::vector<int> waiters_;             // peers with notify_at_ set
  std::vector<std::deque<SendOp*>> blocked_;  // sends held back per destination
  size_t nblocked_ = 0;
  std::deque<SendOp*> backlog_;          // sends refused with -FI_EAGAIN

  std::vector<RecvSlot> slots_;
  std::vector<RecvSlot*> repost_;  // consumed slots to post again before the next wait
  std::vector<SendOp*> op_pool_;
  std::vector<SendOp*> all_ops_;
  std::vector<int> children_;
  std::vector<uint32_t> hello_got_;  // Hello messages received per barrier round
  uint32_t barrier_epoch_ = 0;       // barriers completed (rounds are numbered per epoch)
  uint64_t progress_events_ = 0;   // bumps on every arrival/coll event (for time-outs)
  int pending_code_ = 0;
  std::string pending_msg_;

  DataHandler on_data_;
  DataHandler on_dsm_;
  Boundary on_boundary_;
  SendDone on_send_done_;
  Advance on_advance_;
};

}  // namespace bspk::sync
