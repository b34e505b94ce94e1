// sync/board.h -- the count exchange through shared memory, for jobs whose
// processes all run on one host (BSPK_COUNT_EXCHANGE=auto|board).
//
// bspk_will_send and counted supersteps need, on every process t, the sum over
// all processes of the messages sent to t [BSPk §5]. Across hosts that takes
// messages (sync/tree.h: 2*ceil(log2 p) rounds). On one host the processes
// share a small segment instead: each process owns a count slot per parity,
// where it writes its cumulative send counts per destination, the superstep
// and kind it joins from, and last a word naming the collective (release);
// each process polls the other slots' words and, once all name the
// collective, sums what each slot says it sent to it. Nothing is shared for
// writing: an empty counted superstep moves one cache line from every
// process to every other, in parallel (at p = 2 one line each way, the cost
// of a shared-memory flag). (Until 2026-11-29 every process added into
// shared per-destination counters and one arrival counter with atomic
// read-modify-writes: p of them in sequence on one line per superstep. At
// shm p = 2 on the 2-core VM the two designs measure the same, 0.45 us per
// empty counted superstep, medians of 8 alternated runs, about one
// core-to-core round trip there; the slots keep the transfers a process
// waits for from growing with p.)
//
// A process never reads its own slot back (its cumulative counts, its count
// for itself, its kind and superstep, its gather block's size are kept in
// the Board): the others
// have just read that line, and on this VM's EPYC re-reading it was a cache
// miss on every superstep's way out (shm p = 2: an empty counted superstep
// 0.46-0.50 -> 0.32-0.33 us, 2026-12-04).
//
// Collectives are numbered per process: the k-th counted/will_send superstep
// this process takes part in; a process writes slot k & 1, and counts in it
// are cumulative per parity (a process reads the growth since it last read
// that slot). A slot of parity k & 1 is rewritten only by collective k + 2,
// which no process joins before every process joined k + 1 -- after it read
// its result of k. Mixed kinds (will_send / counted / finalize) and processes
// joining from different supersteps (one used bspk_expect) are read from the
// slots, and from each process's published superstep.
//
// Block all-gathers (bspk_sync_allgather) use the segment too, without the
// counters: gather g (the g-th this process takes part in) has one slot per
// process and parity of g, whose first word says which gather and how many
// bytes it holds; a process writes its block, then that word (release), and
// reads the others' slots once their words name g. A slot of parity g & 1 is
// rewritten only by gather g + 2, which no process starts before every
// process has written its slot of g + 1 -- after it read all of g. A block of
// up to 48 bytes travels in one cache line, so two processes exchange one
// line each way: the cost of a shared-memory flag. Each process's record
// also says the superstep of its latest gather, so that processes mixing a
// gather with bspk_sync or bspk_expect find out (gather_mixed, gathering).
//
// The segment is a base/shm_segment.h SharedSegment: created by pid 0 under a
// random name, opened by the others, unlinked once all have mapped it.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/shm_segment.h"

namespace bspk::sync {

class Board {
 public:
  // Kinds of joining, one bit each (as wire::kSyncWillSend/Counted/Finalize).
  enum Kind : uint32_t { WillSend = 0, Counted = 1, Finalize = 2, NumKinds = 3 };

  // pid 0: create the segment for p processes under a fresh name starting with
  // `prefix` (returned by name()). Errors: BSPK_ERR_BOOT (shm_open/ftruncate/mmap).
  static Board* create(const std::string& prefix, int pid, int nprocs);
  // Others: open the segment pid 0 created. Errors: BSPK_ERR_BOOT.
  static Board* open(const std::string& name, int pid, int nprocs);
  Board(const Board&) = delete;
  Board& operator=(const Board&) = delete;

  const std::string& name() const { return seg_.name(); }
  // Remove the name from /dev/shm (pid 0, once every process has opened it).
  void unlink() const { seg_.unlink(); }

  // Join this process's next collective, for superstep s, with kind `kind`:
  // add v[d] for each d in dests[0..ndests) (or for every d when dests is null).
  void join(uint32_t s, Kind kind, const uint64_t* v, const int* dests, size_t ndests);

