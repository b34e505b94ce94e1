// mp/wire.h -- message passing's wire vocabulary [BSPk §6.1].
//
// One kind: a Data message is one frame (or the only, empty part) of a
// bspk_send. Its header (sync/wire.h) carries seq (message number from src to
// this destination in the superstep), frame / nframes (this frame's index and
// the message's frame count, 0 for an empty message), skew (slot of element 0
// within the first frame), nelems and elem_size, and the user tag of
// bspk_send_tag in u32[0] (low 32 bits) and u32[1] (high), 0 for bspk_send,
// the same in every fragment. Data messages are counted arrivals: one per
// complete message.
#pragma once

#include "sync/wire.h"

namespace bspk::mp {

constexpr wire::Kind kData = 1;

// The user tag in a Data header's u32[0] (low 32 bits) and u32[1] (high).
inline uint64_t user_tag(const wire::Header& h) { return uint64_t{h.u32[0]} | (uint64_t{h.u32[1]} << 32); }
inline void set_user_tag(wire::Header& h, uint64_t tag) {
  h.u32[0] = static_cast<uint32_t>(tag);
  h.u32[1] = static_cast<uint32_t>(tag >> 32);
}

// The most frames one message may span (1 TiB of 64 KiB frames): bspk_send
// refuses a longer message, and a receiver refuses a header announcing one
// before it sizes anything by it.
constexpr uint64_t kMaxFrames = uint64_t{1} << 24;

// Why the header of one Data fragment with `payload` bytes cannot be part of a
// well-formed message for a receiver with `frame_size`-byte frames, or nullptr
// if it can: element size, skew, element count (bounded first, so no sum
// wraps), frame count and index, payload length. Pure: the fuzz target
// (tests/fuzz) drives it with arbitrary headers. Consistency across the
// fragments of one message is checked by the receiver (mp.cpp).
const char* check_data_header(const wire::Header& h, size_t payload, size_t frame_size);

}  // namespace bspk::mp
