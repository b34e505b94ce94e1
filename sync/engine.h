// sync/engine.h -- supersteps, lazy barriers and the progress loop [BSPk §5].
//
// The engine owns the endpoint's traffic: it keeps receive slots posted (a
// header slot plus a whole free frame each), issues every send, and counts
// arrivals per superstep. Layers above (mp/, dsm/, later ones) register a
// handler per message kind (on()) and hooks for the superstep boundary; they
// hand the engine frames to send and report each complete incoming message
// with message_arrived().
//
// A process leaves bspk_sync() for superstep s when
//   (1) the number of messages sent to it in s is known, and that many have
//       arrived (each header carries its superstep; messages for later
//       supersteps are held, never counted early [RBS §5]);
//   (2) every send it issued in s has completed locally.
// The count in (1) comes from bspk_expect (no traffic), or from a sum of
// per-destination vectors over a binomial tree rooted at pid 0 (sync/tree.h):
// reduce up, broadcast down, 2*ceil(log2 p) rounds (bspk_will_send, or the
// actual send counts when nothing was declared).
//
// Flow control: a process never sends a message tagged with superstep t to a
// peer it cannot prove has reached t - W + 1 (W = BSPK_MAX_AHEAD, default 16).
// Proof comes free from the peer's own messages; failing that, one StepQuery is
// sent and the peer answers with a StepNotice when it gets there. So a producer
// that only sends (expect(0)) cannot run more than W supersteps ahead of its
// consumer, and the consumer holds at most W supersteps of early frames.
//
// Waiting spins briefly (BSPK_SPIN_US, default 200 us: rxm's segmented and
// rendezvous protocols need the sender to keep progressing), then yields the
// CPU for BSPK_YIELD_MS (100 ms; 2 ms oversubscribed) and naps 50 us to 1 ms (sync/wait.cpp), or with BSPK_CQ_WAIT=fd
// blocks on the completion queue's wait object. With more local processes
// than CPUs it does not spin at all, leaving the CPU to the processes it
// waits for.
//
// The implementation is split by concern, one file each: tx.cpp (send
// operations, injection, backlog), rx.cpp (receive slots, validation, dispatch
// through the kind table), flow.cpp (the supersteps-ahead window), count.cpp
// (declarations and the count exchange), wait.cpp (progress, waiting,
// time-outs, asynchronous errors), startup.cpp (fabric barrier, registration
// probe, shutdown drain), engine.cpp (the superstep itself: sync, advance).
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/stats.h"
#include "boot/bootstrap.h"
#include "comem/pool.h"
#include "fabric/fabric.h"
#include "sync/ops.h"
#include "sync/options.h"
#include "sync/step_ring.h"
#include "sync/wire.h"

namespace bspk::sync {

class Tree;
class Board;
class Exchange;

enum class Mode : uint8_t { None = 0, Expect = 1, WillSend = 2 };

class Engine : private fabric::Transport::ArrivalSink {
 public:
  // An arrival, handed to the layer that registered its kind.
  struct Incoming {
    const wire::Header& h;
    uintptr_t buf;  // the payload: a whole frame, or a small buffer
    size_t len;     // payload bytes
    bool small;     // buf comes from the small pool
  };
  // Returns true if it kept buf (the engine then posts a fresh one), false if
  // buf can be reposted as is.
  using Handler = std::function<bool(const Incoming&)>;

  Engine(int pid, int nprocs, fabric::Transport& ep, comem::FramePool& frames, comem::FramePool& small,
         boot::Bootstrap& boot, Stats& stats, const Options& opt);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  int pid() const { return pid_; }
  int nprocs() const { return nprocs_; }
  uint32_t step() const { return step_; }
  Mode declared() const { return mode_; }  // this superstep's declaration so far
  // bspk_withdraw: this superstep's declaration (bspk_expect's m, or
  // bspk_will_send's vector into v when not null) taken back: the superstep
  // is undeclared again. Returns what it was.
  Mode withdraw(int64_t* m, int* v);
  const Options& options() const { return opt_; }

