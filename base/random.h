// base/random.h -- unpredictable numbers for names and keys that strangers
// must not guess (issue 13): memory keys, shared-memory names, the job's
// fabric token. From getrandom(2), the kernel's CSPRNG; not for simulation.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bspk {

// Fill buf with n unpredictable bytes. Throws bspk::Error(BSPK_ERR_BOOT) when
// the kernel gives none (getrandom fails: a kernel older than 3.17).
void random_bytes(void* buf, size_t n);

// 64 unpredictable bits (random_bytes, fetched 64 values at a time; a
// forked child never gets its parent's).
uint64_t random_u64();

}  // namespace bspk
