// tests/test_units.cpp -- single-process unit tests of the comem allocator,
// comem pointers (incr, elemP, span across frame boundaries) and the wire
// headers. No fabric: pools run unregistered.
#include <bspk.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <sys/wait.h>
#include <unistd.h>
#include <set>
#include <vector>

#include "base/copy.h"
#include "base/error.h"
#include "base/random.h"
#include "comem/pool.h"
#include "comem/region.h"
#include "sync/board.h"
#include "sync/wire.h"

using namespace bspk;

TEST(FramePool, AllocFreeAreO1AndReuseFrames) {
  comem::FramePool pool(nullptr, 4096);
  std::set<uintptr_t> seen;
  std::vector<uintptr_t> got;
  for (int i = 0; i < 5000; ++i) {  // crosses several slabs
    uintptr_t f = pool.alloc();
    EXPECT_EQ(f % 4096, 0u) << "frames are frame-aligned";
    EXPECT_TRUE(seen.insert(f).second) << "frame handed out twice";
    EXPECT_TRUE(pool.owns(f));
    got.push_back(f);
  }
  EXPECT_EQ(pool.in_use(), 5000u);
  EXPECT_GE(pool.bytes(), 5000u * 4096);
  size_t slabs = pool.bytes() / pool.slab_size();
  for (uintptr_t f : got) pool.free(f);
  EXPECT_EQ(pool.in_use(), 0u);
  for (int i = 0; i < 5000; ++i) EXPECT_TRUE(seen.count(pool.alloc())) << "a freed frame is reused";
  EXPECT_EQ(pool.bytes() / pool.slab_size(), slabs) << "no new slab when frames are free";
  EXPECT_EQ(pool.peak(), 5000u);
}

// first_use: set exactly for frames handed out for the first time from a slab
// made unprefaulted (the engine touches those before posting them for
// arrivals); recycled, reserved and prefaulted frames are not first use.
TEST(FramePool, FirstUseMarksOnlyFramesNeverHandedOut) {
  comem::FramePool pool(nullptr, 4096);
  const size_t per_slab = pool.slab_size() / 4096;
  std::vector<uintptr_t> got;
  bool first = false;
  for (size_t i = 0; i < per_slab; ++i) {
    got.push_back(pool.alloc(&first));
    EXPECT_TRUE(first) << "frame " << i << " of a fresh slab";
  }
  pool.free(got[3]);
  pool.free(got[7]);
  EXPECT_EQ(pool.alloc(&first), got[7]);
  EXPECT_FALSE(first) << "a recycled frame";
  EXPECT_EQ(pool.try_alloc(&first), got[3]);
  EXPECT_FALSE(first) << "a recycled frame (try_alloc)";
  pool.alloc(&first);  // the stack is empty: a new slab
  EXPECT_TRUE(first) << "first frame of the second slab";
  pool.free(got[0]);  // a recycled frame on top of untouched ones
  EXPECT_FALSE((pool.alloc(&first), first));
  EXPECT_TRUE((pool.alloc(&first), first)) << "untouched frames below a recycled one stay untouched";

  comem::FramePool reserved(nullptr, 4096);
  reserved.reserve(reserved.slab_size());  // touched as it is made
  for (size_t i = 0; i < per_slab; ++i) EXPECT_FALSE((reserved.alloc(&first), first)) << "reserved frame " << i;
  EXPECT_TRUE((reserved.alloc(&first), first)) << "past the reserve";

  comem::FramePool pre(nullptr, 4096);
  pre.alloc();
  pre.prefault();
  EXPECT_FALSE((pre.alloc(&first), first)) << "prefaulted slab";
  for (size_t i = 0; i < per_slab; ++i) EXPECT_FALSE((pre.alloc(&first), first)) << "prefaulted new slab";
}

TEST(FramePool, RejectsBadFrameSizesAndHonoursTheLimit) {
  EXPECT_THROW(comem::FramePool(nullptr, 3000), Error);
  EXPECT_THROW(comem::FramePool(nullptr, 32), Error);
  comem::FramePool pool(nullptr, 1 << 20, size_t{64} << 20);  // 64 MiB limit, 32 MiB slabs
  std::vector<uintptr_t> v;
  try {
    for (int i = 0; i < 1000; ++i) v.push_back(pool.alloc());
    FAIL() << "limit not enforced";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), BSPK_ERR_NOMEM);
    EXPECT_NE(std::string(e.what()).find("BSPK_POOL_LIMIT"), std::string::npos);
  }
  EXPECT_EQ(v.size(), 64u);
}

TEST(IndexPool, SizeClassesAndReuse) {
  comem::IndexPool ip;
  uint8_t c1, c2, c3;
  uintptr_t* a = ip.alloc(5, &c1);
  EXPECT_EQ(c1, 3);  // 8 entries
  for (int i = 0; i < 8; ++i) a[i] = i;
  ip.free(a, c1);
  uintptr_t* b = ip.alloc(7, &c2);
  EXPECT_EQ(b, a) << "same class reuses the freed array";
  uintptr_t* big = ip.alloc(100000, &c3);
  big[99999] = 1;
  ip.free(big, c3);
  ip.free(b, c2);
}