  // ---- registration by the layers above (engine.cpp)

  // The handler for messages of `kind` (one per kind; a second registration
  // is an internal error). Arrivals of a kind nobody registered are reported
  // (BSPK_ERR_FABRIC) and dropped.
  void on(wire::Kind kind, Handler h);
  // Superstep s is complete (all its arrivals counted, own sends done); runs
  // before the step number moves on: the DSM layer applies the copies of s
  // there [BSPk §3]. May wait (wait_until) and throw. In registration order.
  void on_boundary(std::function<void(uint32_t s)> f) { boundary_.push_back(std::move(f)); }
  // The step number moved on to new_step (mp turns the arrivals of the
  // superstep just ended into the inbox).
  void on_advance(std::function<void(uint32_t new_step)> f) { advance_.push_back(std::move(f)); }
  // A send reading region `region`'s frames completed.
  void on_send_done(std::function<void(uint32_t region)> f) { send_done_ = std::move(f); }

  // ---- sending (tx.cpp)

  // Receive class of a message: small only if the whole message fits a small
  // buffer (a piece of a multi-frame message always goes to a frame).
  static uint64_t class_tag(const wire::Header& h, size_t len) {
    return h.nframes <= 1 && len <= wire::kSmallPayload ? wire::kTagSmall : wire::kTagLarge;
  }
  // Queue one frame-carrying message of `kind` for dest, tagged with the
  // current superstep (header fields other than magic/kind/step/src/payload
  // are the caller's), with receive class `tag`. It counts as one of this
  // superstep's own sends (the sync waits for it). Returns true if the send
  // still reads the payload (then the send-done hook runs with `region` at
  // completion); false if it was injected (header + payload <= the provider's
  // inject size: copied by the provider at once, nothing to wait for) or sent
  // to this process itself (copied at once, send_self in tx.cpp).
  // `pool`: the pool whose frames hold the payload (null: none, no
  // registration); its registration descriptor is looked up only when the
  // payload goes to the fabric by reference, not for an injected or ring
  // message (shm, p = 2, 16 one-word messages per superstep: the lookup on
  // every send cost 3.0 against 2.46 us per superstep).
  bool send_frame(int dest, wire::Kind kind, const wire::Header& h, void* payload, size_t len,
                  const comem::FramePool* pool, uint32_t region, uint64_t tag);
  // After the last send_frame of a message: send what send_frame held back.
  // Over transports that split large messages (eager_limit() > 0), the split
  // frames of one message to one destination are held so that up to
  // BSPK_SPLIT_FRAMES of them travel as one body (sync/wire.h, body groups);
  // send_frame returns true only for the first frame of each group (its one
  // send reads them all). Every sender of frames calls this before it returns
  // to the program; sync() also does.
  void flush_split();
  // Carried counts (BSPK_COUNT_CARRY, wire::kFlagCount). A counted superstep
  // exchanging counts directly costs each process a count message to every
  // other one; over TCP each is a segment of its own (about 5 us of kernel
  // time on loopback here, as much as the data message beside it). So, when
  // the previous superstep was counted, the last single-frame message of a
  // kind named here (mp's data) to each process, small or of the large
  // receive class (not one split into header and body), is held back --
  // until the next send to that process, or bspk_sync -- and, if the
  // superstep is then counted too, carries this process's count for that
  // receiver; a count message goes only to processes that got no such
  // message. Held messages are posted at bspk_sync whatever the superstep's
  // kind, so nothing waits for them longer than for the sender's sync.
  // Holding large ones too measured faster even when the program computes
  // between its send and its sync (tcp p = 2, one message each way, counted,
  // held and not alternated in one process: 8 KiB 23.1 -> 14.1 us per
  // superstep, 64 KiB 43.2 -> 35.1, 200 KB 69.7 -> 57.5; with 100 us of
  // computation after the send 126.8 -> 118.3, 147.9 -> 137.7, 176.1 ->
  // 171.6): over tcp a message moves when the engine polls, in the sync
  // either way, and the separate count was a segment more.
  void carry_counts_on(wire::Kind kind) { carry_kind_[kind] = true; }
  // Most frames one split body carries (BSPK_SPLIT_FRAMES, capped by the
  // transport's iov_limit()).
  uint32_t body_frames() const { return body_frames_; }
  // Bytes of the frames and small buffers posted for receiving now (held by
  // the engine, no data in them yet): O(receive slots); for BSPK_PROFILE.
  uint64_t posted_bytes() const;
  // Frame receive slots in use (posted or about to be): BSPK_RX_DEPTH's
  // adaptive depth (sync/rx.cpp).
  uint32_t rx_frames() const { return large_active_; }
  // A control message of `kind` tagged with the current superstep carrying
  // `len` bytes (copied into a buffer of its own). Not counted, not flow
  // controlled (control messages are handled whatever the receiver's superstep).
  void send_control(int dest, wire::Kind kind, const void* bytes, size_t len);
  // A control message tagged with superstep `step`: inl (4 words, may be null)
  // in the header, nvec counts from vec (may be null) as payload (Header::
  // nelems = nvec). Without vec, the header alone, `word` in Header::nelems
  // (64 bytes: injectable on tcp;ofi_rxm). Flow controlled if asked (tree
  // messages are: they belong to a superstep).
  void send_ctrl(int dest, wire::Kind kind, uint32_t step, const uint32_t* inl, const uint64_t* vec,
                 size_t nvec, bool flow_controlled, uint64_t word = 0);
  // Own sends tagged s not yet complete.
  uint64_t outstanding(uint32_t s) { return state(s).outstanding; }
  // Count one whole message sent to dest this superstep (for counted mode and
  // to check bspk_will_send).
  void count_sent(int dest) {
    if (sent_[static_cast<size_t>(dest)]++ == 0) sent_used_.push_back(dest);
  }
  // progress() only if sends of ours are in flight or queued (called from
  // bspk_send, so long messages move while the program computes; a send that
  // was injected leaves nothing to do).
  void progress_if_busy() {
    if (!backlog_.empty() || op_pool_.size() != all_ops_.size()) progress();
  }

