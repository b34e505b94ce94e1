#include "comem/region.h"

#include <unistd.h>

#include <cstring>

#include "base/error.h"

namespace bspk::comem {

namespace {
int8_t shift_of(uint32_t x) {
  if (!x || (x & (x - 1))) return -1;
  int8_t s = 0;
  while ((1u << s) < x) ++s;
  return s;
}
}  // namespace

Comem::Comem(int pid, FramePool& frames, IndexPool& index, FramePool* small)
    : pid_(pid), frames_(frames), index_(index), small_(small) {
  table_.resize(1);  // slot 0 is never used: region id 0 means NULL
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
  return p;
}

Region& Comem::init_slot(uint32_t slot, uint64_t n, uint32_t nframes, uint32_t skew,
                         uint32_t elem_size, int32_t sender) {
  Region& r = table_[slot];
  uint8_t gen = static_cast<uint8_t>(r.gen + 1 == 0 ? 1 : r.gen + 1);  // never 0
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

bspk_ptr Comem::create(const char* name, int idx, uint64_t n, uint64_t elem_size, bool contiguous) {
  if (elem_size == 0) fail(BSPK_ERR_ARG, "element size is 0");
  if (elem_size > frames_.frame_size())
    fail(BSPK_ERR_ARG,
         "element size %llu exceeds the frame size %zu (elements never straddle frames; raise "
         "BSPK_FRAME_SIZE)",
         (unsigned long long)elem_size, frames_.frame_size());
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
  uint8_t gen = r.gen;
  r.named = !nm.empty();
  r.contiguous = contiguous;
  uint32_t got = 0;
  try {
    r.frames = index_.alloc(nframes ? nframes : 1, &r.idx_class);
    if (contiguous && nframes > 1) {
      // One run of consecutive frames holding the n elements back to back;
      // frames[f] is the address of element f*epf (see region.h).
      uint64_t bytes = n * elem_size;
      uintptr_t base = frames_.alloc_run(static_cast<size_t>((bytes + frames_.frame_size() - 1) / frames_.frame_size()));
      r.run = true;
      for (uint32_t f = 0; f < nframes; ++f) r.frames[f] = base + uint64_t{f} * r.epf * elem_size;
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

Region* Comem::find(uint32_t id) {
  uint32_t slot = slot_of(id);
  if (slot == 0 || slot >= table_.size()) return nullptr;
  Region& r = table_[slot];
  if (!r.live || r.gen != gen_of(id) || r.free_pending) return nullptr;
  return &r;
}

Region& Comem::local(const bspk_ptr& p) {
  if (p.region == 0) fail(BSPK_ERR_PTR, "comem pointer is BSPK_NULL");
  if (p.owner != pid_)
    fail(BSPK_ERR_PTR, "comem pointer refers to a region owned by pid %d, not this process",
         p.owner);
  Region* r = find(p.region);
  if (!r) fail(BSPK_ERR_PTR, "comem pointer refers to a freed region (region id %#x)", p.region);
  return *r;
}

void Comem::destroy(uint32_t slot) {
  Region& r = table_[slot];
  FramePool& pool = r.small ? *small_ : frames_;
  if (r.run)
    frames_.free_run(r.frames[0]);
  else
    for (uint32_t k = 0; k < r.nframes; ++k) pool.free(r.frame_start(k));
  if (r.frames) index_.free(r.frames, r.idx_class);
  if (r.named) {
    auto it = name_of_.find(slot);
    names_.erase(it->second);
    name_of_.erase(it);
  }
  uint8_t gen = r.gen;
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
  if (r.gen != gen_of(id) || !r.live) return;
  if (--r.inflight == 0 && r.free_pending) destroy(slot);
}

}  // namespace bspk::comem
