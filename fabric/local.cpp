// fabric/local.cpp -- the same-host ring fast path (see local.h).
#include "fabric/local.h"

#include <bspk.h>

#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <utility>

#include "base/clock.h"
#include "base/copy.h"
#include "base/error.h"
#include "base/iov.h"

namespace bspk::fabric {

namespace {
size_t total_len(const iovec* iov, size_t count) {
  size_t n = 0;
  for (size_t i = 0; i < count; ++i) n += iov[i].iov_len;
  return n;
}
// Copy the pieces src[0..n) one after the other into the iovecs of dst.
void scatter(const iovec* src, size_t n, const iovec* dst) {
  size_t j = 0, joff = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t done = 0; done < src[i].iov_len;) {
      size_t m = std::min(src[i].iov_len - done, dst[j].iov_len - joff);
      bspk::copy_bytes(static_cast<char*>(dst[j].iov_base) + joff, static_cast<const char*>(src[i].iov_base) + done, m);
      done += m;
      joff += m;
      if (joff == dst[j].iov_len) ++j, joff = 0;
    }
}
// An assist slot's state word: the message (seq + 1, mod 2^32), its number of
// chunks and the next chunk to claim, 16 bits each. The count is in the word,
// not only in the slot's fields, so that a claim is checked against the
// message it names: the receiver rewrites the fields for the slot's next
// message once every chunk of this one is claimed, and a helper that read
// the state just before that (naming this message, no chunk left) and the
// fields just after would otherwise see chunks left and, its compare-and-swap
// on the unchanged word succeeding, copy into the next message's buffer.
constexpr uint64_t assist_state(uint64_t seq, uint64_t chunks) { return ((seq + 1) & 0xffffffffu) << 32 | chunks << 16; }
constexpr uint64_t assist_tag(uint64_t s) { return s >> 32; }
constexpr uint64_t assist_chunks(uint64_t s) { return (s >> 16) & 0xffffu; }
constexpr uint64_t assist_next(uint64_t s) { return s & 0xffffu; }
constexpr uint64_t chunks_of(uint64_t len, size_t chunk) { return (len + chunk - 1) / chunk; }
}  // namespace

// Segment layout: the rings (p^2 x kCells cells), the pull rings (p^2 x
// kPullCells), one PeerInfo per process, one PairState per ordered pair, one
// slab table (kMaxSlabs entries) per process.
size_t LocalTransport::segment_bytes(int nprocs) {
  size_t p = static_cast<size_t>(nprocs);
  return p * p * (kCells * kCell + kPullCells * sizeof(PullCell) + sizeof(PairState)) +
         p * (sizeof(PeerInfo) + kMaxSlabs * sizeof(SlabEntry));
}

LocalTransport::PullCell* LocalTransport::pull_ring(int src, int dst) const {
  size_t p = static_cast<size_t>(nprocs_);
  auto* base = reinterpret_cast<PullCell*>(static_cast<unsigned char*>(seg_.base()) + p * p * kCells * kCell);
  return base + pair_index(src, dst) * kPullCells;
}

LocalTransport::PeerInfo& LocalTransport::peer(int pid) const {
  size_t p = static_cast<size_t>(nprocs_);
  auto* base = reinterpret_cast<PeerInfo*>(static_cast<unsigned char*>(seg_.base()) + p * p * kCells * kCell +
                                           p * p * kPullCells * sizeof(PullCell));
  return base[pid];
}

LocalTransport::PairState& LocalTransport::pair_state(int src, int dst) const {
  size_t p = static_cast<size_t>(nprocs_);
  auto* base = reinterpret_cast<PairState*>(reinterpret_cast<unsigned char*>(&peer(0)) + p * sizeof(PeerInfo));
  return base[pair_index(src, dst)];
}

LocalTransport::SlabEntry* LocalTransport::slab_table(int pid) const {
  size_t p = static_cast<size_t>(nprocs_);
  auto* base = reinterpret_cast<SlabEntry*>(reinterpret_cast<unsigned char*>(&pair_state(0, 0)) + p * p * sizeof(PairState));
  return base + static_cast<size_t>(pid) * kMaxSlabs;
}

SharedSegment LocalTransport::create_segment(const std::string& prefix, int nprocs) {
  return SharedSegment::create(prefix + ".rings", segment_bytes(nprocs));
}

LocalTransport::LocalTransport(Transport& ep, SharedSegment seg, int pid, int nprocs, uint64_t ring_tag, bool pull)
    : ep_(ep), seg_(std::move(seg)), pid_(pid), nprocs_(nprocs), ring_tag_(ring_tag), pull_(pull) {
  if (seg_.size() != segment_bytes(nprocs))
    fail(BSPK_ERR_INTERNAL, "ring segment of %zu bytes for %d processes", seg_.size(), nprocs);
  virt_addr_ = ep.virt_addr();
  inject_size_ = std::max(ep.inject_size(), kCellPayload);
  can_block_ = false;
  // Without pulls, large messages cross the provider: split them as it asks.
  eager_limit_ = pull ? 0 : ep.eager_limit();
  split_min_frames_ = ep.split_min_frames();
  iov_limit_ = ep.iov_limit();
  tail_.assign(static_cast<size_t>(nprocs), 0);
  ring_done_seen_.assign(static_cast<size_t>(nprocs), 0);
  pull_done_seen_.assign(static_cast<size_t>(nprocs), 0);
  in_.resize(static_cast<size_t>(nprocs));
  for (int src = 0; src < nprocs; ++src)
    in_[static_cast<size_t>(src)] = Inbound{ring(src, pid), pull_ring(src, pid), &pair_state(src, pid), 0, 0};
  pull_tail_.assign(static_cast<size_t>(nprocs), 0);
  pending_.resize(static_cast<size_t>(nprocs));
  pull_off_.assign(static_cast<size_t>(nprocs), 0);
  mapped_.resize(static_cast<size_t>(nprocs));
  mapped_rw_.resize(static_cast<size_t>(nprocs));
  share_ = pull;
  // Published before this process's first descriptor, whose release store
  // orders it for the reader.
  peer(pid).os_pid.store(static_cast<int64_t>(getpid()), std::memory_order_release);
}

