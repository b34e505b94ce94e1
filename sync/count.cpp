// sync/count.cpp -- how many messages a process waits for in a superstep:
// bspk_expect (declared, no traffic), bspk_will_send (declared vectors summed
// over the count tree), or counted (the actual send counts summed over the
// same tree); and the diagnosis of processes mixing those kinds [BSPk §5].
#include <bspk.h>

#include "base/clock.h"
#include "base/error.h"
#include "sync/board.h"
#include "sync/exchange.h"
#include "sync/engine.h"
#include "sync/tree.h"

namespace bspk::sync {

void Engine::expect(int64_t n) {
  throw_pending();
  if (n < 0) fail(BSPK_ERR_ARG, "negative message count %lld", (long long)n);
  if (mode_ != Mode::None)
    fail(BSPK_ERR_MODE, "this superstep already has a %s declaration",
         mode_ == Mode::Expect ? "bspk_expect" : "bspk_will_send");
  StepState& st = state(step_);
  if (exchange_got(step_) > 0 || st.have_result) {
    if (const int32_t f = finalizer_seen(step_); f >= 0)
      fail(BSPK_ERR_PEER,
           "pid %d called bspk_finalize in superstep %u while this process called bspk_expect there: every "
           "process must finalize in the same superstep",
           f, step_);
    // [over], like every mixed-kinds error (bspk.h, Return codes): the
    // others wait in a count exchange this process was not going to join,
    // and whether the mix is found here or in bspk_sync is a matter of timing.
    fail_over(BSPK_ERR_MODE,
              "mixed synchronisation kinds in superstep %u: other processes are already summing send counts for "
              "it (they used bspk_will_send or no declaration): kinds may not be mixed",
              step_);
  }
  mode_ = Mode::Expect;
  declared_expect_ = n;
  if (st.arrived > static_cast<uint64_t>(n))
    fail(BSPK_ERR_COUNT, "more messages than declared: bspk_expect(%lld), but %llu messages for this superstep have already arrived",
         (long long)n, (unsigned long long)st.arrived);
}

Mode Engine::withdraw(int64_t* m, int* v) {
  const Mode was = mode_;
  if (m) *m = was == Mode::Expect ? declared_expect_ : 0;
  for (int j = 0; v && j < nprocs_; ++j)
    v[j] = was == Mode::WillSend ? static_cast<int>(declared_vec_[static_cast<size_t>(j)]) : 0;
  if (was == Mode::WillSend) std::fill(declared_vec_.begin(), declared_vec_.end(), 0);
  mode_ = Mode::None;
  declared_expect_ = 0;
  return was;
}

void Engine::will_send(const int* v) {
  throw_pending();
  if (!v) fail(BSPK_ERR_ARG, "NULL array");
  for (int j = 0; j < nprocs_; ++j)
    if (v[j] < 0) fail(BSPK_ERR_ARG, "negative count %d for pid %d", v[j], j);
  if (mode_ != Mode::None)
    fail(BSPK_ERR_MODE, "this superstep already has a %s declaration",
         mode_ == Mode::Expect ? "bspk_expect" : "bspk_will_send");
  mode_ = Mode::WillSend;
  for (int j = 0; j < nprocs_; ++j) declared_vec_[static_cast<size_t>(j)] = static_cast<uint64_t>(v[j]);
}

// Join the count exchange of superstep s with this process's vector: the
// declared one (will_send) or the actual send counts. The meta words say which
// kind of sync this process used (and its pid, for the mixing diagnosis).
void Engine::join_count_exchange(uint32_t s, bool finalizing) {
  const auto& mine = (mode_ == Mode::WillSend) ? declared_vec_ : sent_;
  if (board_) {
    Board::Kind k = finalizing ? Board::Finalize : (mode_ == Mode::WillSend ? Board::WillSend : Board::Counted);
    if (mode_ == Mode::WillSend)
      board_->join(s, k, mine.data(), nullptr, 0);
    else
      board_->join(s, k, mine.data(), sent_used_.data(), sent_used_.size());
    board_polls_ = 0;
    ep_.wake_local();  // a process napping in its wait may be waiting for this join
    return;
  }
  Tree::Meta meta = {0, uint32_t(-1), uint32_t(-1), uint32_t(-1)};
  int b = finalizing ? 2 : (mode_ == Mode::WillSend ? 0 : 1);
  meta[0] = finalizing ? wire::kSyncFinalize : (mode_ == Mode::WillSend ? wire::kSyncWillSend : wire::kSyncCounted);
  meta[1 + b] = static_cast<uint32_t>(pid_);
  if (nprocs_ == 1) {  // this process's own counts are the total: no rounds to run
    count_result(s, mine[0], meta);
    return;
  }
  if (count_rounds()) {
    exchange_->contribute(s, mine.data(), meta, carried_);
    for (int d : sent_used_) carried_[static_cast<size_t>(d)] = 0;
  } else
    counts_->contribute(s, mine.data(), meta);
}

// A tree message for superstep s, before it is used: a sender summing counts
// for a superstep in which this process used bspk_expect (or has already left
// it) mixed kinds.
bool Engine::admit_count(uint32_t s, int src, const Tree::Meta& meta) {
  if (wire::step_before(s, step_) || (s == step_ && mode_ == Mode::Expect && !exchange_joined(s))) {
    int32_t first[3] = {int32_t(meta[1]), int32_t(meta[2]), int32_t(meta[3])};
    if ((meta[0] & wire::kSyncFinalize) && first[2] >= 0) {
      raise_async(BSPK_ERR_PEER,
                  strprintf("pid %d called bspk_finalize in superstep %u while this process called bspk_sync there "
                            "(under bspk_expect): every process must finalize in the same superstep",
                            first[2], s));
      return false;
    }
    raise_async(BSPK_ERR_MODE,
                strprintf("mixed synchronisation kinds in superstep %u: this process used "
                          "bspk_expect, but pid %d took part in a %s exchange (%s)",
                          s, src, (meta[0] & wire::kSyncWillSend) ? "bspk_will_send" : "counted",
                          kinds_text(meta[0] | wire::kSyncExpect, first).c_str()));
    return false;
  }
  return true;
}

bool Engine::exchange_joined(uint32_t s) {
  return count_rounds() ? exchange_->status(s).joined : counts_->status(s).joined;
}

void Engine::fail_left_without_joining(uint32_t s, int j, bool waiting) {
  if (finalizing_)
    fail(BSPK_ERR_PEER,
         "this process called bspk_finalize in superstep %u while pid %d called bspk_sync there (under "
         "bspk_expect, %s): every process must finalize in the same superstep",
         s, j, waiting ? "it waits for messages" : "so it went on");
  if (waiting)
    fail_over(BSPK_ERR_MODE,
              "mixed synchronisation kinds in superstep %u: pid %d called bspk_sync there under bspk_expect (it "
              "waits for its declared messages without joining a count exchange), this process a %s bspk_sync",
              s, j, mode_ == Mode::WillSend ? "bspk_will_send" : "counted");
  fail_over(BSPK_ERR_MODE,
            "mixed synchronisation kinds in superstep %u: pid %d left it without joining the %s count exchange (it "
            "must have used bspk_expect)",
            s, j, mode_ == Mode::WillSend ? "bspk_will_send" : "message");
}

void Engine::check_expect_on_board(uint32_t s) {
  board_->set_expect_waiting(s);
  Board::Kind k;
  const int j = board_->joined_from(s, &k);
  if (j < 0) return;
  if (k == Board::Finalize)
    fail(BSPK_ERR_PEER,
         "pid %d called bspk_finalize in superstep %u while this process called bspk_sync there (under "
         "bspk_expect): every process must finalize in the same superstep",
         j, s);
  fail_over(BSPK_ERR_MODE,
            "mixed synchronisation kinds in superstep %u: this process used bspk_expect, but pid %d took part in a "
            "%s exchange",
            s, j, k == Board::WillSend ? "bspk_will_send" : "counted");
}

void Engine::announce_expect_wait(uint32_t s) {
  if (expect_wait_step_ != s || expect_wait_since_ == 0) {
    expect_wait_step_ = s;
    expect_wait_since_ = now_s();
    expect_announced_ = false;
    return;
  }
  if (expect_announced_ || now_s() - expect_wait_since_ < kExpectNoticeS) return;
  expect_announced_ = true;
  uint32_t inl[4] = {s, wire::kNoticeExpectWaiting, 0, 0};
  if (count_rounds()) {
    for (const ExchangePlan::Send& d : exchange_->sends()) send_ctrl(d.dest, wire::kStepNotice, step_, inl, nullptr, 0, false);
  } else if (counts_->parent() >= 0) {
    send_ctrl(counts_->parent(), wire::kStepNotice, step_, inl, nullptr, 0, false);
  }
}

int32_t Engine::finalizer_seen(uint32_t s) {
  StepState& st = state(s);
  if (st.have_result) return (st.kinds & wire::kSyncFinalize) ? st.first[2] : -1;
  if (board_) return -1;  // (the board's result comes all at once)
  const ExchangeMeta m = count_rounds() ? exchange_->meta_so_far(s) : counts_->meta_so_far(s);
  return (m[0] & wire::kSyncFinalize) ? static_cast<int32_t>(m[3]) : -1;
}

int Engine::exchange_got(uint32_t s) {
  return count_rounds() ? exchange_->status(s).got : counts_->status(s).children_got;
}

void Engine::count_result(uint32_t s, uint64_t mine, const Tree::Meta& meta) {
  StepState& st = state(s);
  st.have_result = true;
  st.result = mine;
  st.kinds = meta[0];
  for (int b = 0; b < 3; ++b) st.first[b] = static_cast<int32_t>(meta[1 + b]);
}

// The board's result for superstep s, once every process has joined; throws
// if a process joined from another superstep or left s without joining.
bool Engine::board_complete(uint32_t s) {
  Board::Result r;
  if (!board_->poll(r)) {
    // Now and then (not on every spin): has a process left s some other way?
    if ((++board_polls_ & 255) == 0) {
      if (int g = board_->gathering(s); g >= 0)
        fail_over(BSPK_ERR_MODE,
                  "mixed synchronisation kinds in superstep %u: pid %d called bspk_sync_allgather (the superstep of "
                  "a collective such as bspk_allreduce, or of BSPlib's bsp_sync), this process a %s bspk_sync",
                  s, g, mode_ == Mode::WillSend ? "bspk_will_send" : "counted");
      int j = board_->left_without_joining(s);
      if (j >= 0) fail_left_without_joining(s, j);
      if (j = board_->waiting_under_expect(s); j >= 0) fail_left_without_joining(s, j, /*waiting=*/true);
    }
    return false;
  }
  note_progress();
  if (!r.same_step && r.min_kind == Board::Finalize)
    // The earliest joiner finalized there; the later one passed that
    // superstep by a bspk_sync, which joined no count exchange: a declared one.
    fail(BSPK_ERR_PEER,
         "pid %d called bspk_finalize in superstep %u while pid %d called bspk_sync there (under bspk_expect, so "
         "it went on to superstep %u): every process must finalize in the same superstep",
         r.min_pid, r.min_step, r.later_pid, r.later_step);
  if (!r.same_step)
    fail_over(BSPK_ERR_MODE,
              "mixed synchronisation kinds in superstep %u: pid %d joined the count exchange in superstep %u, "
              "pid %d only in superstep %u (it used bspk_expect in between while others did not declare or "
              "used bspk_will_send)",
              r.min_step, r.min_pid, r.min_step, r.later_pid, r.later_step);
  StepState& st = state(s);
  st.have_result = true;
  st.result = r.total;
  st.kinds = r.kinds << 1;  // Board::Kind bit b is wire::kSyncWillSend << b
  for (int b = 0; b < 3; ++b) st.first[b] = r.first[b];
  return true;
}

// The wait condition of bspk_sync for superstep s; throws on a detected error.
bool Engine::counts_complete(uint32_t s) {
  StepState& st = state(s);
  if (board_ && mode_ != Mode::Expect && !st.have_result && !board_complete(s)) return false;
  if (!board_ && mode_ != Mode::Expect && expect_notice_ && expect_notice_step_ == s && !st.have_result)
    fail_left_without_joining(s, expect_notice_pid_, /*waiting=*/true);
  if (mode_ != Mode::Expect && st.have_result) {
    uint32_t k = st.kinds;
    if (__builtin_popcount(k) > 1) {
      if (k & wire::kSyncFinalize)
        fail(BSPK_ERR_PEER,
             "in superstep %u some processes called bspk_finalize while others called "
             "bspk_sync (%s): every process must finalize in the same superstep",
             s, kinds_text(k, st.first).c_str());
      fail_over(BSPK_ERR_MODE, "mixed synchronisation kinds in superstep %u: %s", s, kinds_text(k, st.first).c_str());
    }
  }
  if (mode_ != Mode::Expect && !board_ && count_rounds() && !st.have_result) {
    // A peer that shows activity in a later superstep without having sent its
    // count for this one has either left it some other way (it used
    // bspk_expect) or its count is still on the way: a peer may leave s as
    // soon as it has the others' counts, and the provider need not deliver
    // its messages in order. So only a count still missing a second after the
    // peer was seen ahead is a mixed-kinds error.
    int ahead = -1;
    for (int j : exchange_->sources())
      if (ahead < 0 && wire::step_after(known_[static_cast<size_t>(j)], s) && !exchange_->has(s, j)) ahead = j;
    if (ahead < 0) {
      suspect_since_ = 0;
    } else if (suspect_since_ == 0) {
      suspect_since_ = now_s();
    } else if (now_s() - suspect_since_ > kMixedGraceS) {
      fail_left_without_joining(s, ahead);
    }
  }
  if (mode_ != Mode::Expect && !board_ && !count_rounds()) {
    Tree::Status ts = counts_->status(s);
    if (!ts.sent_up) {
      // A child that shows activity in a later superstep without having
      // contributed to this one left it some other way: it used bspk_expect.
      const auto& ch = counts_->children();
      for (size_t c = 0; c < ch.size(); ++c)
        if (!(ts.child_mask & (1u << c)) && wire::step_after(known_[ch[c]], s))
          fail_left_without_joining(s, ch[c]);
    }
  }
  bool known = (mode_ == Mode::Expect) || st.have_result;
  uint64_t due = (mode_ == Mode::Expect) ? static_cast<uint64_t>(declared_expect_) : st.result;
  if (known && st.arrived > due) {
    fail(BSPK_ERR_COUNT, "more messages than declared: %llu arrived in superstep %u but %llu were %s",
         (unsigned long long)st.arrived, s, (unsigned long long)due,
         mode_ == Mode::Expect ? "declared with bspk_expect" : "sent to this process");
  }
  const bool done = known && st.arrived == due && st.outstanding == 0;
  if (!done && mode_ == Mode::Expect) expect_still_waiting(s);
  return done;
}

// Under bspk_expect nothing of the count exchange is read on the way (the
// declared superstep's point), but a wait that goes on looks now and then
// for processes that joined a count exchange of s: they wait for this one
// to join, and this one may wait for a message none of them will send.
// Across hosts the direct plan needs nothing: every counted process sends
// its counts to every other one, this one included (admit_count).
void Engine::expect_still_waiting(uint32_t s) {
  if (board_) {
    if ((++board_polls_ & 255) == 0) check_expect_on_board(s);
  } else if (nprocs_ > 1 && opt_.count_exchange != Options::Exchange::Direct && (++expect_polls_ & 15) == 0) {
    announce_expect_wait(s);
  }
}

std::string Engine::waiting_for(uint32_t s) {
  const StepState& st = state(s);
  std::string w;
  if (mode_ == Mode::Expect) {
    w = strprintf("bspk_expect(%lld) declared, %llu message(s) arrived", (long long)declared_expect_,
                  (unsigned long long)st.arrived);
  } else if (board_ && !st.have_result) {
    std::string missing;
    int listed = 0;
    for (int j = 0; j < nprocs_; ++j)
      if (!board_->joined(j) && listed++ < 16) missing += strprintf(" %d", j);
    if (listed > 16) missing += " ...";
    w = strprintf("the shared-memory %s count exchange has not completed (%d of %d processes joined it; not "
                  "joined:%s)",
                  mode_ == Mode::WillSend ? "bspk_will_send" : "message", board_->joined_so_far(), nprocs_,
                  missing.c_str());
  } else if (count_rounds() && !st.have_result) {
    std::string missing;
    for (int j : exchange_->sources())
      if (!exchange_->has(s, j)) missing += strprintf(" %d", j);
    w = strprintf("the %s count exchange has not completed (counts from %d of the %zu processes this one "
                  "waits for arrived; missing:%s)",
                  mode_ == Mode::WillSend ? "bspk_will_send" : "message", exchange_->status(s).got,
                  exchange_->sources().size(), missing.c_str());
  } else if (st.have_result) {
    w = strprintf("%llu message(s) due (summed %s), %llu arrived", (unsigned long long)st.result,
                  mode_ == Mode::WillSend ? "from bspk_will_send" : "from actual send counts",
                  (unsigned long long)st.arrived);
  } else {
    std::string missing;
    for (int c : counts_->children()) missing += strprintf(" %d", c);
    w = strprintf("the %s count exchange has not completed (this process has %d of %zu child "
                  "contributions; children:%s; parent: %d)",
                  mode_ == Mode::WillSend ? "bspk_will_send" : "message", counts_->status(s).children_got,
                  counts_->children().size(), missing.empty() ? " none" : missing.c_str(), counts_->parent());
  }
  if (st.outstanding) w += strprintf("; %llu own send(s) not complete", (unsigned long long)st.outstanding);
  return w + flow_text();
}

std::string Engine::kinds_text(uint32_t kinds, const int32_t* first) const {
  std::string s;
  auto add = [&](const char* what, int pid) {
    if (!s.empty()) s += ", ";
    s += pid >= 0 ? strprintf("%s (pid %d)", what, pid) : std::string(what);
  };
  if (kinds & wire::kSyncExpect) add("bspk_expect", -1);
  if (kinds & wire::kSyncWillSend) add("bspk_will_send", first[0]);
  if (kinds & wire::kSyncCounted) add("no declaration", first[1]);
  if (kinds & wire::kSyncFinalize) add("bspk_finalize", first[2]);
  return s;
}

}  // namespace bspk::sync