  // ---- receiving (rx.cpp)

  // Post the initial receive slots. Call once after the peers are inserted.
  void start();
  // Count exchange through shared memory instead of the tree (sync/board.h);
  // before start(), on every process or none.
  void use_board(std::unique_ptr<Board> board);
  Board* board() const { return board_.get(); }
  // The processes bound to this process's CPU when it is oversubscribed and
  // on the board (else none), read from the board at the first call: after
  // bspk_init's barriers, when every process has published its CPU.
  const std::vector<int>& cpu_mates();
  // Report that a complete message tagged `step` from `src` arrived.
  void message_arrived(uint32_t step, int src);

  // ---- the superstep (count.cpp, engine.cpp)

  // Declarations for the current superstep (bspk_expect / bspk_will_send).
  void expect(int64_t nmsgs);
  void will_send(const int* nmsgs);
  // End the current superstep (bspk_sync). finalizing: the collective end of
  // the run (counted-mode exchange flagged as finalize).
  void sync(bool finalizing = false);
  // bspk_sync_allgather's exchange on the board (gather.cpp, sync/board.h),
  // in a superstep s in which nothing was declared or sent, in two halves
  // around the sync that ends s:
  //   gather_publish: publishes the block (<= Board::kBlockMax bytes) that
  //     is the concatenation of the iovcnt pieces at mine, and
  //     declares bspk_expect(0), so that the sync waits for nothing and its
  //     work overlaps the blocks' way to the others;
  //   gather_wait (in s + 1): waits until every process's block of s is
  //     there (on an error it ends the gather and throws); then
  //     gather_block(j, &size) gives process j's block (this one's included)
  //     until gather_end;
  //   gather_end: ends this process's part in the gather (after reading the
  //     blocks; also when the sync between the halves failed), so that its
  //     gathers stay numbered as the others'.
  // Needs board(). Errors: BSPK_ERR_MODE (a process used bspk_sync or
  // bspk_expect in s instead), BSPK_ERR_TIMEOUT, BSPK_ERR_PEER.
  void gather_publish(const iovec* mine, int iovcnt);
  void gather_wait();
  const unsigned char* gather_block(int j, size_t* nbytes) const;
  void gather_end();