LocalTransport::~LocalTransport() {
  for (auto* maps : {&mapped_, &mapped_rw_})
    for (auto& per_peer : *maps)
      for (Mapped& m : per_peer)
        if (m.base) munmap(m.base, m.len);
  // Slabs still ours here belong to pools that outlive us (not the runtime's
  // order): leave their mappings, close only the descriptors.
  for (auto& [base, s] : own_slabs_) close(s.fd);
}

void* LocalTransport::map_memfd(int fd, size_t len, size_t align) {
  // An aligned window: reserve len + align, map the memfd at its aligned start.
  void* res = len + align > len && ftruncate(fd, static_cast<off_t>(len)) == 0
                  ? mmap(nullptr, len + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                  : MAP_FAILED;
  if (res == MAP_FAILED) return nullptr;
  uintptr_t r = reinterpret_cast<uintptr_t>(res), a = (r + align - 1) & ~(uintptr_t{align} - 1);
  void* base = mmap(reinterpret_cast<void*>(a), len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  if (a > r) munmap(res, a - r);
  if (r + len + align > a + len) munmap(reinterpret_cast<void*>(a + len), r + len + align - (a + len));
  if (base == MAP_FAILED) {
    munmap(reinterpret_cast<void*>(a), len);
    return nullptr;
  }
  return base;
}

void* LocalTransport::alloc_memory(size_t len, size_t align) {
  PeerInfo& me = peer(pid_);
  const uint32_t n = me.nslabs.load(std::memory_order_relaxed);
  if (!share_ || n >= kMaxSlabs) return Transport::alloc_memory(len, align);
  int fd = memfd_create("bspk-frames", MFD_CLOEXEC);
  if (fd < 0) return Transport::alloc_memory(len, align);
  void* base = map_memfd(fd, len, align);
  if (!base) {
    close(fd);
    return Transport::alloc_memory(len, align);
  }
  const uintptr_t a = reinterpret_cast<uintptr_t>(base);
  slab_table(pid_)[n] = SlabEntry{fd, a, len, 0};
  me.nslabs.store(n + 1, std::memory_order_release);  // before any descriptor names it
  own_slabs_[a] = OwnSlab{len, static_cast<int64_t>(n), fd};
  return base;
}

void LocalTransport::free_memory(void* base, size_t len) noexcept {
  auto it = own_slabs_.find(reinterpret_cast<uintptr_t>(base));
  if (it == own_slabs_.end()) return Transport::free_memory(base, len);
  munmap(base, it->second.len);  // peers that mapped it keep their mapping until they exit
  close(it->second.fd);
  own_slabs_.erase(it);
}

namespace {
size_t page_bytes() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
}  // namespace

// The run arena (local.h, "Runs"), made at the first run: as many bytes as
// the machine has memory (rounded up to kArenaAlign), sparse. Not made
// without pulls, with the slab table full, or under RLIMIT_AS.
void* LocalTransport::alloc_run_memory(size_t len, size_t align) {
  RunArena& ar = arena_;
  if (!ar.tried && share_) {
    ar.tried = true;
    PeerInfo& me = peer(pid_);
    const uint32_t n = me.nslabs.load(std::memory_order_relaxed);
    rlimit as{};
    const long pages = sysconf(_SC_PHYS_PAGES);
    const bool limited = getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY;
    if (n < kMaxSlabs && !limited && pages > 0) {
      const size_t want = (static_cast<size_t>(pages) * page_bytes() + kArenaAlign - 1) & ~(kArenaAlign - 1);
      int fd = memfd_create("bspk-runs", MFD_CLOEXEC);
      void* base = fd >= 0 ? map_memfd(fd, want, kArenaAlign) : nullptr;
      if (base) {
        // Core dumps take the runs only, not gigabytes of holes (a dump
        // piped to a handler writes a hole's zeros out).
        madvise(base, want, MADV_DONTDUMP);
        ar.base = reinterpret_cast<uintptr_t>(base);
        ar.len = want;
        ar.fd = fd;
        ar.free.emplace(0, want);
        slab_table(pid_)[n] = SlabEntry{fd, ar.base, want, 0};
        me.nslabs.store(n + 1, std::memory_order_release);  // before any descriptor names it
        own_slabs_[ar.base] = OwnSlab{want, static_cast<int64_t>(n), fd};
      } else if (fd >= 0) {
        close(fd);
      }
    }
  }
  const size_t page = page_bytes();
  const size_t need = (len + page - 1) & ~(page - 1);
  if (ar.len && align <= kArenaAlign && need >= len) {
    align = std::max(align, page);
    // First fit: the lowest free range with room for an aligned start.
    for (auto it = ar.free.begin(); it != ar.free.end(); ++it) {
      const size_t off = it->first, room = it->second;
      const size_t start = (off + align - 1) & ~(align - 1);
      if (start - off > room || room - (start - off) < need) continue;
      ar.free.erase(it);
      if (start > off) ar.free.emplace(off, start - off);
      if (off + room > start + need) ar.free.emplace(start + need, off + room - (start + need));
      void* run = reinterpret_cast<void*>(ar.base + start);
      madvise(run, need, MADV_DODUMP);
      return run;
    }
  }
  return Transport::alloc_memory(len, align);
}

// A run's range back to the arena, its pages released (in every process that
// mapped the arena: a receiver reads zeros there, never a later run's bytes
// through a stale page).
void LocalTransport::free_run_memory(void* base, size_t len) noexcept {
  RunArena& ar = arena_;
  const uintptr_t b = reinterpret_cast<uintptr_t>(base);
  if (!ar.len || b < ar.base || b - ar.base >= ar.len) return Transport::free_memory(base, len);
  const size_t page = page_bytes();
  size_t off = b - ar.base, n = (len + page - 1) & ~(page - 1);
  fallocate(ar.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(off), static_cast<off_t>(n));
  madvise(base, n, MADV_DONTDUMP);
  // Coalesce with the free ranges either side.
  auto next = ar.free.lower_bound(off);
  if (next != ar.free.end() && next->first == off + n) {
    n += next->second;
    next = ar.free.erase(next);
  }
  if (next != ar.free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      off = prev->first;
      n += prev->second;
      ar.free.erase(prev);
    }
  }
  ar.free.emplace(off, n);
}

// Index of our shared slab holding [a, a + len), or -1.
int64_t LocalTransport::slab_of(uintptr_t a, size_t len) const {
  auto it = own_slabs_.upper_bound(a);
  if (it == own_slabs_.begin()) return -1;
  --it;
  return a - it->first < it->second.len && len <= it->second.len - (a - it->first) ? it->second.index : -1;
}

// Where [addr, addr + len) of pid's shared slab `slab` is mapped here
// (mapping it on first use: read-only into mapped_, for pulls from it, or
// writable into mapped_rw_, for assisted pulls into it), or nullptr when it
// cannot be mapped.
unsigned char* LocalTransport::in_slab(std::vector<std::vector<Mapped>>& maps, bool writable, int pid, uint64_t addr,
                                       uint64_t len, int64_t slab) {
  if (slab < 0 || static_cast<uint64_t>(slab) >= kMaxSlabs) return nullptr;
  std::vector<Mapped>& v = maps[static_cast<size_t>(pid)];
  if (static_cast<size_t>(slab) >= v.size()) v.resize(static_cast<size_t>(slab) + 1);
  Mapped& m = v[static_cast<size_t>(slab)];
  if (!m.base && !m.failed) {
    const SlabEntry& e = slab_table(pid)[slab];  // written before the descriptor (or assist slot) that names it
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%lld/fd/%lld",
                  static_cast<long long>(peer(pid).os_pid.load(std::memory_order_acquire)),
                  static_cast<long long>(e.fd));
    int fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    void* b = fd >= 0 ? mmap(nullptr, e.len, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0)
                      : MAP_FAILED;
    if (fd >= 0) close(fd);
    if (b == MAP_FAILED) {
      m.failed = true;
    } else {
      madvise(b, e.len, MADV_DONTDUMP);  // the peer's memory (a run arena: gigabytes, mostly holes)
      m.base = static_cast<unsigned char*>(b);
      m.len = e.len;
      m.remote_base = e.base;
    }
  }
  if (!m.base || addr < m.remote_base || addr - m.remote_base > m.len || len > m.len - (addr - m.remote_base))
    return nullptr;
  return m.base + (addr - m.remote_base);
}

