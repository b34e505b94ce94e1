// fabric/local.h -- a same-host fast path for small messages in front of an
// Endpoint: when every process of the job is on one host, a message of the
// ring tag of at most kRingMessage bytes (header included) goes through a
// single-producer single-consumer ring per ordered pair of processes in one
// shared segment, instead of through the libfabric provider: one cell of
// kCellPayload bytes, or up to kMaxMessageCells consecutive cells for a
// message up to a 4 KiB payload and its header (the engine's small class,
// which it injects). Everything else (larger messages, one-sided reads,
// registration) goes to the Endpoint unchanged.
//
// Why: libfabric 1.17's shm provider costs ~0.5 us per small message here
// (locks, its own command queue, a completion queue entry per operation, and
// for 0.5-4 KiB two copies through its bounce buffers); a ring cell is one
// cache line of flag plus the bytes.
//
// The receiver reads a ring message out of its cells in one of two ways.
// With an arrival sink (Transport::set_arrival_sink; the engine sets itself)
// poll() hands the cells to the sink as they are found, which copies the
// header onto its stack and the payload into a small buffer of its own that
// becomes the message's storage: no receive taken, no completion, no receive
// to post again (shm, p = 2, one word to each process, bench/phases, old and
// new library alternated 30 times: 626 -> 579 ns per superstep, medians;
// callgrind: the arrival's path in poll, dispatch and reposting 950 -> 730
// instructions; 2026-12-02). Without a sink, or when the sink declines (its
// small pool at BSPK_POOL_LIMIT, a split body's header), the message goes
// into a receive the engine posted, as through a provider (the copy from the
// cell into that buffer is the transport's, as the provider's copy through
// its bounce buffers is), and completes as Received.
//
// Receives posted with the ring tag (the receive class of small messages) are
// split: up to kLocalRecvs are kept here for ring arrivals, the others go to
// the provider. A ring message the sink declined waits in its cell until a
// receive is free; a full ring sends through a pull (below), or without
// pulls through the provider. Messages of one pair can thus overtake each
// other; BSPk orders by superstep and sequence numbers, never by arrival.
//
// Pulls (issue 10; on when constructed with pull = true): every other message
// to a process of the host -- larger than a cell, or of another tag, i.e. the
// frames of MP messages and DSM stores -- is not copied through the provider
// either. The sender writes a descriptor (its iovecs' addresses and lengths)
// into a second single-producer single-consumer ring per ordered pair; the
// receiver copies the bytes straight from the sender's memory into the
// receive it has posted -- one memcpy out of the sender's shared slab (below),
// or for memory outside the slabs one process_vm_readv(2) (Linux cross-memory
// attach) --, then raises the pair's `done` counter, which completes the send at the
// sender (Sent: its buffers are reusable). A pull takes the receive of its tag
// posted last (LIFO): the engine reposts with the frame the pool freed last, so
// frames stay in the receiver's cache; FIFO cycled the 16 kept receives (1 MiB
// of 64 KiB frames per tag) and made every pull write cold lines (shm p = 2,
// stores of 256 KiB per pair: 25-31 -> 18.5-22 us per superstep, old and new
// library alternated 3x; Open MPI's put + fence 17-18 us). Ring-tag receives
// stay FIFO (LIFO measured no different there). A full pull ring makes
// post_send return false (the engine keeps the send in its backlog). Where the kernel
// refuses cross-memory access (Yama ptrace_scope, a container without ptrace
// permission), the receiver marks the pair refused and hands its receives to
// the provider; the sender then re-sends the refused messages and all later
// ones to that process through the provider: nothing is lost, only slower.
//
// Runs (with pulls): contiguous runs of frames (bspk_malloc_contiguous,
// bspk_recv_contiguous) come and go with their regions, so each cannot be a
// slab of its own (the kMaxSlabs entries would run out, and a receiver keeps
// a slab mapped, and so its memory alive, until it exits). They are carved
// instead from one run arena per process: a memfd as large as the machine's
// memory, sparse (pages exist only where runs were written), mapped shared
// once at the first run and listed as one slab, so receivers map it once and
// pull runs with memcpy like frames (shm p = 2, a 1 MiB message from a run
// each superstep: 122-132 us with process_vm_readv, 37-45 us now, as from
// ordinary frames). A freed run's pages are released at once (fallocate
// PUNCH_HOLE: gone from every mapping), its range returned first fit and
// coalesced (comem keeps up to 64 MiB of freed runs for reuse before they
// get here: comem/pool.h). Runs are private
// memory, read by process_vm_readv, when the arena is full, when it cannot
// be made, and under an address-space limit (RLIMIT_AS, against which the
// arena's reservation and every peer's mapping of it would count).
//
// Shared slabs (with pulls): the frame slabs of this process's pools
// (alloc_memory) are memfd memory mapped shared, listed in the segment's slab
// table (file descriptor, address, length). A receiver maps a sender's slab
// once, read-only, by opening /proc/<sender>/fd/<n> (allowed between processes
// of one user: ptrace read access, which Yama does not restrict), and then
// copies a pulled message with memcpy from it: one copy at memory speed, no
// system call per message (process_vm_readv costs ~2.3 us per call here, more
// than copying 64 KiB). Memory outside the slabs (runs when there is no
// room in the run arena, above; slabs past kMaxSlabs) is read with
// process_vm_readv. A shared slab is unmapped only when its pool is
// destroyed, at shutdown: no descriptor names it then.
// Messages the engine injects (inject(): up to the provider's inject size,
// buffer reusable at return) cannot be pulled: those of the ring tag go
// through the rings (several cells); any other (one that meets a full ring,
// one of another tag) is refused (inject() returns false) whenever it could
// be pulled, so the engine posts it as an operation, which is pulled; only
// with pulls off or refused by the receiver does it go to the provider,
// which is why part of each tag's receives stays posted there.
//
// Assisted pulls: a pulled message whose payload lands in one receive
// buffer of a shared slab of the receiver (a frame) and is at least
// kAssistMin bytes is copied by both processes at once. The receiver,
// having chosen the receive, publishes its buffer in the pair's Assist slot
// of the message (seq mod kAssistSlots: address and slab in its own address
// space, where the payload starts in the message and its length) and copies
// the header itself. It publishes consecutive such messages of one source --
// a train: the frames of one MP message -- up to kAssistSlots before
// copying any payload, then claims chunks (kAssistChunk bytes, or
// kAssistTrainChunk when more pulls of the sender wait) one at a
// time from each slot's state word, oldest message first, as does the
// sender from its wait loop (assist(), which the engine calls only when
// every process of the host has a CPU, and which gives way as soon as a
// pull to the sender itself is waiting): a compare-and-swap on (message
// number, its chunk count, next chunk), so a chunk is claimed once and a
// claim can only name a chunk of the message the slot holds (the count is
// in the word because the slot's other fields may already be the next
// message's). The sender copies from its own send buffers
// into the receiver's slab, mapped writable on first use (as the receiver
// maps the sender's read-only, by /proc/<pid>/fd/<n>); each chunk it
// finishes bumps the slot's `chunks_done`. Once every chunk of the train is
// claimed the receiver waits for the sender's (one in progress at most),
// then completes the receives (and so the sends: `done`) in order. A
// sender waiting for its sends, idle while the receiver copied the whole
// message, halves the copy's time: shm, p = 2, old and new library
// alternated 5 times (medians), bspk_broadcast of 1 MiB (16 frames) 67.5 ->
// 38.5 us, a one-way 512 KiB message 22.0 -> 14.6 us; a one-way 128 KiB
// message (two frames, in cache) 5.70 -> 5.93 us and exchanges in both
// directions, where each process has its own copying to do, stay within the
// noise (128 KiB, 1 MiB: medians of 9 and 5). Trains instead of one message
// at a time (the receiver waited for the sender's last chunk of every frame,
// and the sender came back to the slot late through the engine's wait loop
// for each next frame): bench/pingpong 256 KiB / 1 MiB / 4 MiB 13.3 / 53.9 /
// 225 -> 11.4 / 46.5 / 192 us, bspk_broadcast of 1 MiB 43.1 -> 41.2 us
// (medians of 4 and 10 alternations), total exchanges unchanged. In a
// train, chunks of kAssistTrainChunk (32 KiB) instead of kAssistChunk
// (16 KiB): half the compare-and-swaps on a line both processes touch,
// broadcast 39.6 -> 37.1 us (6 alternations); a lone message keeps 16 KiB
// (32 KiB: pingpong of one 64 KiB frame 3.6 -> 4.5 us, the receiver waiting
// for the sender's half). Non-temporal stores for the sender's chunks: 39 ->
// 66 us. Claiming half of what is left in one piece instead (fewer
// compare-and-swaps) gave the broadcast 72 -> 50 us only: a sender arrives
// late and the receiver then waits for its half; the sender claiming from
// the top down (each process copying the same half every time, for its
// cache) 42.7 -> 45.2 us.
// Oversubscribed, the sender does not assist (its CPU time is the other
// processes'); a receiver whose sender does not help claims every chunk
// itself.
//
// Polling the provider: every poll() reads the rings, but calls the
// provider's completion queue (fi_cq_read: its own locks and queues, about a
// third of a spinning wait's time on shm here) only when something can be
// there: this process has operations of its own in flight there
// (Transport::busy()), or injected through it in its last kInjectPolls polls,
// or the count of messages other processes sent it through the provider
// (each sender adds to the receiver's `provider_in` after posting) differs
// from the receives it has completed there, or on every kPollEvery-th call
// regardless (connection management and anything else a provider does
// unasked). A receive error leaves the counts unequal, and so back to
// polling on every call.
//
// Napping (nap(), wake_local()): each process has a doorbell in its PeerInfo,
// a futex word, and a `napping` flag. An idle engine past its yield phase
// naps on its doorbell instead of sleeping; every push into its rings or pull
// queue, every send to it through the provider (with provider_in) and every
// wake_local() (count board joins, gather blocks) looks at the flag and, only
// if it is set, rings the bell (FUTEX_WAKE, shared: the segment is mapped by
// every process). The sleeper sets its flag (seq_cst: a full fence), then
// looks once more at its rings, pull queues and provider count and at the
// engine's own condition (nap's `ready`: the count board, a gather's
// blocks), then sleeps on the bell value it read before the flag; a ring
// between that read and the sleep makes the futex return at once. A board
// join or gather block is published, then wake_local() fences (a locked
// instruction on the waker's stack) and looks at the flags: one of the two
// sides sees the other's store, so no such wake is lost. (Until 2026-12-02
// nap did not look at the engine's condition: a join published between the
// engine's last look and the flag was slept through, for the nap's length,
// up to 1 ms.) A message push looks at the flag without a fence, to keep
// sends cheap: one published just as the receiver raises its flag can go
// unrung (x86 lets the push's store wait in the store buffer past the
// load), and that nap then lasts its time, as a plain sleep would; likewise
// a sender that found a ring full (want_room) and naps.
//
// The segment is a SharedSegment (base/shm_segment.h): created by pid 0, its
// name passed through the bootstrap, opened by the others, then unlinked.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "base/shm_segment.h"
#include "fabric/fabric.h"