  struct Result {
    uint64_t total;             // messages due to this process
    uint32_t kinds;             // Kind bits that took part
    uint32_t per_kind[NumKinds];  // processes per kind
    bool same_step;             // every process joined from the same superstep
    int32_t first[NumKinds];    // lowest pid per kind (-1: none); only when kinds were mixed
    // Only when !same_step: the earliest superstep joined from and a process
    // that joined from it, and a process that joined from a later one.
    uint32_t min_step;
    int32_t min_pid, later_pid;
    uint32_t later_step;
    uint32_t min_kind;  // the Kind min_pid joined with (Finalize: it called bspk_finalize in min_step)
  };
  // Since the last join: true once every process has joined; fills r. Reads
  // the other processes' slot words (one cache line each) until then.
  bool poll(Result& r);
  // Processes that have joined the current collective so far (for messages).
  int joined_so_far() const;
  // Whether process j has joined the current collective.
  bool joined(int j) const;
  // A process that has left superstep s without joining the current
  // collective (it used bspk_expect), or -1.
  int left_without_joining(uint32_t s) const;
  // This process waits in superstep s under bspk_expect (published for
  // waiting_under_expect; a relaxed store, made now and then by a wait that
  // did not end at once: Engine::expect_still_waiting).
  void set_expect_waiting(uint32_t s) {
    rec(pid_).estep.store(uint64_t{s} + 1, std::memory_order_relaxed);
  }
  // A process other than this one that has said it waits in superstep s
  // under bspk_expect (set_expect_waiting), or -1: while this one is in the
  // count exchange of s, that is a mix of kinds neither would otherwise see
  // (the declared process has not left s, the counted ones never send to it).
  int waiting_under_expect(uint32_t s) const;
  // While this process waits in superstep s under bspk_expect: a process
  // other than this one that joined a collective from s (the count exchange
  // of a will_send, counted or finalizing bspk_sync there), or -1; *kind
  // the Kind it joined with.
  int joined_from(uint32_t s, Kind* kind) const;

  // ---- block all-gathers (bspk_sync_allgather)
  // The largest block (BSPK_SYNC_BLOCK_MAX).
  static constexpr size_t kBlockMax = 16384;
  // Publish this process's block for its next gather, joined from superstep s:
  // the concatenation of the iovcnt pieces at iov (at most kBlockMax bytes).
  void gather_publish(uint32_t s, const iovec* iov, int iovcnt);
  void gather_publish(uint32_t s, const void* data, size_t nbytes) {
    const iovec one{const_cast<void*>(data), nbytes};
    gather_publish(s, &one, 1);
  }
  // Process j's block of the current gather once j has published it (else
  // nullptr); *nbytes its size. Valid until this process's next gather.
  // This process's own block is answered without reading its slot back (a
  // line the others have read is no longer in this process's cache: poll).
  const unsigned char* gather_block(int j, size_t* nbytes) const;
  // Once every block of the current gather was read: the next one.
  void gather_done() { ++g_; }
  // While this process waits in a gather from superstep s: a process j that
  // has not published its block but left s (it used bspk_expect or finished a
  // counted bspk_sync) or joined the count exchange of s; -1 if none.
  // *counted: j joined the count exchange (else it left s).
  int gather_mixed(uint32_t s, bool* counted) const;
  // A process other than this one that published a gather block in
  // superstep s (while this one is in the count exchange of s), or -1.
  int gathering(uint32_t s) const;

  // The one CPU this process is bound to (-1: its affinity mask has several),
  // published before the start-up barrier for the others' cpu_mates().
  void set_cpu(int cpu) { rec(pid_).cpu.store(cpu + 1, std::memory_order_release); }
  // The other processes bound to the same single CPU as this one, in pid
  // order (empty if this one is not bound to a single CPU). Every process's
  // set_cpu must have happened before (past the start-up barrier).
  std::vector<int> cpu_mates() const;

  // This process's current superstep, published for the check above.
  void set_step(uint32_t s) { rec(pid_).step.store(s, std::memory_order_release); }