void LocalTransport::map_peer_slabs() {
  if (!pull_) return;
  for (int src = 0; src < nprocs_; ++src) {
    if (src == pid_) continue;
    const uint32_t n = std::min<uint32_t>(peer(src).nslabs.load(std::memory_order_acquire), kMaxSlabs);
    for (uint32_t k = 0; k < n; ++k)
      source_in_slab(src, slab_table(src)[k].base, 0, static_cast<int64_t>(k));  // maps it (or marks it failed)
  }
}

// A message of len bytes takes cells_for(len) consecutive cells (mod kCells):
// the first holds len, the tag and the first kCellPayload bytes, the others
// (marked 2) the rest in order. The consumer clears every cell's flag after
// copying, then publishes the number of cells it has freed (ring_done): the
// producer may fill cell t once ring_done > t - kCells.
size_t LocalTransport::cells_for(size_t len) {
  return len <= kCellPayload ? 1 : (len + kCellPayload - 1) / kCellPayload;
}

bool LocalTransport::push(int dest, const iovec* iov, size_t count, uint64_t tag) {
  uint64_t& t = tail_[static_cast<size_t>(dest)];
  Cell* r = ring(pid_, dest);
  const size_t len = total_len(iov, count), k = cells_for(len);
  if (k > kMaxMessageCells) return false;
  uint64_t& seen = ring_done_seen_[static_cast<size_t>(dest)];
  auto fits = [&](uint64_t freed) { return t + k - freed <= kCells; };
  if (!fits(seen)) {
    PairState& ps = pair_state(pid_, dest);
    if (!room_freed(ps, ps.ring_done, seen, fits)) return false;
  }
  if (k == 1) {  // the common case: the pieces back to back in one cell
    Cell& c = r[t % kCells];
    unsigned char* d = c.data;
    for (size_t i = 0; i < count; ++i) {
      std::memcpy(d, iov[i].iov_base, iov[i].iov_len);
      d += iov[i].iov_len;
    }
    c.len = static_cast<uint32_t>(len);
    c.tag = tag;
    c.full.store(1, std::memory_order_release);  // publishes len, tag and the data
    ++t;
    wake(dest);
    return true;
  }
  iovec cells[kMaxMessageCells];
  for (size_t j = 0; j < k; ++j) {
    Cell& c = r[(t + j) % kCells];
    cells[j] = {c.data, std::min(kCellPayload, len - j * kCellPayload)};
    if (j > 0) c.full.store(2, std::memory_order_relaxed);  // published by the first cell's release
  }
  scatter(iov, count, cells);
  Cell& first = r[t % kCells];
  first.len = static_cast<uint32_t>(len);
  first.tag = tag;
  first.full.store(1, std::memory_order_release);  // publishes len, tag and every cell's data
  t += k;
  wake(dest);
  return true;
}