namespace bspk::fabric {

class LocalTransport final : public Transport {
 public:
  static constexpr size_t kCell = 512;                 // bytes per ring cell
  static constexpr size_t kCellPayload = kCell - 16;   // message bytes per cell
  static constexpr size_t kCells = 64;                 // cells per ordered pair
  static constexpr size_t kMaxMessageCells = 9;        // cells one message may take (a 4 KiB payload + 64-byte header)
  static constexpr size_t kRingMessage = kMaxMessageCells * kCellPayload;  // largest ring message, bytes
  static constexpr size_t kLocalRecvs = 32;            // ring-tag receives kept for ring arrivals
  static constexpr size_t kPullCells = 64;             // pull descriptors per ordered pair
  static constexpr size_t kPullIov = 4;                // iovecs a pulled message may have
  static constexpr size_t kLocalPullRecvs = 16;        // receives of each other tag kept for pulls
  static constexpr size_t kMaxSlabs = 512;             // shared slabs listed per process
  static constexpr size_t kArenaAlign = size_t{1} << 30;  // alignment of the run arena (and most a run may ask)
  static constexpr size_t kAssistChunk = 16384;        // bytes of an assisted pull claimed at a time ...
  static constexpr size_t kAssistTrainChunk = 32768;   // ... or, when more pulls from its sender wait behind it, this many
  static constexpr size_t kAssistMin = 2 * kAssistChunk;  // smallest payload whose pull is assisted
  static constexpr size_t kAssistSlots = 8;            // assisted pulls of one pair published at a time
  static constexpr unsigned kAssistSpins = 1u << 16;   // polls for the sender's last chunks before yielding
  static constexpr unsigned kPollEvery = 8;            // poll the provider at least every kPollEvery-th poll()
  static constexpr unsigned kInjectPolls = 64;         // ... and on every poll() this long after an inject into it

