// sync/wire.h -- the engine's wire format: the header every BSPk message
// starts with, the message-kind number space, the engine's own kinds and the
// receive classes.
//
// Every message BSPk sends is one fi_tsendmsg of two iovecs: a 64-byte header
// from a small registered header pool, then (optionally) the payload straight
// out of one comem frame. The receiver posts the same two-iovec shape, a header
// slot and a whole free frame, so the payload lands in a frame that becomes part
// of the receiver's region: zero copies by the runtime [BSPk §4]. Over rxm,
// payloads past its eager limit go as header and payload, two messages
// (kTagBody below; the payloads of up to kMaxBodyFrames frames of one message
// in one), still zero copy.
//
// Every header carries the sender's superstep number, in full (32 bits), so a
// process that is ahead never corrupts one that is behind [RBS §5]: arrivals
// are counted per superstep, never "since I started waiting".
//
// Message kinds. The engine dispatches each arrival by its kind through a table
// that the owning layer fills (Engine::on). The number space is split so that
// each layer defines its kinds in its own wire header:
//   1          mp   (mp/wire.h)
//   2..6, 11  sync (below)
//   7..10      dsm  (dsm/wire.h)
//   12..255    free for layers above (collectives, BSPlib, ...)
// Changing any kind's number or meaning is a wire change (base/version.h).
//
// All multi-byte fields are in the sender's byte order; the bootstrap refuses
// to mix byte orders or wire versions in one job.
#pragma once

#include <cstdint>

#include "base/version.h"

