#include "base/random.h"

#include <bspk.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>

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

uint64_t random_u64() {
  uint64_t v = 0;
  random_bytes(&v, sizeof v);
  return v;
}

}  // namespace bspk
