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
  const size_t p = static_cast<size_t>(nprocs);
  return (1 + 2 * p * count_lines(nprocs)) * sizeof(Line) + p * sizeof(Record) + 2 * p * kSlotLines * sizeof(Line);
}

Board::Board(SharedSegment seg, int pid, int nprocs)
    : seg_(std::move(seg)), base_(seg_.base()), pid_(pid), nprocs_(nprocs), count_lines_(count_lines(nprocs)) {
  for (auto& v : read_) v.assign(static_cast<size_t>(nprocs), 0);
  for (auto& v : sent_) v.assign(static_cast<size_t>(nprocs), 0);
}

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
  std::atomic<uint64_t>* mine = counts(par, pid_);  // cumulative; only this process writes them
  std::vector<uint64_t>& sent = sent_[par];          // ... and what it wrote there (never read back: poll)
  self_count_ = 0;
  auto add = [&](int d) {
    if (!v[d]) return;
    sent[static_cast<size_t>(d)] += v[d];
    mine[d].store(sent[static_cast<size_t>(d)], std::memory_order_relaxed);
    if (d == pid_) self_count_ = v[d];  // (poll takes it from here)
  };
  if (dests) {
    for (size_t i = 0; i < ndests; ++i) add(dests[i]);
  } else {
    for (int d = 0; d < nprocs_; ++d) add(d);
  }
  CountHead& h = chead(par, pid_);
  self_kind_ = kind;
  h.from.store(s, std::memory_order_relaxed);
  rec(pid_).from.store(s, std::memory_order_relaxed);
  rec(pid_).joined.store(static_cast<uint32_t>(k_ + 1), std::memory_order_relaxed);
  h.word.store(count_word(k_, kind), std::memory_order_release);  // publishes the stores above
  step_ = s;
  pending_ = true;
}

bool Board::poll(Result& r) {
  if (!pending_) return false;
  const int par = static_cast<int>(k_ & 1);
  const uint64_t want = count_seq(k_);
  for (int j = 0; j < nprocs_; ++j)
    if (j != pid_ && (chead(par, j).word.load(std::memory_order_acquire) >> 32) != want) return false;
  // Every slot names this collective (the acquire loads above order the reads below).
  r.total = 0;
  r.kinds = 0;
  r.same_step = true;
  for (int b = 0; b < static_cast<int>(NumKinds); ++b) {
    r.per_kind[b] = 0;
    r.first[b] = -1;
  }
  std::vector<uint64_t>& read = read_[par];
  // This process's own slot is not read back: the others have just read
  // it, and reading it again then costs a cache miss on the path out of
  // every superstep (on this VM's EPYC the line no longer stays with its
  // writer once read elsewhere). A two-process replica of this protocol
  // (shm p = 2, bound, 2026-12-04): 0.32-0.33 us per collective reading
  // every slot, 0.25-0.26 us without the own one.
  r.total += self_count_;
  r.kinds |= 1u << self_kind_;
  ++r.per_kind[self_kind_];
  for (int j = 0; j < nprocs_; ++j) {
    if (j == pid_) {
      if (r.first[self_kind_] < 0) r.first[self_kind_] = j;
      continue;
    }
    const CountHead& h = chead(par, j);
    const uint64_t c = counts(par, j)[pid_].load(std::memory_order_relaxed);
    r.total += c - read[static_cast<size_t>(j)];
    read[static_cast<size_t>(j)] = c;
    const uint32_t b = static_cast<uint32_t>(h.word.load(std::memory_order_relaxed) & 0xFF);
    if (b < NumKinds) {
      ++r.per_kind[b];
      r.kinds |= 1u << b;
      if (r.first[b] < 0) r.first[b] = j;
    }
    r.same_step &= h.from.load(std::memory_order_relaxed) == step_;
  }
  r.min_step = step_;
  r.min_pid = pid_;
  r.later_pid = -1;
  r.later_step = step_;
  r.min_kind = self_kind_;
  if (!r.same_step) {  // the error path: which supersteps were joined from
    for (int j = 0; j < nprocs_; ++j) {
      uint32_t f = chead(par, j).from.load(std::memory_order_relaxed);
      if (wire::step_before(f, r.min_step)) {
        r.min_step = f;
        r.min_pid = j;
        r.min_kind = static_cast<uint32_t>(chead(par, j).word.load(std::memory_order_relaxed) & 0xFF);
      }
    }
    for (int j = 0; j < nprocs_; ++j) {
      uint32_t f = chead(par, j).from.load(std::memory_order_relaxed);
      if (wire::step_after(f, r.min_step)) {
        r.later_pid = j;
        r.later_step = f;
        break;
      }
    }
  }
  ++k_;
  pending_ = false;
  return true;
}