  // Bytes of the segment for p processes.
  static size_t segment_bytes(int nprocs);
  // pid 0: a new segment (its name() goes to the others). Errors: BSPK_ERR_BOOT.
  static SharedSegment create_segment(const std::string& prefix, int nprocs);

  // Over `ep`, with the mapped segment; messages tagged ring_tag may use rings,
  // and with pull every message that does not go through a ring is pulled
  // (see above). Every process of the job must pass the same `pull`.
  LocalTransport(Transport& ep, SharedSegment seg, int pid, int nprocs, uint64_t ring_tag, bool pull = false);
  ~LocalTransport() override;
  LocalTransport(const LocalTransport&) = delete;
  LocalTransport& operator=(const LocalTransport&) = delete;

  // With pulls: host-shared memfd memory, listed in the slab table (private
  // memory once kMaxSlabs are listed, or without pulls).
  void* alloc_memory(size_t len, size_t align) override;
  void free_memory(void* base, size_t len) noexcept override;
  // With pulls: carved from this process's run arena (see "Runs" above);
  // private memory without pulls, when the arena is full or could not be
  // made, or for an alignment above kArenaAlign.
  void* alloc_run_memory(size_t len, size_t align) override;
  void free_run_memory(void* base, size_t len) noexcept override;
  // Bytes of the run arena (0 until the first run, or without one).
  size_t run_arena_bytes() const { return arena_.len; }

