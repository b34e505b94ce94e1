// sync/engine.cpp -- the superstep itself: construction, the dispatch table,
// bspk_sync (sync) and the move to the next superstep (advance). The other
// concerns are in tx, rx, flow, count, wait and startup.cpp.
#include "sync/engine.h"

#include <bspk.h>
#include <sched.h>

#include <algorithm>

#include "base/clock.h"
#include "base/error.h"
#include "sync/board.h"
#include "sync/exchange.h"
#include "sync/tree.h"

namespace bspk::sync {

Engine::Engine(int pid, int nprocs, fabric::Transport& ep, comem::FramePool& frames, comem::FramePool& small,
               boot::Bootstrap& boot, Stats& stats, const Options& opt)
    : pid_(pid),
      nprocs_(nprocs),
      ep_(ep),
      frames_(frames),
      small_(small),
      headers_(&ep, sizeof(wire::Header), 0, size_t{256} << 10),
      boot_(boot),
      stats_(stats),
      opt_(opt),
      ring_(opt.max_ahead) {
  headers_.prefault();  // header slots receive arrivals (comem/pool.h)
  size_t p = static_cast<size_t>(nprocs);
  if (p * sizeof(uint64_t) > frames.frame_size())
    fail(BSPK_ERR_ARG,
         "%d processes need %zu-byte count vectors, more than one frame (%zu bytes); raise "
         "BSPK_FRAME_SIZE",
         nprocs, p * sizeof(uint64_t), frames.frame_size());
  sent_.assign(p, 0);
  declared_vec_.assign(p, 0);
  step_ = opt.first_step;
  joined_upto_ = opt.first_step;
  known_.assign(p, opt.first_step);  // every process starts there
  queried_.assign(p, opt.first_step);
  notify_at_.assign(p, 0);
  notify_set_.assign(p, 0);
  blocked_.resize(p);
  split_next_.assign(p, 0);
  whole_frames_.assign(p, 0);
  body_next_.assign(p, 0);
  body_early_.resize(p);
  body_open_.assign(p, nullptr);
  body_frames_ = static_cast<uint32_t>(
      std::max<size_t>(1, std::min<size_t>({opt.split_frames, ep.iov_limit(), wire::kMaxBodyFrames})));
  // The engine's own kinds go through the same table as the layers' above.
  on(wire::kStepQuery, [this](const Incoming& in) {
    on_step_query(in.h);
    return false;
  });
  on(wire::kStepNotice, [this](const Incoming& in) {
    note_peer_step(in.h.src, in.h.u32[0]);
    if (in.h.u32[1] == wire::kNoticeExpectWaiting) {
      expect_notice_ = true;
      expect_notice_step_ = in.h.u32[0];
      expect_notice_pid_ = in.h.src;
    }
    return false;
  });
  on(wire::kHello, [this](const Incoming& in) {
    on_hello(in.h);
    return false;
  });
  auto merge = [](Tree::Meta& acc, const Tree::Meta& in) {
    acc[0] |= in[0];  // kinds of sync seen
    for (int b = 1; b < 4; ++b) {  // lowest pid per kind (-1: none)
      auto a = static_cast<int32_t>(acc[b]), x = static_cast<int32_t>(in[b]);
      if (x >= 0 && (a < 0 || x < a)) acc[b] = in[b];
    }
  };
  auto admit = [this](uint32_t s, int src, const Tree::Meta& meta) { return admit_count(s, src, meta); };
  counts_ = std::make_unique<Tree>(
      *this, wire::kCollUp, wire::kCollDown, p, merge,
      [this](uint32_t s, const uint64_t* total, const Tree::Meta& meta) { count_result(s, total[pid_], meta); },
      admit);
  exchange_ = std::make_unique<Exchange>(
      *this, wire::kCountExchange,
      opt_.count_exchange == Options::Exchange::Halving ? ExchangePlan::halving(pid_, p) : ExchangePlan::direct(pid_, p),
      merge, [this](uint32_t s, uint64_t total, const Exchange::Meta& meta) { count_result(s, total, meta); }, admit);
  carry_on_ = opt_.count_carry && opt_.count_exchange == Options::Exchange::Direct && p > 1;
  carry_now_ = carry_on_;
  held_.assign(static_cast<size_t>(p), nullptr);
  carried_.assign(static_cast<size_t>(p), 0);
}

Engine::~Engine() {
  ep_.set_arrival_sink(nullptr);
  if (sink_buf_) small_.free(sink_buf_);
  // Registrations of program memory the layers above did not release (a
  // BSPlib program ending with variables registered): the domain is still
  // open here (api/init.cpp closes the endpoint first, the domain last).
  for (auto& [handle, mr] : user_mrs_) ep_.deregister(mr);
  for (SendOp* op : all_ops_) delete op;
}

void Engine::use_board(std::unique_ptr<Board> board) {
  board_ = std::move(board);
  board_->set_step(step_);  // before the start-up barrier: no peer reads it earlier
  cpu_set_t set;
  CPU_ZERO(&set);
  int cpu = -1;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) == 1)
    for (int c = 0; c < CPU_SETSIZE && cpu < 0; ++c)
      if (CPU_ISSET(c, &set)) cpu = c;
  board_->set_cpu(cpu);  // (for cpu_mates, read past the start-up barriers)
  carry_on_ = carry_now_ = false;  // (no count messages to save)
}