void Board::gather_publish(uint32_t s, const iovec* iov, int iovcnt) {
  size_t nbytes = 0;
  for (int i = 0; i < iovcnt; ++i) nbytes += iov[i].iov_len;
  if (nbytes > kBlockMax) fail(BSPK_ERR_INTERNAL, "gather block of %zu bytes (at most %zu)", nbytes, kBlockMax);
  Slot& sl = slot(static_cast<int>(g_ & 1), pid_);
  for (size_t at = 0; iovcnt-- > 0; at += iov++->iov_len)
    if (iov->iov_len) std::memcpy(sl.data + at, iov->iov_base, iov->iov_len);
  rec(pid_).gstep.store(uint64_t{s} + 1, std::memory_order_relaxed);
  sl.word.store(gather_word(nbytes), std::memory_order_release);
  own_bytes_ = nbytes;
}

const unsigned char* Board::gather_block(int j, size_t* nbytes) const {
  const Slot& sl = slot(static_cast<int>(g_ & 1), j);
  if (j == pid_) {  // (its word not read back: see poll)
    *nbytes = own_bytes_;
    return sl.data;
  }
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

bool Board::joined(int j) const {
  return (chead(static_cast<int>(k_ & 1), j).word.load(std::memory_order_acquire) >> 32) == count_seq(k_);
}

std::vector<int> Board::cpu_mates() const {
  std::vector<int> mates;
  const int32_t mine = rec(pid_).cpu.load(std::memory_order_relaxed);
  if (mine <= 0) return mates;
  for (int j = 0; j < nprocs_; ++j)
    if (j != pid_ && rec(j).cpu.load(std::memory_order_acquire) == mine) mates.push_back(j);
  return mates;
}

int Board::joined_so_far() const {
  const int par = static_cast<int>(k_ & 1);
  const uint64_t want = count_seq(k_);
  int n = 0;
  for (int j = 0; j < nprocs_; ++j) n += (chead(par, j).word.load(std::memory_order_acquire) >> 32) == want;
  return n;
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

int Board::waiting_under_expect(uint32_t s) const {
  for (int j = 0; j < nprocs_; ++j)
    if (j != pid_ && rec(j).estep.load(std::memory_order_relaxed) == uint64_t{s} + 1) return j;
  return -1;
}

int Board::joined_from(uint32_t s, Kind* kind) const {
  // No collective completes without this process, so one that another
  // process joined is the next one of this process (number k_, its parity's
  // slots); the slot's word is stored after its `from` (release).
  const int par = static_cast<int>(k_ & 1);
  for (int j = 0; j < nprocs_; ++j) {
    if (j == pid_) continue;
    const CountHead& h = chead(par, j);
    const uint64_t w = h.word.load(std::memory_order_acquire);
    if ((w >> 32) == count_seq(k_) && h.from.load(std::memory_order_relaxed) == s) {
      const uint32_t b = static_cast<uint32_t>(w & 0xFF);
      *kind = b < NumKinds ? static_cast<Kind>(b) : Counted;
      return j;
    }
  }
  return -1;
}

}  // namespace bspk::sync