  MemoryRegion register_memory(void* base, size_t len) override { return ep_.register_memory(base, len); }
  void deregister(MemoryRegion& mr) noexcept override { ep_.deregister(mr); }
  bool post_recv(const iovec* iov, void** desc, size_t count, OpContext* ctx, uint64_t tag) override;
  // Bodies of split messages always cross the provider (eager_limit() is the
  // provider's when pulls are off, else 0).
  bool post_recv_from(int src, const iovec* iov, void** desc, size_t count, OpContext* ctx, uint64_t tag) override {
    return ep_.post_recv_from(src, iov, desc, count, ctx, tag);
  }
  bool post_send(int dest, const iovec* iov, void** desc, size_t count, OpContext* ctx, uint64_t tag) override;
  bool inject(int dest, const iovec* iov, void** desc, size_t count, uint64_t tag) override;
  bool post_read(int src, void* local, size_t len, void* desc, uint64_t raddr, uint64_t key,
                 OpContext* ctx) override {
    return ep_.post_read(src, local, len, desc, raddr, key, ctx);
  }
  ssize_t poll(Completion* out, size_t n, CompletionError* err) override;
  // Never blocks: ring arrivals raise no file descriptor (the engine backs off).
  ssize_t wait(Completion* out, size_t n, int, CompletionError* err) override { return poll(out, n, err); }
  // Sleeps on this process's doorbell (a futex in the segment) up to
  // `seconds`: a process of this host that pushes into one of our rings or
  // pull queues, sends us a message through the provider or calls
  // wake_local() while we nap rings it; `ready` is looked at after the
  // napping flag is up (see "Napping").
  void nap(double seconds, const std::function<bool()>* ready) override;
  void wake_local() override;
  // A ring or pull cell is filled, or the provider has messages to deliver
  // (the senders' provider_in count): one load per source when none has.
  bool may_have_arrivals() const override;
  // Ring messages go to the sink, read out of their cells (see "Rings").
  void set_arrival_sink(ArrivalSink* sink) override { sink_ = sink; }
  // Copies chunks of the pulled messages of ours that their receivers are
  // copying now (see "Assisted pulls"). True when it copied some.
  bool assist() override;

