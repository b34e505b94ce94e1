// sync/step_ring.h -- per-superstep state in a ring indexed by superstep.
//
// Flow control bounds how far apart processes can be (W = BSPK_MAX_AHEAD): a
// process at superstep s holds state for supersteps s .. s+W at most (early
// arrivals), so a ring of a power of two >= W + 3 slots, indexed by s modulo
// its size, never needs to reuse a slot still in use. The engine's counts, the
// tree's partial sums and the mp / dsm early-arrival boxes all live in one.
#pragma once

#include <bspk.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/error.h"
#include "sync/wire.h"

namespace bspk::sync {

// Slots for supersteps [current, current + W] plus slack, rounded up to a
// power of two so that indexing is a mask.
inline size_t ring_size(uint32_t max_ahead) {
  size_t n = 1;
  while (n < size_t{max_ahead} + 3) n <<= 1;
  return n;
}

// T: default-constructible, with reset() clearing it for reuse (keeping its
// allocations).
template <class T>
class StepRing {
 public:
  explicit StepRing(uint32_t max_ahead) : slots_(ring_size(max_ahead)) {}

  // The entry of superstep s. A slot still holding an older superstep is
  // reused: recycle(entry) runs first (to return its buffers), then reset().
  // `current` is this process's superstep: a slot holding a superstep >=
  // current is in use, and needing it means the ring is too small (an
  // internal error: flow control should have prevented it).
  template <class Recycle>
  T& at(uint32_t s, uint32_t current, Recycle&& recycle) {
    Slot& sl = slots_[s & (slots_.size() - 1)];
    if (!sl.used || sl.step != s) {
      if (sl.used) {
        if (!wire::step_before(sl.step, current))
          fail(BSPK_ERR_INTERNAL, "superstep ring overflow (holding %u, need %u, at %u)", sl.step, s, current);
        recycle(sl.value);
      }
      sl.value.reset();
      sl.step = s;
      sl.used = true;
    }
    return sl.value;
  }
  T& at(uint32_t s, uint32_t current) {
    return at(s, current, [](T&) {});
  }

  // The entry of superstep s if the ring holds it, else nullptr.
  T* find(uint32_t s) {
    Slot& sl = slots_[s & (slots_.size() - 1)];
    return sl.used && sl.step == s ? &sl.value : nullptr;
  }

  // Every entry held (for clean-up at shutdown).
  template <class F>
  void for_each(F&& f) {
    for (Slot& sl : slots_)
      if (sl.used) f(sl.value);
  }

 private:
  struct Slot {
    bool used = false;  // (every step value is a valid superstep: they wrap at 2^32)
    uint32_t step = 0;
    T value{};
  };
  std::vector<Slot> slots_;
};

}  // namespace bspk::sync
