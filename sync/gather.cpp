// sync/gather.cpp -- bspk_sync_allgather's block exchange through the
// shared-memory board (see board.h "Block all-gathers" and engine.h).
#include <bspk.h>

#include <string>

#include "base/error.h"
#include "sync/board.h"
#include "sync/engine.h"

namespace bspk::sync {

void Engine::gather_blocks(const void* mine, size_t nbytes,
                           const std::function<void(int, const unsigned char*, size_t)>& got) {
  throw_pending();
  if (!board_) fail(BSPK_ERR_INTERNAL, "block all-gather without a shared-memory board");
  if (mode_ != Mode::None) fail(BSPK_ERR_INTERNAL, "block all-gather after a declaration");
  const uint32_t s = step_;
  board_->gather_publish(s, mine, nbytes);
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
        if (k >= 0)
          fail(BSPK_ERR_MODE,
               "mixed synchronisation kinds in superstep %u: this process called bspk_sync_allgather, pid %d %s",
               s, k, counted ? "a counted bspk_sync (or bspk_will_send)" : "left the superstep without it (bspk_expect)");
      }
      return false;
    }
    return true;
  };
  // The others are usually a cache-line transfer away: look a little before
  // the general wait with its clock reads (as sync does for the board).
  bool done = false;
  for (int i = 0; i < 64 && !(done = ready()); ++i) {
  }
  if (!done)
    wait_until(ready, [&] {
      std::string missing;
      for (int j = 0; j < nprocs_; ++j) {
        size_t n;
        if (!board_->gather_block(j, &n)) missing += " " + std::to_string(j);
      }
      return "bspk_sync_allgather: blocks missing from pid(s)" + missing;
    });
  for (int j = 0; j < nprocs_; ++j) {
    size_t n = 0;
    const unsigned char* b = board_->gather_block(j, &n);
    got(j, b, n);
  }
  board_->gather_done();
  expect(0);
}

}  // namespace bspk::sync