void Engine::on(wire::Kind kind, Handler h) {
  if (handlers_[kind]) fail(BSPK_ERR_INTERNAL, "message kind %u registered twice", unsigned(kind));
  handlers_[kind] = std::move(h);
}

void Engine::sync(bool finalizing) {
  finalizing_ = finalizing;
  flush_split();  // the layers flush per message; nothing may stay held past here
  // Held messages go now, with this process's counts when the superstep is
  // counted and joins the direct exchange here (not a second time).
  if (!held_dests_.empty())
    release_held(mode_ == Mode::None && !finalizing && !board_ && !wire::step_before(step_, joined_upto_));
  deliver_self();
  // The fast paths below may not touch the fabric at all (the board, or
  // everything declared already here): push on our control messages still
  // leaving, and look for arrivals at least every 16th superstep, so that a
  // control message (a copy's refusal, a directory question) is seen within
  // a few supersteps even by a process that never has to wait.
  if ((++syncs_ & 15) == 0) progress();
  else progress_if_busy();
  throw_pending();
  const uint32_t s = step_;
  if (mode_ == Mode::WillSend && !finalizing) {
    for (int j = 0; j < nprocs_; ++j)
      if (sent_[j] != declared_vec_[j])
        fail(BSPK_ERR_COUNT,
             "bspk_will_send declared %llu message(s) to pid %d in superstep %u, but %llu were sent",
             (unsigned long long)declared_vec_[j], j, s, (unsigned long long)sent_[j]);
  }
  if (finalizing && mode_ == Mode::Expect) {
    fail_over(BSPK_ERR_MODE, "bspk_expect was declared in the final superstep %u; "
              "the final superstep's messages are counted by the runtime, do not declare them", s);
  }
  if (mode_ != Mode::Expect) {
    // Once per superstep: a sync that failed (an [over] error) and is called
    // again for the same superstep must not contribute its counts twice.
    if (!wire::step_before(s, joined_upto_)) {
      join_count_exchange(s, finalizing);
      joined_upto_ = s + 1;
    }
    // Shared-memory count exchange: the others usually join within a few
    // hundred nanoseconds; look at the board that long before the general
    // wait with its clock reads (without a spin phase -- BSPK_SPIN_US 0, the
    // default when processes outnumber CPUs -- twice: the others may need
    // this CPU to join). Once the board has the total, the
    // messages still due are in the rings (each sender pushed them before it
    // joined): take them in here too.
    if (board_ && pending_code_ == 0)
      for (int i = 0, looks = opt_.spin_s > 0 ? 64 : 2; i < looks; ++i) {
        if (counts_complete(s)) {
          finish_step(s);
          return;
        }
        // Messages that are already in the rings are taken in while the
        // board fills, not after it (then the board's line and the ring's
        // came one after the other): shm, p = 2, one word to each process
        // (As Total, counted), old and new library alternated three times,
        // 0.59-0.77 -> 0.48-0.53 us. An empty counted superstep only looks
        // at the ring words (may_have_arrivals), not into the provider.
        if (state(s).have_result || ep_.may_have_arrivals()) {
          progress();
          if (pending_code_ != 0) break;  // reported by the general wait below
        }
      }
    // Without the board, a total known at the join (p = 1, where this
    // process's counts are the total: join_count_exchange; or the last count
    // message came before this process joined) completes the superstep
    // here, without the general wait's clock reads and callbacks. With the
    // p = 1 join, a counted empty superstep at p = 1 went from 962 to 548
    // instructions (callgrind), 0.13 to 0.06 us.
    if (!board_ && pending_code_ == 0 && state(s).have_result && counts_complete(s)) {
      finish_step(s);
      return;
    }
  }
  // Fast path of a lazy barrier: everything declared has arrived and our sends
  // are done, so leave without touching the clock or the network; else, on
  // one host (the rings: a message is a few hundred nanoseconds away) and
  // with a CPU per process (else the sender may need this one), poll a little
  // before the general wait.
  if (mode_ == Mode::Expect && pending_code_ == 0) {
    const StepState& st = state(s);
    for (int i = 0;; ++i) {
      if (st.arrived == static_cast<uint64_t>(declared_expect_) && st.outstanding == 0) {
        finish_step(s);
        return;
      }
      if (!board_ || opt_.spin_s == 0 || i == 64) break;
      progress();
      if (pending_code_ != 0) break;  // reported by the general wait below
    }
  }
  // (bspk_finalize's own superstep keeps saying so: a process that leaves
  // after its bspk_finalize failed is reported as such.)
  boot_.set_state(s, finalizing ? boot::ProcState::Finalizing : boot::ProcState::InSync);

  struct WaitClock {  // adds the time spent here to the stats on every exit, errors included
    double t0;
    double& total;
    ~WaitClock() { total += now_s() - t0; }
  } wait_clock{now_s(), stats_.sync_wait_s};
  // Oversubscribed, on the board: while the processes sharing this CPU have
  // joined too and the board is not complete, yield to none of them (wait.cpp).
  std::function<bool()> hold;
  if (board_ && mode_ != Mode::Expect && !cpu_mates().empty())
    hold = [&] { return !state(s).have_result && mates_arrived([&](int j) { return board_->joined(j); }); };
  // Under bspk_expect the wait is for this process's own declared arrivals;
  // otherwise for a count exchange every process joins.
  wait_until([&] { return counts_complete(s); }, [&] { return waiting_for(s); }, wait_clock.t0,
             hold ? &hold : nullptr, /*shared=*/mode_ != Mode::Expect);
  finish_step(s);
}

const std::vector<int>& Engine::cpu_mates() {
  if (!mates_known_) {
    if (board_ && opt_.oversubscribed) mates_ = board_->cpu_mates();
    mates_known_ = true;
  }
  return mates_;
}

void Engine::finish_step(uint32_t s) {
  for (auto& f : boundary_) f(s);
  advance();
}

void Engine::advance() {
  ++step_;
  stats_.supersteps++;
  if (mode_ == Mode::WillSend) std::fill(declared_vec_.begin(), declared_vec_.end(), 0);
  carry_now_ = carry_on_ && mode_ == Mode::None;
  mode_ = Mode::None;
  declared_expect_ = 0;
  suspect_since_ = 0;
  for (int d : sent_used_) sent_[static_cast<size_t>(d)] = whole_frames_[static_cast<size_t>(d)] = 0;  // O(destinations used)
  sent_used_.clear();
  boot_.set_state(step_, boot::ProcState::Running);
  if (board_) board_->set_step(step_);
  if (!waiters_.empty()) notify_waiters();
  for (auto& f : advance_) f(step_);
}

}  // namespace bspk::sync