// The receives of `tag` kept here: the ring tag's (ring arrivals and pulls),
// and with pulls on, each other tag's.
std::deque<LocalTransport::Recv>* LocalTransport::local_recvs(uint64_t tag) {
  if (tag == ring_tag_) return &recvs_;
  for (auto& [t, q] : pull_recvs_)
    if (t == tag) return &q;
  return nullptr;
}

bool LocalTransport::post_recv(const iovec* iov, void** desc, size_t count, OpContext* ctx, uint64_t tag) {
  std::deque<Recv>* q = local_recvs(tag);
  if (!q && pull_ && tag != ring_tag_) q = &pull_recvs_.emplace_back(tag, std::deque<Recv>{}).second;
  const size_t keep = tag == ring_tag_ ? kLocalRecvs : kLocalPullRecvs;
  if (q && (tag == ring_tag_ || pull_) && q->size() < keep && count <= 2) {
    Recv r{};
    for (size_t i = 0; i < count; ++i) r.iov[i] = iov[i];
    r.count = count;
    r.ctx = ctx;
    q->push_back(r);
    return true;
  }
  return ep_.post_recv(iov, desc, count, ctx, tag);
}

bool LocalTransport::push_pull(int dest, const iovec* iov, void** desc, size_t count, OpContext* ctx,
                               uint64_t tag) {
  uint64_t& t = pull_tail_[static_cast<size_t>(dest)];
  PullCell& c = pull_ring(pid_, dest)[t % kPullCells];
  uint64_t& seen = pull_done_seen_[static_cast<size_t>(dest)];
  auto fits = [&](uint64_t taken) { return t - taken < kPullCells; };
  if (!fits(seen)) {
    PairState& ps = pair_state(pid_, dest);
    if (!room_freed(ps, ps.done, seen, fits)) return false;
  }
  Pending pd{};
  pd.dest = dest;
  pd.seq = t;
  pd.ctx = ctx;
  pd.tag = tag;
  pd.count = count;
  size_t len = 0;
  for (size_t i = 0; i < count; ++i) {
    c.iov[i].addr = reinterpret_cast<uintptr_t>(iov[i].iov_base);
    c.iov[i].len = iov[i].iov_len;
    c.iov[i].slab = dest == pid_ ? -1 : slab_of(c.iov[i].addr, iov[i].iov_len);
    pd.iov[i] = iov[i];
    pd.desc[i] = desc ? desc[i] : nullptr;
    len += iov[i].iov_len;
  }
  c.count = static_cast<uint32_t>(count);
  c.tag = tag;
  c.seq = t;
  c.len = len;
  c.full.store(1, std::memory_order_release);  // publishes the descriptor
  ++t;
  wake(dest);
  pending_[static_cast<size_t>(dest)].push_back(pd);
  ++npending_;
  return true;
}

bool LocalTransport::post_send(int dest, const iovec* iov, void** desc, size_t count, OpContext* ctx,
                               uint64_t tag) {
  const size_t len = total_len(iov, count);
  // A message of one cell goes through the ring; a larger one of the ring
  // tag too when it cannot be pulled. Otherwise a pull (one copy, by the
  // receiver) beats the ring's two: measured with bench/pingpong, 4 KiB
  // messages 0.9 us pulled against 1.3 us over nine cells.
  const bool pull_ok = can_pull(dest, count);
  const bool ring_ok = tag == ring_tag_ && (len <= kCellPayload || (len <= kRingMessage && !pull_ok));
  if (ring_ok && push(dest, iov, count, tag)) {
    sent_.push_back(ctx);
    return true;
  }
  // Not through a ring (or the ring is full): pulled, unless the receiver
  // refused pulls. A full pull ring is a full transmit queue (the engine
  // retries).
  if (pull_ok) return push_pull(dest, iov, desc, count, ctx, tag);
  if (!ep_.post_send(dest, iov, desc, count, ctx, tag)) return false;
  sent_by_provider(dest);
  return true;
}

