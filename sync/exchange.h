// sync/exchange.h -- the count exchange in rounds of messages, following a
// plan: at the end of a counted or bspk_will_send superstep s every process
// holds a vector of p counts (the messages it sent to each pid) and needs the
// sum of entry `pid` over all processes (the messages it will receive), plus
// the merged meta words (the kinds of sync seen, the lowest pid per kind).
//
// Two plans (BSPK_COUNT_EXCHANGE, chosen job-wide in sync/options.cpp):
//   direct   one round: every process sends every other process j its count
//            for j. p-1 messages per process, one latency.
//   halving  recursive halving (a reduce-scatter; Thakur, Rabenseifner and
//            Gropp, "Optimization of collective communication operations in
//            MPICH", IJHPCA 2005, section 4.2): with p' the largest power of
//            two <= p, ceil(log2 p') rounds of one message per process, the
//            vector halved each round (p'/2, p'/4, .. 1 entries); in round k
//            pid i swaps with i XOR p'/2^(k+1) the half the partner keeps. The
//            p - p' processes above p' first hand their whole vector to pid
//            i - p' and get their total back from it at the end (two rounds
//            more). log2 p' messages per process instead of p-1: the choice
//            with more processes than cores.
// The meta words travel in every message's header and are merged (an
// idempotent merge), so in either plan every process ends with all processes'
// meta words. A message of one entry (every direct one, the last round of
// halving) carries it in the header's nelems field: 64 bytes, no payload,
// which tcp;ofi_rxm can inject (inject_size 64); longer ones carry the
// entries as payload (nelems = their number).
//
// A process may add a message into its partial sums as soon as it arrives,
// even one of a later round: a round's message only carries entries of the
// half the receiver keeps, and it never sends those again. A send waits only
// for the arrivals before it in the plan. Every message carries s; messages
// for a superstep this process has not reached yet are kept in a
// per-superstep ring until it gets there [RBS §5].
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "sync/engine.h"
#include "sync/step_ring.h"
#include "sync/tree.h"
#include "sync/wire.h"

namespace bspk::sync {

// What one process sends and receives in a count exchange.
struct ExchangePlan {
  struct Send {
    int dest;
    size_t needs;                 // the first `needs` sources must have arrived first
    std::vector<uint32_t> elems;  // vector entries it carries, in this order
  };
  std::vector<Send> sends;  // in the order they are sent
  // The processes whose message this one waits for, and the entries each
  // carries (in the sender's order), in the order the sends need them.
  std::vector<int> sources;
  std::vector<std::vector<uint32_t>> source_elems;

  static ExchangePlan direct(int me, int p);
  static ExchangePlan halving(int me, int p);
};

class Exchange {
 public:
  using Meta = ExchangeMeta;
  using MergeMeta = MergeExchangeMeta;
  // This process's total for superstep s, once.
  using Result = std::function<void(uint32_t s, uint64_t total, const Meta& meta)>;
  using Admit = ExchangeAdmit;

  // Registers `kind` with the engine's dispatch table.
  Exchange(Engine& engine, wire::Kind kind, ExchangePlan plan, MergeMeta merge, Result result, Admit admit);

  // This process's counts for superstep s (v has p entries; at most once per
  // s). carried (p entries, direct plan): 1 where the count for that pid
  // already went with a data message (wire::kFlagCount): no message for it.
  void contribute(uint32_t s, const uint64_t* v, const Meta& meta, const std::vector<uint8_t>& carried);

  struct Status {
    bool joined = false;  // this process contributed
    int got = 0;          // sources whose message arrived
  };
  Status status(uint32_t s);
  // The meta words merged from what arrived for s so far (all zero: nothing).
  Meta meta_so_far(uint32_t s);
  // Whether pid j's message for superstep s has arrived.
  bool has(uint32_t s, int j);
  // The pids this process waits for (every one sends to it before it can
  // leave the superstep).
  const std::vector<int>& sources() const { return plan_.sources; }
  // The plan's sends, in order (each destination waits for this process's
  // message, directly or through the ones before it).
  const std::vector<ExchangePlan::Send>& sends() const { return plan_.sends; }

 private:
  struct Slot {
    Status st;
    std::vector<uint64_t> acc;  // partial sums (p entries)
    MetaAcc meta;
    size_t sent = 0;            // plan sends done
    bool done = false;          // result reported
    std::vector<uint8_t> carried;  // per pid: its entry went with a data message (direct plan)
    std::vector<uint8_t> from;  // per source (plan order): its message arrived
    void reset() {
      st = Status{};
      sent = 0;
      done = false;
      meta = MetaAcc{};
      std::fill(acc.begin(), acc.end(), 0);
      std::fill(from.begin(), from.end(), 0);
      carried.clear();
    }
  };
  Slot& slot(uint32_t s);
  void on_msg(const Engine::Incoming& in);
  void advance(uint32_t s, Slot& sl);

  Engine& e_;
  wire::Kind kind_;
  ExchangePlan plan_;
  std::vector<int> source_of_;  // pid -> index in plan_.sources, or -1
  std::vector<uint64_t> out_;   // a send's entries
  MergeMeta merge_;
  Result result_;
  Admit admit_;
  StepRing<Slot> ring_;
};

}  // namespace bspk::sync