  // ---- progress and waiting (wait.cpp)

  // Make progress without blocking.
  void progress();
  // Progress until ready() holds (ready may throw: it is where callers check
  // for errors). Throws errors found while progressing; fails with
  // BSPK_ERR_TIMEOUT after BSPK_SYNC_TIMEOUT seconds without any arrival or
  // completion during which no other process was computing in this
  // superstep or an earlier one (Bootstrap::computing_peer; the message says
  // what(): what was being waited for), or BSPK_ERR_PEER if the launcher is
  // gone. Publishes this process as waiting (ProcState::InSync) meanwhile.
  // now: the caller's reading of now_s() when it has one (saves a clock read), else 0.
  // hold: where it holds, an oversubscribed process that would yield its CPU
  // polls on instead, for at most kHoldMaxS of the wait (backoff, wait.cpp).
  // shared: the wait is for other processes to join an exchange (a count
  // exchange, finalize, a gather), not for what this process itself
  // declared: its time-out comes kSharedWaitGraceS later, so that a process
  // whose own wait names the cause (a bspk_expect larger than what arrives)
  // reports it first and ends the job with that message. While another
  // process has left BSPk after an error (Bootstrap::failed_peer) the
  // time-out waits one more BSPK_SYNC_TIMEOUT for that process's exit.
  void wait_until(const std::function<bool()>& ready, const std::function<std::string()>& what, double now = 0,
                  const std::function<bool()>* hold = nullptr, bool shared = false);
  static constexpr double kSharedWaitGraceS = 1.0;
  // An error found while progressing (e.g. more arrivals than declared);
  // recorded here, printed by the API layer, thrown by the next sync/expect.
  // The first one's code is returned; later ones, until it is thrown, are
  // appended to its message ("; also: ..."), so none is lost. `waits`: the
  // pool limit met by arrivals, which wait (unposted) until regions are
  // freed, so nothing is lost and the job can go on; every other error
  // found while progressing lost or refused something and is thrown [over]
  // (base/error.h), a bad_alloc or BSPK_ERR_NOMEM in a handler included.
  void raise_async(int code, const std::string& msg, bool waits = false);
  // Throws the recorded error, if any (inline: a waiting process checks on every poll).
  void throw_pending() {
    if (pending_code_) throw_pending_error();
  }
  [[noreturn]] void throw_pending_error();
  // Something happened that a waiting process should count as progress.
  void note_progress() { ++progress_events_; }

  // ---- one-sided reads of program memory (reads.cpp)
  //
  // Beyond the paper, for layers above whose data live in ordinary program
  // memory (BSPlib's bsp_hpput / bsp_hpget, bspk.h "Program memory"): the
  // memory is registered with the fabric like a frame slab (the same
  // register_memory path, so the same mr_mode handling), a peer reads it with
  // one fabric read straight into its own registered memory, and nothing is
  // copied by the runtime. Reads are not messages: they are not counted by
  // the superstep's declarations or count exchange and do not delay sync();
  // wait_reads() is their only completion point.