  // With pulls: map every shared slab the other processes have listed so
  // far (what the first pull from each would otherwise do: an open of
  // /proc/<pid>/fd/<n> and an mmap, ~20 us each here, inside a superstep).
  // Called once after startup, when every process has made its pools.
  void map_peer_slabs();

  const SharedSegment& segment() const { return seg_; }
  bool pulling() const { return pull_; }
  // Tests: act as if the kernel refused this process's next cross-memory read.
  void refuse_next_pull_for_test() { refuse_for_test_ = true; }
  // Tests: in its next assisted pull, wait (up to 10 s) until the sender has
  // claimed `chunks` chunks before copying any.
  void hold_next_assisted_pull_for_test(unsigned chunks) { hold_for_test_ = chunks; }
  // Tests: whether this process's napping flag is up (see "Napping").
  bool napping_for_test() const { return peer(pid_).napping.load(std::memory_order_seq_cst) != 0; }

 private:
  struct alignas(64) Cell {
    std::atomic<uint32_t> full;  // 0 free; 1 a message starts here (release by the producer, acquire by the consumer); 2 continues one
    uint32_t len;                // message bytes
    uint64_t tag;
    unsigned char data[kCellPayload];
  };
  static_assert(sizeof(Cell) == kCell, "ring cell layout");
  struct alignas(64) PullCell {
    std::atomic<uint32_t> full;  // 1: holds a descriptor (release by the producer, acquire by the consumer)
    uint32_t count;              // iovecs
    uint64_t tag;
    uint64_t seq;                // per-pair message number, from 0
    uint64_t len;                // total bytes
    struct {
      uint64_t addr, len;        // in the sender's address space
      int64_t slab;              // the sender's shared slab holding it, or -1
    } iov[kPullIov];
  };
  static_assert(sizeof(PullCell) == 128, "pull cell layout");
  struct SlabEntry {  // one shared slab of a process: its memfd number in that process, where it maps it
    int64_t fd;
    uint64_t base, len;
    uint64_t reserved;
  };
  // The pull dst is copying from src, when src may help (see "Assisted
  // pulls"): written by dst before it publishes `state` (release), read by
  // src after it claimed a chunk (stable until dst has seen that chunk done).
  struct alignas(64) Assist {
    std::atomic<uint64_t> state;        // (seq + 1) mod 2^32 << 32 | chunks << 16 | next unclaimed chunk; 0 before the first
    std::atomic<uint64_t> chunks_done;  // chunks src has copied
    std::atomic<uint64_t> dst_addr;     // the receive buffer (dst's address) the payload goes to
    std::atomic<int64_t> dst_slab;      // dst's shared slab holding it
    std::atomic<uint64_t> off, len;     // where the payload starts in the message, its bytes
    std::atomic<uint64_t> chunk;        // bytes per chunk (kAssistChunk or kAssistTrainChunk)
  };
  // Per ordered pair (src -> dst), written by dst, read by src (want_room:
  // set by src, cleared by dst).
  struct alignas(64) PairState {
    std::atomic<uint64_t> done;     // descriptors consumed (pulled or refused)
    std::atomic<uint64_t> refused;  // 0, or 1 + the first refused descriptor's seq
    std::atomic<uint64_t> ring_done;  // ring cells consumed (freed)
    std::atomic<uint32_t> want_room;  // 1: src found the ring or pull queue full (dst wakes it on freeing cells)
    Assist assist[kAssistSlots];    // by seq mod kAssistSlots; own cache lines: both processes write them
  };
  struct alignas(64) PeerInfo {
    std::atomic<int64_t> os_pid;    // getpid() of the process (0 until it has started)
    std::atomic<uint32_t> nslabs;   // entries of its slab table (release: the entry is written)
    std::atomic<uint64_t> provider_in;  // messages sent to it through the provider, by anyone
    std::atomic<uint32_t> doorbell;  // futex word: bumped by whoever wakes the process from nap()
    std::atomic<uint32_t> napping;   // 1 while the process naps (wake() rings only then)
  };
  struct OwnSlab {
    size_t len;
    int64_t index;
    int fd;
  };
  struct Mapped {  // a peer's slab, mapped here read-only (mapped_) or writable (mapped_rw_)
    unsigned char* base = nullptr;
    size_t len = 0;
    uint64_t remote_base = 0;
    bool failed = false;  // could not be mapped: read by process_vm_readv instead
  };
  struct Recv {
    iovec iov[2];
    size_t count;
    OpContext* ctx;
  };
  struct Pending {  // a pulled send not yet done
    int dest;
    uint64_t seq;
    OpContext* ctx;
    uint64_t tag;
    size_t count;
    iovec iov[kPullIov];
    void* desc[kPullIov];
  };
  size_t pair_index(int src, int dst) const {
    return static_cast<size_t>(src) * static_cast<size_t>(nprocs_) + static_cast<size_t>(dst);
  }
  Cell* ring(int src, int dst) const { return static_cast<Cell*>(seg_.base()) + pair_index(src, dst) * kCells; }
  PullCell* pull_ring(int src, int dst) const;
  PairState& pair_state(int src, int dst) const;
  PeerInfo& peer(int pid) const;
  SlabEntry* slab_table(int pid) const;
  int64_t slab_of(uintptr_t a, size_t len) const;
  const unsigned char* source_in_slab(int src, uint64_t addr, uint64_t len, int64_t slab) {
    return in_slab(mapped_, false, src, addr, len, slab);
  }
  unsigned char* in_slab(std::vector<std::vector<Mapped>>& maps, bool writable, int pid, uint64_t addr, uint64_t len,
                         int64_t slab);
  // The payload of a pull into r, when its sender may help copy it: true with
  // *prefix the bytes before it (landing in r's other iovecs) and *slab the
  // slab of ours holding r's last iovec.
  bool assistable(const PullCell& c, const Recv& r, size_t* prefix, int64_t* slab) const;
  struct Assisted {  // receiver side: a published assisted pull (publish_assisted) until finish_assisted
    Assist* a;
    iovec remote[kPullIov];  // the source, as copy_in maps it here
    size_t count;
    uint64_t prefix, len, chunk, n, mine;  // payload offset and bytes, bytes per chunk, chunks, chunks this process copied
    unsigned char* dst;
    OpContext* ctx;
    size_t got;
  };
  void publish_assisted(int src, const PullCell& c, const iovec* remote, const Recv& r, size_t prefix, int64_t slab,
                        size_t chunk, Assisted* as);
  void finish_assisted(Assisted* as, size_t count);
  static size_t cells_for(size_t len);  // cells a ring message of len bytes takes
  bool push(int dest, const iovec* iov, size_t count, uint64_t tag);
  // Whether a message of `count` iovecs to dest can be pulled (pulls on, not refused by dest).
  bool can_pull(int dest, size_t count) const {
    return pull_ && !pull_off_[static_cast<size_t>(dest)] && count <= kPullIov;
  }
  bool push_pull(int dest, const iovec* iov, void** desc, size_t count, OpContext* ctx, uint64_t tag);
  std::deque<Recv>* local_recvs(uint64_t tag);
  bool copy_in(int src, const PullCell& c, const Recv& r, size_t* got, Assisted* as, bool train, bool* published);
  void stop_pulling();
  // Whether some source's next ring cell / pull cell to this process is filled.
  bool ring_waiting() const {
    for (const Inbound& in : in_)
      if (in.ring[in.head % kCells].full.load(std::memory_order_acquire) == 1) return true;
    return false;
  }
  bool pull_waiting() const {
    for (const Inbound& in : in_)
      if (in.pulls[in.pull_head % kPullCells].full.load(std::memory_order_acquire)) return true;
    return false;
  }
  size_t deliver(Completion* out, size_t n);
  size_t deliver_pulls(Completion* out, size_t n);
  size_t complete_pulls(Completion* out, size_t n);
  void sent_by_provider(int dest) {
    peer(dest).provider_in.fetch_add(1, std::memory_order_release);
    wake(dest);
  }
  // Ring dest's doorbell if it naps (one load of its PeerInfo line otherwise).
  void wake(int dest) {
    if (peer(dest).napping.load(std::memory_order_relaxed) != 0) ring_doorbell(dest);
  }
  void ring_doorbell(int dest);
  // A sender whose ring or pull queue to a peer looked full (fits(seen)
  // false): reload `seen` from the consumer's counter `done` (acquire: orders
  // the consumer's reads before our writes); still full, ask to be woken when
  // cells are freed (want_room; see room_made) and look once more, as the
  // consumer may have freed them in between. True when it fits now.
  template <class Fits>
  static bool room_freed(PairState& ps, const std::atomic<uint64_t>& done, uint64_t& seen, Fits fits) {
    seen = done.load(std::memory_order_acquire);
    if (fits(seen)) return true;
    ps.want_room.store(1, std::memory_order_relaxed);
    seen = done.load(std::memory_order_acquire);
    return fits(seen);
  }
  // After this process freed cells of src's ring or pull queue: wake src if
  // it found them full (want_room; the flag is on the pair's line that the
  // frees just wrote, so a sender with room costs nothing more).
  void room_made(PairState& st, int src) {
    if (st.want_room.load(std::memory_order_relaxed) == 0) return;
    st.want_room.store(0, std::memory_order_relaxed);
    wake(src);
  }
  bool provider_may_have_work();