class ComemTest : public ::testing::Test {
 protected:
  comem::FramePool frames{nullptr, 256};  // tiny frames: many boundaries
  comem::IndexPool index;
  comem::Comem cm{0, frames, index};
};

TEST_F(ComemTest, ElementsNeverStraddleFrames) {
  bspk_ptr p = cm.create("", 0, 1000, 12);  // 21 elements per 256-byte frame
  comem::Region& r = cm.local(p);
  EXPECT_EQ(r.epf, 21u);
  EXPECT_EQ(r.nframes, (1000u + 20) / 21);
  for (uint64_t i = 0; i < 1000; ++i) {
    auto a = reinterpret_cast<uintptr_t>(r.elem(i));
    uint64_t f = i / 21;
    EXPECT_EQ(a, r.frames[f] + (i % 21) * 12);
    EXPECT_LE((a % 256) + 12, 256u) << "element " << i << " straddles a frame";
  }
}

TEST_F(ComemTest, IncrElemPAndSpanAcrossFrames) {
  bspk_ptr p = cm.create("", 0, 100, sizeof(double));  // 32 per frame
  comem::Region& r = cm.local(p);
  for (uint64_t i = 0; i < 100; ++i) *static_cast<double*>(r.elem(i)) = static_cast<double>(i);
  // span: the rest of the frame, capped at the region's end
  EXPECT_EQ(r.span(0), 32u);
  EXPECT_EQ(r.span(31), 1u);
  EXPECT_EQ(r.span(32), 32u);
  EXPECT_EQ(r.span(97), 3u);
  // walking by spans visits every element once, in order
  uint64_t i = 0, visited = 0;
  while (i < 100) {
    uint64_t n = r.span(i);
    auto* d = static_cast<double*>(r.elem(i));
    for (uint64_t k = 0; k < n; ++k) EXPECT_EQ(d[k], static_cast<double>(i + k));
    i += n;
    visited += n;
  }
  EXPECT_EQ(visited, 100u);
}

TEST_F(ComemTest, AdoptedRegionWithSkewIndexesUniformly) {
  // A message whose first element sat at slot 5 of the sender's frame lands at
  // the start of the receiver's frame; skew keeps element i -> frame (i+5)/E.
  const uint32_t es = 8, epf = 256 / es, skew = 5;
  const uint64_t n = 100;
  uint32_t nframes = static_cast<uint32_t>((skew + n + epf - 1) / epf);
  std::vector<uintptr_t> fr;
  for (uint32_t k = 0; k < nframes; ++k) fr.push_back(frames.alloc());
  // fill as the wire would: frame 0 holds elements 0..epf-skew-1 from its start
  uint64_t e = 0;
  for (uint32_t k = 0; k < nframes; ++k) {
    uint64_t cap = k == 0 ? epf - skew : epf;
    for (uint64_t s = 0; s < cap && e < n; ++s, ++e) reinterpret_cast<uint64_t*>(fr[k])[s] = e;
  }
  bspk_ptr p = cm.adopt(fr.data(), nframes, skew, n, es, 3);
  EXPECT_EQ(p.sender, 3);
  comem::Region& r = cm.local(p);
  for (uint64_t i = 0; i < n; ++i) EXPECT_EQ(*static_cast<uint64_t*>(r.elem(i)), i) << i;
  EXPECT_EQ(r.span(0), epf - skew);
  EXPECT_EQ(r.span(epf - skew), epf);
  EXPECT_EQ(r.frame_start(0), fr[0]) << "unbiased start of frame 0";
  size_t before = frames.in_use();
  cm.release(p.region);
  EXPECT_EQ(frames.in_use(), before - nframes) << "adopted frames return to the pool";
}

TEST_F(ComemTest, StaleAndRemotePointersAreRejected) {
  bspk_ptr p = cm.create("", 0, 10, 4);
  bspk_ptr q = p;
  cm.release(p.region);
  EXPECT_EQ(cm.find(q.region), nullptr) << "freed region must not be found";
  bspk_ptr p2 = cm.create("", 0, 10, 4);  // likely reuses the slot
  EXPECT_NE(p2.region, q.region) << "generation changes on reuse";
  EXPECT_THROW(cm.local(q), Error);
  bspk_ptr remote = p2;
  remote.owner = 1;
  EXPECT_THROW(cm.local(remote), Error);
  EXPECT_THROW(cm.local(bspk_ptr{}), Error);
}

