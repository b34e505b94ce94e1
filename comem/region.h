// comem/region.h -- communicable-memory regions and comem pointers [BSPk §4,
// Figs. 2-3].
//
// A region of N elements of size S is an index array of frame addresses plus
// the frames themselves. E = frame_size / S elements fit in a frame (elements
// never straddle frames). Element i lives in frame (i + skew) / E at slot
// (i + skew) % E. `skew` is non-zero only for received messages whose first
// element did not start a frame on the sender: the payload then lands at the
// start of the receiver's frame, and the index array stores that frame's
// address minus skew*S ("biased"), so the formula above stays O(1) and uniform.
//
// Contiguous regions (bspk_malloc_contiguous, bspk_recv_contiguous) keep the
// same geometry, so everything that cuts a region into frame-sized pieces for
// the wire (mp sends, dsm fragments) works on them unchanged: but their
// elements lie back to back from frame_start(0), and frames[f] is simply the
// address of element f*epf (a *logical* frame). Of several frames they live
// in one run of consecutive frames (FramePool::alloc_run; `run` set); of at
// most one frame, in an ordinary frame. Their frames are never replaced (no
// frame flips), so their addresses stay valid until the region is freed.
//
// A bspk_ptr names (owner pid, region id, element offset); the region id is a
// slot in this process's region table plus a 40-bit generation of the slot
// (its low 8 bits in the 32-bit id, the rest in bspk_ptr::gen), so pointers to
// freed regions are detected instead of silently reaching reused memory, for
// 2^40 reuses of a slot (issue 12, defect 2). Generations start at a random
// value per slot and process, so a pointer from another job is refused too.
#pragma once

#include <bspk.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "comem/pool.h"

namespace bspk::comem {

// Region ids: low 24 bits slot (never 0, so id != 0), high 8 bits the low 8
// bits of the slot's generation; gen_hi() is the rest of the generation.
constexpr uint32_t kSlotBits = 24;
constexpr uint64_t kGenMask = (uint64_t{1} << 40) - 1;
constexpr uint32_t slot_of(uint32_t id) { return id & ((1u << kSlotBits) - 1); }
constexpr uint8_t gen_of(uint32_t id) { return static_cast<uint8_t>(id >> kSlotBits); }
constexpr uint32_t make_id(uint32_t slot, uint64_t gen) {
  return (static_cast<uint32_t>(gen & 0xff) << kSlotBits) | slot;
}
constexpr uint32_t gen_hi(uint64_t gen) { return static_cast<uint32_t>(gen >> 8); }
// Do a slot's generation and an id agree in the bits the id carries?
constexpr bool gen_matches(uint64_t gen, uint32_t id) { return (gen & 0xff) == gen_of(id); }

struct Region {
  uintptr_t* frames = nullptr;  // index array; frames[0] is biased by -skew*elem_size
  uint64_t nelems = 0;
  uint32_t nframes = 0;
  uint32_t skew = 0;       // slot of element 0 in frame 0
  uint32_t elem_size = 0;
  uint32_t epf = 0;        // elements per frame
  int8_t epf_shift = -1;   // log2(epf) when epf is a power of two, else -1
  uint8_t idx_class = 0;   // IndexPool size class of `frames`
  uint64_t gen = 0;        // generation of the table slot (40 bits)
  bool live = false;
  bool free_pending = false;  // freed by the program while sends were in flight
  int32_t sender = -1;        // sender pid for received messages, else owner
  uint64_t tag = 0;           // user tag of a received message (bspk_send_tag), else 0
  uint32_t inflight = 0;      // sends from this region not yet complete
  bool named = false;         // has an entry in Comem's name table
  bool small = false;         // its one frame is a small buffer (received small message)
  bool contiguous = false;    // elements back to back in memory; never flipped (see above)
  bool run = false;           // frames come from one FramePool run starting at frames[0]

  // Unbiased start address of frame f.
  uintptr_t frame_start(uint32_t f) const {
    return f == 0 ? frames[0] + uintptr_t{skew} * elem_size : frames[f];
  }
  // (frame, slot) of element i.
  void locate(uint64_t i, uint64_t* f, uint64_t* s) const {
    uint64_t j = i + skew;
    if (epf_shift >= 0) {
      *f = j >> epf_shift;
      *s = j & (epf - 1);
    } else {
      *f = j / epf;
      *s = j % epf;
    }
  }
  void* elem(uint64_t i) const {
    uint64_t f, s;
    locate(i, &f, &s);
    return reinterpret_cast<void*>(frames[f] + s * elem_size);
  }
  // Elements from i to the end of its frame (and of the region): the unit in
  // which regions are cut for the wire, contiguous regions included.
  uint64_t span(uint64_t i) const {
    uint64_t f, s;
    locate(i, &f, &s);
    uint64_t n = epf - s, left = nelems - i;
    return n < left ? n : left;
  }
  // Elements lying contiguously in memory from i (bspk_span): to the end of
  // the region for a contiguous region, else to the end of i's frame.
  uint64_t contiguous_span(uint64_t i) const { return contiguous ? nelems - i : span(i); }
};

class Comem {
 public:
  // small: pool of small receive buffers (may be null in unit tests).
  Comem(int pid, FramePool& frames, IndexPool& index, FramePool* small = nullptr);
  ~Comem();