  // Register [base, base+len) (len > 0). Returns a handle (> 0); *key is
  // the fabric key peers name it with. Throws BSPK_ERR_FABRIC.
  uint64_t register_user(void* base, size_t len, uint64_t* key);
  // Release a handle from register_user: BSPK_ERR_ARG if unknown.
  void deregister_user(uint64_t handle);
  // Start a read of len bytes at byte `offset` of the memory that pid src
  // registered at remote_base under key, into local [dst, dst+len), which
  // must lie in the registration `local`. Pieces of at most kReadPiece bytes;
  // waits (progressing) while the transport's queue is full. src == pid():
  // one memcpy (counted in bytes_copied). Throws BSPK_ERR_ARG (bad handle,
  // dst outside it), BSPK_ERR_FABRIC.
  void read_user(int src, uint64_t remote_base, uint64_t key, uint64_t offset, uint64_t local, void* dst,
                 size_t len);
  // Progress until every read started by read_user has completed. Throws
  // BSPK_ERR_FABRIC (a read failed: the message names its source pid),
  // BSPK_ERR_TIMEOUT (BSPK_SYNC_TIMEOUT without progress), BSPK_ERR_PEER.
  void wait_reads();
  static constexpr size_t kReadPiece = size_t{4} << 20;

  // ---- start-up and shutdown (startup.cpp)

  // A barrier over the fabric, made while every process keeps progressing (so
  // provider first-contact handshakes complete). all_pairs: every process says
  // hello to every other (opens every connection, for providers whose first
  // contact needs the peer to progress); else a dissemination barrier,
  // ceil(log2 p) rounds. Not tied to a superstep.
  void fabric_barrier(bool all_pairs);
  // Blocking one-sided read of the 8-byte word at byte `offset` of rank src's
  // registered region (remote base and key as src published them). Used at
  // start-up to prove the registration path (keys, descriptors, and the
  // virtual-address / offset addressing branch) before any data moves.
  uint64_t read_word(int src, uint64_t remote_base, uint64_t offset, uint64_t key);
  // Drain every outstanding send (used before closing).
  void quiesce();

 private:
  struct StepState {
    uint64_t arrived = 0;      // complete data messages tagged with this superstep
    uint64_t outstanding = 0;  // own counted sends tagged with it not yet complete
    // count exchange result (will_send / counted / finalize)
    bool have_result = false;
    uint64_t result = 0;          // messages this process will receive
    uint32_t kinds = 0;           // wire::kSync* that took part
    int32_t first[3] = {-1, -1, -1};  // lowest pid that used will_send / counted / finalize
    void reset() { *this = StepState{}; }
  };
  StepState& state(uint32_t s) { return ring_.at(s, step_); }