TEST_F(ComemTest, InflightSendsDeferTheFree) {
  bspk_ptr p = cm.create("", 0, 64, 8);  // 2 frames
  size_t used = frames.in_use();
  cm.send_started(cm.local(p), 1);
  cm.release(p.region);
  EXPECT_EQ(frames.in_use(), used) << "frames stay while a send is in flight";
  cm.send_done(p.region);
  EXPECT_EQ(frames.in_use(), used - 2);
}

TEST_F(ComemTest, EmptyAndRejectedRegions) {
  bspk_ptr e = cm.create("", 0, 0, 4);
  EXPECT_EQ(e.nelems, 0u);
  EXPECT_NE(e.region, 0u);
  cm.release(e.region);
  EXPECT_THROW(cm.create("", 0, 1, 0), Error);
  try {
    cm.create("", 0, UINT64_MAX, 1);  // frame count must not overflow
    FAIL() << "UINT64_MAX elements accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), BSPK_ERR_NOMEM);
  }
  EXPECT_THROW(cm.create("", 0, 1, 257), Error);
  cm.create("grid", 2, 4, 4);
  EXPECT_THROW(cm.create("grid", 2, 4, 4), Error);
}

// bspk_put / bspk_send_buf staging: the bytes copied in, element 0 at the
// requested slot so that frame boundaries match the destination's.
TEST_F(ComemTest, StagingRegionHoldsTheBytesAtTheRequestedSlot) {
  std::vector<uint8_t> bytes(100 * 12);
  for (size_t b = 0; b < bytes.size(); ++b) bytes[b] = static_cast<uint8_t>(b * 7 + 1);
  size_t before = frames.in_use();
  bspk_ptr p = cm.create_filled(bytes.data(), 100, 12, 5 + 21);  // 21 elements a frame: slot 5
  comem::Region& r = cm.local(p);
  EXPECT_EQ(r.skew, 5u);
  EXPECT_EQ(r.nframes, (5u + 100 + 20) / 21);
  EXPECT_EQ(r.span(0), 16u) << "element 0 at slot 5: 16 more fit its frame";
  for (uint64_t i = 0; i < 100; ++i) EXPECT_EQ(std::memcmp(r.elem(i), &bytes[i * 12], 12), 0) << i;
  cm.release(p.region);
  EXPECT_EQ(frames.in_use(), before) << "every staging frame goes back";
  bspk_ptr e = cm.create_filled(nullptr, 0, 1);
  EXPECT_EQ(e.nelems, 0u);
  cm.release(e.region);
}

// A put through an unresolved pointer stages bytes; its element size is known
// later. 256-byte frames: 8-byte elements lie as the bytes do (in place), 12-byte
// ones leave 4 bytes free per frame (laid out again, the one extra copy).
TEST_F(ComemTest, ReshapeRelabelsInPlaceOrLaysTheBytesOutAgain) {
  std::vector<uint8_t> bytes(960);
  for (size_t b = 0; b < bytes.size(); ++b) bytes[b] = static_cast<uint8_t>(b * 13 + 3);
  size_t before = frames.in_use();
  uint64_t copied = 1;
  bspk_ptr a = cm.create_filled(bytes.data(), bytes.size(), 1);
  bspk_ptr a8 = cm.reshape(a.region, 8, &copied);
  EXPECT_EQ(copied, 0u);
  EXPECT_EQ(a8.region, a.region);
  comem::Region& r8 = cm.local(a8);
  EXPECT_EQ(r8.nelems, 120u);
  EXPECT_EQ(r8.epf, 32u);
  for (uint64_t i = 0; i < 120; ++i) EXPECT_EQ(std::memcmp(r8.elem(i), &bytes[i * 8], 8), 0) << i;
  bspk_ptr b = cm.create_filled(bytes.data(), bytes.size(), 1);
  bspk_ptr b12 = cm.reshape(b.region, 12, &copied);
  EXPECT_EQ(copied, 960u);
  EXPECT_NE(b12.region, b.region);
  EXPECT_EQ(cm.find(b.region), nullptr) << "the byte region was freed";
  comem::Region& r12 = cm.local(b12);
  EXPECT_EQ(r12.nelems, 80u);
  EXPECT_EQ(r12.epf, 21u);
  for (uint64_t i = 0; i < 80; ++i) EXPECT_EQ(std::memcmp(r12.elem(i), &bytes[i * 12], 12), 0) << i;
  cm.release(a8.region);
  cm.release(b12.region);
  EXPECT_EQ(frames.in_use(), before);
}

