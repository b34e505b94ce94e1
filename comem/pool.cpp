#include "comem/pool.h"

#include <bspk.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "base/error.h"
#include "base/placement.h"

namespace bspk::comem {

namespace {
bool is_pow2(size_t x) { return x && !(x & (x - 1)); }
unsigned log2u(size_t x) {
  unsigned s = 0;
  while ((size_t{1} << s) < x) ++s;
  return s;
}
}  // namespace

FramePool::FramePool(fabric::Transport* ep, size_t frame_size, size_t limit_bytes, size_t min_slab)
    : ep_(ep), frame_size_(frame_size), limit_(limit_bytes) {
  if (!is_pow2(frame_size) || frame_size < 64 || frame_size > kMaxFrameSize)
    fail(BSPK_ERR_ARG, "frame size %zu is not a power of two from 64 bytes to 64M (BSPK_FRAME_SIZE)", frame_size);
  // A slab holds at least 32 frames and is at least min_slab (8 MiB for data
  // frames): few registrations, and a power of two so that address >> slab_shift
  // names the slab.
  if (!is_pow2(min_slab)) fail(BSPK_ERR_ARG, "internal: slab size %zu is not a power of two", min_slab);
  slab_size_ = std::max<size_t>(min_slab, 32 * frame_size);
  slab_shift_ = log2u(slab_size_);
}

FramePool::~FramePool() {
  for (auto& s : slabs_) {
    if (ep_) {
      ep_->deregister(s.mr);
      ep_->free_memory(s.base, slab_size_);
    } else {
      std::free(s.base);
    }
  }
  for (auto& [b, s] : runs_) release_run(s);
  release_kept(0);
}

namespace {
// Make every page of [base, base + len) present and writable without
// changing a byte (frames of an existing slab may hold data), so that none
// faults on first use later. One madvise(MADV_POPULATE_WRITE) (Linux 5.14)
// does it in the kernel, page tables filled in one pass: the 32 receive
// frames bspk_init touches on tcp (8 MiB, 2048 pages) cost a minor fault
// each when written one by one, about 8 ms of a 19-27 ms bspk_init here.
// The range is widened to whole pages (frames smaller than a page share
// pages of their slab, which is page-aligned). Elsewhere (an older kernel:
// EINVAL), each page is written.
void touch_pages(void* base, size_t len) {
  if (len == 0) return;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t lo = reinterpret_cast<uintptr_t>(base) & ~(page - 1);
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(base) + len + page - 1) & ~(page - 1);
#ifdef MADV_POPULATE_WRITE
  if (madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_POPULATE_WRITE) == 0) return;
#endif
  for (uintptr_t a = lo; a < hi; a += page) {
    volatile unsigned char* q = reinterpret_cast<unsigned char*>(a);
    *q = *q;
  }
}
}  // namespace

void FramePool::grow(bool touch) {
  if (limit_ && slab_size_ > limit_)  // (not one slab fits: no freeing helps)
    fail(BSPK_ERR_NOMEM,
         "BSPK_POOL_LIMIT=%zu is smaller than one slab of %zu-byte frames (%zu bytes): set it to at least %zu",
         limit_, frame_size_, slab_size_, slab_size_);
  if (over_limit(slab_size_))
    fail(BSPK_ERR_NOMEM,
         "frame pool limit reached: %zu frames of %zu bytes in use, %zu bytes of slabs "
         "(BSPK_POOL_LIMIT=%zu); free regions you no longer need",
         in_use_, frame_size_, bytes(), limit_);
  // From the transport (host-shared memory where the same-host path pulls
  // from it, fabric/local.h), else private memory.
  void* base = allocate([&] {
    void* p = nullptr;
    if (ep_) return ep_->alloc_memory(slab_size_, slab_size_);
    return posix_memalign(&p, slab_size_, slab_size_) == 0 ? p : nullptr;
  });
  if (!base)
    fail(BSPK_ERR_NOMEM, "could not allocate a %zu-byte frame slab (%zu slabs, %zu frames in use)",
         slab_size_, slabs_.size(), in_use_);
  // Before first touch: the slab's pages come from this process's NUMA node(s)
  // (no-op on one node, or before bspk_init placed the process).
  placement::bind_memory(base, slab_size_);
  touch = touch || prefault_;
  if (touch) touch_pages(base, slab_size_);
  Slab s{base, {}};
  if (ep_) {
    try {
      s.mr = ep_->register_memory(base, slab_size_);
    } catch (...) {
      ep_->free_memory(base, slab_size_);
      throw;
    }
  }
  by_base_[reinterpret_cast<uintptr_t>(base) >> slab_shift_] = slabs_.size();
  slabs_.push_back(s);
  size_t n = slab_size_ / frame_size_;
  // Untouched frames stay the bottom of the stack: a slab made with free_
  // empty is all untouched; one made over free frames (reserve) is touched.
  if (free_.empty()) untouched_ = touch ? 0 : n;
  free_.reserve(free_.size() + n);
  // Push in reverse so frames are handed out in ascending address order.
  uintptr_t b = reinterpret_cast<uintptr_t>(base);
  for (size_t i = n; i-- > 0;) free_.push_back(b + i * frame_size_);
}

