// sync/startup.cpp -- traffic outside supersteps: the fabric barrier of
// start-up and shutdown (Hello rounds), the registration probe read, and the
// drain of every send before the endpoint closes.
#include <bspk.h>

#include "base/clock.h"
#include "base/error.h"
#include "sync/engine.h"

namespace bspk::sync {

void Engine::on_hello(const wire::Header& h) {
  // u32[0] = epoch, u32[1] = round
  uint32_t idx = (h.u32[0] - barrier_epoch_) * 64 + h.u32[1];
  if (h.u32[0] >= barrier_epoch_ && idx < 128) {
    if (hello_got_.size() <= idx) hello_got_.resize(idx + 1, 0);
    hello_got_[idx]++;
  }
  ++progress_events_;
}

void Engine::fabric_barrier(bool all_pairs) {
  const double t0 = now_s();
  auto wait_for = [&](uint32_t round, uint32_t want, const char* what) {
    while (hello_got_.size() <= round || hello_got_[round] < want) {
      wait_once(now_s() + opt_.spin_s, 50);
      throw_pending();
      if (now_s() - t0 > opt_.timeout_s)
        fail(BSPK_ERR_TIMEOUT, "%s: %u of %u peers answered within %.0f s", what,
             hello_got_.size() > round ? hello_got_[round] : 0, want, opt_.timeout_s);
    }
  };
  auto hello = [&](int dest, uint32_t round) {
    uint32_t inl[4] = {barrier_epoch_, round, 0, 0};
    send_ctrl(dest, wire::kHello, step_, inl, nullptr, 0, false);
  };
  if (nprocs_ > 1) {
    if (all_pairs) {
      for (int k = 1; k < nprocs_; ++k) hello((pid_ + k) % nprocs_, 0);
      wait_for(0, static_cast<uint32_t>(nprocs_ - 1), "start-up connection exchange");
    } else {
      uint32_t round = 0;
      for (int d = 1; d < nprocs_; d <<= 1, ++round) {
        hello((pid_ + d) % nprocs_, round);
        wait_for(round, 1, "fabric barrier");
      }
    }
  }
  // Next epoch: shift counters of rounds already received for it.
  ++barrier_epoch_;
  if (hello_got_.size() > 64) hello_got_.erase(hello_got_.begin(), hello_got_.begin() + 64);
  else hello_got_.clear();
}

uint64_t Engine::read_word(int src, uint64_t remote_base, uint64_t offset, uint64_t key) {
  uintptr_t local = frames_.alloc();
  *reinterpret_cast<uint64_t*>(local) = 0;
  bool done = false;
  SendOp* op = new_op();
  op->done = &done;
  op->dest = src;
  uint64_t raddr = ep_.remote_addr(remote_base, offset);
  const double t0 = now_s();
  while (!ep_.post_read(src, reinterpret_cast<void*>(local), sizeof(uint64_t), frames_.desc(local), raddr, key,
                        &op->ctx))
    progress();
  while (!done) {
    wait_once(now_s() + opt_.spin_s, 50);
    throw_pending();
    if (now_s() - t0 > opt_.timeout_s) {
      frames_.free(local);
      fail(BSPK_ERR_TIMEOUT, "registration check: fi_readmsg from pid %d (remote address %#llx, key %#llx) "
           "did not complete in %.0f s", src, (unsigned long long)raddr, (unsigned long long)key,
           opt_.timeout_s);
    }
  }
  uint64_t v = *reinterpret_cast<uint64_t*>(local);
  frames_.free(local);
  return v;
}

void Engine::quiesce() {
  // Every send, counted or control, completes before the endpoint closes.
  double t0 = now_s();
  for (;;) {
    bool idle = backlog_.empty() && nblocked_ == 0 && op_pool_.size() == all_ops_.size();
    if (idle) return;
    wait_once(0, 50);
    if (now_s() - t0 > opt_.timeout_s)
      fail(BSPK_ERR_TIMEOUT, "%zu send(s) did not complete within %.0f s at shutdown (%zu held by flow control, %zu "
           "queued for the provider)", all_ops_.size() - op_pool_.size(), opt_.timeout_s, nblocked_, backlog_.size());
  }
}

}  // namespace bspk::sync