  // tx.cpp
  SendOp* new_op();
  void free_op(SendOp* op);
  wire::Header* new_header();
  void stamp(wire::Header& h, wire::Kind kind, uint32_t step) const;
  void post(SendOp* op);
  bool try_post(SendOp* op);
  void post_or_queue(SendOp* op) {
    if (!backlog_.empty() || !try_post(op)) backlog_.push_back(op);
  }
  void retry_backlog();
  SendOp* header_op(int dest, uint32_t step, const wire::Header& h);
  SendOp* data_op(int dest, uint32_t region, uint64_t tag);
  void post_data(SendOp* op);
  // A message of `bytes` (header included) to dest, tagged `step`, may be
  // injected: small enough, nothing queued ahead of it, and (if flow
  // controlled) its window open.
  bool can_inject(int dest, uint32_t step, size_t bytes, bool flow_controlled = true) const {
    return bytes <= ep_.inject_size() && backlog_.empty() && (!flow_controlled || window_open(dest, step));
  }
  SendOp* ctrl_op(int dest, wire::Kind kind, uint32_t step);
  void attach_payload(SendOp* op, const void* bytes, size_t len);
  void complete_op(SendOp* op);
  // rx.cpp
  void post_slot(RecvSlot* slot);
  void activate_large(uint32_t n);
  void flush_reposts();
  void dispatch(const fabric::Completion& c);
  void dispatch_one(const fabric::Completion& c);
  void on_recv(RecvSlot* slot, size_t len);
  // The checks every arrival but a body gets before its handler, and its
  // sender's superstep noted: false (reported) for a malformed one.
  bool admit(const wire::Header& h, size_t len, bool announces);
  // Transport::ArrivalSink: a small message read out of the transport (on
  // one host, out of its ring cells) into sink_buf_ and handed to its
  // kind's handler, without a receive slot (rx.cpp).
  bool take(int src, const iovec* pieces, size_t count, size_t len) override;
  bool deliver(const wire::Header& h, uintptr_t buf, bool small);
  void on_body_header(const wire::Header& h);
  void take_body_header(const wire::Header& h);
  bool fill_body(RecvSlot* slot);
  void on_body(RecvSlot* slot, size_t len);
  void post_body(RecvSlot* slot);
  void release_body(RecvSlot* slot);
  bool send_split(int dest, const wire::Header& hh, void* payload, size_t len, void* desc, uint32_t region);
  void decide_split(int dest, uint32_t nframes);
  void send_self(const wire::Header& h, const void* payload, size_t len, uint64_t tag);
  bool deliver_self();
  // flow.cpp
  bool window_open(int dest, uint32_t step) const {
    return dest == pid_ || wire::step_before(step, known_[static_cast<size_t>(dest)] + opt_.max_ahead);
  }
  void hold_for_window(SendOp* op);
  void flush_blocked(int dest);
  void note_peer_step(int src, uint32_t step);
  void on_step_query(const wire::Header& h);
  void notify_waiters();
  std::string flow_text() const;
  // count.cpp
  void join_count_exchange(uint32_t s, bool finalizing);
  bool counts_complete(uint32_t s);
  // The count exchange goes through exchange_ (direct, halving), not the tree.
  bool count_rounds() const { return opt_.count_exchange != Options::Exchange::Tree; }
  bool board_complete(uint32_t s);
  bool admit_count(uint32_t s, int src, const std::array<uint32_t, 4>& meta);
  void count_result(uint32_t s, uint64_t mine, const std::array<uint32_t, 4>& meta);
  bool exchange_joined(uint32_t s);
  int exchange_got(uint32_t s);
  // The lowest pid that called bspk_finalize in superstep s among the count
  // contributions this process has for s so far (its result, or what arrived
  // of the exchange), -1 if none: for the reports of a finalize mismatch.
  int32_t finalizer_seen(uint32_t s);
  // Throws the report of pid j having left superstep s without joining its
  // count exchange (it used bspk_expect), or with `waiting` of j still
  // waiting there under bspk_expect (Board::waiting_under_expect, the
  // kNoticeExpectWaiting notice): a finalize mismatch when this process is
  // in bspk_finalize (finalizing_), mixed kinds otherwise.
  [[noreturn]] void fail_left_without_joining(uint32_t s, int j, bool waiting = false);
  // A declared wait for superstep s that is not done yet: now and then, the
  // two checks below.
  void expect_still_waiting(uint32_t s);
  // Under bspk_expect on the board, now and then while the wait goes on:
  // says so on the board, and throws if another process joined the count
  // exchange of superstep s (Board::joined_from).
  void check_expect_on_board(uint32_t s);
  // The same across hosts (tree and halving plans, where a process under
  // bspk_expect may receive nothing of the count exchange it does not join):
  // once its wait in superstep s has gone on for kExpectNoticeS, it tells the
  // processes that would wait for its count message (kStepNotice with
  // kNoticeExpectWaiting); one of them in that exchange reports the mix.
  void announce_expect_wait(uint32_t s);
  static constexpr double kExpectNoticeS = 0.25;
  uint32_t expect_polls_ = 0;         // counts_complete calls under bspk_expect (announce_expect_wait)
  uint32_t expect_wait_step_ = 0;     // superstep whose wait expect_wait_since_ times
  double expect_wait_since_ = 0;      // 0: not timing
  bool expect_announced_ = false;     // for expect_wait_step_
  bool expect_notice_ = false;        // a kNoticeExpectWaiting arrived: the latest one's superstep and sender
  uint32_t expect_notice_step_ = 0;
  int expect_notice_pid_ = -1;
  bool finalizing_ = false;  // the current sync is bspk_finalize's
  std::string waiting_for(uint32_t s);
  std::string kinds_text(uint32_t kinds, const int32_t* first) const;
  // startup.cpp
  void on_hello(const wire::Header& h);
  // wait.cpp
  void handle_error(const fabric::CompletionError& err);
  bool wait_once(double spin_until, int block_ms, double now = 0, const std::function<bool()>* ready = nullptr,
                 const std::function<bool()>* hold = nullptr);
  void backoff(double idle_s, const std::function<bool()>* ready, const std::function<bool()>* hold = nullptr);
  // Whether every process in cpu_mates() has arrived, by arrived(j): then
  // yielding this CPU could only hand it to a process waiting for the same
  // thing (backoff, wait.cpp).
  template <class F>
  bool mates_arrived(F arrived) {
    for (int j : cpu_mates())
      if (!arrived(j)) return false;
    return true;
  }
  // engine.cpp
  void advance();
  void finish_step(uint32_t s);

