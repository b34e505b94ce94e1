// sync/tx.cpp -- sending: operation pool, injection of small messages, posting,
// the backlog of sends the provider refused for now, control messages, and
// completion of our operations.
#include <bspk.h>

#include <cstring>

#include "base/copy.h"
#include "base/error.h"
#include "sync/engine.h"

namespace bspk::sync {

using wire::Header;

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

// The fields every message of ours carries: version, kind, superstep, sender.
void Engine::stamp(Header& h, wire::Kind kind, uint32_t step) const {
  h.magic = wire::magic_word();
  h.kind = kind;
  h.step = step;
  h.src = pid_;
}

bool Engine::try_post(SendOp* op) {
  return ep_.post_send(op->dest, op->iov, op->desc, op->iov_count, &op->ctx, op->tag);
}

// A message tagged with a superstep: through the flow-control window.
void Engine::post(SendOp* op) {
  if (!window_open(op->dest, op->step)) {
    hold_for_window(op);
    return;
  }
  post_or_queue(op);
}

void Engine::retry_backlog() {
  while (!backlog_.empty()) {
    if (!try_post(backlog_.front())) return;
    backlog_.pop_front();
  }
}

// A message's first frame decides for all of its frames (the layers send
// them in order, from frame 0, before any other message): split when the
// provider splits messages of this many frames, and, where it sends shorter
// ones whole (net: up to 4 frames, fabric.cpp), also when the frames of
// several-frame messages already sent whole to dest in this superstep would
// pass that many (one-frame messages stay whole, as before, and uncounted). A few whole
// frames in flight to a peer beat header + body (tcp p = 2, 1 MiB: broadcast
// 165-281 -> 132-144 us, allreduce 529-627 -> 344-482), many stall
// (bench/burst, 4 messages of 1 MiB per superstep to one peer, ~10% slower
// whole than split).
// (whole_frames_ is reset with sent_ in advance(): a message's layer counts
// it with count_sent, so its destination is in sent_used_.)
void Engine::decide_split(int dest, uint32_t nframes) {
  uint32_t& used = whole_frames_[static_cast<size_t>(dest)];
  split_cur_ = used + nframes >= ep_.split_min_frames();
  if (!split_cur_) used += nframes;
}

bool Engine::send_frame(int dest, wire::Kind kind, const Header& h, void* payload, size_t len,
                        const comem::FramePool* pool, uint32_t region, uint64_t tag) {
  Header hh = h;
  stamp(hh, kind, step_);
  hh.payload = static_cast<uint32_t>(len);
  if (dest == pid_) {
    send_self(hh, payload, len, tag);
    return false;
  }
  if (h.frame == 0 && ep_.eager_limit()) {
    if (h.nframes > 1 || ep_.split_min_frames() == 1)
      decide_split(dest, h.nframes);
    else
      split_cur_ = false;  // net: a message of one frame is whole, and outside the budget
  }
  // Held back to carry this superstep's count (carry_counts_on, engine.h):
  // any message of one frame, of either receive class (one split into
  // header and body below is not held).
  const bool hold = carry_now_ && carry_kind_[kind] && hh.nframes <= 1;
  if (!hold && can_inject(dest, step_, sizeof(Header) + len)) {
    iovec iov[2] = {{&hh, sizeof(Header)}, {payload, len}};
    void* descs[2] = {nullptr, nullptr};  // injected buffers need no registration
    if (ep_.inject(dest, iov, descs, len ? 2 : 1, tag)) return false;
  }
  // Only a payload that is itself past the eager limit: one of 16321..16384
  // bytes is eager alone, and the extra header message cost more than the
  // second read it saves (bench/pingpong, tcp, 16 KiB: 16.9 us split against
  // 12.7 us whole; 64 KiB: 47 against 52 us).
  if (tag == wire::kTagLarge && ep_.eager_limit() && len > ep_.eager_limit() && split_cur_)
    return send_split(dest, hh, payload, len, pool ? pool->desc(reinterpret_cast<uintptr_t>(payload)) : nullptr,
                      region);
  SendOp* op = data_op(dest, region, tag);
  op->hdr = new_header();
  *op->hdr = hh;
  op->iov[0] = {op->hdr, sizeof(Header)};
  op->desc[0] = headers_.desc(reinterpret_cast<uintptr_t>(op->hdr));
  op->iov_count = 1;
  if (len) {
    op->iov[1] = {payload, len};
    op->desc[1] = pool ? pool->desc(reinterpret_cast<uintptr_t>(payload)) : nullptr;
    op->iov_count = 2;
  }
  if (hold) {
    SendOp*& held = held_[static_cast<size_t>(dest)];
    if (held) post_data(held);  // not the last one to dest after all
    else held_dests_.push_back(dest);
    held = op;
    return true;
  }
  post_data(op);
  return true;
}

void Engine::release_held(bool with_counts) {
  for (int d : held_dests_) {
    SendOp*& op = held_[static_cast<size_t>(d)];
    const uint64_t n = sent_[static_cast<size_t>(d)];
    if (with_counts && n <= wire::kMaxCarriedCount) {
      op->hdr->flags |= wire::kFlagCount;
      op->hdr->reserved = static_cast<uint16_t>(n);
      carried_[static_cast<size_t>(d)] = 1;
    }
    post_data(op);
    op = nullptr;
  }
  held_dests_.clear();
}

// A message to this process itself: copied once into a buffer of its receive
// class (as a receive slot would get it; counted in bytes_copied, as local
// copies are) and handed to its handler at the next progress, never from
// inside the send call. Through the fabric, a message to
// oneself costs a loopback round of the provider (tcp: through the kernel
// twice, ~10 us, and not overlapped with the messages to peers: tcp p = 2,
// 256 B to self and to the peer took 21.5 us per superstep, each alone 10.7).
// Nothing stays to complete: like an injected send.
void Engine::send_self(const Header& h, const void* payload, size_t len, uint64_t tag) {
  const bool small = tag == wire::kTagSmall;
  comem::FramePool& pool = small ? small_ : frames_;
  const uintptr_t buf = pool.alloc();  // BSPK_ERR_NOMEM at the pool's limit, from the send call
  if (len) bspk::copy_bytes(reinterpret_cast<void*>(buf), payload, len);
  stats_.bytes_copied += len;  // like a local bspk_copy: the one message the runtime copies
  self_.push_back(SelfArrival{h, buf, small});
}

// Hand the messages to self to their handlers (in the order sent; a handler
// may send to self again: those wait for the next round).
bool Engine::deliver_self() {
  if (self_.empty()) return false;
  std::vector<SelfArrival> now;
  now.swap(self_);
  for (const SelfArrival& a : now)
    if (!deliver(a.h, a.buf, a.small)) (a.small ? small_ : frames_).free(a.buf);
  now.clear();
  if (self_.empty()) self_.swap(now);  // keep the capacity
  return true;
}

// A counted send of this superstep carrying region's frames (its iovecs are
// the caller's to fill), and posting it: the sync waits for it.
SendOp* Engine::data_op(int dest, uint32_t region, uint64_t tag) {
  SendOp* op = new_op();
  op->dest = dest;
  op->step = step_;
  op->region = region;
  op->counted = true;
  op->tag = tag;
  return op;
}

void Engine::post_data(SendOp* op) {
  state(op->step).outstanding++;
  post(op);
}

// A large message's frame over a transport with an eager limit (sync/wire.h,
// kTagBody): held in the body group of its message (flush_split sends it).
// True if it starts a group: that group's one send reads this frame and the
// ones that join it (send_frame's return, counted by the caller once per send).
bool Engine::send_split(int dest, const Header& hh, void* payload, size_t len, void* desc, uint32_t region) {
  SplitGroup& g = group_;
  if (g.n && (g.dest != dest || g.region != region)) flush_split();  // callers flush per message; be safe
  const bool first = g.n == 0;
  g.dest = dest;
  g.region = region;
  g.hdr[g.n] = hh;
  g.iov[g.n] = {payload, len};
  g.desc[g.n] = desc;
  if (++g.n == body_frames_) flush_split();
  return first;
}

// The held group: each header alone (injected where it can be), numbered
// for its receiver and marked with the group's size and its place, then the
// payloads as one message of g.n iovecs. All pass the same window and
// backlog, in this order, so the receiver sees the headers before the body's
// turn comes. The body is the counted send (the sync waits for it).
void Engine::flush_split() {
  SplitGroup& g = group_;
  if (!g.n) return;
  const int dest = g.dest;
  for (uint32_t i = 0; i < g.n; ++i) {
    Header& head = g.hdr[i];
    head.flags = wire::body_flags(g.n, i);
    head.reserved = split_next_[static_cast<size_t>(dest)]++;
    iovec hiov{&head, sizeof(Header)};
    void* hdesc = nullptr;
    if (!can_inject(dest, step_, sizeof(Header)) || !ep_.inject(dest, &hiov, &hdesc, 1, wire::kTagSmall))
      post(header_op(dest, step_, head));
  }
  SendOp* op = data_op(dest, g.region, wire::kTagBody);
  for (uint32_t i = 0; i < g.n; ++i) {
    op->iov[i] = g.iov[i];
    op->desc[i] = g.desc[i];
  }
  op->iov_count = coalesce(op->iov, op->desc, g.n);
  g.n = 0;
  post_data(op);
}

// A send operation of header h alone (receive class small), tagged `step`.
SendOp* Engine::header_op(int dest, uint32_t step, const Header& h) {
  SendOp* op = new_op();
  op->hdr = new_header();
  *op->hdr = h;
  op->dest = dest;
  op->step = step;
  op->tag = wire::kTagSmall;
  op->iov[0] = {op->hdr, sizeof(Header)};
  op->desc[0] = headers_.desc(reinterpret_cast<uintptr_t>(op->hdr));
  op->iov_count = 1;
  return op;
}

// A control message's send operation: header stamped, no payload yet.
SendOp* Engine::ctrl_op(int dest, wire::Kind kind, uint32_t step) {
  Header h{};
  stamp(h, kind, step);
  return header_op(dest, step, h);
}

// Copy a control payload into a buffer of its own (small if it fits).
void Engine::attach_payload(SendOp* op, const void* bytes, size_t len) {
  if (!len) return;
  op->ctrl_small = len <= wire::kSmallPayload;
  comem::FramePool& pool = op->ctrl_small ? small_ : frames_;
  if (len > pool.frame_size()) fail(BSPK_ERR_INTERNAL, "control payload of %zu bytes", len);
  op->ctrl_frame = pool.alloc();
  std::memcpy(reinterpret_cast<void*>(op->ctrl_frame), bytes, len);
  op->hdr->payload = static_cast<uint32_t>(len);
  op->iov[1] = {reinterpret_cast<void*>(op->ctrl_frame), len};
  op->desc[1] = pool.desc(op->ctrl_frame);
  op->iov_count = 2;
  if (!op->ctrl_small) op->tag = wire::kTagLarge;
}

void Engine::send_control(int dest, wire::Kind kind, const void* bytes, size_t len) {
  SendOp* op = ctrl_op(dest, kind, step_);
  attach_payload(op, bytes, len);
  stats_.ctrl_sent++;
  post_or_queue(op);
}

void Engine::send_ctrl(int dest, wire::Kind kind, uint32_t step, const uint32_t* inl, const uint64_t* vec,
                       size_t nvec, bool flow_controlled, uint64_t word) {
  // Small enough, nothing queued ahead, window open: inject it (no operation,
  // no registered buffers, no completion to wait for).
  const size_t len = vec ? nvec * sizeof(uint64_t) : 0;
  if (can_inject(dest, step, sizeof(Header) + len, flow_controlled)) {
    Header h{};
    stamp(h, kind, step);
    if (inl) std::memcpy(h.u32, inl, sizeof h.u32);
    h.nelems = vec ? nvec : word;
    h.payload = static_cast<uint32_t>(len);
    iovec iov[2] = {{&h, sizeof(Header)}, {const_cast<uint64_t*>(vec), len}};
    void* descs[2] = {nullptr, nullptr};
    if (ep_.inject(dest, iov, descs, len ? 2 : 1, wire::kTagSmall)) {
      stats_.ctrl_sent++;
      return;
    }
  }
  SendOp* op = ctrl_op(dest, kind, step);
  if (inl) std::memcpy(op->hdr->u32, inl, sizeof op->hdr->u32);
  if (vec) attach_payload(op, vec, nvec * sizeof(uint64_t));
  op->hdr->nelems = vec ? nvec : word;
  stats_.ctrl_sent++;
  if (flow_controlled) post(op);
  else post_or_queue(op);
}

// An operation of ours finished (successfully or not): settle its bookkeeping.
void Engine::complete_op(SendOp* op) {
  if (op->done) *op->done = true;
  if (op->user_read) {
    --reads_in_flight_;
    ++progress_events_;
  }
  if (op->counted) {
    StepState& st = state(op->step);
    if (st.outstanding) st.outstanding--;
    ++progress_events_;
  }
  if (op->region && send_done_) send_done_(op->region);
  free_op(op);
}

}  // namespace bspk::sync