void FramePool::touch(uintptr_t f) const { touch_pages(reinterpret_cast<void*>(f), frame_size_); }

void FramePool::prefault() {
  if (prefault_) return;
  prefault_ = true;
  for (const Slab& s : slabs_) touch_pages(s.base, slab_size_);
  untouched_ = 0;
}

void FramePool::reserve(size_t bytes) {
  while (slabs_.size() * slab_size_ < bytes) grow(true);
}

// A run: one slab of exactly k frames, aligned to a frame, registered on the
// same path as grow()'s slabs (NUMA binding before first touch, then
// register_memory). Its addresses never fall in an ordinary slab's window
// (address >> slab_shift_), since ordinary slabs fill their whole window.
uintptr_t FramePool::alloc_run(size_t k) {
  if (k == 0) fail(BSPK_ERR_ARG, "internal: a run of 0 frames");
  if (k > (SIZE_MAX >> 1) / frame_size_)
    fail(BSPK_ERR_NOMEM, "a run of %zu frames of %zu bytes is too large", k, frame_size_);
  const size_t len = k * frame_size_;
  // A kept run of this length, the newest (its pages likeliest in cache).
  for (size_t i = kept_.size(); i-- > 0;) {
    if (kept_[i].len != len) continue;
    const Slab s = kept_[i];
    kept_.erase(kept_.begin() + static_cast<ptrdiff_t>(i));
    kept_bytes_ -= len;
    return use_run(s);
  }
  if (over_limit(len))
    fail(BSPK_ERR_NOMEM,
         "frame pool limit reached: a contiguous run of %zu frames (%zu bytes) does not fit; %zu frames of %zu bytes "
         "in use, %zu bytes of slabs (BSPK_POOL_LIMIT=%zu); free regions you no longer need",
         k, len, in_use_, frame_size_, bytes(), limit_);
  // From the transport (on one host with pulls, its host-shared run arena:
  // fabric/local.h "Runs"), else private memory.
  const size_t align = std::max<size_t>(frame_size_, 4096);
  void* base = allocate([&] {
    void* p = nullptr;
    if (ep_) return ep_->alloc_run_memory(len, align);
    return posix_memalign(&p, align, len) == 0 ? p : nullptr;
  });
  if (!base)
    fail(BSPK_ERR_NOMEM, "could not allocate a contiguous run of %zu frames (%zu bytes; %zu frames in use)", k, len,
         in_use_);
  placement::bind_memory(base, len);
  Slab s{base, {}, len};
  if (ep_) {
    try {
      s.mr = ep_->register_memory(base, len);
    } catch (...) {
      ep_->free_run_memory(base, len);
      throw;
    }
  }
  return use_run(s);
}

uintptr_t FramePool::use_run(const Slab& s) {
  const uintptr_t b = reinterpret_cast<uintptr_t>(s.base);
  runs_.emplace(b, s);
  run_bytes_ += s.len;
  in_use_ += s.len / frame_size_;
  if (in_use_ > peak_) peak_ = in_use_;
  return b;
}