  int pid_, nprocs_;
  fabric::Transport& ep_;
  comem::FramePool& frames_;
  comem::FramePool& small_;   // small receive buffers (kSmallPayload bytes), registered
  comem::FramePool headers_;  // 64-byte wire headers, registered
  boot::Bootstrap& boot_;
  Stats& stats_;
  Options opt_;

  // the superstep
  uint32_t step_ = 0;
  StepRing<StepState> ring_;
  std::array<Handler, 256> handlers_;
  std::vector<std::function<void(uint32_t)>> boundary_, advance_;
  std::function<void(uint32_t)> send_done_;

  // declarations and the count exchange
  Mode mode_ = Mode::None;         // declaration in the current superstep
  int64_t declared_expect_ = 0;
  std::vector<uint64_t> declared_vec_;
  std::vector<uint64_t> sent_;     // messages sent per destination this superstep
  std::vector<int> sent_used_;     // destinations with sent_ != 0 (reset in O(touched))
  std::unique_ptr<Tree> counts_;   // the count exchange's tree
  std::unique_ptr<Exchange> exchange_; // or its rounds of messages (opt_.count_exchange: direct, halving)
  // Exchange: since when a source seen in a later superstep has sent no
  // count for this one (0: none); an error after kMixedGraceS.
  double suspect_since_ = 0;
  uint32_t joined_upto_ = 0;       // count exchanges joined: supersteps before joined_upto_ at most
  // Carried counts (carry_counts_on): the held message per destination (or
  // null), the destinations holding one, and per destination whether its
  // count went with its message in this superstep's exchange.
  bool carry_kind_[256] = {};
  bool carry_on_ = false;          // the job exchanges counts directly and BSPK_COUNT_CARRY is not off
  bool carry_now_ = false;         // hold messages in this superstep (the previous one was counted)
  std::vector<SendOp*> held_;
  std::vector<int> held_dests_;
  std::vector<uint8_t> carried_;
  // Post the held messages; with_counts: stamped with this superstep's counts.
  void release_held(bool with_counts);
  // A count that arrived on a data message (wire::kFlagCount): to the exchange.
  void on_carried_count(const wire::Header& h);
  static constexpr double kMixedGraceS = 1.0;
  static constexpr double kHoldMaxS = 100e-6;  // the longest a hold keeps a process from yielding
  std::vector<int> mates_;  // cpu_mates()
  bool mates_known_ = false;
  std::unique_ptr<Board> board_;   // or, all processes on one host, its shared-memory board
  uint32_t board_polls_ = 0;       // polls of the board in this wait (for the slow checks)
  bool gather_pending_ = false;    // gather_publish done, gather_wait not yet
  uint32_t gather_step_ = 0;       // the superstep it was published in

  // sending
  std::deque<SendOp*> backlog_;    // sends refused with "queue full"
  std::vector<SendOp*> op_pool_;
  std::vector<SendOp*> all_ops_;

