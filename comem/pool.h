// comem/pool.h -- the two pools behind communicable memory [BSPk §4].
//
// FramePool: fixed-size packet frames (a power of two, BSPK_FRAME_SIZE), carved
// from large slabs that are registered with libfabric once, when the slab is
// added. The slabs' memory comes from the transport (Transport::alloc_memory:
// host-shared memory when the same-host path copies straight out of it). Slabs are added on demand and never returned before shutdown; no
// message ever costs a registration. alloc() and free() are O(1) (a stack of
// free frames) and take no lock: the runtime is single-threaded per process.
//
// Runs (bspk_malloc_contiguous): k consecutive frames of one dedicated slab of
// exactly k frames (Transport::alloc_run_memory: on one host with pulls,
// carved from the transport's host-shared run arena), registered like any
// slab and deregistered and released when the run is freed -- unless it is
// kept for the next run of the same length: up to kRunKeepBytes of freed
// runs stay allocated and registered, the oldest released first (a region
// freed and allocated again each superstep, a message taken with
// bspk_recv_contiguous each superstep, then costs no registration and no
// page faults). Runs count in in_use() and bytes() like other frames; kept
// ones in bytes() only.
//
// IndexPool: the small index arrays of regions, in power-of-two size classes
// (1, 2, 4, ... entries), each with its own free list: O(1) allocation too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <unordered_map>
#include <vector>

#include "fabric/fabric.h"

namespace bspk::comem {

// The largest frame (BSPK_FRAME_SIZE): a slab holds at least 32 frames, so
// 64 MiB frames make 2 GiB slabs; larger ones would ask for slabs beyond most
// nodes' memory (and sizes near 2^64 overflow the slab arithmetic).
inline constexpr size_t kMaxFrameSize = size_t{64} << 20;

class FramePool {
 public:
  // frame_size: power of two in [64, kMaxFrameSize]. ep may be null (no registration: unit tests).
  // limit_bytes: most bytes of slabs to allocate (0 = no limit).
  // min_slab: smallest slab (a power of two); a slab holds at least 32 frames.
  FramePool(fabric::Transport* ep, size_t frame_size, size_t limit_bytes = 0,
            size_t min_slab = size_t{8} << 20);
  ~FramePool();
  FramePool(const FramePool&) = delete;
  FramePool& operator=(const FramePool&) = delete;

  // A free frame's address. Adds (and registers) a slab when none is free.
  // Throws bspk::Error(BSPK_ERR_NOMEM) when the limit is reached.
  // first_use (optional): set to whether the frame is handed out for the
  // first time since its slab was made unprefaulted, i.e. its pages may never
  // have been touched and the first write to each costs a page fault (the
  // engine touches such frames before posting them for arrivals).
  uintptr_t alloc(bool* first_use = nullptr) {
    if (free_.empty()) grow();
    uintptr_t f = free_.back();
    free_.pop_back();
    // Frames never handed out stay at the bottom of the stack (a slab is made
    // when the stack is empty; freed frames go on top), as free_[0, untouched_).
    const bool first = free_.size() < untouched_;
    if (first) untouched_ = free_.size();
    if (first_use) *first_use = first;
    if (++in_use_ > peak_) peak_ = in_use_;
    return f;
  }

  // alloc() that returns 0 instead of throwing when the pool cannot grow
  // (the limit, or memory or registration failing).
  uintptr_t try_alloc(bool* first_use = nullptr) {
    if (free_.empty()) {
      try {
        grow();
      } catch (const std::exception&) {
        return 0;
      }
    }
    return alloc(first_use);
  }

  // Write every page of frame f, keeping its bytes: its page faults are
  // taken now rather than by the first write into it.
  void touch(uintptr_t f) const;

  // Return a frame obtained from alloc().
  void free(uintptr_t f) {
    free_.push_back(f);
    --in_use_;
  }

  // k >= 1 consecutive frames in one registered slab of k frames (the
  // address of the first): a kept run of that length if there is one (its
  // bytes are what its last user left), else a new slab and one
  // registration. Throws bspk::Error(BSPK_ERR_NOMEM) past the limit (kept
  // runs are released first) or when memory runs out.
  uintptr_t alloc_run(size_t k);
  // Return a run obtained from alloc_run() (its first frame's address): kept
  // for reuse (see the top), else deregistered and released at once.
  void free_run(uintptr_t base);
  size_t runs() const { return runs_.size(); }
  size_t kept_runs() const { return kept_.size(); }
  size_t kept_bytes() const { return kept_bytes_; }
  static constexpr size_t kRunKeepBytes = size_t{64} << 20;  // most bytes of freed runs kept

  // Memory-registration descriptor of the slab holding address a (must be
  // inside a frame of this pool), to pass with every data call.
  void* desc(uintptr_t a) const;
  // Registration of the slab holding a (key and base for remote access).
  const fabric::MemoryRegion& region_of(uintptr_t a) const;
  bool owns(uintptr_t a) const;

