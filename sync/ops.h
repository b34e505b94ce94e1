// sync/ops.h -- the engine's in-flight operations (internal to sync/).
//
// Each starts with the fabric's OpContext, so the context pointer a
// Completion carries is the operation itself.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "fabric/fabric.h"
#include "sync/wire.h"

namespace bspk::sync {

// A send, control message or one-sided read in flight.
struct SendOp {
  fabric::OpContext ctx;        // first: see above
  wire::Header* hdr = nullptr;  // from the header pool
  uintptr_t ctrl_frame = 0;     // frame holding a control payload (freed at completion)
  bool ctrl_small = false;      // ctrl_frame is a small buffer
  uint64_t tag = wire::kTagLarge;  // receive class of the message
  uint32_t region = 0;          // comem region the payload belongs to (0: none)
  uint32_t step = 0;
  int dest = 0;
  bool counted = false;         // part of this superstep's own sends (sync waits for it)
  bool* done = nullptr;         // set when a one-sided read completes
  bool user_read = false;       // a read of program memory (reads.cpp): counted in reads_in_flight_
  // Header + payload, or a split body of up to kMaxBodyFrames frames.
  static constexpr size_t kMaxIov = wire::kMaxBodyFrames > 2 ? wire::kMaxBodyFrames : 2;
  iovec iov[kMaxIov];
  void* desc[kMaxIov];
  size_t iov_count = 1;
};

// A posted receive: a header slot and a whole free frame (or a small buffer).
// A body slot (split large messages, sync/wire.h kTagBody) is posted for one
// announced body group from one sender: parts[i] holds the i-th header of the
// group (received before) and the frame its payload lands in; hdr and frame
// are unused.
struct RecvSlot {
  fabric::OpContext ctx;  // first: see above
  wire::Header* hdr = nullptr;
  uintptr_t frame = 0;
  bool small = false;  // a small buffer for messages tagged kTagSmall
  bool body = false;   // a body slot
  bool untouched = false;  // frame fresh from its slab: touched before it is posted (post_slot)
  // Body slots only.
  struct Part {
    wire::Header h;
    uintptr_t frame = 0;
  };
  uint32_t nparts = 0;  // headers of the group in so far
  Part parts[wire::kMaxBodyFrames];
  size_t body_bytes() const {
    size_t n = 0;
    for (uint32_t i = 0; i < nparts; ++i) n += parts[i].h.payload;
    return n;
  }
};

// Merge iovecs that are adjacent in memory and in one registration (equal
// descriptors) in place; returns the new count. A split body's frames that
// lie next to each other travel as one iovec: rxm reads a rendezvous payload
// one remote iovec at a time, and one read of 1 MiB costs less than four of
// 256 KiB (bench/pingpong, tcp, 4 MiB messages).
inline size_t coalesce(iovec* iov, void** desc, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    if (k && desc[k - 1] == desc[i] && static_cast<char*>(iov[k - 1].iov_base) + iov[k - 1].iov_len == iov[i].iov_base) {
      iov[k - 1].iov_len += iov[i].iov_len;
      continue;
    }
    iov[k] = iov[i];
    desc[k++] = desc[i];
  }
  return k;
}

static_assert(std::is_standard_layout_v<SendOp> && std::is_standard_layout_v<RecvSlot>,
              "the context must be the first member of a standard-layout operation");

inline SendOp* send_op_of(fabric::OpContext* c) { return reinterpret_cast<SendOp*>(c); }
inline RecvSlot* recv_slot_of(fabric::OpContext* c) { return reinterpret_cast<RecvSlot*>(c); }

}  // namespace bspk::sync
