// sync/rx.cpp -- receiving: the posted receive slots (a header slot plus a
// whole frame or a small buffer each), validation of every arrival, dispatch
// through the kind table, and arrival counting per superstep.
#include <bspk.h>

#include "base/error.h"
#include "sync/engine.h"

namespace bspk::sync {

using wire::Header;

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
  while (!ep_.post_recv(iov, desc, 2, &slot->ctx, tag)) {
    // Receive queue full: cannot happen with rx_depth <= rx_size, but be safe.
    fabric::Completion c[8];
    fabric::CompletionError err;
    ssize_t n = ep_.poll(c, 8, &err);
    if (n < 0) handle_error(err);
    for (ssize_t i = 0; i < n; ++i) dispatch(c[i]);
  }
}

void Engine::flush_reposts() {
  // Slots whose buffer went to a region while the pool was at its limit:
  // given a fresh buffer (and posted) as soon as one can be had.
  for (size_t i = 0; i < starved_.size();) {
    RecvSlot* slot = starved_[i];
    uintptr_t b = (slot->small ? small_ : frames_).try_alloc();
    if (!b) {
      ++i;
      continue;
    }
    slot->frame = b;
    repost_.push_back(slot);
    starved_[i] = starved_.back();
    starved_.pop_back();
  }
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

void Engine::dispatch(const fabric::Completion& c) {
  // One completion's failure (e.g. BSPK_ERR_NOMEM in a handler) must not
  // lose the others of the batch, nor leave a slot or a send unaccounted
  // (issue 12, defect 6): it is recorded and thrown by the waiting call.
  try {
    dispatch_one(c);
  } catch (const Error& e) {
    raise_async(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    raise_async(BSPK_ERR_NOMEM, "out of memory while handling an arrival or a completion");
  }
}

void Engine::dispatch_one(const fabric::Completion& c) {
  switch (c.kind) {
    case fabric::CompletionKind::Received:
      on_recv(recv_slot_of(c.context), c.len);
      return;
    case fabric::CompletionKind::Sent:
    case fabric::CompletionKind::Read:
      complete_op(send_op_of(c.context));
      return;
  }
}

void Engine::on_recv(RecvSlot* slot, size_t len) {
  // The slot (and its header) is reposted only before this process next waits.
  const Header& h = *slot->hdr;
  if (len < sizeof(Header) || h.magic != wire::magic_word() || h.payload != len - sizeof(Header)) {
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
  // Every message but the flow-control ones proves its sender's superstep.
  if (h.kind != wire::kStepQuery && h.kind != wire::kStepNotice) note_peer_step(h.src, h.step);
  const Handler& handle = handlers_[h.kind];
  bool kept = false;
  if (!handle) {
    raise_async(BSPK_ERR_FABRIC,
                strprintf("received a message of unknown kind %u from pid %d", unsigned(h.kind), h.src));
  } else {
    try {
      kept = handle(Incoming{h, slot->frame, h.payload, slot->small});
    } catch (const Error& e) {
      raise_async(e.code(), e.what());  // the slot is reposted below all the same
    }
  }
  if (kept) {  // the handler kept the buffer: the slot needs a fresh one
    slot->frame = (slot->small ? small_ : frames_).try_alloc();
    if (!slot->frame) {
      // At the pool's limit: the slot waits (unposted) until a buffer is
      // freed; the others stay posted. Reported once per wait.
      starved_.push_back(slot);
      if (starved_.size() == 1)  // once, not per slot
        raise_async(BSPK_ERR_NOMEM,
                    strprintf("no free %s for a receive slot (BSPK_POOL_LIMIT reached): arrivals slow down until "
                              "regions (received messages included) are freed",
                              slot->small ? "4 KiB buffer" : "frame"));
      return;
    }
  }
  // Repost later (before this process next waits): keeps fi_trecvmsg off the
  // path between a message's arrival and the program seeing it.
  repost_.push_back(slot);
}

void Engine::message_arrived(uint32_t s, int src) {
  ++progress_events_;
  if (wire::step_before(s, step_)) {
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

}  // namespace bspk::sync