  int pid() const { return pid_; }
  FramePool& frames() { return frames_; }
  FramePool* small_pool() { return small_; }
  // The pool region r's frames come from (its desc() gives the registration
  // descriptor of an address inside them: one slab lookup).
  const FramePool& pool_of(const Region& r) const { return r.small ? *small_ : frames_; }
  size_t frame_size() const { return frames_.frame_size(); }

  // A new local region of n elements (bspk_malloc). Throws on bad arguments.
  // contiguous: the elements lie back to back in memory (bspk_malloc_contiguous):
  // one run of consecutive frames when they need more than one frame.
  bspk_ptr create(const char* name, int idx, uint64_t n, uint64_t elem_size, bool contiguous = false);

  // A new region made of frames the caller already owns (received messages).
  // `frames_in` are unbiased frame start addresses; ownership passes to the region.
  // small: the single frame is a small buffer from small_pool() (the region's
  // geometry is still that of full frames; all its elements lie in the buffer).
  bspk_ptr adopt(const uintptr_t* frames_in, uint32_t nframes, uint32_t skew, uint64_t n,
                 uint32_t elem_size, int32_t sender, bool small = false);

  // A new anonymous region of n elements of elem_size bytes holding a copy of
  // `bytes` (n * elem_size of them; may be null when n == 0): the staging
  // region of bspk_put / bspk_send_buf, filled by the one copy those calls
  // make. Element 0 sits at slot `skew` (mod elements per frame) of frame 0,
  // so that its frame boundaries can match a destination's. Data that fits
  // one small buffer (4 KiB) and one frame goes into a single small buffer
  // instead of a frame (skew then 0): a small put does not hold a whole frame
  // until its send completes.
  bspk_ptr create_filled(const void* bytes, uint64_t n, uint32_t elem_size, uint32_t skew = 0);
  // A region made by create_filled(bytes, nbytes, 1) as elements of es bytes
  // (nbytes a multiple of es; nothing else refers to the region). In place
  // when the bytes already lie as es-byte elements would (es divides the
  // frame size, or one small buffer); otherwise a new region with the bytes
  // laid out again, the old one freed (*copied = bytes copied, else 0).
  bspk_ptr reshape(uint32_t id, uint32_t es, uint64_t* copied);

  // Free the region (bspk_free). Frames return to the pool now, or when the
  // last in-flight send from it completes.
  void release(uint32_t id);

  // The live local region p points into; throws BSPK_ERR_PTR for NULL, remote
  // or stale pointers (the API layer adds the call, pid and superstep).
  Region& local(const bspk_ptr& p);
  // The live region with id `id` whose generation's high bits are `hi` (ids
  // from the program or the wire), else nullptr.
  Region* find(uint32_t id, uint32_t hi) {
    Region* r = find(id);
    return r && gen_hi(r->gen) == hi ? r : nullptr;
  }
  // The same by the id alone: for the runtime's own regions (staging, in-flight
  // sends), whose ids never leave it.
  Region* find(uint32_t id);

  // Bookkeeping for zero-copy sends from a region.
  void send_started(Region& r, uint32_t sends) { r.inflight += sends; }
  void send_done(uint32_t id);

  // The (name, idx) of a live named region, or nullptr.
  const std::pair<std::string, int>* name_of(uint32_t id) const {
    uint32_t slot = slot_of(id);
    if (slot >= table_.size() || !gen_matches(table_[slot].gen, id) || !table_[slot].named) return nullptr;
    auto it = name_of_.find(slot);
    return it == name_of_.end() ? nullptr : &it->second;
  }
  // Pointer to this process's region named (name, idx), or BSPK_NULL.
  bspk_ptr find_named(const std::string& name, int idx) const {
    auto it = names_.find({name, idx});
    return it == names_.end() ? BSPK_NULL : ptr_to(slot_of(it->second));
  }

  size_t live_regions() const { return live_; }
  uint32_t max_elem_size() const { return static_cast<uint32_t>(frames_.frame_size()); }

 private:
  uint32_t new_slot();
  // Index array and frames (or one run of run_bytes) for a fresh region; undoes itself on failure.
  void alloc_frames(uint32_t slot, Region& r, uint32_t nframes, uint64_t run_bytes);
  // Fresh Region in `slot` (next generation) with the geometry filled in.
  Region& init_slot(uint32_t slot, uint64_t n, uint32_t nframes, uint32_t skew, uint32_t elem_size,
                    int32_t sender);
  void destroy(uint32_t slot);
  bspk_ptr ptr_to(uint32_t slot) const;
  // An anonymous region of n elements (see create_filled), contents undefined.
  bspk_ptr create_anon(uint64_t n, uint32_t elem_size, uint32_t skew);

  int pid_;
  FramePool& frames_;
  IndexPool& index_;
  FramePool* small_;
  std::vector<Region> table_;      // slot 0 unused
  std::vector<uint32_t> free_slots_;
  uint64_t gen_seed_;  // random: the first generation of each new slot derives from it
  std::map<std::pair<std::string, int>, uint32_t> names_;  // (name, idx) -> region id
  std::map<uint32_t, std::pair<std::string, int>> name_of_;  // slot -> (name, idx), named regions only
  size_t live_ = 0;
};

}  // namespace bspk::comem
