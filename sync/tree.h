// sync/tree.h -- a superstep-tagged all-reduce over a binomial tree rooted at
// pid 0: every process contributes a vector of `width` counts and four meta
// words for superstep s; vectors are summed and meta words merged up the tree
// (children before parent), and pid 0's total goes back down. 2*ceil(log2 p)
// message rounds; each message is one control message tagged with s (the
// vector as payload, the meta words in the header), flow controlled like data.
//
// Because every message carries s, trees of different supersteps never mix: a
// child's contribution that arrives before this process reached s is held in
// a per-superstep ring until it contributes too. The count exchange behind
// bspk_will_send and counted syncs is one Tree (sync/count.cpp); small
// collectives can own others, each with its own pair of kinds.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "sync/engine.h"
#include "sync/step_ring.h"
#include "sync/wire.h"

namespace bspk::sync {

// Four meta words that travel with a count exchange's contributions (kinds of
// sync seen, lowest pid per kind), merged by a function the owner supplies.
using ExchangeMeta = std::array<uint32_t, 4>;
using MergeExchangeMeta = void (*)(ExchangeMeta& acc, const ExchangeMeta& in);

// The merged meta words of one superstep's contributions so far.
struct MetaAcc {
  ExchangeMeta meta{};
  bool any = false;
  void add(const ExchangeMeta& in, MergeExchangeMeta merge) {
    if (any) {
      merge(meta, in);
    } else {
      meta = in;
      any = true;
    }
  }
};

// Every arrival of a count exchange first: false drops it (the owner has
// reported why).
using ExchangeAdmit = std::function<bool(uint32_t s, int src, const ExchangeMeta& meta)>;

// The start of every count-exchange arrival (Tree, Exchange): notes progress,
// reads the meta words from the header and asks `admit`; false: dropped.
inline bool accept_count(Engine& e, const Engine::Incoming& in, const ExchangeAdmit& admit, ExchangeMeta* meta) {
  e.note_progress();
  std::memcpy(meta->data(), in.h.u32, sizeof *meta);
  return !admit || admit(in.h.step, in.h.src, *meta);
}

class Tree {
 public:
  using Meta = ExchangeMeta;
  // Merge `in` into `acc` (the vectors are summed by the tree itself).
  using MergeMeta = MergeExchangeMeta;
  // The total of superstep s, once, on every process (total has `width` entries).
  using Result = std::function<void(uint32_t s, const uint64_t* total, const Meta& meta)>;
  using Admit = ExchangeAdmit;

  // Registers `up` and `down` with the engine's dispatch table.
  Tree(Engine& engine, wire::Kind up, wire::Kind down, size_t width, MergeMeta merge, Result result,
       Admit admit = {});

  // This process's contribution for superstep s (at most once per s).
  void contribute(uint32_t s, const uint64_t* v, const Meta& meta);

  struct Status {
    bool joined = false;    // this process contributed
    bool sent_up = false;   // its subtree's sum went to the parent (or it is the root and done)
    int children_got = 0;   // children whose contribution arrived
    uint32_t child_mask = 0;  // which children (by index in children()) contributed
  };
  Status status(uint32_t s);
  // The meta words merged from what arrived for s so far (all zero: nothing).
  Meta meta_so_far(uint32_t s);

  int parent() const { return parent_; }  // -1 at the root
  const std::vector<int>& children() const { return children_; }

 private:
  struct Slot {
    Status st;
    std::vector<uint64_t> sum;  // sized on first use, kept across reuse
    MetaAcc meta;
    void reset() {
      st = Status{};
      sum.clear();
      meta = MetaAcc{};
    }
  };
  Slot& slot(uint32_t s);
  void merge(Slot& sl, const uint64_t* v, size_t n, const Meta& meta);
  void on_msg(const Engine::Incoming& in, bool down);
  void try_send_up(uint32_t s);
  void finish(uint32_t s, const uint64_t* total, const Meta& meta);

  Engine& e_;
  wire::Kind up_, down_;
  size_t width_;
  MergeMeta merge_;
  Result result_;
  Admit admit_;
  int parent_;
  std::vector<int> children_;
  StepRing<Slot> ring_;
};

}  // namespace bspk::sync