bool LocalTransport::inject(int dest, const iovec* iov, void** desc, size_t count, uint64_t tag) {
  size_t len = total_len(iov, count);
  if (tag == ring_tag_ && len <= kRingMessage && push(dest, iov, count, tag)) return true;
  // Anything else that could be pulled is refused, so that the engine posts
  // it as an operation and the receiver pulls it: a ring message that met a
  // full ring (a superstep of many small messages to one process), or a
  // frame-class message (a store of up to the provider's inject size that
  // fills its region, sent whole to be flipped in). Through the provider each
  // took a bounce copy, the provider's queue and one process_vm_readv at the
  // receiver: shm, p = 2, 64 messages of 4 KiB to the peer 3.3 us each
  // against 0.6 us pulled; a 4 KiB halo store of examples/stencil 11-14 us
  // in every other superstep.
  if (can_pull(dest, count)) return false;
  if (len > ep_.inject_size() || !ep_.inject(dest, iov, desc, count, tag)) return false;
  sent_by_provider(dest);
  inject_polls_ = kInjectPolls;  // the provider may still have to push it out
  return true;
}

// Ring arrivals into the receives kept here, scanning the sources round-robin.
size_t LocalTransport::deliver(Completion* out, size_t n) {
  // (Called on every poll, which a waiting process spins on: per source a
  // load of the next cell's flag, no division, until something is there.)
  size_t k = 0;
  int src = next_src_;
  for (int i = 0; i < nprocs_ && k < n && (sink_ || !recvs_.empty()); ++i, src = src + 1 == nprocs_ ? 0 : src + 1) {
    Inbound& in = in_[static_cast<size_t>(src)];
    Cell* r = in.ring;
    uint64_t& h = in.head;
    const uint64_t h0 = h;
    while (k < n) {
      Cell& c = r[h % kCells];
      if (c.full.load(std::memory_order_acquire) != 1) break;
      const size_t len = c.len, cells = cells_for(len);
      if (cells > kMaxMessageCells)
        fail(BSPK_ERR_INTERNAL, "a %zu-byte ring message from pid %d: corrupt ring", len, src);
      iovec from[kMaxMessageCells];
      for (size_t q = 0; q < cells; ++q)
        from[q] = {r[(h + q) % kCells].data, std::min(kCellPayload, len - q * kCellPayload)};
      bool taken = false;  // read in place by the sink: no receive, no completion, no repost
      if (sink_) {
        in_sink_ = true;
        taken = sink_->take(src, from, cells, len);
        in_sink_ = false;
      }
      Recv rv{};
      if (!taken) {
        if (recvs_.empty()) break;
        rv = recvs_.front();
        recvs_.pop_front();
        if (len > total_len(rv.iov, rv.count))
          fail(BSPK_ERR_INTERNAL, "a %zu-byte ring message from pid %d does not fit the posted receive", len, src);
        if (cells == 1) {  // the common case (a header and a short payload): at most two copies
          const size_t a = std::min(len, rv.iov[0].iov_len);
          std::memcpy(rv.iov[0].iov_base, c.data, a);
          if (len > a) std::memcpy(rv.iov[1].iov_base, c.data + a, len - a);  // (fits: checked above)
        } else {
          scatter(from, cells, rv.iov);
        }
      }
      for (size_t q = cells; q-- > 0;) r[(h + q) % kCells].full.store(0, std::memory_order_relaxed);
      h += cells;
      in.state->ring_done.store(h, std::memory_order_release);  // the cells are the producer's again
      if (!taken) out[k++] = Completion{rv.ctx, CompletionKind::Received, len};
    }
    if (h != h0) room_made(*in.state, src);
  }
  next_src_ = next_src_ + 1 == nprocs_ ? 0 : next_src_ + 1;
  return k;
}


