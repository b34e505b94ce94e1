// base/version.h -- the protocol versions a BSPk build speaks.
//
// Every process of a job must speak the same versions: the bootstrap exchange
// refuses a process of another build at start-up (boot/protocol.h), and every
// fabric message carries kWireMagic ^ kWireVersion in its header (sync/wire.h),
// so a stray message from another build is reported, never misread.
#pragma once

#include <cstdint>

namespace bspk::version {

// Layout and meaning of every fabric message: the engine's header and kinds
// (sync/wire.h) and those of the layers above it (mp/wire.h, dsm/wire.h).
// Bump on any change to any of them.
constexpr uint32_t kWireVersion = 7;  // 3: kCountDirect; 4: DirOp::HandleQuery, 40-bit region generations;
                                      // 5: split large messages (kFlagBodyFollows, kTagBody);
                                      // 6: body groups (several frames' payloads in one body);
                                      // 7: counts carried by data messages (kFlagCount)
constexpr uint32_t kWireMagic = 0x4B505342u;  // "BSPK" little-endian

// Most supersteps one process may run ahead of another (BSPK_MAX_AHEAD's
// upper bound): superstep numbers in a 32-bit remote CQ datum keep 13 bits,
// unambiguous within 2^12 - 1 supersteps (sync/wire.h checks the layout).
constexpr uint32_t kMaxAheadLimit = (1u << 12) - 1;

}  // namespace bspk::version
