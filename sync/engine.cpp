#include "sync/engine.h"

#include <bspk.h>

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <ctime>

#include "base/clock.h"
#include "base/env.h"
#include "base/error.h"

namespace bspk::sync {

using wire::Header;
using wire::Kind;

Options Options::from_env(int local_procs, int host_cpus) {
  Options o;
  int ncpu = host_cpus;
  if (ncpu <= 0) {
    cpu_set_t set;
    ncpu = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  }
  // Oversubscribed (e.g. 8 processes on 2 cores): the process we wait for may
  // need this CPU, so yield at once instead of spinning.
  if (local_procs > ncpu) o.spin_s = 0;
  o.max_ahead = static_cast<uint32_t>(env::get_int("BSPK_MAX_AHEAD", o.max_ahead, 1, wire::kMaxAheadLimit));
  o.timeout_s = env::get_seconds("BSPK_SYNC_TIMEOUT", o.timeout_s);
  o.spin_s = 1e-6 * static_cast<double>(env::get_int("BSPK_SPIN_US", static_cast<int64_t>(o.spin_s * 1e6), 0,
                                                     10'000'000));
  o.rx_depth = static_cast<uint32_t>(env::get_int("BSPK_RX_DEPTH", o.rx_depth, 2, 4096));
  o.small_rx_depth = static_cast<uint32_t>(env::get_int("BSPK_SMALL_RX_DEPTH", o.small_rx_depth, 2, 4096));
  return o;
}

Engine::Engine(int pid, int nprocs, fabric::Endpoint& ep, comem::FramePool& frames,
               comem::FramePool& small, boot::Bootstrap& boot, Stats& stats, const Options& opt)
    : pid_(pid),
      nprocs_(nprocs),
      ep_(ep),
      frames_(frames),
      small_(small),
      headers_(&ep, sizeof(Header), 0, size_t{256} << 10),
      boot_(boot),
      stats_(stats),
      opt_(opt) {
  size_t p = static_cast<size_t>(nprocs);
  if (p * sizeof(uint64_t) > frames.frame_size())
    fail(BSPK_ERR_ARG,
         "%d processes need %zu-byte count vectors, more than one frame (%zu bytes); raise "
         "BSPK_FRAME_SIZE",
         nprocs, p * sizeof(uint64_t), frames.frame_size());
  sent_.assign(p, 0);
  declared_vec_.assign(p, 0);
  known_.assign(p, 0);
  queried_.assign(p, 0);
  notify_at_.assign(p, 0);
  blocked_.resize(p);
  ring_.resize(ring_size(opt_.max_ahead));
  children_ = children();
}

Engine::~Engine() {
  for (SendOp* op : all_ops_) delete op;
}

std::vector<int> Engine::children() const {
  std::vector<int> c;
  // Children of r in a binomial tree rooted at 0: r + 2^k for every 2^k below
  // r's lowest set bit (all k for r = 0), while < p.
  for (int bit = 1; bit < nprocs_; bit <<= 1) {
    if (pid_ != 0 && (pid_ & bit)) break;
    if (pid_ + bit < nprocs_) c.push_back(pid_ + bit);
  }
  return c;
}

Engine::StepState& Engine::state(uint32_t s) {
  StepState& st = ring_[s & (ring_.size() - 1)];  // size is a power of two
  if (st.step != s) {
    if (st.step != UINT32_MAX && st.step >= step_)
      fail(BSPK_ERR_FABRIC, "internal: superstep ring overflow (holding %u, need %u, at %u)",
           st.step, s, step_);
    std::vector<uint64_t> keep = std::move(st.sum);  // reuse the allocation
    keep.clear();
    st = StepState{};
    st.sum = std::move(keep);
    st.step = s;
  }
  return st;
}

std::vector<uint64_t>& Engine::sum_of(StepState& st) {
  if (st.sum.empty()) st.sum.assign(static_cast<size_t>(nprocs_), 0);
  return st.sum;
}

// ---------------------------------------------------------------- sending

SendOp* Engine::new_op() {
  if (op_pool_.empty()) {
    auto* op = new SendOp();
    all_ops_.push_back(op);
    return op;
  }
  SendOp* op = op_pool_.back();
  op_pool_.pop_back();
  return op;
}

void Engine::free_op(SendOp* op) {
  if (op->hdr) headers_.free(reinterpret_cast<uintptr_t>(op->hdr));
  if (op->ctrl_frame) (op->ctrl_small ? small_ : frames_).free(op->ctrl_frame);
  *op = SendOp{};
  op_pool_.push_back(op);
}

Header* Engine::new_header() { return reinterpret_cast<Header*>(headers_.alloc()); }

bool Engine::try_post(SendOp* op) {
  ssize_t rc = ep_.post_send(op->dest, op->iov, op->desc, op->iov_count, op, op->tag);
  return rc == 0;
}

void Engine::post(SendOp* op) {
  // Flow control: a message tagged t may go to a peer known to be at >= t-W+1.
  if (!window_open(op->dest, op->step)) {
    blocked_[op->dest].push_back(op);
    ++nblocked_;
    stats_.flow_waits++;
    uint32_t want = op->step - opt_.max_ahead + 1;
    if (queried_[op->dest] < want) {
      queried_[op->dest] = want;
      uint32_t inl[4] = {want, 0, 0, 0};
      send_ctrl(op->dest, Kind::StepQuery, step_, inl, nullptr, 0, false);
    }
    return;
  }
  if (!backlog_.empty() || !try_post(op)) backlog_.push_back(op);
}

void Engine::retry_backlog() {
  while (!backlog_.empty()) {
    if (!try_post(backlog_.front())) return;
    backlog_.pop_front();
  }
}

void Engine::flush_blocked(int dest) {
  auto& q = blocked_[static_cast<size_t>(dest)];
  while (!q.empty() && window_open(dest, q.front()->step)) {
    SendOp* op = q.front();
    q.pop_front();
    --nblocked_;
    if (!backlog_.empty() || !try_post(op)) backlog_.push_back(op);
  }
}

bool Engine::send_frame(int dest, Kind kind, const Header& h, void* payload, size_t len, void* desc,
                        uint32_t region, uint64_t tag) {
  Header hh = h;
  hh.magic = wire::magic_word();
  hh.kind = static_cast<uint8_t>(kind);
  hh.step = step_;
  hh.src = pid_;
  hh.payload = static_cast<uint32_t>(len);
  // Small message, nothing queued ahead of it, window open: inject it.
  if (len + sizeof(Header) <= ep_.inject_size() && backlog_.empty() && window_open(dest, step_)) {
    iovec iov[2] = {{&hh, sizeof(Header)}, {payload, len}};
    void* descs[2] = {nullptr, desc};  // injected buffers need no registration
    if (ep_.inject_msg(dest, iov, descs, len ? 2 : 1, tag) == 0) return false;
  }
  SendOp* op = new_op();
  op->hdr = new_header();
  *op->hdr = hh;
  op->dest = dest;
  op->step = step_;
  op->region = region;
  op->counted = true;
  op->tag = tag;
  op->iov[0] = {op->hdr, sizeof(Header)};
  op->desc[0] = headers_.desc(reinterpret_cast<uintptr_t>(op->hdr));
  op->iov_count = 1;
  if (len) {
    op->iov[1] = {payload, len};
    op->desc[1] = desc;
    op->iov_count = 2;
  }
  state(step_).outstanding++;
  post(op);
  return true;
}

// A control message's send operation: header stamped, no payload yet.
SendOp* Engine::ctrl_op(int dest, Kind kind, uint32_t step) {
  SendOp* op = new_op();
  op->hdr = new_header();
  Header& h = *op->hdr;
  h = Header{};
  h.magic = wire::magic_word();
  h.kind = static_cast<uint8_t>(kind);
  h.step = step;
  h.src = pid_;
  op->dest = dest;
  op->step = step;
  op->tag = wire::kTagSmall;
  op->iov[0] = {op->hdr, sizeof(Header)};
  op->desc[0] = headers_.desc(reinterpret_cast<uintptr_t>(op->hdr));
  op->iov_count = 1;
  return op;
}

// Copy a control payload into a buffer of its own (small if it fits).
void Engine::attach_payload(SendOp* op, const void* bytes, size_t len) {
  if (!len) return;
  op->ctrl_small = len <= wire::kSmallPayload;
  comem::FramePool& pool = op->ctrl_small ? small_ : frames_;
  if (len > pool.frame_size()) fail(BSPK_ERR_ARG, "internal: control payload of %zu bytes", len);
  op->ctrl_frame = pool.alloc();
  std::memcpy(reinterpret_cast<void*>(op->ctrl_frame), bytes, len);
  op->hdr->payload = static_cast<uint32_t>(len);
  op->iov[1] = {reinterpret_cast<void*>(op->ctrl_frame), len};
  op->desc[1] = pool.desc(op->ctrl_frame);
  op->iov_count = 2;
  if (!op->ctrl_small) op->tag = wire::kTagLarge;
}

void Engine::send_control(int dest, Kind kind, const void* bytes, size_t len) {
  SendOp* op = ctrl_op(dest, kind, step_);
  attach_payload(op, bytes, len);
  stats_.ctrl_sent++;
  if (!backlog_.empty() || !try_post(op)) backlog_.push_back(op);
}

void Engine::send_ctrl(int dest, Kind kind, uint32_t step, const uint32_t* inl, const uint64_t* vec,
                       size_t nvec, bool flow_controlled) {
  SendOp* op = ctrl_op(dest, kind, step);
  if (inl) std::memcpy(op->hdr->u32, inl, sizeof op->hdr->u32);
  if (vec) {
    attach_payload(op, vec, nvec * sizeof(uint64_t));
    op->hdr->nelems = nvec;
  }
  stats_.ctrl_sent++;
  if (flow_controlled) {
    post(op);
  } else if (!backlog_.empty() || !try_post(op)) {
    backlog_.push_back(op);
  }
}

// ---------------------------------------------------------------- receiving

void Engine::start() {
  slots_.resize(opt_.rx_depth + opt_.small_rx_depth);  // never resized again: slots are contexts
  for (size_t i = 0; i < slots_.size(); ++i) {
    RecvSlot& s = slots_[i];
    s.small = i >= opt_.rx_depth;
    s.hdr = new_header();
    s.frame = (s.small ? small_ : frames_).alloc();
    post_slot(&s);
  }
}

void Engine::post_slot(RecvSlot* slot) {
  comem::FramePool& pool = slot->small ? small_ : frames_;
  iovec iov[2] = {{slot->hdr, sizeof(Header)},
                  {reinterpret_cast<void*>(slot->frame), slot->small ? wire::kSmallPayload : pool.frame_size()}};
  void* desc[2] = {headers_.desc(reinterpret_cast<uintptr_t>(slot->hdr)), pool.desc(slot->frame)};
  uint64_t tag = slot->small ? wire::kTagSmall : wire::kTagLarge;
  while (ep_.post_recv(iov, desc, 2, slot, tag) == -FI_EAGAIN) {
    // Receive queue full: cannot happen with rx_depth <= rx_size, but be safe.
    fi_cq_data_entry e[8];
    fabric::CompletionError err;
    ssize_t n = ep_.poll(e, 8, &err);
    if (n < 0) handle_error(err);
    for (ssize_t i = 0; i < n; ++i) dispatch(e[i]);
  }
}

void Engine::note_peer_step(int src, uint32_t step) {
  if (src < 0 || src >= nprocs_) return;
  if (step > known_[src]) {
    known_[src] = step;
    if (!blocked_[src].empty()) flush_blocked(src);
  }
}

void Engine::dispatch(const fi_cq_data_entry& e) {
  if (e.flags & FI_RECV) {
    on_recv(static_cast<RecvSlot*>(e.op_context), e.len);
    return;
  }
  if (e.flags & (FI_READ | FI_SEND)) complete_op(static_cast<SendOp*>(e.op_context));
}

// An operation of ours finished (successfully or not): settle its bookkeeping.
void Engine::complete_op(SendOp* op) {
  if (op->done) *op->done = true;
  if (op->counted) {
    StepState& st = state(op->step);
    if (st.outstanding) st.outstanding--;
    ++progress_events_;
  }
  if (op->region && on_send_done_) on_send_done_(op->region);
  free_op(op);
}

void Engine::on_recv(RecvSlot* slot, size_t len) {
  // The slot (and its header) is reposted only before this process next waits.
  const Header& h = *slot->hdr;
  if (len < sizeof(Header) || h.magic != wire::magic_word() ||
      h.payload != len - sizeof(Header)) {
    raise_async(BSPK_ERR_FABRIC,
                strprintf("received a malformed message (%zu bytes, magic %#x): mismatched BSPk "
                          "versions in one job?",
                          len, h.magic));
    post_slot(slot);
    return;
  }
  if (h.src < 0 || h.src >= nprocs_) {
    raise_async(BSPK_ERR_FABRIC, strprintf("received a message from unknown pid %d", h.src));
    post_slot(slot);
    return;
  }
  Kind k = static_cast<Kind>(h.kind);
  if (k != Kind::StepQuery && k != Kind::StepNotice) note_peer_step(h.src, h.step);
  switch (k) {
    case Kind::Data: {
      bool kept = on_data_ && on_data_(h, slot->frame, h.payload, slot->small);
      if (kept) slot->frame = (slot->small ? small_ : frames_).alloc();
      break;
    }
    case Kind::CollUp:
    case Kind::CollDown:
      on_coll(h, slot->frame, k == Kind::CollDown);
      break;
    case Kind::StepQuery: {
      uint32_t want = h.u32[0];
      if (step_ >= want) {
        uint32_t inl[4] = {step_, 0, 0, 0};
        send_ctrl(h.src, Kind::StepNotice, step_, inl, nullptr, 0, false);
      } else if (notify_at_[h.src] < want) {
        if (notify_at_[h.src] == 0) waiters_.push_back(h.src);
        notify_at_[h.src] = want;
      }
      break;
    }
    case Kind::StepNotice:
      note_peer_step(h.src, h.u32[0]);
      break;
    case Kind::Hello: {
      // u32[0] = epoch, u32[1] = round
      uint32_t idx = (h.u32[0] - barrier_epoch_) * 64 + h.u32[1];
      if (h.u32[0] >= barrier_epoch_ && idx < 128) {
        if (hello_got_.size() <= idx) hello_got_.resize(idx + 1, 0);
        hello_got_[idx]++;
      }
      ++progress_events_;
      break;
    }
    default:
      if (wire::is_dsm_kind(h.kind) && on_dsm_) {
        if (on_dsm_(h, slot->frame, h.payload, slot->small))
          slot->frame = (slot->small ? small_ : frames_).alloc();
        ++progress_events_;
        break;
      }
      raise_async(BSPK_ERR_FABRIC, strprintf("received a message of unknown kind %u from pid %d",
                                             unsigned(h.kind), h.src));
  }
  // Repost later (before this process next waits): keeps fi_recvmsg off the
  // path between a message's arrival and the program seeing it.
  repost_.push_back(slot);
}

void Engine::flush_reposts() {
  // post_slot may progress the CQ (receive queue full), which can add to
  // repost_: work on a detached list.
  std::vector<RecvSlot*> now;
  now.swap(repost_);
  for (RecvSlot* slot : now) post_slot(slot);
  if (repost_.empty()) {  // keep the capacity for next time
    now.clear();
    repost_.swap(now);
  }
}

void Engine::message_arrived(uint32_t s, int src) {
  ++progress_events_;
  if (s < step_) {
    raise_async(BSPK_ERR_COUNT,
                strprintf("more messages than declared: a message sent by pid %d in superstep %u "
                          "arrived after this process had left that superstep",
                          src, s));
    return;
  }
  StepState& st = state(s);
  st.arrived++;
  if (s == step_ && mode_ == Mode::Expect && st.arrived > static_cast<uint64_t>(declared_expect_)) {
    raise_async(BSPK_ERR_COUNT,
                strprintf("more messages than declared: bspk_expect(%lld) in superstep %u, but "
                          "%llu messages have arrived (the latest from pid %d)",
                          (long long)declared_expect_, s, (unsigned long long)st.arrived, src));
  }
}

// ---------------------------------------------------------------- reductions

void Engine::on_coll(const Header& h, uintptr_t frame, bool down) {
  ++progress_events_;
  uint32_t s = h.step;
  const auto* v = reinterpret_cast<const uint64_t*>(frame);
  size_t n = std::min<size_t>(h.nelems, static_cast<size_t>(nprocs_));
  int32_t first[3];
  std::memcpy(first, &h.u32[1], sizeof first);
  uint32_t kinds = h.u32[0];
  if (s < step_ || (s == step_ && mode_ == Mode::Expect && !state(s).joined)) {
    // The sender is summing counts for a superstep in which this process used
    // bspk_expect (or has already left it): kinds were mixed.
    uint32_t my_kind = wire::kSyncExpect;
    raise_async(BSPK_ERR_MODE,
                strprintf("mixed synchronisation kinds in superstep %u: this process used "
                          "bspk_expect, but pid %d took part in a %s exchange (%s)",
                          s, h.src, (kinds & wire::kSyncWillSend) ? "bspk_will_send" : "counted",
                          kinds_text(kinds | my_kind, first).c_str()));
    return;
  }
  StepState& st = state(s);
  if (down) {
    if (n != static_cast<size_t>(nprocs_)) {
      raise_async(BSPK_ERR_FABRIC, strprintf("count exchange result from pid %d has %zu entries, not %d",
                                             h.src, n, nprocs_));
      return;
    }
    coll_result(s, v, kinds, first);  // straight from the received buffer
    return;
  }
  for (size_t c = 0; c < children_.size(); ++c)
    if (children_[c] == h.src) st.child_mask |= 1u << c;
  auto& sum = sum_of(st);
  for (size_t i = 0; i < n; ++i) sum[i] += v[i];
  st.kinds |= kinds;
  for (int b = 0; b < 3; ++b)
    if (first[b] >= 0 && (st.first[b] < 0 || first[b] < st.first[b])) st.first[b] = first[b];
  st.children_got++;
  coll_try_advance(s);
}

void Engine::coll_try_advance(uint32_t s) {
  StepState& st = state(s);
  if (!st.joined || st.sent_up || st.children_got < static_cast<int>(children_.size())) return;
  st.sent_up = true;
  if (pid_ == 0) {
    coll_result(s, sum_of(st).data(), st.kinds, st.first);
    return;
  }
  uint32_t inl[4] = {st.kinds, static_cast<uint32_t>(st.first[0]), static_cast<uint32_t>(st.first[1]),
                     static_cast<uint32_t>(st.first[2])};
  const auto& sum = sum_of(st);
  send_ctrl(parent(), Kind::CollUp, s, inl, sum.data(), sum.size(), true);
}

void Engine::coll_result(uint32_t s, const uint64_t* sum, uint32_t kinds, const int32_t* first) {
  StepState& st = state(s);
  for (int c : children_) {
    uint32_t inl[4] = {kinds, static_cast<uint32_t>(first[0]), static_cast<uint32_t>(first[1]),
                       static_cast<uint32_t>(first[2])};
    send_ctrl(c, Kind::CollDown, s, inl, sum, static_cast<size_t>(nprocs_), true);
  }
  st.have_result = true;
  st.result = sum[pid_];
  st.kinds = kinds;
  std::memcpy(st.first, first, sizeof(int32_t) * 3);
}

std::string Engine::kinds_text(uint32_t kinds, const int32_t* first) const {
  std::string s;
  auto add = [&](const char* what, int pid) {
    if (!s.empty()) s += ", ";
    s += pid >= 0 ? strprintf("%s (pid %d)", what, pid) : std::string(what);
  };
  if (kinds & wire::kSyncExpect) add("bspk_expect", -1);
  if (kinds & wire::kSyncWillSend) add("bspk_will_send", first[0]);
  if (kinds & wire::kSyncCounted) add("no declaration", first[1]);
  if (kinds & wire::kSyncFinalize) add("bspk_finalize", first[2]);
  return s;
}

// ---------------------------------------------------------------- declarations

void Engine::expect(int64_t n) {
  throw_pending();
  if (n < 0) fail(BSPK_ERR_ARG, "negative message count %lld", (long long)n);
  if (mode_ != Mode::None)
    fail(BSPK_ERR_MODE, "this superstep already has a %s declaration",
         mode_ == Mode::Expect ? "bspk_expect" : "bspk_will_send");
  StepState& st = state(step_);
  if (st.children_got > 0 || st.have_result)
    fail(BSPK_ERR_MODE,
         "superstep %u: other processes are already summing send counts for "
         "this superstep (they used bspk_will_send or no declaration): kinds may not be mixed",
         step_);
  mode_ = Mode::Expect;
  declared_expect_ = n;
  if (st.arrived > static_cast<uint64_t>(n))
    fail(BSPK_ERR_COUNT, "more messages than declared: bspk_expect(%lld), but %llu messages for this superstep have already arrived",
         (long long)n, (unsigned long long)st.arrived);
}

void Engine::will_send(const int* v) {
  throw_pending();
  if (!v) fail(BSPK_ERR_ARG, "NULL array");
  for (int j = 0; j < nprocs_; ++j)
    if (v[j] < 0) fail(BSPK_ERR_ARG, "negative count %d for pid %d", v[j], j);
  if (mode_ != Mode::None)
    fail(BSPK_ERR_MODE, "this superstep already has a %s declaration",
         mode_ == Mode::Expect ? "bspk_expect" : "bspk_will_send");
  mode_ = Mode::WillSend;
  for (int j = 0; j < nprocs_; ++j) declared_vec_[static_cast<size_t>(j)] = static_cast<uint64_t>(v[j]);
}

// ---------------------------------------------------------------- errors

void Engine::raise_async(int code, const std::string& msg) {
  if (pending_code_ == 0) {
    pending_code_ = code;
    pending_msg_ = msg;
  }
}

void Engine::throw_pending() {
  if (!pending_code_) return;
  int c = pending_code_;
  std::string m = pending_msg_;
  pending_code_ = 0;
  pending_msg_.clear();
  throw Error(c, m);
}

void Engine::handle_error(const fabric::CompletionError& err) {
  if (err.err == FI_ECANCELED) return;
  // Which operation failed?
  for (auto& s : slots_)
    if (&s == err.context) {
      raise_async(BSPK_ERR_FABRIC, "a receive failed: " + err.message);
      post_slot(&s);
      return;
    }
  auto* op = static_cast<SendOp*>(err.context);
  std::string what = op ? strprintf("a send to pid %d (superstep %u) failed: ", op->dest, op->step)
                        : std::string("an operation failed: ");
  raise_async(BSPK_ERR_FABRIC, what + err.message);
  if (op) complete_op(op);
}

// ---------------------------------------------------------------- progress

void Engine::progress() {
  if (!repost_.empty()) flush_reposts();
  fi_cq_data_entry e[16];
  fabric::CompletionError err;
  ssize_t n = ep_.poll(e, 16, &err);
  if (n < 0) handle_error(err);
  for (ssize_t i = 0; i < n; ++i) dispatch(e[i]);
  if (!backlog_.empty()) retry_backlog();
}

// Waiting without a CQ wait object: yield the CPU for the first 2 ms idle (a
// peer on this core gets it at once), then sleep 50 us doubling to 1 ms, so a
// long wait costs little CPU and wakes within ~1 ms of the data.
void Engine::backoff(double idle_s) {
  if (idle_s < 2e-3) {
    sched_yield();
    return;
  }
  double d = 50e-6;
  for (double t = 4e-3; t < idle_s && d < 1e-3; t *= 2) d *= 2;
  timespec ts{0, static_cast<long>(d * 1e9)};
  nanosleep(&ts, nullptr);
}

// One wait step: poll until spin_until, then block (or back off) up to block_ms.
bool Engine::wait_once(double spin_until, int block_ms) {
  if (!repost_.empty()) flush_reposts();
  retry_backlog();
  fi_cq_data_entry e[16];
  fabric::CompletionError err;
  ssize_t n;
  double t = now_s();
  if (t < spin_until || !backlog_.empty()) {
    n = ep_.poll(e, 16, &err);
  } else if (ep_.can_block()) {
    n = ep_.wait(e, 16, block_ms, &err);
  } else {
    n = ep_.poll(e, 16, &err);
    if (n == 0) backoff(t - spin_until);
  }
  if (n < 0) {
    handle_error(err);
    return true;
  }
  for (ssize_t i = 0; i < n; ++i) dispatch(e[i]);
  retry_backlog();
  return n > 0;
}

std::string Engine::waiting_for(const StepState& st) const {
  std::string s;
  if (mode_ == Mode::Expect) {
    s = strprintf("bspk_expect(%lld) declared, %llu message(s) arrived", (long long)declared_expect_,
                  (unsigned long long)st.arrived);
  } else if (st.have_result) {
    s = strprintf("%llu message(s) due (summed %s), %llu arrived", (unsigned long long)st.result,
                  mode_ == Mode::WillSend ? "from bspk_will_send" : "from actual send counts",
                  (unsigned long long)st.arrived);
  } else {
    std::string missing;
    for (size_t i = 0; i < children_.size(); ++i) missing += strprintf(" %d", children_[i]);
    s = strprintf("the %s count exchange has not completed (this process has %d of %zu child "
                  "contributions; children:%s; parent: %d)",
                  mode_ == Mode::WillSend ? "bspk_will_send" : "message", st.children_got,
                  children_.size(), missing.empty() ? " none" : missing.c_str(), parent());
  }
  if (st.outstanding) s += strprintf("; %llu own send(s) not complete", (unsigned long long)st.outstanding);
  if (nblocked_) {
    for (int d = 0; d < nprocs_; ++d)
      if (!blocked_[d].empty())
        s += strprintf("; %zu send(s) to pid %d held by flow control until it reaches superstep %u "
                       "(known to be at %u)",
                       blocked_[d].size(), d, blocked_[d].front()->step - opt_.max_ahead + 1, known_[d]);
  }
  return s;
}

void Engine::sync(bool finalizing) {
  throw_pending();
  const uint32_t s = step_;
  if (mode_ == Mode::WillSend && !finalizing) {
    for (int j = 0; j < nprocs_; ++j)
      if (sent_[j] != declared_vec_[j])
        fail(BSPK_ERR_COUNT,
             "bspk_will_send declared %llu message(s) to pid %d in superstep %u, but %llu were sent",
             (unsigned long long)declared_vec_[j], j, s, (unsigned long long)sent_[j]);
  }
  if (finalizing && mode_ == Mode::Expect) {
    fail(BSPK_ERR_MODE, "bspk_expect was declared in the final superstep %u; "
                        "the final superstep's messages are counted by the runtime, do not declare them", s);
  }
  if (mode_ != Mode::Expect) {
    // Join the count exchange with our contribution.
    StepState& st = state(s);
    const auto& mine = (mode_ == Mode::WillSend) ? declared_vec_ : sent_;
    auto& sum = sum_of(st);
    for (int j = 0; j < nprocs_; ++j) sum[j] += mine[j];
    uint32_t kind = finalizing ? wire::kSyncFinalize
                    : (mode_ == Mode::WillSend ? wire::kSyncWillSend : wire::kSyncCounted);
    st.kinds |= kind;
    int b = finalizing ? 2 : (mode_ == Mode::WillSend ? 0 : 1);
    if (st.first[b] < 0 || pid_ < st.first[b]) st.first[b] = pid_;
    st.joined = true;
    coll_try_advance(s);
  }
  // Fast path of a lazy barrier: everything declared has arrived and our sends
  // are done, so leave without touching the clock or the network.
  if (mode_ == Mode::Expect && pending_code_ == 0) {
    const StepState& st = state(s);
    if (st.arrived == static_cast<uint64_t>(declared_expect_) && st.outstanding == 0) {
      finish_step(s);
      return;
    }
  }
  boot_.set_state(s, boot::ProcState::InSync);

  struct WaitClock {  // adds the time spent here to the stats on every exit, errors included
    double t0;
    double& total;
    ~WaitClock() { total += now_s() - t0; }
  } wait_clock{now_s(), stats_.sync_wait_s};
  wait_until(
      [&] {
        StepState& st = state(s);
        if (mode_ != Mode::Expect && st.have_result) {
          uint32_t k = st.kinds;
          if (__builtin_popcount(k) > 1) {
            if (k & wire::kSyncFinalize)
              fail(BSPK_ERR_PEER,
                   "in superstep %u some processes called bspk_finalize while others called "
                   "bspk_sync (%s): every process must finalize in the same superstep",
                   s, kinds_text(k, st.first).c_str());
            fail(BSPK_ERR_MODE, "mixed synchronisation kinds in superstep %u: %s", s,
                 kinds_text(k, st.first).c_str());
          }
        }
        if (mode_ != Mode::Expect && !st.sent_up) {
          // A child that shows activity in a later superstep without having
          // contributed to this one left it some other way: it used bspk_expect.
          for (size_t c = 0; c < children_.size(); ++c)
            if (!(st.child_mask & (1u << c)) && known_[children_[c]] > s)
              fail(BSPK_ERR_MODE,
                   "mixed synchronisation kinds in superstep %u: pid %d left it without joining the "
                   "%s count exchange (it must have used bspk_expect)",
                   s, children_[c], mode_ == Mode::WillSend ? "bspk_will_send" : "message");
        }
        bool known = (mode_ == Mode::Expect) || st.have_result;
        uint64_t due = (mode_ == Mode::Expect) ? static_cast<uint64_t>(declared_expect_) : st.result;
        if (known && st.arrived > due) {
          fail(BSPK_ERR_COUNT, "more messages than declared: %llu arrived in superstep %u but %llu were %s",
               (unsigned long long)st.arrived, s, (unsigned long long)due,
               mode_ == Mode::Expect ? "declared with bspk_expect" : "sent to this process");
        }
        return known && st.arrived == due && st.outstanding == 0;
      },
      [&] { return waiting_for(state(s)); });
  finish_step(s);
}

void Engine::advance() {
  ++step_;
  stats_.supersteps++;
  if (mode_ == Mode::WillSend) std::fill(declared_vec_.begin(), declared_vec_.end(), 0);
  mode_ = Mode::None;
  declared_expect_ = 0;
  for (int d : sent_used_) sent_[static_cast<size_t>(d)] = 0;  // O(destinations used), not O(p)
  sent_used_.clear();
  boot_.set_state(step_, boot::ProcState::Running);
  // Answer peers waiting to hear that we reached a superstep.
  for (size_t i = 0; i < waiters_.size();) {  // usually empty
    int w = waiters_[i];
    if (notify_at_[w] && notify_at_[w] <= step_) {
      uint32_t inl[4] = {step_, 0, 0, 0};
      send_ctrl(w, Kind::StepNotice, step_, inl, nullptr, 0, false);
      notify_at_[w] = 0;
      waiters_[i] = waiters_.back();
      waiters_.pop_back();
    } else {
      ++i;
    }
  }
  if (on_advance_) on_advance_(step_);
}

void Engine::wait_until(const std::function<bool()>& ready, const std::function<std::string()>& what) {
  double last_change = now_s(), last_check = last_change;
  double spin_until = last_change + opt_.spin_s;
  uint64_t last_events = progress_events_;
  for (;;) {
    throw_pending();  // errors found while progressing (e.g. more arrivals than declared)
    if (ready()) return;
    wait_once(spin_until, 100);
    if (progress_events_ != last_events) {
      last_events = progress_events_;
      last_change = now_s();
      spin_until = last_change + opt_.spin_s;
      continue;
    }
    double t = now_s();
    if (t - last_check > 0.1) {
      last_check = t;
      if (t - last_change > opt_.timeout_s)
        fail(BSPK_ERR_TIMEOUT, "no progress for %.0f s in superstep %u: %s (set BSPK_SYNC_TIMEOUT to wait longer)",
             opt_.timeout_s, step_, what().c_str());
      if (!boot_.alive()) fail(BSPK_ERR_PEER, "the launcher is gone; ending superstep %u", step_);
    }
  }
}

void Engine::fabric_barrier(bool all_pairs) {
  const double t0 = now_s();
  auto wait_for = [&](uint32_t round, uint32_t want, const char* what) {
    while (hello_got_.size() <= round || hello_got_[round] < want) {
      wait_once(now_s() + opt_.spin_s, 50);
      throw_pending();
      if (now_s() - t0 > opt_.timeout_s)
        fail(BSPK_ERR_TIMEOUT, "%s: %u of %u peers answered within %.0f s", what,
             hello_got_.size() > round ? hello_got_[round] : 0, want, opt_.timeout_s);
    }
  };
  auto hello = [&](int dest, uint32_t round) {
    uint32_t inl[4] = {barrier_epoch_, round, 0, 0};
    send_ctrl(dest, Kind::Hello, step_, inl, nullptr, 0, false);
  };
  if (nprocs_ > 1) {
    if (all_pairs) {
      for (int k = 1; k < nprocs_; ++k) hello((pid_ + k) % nprocs_, 0);
      wait_for(0, static_cast<uint32_t>(nprocs_ - 1), "start-up connection exchange");
    } else {
      uint32_t round = 0;
      for (int d = 1; d < nprocs_; d <<= 1, ++round) {
        hello((pid_ + d) % nprocs_, round);
        wait_for(round, 1, "fabric barrier");
      }
    }
  }
  // Next epoch: shift counters of rounds already received for it.
  ++barrier_epoch_;
  if (hello_got_.size() > 64) hello_got_.erase(hello_got_.begin(), hello_got_.begin() + 64);
  else hello_got_.clear();
}

uint64_t Engine::read_word(int src, uint64_t remote_base, uint64_t offset, uint64_t key) {
  uintptr_t local = frames_.alloc();
  *reinterpret_cast<uint64_t*>(local) = 0;
  bool done = false;
  SendOp* op = new_op();
  op->done = &done;
  op->dest = src;
  uint64_t raddr = ep_.remote_addr(remote_base, offset);
  const double t0 = now_s();
  while (ep_.post_read(src, reinterpret_cast<void*>(local), sizeof(uint64_t), frames_.desc(local),
                       raddr, key, op) == -FI_EAGAIN)
    progress();
  while (!done) {
    wait_once(now_s() + opt_.spin_s, 50);
    throw_pending();
    if (now_s() - t0 > opt_.timeout_s) {
      frames_.free(local);
      fail(BSPK_ERR_TIMEOUT, "registration check: fi_read from pid %d (remote address %#llx, key %#llx) "
           "did not complete in %.0f s", src, (unsigned long long)raddr, (unsigned long long)key,
           opt_.timeout_s);
    }
  }
  uint64_t v = *reinterpret_cast<uint64_t*>(local);
  frames_.free(local);
  return v;
}

void Engine::quiesce() {
  // Every send, counted or control, completes before the endpoint closes.
  double t0 = now_s();
  for (;;) {
    bool idle = backlog_.empty() && nblocked_ == 0 &&
                op_pool_.size() == all_ops_.size();
    if (idle) return;
    wait_once(0, 50);
    if (now_s() - t0 > opt_.timeout_s)
      fail(BSPK_ERR_TIMEOUT, "%zu send(s) did not complete within %.0f s at shutdown",
           all_ops_.size() - op_pool_.size(), opt_.timeout_s);
  }
}

}  // namespace bspk::sync
