// sync/direct.h -- the count exchange in one message round: at the end of a
// counted or bspk_will_send superstep s every process sends every other
// process j one control message with the number of messages it sent to j
// (and the same meta words as the tree: the kinds of sync seen, the lowest pid
// per kind). A process knows its total once the p-1 counts for s have arrived.
// One round and p-1 small messages per process, against the tree's
// 2*ceil(log2 p) rounds: the better choice for small p across hosts
// (BSPK_COUNT_EXCHANGE=direct, or auto for p <= kDirectMaxProcs).
//
// Every message carries s; counts for a superstep this process has not
// reached yet are kept in a per-superstep ring until it gets there [RBS §5].
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "sync/engine.h"
#include "sync/step_ring.h"
#include "sync/tree.h"
#include "sync/wire.h"

namespace bspk::sync {

class Direct {
 public:
  using Meta = ExchangeMeta;
  using MergeMeta = MergeExchangeMeta;
  // This process's total for superstep s, once.
  using Result = std::function<void(uint32_t s, uint64_t total, const Meta& meta)>;
  // Every arrival first: false drops it (the owner has reported why).
  using Admit = std::function<bool(uint32_t s, int src, const Meta& meta)>;

  // Registers `kind` with the engine's dispatch table.
  Direct(Engine& engine, wire::Kind kind, MergeMeta merge, Result result, Admit admit);

  // This process's counts for superstep s (v has p entries; at most once per s).
  void contribute(uint32_t s, const uint64_t* v, const Meta& meta);

  struct Status {
    bool joined = false;  // this process contributed
    int got = 0;          // peers whose count arrived
  };
  Status status(uint32_t s);
  // Whether pid j's count for superstep s has arrived.
  bool has(uint32_t s, int j);

 private:
  struct Slot {
    Status st;
    uint64_t sum = 0;
    MetaAcc meta;
    bool done = false;          // result reported
    std::vector<uint8_t> from;  // per pid: its count arrived
    void reset() {
      st = Status{};
      done = false;
      sum = 0;
      meta = MetaAcc{};
      std::fill(from.begin(), from.end(), 0);
    }
  };
  Slot& slot(uint32_t s);
  void merge(Slot& sl, uint64_t v, const Meta& meta);
  void on_msg(const Engine::Incoming& in);
  void try_finish(uint32_t s, Slot& sl);

  Engine& e_;
  wire::Kind kind_;
  MergeMeta merge_;
  Result result_;
  Admit admit_;
  StepRing<Slot> ring_;
};

}  // namespace bspk::sync