  Transport& ep_;
  SharedSegment seg_;
  int pid_, nprocs_;
  uint64_t ring_tag_;
  // Producer side, per destination: the consumer's ring_done and done as last
  // read. A send checks for room against these and reads the shared counter
  // (a cache miss: the consumer wrote it) only when they say the ring may be
  // full, instead of loading the cell it is about to fill, which the consumer
  // wrote last (a miss on every send).
  std::vector<uint64_t> ring_done_seen_, pull_done_seen_;
  std::vector<uint64_t> tail_;  // per destination: next cell to fill (producer side)
  // Consumer side, per source: where its ring and pull ring to this process
  // are, the pair's state, and the next cell of each to read.
  struct Inbound {
    Cell* ring;
    PullCell* pulls;
    PairState* state;
    uint64_t head, pull_head;
  };
  std::vector<Inbound> in_;
  std::deque<Recv> recvs_;      // ring-tag receives kept here
  std::deque<OpContext*> sent_; // ring sends whose Sent completion is due
  int next_src_ = 0;            // round-robin start of the next scan
  ArrivalSink* sink_ = nullptr;  // takes ring messages out of their cells (set_arrival_sink)
  bool in_sink_ = false;         // inside sink_->take: a nested poll() leaves the rings alone
  uint64_t provider_recvd_ = 0; // Received completions from the provider
  unsigned poll_calls_ = 0;     // poll() calls, for kPollEvery
  unsigned inject_polls_ = 0;   // polls left that call the provider after an inject into it
  // Pulls.
  bool pull_ = false;               // on for this process (cleared when the kernel refuses CMA)
  bool refuse_for_test_ = false;
  unsigned hold_for_test_ = 0;
  std::vector<uint64_t> pull_tail_; // per destination: next descriptor cell (producer side)
  std::vector<std::deque<Pending>> pending_;  // per destination: pulled sends not yet done
  std::vector<char> pull_off_;      // per destination: refused by it, send through the provider
  size_t npending_ = 0;
  std::deque<Pending> resend_;      // refused pulls, to post to the provider
  std::vector<std::pair<uint64_t, std::deque<Recv>>> pull_recvs_;  // other tags' receives kept for pulls
  int next_pull_src_ = 0;
  bool share_ = false;                          // alloc_memory hands out shared slabs
  struct RunArena {
    uintptr_t base = 0;
    size_t len = 0;                  // 0: none (not made yet, or could not be)
    int fd = -1;
    bool tried = false;              // made, or given up, at the first run
    std::map<size_t, size_t> free;   // free ranges: offset -> bytes (coalesced)
  } arena_;
  // A memfd of len bytes mapped shared at an address aligned to `align`
  // (nullptr if it cannot be).
  static void* map_memfd(int fd, size_t len, size_t align);
  std::map<uintptr_t, OwnSlab> own_slabs_;      // by base address
  std::vector<std::vector<Mapped>> mapped_;     // per source, per slab index
  std::vector<std::vector<Mapped>> mapped_rw_;  // per destination, per slab index: assisted pulls write there
};

}  // namespace bspk::fabric