namespace bspk::wire {

using Kind = uint8_t;

// The engine's own kinds: control traffic, not counted by bspk_expect.
enum : Kind {
  kCollUp = 2,      // tree reduction: child -> parent (payload: a vector; u32[]: meta words)
  kCollDown = 3,    // tree result: parent -> child (payload: a vector; u32[]: meta words)
  kStepQuery = 4,   // flow control: "tell me when you reach superstep u32[0]"
  kStepNotice = 5,  // flow control: "I have reached superstep u32[0]"; u32[1] = kNoticeExpectWaiting: "... and
                    // wait in it under bspk_expect" (to the processes that wait for its count message)
  kHello = 6,       // start-up/shutdown barrier: epoch u32[0], round u32[1] (not superstep-tagged)
  kCountExchange = 11,  // count exchange in rounds (sync/exchange.h: counts in payload or nelems; u32[]: meta words)
};
constexpr uint32_t kNoticeExpectWaiting = 1;
constexpr Kind kFirstFreeKind = 12;  // kinds below belong to sync, mp and dsm

// Receive classes, carried as the libfabric tag of every message: a message
// whose payload fits kSmallPayload bytes is tagged kTagSmall and lands in a
// small (4 KiB) buffer; anything else is tagged kTagLarge and lands in a whole
// frame. Either way the buffer becomes the receiver's region: no copies.
constexpr uint64_t kTagLarge = 1;
constexpr uint64_t kTagSmall = 2;
constexpr uint32_t kSmallPayload = 4096;
// Split large messages (transports with an eager limit: rxm over tcp or
// verbs): a kTagLarge message whose header + payload exceed the eager limit
// travels as two. First its header alone (64 bytes, kTagSmall, flags
// kFlagBodyFollows, `payload` = the body's length), then the payload alone
// as one iovec, tagged kTagBody. The receiver posts a directed receive from
// the header's sender for each such header, in arrival order, into a fresh
// frame, and hands the message to its kind's handler when the body is in.
// Bodies from one sender are matched in the order it sent them, so the k-th
// kTagBody message from a sender is the body of its k-th split header; the
// headers themselves may overtake each other on the way (one host: ring or
// provider), so each carries its number (Header::reserved) and the receiver
// posts for bodies in that order.
//
// Body groups: consecutive frames of one message to one destination share one
// body, a message of up to kMaxBodyFrames iovecs (one rendezvous instead of one
// per frame; tcp 4 MiB messages of 256 KiB frames: 16 rendezvous otherwise).
// Each header of the group still travels alone and carries, in its flags, the
// group's size n (1..kMaxBodyFrames) and its place i in it (0..n-1); the
// receiver posts one directed receive of n iovecs, one whole frame per header
// (each of its header's `payload` bytes), when the group's last header is in.
constexpr uint64_t kTagBody = 3;
constexpr uint8_t kFlagBodyFollows = 1u << 0;
constexpr uint32_t kMaxBodyFrames = 4;  // rxm's iov_limit (tcp and verbs, libfabric 1.17)
constexpr uint8_t body_flags(uint32_t n, uint32_t i) {
  return static_cast<uint8_t>(kFlagBodyFollows | ((n - 1) & 7u) << 1 | (i & 7u) << 4);
}
constexpr uint32_t body_group_size(uint8_t flags) { return ((flags >> 1) & 7u) + 1; }
constexpr uint32_t body_group_index(uint8_t flags) { return (flags >> 4) & 7u; }
static_assert(kMaxBodyFrames <= 8, "the group size and index have 3 bits each in Header::flags");

// A carried count (BSPK_COUNT_CARRY, sync/engine.h): in a counted superstep
// with the direct count exchange, the sender's count of messages to this
// receiver in `step` (this one included) travels in the superstep's last
// small message to it, in Header::reserved, instead of a kCountExchange
// message of its own. Never on a split header (kFlagBodyFollows).
constexpr uint8_t kFlagCount = 1u << 7;
constexpr uint32_t kMaxCarriedCount = 0xFFFF;

// Which kinds of sync took part in a count exchange (meta word 0 of kCollUp /
// kCollDown in the count tree).
enum : uint32_t {
  kSyncExpect = 1u << 0,
  kSyncWillSend = 1u << 1,
  kSyncCounted = 1u << 2,
  kSyncFinalize = 1u << 3,
};

// The fields after `src` are the owning layer's (their names are those of an
// mp message, which uses them all; other layers document their own use).
struct Header {
  uint32_t magic;      // version::kWireMagic ^ version::kWireVersion
  uint8_t kind;        // Kind
  uint8_t flags;       // split header: body_flags(group size, index in group); kFlagCount; else 0
  uint16_t reserved;   // split header (kFlagBodyFollows): its number from src to this receiver, mod 2^16;
                       // kFlagCount: the carried count; else 0
  uint32_t step;       // sender's superstep when the message was issued
  int32_t src;         // sender pid
  uint32_t seq;        // message number from src to this dest in `step`
  uint32_t frame;      // index of this frame within the message
  uint32_t nframes;    // frames in the message (0 for an empty message)
  uint32_t skew;       // slot of element 0 within the message's first frame
  uint64_t nelems;     // elements in the message; tree: vector length
  uint32_t elem_size;  // bytes per element
  uint32_t payload;    // bytes of payload following the header
  uint32_t u32[4];     // control words that fit in the header
};
static_assert(sizeof(Header) == 64, "wire header must stay 64 bytes");

// Superstep order across the wrap at 2^32 (serial-number arithmetic, RFC
// 1982): processes are never 2^31 supersteps apart (flow control keeps them
// within BSPK_MAX_AHEAD), so a - b read as a signed 32-bit number orders
// them. Every comparison of superstep numbers goes through these.
constexpr bool step_before(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }
constexpr bool step_after(uint32_t a, uint32_t b) { return step_before(b, a); }

constexpr uint32_t magic_word() { return version::kWireMagic ^ version::kWireVersion; }

// Remote CQ data of a future one-sided path (fi_writedata into frames the
// target announced). It must fit 32 bits because verbs gives only 4 bytes, and
// is laid out here so that counting covers it:
//   bits 31..29  kind (CqKind)
//   bits 28..16  superstep modulo 2^13 (unambiguous: processes exchanging data
//                are never more than kMaxAheadLimit < 2^12 supersteps apart)
//   bits 15..0   sender pid modulo 2^16 (together with the source address)
enum class CqKind : uint32_t { Store = 1, FetchReply = 2 };
constexpr uint32_t kCqStepBits = 13;
constexpr uint32_t kCqPidBits = 16;
constexpr uint32_t kMaxAheadLimit = version::kMaxAheadLimit;
static_assert(kMaxAheadLimit == (1u << (kCqStepBits - 1)) - 1, "steps apart must fit the CQ data step bits");

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