  // receiving
  std::vector<RecvSlot> slots_;
  std::vector<RecvSlot*> repost_;  // consumed slots to post again before the next wait
  std::vector<RecvSlot*> starved_; // consumed slots with no buffer (pool at its limit), see flush_reposts
  // Frame slots in use (slots_[0, large_active_): posted, to repost or
  // starved; the rest wait unallocated) and posted now (see start()).
  uint32_t large_active_ = 0;
  uint32_t large_posted_ = 0;
  // Split large messages (sync/wire.h, kTagBody): body slots (stable
  // addresses: they are contexts), the free ones, and those announced but not
  // posted yet (no free frame), in arrival order: bodies are posted in the
  // order their headers came, so a directed receive matches its own body.
  std::deque<RecvSlot> body_slots_;
  std::vector<RecvSlot*> body_free_;
  std::deque<RecvSlot*> body_waiting_;
  // Headers may overtake each other on the way (on one host a header takes
  // the shared-memory ring, or the provider when the ring is full), bodies
  // never do (all through the provider, in the order sent). So every split
  // header carries its number from its sender to this receiver (Header::
  // reserved, 16 bits), and bodies are posted for in that order: the next
  // number expected from each sender, and the headers that came early.
  std::vector<uint16_t> split_next_;  // per destination: number of the next split header sent
  // Where the provider splits only messages of split_min_frames() or more
  // frames (net), a shorter one travels whole while the frames sent whole to
  // its destination in the superstep stay below that many (decide_split):
  bool split_cur_ = false;               // the decision for the message being sent
  std::vector<uint32_t> whole_frames_;   // per destination: frames of messages sent whole this superstep
  std::vector<uint16_t> body_next_;   // per source: number of the next split header to post for
  std::vector<std::vector<wire::Header>> body_early_;  // per source: headers that arrived ahead of their turn
  std::vector<RecvSlot*> body_open_;  // per source: the body group whose headers are coming in (or null)
  // Sending: the split frames held for one body (flush_split), all of one
  // message to one destination, and the most one body carries.
  struct SplitGroup {
    int dest = -1;
    uint32_t region = 0;
    uint32_t n = 0;
    wire::Header hdr[wire::kMaxBodyFrames];
    iovec iov[wire::kMaxBodyFrames];
    void* desc[wire::kMaxBodyFrames];
  } group_;
  uint32_t body_frames_ = 1;
  // Messages to this process itself, copied and waiting for the next progress
  // (send_self).
  struct SelfArrival {
    wire::Header h;
    uintptr_t buf;
    bool small;
  };
  std::vector<SelfArrival> self_;

  // flow control
  std::vector<uint32_t> known_;          // highest superstep each peer is known to have reached
  std::vector<uint32_t> queried_;        // step asked for in our last StepQuery (first_step: none)
  std::vector<uint32_t> notify_at_;      // peer asked to hear when we reach this step (if notify_set_)
  std::vector<char> notify_set_;
  std::vector<int> waiters_;             // peers with notify_at_ set
  std::vector<std::deque<SendOp*>> blocked_;  // sends held back per destination
  size_t nblocked_ = 0;

  // start-up barrier
  std::vector<uint32_t> hello_got_;  // Hello messages received per barrier round
  uint32_t barrier_epoch_ = 0;       // barriers completed (rounds are numbered per epoch)

  // one-sided reads of program memory (reads.cpp)
  std::unordered_map<uint64_t, fabric::MemoryRegion> user_mrs_;
  uint64_t next_user_mr_ = 1;
  uint64_t reads_in_flight_ = 0;

  // waiting and errors
  uint64_t progress_events_ = 0;   // bumps on every arrival/tree event (for time-outs)
  uintptr_t sink_buf_ = 0;         // the small buffer the next taken arrival lands in (take)
  uint64_t taken_ = 0;             // arrivals taken (take): progress that poll() does not count
  uint32_t syncs_ = 0;             // sync() calls (every 16th polls the fabric, see sync())
  int pending_code_ = 0;
  std::string pending_msg_;
  unsigned pending_more_ = 0;  // later errors appended to pending_msg_ (issue 12, defect 8)
  bool pending_over_ = false;  // one of them was not the pool limit's wait (raise_async)
};

}  // namespace bspk::sync
