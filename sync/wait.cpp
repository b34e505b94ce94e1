// sync/wait.cpp -- progress and waiting: polling the completion queue,
// spinning then blocking (or backing off where the provider has no wait
// object), the no-progress time-out, and errors found while progressing.
#include <bspk.h>
#include <sched.h>

#include <algorithm>
#include <ctime>

#include "base/clock.h"
#include "base/error.h"
#include "sync/engine.h"

namespace bspk::sync {

void Engine::raise_async(int code, const std::string& msg, bool waits) {
  pending_over_ = pending_over_ || !waits;
  if (pending_code_ == 0) {
    pending_code_ = code;
    pending_msg_ = msg;
    pending_more_ = 0;
  } else if (msg != pending_msg_ && pending_msg_.find("; also: " + msg) == std::string::npos) {
    // Kept, not dropped: up to 8 in full, then counted.
    if (++pending_more_ <= 8) pending_msg_ += "; also: " + msg;
  }
}

void Engine::throw_pending_error() {
  int c = pending_code_;
  std::string m = pending_msg_;
  if (pending_more_ > 8) m += strprintf("; and %u more", pending_more_ - 8);
  pending_code_ = 0;
  pending_msg_.clear();
  pending_more_ = 0;
  const bool over = pending_over_;
  pending_over_ = false;
  // [over] (base/error.h) whatever call delivers it, unless all it reports
  // is the pool limit met by arrivals: they wait, posted later, until the
  // program frees regions and syncs again (tests/fidelity_scenarios.cpp,
  // "nomem"). A BSPK_ERR_NOMEM that lost an arrival (bad_alloc, a comem
  // table that could not grow) is [over] like any other.
  throw Error(c, m, over);
}

void Engine::handle_error(const fabric::CompletionError& err) {
  if (err.canceled) return;
  // Which operation failed?
  for (auto& s : slots_)
    if (&s.ctx == err.context) {
      raise_async(BSPK_ERR_FABRIC, "a receive failed: " + err.message);
      if (!s.small) --large_posted_;
      post_slot(&s);
      return;
    }
  for (auto& b : body_slots_)
    if (&b.ctx == err.context) {
      raise_async(BSPK_ERR_FABRIC, strprintf("receiving a message body from pid %d failed: ", b.parts[0].h.src) +
                                       err.message);
      release_body(&b);
      return;
    }
  SendOp* op = err.context ? send_op_of(err.context) : nullptr;
  std::string what = op ? strprintf(op->user_read ? "a one-sided read from pid %d (superstep %u) failed: "
                                                  : "a send to pid %d (superstep %u) failed: ",
                                    op->dest, op->step)
                        : std::string("an operation failed: ");
  raise_async(BSPK_ERR_FABRIC, what + err.message);
  if (op) complete_op(op);
}

void Engine::progress() {
  deliver_self();
  if (!repost_.empty()) flush_reposts();
  fabric::Completion c[16];
  fabric::CompletionError err;
  ssize_t n = ep_.poll(c, 16, &err);
  if (n < 0) handle_error(err);
  for (ssize_t i = 0; i < n; ++i) dispatch(c[i]);
  if (!backlog_.empty()) retry_backlog();
}

// Waiting without a CQ wait object: keep polling and yielding the CPU for
// BSPK_YIELD_MS of idleness (a peer on this core gets it at once; a process
// alone on its core polls on), then sleep 50 us doubling to 1 ms between
// polls, so a long wait costs little CPU and wakes within ~1 ms of the data
// (at once, on one host with the rings: the sender rings a doorbell).
// The yielding phase is long (100 ms by default) because a sleep's late
// wake-up is paid by every superstep whose imbalance reaches it: with the
// former 2 ms, a superstep in which another process computed 3 ms more cost
// 81-137 us more than the computation (bench/imbalance.sh). Oversubscribed it
// stays 2 ms: there the yielders slow down the processes that compute.
// Oversubscribed, in the count board's or a gather's wait: once every
// process bound to this CPU has arrived too (hold), a yield could only hand
// the CPU to a process that waits for the same processes elsewhere, which
// would look and yield it back: two context switches of ~2.4 us each here
// (two processes handing one CPU back and forth through sched_yield), and the
// completion seen one switch later. So poll on instead, for at most
// kHoldMaxS of the wait (a process elsewhere could, rarely, need a mate's
// help to arrive: a flow-control credit), and yield as before after it.
// Measured 2026-12-02, 4 processes on 2 cores bound round-robin, the library
// without and with the hold alternated: a loop of empty bsp_syncs (board
// gathers) 5.33-6.60 (median 5.55) -> 4.25-5.48 (5.0) us per superstep over 8
// alternations, empty counted bspk_syncs 5.5 -> 4.9 (5); context switches per
// process and superstep 0.75-0.81 -> 0.52 (perf stat), where 0.5 is the floor
// (each core switches once per superstep). At 4 processes per CPU: no change.
void Engine::backoff(double idle_s, const std::function<bool()>* ready, const std::function<bool()>* hold) {
  if (hold && idle_s < kHoldMaxS && (*hold)()) {
    for (int i = 0; i < 32; ++i) __builtin_ia32_pause();
    return;
  }
  const double over = idle_s - opt_.yield_s;
  if (over < 0) {
    sched_yield();
    return;
  }
  double d = 50e-6;
  for (double t = 2e-3; t < over && d < 1e-3; t *= 2) d *= 2;
  // On one host with the rings, the nap ends as soon as a peer sends to this
  // process or joins the count board (fabric/local.h, "Napping"); `ready`
  // is looked at once more after this process said it naps, so that a join
  // just before is not slept through.
  ep_.nap(std::min(d, 1e-3), ready);
}

// One wait step: poll until spin_until, then back off (backoff() above), or
// with a CQ wait object block up to block_ms once the yielding phase is over
// (before it a process yields as without one: blocking at once cost a
// superstep with 1 ms of imbalance 93 instead of 32 us on tcp p = 2).
// With a CPU per process, a poll that finds nothing first lets the transport
// do what it can for a peer's transfer of this process's data
// (Transport::assist: on one host, copy part of a pulled message into its
// receiver's buffer); oversubscribed, that CPU time is the peers' own.
// `now` is the caller's idea of the time (it need not read the clock on every
// spin: at a few hundred nanoseconds per poll, the clock would be a tenth of
// the cost of a superstep that only waits for one small message).
bool Engine::wait_once(double spin_until, int block_ms, double now, const std::function<bool()>* ready,
                       const std::function<bool()>* hold) {
  if (deliver_self()) return true;
  if (!repost_.empty()) flush_reposts();
  retry_backlog();
  fabric::Completion c[16];
  fabric::CompletionError err;
  ssize_t n;
  const uint64_t taken = taken_;  // (arrivals poll() hands over without a completion: progress too)
  double t = now > 0 ? now : now_s();
  // A backlog (sends the transport could not take: a full queue or pull
  // ring) keeps a process polling, so that its sends go out as soon as there
  // is room -- but not past its spin phase when oversubscribed: the room is
  // made by a receiver that may need this CPU (a 5 MiB message to two
  // processes on shm, 3 processes on 2 cores: 4.0 ms a superstep while the
  // sender spun through its time slice, 0.36-0.39 ms yielding; 20 or 50 us
  // of spinning with a backlog first gave 0.40 and 0.69 ms; tcp p = 4, Mult:
  // no change). LocalTransport wakes a napping sender when it made room.
  if (t < spin_until || (!backlog_.empty() && !opt_.oversubscribed)) {
    n = ep_.poll(c, 16, &err);
    if (n == 0 && taken_ != taken) return true;
    if (n == 0 && !opt_.oversubscribed && ep_.assist()) return true;
  } else if (ep_.can_block() && !board_ && t - spin_until >= opt_.yield_s) {
    // (With the shared-memory board, completion of the count exchange is not
    // a fabric event: back off below instead of blocking in the CQ.)
    n = ep_.wait(c, 16, block_ms, &err);
  } else {
    n = ep_.poll(c, 16, &err);
    if (n == 0 && taken_ != taken) return true;
    if (n == 0 && !opt_.oversubscribed && ep_.assist()) return true;
    if (n == 0) backoff(now_s() - spin_until, ready, hold);
  }
  if (n < 0) {
    handle_error(err);
    return true;
  }
  for (ssize_t i = 0; i < n; ++i) dispatch(c[i]);
  retry_backlog();
  return n > 0 || taken_ != taken;
}

void Engine::wait_until(const std::function<bool()>& ready, const std::function<std::string()>& what, double now,
                        const std::function<bool()>* hold, bool shared) {
  throw_pending();  // errors found while progressing (e.g. more arrivals than declared)
  if (ready()) return;
  // Whatever this process waits for, it says so while it waits (bspk_sync
  // has said it already): the others' time-outs run only while no process
  // that could end their wait is computing (below).
  struct Mark {
    boot::Bootstrap& boot;
    const uint32_t step;
    const bool on;
    ~Mark() {
      if (on) boot.set_state(step, boot::ProcState::Running);
    }
  } mark{boot_, boot_.state_step(), boot_.state() == boot::ProcState::Running};
  if (mark.on) boot_.set_state(mark.step, boot::ProcState::InSync);
  double t = now > 0 ? now : now_s();
  double last_change = t, last_check = t;
  // The time-out's clock: it restarts at progress and whenever a process is
  // seen computing (or starting) in this superstep or an earlier one, which
  // may still send to this one or join its count exchange: a peer that takes
  // long (reading input, writing a checkpoint) is not a fault; a wait that
  // every process able to end it shares is (a too large bspk_expect, a
  // message never sent, mixed sync kinds not found otherwise). Nor is a
  // pause of this process itself: checks are 0.1 s apart while it runs, so a
  // longer gap between two means it was stopped (^Z, a batch system's
  // suspend, SIGSTOP of the whole job) or not scheduled; the clock restarts
  // then, so a job suspended for an hour resumes instead of timing out.
  double quiet_since = t;
  double spin_until = t + opt_.spin_s;
  uint64_t last_events = progress_events_;
  unsigned polls = 0;
  for (bool first = true;; first = false) {
    if (!first) {
      throw_pending();
      if (ready()) return;
    }
    wait_once(spin_until, 100, t, &ready, hold);
    // While spinning, read the clock on every 16th poll only; after that
    // (blocking or backing off) on every step.
    if (t >= spin_until || (++polls & 15) == 0) t = now_s();
    if (progress_events_ != last_events) {
      last_events = progress_events_;
      last_change = quiet_since = t;
      spin_until = t + opt_.spin_s;
      continue;
    }
    if (t - last_check > 0.1) {
      if (t - last_check > kPauseGap) quiet_since = t;
      last_check = t;
      if (boot_.computing_peer(step_) >= 0) quiet_since = t;
      const double limit = opt_.timeout_s + (shared ? kSharedWaitGraceS : 0);
      // A process that left BSPk after an error (its own report printed) ends
      // the job when it exits: that report, not this wait's, is the job's.
      // Its exit may take a while (writing its results, a sanitizer's leak
      // check), so hold the time-out for one more BSPK_SYNC_TIMEOUT.
      const int failed = t - quiet_since > limit ? boot_.failed_peer() : -1;
      if (t - quiet_since > limit + (failed >= 0 ? opt_.timeout_s : 0)) {
        const int stopped = boot_.stopped_peer();
        std::string note =
            stopped >= 0 ? "; pid " + std::to_string(stopped) + " is stopped (SIGSTOP or SIGTSTP; send it SIGCONT)" : "";
        if (failed >= 0)
          note += "; pid " + std::to_string(failed) + " left BSPk after an error and has not exited";
        fail(BSPK_ERR_TIMEOUT, "no progress for %.0f s in %s: %s%s (set BSPK_SYNC_TIMEOUT to wait longer)",
             opt_.timeout_s, boot_.step_text(step_).c_str(), what().c_str(), note.c_str());
      }
      if (!boot_.alive()) fail(BSPK_ERR_PEER, "the launcher is gone; ending superstep %u", step_);
      // Every frame slot starved (the pool at its limit, all frames held by
      // regions): nothing more can arrive until the program frees some, so
      // say so now rather than at the time-out.
      if ((!starved_.empty() || !body_waiting_.empty()) && t - last_change > 1.0) {
        flush_reposts();
        size_t large = 0;
        for (RecvSlot* s : starved_) large += !s->small;
        if (large == large_active_ || starved_.size() - large == opt_.small_rx_depth || !body_waiting_.empty())
          fail(BSPK_ERR_NOMEM,
               "superstep %u cannot receive: every %s receive slot waits for a free buffer (BSPK_POOL_LIMIT "
               "reached) while %s; free regions (received messages included) and call bspk_sync again",
               step_, large == large_active_ || !body_waiting_.empty() ? "frame" : "4 KiB", what().c_str());
      }
    }
  }
}

}  // namespace bspk::sync