// With a small-buffer pool, staged data that fits one small buffer and one
// frame takes a small buffer; a bigger one takes frames. (Here the small
// buffers, 4 KiB, are larger than the 256-byte frames: the frame decides.)
TEST(ComemSmall, SmallStagingOnlyWhenTheDataFitsAFrame) {
  comem::FramePool frames{nullptr, 256}, small{nullptr, 4096};
  comem::IndexPool index;
  comem::Comem cm{0, frames, index, &small};
  std::vector<uint8_t> bytes(1000, 0x42);
  bspk_ptr s = cm.create_filled(bytes.data(), 256, 1, 77);
  EXPECT_TRUE(cm.local(s).small);
  EXPECT_EQ(small.in_use(), 1u);
  EXPECT_EQ(cm.local(s).skew, 0u);
  uint64_t copied = 1;
  bspk_ptr s8 = cm.reshape(s.region, 8, &copied);
  EXPECT_EQ(s8.region, s.region) << "a small region is relabelled in place";
  EXPECT_EQ(copied, 0u);
  bspk_ptr f = cm.create_filled(bytes.data(), 257, 1);
  EXPECT_FALSE(cm.local(f).small);
  EXPECT_EQ(cm.local(f).nframes, 2u);
  cm.release(s8.region);
  cm.release(f.region);
  EXPECT_EQ(small.in_use(), 0u);
  EXPECT_EQ(frames.in_use(), 0u);
}

TEST(Api, PointerAccessorsArePureFunctions) {
  bspk_ptr p{};
  EXPECT_TRUE(bspk_is_null(p));
  EXPECT_TRUE(bspk_is_null(BSPK_NULL));
  EXPECT_EQ(bspk_owner(p), -1);
  EXPECT_EQ(bspk_nelems(p), 0u);
  bspk_ptr q{};
  q.region = 7;
  q.owner = 3;
  q.nelems = 10;
  q.elem_size = 8;
  q.sender = 2;
  EXPECT_FALSE(bspk_is_null(q));
  EXPECT_EQ(bspk_owner(q), 3);
  EXPECT_EQ(bspk_elem_size(q), 8u);
  bspk_ptr r = bspk_incr(q, 4);  // remote pointers can be incremented
  EXPECT_EQ(r.offset, 4u);
  EXPECT_EQ(bspk_nelems(r), 6u);
  EXPECT_EQ(bspk_sender_id(r), 2);
  EXPECT_TRUE(bspk_is_null(bspk_incr(r, 7)));
  EXPECT_TRUE(bspk_is_null(bspk_incr(r, -5)));
  EXPECT_EQ(bspk_incr(r, -4).offset, 0u);
  EXPECT_EQ(bspk_incr(r, 6).offset, 10u);
  static_assert(sizeof(bspk_ptr) == 40, "bspk_ptr stays small (32 bytes plus the generation word of issue 12, defect 2)");
}

TEST(Wire, HeaderLayoutIsFixed) {
  static_assert(sizeof(wire::Header) == 64);
  EXPECT_EQ(offsetof(wire::Header, step), 8u);
  EXPECT_EQ(offsetof(wire::Header, nelems), 32u);
  EXPECT_EQ(offsetof(wire::Header, u32), 48u);
  EXPECT_NE(wire::magic_word(), version::kWireMagic) << "version is folded into the magic word";
}

TEST(Wire, CqDataFitsVerbs32BitsAndRoundTrips) {
  for (uint32_t step : {0u, 1u, 4095u, 8191u, 8192u, 100000u, 0xFFFFFFF0u}) {
    for (uint32_t pid : {0u, 1u, 65535u}) {
      uint32_t d = wire::cq_data(wire::CqKind::Store, step, pid);
      EXPECT_EQ(wire::cq_kind(d), wire::CqKind::Store);
      EXPECT_EQ(wire::cq_pid_low(d), pid);
      // The receiver knows its own superstep within kMaxAheadLimit of `step`.
      for (int64_t delta : {-int64_t(wire::kMaxAheadLimit), int64_t(-1), int64_t(0), int64_t(1),
                            int64_t(wire::kMaxAheadLimit)}) {
        int64_t ref = int64_t(step) + delta;
        if (ref < 0 || ref > int64_t(UINT32_MAX)) continue;
        EXPECT_EQ(wire::cq_step_full(wire::cq_step_low(d), uint32_t(ref)), step)
            << "step " << step << " ref " << ref;
      }
    }
  }
}

// ---- Contiguous regions (bspk_malloc_contiguous): one run of frames.

