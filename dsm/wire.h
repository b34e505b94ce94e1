// dsm/wire.h -- distributed shared memory's wire vocabulary [BSPk §3, §6.2].
//
// Store and FetchReq are counted arrivals at their target (bspk.h, DSM rule
// 5); FetchReply is tracked by the fetcher; Dir is control traffic (not
// counted). Header fields (sync/wire.h) as used here:
//   Store      seq = store number from src to this target in the superstep,
//              frame / nframes = fragment index / count, nelems, elem_size,
//              u32[0] = destination region, u32[1..2] = destination element,
//              u32[3] = the destination region's generation (high bits,
//              bspk_ptr::gen), skew bit 0 = issued by bspk_put (named in the
//              target's refusal message)
//   FetchReq   seq = fetch id, nelems, elem_size, skew = the fetcher's slot of
//              its first destination element, u32[0] = source region,
//              u32[1..2] = source element, u32[3] = the source region's
//              generation (high bits)
//   FetchReply seq = fetch id, frame / nframes, nelems, elem_size,
//              u32[1..2] = element offset of the fragment within the fetch
//   Dir        payload: one DirRec
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "sync/wire.h"

namespace bspk::dsm {

constexpr wire::Kind kStore = 7;       // one fragment (<= one frame) of a bspk_copy into a remote region
constexpr wire::Kind kFetchReq = 8;    // "send me n elements of your region r from offset o at the end of `step`"
constexpr wire::Kind kFetchReply = 9;  // one fragment of the answer, sent straight from the owner's frames
constexpr wire::Kind kDir = 10;        // directory of named regions (payload: DirRec)

// Directory message (payload of kDir).
enum class DirOp : uint32_t {
  Register = 1,    // owner -> home: (name, idx) is region `region` on `owner`
  RegAck = 2,      // home -> owner: status 0 ok, 1 duplicate (owner/region: the other owner)
  Unregister = 3,  // owner -> home: the region was freed
  Lookup = 4,      // asker -> home: resolve (name, idx) for handle `handle`, used in `step`
  LookupReply = 5, // home -> asker: status 0 found (owner, region, nelems, elem_size), 1 unknown;
                   // also the maker's answer to a HandleQuery
  ProgQuery = 6,   // home -> all: "answer when you have entered the sync ending `step`"
  ProgReply = 7,   // all -> home: done; `count` = Registers sent to that home so far
  DupNotice = 8,   // home -> first owner: someone else registered your pair (text)
  CopyError = 9,   // target -> issuer: a copy was refused (text; idx = error code, status 2 = a fetch)
  ErrFlush = 11,   // issuer -> a target of its copies, in bspk_finalize: "once past your final
                   // boundary, say how many CopyErrors you sent me" (reply ErrCount, in `count`)
  ErrCount = 12,
  OwnerQuery = 13, // home -> holder of a pair another process registers in `step`: was your
                   // region (region, region_gen) live then? (answered once the holder has
                   // entered the sync ending step - 1)
  OwnerReply = 14, // holder -> home: status 0 live (a real duplicate), 1 freed before `step` (in
                   // superstep `count`)
  HandleQuery = 10, // user of a provisional pointer -> its maker: what does your handle `count` name?
                    // (reply: LookupReply for `handle`, status 0 found, 1 unknown (text, idx: the
                    // pair, to ask its home), 2 never issued)
};

struct DirRec {
  uint32_t op;
  int32_t idx;
  int32_t owner;
  uint32_t region;
  uint64_t nelems;
  uint32_t elem_size;
  uint32_t handle;
  uint32_t status;
  uint32_t step;
  uint32_t region_gen;  // with `region`: the generation's high bits (bspk_ptr::gen)
  uint64_t count;
  char text[200];  // name (<= 63 bytes) or, for DupNotice/CopyError, the message
};

// A record of `op` whose text is `text` (truncated to fit), other fields 0.
inline DirRec dir_rec(DirOp op, const std::string& text) {
  DirRec r{};
  r.op = static_cast<uint32_t>(op);
  std::snprintf(r.text, sizeof r.text, "%s", text.c_str());
  return r;
}

}  // namespace bspk::dsm
