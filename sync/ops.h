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
  iovec iov[2];
  void* desc[2];
  size_t iov_count = 1;
};

// A posted receive: a header slot and a whole free frame (or a small buffer).
// A body slot (split large messages, sync/wire.h kTagBody) is a frame posted
// for one announced payload from one sender; hdr then holds the header that
// announced it, received before.
struct RecvSlot {
  fabric::OpContext ctx;  // first: see above
  wire::Header* hdr = nullptr;
  uintptr_t frame = 0;
  bool small = false;  // a small buffer for messages tagged kTagSmall
  bool body = false;   // a body slot
};

static_assert(std::is_standard_layout_v<SendOp> && std::is_standard_layout_v<RecvSlot>,
              "the context must be the first member of a standard-layout operation");

inline SendOp* send_op_of(fabric::OpContext* c) { return reinterpret_cast<SendOp*>(c); }
inline RecvSlot* recv_slot_of(fabric::OpContext* c) { return reinterpret_cast<RecvSlot*>(c); }

}  // namespace bspk::sync