TEST(FramePool, RunsAreConsecutiveFramesOfOneSlabAndAreKeptWhenFreed) {
  comem::FramePool pool(nullptr, 4096);
  uintptr_t f = pool.alloc();  // an ordinary slab exists
  const size_t slab_bytes = pool.bytes();
  uintptr_t a = pool.alloc_run(7);
  EXPECT_EQ(a % 4096, 0u) << "a run starts on a frame boundary";
  EXPECT_EQ(pool.in_use(), 8u);
  EXPECT_EQ(pool.bytes(), slab_bytes + 7 * 4096);
  EXPECT_EQ(pool.runs(), 1u);
  for (uintptr_t x : {a, a + 4095, a + 3 * 4096 + 17, a + 7 * 4096 - 1}) EXPECT_TRUE(pool.owns(x)) << x - a;
  EXPECT_FALSE(pool.owns(a + 7 * 4096)) << "one past the run";
  EXPECT_TRUE(pool.owns(f));
  EXPECT_NO_THROW(pool.region_of(a + 5 * 4096));
  uintptr_t b = pool.alloc_run(1);
  EXPECT_TRUE(pool.owns(b));
  pool.free_run(a);
  EXPECT_FALSE(pool.owns(a + 4096));
  EXPECT_THROW(pool.region_of(a + 4096), Error);
  pool.free_run(b);
  EXPECT_EQ(pool.in_use(), 1u);
  EXPECT_EQ(pool.kept_runs(), 2u);
  EXPECT_EQ(pool.bytes(), slab_bytes + 8 * 4096) << "kept runs are memory held";
  EXPECT_EQ(pool.peak(), 9u);
  EXPECT_THROW(pool.free_run(b), Error) << "a run is freed once";
  // Runs of the same lengths come back from the kept ones; another length is new.
  EXPECT_EQ(pool.alloc_run(1), b);
  EXPECT_EQ(pool.alloc_run(7), a);
  EXPECT_EQ(pool.kept_runs(), 0u);
  EXPECT_EQ(pool.in_use(), 9u);
  uintptr_t c = pool.alloc_run(2);
  EXPECT_NE(c, a);
  EXPECT_NE(c, b);
  for (uintptr_t x : {a, b, c}) pool.free_run(x);
  pool.free(f);
}

// Kept runs make way for ordinary slabs under BSPK_POOL_LIMIT: a pool at its
// limit with a kept run still grows by a slab.
TEST(FramePool, KeptRunsMakeWayForSlabs) {
  comem::FramePool pool(nullptr, 1 << 20, size_t{64} << 20);  // 32 MiB slabs, 64 MiB limit
  std::vector<uintptr_t> f{pool.alloc()};
  pool.free_run(pool.alloc_run(8));  // kept: 32 + 8 MiB held
  ASSERT_EQ(pool.kept_runs(), 1u);
  for (int i = 1; i < 33; ++i) f.push_back(pool.alloc());  // the 33rd frame needs a second slab
  EXPECT_EQ(pool.kept_runs(), 0u);
  EXPECT_EQ(pool.bytes(), size_t{64} << 20);
  for (uintptr_t x : f) pool.free(x);
}

// At most FramePool::kRunKeepBytes of freed runs are kept (the oldest go
// first), and a run larger than that is released when it is freed.
TEST(FramePool, KeptRunsAreBounded) {
  comem::FramePool pool(nullptr, 1 << 20);  // 1 MiB frames
  const size_t keep_frames = comem::FramePool::kRunKeepBytes >> 20;
  const size_t k = keep_frames / 3 + 1;  // three such runs are more than may be kept
  uintptr_t r[3];
  for (auto& x : r) x = pool.alloc_run(k);
  for (uintptr_t x : r) pool.free_run(x);
  EXPECT_EQ(pool.kept_runs(), 2u) << "the oldest is released";
  EXPECT_LE(pool.bytes(), comem::FramePool::kRunKeepBytes);
  EXPECT_EQ(pool.alloc_run(k), r[2]) << "the newest is reused first";
  pool.free_run(r[2]);
  pool.free_run(pool.alloc_run(keep_frames + 1));
  EXPECT_EQ(pool.kept_runs(), 2u) << "a run past the bound is not kept";
  EXPECT_LE(pool.bytes(), comem::FramePool::kRunKeepBytes);
}

TEST(FramePool, RunsHonourTheLimit) {
  comem::FramePool pool(nullptr, 1 << 20, size_t{40} << 20);  // 32 MiB slabs, 40 MiB limit
  uintptr_t f = pool.alloc();
  try {
    pool.alloc_run(9);  // 32 + 9 MiB
    FAIL() << "limit not enforced for runs";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), BSPK_ERR_NOMEM);
    EXPECT_NE(std::string(e.what()).find("BSPK_POOL_LIMIT"), std::string::npos);
  }
  pool.free_run(pool.alloc_run(8));  // kept: 32 + 8 MiB held, the limit
  EXPECT_EQ(pool.kept_runs(), 1u);
  EXPECT_NO_THROW(pool.free_run(pool.alloc_run(7))) << "a kept run is released to make room for a new one";
  EXPECT_EQ(pool.kept_runs(), 1u);
  EXPECT_LE(pool.bytes(), size_t{40} << 20);
  pool.free(f);
}

