// sync/board.h -- the count exchange through shared memory, for jobs whose
// processes all run on one host (BSPK_COUNT_EXCHANGE=auto|board).
//
// bspk_will_send and counted supersteps need, on every process t, the sum over
// all processes of the messages sent to t [BSPk §5]. Across hosts that takes
// messages (sync/tree.h: 2*ceil(log2 p) rounds). On one host the processes
// share a small segment instead: each adds its send counts into per-destination
// counters and bumps one arrival counter; when the arrival counter shows all p,
// each reads its own counter. An empty counted superstep then costs a few
// atomic operations and cache-line transfers, like a shared-memory barrier,
// instead of message rounds through the fabric provider.
//
// Collectives are numbered per process: the k-th counted/will_send superstep
// this process takes part in. Counters are cumulative and kept per parity of k;
// a process reads the growth since it last read that parity. That is safe
// without resetting anything: a process joins collective k+2 only after every
// process joined k+1, and each process reads its result of k before joining
// k+1. The arrival counter is cumulative over all collectives: collective k is
// complete once it reaches p*(k+1) (no process can have joined k+1 before then).
// Mixed kinds (will_send / counted / finalize) and processes joining from
// different supersteps (one used bspk_expect) are caught from per-parity sums
// of kinds and superstep numbers, and from each process's published superstep.
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

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

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
  };
  // Since the last join: true once every process has joined; fills r.
  bool poll(Result& r);
  // Processes that have joined the current collective so far (for messages).
  int joined_so_far() const;
  // A process that has left superstep s without joining the current
  // collective (it used bspk_expect), or -1.
  int left_without_joining(uint32_t s) const;

  // ---- block all-gathers (bspk_sync_allgather)
  // The largest block (BSPK_SYNC_BLOCK_MAX).
  static constexpr size_t kBlockMax = 16384;
  // Publish this process's block for its next gather, joined from superstep s.
  void gather_publish(uint32_t s, const void* data, size_t nbytes);
  // Process j's block of the current gather once j has published it (else
  // nullptr); *nbytes its size. Valid until this process's next gather.
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

  // This process's current superstep, published for the check above.
  void set_step(uint32_t s) { rec(pid_).step.store(s, std::memory_order_release); }

 private:
  struct alignas(64) Line {
    std::atomic<uint64_t> v;
  };
  // Everything a process touches when it joins with nothing sent lives in one
  // cache line, so an empty superstep moves that line once per process.
  struct alignas(64) Hot {
    std::atomic<uint64_t> arrived;      // joins, all collectives
    std::atomic<uint64_t> step_sum[2];  // per parity: sum of the supersteps joined from
    std::atomic<uint64_t> kind_sum[2];  // per parity: joins per kind, 16 bits each
  };
  struct alignas(64) Record {
    std::atomic<uint32_t> step;    // current superstep
    std::atomic<uint32_t> joined;  // collectives joined so far
    std::atomic<uint32_t> kind;    // Kind of the last one
    std::atomic<uint32_t> from;    // superstep it was joined from
    std::atomic<uint64_t> gstep;   // 1 + superstep of the latest gather joined, in 64 bits (0: none, also at s = 2^32 - 1)
  };
  // A slot's first line: which gather and size, then the block from byte 8.
  struct Slot {
    std::atomic<uint64_t> word;  // (gather number + 1) << 32 | nbytes
    unsigned char data[kBlockMax];
  };
  static constexpr size_t kSlotLines = (sizeof(Slot) + 63) / 64;
  Board(SharedSegment seg, int pid, int nprocs);
  static size_t bytes(int nprocs);
  // Layout in 64-byte lines: [0] magic and p, [1] the hot line, then
  // counts[2][p] (one line each: processes add to different ones), then
  // records[p], then gather slots[2][p] (kSlotLines lines each).
  Line& line(size_t i) const { return static_cast<Line*>(base_)[i]; }
  Hot& hot() const { return *reinterpret_cast<Hot*>(&line(1)); }
  Line& count(int par, int d) const { return line(2 + static_cast<size_t>(par) * nprocs_ + static_cast<size_t>(d)); }
  Record& rec(int j) const {
    return reinterpret_cast<Record*>(&line(2 + 2 * static_cast<size_t>(nprocs_)))[j];
  }
  Slot& slot(int par, int j) const {
    return *reinterpret_cast<Slot*>(&line(2 + 3 * static_cast<size_t>(nprocs_) +
                                          (static_cast<size_t>(par) * nprocs_ + static_cast<size_t>(j)) * kSlotLines));
  }
  uint64_t gather_word(size_t nbytes) const { return ((g_ + 1) & 0xFFFFFFFFull) << 32 | nbytes; }

  SharedSegment seg_;
  void* base_;
  int pid_, nprocs_;
  uint64_t k_ = 0;          // collectives joined by this process
  uint32_t step_ = 0;       // superstep of the current collective
  bool pending_ = false;    // joined, result not read yet
  uint64_t g_ = 0;          // gathers done by this process
  uint64_t last_count_[2] = {0, 0}, last_steps_[2] = {0, 0}, last_kinds_[2] = {0, 0};
};

}  // namespace bspk::sync
