// sync/flow.cpp -- flow control: a message tagged with superstep t goes to a
// peer only once that peer is known to have reached t - W + 1 (W =
// BSPK_MAX_AHEAD). A peer's superstep is learnt from every message it sends;
// when that is not enough, one StepQuery asks it to send a StepNotice when it
// gets there (see engine.h).
#include <bspk.h>

#include "base/error.h"
#include "sync/engine.h"

namespace bspk::sync {

// The window to op->dest is closed: hold the send, and ask the peer to tell us
// when it reaches the superstep that opens it (once per superstep wanted).
void Engine::hold_for_window(SendOp* op) {
  blocked_[op->dest].push_back(op);
  ++nblocked_;
  stats_.flow_waits++;
  uint32_t want = op->step - opt_.max_ahead + 1;
  if (wire::step_before(queried_[op->dest], want)) {
    queried_[op->dest] = want;
    uint32_t inl[4] = {want, 0, 0, 0};
    send_ctrl(op->dest, wire::kStepQuery, step_, inl, nullptr, 0, false);
  }
}

void Engine::flush_blocked(int dest) {
  auto& q = blocked_[static_cast<size_t>(dest)];
  while (!q.empty() && window_open(dest, q.front()->step)) {
    SendOp* op = q.front();
    q.pop_front();
    --nblocked_;
    post_or_queue(op);
  }
}

void Engine::note_peer_step(int src, uint32_t step) {
  if (src < 0 || src >= nprocs_) return;
  if (wire::step_after(step, known_[src])) {
    known_[src] = step;
    if (!blocked_[src].empty()) flush_blocked(src);
  }
}

// "Tell me when you reach superstep u32[0]": at once if we are there.
void Engine::on_step_query(const wire::Header& h) {
  uint32_t want = h.u32[0];
  if (!wire::step_before(step_, want)) {
    uint32_t inl[4] = {step_, 0, 0, 0};
    send_ctrl(h.src, wire::kStepNotice, step_, inl, nullptr, 0, false);
  } else if (!notify_set_[h.src] || wire::step_before(notify_at_[h.src], want)) {
    if (!notify_set_[h.src]) waiters_.push_back(h.src);
    notify_set_[h.src] = 1;
    notify_at_[h.src] = want;
  }
}

// At a boundary: answer the peers waiting to hear that we reached a superstep.
void Engine::notify_waiters() {
  for (size_t i = 0; i < waiters_.size();) {
    int w = waiters_[i];
    if (notify_set_[w] && !wire::step_before(step_, notify_at_[w])) {
      uint32_t inl[4] = {step_, 0, 0, 0};
      send_ctrl(w, wire::kStepNotice, step_, inl, nullptr, 0, false);
      notify_set_[w] = 0;
      waiters_[i] = waiters_.back();
      waiters_.pop_back();
    } else {
      ++i;
    }
  }
}

std::string Engine::flow_text() const {
  std::string s;
  if (!nblocked_) return s;
  for (int d = 0; d < nprocs_; ++d)
    if (!blocked_[d].empty())
      s += strprintf("; %zu send(s) to pid %d held by flow control until it reaches superstep %u "
                     "(known to be at %u)",
                     blocked_[d].size(), d, blocked_[d].front()->step - opt_.max_ahead + 1, known_[d]);
  return s;
}

}  // namespace bspk::sync
