// base/iov.h -- byte ranges of a message held in pieces (struct iovec).
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "base/copy.h"

namespace bspk {

// Copy bytes [from, from + len) of the stream src[0..n) -- the pieces one
// after the other -- to dst. Bytes past the pieces' end are not copied.
inline void copy_range(const iovec* src, size_t n, size_t from, size_t len, void* dst) {
  auto* d = static_cast<unsigned char*>(dst);
  for (size_t i = 0; i < n && len > 0; ++i) {
    if (from >= src[i].iov_len) {
      from -= src[i].iov_len;
      continue;
    }
    const size_t m = std::min(src[i].iov_len - from, len);
    bspk::copy_bytes(d, static_cast<const unsigned char*>(src[i].iov_base) + from, m);
    d += m;
    len -= m;
    from = 0;
  }
}

}  // namespace bspk