// Copy a pulled message into the receive r: memcpy out of the sender's shared
// slabs (or our own memory, for a send to ourselves), else one
// process_vm_readv from the sender. Returns false when the kernel refuses
// cross-memory access (EPERM, ENOSYS); other failures are fatal. A payload
// the sender may help with (assistable) is not copied here but published
// into *as, when given (*published true), in chunks of kAssistTrainChunk
// bytes if `train` (more pulls of its sender wait), else kAssistChunk:
// finish_assisted() copies it.
bool LocalTransport::copy_in(int src, const PullCell& c, const Recv& r, size_t* got, Assisted* as, bool train,
                             bool* published) {
  *published = false;
  size_t room = 0;
  for (size_t j = 0; j < r.count; ++j) room += r.iov[j].iov_len;
  if (c.len > room || c.count > kPullIov)
    fail(BSPK_ERR_INTERNAL, "a %llu-byte message from pid %d does not fit the %zu-byte receive posted for it",
         static_cast<unsigned long long>(c.len), src, room);
  iovec remote[kPullIov];
  bool mapped = true;
  for (size_t i = 0; i < c.count; ++i) {
    remote[i] = iovec{reinterpret_cast<void*>(static_cast<uintptr_t>(c.iov[i].addr)), static_cast<size_t>(c.iov[i].len)};
    if (src != pid_ && mapped) {
      const unsigned char* here = source_in_slab(src, c.iov[i].addr, c.iov[i].len, c.iov[i].slab);
      if (here) remote[i].iov_base = const_cast<unsigned char*>(here);
      else mapped = false;
    }
  }
  *got = static_cast<size_t>(c.len);
  if (src == pid_ || mapped) {
    size_t prefix = 0;
    int64_t slab = -1;
    if (src != pid_ && as && assistable(c, r, &prefix, &slab)) {
      publish_assisted(src, c, remote, r, prefix, slab, train ? kAssistTrainChunk : kAssistChunk, as);
      *published = true;
    } else {
      scatter(remote, c.count, r.iov);
    }
    return true;
  }
  for (size_t i = 0; i < c.count; ++i)  // back to the sender's addresses
    remote[i].iov_base = reinterpret_cast<void*>(static_cast<uintptr_t>(c.iov[i].addr));
  if (refuse_for_test_) {
    refuse_for_test_ = false;
    return false;
  }
  const pid_t os_pid = static_cast<pid_t>(peer(src).os_pid.load(std::memory_order_acquire));
  iovec local[2] = {r.iov[0], r.iov[1]};
  ssize_t n = process_vm_readv(os_pid, local, r.count, remote, c.count, 0);
  if (n < 0 && (errno == EPERM || errno == ENOSYS)) return false;
  if (n < 0 || static_cast<uint64_t>(n) != c.len)
    fail(BSPK_ERR_FABRIC, "reading a %llu-byte message from pid %d (process %d) with process_vm_readv: %s",
         static_cast<unsigned long long>(c.len), src, static_cast<int>(os_pid),
         n < 0 ? std::strerror(errno) : "short read");
  return true;
}

bool LocalTransport::assistable(const PullCell& c, const Recv& r, size_t* prefix, int64_t* slab) const {
  if (r.count == 0) return false;
  size_t before = 0;
  for (size_t j = 0; j + 1 < r.count; ++j) before += r.iov[j].iov_len;
  // (at most 2^16 - 1 chunks of the smaller size: the state word's count)
  if (c.len < before + kAssistMin || chunks_of(c.len - before, kAssistChunk) > 0xffffu) return false;
  const iovec& last = r.iov[r.count - 1];
  *slab = slab_of(reinterpret_cast<uintptr_t>(last.iov_base), static_cast<size_t>(c.len) - before);
  *prefix = before;
  return *slab >= 0;
}

// The first half of an assisted copy: publish r's last iovec in the pair's
// Assist slot of c.seq, and copy what lands before it (the header).
void LocalTransport::publish_assisted(int src, const PullCell& c, const iovec* remote, const Recv& r, size_t prefix,
                                      int64_t slab, size_t chunk, Assisted* as) {
  Assist& a = pair_state(src, pid_).assist[c.seq % kAssistSlots];
  as->a = &a;
  as->count = c.count;
  for (size_t i = 0; i < c.count; ++i) as->remote[i] = remote[i];
  as->prefix = prefix;
  as->len = c.len - prefix;
  as->chunk = chunk;
  as->n = chunks_of(as->len, chunk);
  as->mine = 0;
  as->dst = static_cast<unsigned char*>(r.iov[r.count - 1].iov_base);
  a.dst_addr.store(reinterpret_cast<uintptr_t>(as->dst), std::memory_order_relaxed);
  a.dst_slab.store(slab, std::memory_order_relaxed);
  a.off.store(prefix, std::memory_order_relaxed);
  a.len.store(as->len, std::memory_order_relaxed);
  a.chunk.store(chunk, std::memory_order_relaxed);
  a.chunks_done.store(0, std::memory_order_relaxed);
  a.state.store(assist_state(c.seq, as->n), std::memory_order_release);  // publishes the fields above
  size_t pos = 0;
  for (size_t j = 0; j + 1 < r.count; ++j) {
    copy_range(remote, c.count, pos, r.iov[j].iov_len, static_cast<unsigned char*>(r.iov[j].iov_base));
    pos += r.iov[j].iov_len;
  }
}

// The second half, for `count` copies published in a row (a train: the
// frames of one message): claim and copy chunks, oldest message first, until
// none is left, then wait for the ones the sender claimed (at most one in
// progress: it claims the next only after finishing one). Publishing the
// whole train first lets the sender copy without a pause between frames,
// and the receiver waits for it once per train, not once per frame.
void LocalTransport::finish_assisted(Assisted* as, size_t count) {
  if (hold_for_test_ && count > 0) {
    const double until = now_s() + 10;
    while (assist_next(as[0].a->state.load(std::memory_order_acquire)) < hold_for_test_ && now_s() < until)
      sched_yield();
    hold_for_test_ = 0;
  }
  for (size_t b = 0; b < count; ++b) {
    Assisted& e = as[b];
    uint64_t s = e.a->state.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t i = assist_next(s);
      if (i >= e.n) break;
      if (!e.a->state.compare_exchange_weak(s, s + 1, std::memory_order_relaxed)) continue;  // s: the sender's claim
      const uint64_t at = i * e.chunk;
      copy_range(e.remote, e.count, e.prefix + at, std::min<uint64_t>(e.chunk, e.len - at), e.dst + at);
      ++e.mine;
      ++s;
    }
  }
  for (size_t b = 0; b < count; ++b)
    for (unsigned spins = 0; as[b].a->chunks_done.load(std::memory_order_acquire) != as[b].n - as[b].mine; ++spins) {
      if (spins < kAssistSpins) __builtin_ia32_pause();
      else sched_yield();
    }
}

