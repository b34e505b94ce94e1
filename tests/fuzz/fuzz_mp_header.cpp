// fuzz_mp_header -- libFuzzer target for the receiver's check of one mp Data
// fragment header: bspk::mp::check_data_header (mp/wire.h), which on_data
// (mp/mp.cpp) runs on every arriving header before it sizes anything by it.
//
// Input: mode byte, then frame size, payload length and the 64-byte
// wire::Header (sync/wire.h), all taken from the fuzz input.
// Properties, beyond "no crash and no undefined behaviour":
//  * accepted empty message (nelems == 0): nframes == 0 and no payload;
//  * accepted non-empty fragment: nframes <= mp::kMaxFrames + 2, frame <
//    nframes, skew < elements per frame, the payload is a whole number of
//    elements and fits one frame, and the elements of the preceding frames plus
//    this fragment's (payload / elem_size) do not exceed nelems -- all computed
//    here independently in 128-bit arithmetic; every frame but the last is full
//    (the receiver's region layout, comem/region.h locate(), assumes it) and the
//    last one completes the message exactly;
//  * completeness: a header built the way MessagePassing::send builds it (mode
//    bit 0 set) for a message the sender accepts is never refused.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mp/wire.h"
#include "sync/wire.h"

#define FUZZ_TARGET "fuzz_mp_header"
#include "fuzz_util.h"

namespace {

using u128 = unsigned __int128;

#define CHECK(cond) FUZZ_CHECK(cond)

// The header under test, for a report.
char g_desc[256];
void describe(const bspk::wire::Header& h, size_t payload, size_t frame_size) {
  std::snprintf(g_desc, sizeof g_desc,
                "frame_size=%zu payload=%zu elem_size=%u skew=%u nelems=%llu nframes=%u frame=%u", frame_size,
                payload, h.elem_size, h.skew, (unsigned long long)h.nelems, h.nframes, h.frame);
  fuzz::g_context = g_desc;
}

size_t pick_frame_size(FuzzedDataProvider& in) {
  if (in.ConsumeBool()) return size_t{1} << in.ConsumeIntegralInRange<unsigned>(12, 20);  // 4 KiB .. 1 MiB
  if (in.ConsumeBool()) return size_t{1} << in.ConsumeIntegralInRange<unsigned>(6, 30);   // any power of two
  return in.ConsumeIntegralInRange<size_t>(64, size_t{1} << 32);                           // any value >= 64
}

// Properties of an accepted header (check_data_header returned nullptr).
void check_accepted(const bspk::wire::Header& h, size_t payload, size_t frame_size) {
  describe(h, payload, frame_size);
  if (h.nelems == 0) {
    CHECK(h.nframes == 0);
    CHECK(payload == 0);
    return;
  }
  CHECK(h.elem_size > 0 && h.elem_size <= frame_size);
  const u128 epf = frame_size / h.elem_size;
  CHECK(epf >= 1);
  CHECK(h.skew < epf);
  CHECK(u128{h.nframes} <= u128{bspk::mp::kMaxFrames} + 2);
  CHECK(h.frame < h.nframes);
  CHECK(payload % h.elem_size == 0);
  CHECK(payload <= frame_size);  // the fragment lands in one receive frame
  const u128 cnt = payload / h.elem_size;
  // Elements of frames 0 .. frame-1: the first frame holds epf - skew, the others epf.
  const u128 before = h.frame == 0 ? u128{0} : (epf - h.skew) + u128{h.frame - 1} * epf;
  CHECK(before + cnt <= u128{h.nelems});
  // The frame count is the one the element count implies (no frame is empty).
  const u128 frames = (u128{h.skew} + h.nelems + epf - 1) / epf;
  CHECK(frames == h.nframes);
  const u128 cap = h.frame == 0 ? epf - h.skew : epf;
  if (h.frame + 1 < h.nframes) CHECK(cnt == cap);  // full, as locate() assumes
  else CHECK(before + cnt == u128{h.nelems});       // the last one completes the message
}

// A header as MessagePassing::send (mp/mp.cpp) makes it for frame `k` of a
// message the sender accepts; must be accepted by the receiver.
void check_constructed(FuzzedDataProvider& in, size_t frame_size) {
  bspk::wire::Header h{};
  h.magic = bspk::wire::magic_word();
  h.kind = bspk::mp::kData;
  h.elem_size = in.ConsumeIntegralInRange<uint32_t>(1, static_cast<uint32_t>(
                                                           frame_size > UINT32_MAX ? UINT32_MAX : frame_size));
  const uint64_t epf = frame_size / h.elem_size;
  // The sender refuses n / epf + 2 > kMaxFrames.
  const uint64_t max_n = (bspk::mp::kMaxFrames - 2) * epf + (epf - 1);
  const uint64_t n = in.ConsumeIntegralInRange<uint64_t>(0, max_n);
  h.nelems = n;
  size_t payload = 0;
  if (n > 0) {
    h.skew = static_cast<uint32_t>(in.ConsumeIntegralInRange<uint64_t>(0, epf - 1));
    h.nframes = static_cast<uint32_t>((h.skew + n + epf - 1) / epf);
    h.frame = in.ConsumeIntegralInRange<uint32_t>(0, h.nframes - 1);
    const uint64_t start = h.frame == 0 ? 0 : (epf - h.skew) + uint64_t{h.frame - 1} * epf;
    const uint64_t cap = h.frame == 0 ? epf - h.skew : epf;
    const uint64_t cnt = cap < n - start ? cap : n - start;
    payload = cnt * h.elem_size;
  }
  if (const char* why = bspk::mp::check_data_header(h, payload, frame_size)) {
    describe(h, payload, frame_size);
    std::fprintf(stderr, "fuzz_mp_header: a well-formed header was refused: %s\n", why);
    FUZZ_CHECK(!"a header as the sender builds it is accepted");
  }
  check_accepted(h, payload, frame_size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const uint8_t mode = in.ConsumeIntegral<uint8_t>();
  const size_t frame_size = pick_frame_size(in);
  if (mode & 1) {
    check_constructed(in, frame_size);
    return 0;
  }
  // payload: raw, or a whole number of elements (reaches the accepting paths sooner)
  const bool whole = mode & 2;
  const uint64_t praw = in.ConsumeIntegral<uint64_t>();
  bspk::wire::Header h{};
  std::vector<uint8_t> bytes = in.ConsumeBytes<uint8_t>(sizeof h);
  if (!bytes.empty()) std::memcpy(&h, bytes.data(), bytes.size());
  const size_t payload = whole ? static_cast<size_t>((praw & 0xFFFFF) * h.elem_size) : static_cast<size_t>(praw);
  if (bspk::mp::check_data_header(h, payload, frame_size) == nullptr) check_accepted(h, payload, frame_size);
  return 0;
}
