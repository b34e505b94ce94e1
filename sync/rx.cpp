// sync/rx.cpp -- receiving: the posted receive slots (a header slot plus a
// whole frame or a small buffer each), small arrivals a transport hands over
// without a slot (take: on one host, ring messages), validation of every
// arrival, dispatch through the kind table, and arrival counting per
// superstep.
#include <bspk.h>

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "base/iov.h"
#include "sync/engine.h"

namespace bspk::sync {

using wire::Header;

// Frame slots: slots_[0, rx_depth), of which the first large_active_ are in
// use (posted, waiting to be reposted, or starved); the others have no frame
// until activate_large() takes them in. Small slots follow, all posted.
void Engine::start() {
  slots_.resize(opt_.rx_depth + opt_.small_rx_depth);  // never resized again: slots are contexts
  for (size_t i = 0; i < slots_.size(); ++i) {
    RecvSlot& s = slots_[i];
    s.small = i >= opt_.rx_depth;
    s.hdr = new_header();
    if (!s.small) continue;
    s.frame = small_.alloc(&s.untouched);
    post_slot(&s);
  }
  large_active_ = 0;
  activate_large(opt_.rx_depth_start);  // (at least 2: BSPK_RX_DEPTH's range)
  flush_reposts();
  ep_.set_arrival_sink(this);
}

// Take frame slots into use up to n (at most rx_depth): each gets a frame
// and is posted before this process next waits (flush_reposts), or waits
// starved like any slot when the pool is at its limit.
void Engine::activate_large(uint32_t n) {
  n = std::min(n, opt_.rx_depth);
  for (; large_active_ < n; ++large_active_) {
    RecvSlot* s = &slots_[large_active_];
    s->frame = frames_.try_alloc(&s->untouched);
    (s->frame ? repost_ : starved_).push_back(s);
  }
}

void Engine::post_slot(RecvSlot* slot) {
  comem::FramePool& pool = slot->small ? small_ : frames_;
  // A frame never touched would take a page fault per page from inside the
  // arrival's copy (tcp: the kernel's, ~2.3 us each on this VM): the first
  // BSPK_RX_DEPTH arrivals of 256 KiB, each into a fresh frame of the first
  // slab, took 250 us per superstep against 100 us once frames were recycled
  // (tcp p = 2 exchange). Touched here instead: at bspk_init for the first
  // slots, else when the slot is reposted (before this process next waits).
  if (slot->untouched) {
    pool.touch(slot->frame);
    slot->untouched = false;
  }
  iovec iov[2] = {{slot->hdr, sizeof(Header)},
                  {reinterpret_cast<void*>(slot->frame), slot->small ? wire::kSmallPayload : pool.frame_size()}};
  void* desc[2] = {headers_.desc(reinterpret_cast<uintptr_t>(slot->hdr)), pool.desc(slot->frame)};
  uint64_t tag = slot->small ? wire::kTagSmall : wire::kTagLarge;
  if (!slot->small) ++large_posted_;
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
  // Announced bodies waiting for a frame, in the order they were announced.
  while (!body_waiting_.empty()) {
    RecvSlot* b = body_waiting_.front();
    if (!fill_body(b)) break;
    body_waiting_.pop_front();
    post_body(b);
  }
  // Slots whose buffer went to a region while the pool was at its limit:
  // given a fresh buffer (and posted) as soon as one can be had.
  for (size_t i = 0; i < starved_.size();) {
    RecvSlot* slot = starved_[i];
    uintptr_t b = (slot->small ? small_ : frames_).try_alloc(&slot->untouched);
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
  if (slot->body) {
    on_body(slot, len);
    return;
  }
  // An arrival that took the last posted frame: a burst may be coming (the
  // provider would hold or copy what finds no receive), so post twice as many
  // frames from now on (up to BSPK_RX_DEPTH).
  if (!slot->small && --large_posted_ == 0 && large_active_ < opt_.rx_depth) activate_large(2 * large_active_);
  // The slot (and its header) is reposted only before this process next waits.
  const Header& h = *slot->hdr;
  const bool announces = h.magic == wire::magic_word() && (h.flags & wire::kFlagBodyFollows);
  if (announces && len == sizeof(Header) && !ep_.eager_limit()) {
    raise_async(BSPK_ERR_FABRIC,
                strprintf("pid %d split a large message into header and body, which this process cannot receive "
                          "(BSPK_SPLIT_HEADER or the provider differ between processes): set them the same",
                          h.src));
    post_slot(slot);
    return;
  }
  if (!admit(h, len, announces)) {
    post_slot(slot);
    return;
  }
  if (announces) {
    on_body_header(h);
    repost_.push_back(slot);
    return;
  }
  if (h.flags & wire::kFlagCount) on_carried_count(h);  // (counted as a count message: before the data)
  if (deliver(h, slot->frame, slot->small)) {  // the handler kept the buffer: the slot needs a fresh one
    slot->frame = (slot->small ? small_ : frames_).try_alloc(&slot->untouched);
    if (!slot->frame) {
      // At the pool's limit: the slot waits (unposted) until a buffer is
      // freed; the others stay posted. Reported once per wait.
      starved_.push_back(slot);
      if (starved_.size() == 1)  // once, not per slot
        raise_async(BSPK_ERR_NOMEM,
                    strprintf("no free %s for a receive slot (BSPK_POOL_LIMIT reached): arrivals slow down until "
                              "regions (received messages included) are freed",
                              slot->small ? "4 KiB buffer" : "frame"),
                    /*waits=*/true);
      return;
    }
  }
  // Repost later (before this process next waits): keeps fi_trecvmsg off the
  // path between a message's arrival and the program seeing it.
  repost_.push_back(slot);
}

bool Engine::admit(const Header& h, size_t len, bool announces) {
  if (len < sizeof(Header) || h.magic != wire::magic_word() ||
      (announces ? len != sizeof(Header) : h.payload != len - sizeof(Header))) {
    raise_async(BSPK_ERR_FABRIC,
                strprintf("received a malformed message (%zu bytes, magic %#x): mismatched BSPk "
                          "versions in one job?",
                          len, h.magic));
    return false;
  }
  if (h.src < 0 || h.src >= nprocs_) {
    raise_async(BSPK_ERR_FABRIC, strprintf("received a message from unknown pid %d", h.src));
    return false;
  }
  // Every message but the flow-control ones proves its sender's superstep.
  if (h.kind != wire::kStepQuery && h.kind != wire::kStepNotice) note_peer_step(h.src, h.step);
  return true;
}

// A small message read where the transport found it (on one host: a ring's
// cells), instead of into a posted receive slot: its header onto the stack,
// its payload into sink_buf_, which its handler may keep (the next one then
// takes a fresh buffer); no completion, no slot to repost. Declined (false:
// the slot way, which knows them) for a body's header and when the small
// pool is at its limit. The same checks and counting as on_recv, and the
// ring's sender must be the header's.
bool Engine::take(int src, const iovec* pieces, size_t count, size_t len) {
  if (len < sizeof(Header) || len - sizeof(Header) > wire::kSmallPayload) return false;
  Header h{};  // (filled below: len >= sizeof h)
  const bool one = count == 1;  // (the common case: one ring cell)
  if (one) std::memcpy(&h, pieces[0].iov_base, sizeof h);
  else copy_range(pieces, count, 0, sizeof h, &h);
  if (h.magic == wire::magic_word() && (h.flags & wire::kFlagBodyFollows)) return false;
  if (!sink_buf_ && !(sink_buf_ = small_.try_alloc())) return false;
  if (one) std::memcpy(reinterpret_cast<void*>(sink_buf_), static_cast<const char*>(pieces[0].iov_base) + sizeof h, len - sizeof h);
  else copy_range(pieces, count, sizeof h, len - sizeof h, reinterpret_cast<void*>(sink_buf_));
  ++taken_;
  try {
    if (!admit(h, len, false)) return true;  // (reported; dropped)
    if (h.src != src) {
      raise_async(BSPK_ERR_FABRIC, strprintf("a message from pid %d says it is from pid %d", src, h.src));
      return true;
    }
    if (h.flags & wire::kFlagCount) on_carried_count(h);  // (counted as a count message: before the data)
    if (deliver(h, sink_buf_, true)) sink_buf_ = 0;  // the handler kept it
  } catch (const Error& e) {
    raise_async(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    raise_async(BSPK_ERR_NOMEM, "out of memory while handling an arrival");
  }
  return true;
}

// A count carried by a data message (wire::kFlagCount) goes to the count
// exchange as the kCountExchange message it stands for would: the sender's
// count for this process in h.step, from a counted superstep (the meta words
// of a counted sync from h.src).
void Engine::on_carried_count(const Header& h) {
  Header c{};
  c.magic = h.magic;
  c.kind = wire::kCountExchange;
  c.step = h.step;
  c.src = h.src;
  c.nelems = h.reserved;
  c.u32[0] = wire::kSyncCounted;
  c.u32[1] = c.u32[3] = static_cast<uint32_t>(-1);
  c.u32[2] = static_cast<uint32_t>(h.src);
  deliver(c, 0, true);
}

// Hand an arrival to its kind's handler. True if the handler kept buf.
bool Engine::deliver(const Header& h, uintptr_t buf, bool small) {
  const Handler& handle = handlers_[h.kind];
  if (!handle) {
    raise_async(BSPK_ERR_FABRIC,
                strprintf("received a message of unknown kind %u from pid %d", unsigned(h.kind), h.src));
    return false;
  }
  try {
    return handle(Incoming{h, buf, h.payload, small});
  } catch (const Error& e) {
    raise_async(e.code(), e.what());  // the buffer is reused all the same
    return false;
  }
}

// ---------------------------------------------------------------- split large messages (wire.h, kTagBody)

// A header announcing (part of) a body: taken in its sender's order
// (Header::reserved, see engine.h); a header that came early waits.
void Engine::on_body_header(const Header& h) {
  const uint32_t n = wire::body_group_size(h.flags), i = wire::body_group_index(h.flags);
  if (h.payload == 0 || h.payload > frames_.frame_size() || n > wire::kMaxBodyFrames || i >= n ||
      n > ep_.iov_limit()) {
    raise_async(BSPK_ERR_FABRIC, strprintf("pid %d announced a %u-byte body (part %u of %u): frames hold %zu bytes, "
                                           "a body at most %zu (mismatched BSPk versions or frame sizes in one "
                                           "job?)",
                                           h.src, h.payload, i + 1, n, frames_.frame_size(),
                                           std::min<size_t>(wire::kMaxBodyFrames, ep_.iov_limit())));
    return;
  }
  const size_t src = static_cast<size_t>(h.src);
  if (static_cast<int16_t>(h.reserved - body_next_[src]) < 0) {
    raise_async(BSPK_ERR_FABRIC, strprintf("pid %d announced body number %u twice (expected %u next)", h.src,
                                           unsigned(h.reserved), unsigned(body_next_[src])));
    return;
  }
  auto& early = body_early_[src];
  if (h.reserved != body_next_[src]) {  // an earlier header from src is still on its way
    early.push_back(h);
    return;
  }
  take_body_header(h);
  // Headers that came early and whose turn it is now.
  auto next = [&] {
    return std::find_if(early.begin(), early.end(), [&](const Header& e) { return e.reserved == body_next_[src]; });
  };
  for (auto it = next(); it != early.end(); it = next()) {
    Header e = *it;
    *it = early.back();
    early.pop_back();
    take_body_header(e);
  }
}

// The next header from its sender, in order: it opens a body group or joins
// the open one; when the group is complete, post one receive for its body
// (after the bodies already waiting for frames).
void Engine::take_body_header(const Header& h) {
  const size_t src = static_cast<size_t>(h.src);
  ++body_next_[src];
  const uint32_t n = wire::body_group_size(h.flags), i = wire::body_group_index(h.flags);
  RecvSlot*& open = body_open_[src];
  if (i == 0) {
    if (open) {
      raise_async(BSPK_ERR_FABRIC, strprintf("pid %d began a body group before the one it had begun was complete",
                                             h.src));
      release_body(open);
    }
    RecvSlot* b;
    if (body_free_.empty()) {
      b = &body_slots_.emplace_back();
      b->body = true;
    } else {
      b = body_free_.back();
      body_free_.pop_back();
    }
    b->nparts = 0;
    open = b;
  } else if (!open || open->nparts != i || wire::body_group_size(open->parts[0].h.flags) != n) {
    raise_async(BSPK_ERR_FABRIC, strprintf("pid %d sent part %u of a body group of %u out of its place", h.src,
                                           i + 1, n));
    return;
  }
  RecvSlot* b = open;
  b->parts[b->nparts++] = {h, 0};
  if (b->nparts < n) return;
  open = nullptr;
  if (!body_waiting_.empty() || !fill_body(b)) {
    if (body_waiting_.empty() && starved_.empty())  // once, not per body
      raise_async(BSPK_ERR_NOMEM,
                  "no free frame for an arriving message (BSPK_POOL_LIMIT reached): arrivals slow down until "
                  "regions (received messages included) are freed",
                  /*waits=*/true);
    body_waiting_.push_back(b);
    return;
  }
  post_body(b);
}

// A frame for every part of body slot b; false if the pool ran out first
// (the frames had so far stay with b).
bool Engine::fill_body(RecvSlot* b) {
  for (uint32_t i = 0; i < b->nparts; ++i)
    if (!b->parts[i].frame && !(b->parts[i].frame = frames_.try_alloc())) return false;
  return true;
}

void Engine::post_body(RecvSlot* b) {
  iovec iov[wire::kMaxBodyFrames];
  void* desc[wire::kMaxBodyFrames];
  for (uint32_t i = 0; i < b->nparts; ++i) {
    iov[i] = {reinterpret_cast<void*>(b->parts[i].frame), b->parts[i].h.payload};
    desc[i] = frames_.desc(b->parts[i].frame);
  }
  const size_t k = coalesce(iov, desc, b->nparts);
  const int src = b->parts[0].h.src;
  while (!ep_.post_recv_from(src, iov, desc, k, &b->ctx, wire::kTagBody)) {
    fabric::Completion c[8];  // receive queue full: progress and retry (as post_slot)
    fabric::CompletionError err;
    ssize_t n = ep_.poll(c, 8, &err);
    if (n < 0) handle_error(err);
    for (ssize_t i = 0; i < n; ++i) dispatch(c[i]);
  }
}

// A body is in: its headers (received before) and its frames make the
// messages' frames, handed over in the order they were sent.
void Engine::on_body(RecvSlot* b, size_t len) {
  if (len != b->body_bytes()) {
    raise_async(BSPK_ERR_FABRIC, strprintf("a message body from pid %d has %zu bytes, its %u header(s) announced %zu",
                                           b->parts[0].h.src, len, b->nparts, b->body_bytes()));
  } else {
    for (uint32_t i = 0; i < b->nparts; ++i)
      if (deliver(b->parts[i].h, b->parts[i].frame, false))
        b->parts[i].frame = 0;  // kept: the frame is the receiver's region now
  }
  release_body(b);
}

void Engine::release_body(RecvSlot* b) {
  for (uint32_t i = 0; i < b->nparts; ++i) {
    if (b->parts[i].frame) frames_.free(b->parts[i].frame);
    b->parts[i].frame = 0;
  }
  b->nparts = 0;
  body_free_.push_back(b);
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

uint64_t Engine::posted_bytes() const {
  uint64_t n = 0;
  for (const RecvSlot& s : slots_)
    if (s.frame) n += s.small ? small_.frame_size() : frames_.frame_size();
  return n;
}

}  // namespace bspk::sync