bool LocalTransport::assist() {
  if (npending_ == 0) return false;
  bool did = false;
  for (int d = 0; d < nprocs_; ++d) {
    std::deque<Pending>& q = pending_[static_cast<size_t>(d)];
    if (q.empty()) continue;
    // The receiver publishes messages kAssistSlots at a time at most, from
    // the oldest it has not consumed (`done`): look at those of ours.
    PairState& st = pair_state(pid_, d);
    const uint64_t done = st.done.load(std::memory_order_relaxed);
    size_t e = 0;
    while (e < q.size() && q[e].seq < done) ++e;
    for (const size_t end = std::min(q.size(), e + kAssistSlots); e < end; ++e) {
      const Pending& pd = q[e];
      Assist& a = st.assist[pd.seq % kAssistSlots];
      const uint64_t tag = (pd.seq + 1) & 0xffffffffu;
      uint64_t s = a.state.load(std::memory_order_acquire);
      while (assist_tag(s) == tag) {
        // A pull to this process comes first: it is ours alone to copy (and
        // its sender may be the one we would help), so between chunks look.
        if (pull_waiting()) return did;
        // The slot's fields, read after a state naming our message (acquire)
        // and before claiming: a successful claim means the receiver had not
        // finished with this message, so they were this message's.
        const uint64_t i = assist_next(s);
        if (i >= assist_chunks(s)) break;
        const uint64_t off = a.off.load(std::memory_order_relaxed), len = a.len.load(std::memory_order_relaxed);
        const uint64_t chunk = a.chunk.load(std::memory_order_relaxed);
        unsigned char* dst = in_slab(mapped_rw_, true, d, a.dst_addr.load(std::memory_order_relaxed), len,
                                     a.dst_slab.load(std::memory_order_relaxed));
        if (!dst) break;  // cannot be written from here: the receiver copies it all
        if (!a.state.compare_exchange_weak(s, s + 1, std::memory_order_acquire)) continue;  // s: reloaded
        const uint64_t at = i * chunk;
        copy_range(pd.iov, pd.count, off + at, std::min<uint64_t>(chunk, len - at), dst + at);
        a.chunks_done.fetch_add(1, std::memory_order_release);
        did = true;
        s = a.state.load(std::memory_order_acquire);
      }
    }
  }
  return did;
}

// The kernel refused cross-memory access: no more pulls to this process. The
// receives kept for pulls go to the provider, through which the senders
// re-send (they see the pair's `refused`).
void LocalTransport::stop_pulling() {
  pull_ = false;
  for (auto& [tag, q] : pull_recvs_) {
    while (!q.empty()) {
      Recv r = q.front();
      void* desc[2] = {nullptr, nullptr};
      if (!ep_.post_recv(r.iov, desc, r.count, r.ctx, tag))
        fail(BSPK_ERR_FABRIC, "the provider's receive queue is full while taking over the receives kept for pulls");
      q.pop_front();
    }
  }
}

// Pull descriptors addressed to us, scanning the sources round-robin. The
// assisted copies of consecutive descriptors from one source are published
// together, up to kAssistSlots, then finished together (finish_assisted);
// their cells are consumed (`done`) only then, in order.
size_t LocalTransport::deliver_pulls(Completion* out, size_t n) {
  size_t k = 0;
  int src = next_pull_src_;
  for (int i = 0; i < nprocs_ && k < n; ++i, src = src + 1 == nprocs_ ? 0 : src + 1) {
    Inbound& in = in_[static_cast<size_t>(src)];
    PullCell* r = in.pulls;
    uint64_t& h = in.pull_head;
    const uint64_t h0 = h;
    Assisted train[kAssistSlots];
    size_t nt = 0;  // published: the cells h .. h + nt - 1
    auto finish = [&] {
      if (nt == 0) return;
      finish_assisted(train, nt);
      for (size_t t = 0; t < nt; ++t, ++h) {
        out[k++] = Completion{train[t].ctx, CompletionKind::Received, train[t].got};
        r[h % kPullCells].full.store(0, std::memory_order_relaxed);
      }
      in.state->done.store(h, std::memory_order_release);
      nt = 0;
    };
    while (k + nt < n) {
      if (nt == kAssistSlots) finish();
      PullCell& c = r[(h + nt) % kPullCells];
      if (!c.full.load(std::memory_order_acquire)) break;
      if (!pull_) {  // refused earlier: the sender re-sends through the provider
        if (in.state->refused.load(std::memory_order_relaxed) == 0)
          in.state->refused.store(c.seq + 1, std::memory_order_relaxed);
      } else {
        std::deque<Recv>* q = local_recvs(c.tag);
        if (!q || q->empty()) break;  // wait for a receive of this tag
        // A frame receive: the one posted last, whose frame the pool freed
        // last and is likeliest still in this core's cache (local.h, Pulls).
        const bool lifo = q != &recvs_;
        Recv& rv = lifo ? q->back() : q->front();
        size_t got = 0;
        bool published = false;
        // (a train: another pull from src waits behind this one, or went before it)
        const bool more = nt > 0 || r[(h + nt + 1) % kPullCells].full.load(std::memory_order_relaxed) != 0;
        if (!copy_in(src, c, rv, &got, &train[nt], more, &published)) {
          finish();         // (those are copies from shared slabs: unaffected)
          stop_pulling();
          continue;  // the same cell again, now refused
        }
        if (published) {
          train[nt].ctx = rv.ctx;
          train[nt].got = got;
          ++nt;
          if (lifo) q->pop_back(); else q->pop_front();
          continue;
        }
        finish();  // (the train's cells come first)
        out[k++] = Completion{rv.ctx, CompletionKind::Received, got};
        if (lifo) q->pop_back(); else q->pop_front();
      }
      c.full.store(0, std::memory_order_relaxed);
      ++h;
      in.state->done.store(h, std::memory_order_release);  // publishes refused too
    }
    finish();
    if (h != h0) room_made(*in.state, src);  // (a message of more than kPullCells frames waits for them)
  }
  next_pull_src_ = next_pull_src_ + 1 == nprocs_ ? 0 : next_pull_src_ + 1;
  return k;
}

