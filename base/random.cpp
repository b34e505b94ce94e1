#include "base/random.h"

#include <bspk.h>
#include <sys/random.h>

#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "base/error.h"

namespace bspk {

void random_bytes(void* buf, size_t n) {
  auto* p = static_cast<unsigned char*>(buf);
  while (n > 0) {
    ssize_t got = getrandom(p, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) fail(BSPK_ERR_BOOT, "getrandom: %s", std::strerror(errno));
    p += got;
    n -= static_cast<size_t>(got);
  }
}

namespace {
// random_u64's supply: getrandom(2) costs about 1.2 us per call on this VM, and
// a key is drawn for every memory registration (bsp_push_reg, hpput sources),
// so 64 of them are fetched at once. Used bytes are cleared; a forked child
// starts afresh (pthread_atfork), so parent and child never share a key.
constexpr size_t kSupply = 64;
thread_local uint64_t t_supply[kSupply];
thread_local size_t t_left = 0;
std::atomic<unsigned> g_forks{0};
thread_local unsigned t_forks = 0;
std::once_flag g_atfork;
}  // namespace

uint64_t random_u64() {
  std::call_once(g_atfork, [] {
    pthread_atfork(nullptr, nullptr, [] { g_forks.fetch_add(1, std::memory_order_relaxed); });
  });
  const unsigned forks = g_forks.load(std::memory_order_relaxed);
  if (t_left == 0 || t_forks != forks) {
    random_bytes(t_supply, sizeof t_supply);
    t_left = kSupply;
    t_forks = forks;
  }
  const uint64_t v = t_supply[--t_left];
  t_supply[t_left] = 0;
  return v;
}

}  // namespace bspk