TEST_F(ComemTest, ContiguousRegionHoldsElementsBackToBack) {
  // 12-byte elements: 21 per 256-byte frame, so elements straddle the run's
  // frames while the wire geometry (epf, span) stays that of ordinary regions.
  size_t before = frames.in_use();
  bspk_ptr p = cm.create("", 0, 1000, 12, true);
  comem::Region& r = cm.local(p);
  EXPECT_TRUE(r.contiguous);
  EXPECT_TRUE(r.run);
  EXPECT_EQ(r.epf, 21u);
  EXPECT_EQ(r.nframes, (1000u + 20) / 21);
  EXPECT_EQ(frames.in_use(), before + (12000 + 255) / 256) << "12000 bytes: 47 frames of 256";
  auto base = reinterpret_cast<uintptr_t>(r.elem(0));
  EXPECT_EQ(base % 256, 0u);
  for (uint64_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(r.elem(i)), base + i * 12) << i;
    EXPECT_EQ(r.contiguous_span(i), 1000 - i);
    EXPECT_EQ(r.span(i), std::min<uint64_t>(21 - i % 21, 1000 - i)) << "wire pieces stay frame-sized";
  }
  EXPECT_TRUE(frames.owns(base + 11999)) << "the run's slab is found by address";
  cm.release(p.region);
  EXPECT_EQ(frames.in_use(), before);
  EXPECT_EQ(frames.runs(), 0u);
}

TEST_F(ComemTest, SmallContiguousRegionIsOneOrdinaryFrame) {
  bspk_ptr p = cm.create("", 0, 21, 12, true);  // fits one 256-byte frame
  comem::Region& r = cm.local(p);
  EXPECT_TRUE(r.contiguous);
  EXPECT_FALSE(r.run);
  EXPECT_EQ(frames.runs(), 0u);
  EXPECT_EQ(r.contiguous_span(0), 21u);
  bspk_ptr e = cm.create("", 0, 0, 8, true);
  EXPECT_EQ(cm.local(e).contiguous_span(0), 0u);
  cm.release(p.region);
  cm.release(e.region);
}

// The shared-memory board's gather check (sync/board.h, gather_mixed): while
// pid 0 waits in a gather of superstep s, pid 1 is reported only when it left
// s without publishing its block (bspk_expect) or joined the count exchange
// of s; pid 1 having published its block and moved on -- even into its next
// gather, which moves its gstep on -- is not a mix. (The interleaving that
// made the old check report the last case, pid 1 finishing between the check's
// two loads, needs a preemption there; it was seen under perf on shm p = 2:
// 2 jobs of 12 failed before the fix, 0 of 18 after.)
// The boards of processes 0..p-1 of one job, all in this process (the
// segment's name already unlinked).
std::vector<std::unique_ptr<bspk::sync::Board>> open_boards(int p) {
  std::vector<std::unique_ptr<bspk::sync::Board>> b(static_cast<size_t>(p));
  b[0].reset(bspk::sync::Board::create("bspk.test_units." + std::to_string(getpid()), 0, p));
  for (int j = 1; j < p; ++j) b[static_cast<size_t>(j)].reset(bspk::sync::Board::open(b[0]->name(), j, p));
  b[0]->unlink();
  return b;
}

// The count exchange through count slots (sync/board.h): three processes'
// boards in one process, joined and polled in every order the protocol
// allows; a slot of parity k & 1 is reused by collective k + 2, so the
// totals must come from cumulative counts read per source.
TEST(Board, CountExchangeSumsPerDestinationOverReusedSlots) {
  const int P = 3;
  std::vector<std::unique_ptr<bspk::sync::Board>> b = open_boards(P);
  bspk::sync::Board::Result r{};
  for (uint32_t k = 0; k < 6; ++k) {
    const uint32_t s = 10 + 2 * k;
    uint64_t v[P][P];
    for (int i = 0; i < P; ++i)
      for (int d = 0; d < P; ++d) v[i][d] = (i + 1) * 10 + d + k * (i == d ? 0 : 1);
    // pid 0 joins first and must wait for the others; pid 1 sends only to
    // pid 2 (a sparse destination list), so its count for 0 and 1 stays.
    b[0]->join(s, bspk::sync::Board::Counted, v[0], nullptr, 0);
    EXPECT_EQ(b[0]->joined_so_far(), 1) << "collective " << k;
    EXPECT_FALSE(b[0]->poll(r)) << "collective " << k << ": pids 1 and 2 have not joined";
    const int only2[1] = {2};
    b[1]->join(s, bspk::sync::Board::Counted, v[1], only2, 1);
    EXPECT_FALSE(b[0]->poll(r));
    EXPECT_FALSE(b[1]->poll(r));
    b[2]->join(s, bspk::sync::Board::Counted, v[2], nullptr, 0);
    EXPECT_EQ(b[2]->joined_so_far(), 3);
    for (int t = P - 1; t >= 0; --t) {
      ASSERT_TRUE(b[t]->poll(r)) << "collective " << k << " pid " << t;
      uint64_t want = v[0][t] + v[2][t] + (t == 2 ? v[1][2] : 0);
      EXPECT_EQ(r.total, want) << "collective " << k << " pid " << t;
      EXPECT_TRUE(r.same_step);
      EXPECT_EQ(r.kinds, 1u << bspk::sync::Board::Counted);
      EXPECT_EQ(r.per_kind[bspk::sync::Board::Counted], 3u);
      EXPECT_FALSE(b[t]->poll(r)) << "one result per join";
    }
  }
  // Mixed kinds and supersteps: pid 1 joins from superstep 99 with will_send,
  // pid 2 finalizes; every process sees who did what.
  const uint64_t z[P] = {0, 0, 0};
  b[0]->join(50, bspk::sync::Board::Counted, z, nullptr, 0);
  b[1]->join(99, bspk::sync::Board::WillSend, z, nullptr, 0);
  b[2]->join(50, bspk::sync::Board::Finalize, z, nullptr, 0);
  for (int t = 0; t < P; ++t) {
    ASSERT_TRUE(b[t]->poll(r));
    EXPECT_EQ(r.total, 0u);
    EXPECT_EQ(r.kinds, 7u);
    EXPECT_EQ(r.first[bspk::sync::Board::Counted], 0);
    EXPECT_EQ(r.first[bspk::sync::Board::WillSend], 1);
    EXPECT_EQ(r.first[bspk::sync::Board::Finalize], 2);
    EXPECT_FALSE(r.same_step);
    EXPECT_EQ(r.min_step, 50u);
    EXPECT_EQ(r.min_pid, t == 1 ? 0 : t);  // (the earliest superstep joined from: this process's if it is one)
    EXPECT_EQ(r.later_pid, 1);
    EXPECT_EQ(r.later_step, 99u);
  }
}

