// sync/board.cpp -- the shared-memory count exchange (see board.h).
#include "sync/board.h"
#include "sync/wire.h"

#include <bspk.h>


#include <cstring>
#include <utility>

#include "base/error.h"

namespace bspk::sync {

namespace {
constexpr uint64_t kMagic = 0xB5B0A2D000000000ull;
}

size_t Board::bytes(int nprocs) {
  return 2 * sizeof(Line) + 2 * static_cast<size_t>(nprocs) * sizeof(Line) +
         static_cast<size_t>(nprocs) * sizeof(Record) + 2 * static_cast<size_t>(nprocs) * kSlotLines * sizeof(Line);
}

Board::Board(SharedSegment seg, int pid, int nprocs)
    : seg_(std::move(seg)), base_(seg_.base()), pid_(pid), nprocs_(nprocs) {}

Board* Board::create(const std::string& prefix, int pid, int nprocs) {
  // Zero-filled: every counter starts at 0.
  auto* b = new Board(SharedSegment::create(prefix + ".board", bytes(nprocs)), pid, nprocs);
  b->line(0).v.store(kMagic | static_cast<uint64_t>(nprocs), std::memory_order_release);
  return b;
}

Board* Board::open(const std::string& name, int pid, int nprocs) {
  auto* b = new Board(SharedSegment::open(name, bytes(nprocs)), pid, nprocs);
  if (b->line(0).v.load(std::memory_order_acquire) != (kMagic | static_cast<uint64_t>(nprocs))) {
    delete b;
    fail(BSPK_ERR_BOOT, "count board %s: not made for %d processes", name.c_str(), nprocs);
  }
  return b;
}

void Board::join(uint32_t s, Kind kind, const uint64_t* v, const int* dests, size_t ndests) {
  const int par = static_cast<int>(k_ & 1);
  if (dests) {
    for (size_t i = 0; i < ndests; ++i)
      count(par, dests[i]).v.fetch_add(v[dests[i]], std::memory_order_relaxed);
  } else {
    for (int d = 0; d < nprocs_; ++d)
      if (v[d]) count(par, d).v.fetch_add(v[d], std::memory_order_relaxed);
  }
  Hot& h = hot();
  h.step_sum[par].fetch_add(s, std::memory_order_relaxed);
  h.kind_sum[par].fetch_add(uint64_t{1} << (16 * kind), std::memory_order_relaxed);
  rec(pid_).kind.store(kind, std::memory_order_relaxed);
  rec(pid_).from.store(s, std::memory_order_relaxed);
  rec(pid_).joined.store(static_cast<uint32_t>(k_ + 1), std::memory_order_relaxed);
  h.arrived.fetch_add(1, std::memory_order_release);  // publishes the adds above
  step_ = s;
  pending_ = true;
}

bool Board::poll(Result& r) {
  if (!pending_) return false;
  const uint64_t target = static_cast<uint64_t>(nprocs_) * (k_ + 1);
  Hot& h = hot();
  if (h.arrived.load(std::memory_order_acquire) < target) return false;
  const int par = static_cast<int>(k_ & 1);
  uint64_t c = count(par, pid_).v.load(std::memory_order_relaxed);
  uint64_t st = h.step_sum[par].load(std::memory_order_relaxed);
  uint64_t ks = h.kind_sum[par].load(std::memory_order_relaxed);
  r.total = c - last_count_[par];
  r.same_step = st - last_steps_[par] == static_cast<uint64_t>(nprocs_) * step_;
  uint64_t kd = ks - last_kinds_[par];
  r.kinds = 0;
  for (int b = 0; b < static_cast<int>(NumKinds); ++b) {
    r.per_kind[b] = static_cast<uint32_t>((kd >> (16 * b)) & 0xFFFF);
    if (r.per_kind[b]) r.kinds |= 1u << b;
  }
  for (int b = 0; b < static_cast<int>(NumKinds); ++b) r.first[b] = -1;
  if (__builtin_popcount(r.kinds) > 1)  // the error path: who used which kind
    for (int j = 0; j < nprocs_; ++j) {
      const Record& rj = rec(j);
      if (rj.joined.load(std::memory_order_relaxed) != k_ + 1) continue;
      uint32_t b = rj.kind.load(std::memory_order_relaxed);
      if (b < NumKinds && r.first[b] < 0) r.first[b] = j;
    }
  r.min_step = step_;
  r.min_pid = pid_;
  r.later_pid = -1;
  r.later_step = step_;
  if (!r.same_step) {  // the error path: which supersteps were joined from
    for (int j = 0; j < nprocs_; ++j) {
      const Record& rj = rec(j);
      if (rj.joined.load(std::memory_order_relaxed) != k_ + 1) continue;
      uint32_t f = rj.from.load(std::memory_order_relaxed);
      if (wire::step_before(f, r.min_step)) {
        r.min_step = f;
        r.min_pid = j;
      }
    }
    for (int j = 0; j < nprocs_; ++j) {
      const Record& rj = rec(j);
      uint32_t f = rj.from.load(std::memory_order_relaxed);
      if (rj.joined.load(std::memory_order_relaxed) == k_ + 1 && wire::step_after(f, r.min_step)) {
        r.later_pid = j;
        r.later_step = f;
        break;
      }
    }
  }
  last_count_[par] = c;
  last_steps_[par] = st;
  last_kinds_[par] = ks;
  ++k_;
  pending_ = false;
  return true;
}

void Board::gather_publish(uint32_t s, const void* data, size_t nbytes) {
  if (nbytes > kBlockMax) fail(BSPK_ERR_INTERNAL, "gather block of %zu bytes (at most %zu)", nbytes, kBlockMax);
  Slot& sl = slot(static_cast<int>(g_ & 1), pid_);
  if (nbytes) std::memcpy(sl.data, data, nbytes);
  rec(pid_).gstep.store(uint64_t{s} + 1, std::memory_order_relaxed);
  sl.word.store(gather_word(nbytes), std::memory_order_release);
}

const unsigned char* Board::gather_block(int j, size_t* nbytes) const {
  const Slot& sl = slot(static_cast<int>(g_ & 1), j);
  const uint64_t w = sl.word.load(std::memory_order_acquire);
  if ((w >> 32) != ((g_ + 1) & 0xFFFFFFFFull)) return nullptr;
  *nbytes = static_cast<size_t>(w & 0xFFFFFFFFull);
  return sl.data;
}

int Board::gather_mixed(uint32_t s, bool* counted) const {
  for (int j = 0; j < nprocs_; ++j) {
    if (j == pid_) continue;
    const Record& r = rec(j);
    // j's step first, then its slot: step is stored (release) after j's
    // joins and gathers of s, so once j is seen past s its block of this
    // gather is seen too if it published one. (Slot first was wrong: j could
    // publish this gather, go on to s + 1 and publish its next gather, which
    // moves gstep on, between the two loads -- a false "left s without it",
    // seen under perf on shm p = 2.) Nobody rewrites the slot before this
    // process is done with the gather (board.h).
    const uint32_t st = r.step.load(std::memory_order_acquire);
    size_t n;
    if (gather_block(j, &n)) continue;
    if (wire::step_after(st, s) && r.gstep.load(std::memory_order_relaxed) != uint64_t{s} + 1) {
      *counted = false;
      return j;
    }
    if (r.joined.load(std::memory_order_relaxed) > k_ && r.from.load(std::memory_order_relaxed) == s) {
      *counted = true;
      return j;
    }
  }
  return -1;
}

int Board::gathering(uint32_t s) const {
  for (int j = 0; j < nprocs_; ++j)
    if (j != pid_ && rec(j).gstep.load(std::memory_order_relaxed) == uint64_t{s} + 1) return j;
  return -1;
}

int Board::joined_so_far() const {
  uint64_t a = hot().arrived.load(std::memory_order_acquire);
  uint64_t base = static_cast<uint64_t>(nprocs_) * k_;
  return a > base ? static_cast<int>(a - base) : 0;
}

int Board::left_without_joining(uint32_t s) const {
  for (int j = 0; j < nprocs_; ++j) {
    if (j == pid_) continue;
    Record& r = rec(j);
    // step is stored with release after joined: a process seen past s shows
    // every collective it joined before leaving s.
    if (wire::step_after(r.step.load(std::memory_order_acquire), s) && r.joined.load(std::memory_order_relaxed) < k_ + 1) return j;
  }
  return -1;
}

}  // namespace bspk::sync