  // Add slabs until the ordinary slabs hold at least `bytes`, and touch every
  // page of the new ones (as prefault() does), so that later frames cost no
  // page fault on first touch (BSPK_POOL_RESERVE). Throws
  // bspk::Error(BSPK_ERR_NOMEM) past the limit, as alloc() does.
  void reserve(size_t bytes);
  // Touch (write, keeping every byte) each page of the slabs this pool has,
  // and of each it makes from now on as it is made. For the pools whose
  // buffers the engine posts for arrivals (4 KiB small buffers, wire
  // headers): a buffer's first page fault would land between a message's
  // arrival and the program seeing it (about 3 us per fault on this VM; a
  // superstep registering four named regions took 30-45 us in its first
  // rounds, 5-20 us with these pools prefaulted).
  void prefault();

  // Remove the limit from here on (bspk_finalize: the final superstep's
  // arrivals are received and discarded whatever the program still holds, so
  // a job whose pools ran out can still end; see api/init.cpp).
  void lift_limit() noexcept { limit_ = 0; }

  size_t frame_size() const { return frame_size_; }
  size_t slab_size() const { return slab_size_; }
  size_t in_use() const { return in_use_; }
  size_t peak() const { return peak_; }
  size_t bytes() const { return slabs_.size() * slab_size_ + run_bytes_ + kept_bytes_; }
  size_t nfree() const { return free_.size(); }

 private:
  // Add a slab; touch: write its pages now (reserve, prefault).
  void grow(bool touch = false);
  fabric::Transport* ep_;
  size_t frame_size_, slab_size_, limit_;
  unsigned slab_shift_;
  struct Slab {
    void* base;
    fabric::MemoryRegion mr;
    size_t len = 0;  // runs only (ordinary slabs are slab_size_ long)
  };
  std::vector<Slab> slabs_;
  std::unordered_map<uintptr_t, size_t> by_base_;  // (address >> slab_shift) -> slab
  // Slabs found through by_base_, direct-mapped by key (ordinary slabs are
  // never removed, so an entry never goes stale). One entry was not enough:
  // sends from a region of one slab of the small pool while the engine
  // reposted small receive buffers of another missed on every call, into
  // the hash table (shm, p = 2, 16 one-word messages per superstep, before
  // send_frame looked descriptors up only when needed: 3.03-3.17 us with one
  // entry, 2.97-3.00 with these).
  static constexpr size_t kSlabCache = 8;
  mutable uintptr_t cache_key_[kSlabCache] = {~uintptr_t{0}, ~uintptr_t{0}, ~uintptr_t{0}, ~uintptr_t{0},
                                              ~uintptr_t{0}, ~uintptr_t{0}, ~uintptr_t{0}, ~uintptr_t{0}};
  mutable size_t cache_slab_[kSlabCache] = {};
  std::vector<uintptr_t> free_;
  size_t untouched_ = 0;  // free_[0, untouched_): frames never handed out, pages never touched
  size_t in_use_ = 0, peak_ = 0;
  bool prefault_ = false;  // prefault(): touch each new slab's pages when it is made
  // Runs by start address (not slab-aligned: found by an ordered search when
  // the slab lookup above misses, so ordinary frames pay nothing for them).
  std::map<uintptr_t, Slab> runs_;
  size_t run_bytes_ = 0;
  std::vector<Slab> kept_;  // freed runs kept for reuse, oldest first
  size_t kept_bytes_ = 0;
  const Slab* run_of(uintptr_t a) const;
  uintptr_t use_run(const Slab& s);       // s in use as a run: its first frame's address
  void release_run(Slab& s) noexcept;     // deregister and release its memory
  void release_kept(size_t down_to) noexcept;  // oldest kept runs until kept_bytes_ <= down_to
  // Would `more` bytes pass the limit, even with every kept run released?
  bool over_limit(size_t more) noexcept;
  // alloc() of memory (nullptr when out of it), once more with every kept run
  // released if the first try finds none.
  template <class Alloc>
  void* allocate(Alloc alloc) {
    void* p = alloc();
    if (!p && !kept_.empty()) {
      release_kept(0);
      p = alloc();
    }
    return p;
  }
};

class IndexPool {
 public:
  IndexPool() = default;
  ~IndexPool();
  IndexPool(const IndexPool&) = delete;
  IndexPool& operator=(const IndexPool&) = delete;

  // An array of at least n entries (n >= 1); *cls receives its size class.
  uintptr_t* alloc(size_t n, uint8_t* cls);
  void free(uintptr_t* a, uint8_t cls);

  static uint8_t class_of(size_t n);

 private:
  static constexpr size_t kChunk = 64 * 1024;   // bytes carved per refill
  static constexpr uint8_t kBumpClasses = 12;   // classes <= 2^11 entries come from chunks
  std::vector<uintptr_t*> free_[64];
  std::vector<void*> chunks_;
  char* bump_ = nullptr;
  size_t bump_left_ = 0;
};

}  // namespace bspk::comem
