// base/copy.h -- copy_bytes: memcpy at full speed at every relative alignment.
//
// On AMD Zen 3 / Zen 4 CPUs, `rep movsb` -- which glibc's memcpy uses from
// x86_rep_movsb_threshold (2,112 bytes here) up to about the L2 cache's
// size -- runs 10-15 times slower when the destination lies 1-31 bytes
// above the source modulo 4 KiB (page aliasing of its loads with its own
// stores; glibc bug 30994, worked around in glibc 2.39, not in Debian 12's
// 2.36). Measured on the project's AMD EPYC VM (2026-12-02, 64 KiB copies
// within L2/L3): 1.8-2.8 GB/s at those offsets, 25-36 GB/s at every other;
// a bsp_put of 256 KiB from a buffer at an unlucky offset took 190-226 us
// instead of 20. Frames are page-aligned, so copies between frames never
// meet it, but copies between program memory and frames (bspk_put,
// bspk_send_buf, BSPlib's bsp_put and bsp_get, bsp_move, collectives) meet
// it at whatever offsets the program's buffers have.
//
// copy_bytes copies those cases backward, 64 bytes at a time with SSE2 (a
// load never follows a store to an address it aliases): 21-34 GB/s at the
// slow offsets, the same as memcpy elsewhere; every other copy is memcpy.
// Same contract as memcpy: the ranges must not overlap. On other
// architectures copy_bytes is memcpy.
#pragma once

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace bspk {

// Copies below this size never take glibc's rep movsb path (its threshold is
// 2,112 bytes here; 2,048 keeps to the safe side of it on other builds).
constexpr size_t kCopyAliasMin = 2048;

// True when a copy of n bytes from src to dst is one rep movsb slows down:
// the destination 1-63 bytes above the source modulo 4 KiB (63: the measured
// 1-31 and a margin, where the backward copy is as fast as memcpy).
inline bool copy_aliases(const void* dst, const void* src, size_t n) {
  const uintptr_t delta = (reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) & 4095;
  return n >= kCopyAliasMin && delta - 1 < 63;
}

#if defined(__x86_64__)
// The backward copy (see above); n may be anything.
inline void copy_backward(void* dst, const void* src, size_t n) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  size_t i = n;
  while (i >= 64) {
    i -= 64;
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i + 48), a);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i + 32), b);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i + 16), c);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), e);
  }
  if (i) std::memcpy(d, s, i);
}

// memcpy(dst, src, n), without the slow offsets above.
inline void copy_bytes(void* dst, const void* src, size_t n) {
  if (copy_aliases(dst, src, n))
    copy_backward(dst, src, n);
  else
    std::memcpy(dst, src, n);
}
#else
inline void copy_bytes(void* dst, const void* src, size_t n) { std::memcpy(dst, src, n); }
#endif

}  // namespace bspk