void FramePool::free_run(uintptr_t base) {
  auto it = runs_.find(base);
  if (it == runs_.end()) fail(BSPK_ERR_INTERNAL, "internal: %#lx is not the start of a frame run", (unsigned long)base);
  Slab s = it->second;
  run_bytes_ -= s.len;
  in_use_ -= s.len / frame_size_;
  runs_.erase(it);
  if (s.len > kRunKeepBytes) {
    release_run(s);
    return;
  }
  kept_.push_back(s);
  kept_bytes_ += s.len;
  release_kept(kRunKeepBytes);
}

void FramePool::release_run(Slab& s) noexcept {
  if (ep_) {
    ep_->deregister(s.mr);
    ep_->free_run_memory(s.base, s.len);
  } else {
    std::free(s.base);
  }
}

bool FramePool::over_limit(size_t more) noexcept {
  if (!limit_ || bytes() + more <= limit_) return false;
  release_kept(0);  // kept runs make way first
  return bytes() + more > limit_;
}

void FramePool::release_kept(size_t down_to) noexcept {
  size_t n = 0;
  while (n < kept_.size() && kept_bytes_ > down_to) {
    kept_bytes_ -= kept_[n].len;
    release_run(kept_[n++]);
  }
  kept_.erase(kept_.begin(), kept_.begin() + static_cast<ptrdiff_t>(n));
}

const FramePool::Slab* FramePool::run_of(uintptr_t a) const {
  auto it = runs_.upper_bound(a);
  if (it == runs_.begin()) return nullptr;
  --it;
  return a - it->first < it->second.len ? &it->second : nullptr;
}

bool FramePool::owns(uintptr_t a) const { return by_base_.count(a >> slab_shift_) != 0 || run_of(a) != nullptr; }

const fabric::MemoryRegion& FramePool::region_of(uintptr_t a) const {
  const uintptr_t key = a >> slab_shift_;
  const size_t c = key % kSlabCache;
  if (cache_key_[c] == key) return slabs_[cache_slab_[c]].mr;
  auto it = by_base_.find(key);
  if (it != by_base_.end()) {
    cache_key_[c] = key;
    cache_slab_[c] = it->second;
    return slabs_[it->second].mr;
  }
  if (const Slab* r = run_of(a)) return r->mr;
  fail(BSPK_ERR_PTR, "address %#lx is not inside a registered frame slab", (unsigned long)a);
}

void* FramePool::desc(uintptr_t a) const { return ep_ ? region_of(a).desc : nullptr; }

// ---------------------------------------------------------------------------

IndexPool::~IndexPool() {
  for (uint8_t c = kBumpClasses; c < 64; ++c)
    for (auto* p : free_[c]) std::free(p);
  for (void* c : chunks_) std::free(c);
}

uint8_t IndexPool::class_of(size_t n) { return static_cast<uint8_t>(log2u(n ? n : 1)); }

uintptr_t* IndexPool::alloc(size_t n, uint8_t* cls) {
  uint8_t c = class_of(n);
  *cls = c;
  auto& fl = free_[c];
  if (!fl.empty()) {
    uintptr_t* a = fl.back();
    fl.pop_back();
    return a;
  }
  size_t bytes = (size_t{1} << c) * sizeof(uintptr_t);
  if (c >= kBumpClasses) {
    auto* a = static_cast<uintptr_t*>(std::malloc(bytes));
    if (!a) fail(BSPK_ERR_NOMEM, "could not allocate an index array of %zu entries", n);
    return a;
  }
  if (bump_left_ < bytes) {
    void* chunk = std::malloc(kChunk);
    if (!chunk) fail(BSPK_ERR_NOMEM, "could not grow the index-array pool");
    chunks_.push_back(chunk);
    bump_ = static_cast<char*>(chunk);
    bump_left_ = kChunk;
  }
  auto* a = reinterpret_cast<uintptr_t*>(bump_);
  bump_ += bytes;
  bump_left_ -= bytes;
  return a;
}

void IndexPool::free(uintptr_t* a, uint8_t cls) { free_[cls].push_back(a); }

}  // namespace bspk::comem