// The facts an oversubscribed waiter holds on to (sync/wait.cpp, backoff):
// which processes share its CPU, and which of them joined the count board.
TEST(Board, CpuMatesAndJoinedPerProcess) {
  const int P = 5;
  std::vector<std::unique_ptr<bspk::sync::Board>> b = open_boards(P);
  // Round-robin on CPUs 0 and 1 (as bspkrun binds), but pid 4 unbound.
  const int cpu[P] = {0, 1, 0, 1, -1};
  for (int j = 0; j < P; ++j) b[j]->set_cpu(cpu[j]);
  EXPECT_EQ(b[0]->cpu_mates(), (std::vector<int>{2}));
  EXPECT_EQ(b[1]->cpu_mates(), (std::vector<int>{3}));
  EXPECT_EQ(b[2]->cpu_mates(), (std::vector<int>{0}));
  EXPECT_TRUE(b[4]->cpu_mates().empty()) << "an unbound process has no mates";
  b[3]->set_cpu(0);  // (CPU 0 is a valid CPU: stored as 1 + cpu)
  EXPECT_EQ(b[0]->cpu_mates(), (std::vector<int>{2, 3}));
  const uint64_t z[P] = {0, 0, 0, 0, 0};
  for (uint32_t k = 0; k < 3; ++k) {  // over both parities of the slots
    b[2]->join(7 + k, bspk::sync::Board::Counted, z, nullptr, 0);
    for (int j = 0; j < P; ++j) EXPECT_EQ(b[0]->joined(j), j == 2) << "collective " << k << " pid " << j;
    for (int j = 0; j < P; ++j)
      if (j != 2) b[j]->join(7 + k, bspk::sync::Board::Counted, z, nullptr, 0);
    for (int j = 0; j < P; ++j) EXPECT_TRUE(b[0]->joined(j)) << "collective " << k << " pid " << j;
    bspk::sync::Board::Result r{};
    for (int t = 0; t < P; ++t) ASSERT_TRUE(b[t]->poll(r));
    for (int j = 0; j < P; ++j) EXPECT_FALSE(b[0]->joined(j)) << "the next collective, nobody yet";
  }
}

TEST(Board, GatherMixedReportsOnlyRealMixes) {
  std::unique_ptr<bspk::sync::Board> a(
      bspk::sync::Board::create("bspk.test_units." + std::to_string(getpid()), 0, 2));
  std::unique_ptr<bspk::sync::Board> b(bspk::sync::Board::open(a->name(), 1, 2));
  a->unlink();
  const char x = 'x', y = 'y';
  size_t n = 0;
  bool counted = true;
  a->set_step(5);
  b->set_step(5);
  a->gather_publish(5, &x, 1);  // pid 0's gather 0, superstep 5
  EXPECT_EQ(a->gather_mixed(5, &counted), -1) << "pid 1 is still in superstep 5";
  // pid 1 publishes, reads, goes on to superstep 6 and publishes its gather 1
  b->gather_publish(5, &y, 1);
  ASSERT_NE(b->gather_block(0, &n), nullptr);
  b->gather_done();
  b->set_step(6);
  b->gather_publish(6, &y, 1);
  EXPECT_EQ(a->gather_mixed(5, &counted), -1) << "pid 1 published its block of superstep 5 and moved on";
  const unsigned char* blk = a->gather_block(1, &n);
  ASSERT_NE(blk, nullptr);
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(*blk, 'y');
  a->gather_done();
  a->set_step(6);
  a->gather_publish(6, &x, 1);  // gather 1: both published
  EXPECT_EQ(a->gather_mixed(6, &counted), -1);
  ASSERT_NE(a->gather_block(1, &n), nullptr);
  ASSERT_NE(b->gather_block(0, &n), nullptr);
  a->gather_done();
  b->gather_done();
  a->set_step(7);
  b->set_step(7);
  // gather 2 of superstep 7: pid 1 leaves 7 without it (bspk_expect)
  a->gather_publish(7, &x, 1);
  b->set_step(8);
  counted = true;
  EXPECT_EQ(a->gather_mixed(7, &counted), 1);
  EXPECT_FALSE(counted);
}

