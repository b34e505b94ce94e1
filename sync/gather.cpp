// sync/gather.cpp -- bspk_sync_allgather's block exchange through the
// shared-memory board (see board.h "Block all-gathers" and engine.h).
#include <bspk.h>

#include <string>

#include "base/error.h"
#include "sync/board.h"
#include "sync/engine.h"

namespace bspk::sync {

void Engine::gather_publish(const iovec* mine, int iovcnt) {
  throw_pending();
  if (!board_) fail(BSPK_ERR_INTERNAL, "block all-gather without a shared-memory board");
  if (mode_ != Mode::None || gather_pending_) fail(BSPK_ERR_INTERNAL, "block all-gather after a declaration");
  board_->gather_publish(step_, mine, iovcnt);
  ep_.wake_local();  // the others may nap waiting for this block
  gather_step_ = step_;
  gather_pending_ = true;
  expect(0);
}

const unsigned char* Engine::gather_block(int j, size_t* nbytes) const { return board_->gather_block(j, nbytes); }

void Engine::gather_end() {
  if (!gather_pending_) return;
  board_->gather_done();
  gather_pending_ = false;
}

void Engine::gather_wait() {
  if (!gather_pending_) fail(BSPK_ERR_INTERNAL, "gather_wait without gather_publish");
  const uint32_t s = gather_step_;
  // Every block is there once no slot is missing; now and then (not on every
  // poll) look for a process that took another way out of s.
  unsigned polls = 0;
  int first_missing = 0;
  auto ready = [&] {
    for (int j = first_missing; j < nprocs_; ++j) {
      size_t n;
      if (board_->gather_block(j, &n)) continue;
      first_missing = j;
      if ((++polls & 255) == 0) {
        bool counted = false;
        const int k = board_->gather_mixed(s, &counted);
        if (k >= 0) {
          gather_end();
          fail_over(BSPK_ERR_MODE,
                    "mixed synchronisation kinds in superstep %u: this process called bspk_sync_allgather (the "
                    "superstep of a collective such as bspk_allreduce, or of BSPlib's bsp_sync), pid %d %s",
                    s, k,
                    counted ? "a counted bspk_sync (or bspk_will_send)"
                            : "left the superstep without it (bspk_expect)");
        }
      }
      return false;
    }
    return true;
  };
  // The others are usually a cache-line transfer and their own call away:
  // with a CPU per process, watch the slots for up to a few microseconds
  // (polling a line nobody writes costs nothing but this core) before the
  // general wait, whose fabric polls add to the reaction time; when
  // there is no spin phase (BSPK_SPIN_US 0, the default when processes outnumber
  // CPUs), two looks only (the others may need the CPU).
  bool done = false;
  const int looks = opt_.spin_s > 0 ? 4096 : 2;
  for (int i = 0; i < looks && !(done = ready()); ++i) __builtin_ia32_pause();
  if (!done) {
    // Oversubscribed: the same hold as the count board's (engine.cpp).
    std::function<bool()> hold;
    if (!cpu_mates().empty())
      hold = [&] {
        return mates_arrived([&](int j) {
          size_t n;
          return board_->gather_block(j, &n) != nullptr;
        });
      };
    try {
      wait_until(ready, [&] {
        std::string missing;
        for (int j = 0; j < nprocs_; ++j) {
          size_t n;
          if (board_->gather_block(j, &n)) continue;
          missing += ' ';  // (not " " + to_string: GCC 12's false -Wrestrict, bug 105329)
          missing += std::to_string(j);
        }
        return strprintf("bspk_sync_allgather of superstep %u: blocks missing from pid(s)%s", s, missing.c_str());
      }, 0, hold ? &hold : nullptr, /*shared=*/true);
    } catch (...) {
      gather_end();
      throw;
    }
  }
}

}  // namespace bspk::sync
