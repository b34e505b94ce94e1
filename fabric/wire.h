// fabric/wire.h -- what BSPk puts on the wire.
//
// Every message BSPk sends is one fi_sendmsg of two iovecs: a 64-byte header
// from a small registered header pool, then (optionally) the payload straight
// out of one comem frame. The receiver posts the same two-iovec shape, a header
// slot and a whole free frame, so the payload lands in a frame that becomes part
// of the receiver's region: zero copies by the runtime [BSPk §4].
//
// Every header carries the sender's superstep number, in full (32 bits), so a
// process that is ahead never corrupts one that is behind [RBS §5]: arrivals
// are counted per superstep, never "since I started waiting".
//
// DSM copies travel as Store / FetchReply fragments of at most one frame each
// (dsm/dsm.h), by the same two-iovec sends. A future RMA path (fi_writedata into
// frames the target announced) must fit its remote CQ data in 32 bits because
// verbs gives only 4 bytes; the layout is fixed here so counting covers it:
//   bits 31..29  kind (CqKind)
//   bits 28..16  superstep modulo 2^13 (unambiguous: processes exchanging data
//                are never more than kMaxAheadLimit < 2^12 supersteps apart)
//   bits 15..0   sender pid modulo 2^16 (together with the source address)
//
// All multi-byte fields are in the sender's byte order; the bootstrap refuses
// to mix byte orders or wire versions in one job.
#pragma once

#include <cstdint>
#include <cstring>

namespace bspk::wire {

constexpr uint32_t kMagic = 0x4B505342u;  // "BSPK" little-endian
constexpr uint32_t kVersion = 2;          // bump on any layout or protocol change

enum class Kind : uint8_t {
  Data = 1,        // one frame (or the only, empty part) of an MP message
  CollUp = 2,      // will_send / counted reduction: child -> parent (payload: counts)
  CollDown = 3,    // reduction result: parent -> child (payload: counts)
  StepQuery = 4,   // flow control: "tell me when you reach superstep `value`"
  StepNotice = 5,  // flow control: "I have reached superstep `value`"
  Hello = 6,       // start-up/shutdown barrier round `value` (not superstep-tagged)
  // DSM (dsm/dsm.h). Store and FetchReq are counted arrivals at their target
  // [issue 3 rule 5]; FetchReply is tracked by the fetcher; Dir is control.
  Store = 7,       // one fragment (<= one frame) of a bspk_copy into a remote region
  FetchReq = 8,    // "send me n elements of your region r from offset o at the end of `step`"
  FetchReply = 9,  // one fragment of the answer, sent straight from the owner's frames
  Dir = 10,        // directory of named regions (payload: dsm::DirRec)
};
constexpr bool is_dsm_kind(uint8_t k) { return k >= 7 && k <= 10; }

// Receive classes, carried as the libfabric tag of every message: a message
// whose payload fits kSmallPayload bytes is tagged kTagSmall and lands in a
// small (4 KiB) buffer; anything else is tagged kTagLarge and lands in a whole
// frame. Either way the buffer becomes the receiver's region: no copies.
constexpr uint64_t kTagLarge = 1;
constexpr uint64_t kTagSmall = 2;
constexpr uint32_t kSmallPayload = 4096;

// Reduction flags carried in CollUp/CollDown (which kinds of sync took part).
enum : uint32_t {
  kSyncExpect = 1u << 0,
  kSyncWillSend = 1u << 1,
  kSyncCounted = 1u << 2,
  kSyncFinalize = 1u << 3,
};

struct Header {
  uint32_t magic;      // kMagic ^ kVersion
  uint8_t kind;        // Kind
  uint8_t flags;       // reserved, 0
  uint16_t reserved;   // 0
  uint32_t step;       // sender's superstep when the message was issued
  int32_t src;         // sender pid
  uint32_t seq;        // Data: message number from src to this dest in `step`
  uint32_t frame;      // Data: index of this frame within the message
  uint32_t nframes;    // Data: frames in the message (0 for an empty message)
  uint32_t skew;       // Data: slot of element 0 within the message's first frame
  uint64_t nelems;     // Data: elements in the message; Coll: payload count
  uint32_t elem_size;  // Data: bytes per element
  uint32_t payload;    // bytes of payload following the header
  // Control payload that fits in the header (Coll: kinds + first pids; Step*: value)
  uint32_t u32[4];
};
static_assert(sizeof(Header) == 64, "wire header must stay 64 bytes");

constexpr uint32_t magic_word() { return kMagic ^ kVersion; }

// Remote CQ data (32 bits, see above).
enum class CqKind : uint32_t { Store = 1, FetchReply = 2 };
constexpr uint32_t kCqStepBits = 13;
constexpr uint32_t kCqPidBits = 16;
constexpr uint32_t kMaxAheadLimit = (1u << (kCqStepBits - 1)) - 1;

constexpr uint32_t cq_data(CqKind k, uint32_t step, uint32_t pid) {
  return (static_cast<uint32_t>(k) << 29) | ((step & ((1u << kCqStepBits) - 1)) << kCqPidBits) |
         (pid & ((1u << kCqPidBits) - 1));
}
constexpr CqKind cq_kind(uint32_t d) { return static_cast<CqKind>(d >> 29); }
constexpr uint32_t cq_step_low(uint32_t d) { return (d >> kCqPidBits) & ((1u << kCqStepBits) - 1); }
constexpr uint32_t cq_pid_low(uint32_t d) { return d & ((1u << kCqPidBits) - 1); }

// Reconstruct a full superstep from its low bits, given a reference step known
// to be within kMaxAheadLimit of it (the receiver's current superstep).
constexpr uint32_t cq_step_full(uint32_t low, uint32_t ref) {
  constexpr int64_t m = int64_t{1} << kCqStepBits;
  int64_t r = ref;
  int64_t cand = (r & ~(m - 1)) | low;
  // choose the candidate nearest to ref
  if (cand + m / 2 < r) cand += m;
  else if (cand > r + m / 2) cand -= m;
  return static_cast<uint32_t>(cand);  // superstep counters wrap modulo 2^32
}

}  // namespace bspk::wire