TEST(Board, GatherMixedReportsACountedSyncOfTheSameSuperstep) {
  std::unique_ptr<bspk::sync::Board> a(
      bspk::sync::Board::create("bspk.test_units." + std::to_string(getpid()), 0, 2));
  std::unique_ptr<bspk::sync::Board> b(bspk::sync::Board::open(a->name(), 1, 2));
  a->unlink();
  const char x = 'x';
  a->set_step(3);
  b->set_step(3);
  a->gather_publish(3, &x, 1);
  const uint64_t v[2] = {0, 0};
  b->join(3, bspk::sync::Board::Counted, v, nullptr, 0);
  bool counted = false;
  EXPECT_EQ(a->gather_mixed(3, &counted), 1);
  EXPECT_TRUE(counted);
  EXPECT_EQ(b->gathering(3), 0) << "pid 1, counted, sees pid 0 gathering in superstep 3";
}

// copy_bytes copies exactly what memcpy does -- every byte of the range,
// nothing outside it -- at every offset of the destination relative to the
// source modulo 4 KiB, those it copies backward (1-63) and the others, and
// at sizes around its threshold and the backward loop's 64-byte steps.
TEST(CopyBytes, CopiesExactlyTheRangeAtEveryRelativeOffset) {
  const size_t sizes[] = {0, 1, 63, 64, 65, bspk::kCopyAliasMin - 1, bspk::kCopyAliasMin, bspk::kCopyAliasMin + 1,
                          4095, 4096, 4097, 65536 + 17};
  const size_t kMax = 65536 + 17, kPad = 64;
  std::vector<unsigned char> src(kMax + 8192), dst(kMax + 8192 + 2 * kPad);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + (i >> 8) * 7 + 1);
  auto* s0 = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(src.data()) + 4095) & ~uintptr_t{4095});
  size_t backward = 0;
  for (size_t n : sizes)
    for (size_t delta = 0; delta < 4096; delta += delta < 80 ? 1 : 509) {
      // dst - src == delta (mod 4096), the source at a page boundary plus 3.
      const unsigned char* s = s0 + 3;
      const uintptr_t want = (reinterpret_cast<uintptr_t>(s) + delta) & 4095;
      unsigned char* base = dst.data() + kPad;
      unsigned char* d = base + ((want - reinterpret_cast<uintptr_t>(base)) & 4095);
      std::memset(dst.data(), 0xEE, dst.size());
      backward += bspk::copy_aliases(d, s, n);
      bspk::copy_bytes(d, s, n);
      ASSERT_EQ(std::memcmp(d, s, n), 0) << "n " << n << " delta " << delta;
      for (size_t k = 1; k <= kPad; ++k) {
        ASSERT_EQ(d[-static_cast<ptrdiff_t>(k)], 0xEE) << "n " << n << " delta " << delta << ": byte " << k << " before";
        ASSERT_EQ(d[n + k - 1], 0xEE) << "n " << n << " delta " << delta << ": byte " << k - 1 << " after";
      }
    }
  EXPECT_GT(backward, 0u) << "the backward path was never taken: the test would not see it break";
}

// base/random.h: random_u64 hands out values fetched in batches; a forked
// child must not draw what its parent draws next (the batch it inherited),
// or two processes would make the same memory keys.
TEST(Random, ForkedChildNeverDrawsItsParentsNextValues) {
  (void)bspk::random_u64();  // a batch is buffered now
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    uint64_t v[8];
    for (auto& x : v) x = bspk::random_u64();
    _exit(write(fds[1], v, sizeof v) == static_cast<ssize_t>(sizeof v) ? 0 : 1);
  }
  close(fds[1]);
  uint64_t theirs[8];
  ASSERT_EQ(read(fds[0], theirs, sizeof theirs), static_cast<ssize_t>(sizeof theirs));
  close(fds[0]);
  int st = 0;
  ASSERT_EQ(waitpid(child, &st, 0), child);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  std::set<uint64_t> all(theirs, theirs + 8);
  for (int i = 0; i < 8; ++i) all.insert(bspk::random_u64());
  EXPECT_EQ(all.size(), 16u) << "parent and child drew a value in common";
}