 private:
  struct alignas(64) Line {
    std::atomic<uint64_t> v;
  };
  // A count slot: this head, then p cumulative counts (uint64 each), in
  // count_lines(p) lines; written only by its process.
  struct CountHead {
    std::atomic<uint64_t> word;  // (collective number + 1, low 32 bits) << 32 | Kind, stored last (release)
    std::atomic<uint32_t> from;  // superstep joined from
    uint32_t unused;
  };
  struct alignas(64) Record {
    std::atomic<uint32_t> step;    // current superstep
    std::atomic<uint32_t> joined;  // collectives joined so far
    std::atomic<uint32_t> from;    // superstep the last one was joined from
    std::atomic<uint64_t> gstep;   // 1 + superstep of the latest gather joined, in 64 bits (0: none, also at s = 2^32 - 1)
    std::atomic<int32_t> cpu;      // 1 + the one CPU the process is bound to (0: several or not published)
    std::atomic<uint64_t> estep;   // 1 + the superstep it waits in under bspk_expect, in 64 bits (0: none)
  };
  // A slot's first line: which gather and size, then the block from byte 8.
  struct Slot {
    std::atomic<uint64_t> word;  // (gather number + 1) << 32 | nbytes
    unsigned char data[kBlockMax];
  };
  static constexpr size_t kSlotLines = (sizeof(Slot) + 63) / 64;
  Board(SharedSegment seg, int pid, int nprocs);
  static size_t bytes(int nprocs);
  static size_t count_lines(int nprocs) {
    return (sizeof(CountHead) + static_cast<size_t>(nprocs) * sizeof(uint64_t) + 63) / 64;
  }
  // Layout in 64-byte lines: [0] magic and p, then count slots[2][p]
  // (count_lines(p) lines each), then records[p], then gather
  // slots[2][p] (kSlotLines lines each).
  Line& line(size_t i) const { return static_cast<Line*>(base_)[i]; }
  CountHead& chead(int par, int j) const {
    return *reinterpret_cast<CountHead*>(
        &line(1 + (static_cast<size_t>(par) * nprocs_ + static_cast<size_t>(j)) * count_lines_));
  }
  std::atomic<uint64_t>* counts(int par, int j) const {
    return reinterpret_cast<std::atomic<uint64_t>*>(reinterpret_cast<char*>(&chead(par, j)) + sizeof(CountHead));
  }
  size_t records_line() const { return 1 + 2 * static_cast<size_t>(nprocs_) * count_lines_; }
  Record& rec(int j) const { return reinterpret_cast<Record*>(&line(records_line()))[j]; }
  Slot& slot(int par, int j) const {
    return *reinterpret_cast<Slot*>(&line(records_line() + static_cast<size_t>(nprocs_) +
                                          (static_cast<size_t>(par) * nprocs_ + static_cast<size_t>(j)) * kSlotLines));
  }
  // A count slot's word: collective k (its number + 1, low 32 bits) and the kind.
  static uint64_t count_seq(uint64_t k) { return (k + 1) & 0xFFFFFFFFull; }
  static uint64_t count_word(uint64_t k, Kind kind) { return count_seq(k) << 32 | kind; }
  uint64_t gather_word(size_t nbytes) const { return ((g_ + 1) & 0xFFFFFFFFull) << 32 | nbytes; }

  SharedSegment seg_;
  void* base_;
  int pid_, nprocs_;
  size_t count_lines_;
  uint64_t k_ = 0;          // collectives joined by this process
  uint32_t step_ = 0;       // superstep of the current collective
  bool pending_ = false;    // joined, result not read yet
  uint64_t self_count_ = 0;  // current collective: what this process added for itself (poll)
  Kind self_kind_ = Counted;  // ... and the kind it joined with
  uint64_t g_ = 0;          // gathers done by this process
  size_t own_bytes_ = 0;    // the size of this process's block in the current gather
  // Per parity and source: the count for this process last read in that slot.
  std::vector<uint64_t> read_[2];
  // Per parity and destination: the cumulative counts this process wrote in its own slot.
  std::vector<uint64_t> sent_[2];
};

}  // namespace bspk::sync
