// mp/mp.h -- bulk-synchronous message passing on comem frames [BSPk §6.1, Fig. 4].
//
// bspk_send(dest, p, n): the n elements from p are sent frame by frame, each
// frame straight from the region's memory (one fi_tsendmsg of header + frame
// slice per frame, through the sync engine). Nothing is copied.
//
// Receiving: each frame lands in a free frame posted by the engine; this layer
// keeps those frames, groups them by (sender, message number) and, when a
// message is complete, reports it to the engine for counting. At the boundary
// into superstep s+1 the messages sent in s become the inbox, ordered by sender
// pid and then by send order; bspk_recv() turns the next one into a region made
// of the very frames it arrived in. Unclaimed messages are destroyed at the
// next boundary and their frames recycled.
//
// To this process itself: the message is copied at the call, fragment by
// fragment, into buffers of the receive class each fragment would land in,
// and put into this superstep's box at once, counted as arrived
// (send_to_self): the one copy counted in bytes_copied.
//
// bspk_send_buf(dest, src, nbytes) copies the bytes into a fresh anonymous
// region (comem::Comem::create_filled: frames, or one small buffer for up to
// 4 KiB), sends it as above and frees it at once: its frames return to the
// pool when the sends complete (Comem::release). The receiver cannot tell it
// from a bspk_send of nbytes 1-byte elements.
#pragma once

#include <bspk.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "base/stats.h"
#include "comem/region.h"
#include "mp/wire.h"
#include "sync/engine.h"
#include "sync/step_ring.h"

namespace bspk::mp {

class MessagePassing {
 public:
  MessagePassing(sync::Engine& engine, comem::Comem& comem, Stats& stats);

  // bspk_send (tag 0) and bspk_send_tag. The tag travels in the header words
  // u32[0..1] of every fragment (no extra bytes on the wire) and becomes the
  // received region's tag. Throws bspk::Error for bad pid / pointer / range.
  void send(int dest, const bspk_ptr& p, uint64_t n, uint64_t tag = 0);
  // bspk_send_buf: nbytes from ordinary memory, copied at the call into a
  // staging region of 1-byte elements (the one copy, in bytes_copied), sent
  // from it as by send(), the region freed as soon as its sends complete.
  void send_bytes(int dest, const void* src, uint64_t nbytes);
  // bspk_recv: BSPK_NULL when the inbox is empty.
  bspk_ptr recv();
  // bspk_recv_contiguous: the next message as a contiguous region. A message
  // in at most one frame (or small buffer) is that frame, as recv() gives it;
  // one of several frames is copied into a fresh run of consecutive frames
  // (bytes_copied) and its frames recycled. If that allocation fails the
  // message stays next in the inbox.
  bspk_ptr recv_contiguous();

 private:
  struct Msg {
    int src = 0;
    uint32_t seq = 0;
    uint32_t skew = 0;
    uint32_t elem_size = 0;
    uint32_t nframes = 0;
    uint32_t got = 0;
    uint64_t nelems = 0;
    uint64_t tag = 0;               // bspk_send_tag's tag, 0 for bspk_send
    bool small = false;             // frame0 is a small buffer
    uintptr_t frame0 = 0;           // the frame of a one-frame message (no allocation)
    std::vector<uintptr_t> frames;  // the frames of a multi-frame message
    const uintptr_t* frame_list() const { return nframes == 1 ? &frame0 : frames.data(); }
  };
  struct Box {  // arrivals of one superstep
    std::vector<Msg> done;
    std::unordered_map<uint64_t, Msg> partial;  // key: src << 32 | seq
    uint64_t bytes = 0;                         // payload bytes of `done`
    void reset() {
      done.clear();
      if (!partial.empty()) partial.clear();  // (clear() also wipes every bucket)
      bytes = 0;
    }
  };

  bool on_data(const wire::Header& h, uintptr_t frame, size_t payload, bool small);
  void send_to_self(const wire::Header& h, const comem::Region& r, uint64_t offset);
  static Msg msg_of(const wire::Header& h, int src);
  void on_advance(uint32_t new_step);
  Box& box(uint32_t step);
  void drop(Msg& m);
  void complete(uint32_t step, Msg&& m);
  static bool inbox_before(const Msg& a, const Msg& c);

  sync::Engine& engine_;
  comem::Comem& comem_;
  Stats& stats_;
  sync::StepRing<Box> ring_;
  std::vector<Msg> inbox_;
  size_t inbox_pos_ = 0;
  std::vector<uint32_t> seq_;  // next message number per destination, this superstep
  std::vector<int> seq_used_;  // destinations with seq_ != 0 (reset in O(touched))
};

}  // namespace bspk::mp
