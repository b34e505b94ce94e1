#include "comem/region.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <random>

#include "base/copy.h"
#include "base/error.h"

namespace bspk::comem {

namespace {
// log2(x) for a power of two, else -1 (one instruction: this runs for
// every region made, received messages included).
int8_t shift_of(uint32_t x) {
  if (!x || (x & (x - 1))) return -1;
  return static_cast<int8_t>(__builtin_ctz(x));
}
}  // namespace

Comem::Comem(int pid, FramePool& frames, IndexPool& index, FramePool* small)
    : pid_(pid), frames_(frames), index_(index), small_(small) {
  table_.resize(1);  // slot 0 is never used: region id 0 means NULL
  std::random_device rd;
  gen_seed_ = (uint64_t{rd()} << 32) ^ rd();
}

Comem::~Comem() = default;  // frames and index arrays die with their pools

uint32_t Comem::new_slot() {
  if (!free_slots_.empty()) {
    uint32_t s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }
  if (table_.size() >= (1u << kSlotBits))
    fail(BSPK_ERR_NOMEM, "more than %u live comem regions on one process", (1u << kSlotBits) - 1);
  table_.emplace_back();
  // A random first generation (splitmix64 of the seed and the slot): pointers
  // from another job, or made up, match a live region with odds of 2^-40.
  uint64_t x = gen_seed_ + 0x9E3779B97F4A7C15ull * table_.size();
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  table_.back().gen = (x ^ (x >> 31)) & kGenMask;
  return static_cast<uint32_t>(table_.size() - 1);
}

bspk_ptr Comem::ptr_to(uint32_t slot) const {
  const Region& r = table_[slot];
  bspk_ptr p{};
  p.offset = 0;
  p.nelems = r.nelems;
  p.region = make_id(slot, r.gen);
  p.owner = pid_;
  p.elem_size = r.elem_size;
  p.sender = r.sender;
  p.gen = gen_hi(r.gen);
  return p;
}

Region& Comem::init_slot(uint32_t slot, uint64_t n, uint32_t nframes, uint32_t skew,
                         uint32_t elem_size, int32_t sender) {
  Region& r = table_[slot];
  uint64_t gen = (r.gen + 1) & kGenMask;
  r = Region{};
  r.gen = gen;
  r.nelems = n;
  r.nframes = nframes;
  r.skew = skew;
  r.elem_size = elem_size;
  r.epf = static_cast<uint32_t>(frames_.frame_size() / elem_size);
  r.epf_shift = shift_of(r.epf);
  r.sender = sender;
  return r;
}

// The index array and the frames of a fresh region in `slot`: nframes frames
// from the pool, or, with run_bytes > 0, one run of consecutive frames
// holding run_bytes back to back (frames[f] is the address of element f*epf,
// see region.h). On failure everything taken is given back, the slot is
// freed and the error propagates.
void Comem::alloc_frames(uint32_t slot, Region& r, uint32_t nframes, uint64_t run_bytes) {
  uint32_t got = 0;
  try {
    r.frames = index_.alloc(nframes ? nframes : 1, &r.idx_class);
    if (run_bytes > 0) {
      uintptr_t base = frames_.alloc_run(static_cast<size_t>((run_bytes + frames_.frame_size() - 1) / frames_.frame_size()));
      r.run = true;
      for (uint32_t f = 0; f < nframes; ++f) r.frames[f] = base + uint64_t{f} * r.epf * r.elem_size;
    } else {
      for (; got < nframes; ++got) r.frames[got] = frames_.alloc();
    }
  } catch (...) {
    for (uint32_t k = 0; k < got; ++k) frames_.free(r.frames[k]);
    if (r.frames) index_.free(r.frames, r.idx_class);
    r.frames = nullptr;
    free_slots_.push_back(slot);
    throw;
  }
}

bspk_ptr Comem::create(const char* name, int idx, uint64_t n, uint64_t elem_size, bool contiguous) {
  if (elem_size == 0) fail(BSPK_ERR_ARG, "element size is 0");
  // (An element may straddle two frames of a contiguous run, but it still
  // travels in one frame: bspk.h, bspk_malloc_contiguous.)
  if (elem_size > frames_.frame_size())
    fail(BSPK_ERR_ARG, "element size %llu exceeds the frame size %zu (%s; raise BSPK_FRAME_SIZE)",
         (unsigned long long)elem_size, frames_.frame_size(),
         contiguous ? "an element of a contiguous region is at most a frame" : "elements never straddle frames");
  std::string nm = name ? name : "";
  if (nm.size() > 63) fail(BSPK_ERR_ARG, "region name '%.20s...' is longer than 63 bytes", nm.c_str());
  if (!nm.empty() && names_.count({nm, idx}))
    fail(BSPK_ERR_NAME, "a region named (\"%s\", %d) already exists on this process (pid %d); names are unique in the whole job",
         nm.c_str(), idx, pid_);
  uint32_t epf = static_cast<uint32_t>(frames_.frame_size() / elem_size);
  uint64_t nframes64 = n / epf + (n % epf != 0);  // no overflow for any n
  // Refuse at once what this machine cannot hold, instead of letting the
  // kernel kill the process when the frames are first touched.
  static const uint64_t phys = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                               static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (nframes64 > UINT32_MAX || (phys && nframes64 > phys / frames_.frame_size()))
    fail(BSPK_ERR_NOMEM,
         "a region of %llu elements of %llu bytes needs %llu frames of %zu bytes (%.1f GiB); this "
         "machine has %.1f GiB of memory",
         (unsigned long long)n, (unsigned long long)elem_size, (unsigned long long)nframes64,
         frames_.frame_size(), static_cast<double>(nframes64) * static_cast<double>(frames_.frame_size()) / (1u << 30),
         static_cast<double>(phys) / (1u << 30));
  uint32_t nframes = static_cast<uint32_t>(nframes64);

  uint32_t slot = new_slot();
  Region& r = init_slot(slot, n, nframes, 0, static_cast<uint32_t>(elem_size), pid_);
  uint64_t gen = r.gen;
  r.named = !nm.empty();
  r.contiguous = contiguous;
  alloc_frames(slot, r, nframes, contiguous && nframes > 1 ? n * elem_size : 0);
  r.live = true;
  ++live_;
  if (!nm.empty()) {
    names_[{nm, idx}] = make_id(slot, gen);
    name_of_[slot] = {nm, idx};
  }
  return ptr_to(slot);
}

bspk_ptr Comem::adopt(const uintptr_t* frames_in, uint32_t nframes, uint32_t skew, uint64_t n,
                      uint32_t elem_size, int32_t sender, bool small) {
  if (small && (nframes != 1 || !small_))
    fail(BSPK_ERR_ARG, "internal: a small-buffer region has exactly one frame");
  uint32_t slot = new_slot();
  Region& r = init_slot(slot, n, nframes, skew, elem_size, sender);
  r.small = small;
  try {
    r.frames = index_.alloc(nframes ? nframes : 1, &r.idx_class);
  } catch (...) {
    free_slots_.push_back(slot);
    throw;
  }
  for (uint32_t k = 0; k < nframes; ++k) r.frames[k] = frames_in[k];
  if (nframes) r.frames[0] -= uintptr_t{skew} * elem_size;  // bias, see region.h
  r.live = true;
  ++live_;
  return ptr_to(slot);
}

bspk_ptr Comem::create_anon(uint64_t n, uint32_t elem_size, uint32_t skew) {
  if (elem_size == 0 || elem_size > frames_.frame_size())
    fail(BSPK_ERR_INTERNAL, "staging region with %u-byte elements (frame %zu bytes)", elem_size, frames_.frame_size());
  // One small buffer when the data fits it and one frame (a small region
  // keeps the geometry of a frame: see adopt).
  if (small_ && n > 0 && n <= frames_.frame_size() / elem_size && n * elem_size <= small_->frame_size()) {
    uintptr_t buf = small_->alloc();
    try {
      return adopt(&buf, 1, 0, n, elem_size, pid_, true);
    } catch (...) {
      small_->free(buf);
      throw;
    }
  }
  const uint64_t epf = frames_.frame_size() / elem_size;
  skew = static_cast<uint32_t>(skew % epf);
  const uint64_t nframes64 = n == 0 ? 0 : (skew + n + epf - 1) / epf;
  if (nframes64 > UINT32_MAX) fail(BSPK_ERR_NOMEM, "a staging region of %llu elements", (unsigned long long)n);
  const uint32_t nframes = static_cast<uint32_t>(nframes64);
  uint32_t slot = new_slot();
  Region& r = init_slot(slot, n, nframes, nframes ? skew : 0, elem_size, pid_);
  alloc_frames(slot, r, nframes, 0);
  if (nframes) r.frames[0] -= uintptr_t{r.skew} * elem_size;  // bias, see region.h
  r.live = true;
  ++live_;
  return ptr_to(slot);
}

bspk_ptr Comem::create_filled(const void* bytes, uint64_t n, uint32_t elem_size, uint32_t skew) {
  bspk_ptr p = create_anon(n, elem_size, skew);
  const Region& r = table_[slot_of(p.region)];
  const char* from = static_cast<const char*>(bytes);
  for (uint64_t i = 0; i < n;) {
    uint64_t c = r.span(i);
    bspk::copy_bytes(r.elem(i), from, c * elem_size);
    from += c * elem_size;
    i += c;
  }
  return p;
}

bspk_ptr Comem::reshape(uint32_t id, uint32_t es, uint64_t* copied) {
  *copied = 0;
  Region* r = find(id);
  if (!r || r->skew != 0 || es == 0 || es > frames_.frame_size() || (r->nelems * r->elem_size) % es)
    fail(BSPK_ERR_INTERNAL, "cannot reshape region %#x into %u-byte elements", id, es);
  const uint64_t nbytes = r->nelems * r->elem_size;
  if (r->elem_size == es) return ptr_to(slot_of(id));
  if (r->small || frames_.frame_size() % es == 0) {
    // Frame k holds bytes [k * frame, (k+1) * frame) either way (a small
    // region's bytes all lie in its one buffer from its start).
    r->elem_size = es;
    r->nelems = nbytes / es;
    r->epf = static_cast<uint32_t>(frames_.frame_size() / es);
    r->epf_shift = shift_of(r->epf);
    return ptr_to(slot_of(id));
  }
  // es-byte elements leave a gap at the end of every frame: lay the bytes out again.
  bspk_ptr q = create_anon(nbytes / es, es, 0);
  const Region& src = table_[slot_of(id)];  // (create_anon may have moved the table)
  const Region& dst = table_[slot_of(q.region)];
  for (uint64_t b = 0; b < nbytes;) {
    const uint64_t i = b / es, off = b % es;
    uint64_t f, slot;
    dst.locate(i, &f, &slot);
    const uint64_t dleft = (dst.epf - slot) * es - off;
    const uint64_t c = std::min({dleft, src.span(b), nbytes - b});
    bspk::copy_bytes(static_cast<char*>(dst.elem(i)) + off, src.elem(b), c);
    b += c;
  }
  *copied = nbytes;
  release(id);
  return q;
}

Region* Comem::find(uint32_t id) {
  uint32_t slot = slot_of(id);
  if (slot == 0 || slot >= table_.size()) return nullptr;
  Region& r = table_[slot];
  if (!r.live || !gen_matches(r.gen, id) || r.free_pending) return nullptr;
  return &r;
}

Region& Comem::local(const bspk_ptr& p) {
  if (p.region == 0) fail(BSPK_ERR_PTR, "comem pointer is BSPK_NULL");
  if (p.owner != pid_)
    fail(BSPK_ERR_PTR, "comem pointer refers to a region owned by pid %d, not this process",
         p.owner);
  Region* r = find(p.region, p.gen);
  if (!r) fail(BSPK_ERR_PTR, "comem pointer refers to a freed region (region id %#x, generation %#x)", p.region, p.gen);
  return *r;
}

void Comem::destroy(uint32_t slot) {
  Region& r = table_[slot];
  FramePool& pool = r.small ? *small_ : frames_;
  if (r.run)
    frames_.free_run(r.frames[0]);
  else  // last frame first: the free stack hands them out again in ascending order, so frames that were
        // adjacent stay adjacent in the next region (a split body sends adjacent frames as one iovec)
    for (uint32_t k = r.nframes; k-- > 0;) pool.free(r.frame_start(k));
  if (r.frames) index_.free(r.frames, r.idx_class);
  if (r.named) {
    auto it = name_of_.find(slot);
    names_.erase(it->second);
    name_of_.erase(it);
  }
  uint64_t gen = r.gen;
  r = Region{};
  r.gen = gen;
  free_slots_.push_back(slot);
  --live_;
}

void Comem::release(uint32_t id) {
  Region* r = find(id);
  if (!r) fail(BSPK_ERR_PTR, "region id %#x is not live", id);
  if (r->inflight) {
    r->free_pending = true;  // frames still on the wire; destroy at last completion
    return;
  }
  destroy(slot_of(id));
}

void Comem::send_done(uint32_t id) {
  uint32_t slot = slot_of(id);
  Region& r = table_[slot];
  if (!gen_matches(r.gen, id) || !r.live) return;
  if (--r.inflight == 0 && r.free_pending) destroy(slot);
}

}  // namespace bspk::comem
