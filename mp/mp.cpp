#include "mp/mp.h"

#include <algorithm>
#include <cstring>

#include "base/copy.h"
#include "base/error.h"

namespace bspk::mp {

MessagePassing::MessagePassing(sync::Engine& engine, comem::Comem& comem, Stats& stats)
    : engine_(engine), comem_(comem), stats_(stats), ring_(engine.options().max_ahead) {
  seq_.assign(static_cast<size_t>(engine.nprocs()), 0);
  engine_.on(kData, [this](const sync::Engine::Incoming& in) { return on_data(in.h, in.buf, in.len, in.small); });
  engine_.carry_counts_on(kData);  // a counted superstep's count may travel in the last small message
  engine_.on_advance([this](uint32_t s) { on_advance(s); });
}

void MessagePassing::send(int dest, const bspk_ptr& p, uint64_t n, uint64_t tag) {
  if (dest < 0 || dest >= engine_.nprocs())
    fail(BSPK_ERR_PID, "destination pid %d is outside [0, %d)", dest, engine_.nprocs());
  comem::Region& r = comem_.local(p);
  if (p.offset > r.nelems || n > r.nelems - p.offset)
    fail(BSPK_ERR_RANGE,
         "%llu elements from element %llu run past the end of the region (%llu elements)",
         (unsigned long long)n, (unsigned long long)p.offset, (unsigned long long)r.nelems);
  if (n > 0 && n / r.epf + 2 > kMaxFrames)
    fail(BSPK_ERR_RANGE, "a message of %llu elements spans more than %llu frames, the most one message may span",
         (unsigned long long)n, (unsigned long long)kMaxFrames);

  wire::Header h{};
  if (seq_[static_cast<size_t>(dest)] == 0) seq_used_.push_back(dest);
  h.seq = seq_[static_cast<size_t>(dest)]++;
  h.nelems = n;
  h.elem_size = r.elem_size;
  set_user_tag(h, tag);
  if (n > 0) {
    uint64_t f0, skew;
    r.locate(p.offset, &f0, &skew);
    h.skew = static_cast<uint32_t>(skew);
    h.nframes = static_cast<uint32_t>((skew + n + r.epf - 1) / r.epf);
  }
  if (dest == engine_.pid() && comem_.small_pool()) {
    send_to_self(h, r, p.offset);
  } else if (n == 0) {
    // An empty message: a header alone.
    engine_.send_frame(dest, kData, h, nullptr, 0, nullptr, 0, sync::Engine::class_tag(h, 0));
  } else {
    uint64_t i = p.offset, left = n;
    uint32_t in_flight = 0;  // sends that still read the region's frames
    for (uint32_t k = 0; k < h.nframes; ++k) {
      uint64_t cnt = std::min<uint64_t>(r.span(i), left);
      auto* addr = static_cast<char*>(r.elem(i));
      h.frame = k;
      in_flight += engine_.send_frame(dest, kData, h, addr, cnt * r.elem_size, &comem_.pool_of(r), p.region,
                                      sync::Engine::class_tag(h, cnt * r.elem_size));
      i += cnt;
      left -= cnt;
    }
    engine_.flush_split();
    comem_.send_started(r, in_flight);
  }
  engine_.count_sent(dest);
  stats_.msgs_sent++;
  if (dest == engine_.pid()) {
    stats_.ops_self++;
    stats_.bytes_self += n * r.elem_size;
  }
  stats_.bytes_sent += n * r.elem_size;
}

// The message a data header (of its first fragment) describes, from src, no frames yet.
MessagePassing::Msg MessagePassing::msg_of(const wire::Header& h, int src) {
  Msg m;
  m.src = src;
  m.seq = h.seq;
  m.skew = h.skew;
  m.elem_size = h.elem_size;
  m.nelems = h.nelems;
  m.nframes = h.nframes;
  m.tag = user_tag(h);
  return m;
}

// A message to this process: copied at once, frame by frame, into buffers of
// the class receive slots would give its fragments (one small buffer for a
// message of one frame of up to 4 KiB, else frames, each fragment from the
// buffer's start, as arrivals land), and put straight into this superstep's
// box, counted as arrived. What the engine's way (send_frame -> send_self per
// fragment, deliver_self at the sync, on_data with its header checks and the
// assembly of fragments) ended with, without the round: callgrind of
// bench/phases at p = 1, one word to itself per superstep, 1,195 -> 1,012
// instructions in bspk_send + bspk_sync (README, Layout).
void MessagePassing::send_to_self(const wire::Header& h, const comem::Region& r, uint64_t offset) {
  const uint64_t len = h.nelems * r.elem_size;
  const bool small = h.nframes == 1 && sync::Engine::class_tag(h, len) == wire::kTagSmall;
  comem::FramePool& pool = small ? *comem_.small_pool() : comem_.frames();
  Msg m = msg_of(h, engine_.pid());
  m.small = small;
  if (h.nframes > 1) m.frames.reserve(h.nframes);
  try {
    for (uint64_t i = offset, left = h.nelems; left;) {  // cut as send() cuts fragments
      const uint64_t cnt = std::min<uint64_t>(r.span(i), left);
      const uintptr_t buf = pool.alloc();  // BSPK_ERR_NOMEM at the pool's limit, from the send call
      (h.nframes == 1 ? m.frame0 : m.frames.emplace_back()) = buf;
      bspk::copy_bytes(reinterpret_cast<void*>(buf), r.elem(i), cnt * r.elem_size);
      i += cnt;
      left -= cnt;
    }
  } catch (...) {
    drop(m);  // the buffers taken so far go back
    throw;
  }
  m.got = h.nframes;
  stats_.bytes_copied += len;  // like a local bspk_copy: the one message the runtime copies
  complete(engine_.step(), std::move(m));
}

void MessagePassing::send_bytes(int dest, const void* src, uint64_t nbytes) {
  if (dest < 0 || dest >= engine_.nprocs())
    fail(BSPK_ERR_PID, "destination pid %d is outside [0, %d)", dest, engine_.nprocs());
  if (!src && nbytes)
    fail(BSPK_ERR_ARG, "source buffer is NULL (with %llu bytes to send)", (unsigned long long)nbytes);
  bspk_ptr p = comem_.create_filled(src, nbytes, 1);
  try {
    send(dest, p, nbytes);
  } catch (...) {
    comem_.release(p.region);
    throw;
  }
  comem_.release(p.region);  // destroyed now, or when its last send completes
  stats_.bytes_copied += nbytes;
}

bspk_ptr MessagePassing::recv() {
  if (inbox_pos_ >= inbox_.size()) return BSPK_NULL;
  Msg& m = inbox_[inbox_pos_++];
  bspk_ptr p = comem_.adopt(m.frame_list(), m.nframes, m.skew, m.nelems, m.elem_size, m.src, m.small);
  comem_.local(p).tag = m.tag;
  m.frames.clear();
  m.frame0 = 0;
  m.nframes = 0;
  return p;
}

bspk_ptr MessagePassing::recv_contiguous() {
  if (inbox_pos_ >= inbox_.size()) return BSPK_NULL;
  const Msg& m = inbox_[inbox_pos_];
  if (m.nframes <= 1) {
    // Already in one piece of memory: hand over its frame, no copy.
    bspk_ptr p = recv();
    comem_.local(p).contiguous = true;  // and keep it one piece (no frame flips)
    return p;
  }
  // Allocate first: if that fails, the message is still there for bspk_recv.
  bspk_ptr c = comem_.create(nullptr, 0, m.nelems, m.elem_size, true);
  bspk_ptr p = recv();
  comem::Region& from = comem_.local(p);
  comem::Region& to = comem_.local(c);
  auto* dst = static_cast<char*>(to.elem(0));
  const uint64_t es = from.elem_size;
  for (uint64_t i = 0; i < from.nelems;) {
    uint64_t k = from.span(i);
    bspk::copy_bytes(dst + i * es, from.elem(i), k * es);
    i += k;
  }
  stats_.bytes_copied += from.nelems * es;
  to.sender = from.sender;
  to.tag = from.tag;
  c.sender = from.sender;
  comem_.release(p.region);  // its frames go back to the pool
  return c;
}

MessagePassing::Box& MessagePassing::box(uint32_t step) {
  return ring_.at(step, engine_.step(), [this](Box& old) {
    for (auto& m : old.done) drop(m);
    for (auto& [k, m] : old.partial) drop(m);
  });
}

void MessagePassing::drop(Msg& m) {
  if (m.frame0) (m.small ? *comem_.small_pool() : comem_.frames()).free(m.frame0);
  for (uintptr_t f : m.frames)
    if (f) comem_.frames().free(f);
  m.frames.clear();
  m.frame0 = 0;
}

// The inbox order: by sender pid, then by send order (bspk.h, bspk_recv).
bool MessagePassing::inbox_before(const Msg& a, const Msg& c) {
  return a.src != c.src ? a.src < c.src : a.seq < c.seq;
}

// A message is complete: into its superstep's box, which is kept in inbox
// order as messages come (usually at the end: arrivals are in order per
// sender, and a process's messages to itself go in as sent), so that the
// box becomes the inbox at the boundary as it is (until 2026-12-02 it was
// sorted there: at p = 2 every superstep of the process with the higher pid,
// whose message to itself came before the other's, about 115 instructions).
void MessagePassing::complete(uint32_t step, Msg&& m) {
  stats_.msgs_recv++;
  stats_.bytes_recv += m.nelems * m.elem_size;
  int src = m.src;
  Box& b = box(step);
  b.bytes += m.nelems * m.elem_size;
  if (b.done.empty() || !inbox_before(m, b.done.back()))
    b.done.push_back(std::move(m));
  else
    b.done.insert(std::upper_bound(b.done.begin(), b.done.end(), m, inbox_before), std::move(m));
  engine_.message_arrived(step, src);
}

const char* check_data_header(const wire::Header& h, size_t payload, size_t frame_size) {
  if (h.elem_size == 0 || h.elem_size > frame_size) return "element size out of range";
  const uint64_t epf = frame_size / h.elem_size;
  if (h.nelems == 0) {
    if (h.nframes != 0 || payload != 0) return "empty message with payload";
    return nullptr;
  }
  if (h.skew >= epf) return "skew beyond frame";
  // Bounded before any arithmetic on it (skew + nelems must not wrap), and so
  // that no header makes this process allocate more than kMaxFrames frame
  // slots for one message.
  if (h.nelems > kMaxFrames * epf) return "element count beyond any message this process can receive";
  if (h.nframes != (h.skew + h.nelems + epf - 1) / epf || h.frame >= h.nframes)
    return "frame count does not match element count";
  uint64_t start = h.frame == 0 ? 0 : (epf - h.skew) + (uint64_t{h.frame} - 1) * epf;
  uint64_t cap = h.frame == 0 ? epf - h.skew : epf;
  uint64_t cnt = std::min<uint64_t>(cap, h.nelems - start);
  if (payload != cnt * h.elem_size) return "frame payload length does not match its header";
  return nullptr;
}

bool MessagePassing::on_data(const wire::Header& h, uintptr_t frame, size_t payload, bool small) {
  auto bad = [&](const char* why) {
    engine_.raise_async(BSPK_ERR_FABRIC,
                        strprintf("malformed message from pid %d (superstep %u): %s", h.src, h.step, why));
    return false;
  };
  if (const char* why = check_data_header(h, payload, comem_.frame_size())) return bad(why);
  if (wire::step_before(h.step, engine_.step())) {
    // Counted (and reported) by the engine as an excess message; not kept.
    engine_.message_arrived(h.step, h.src);
    return false;
  }
  Msg m = msg_of(h, h.src);
  if (small && h.nframes > 1) return bad("a multi-frame message in a small buffer");
  if (h.nframes <= 1) {
    if (h.nframes == 1) {
      m.frame0 = frame;
      m.small = small;
    }
    m.got = h.nframes;
    complete(h.step, std::move(m));
    return h.nframes == 1;
  }
  Box& b = box(h.step);
  uint64_t key = (uint64_t(uint32_t(h.src)) << 32) | h.seq;
  auto it = b.partial.find(key);
  if (it == b.partial.end()) {
    m.frames.assign(h.nframes, 0);
    it = b.partial.emplace(key, std::move(m)).first;
  }
  Msg& pm = it->second;
  // Every fragment of a message must describe the same message as its first
  // (a later one with another frame count would index past pm.frames).
  if (pm.nframes != h.nframes || pm.nelems != h.nelems || pm.elem_size != h.elem_size || pm.skew != h.skew ||
      pm.tag != user_tag(h))
    return bad(
        "a fragment disagrees with the first fragment of its message (frames, elements, element size, skew or tag)");
  if (pm.frames[h.frame] != 0) return bad("duplicate frame");
  pm.frames[h.frame] = frame;
  if (++pm.got == pm.nframes) {
    Msg done = std::move(pm);
    b.partial.erase(it);
    complete(h.step, std::move(done));
  }
  return true;
}

void MessagePassing::on_advance(uint32_t new_step) {
  // Unclaimed messages of the superstep that just ended are destroyed.
  for (size_t k = inbox_pos_; k < inbox_.size(); ++k) drop(inbox_[k]);
  inbox_.clear();
  inbox_pos_ = 0;
  for (int d : seq_used_) seq_[static_cast<size_t>(d)] = 0;
  seq_used_.clear();
  // Nothing arrived for the superstep that ended: no box was made for it
  // (found, not made here: a superstep without messages costs no box reset).
  Box* held = ring_.find(new_step - 1);
  if (!held) return;
  Box& b = *held;
  inbox_.swap(b.done);  // both keep their capacity: no allocation per superstep
  stats_.msgs_delivered += inbox_.size();
  stats_.bytes_delivered += b.bytes;
  b.bytes = 0;
  if (!b.partial.empty()) {  // cannot happen when counts are right (and clear() wipes every bucket)
    for (auto& [k, m] : b.partial) drop(m);
    b.partial.clear();
  }
  // (already in inbox order: complete)
}

}  // namespace bspk::mp