// Our pulled sends that their receivers have taken: Sent, or (refused) handed
// to the provider.
size_t LocalTransport::complete_pulls(Completion* out, size_t n) {
  size_t k = 0;
  for (int d = 0; d < nprocs_ && npending_ > 0 && k < n; ++d) {
    std::deque<Pending>& q = pending_[static_cast<size_t>(d)];
    if (q.empty()) continue;
    PairState& st = pair_state(pid_, d);
    const uint64_t done = st.done.load(std::memory_order_acquire);
    const uint64_t refused = st.refused.load(std::memory_order_relaxed);
    while (!q.empty() && q.front().seq < done && k < n) {
      if (refused != 0 && q.front().seq + 1 >= refused) {
        pull_off_[static_cast<size_t>(d)] = 1;
        resend_.push_back(q.front());
      } else {
        out[k++] = Completion{q.front().ctx, CompletionKind::Sent, 0};
      }
      q.pop_front();
      --npending_;
    }
  }
  while (!resend_.empty()) {  // their completions come from the provider
    Pending& pd = resend_.front();
    if (!ep_.post_send(pd.dest, pd.iov, pd.desc, pd.count, pd.ctx, pd.tag)) break;
    sent_by_provider(pd.dest);
    resend_.pop_front();
  }
  return k;
}

void LocalTransport::ring_doorbell(int dest) {
  PeerInfo& d = peer(dest);
  d.doorbell.fetch_add(1, std::memory_order_release);
  // Not FUTEX_PRIVATE: the word is in memory shared between processes.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&d.doorbell), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

void LocalTransport::wake_local() {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the caller's news before the flags (see "Napping")
  for (int j = 0; j < nprocs_; ++j)
    if (j != pid_) wake(j);
}

void LocalTransport::nap(double seconds, const std::function<bool()>* ready) {
  PeerInfo& me = peer(pid_);
  struct Up {  // the flag down again however the nap ends (ready may throw)
    std::atomic<uint32_t>& f;
    ~Up() { f.store(0, std::memory_order_relaxed); }
  } up{me.napping};
  const uint32_t bell = me.doorbell.load(std::memory_order_acquire);
  me.napping.store(1, std::memory_order_seq_cst);  // before the looks below: a producer after it rings
  if (may_have_arrivals() || (ready && (*ready)())) return;
  const timespec ts = to_timespec(seconds);
  // Returns at once if the bell rang since it was read (EAGAIN), when rung, or after ts.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&me.doorbell), FUTEX_WAIT, bell, &ts, nullptr, 0);
}

bool LocalTransport::may_have_arrivals() const {
  return ring_waiting() || pull_waiting() ||
         peer(pid_).provider_in.load(std::memory_order_acquire) != provider_recvd_;
}

// Whether this poll() calls the provider (see "Polling the provider" in local.h).
bool LocalTransport::provider_may_have_work() {
  if (ep_.busy() || (++poll_calls_ % kPollEvery) == 0) return true;
  if (inject_polls_ > 0) {
    --inject_polls_;
    return true;
  }
  return peer(pid_).provider_in.load(std::memory_order_acquire) != provider_recvd_;
}

ssize_t LocalTransport::poll(Completion* out, size_t n, CompletionError* err) {
  // The provider first: an error there is returned before any local
  // completion has been taken (so none is lost).
  size_t k = 0;
  if (provider_may_have_work()) {
    ssize_t m = ep_.poll(out, n, err);
    if (m < 0) return m;
    k = static_cast<size_t>(m);
    for (size_t i = 0; i < k; ++i) provider_recvd_ += out[i].kind == CompletionKind::Received;
  }
  while (k < n && !sent_.empty()) {
    out[k++] = Completion{sent_.front(), CompletionKind::Sent, 0};
    sent_.pop_front();
  }
  if (k < n && npending_ + resend_.size() > 0) k += complete_pulls(out + k, n - k);
  // (A cheap look at every source's next cells first: the scans below are
  // heavier, and a waiting process polls an empty ring most of the time.)
  if (k < n && (sink_ || !recvs_.empty()) && !in_sink_ && ring_waiting()) k += deliver(out + k, n - k);
  if (k < n && pull_waiting()) k += deliver_pulls(out + k, n - k);
  return static_cast<ssize_t>(k);
}

}  // namespace bspk::fabric
