// sync/reads.cpp -- one-sided reads of program memory (engine.h, "one-sided
// reads of program memory"; bspk.h, "Program memory").
//
// The data path is the fabric's read (fi_readmsg through Transport::
// post_read): on shm a cross-memory copy by the kernel, on tcp the peer's
// provider answers from its memory, on verbs the NIC. The runtime copies no
// byte; the registration is the frame slabs' one code path (register_memory:
// local descriptor always passed, the provider's key sent, addresses by
// remote_addr(): base + offset under FI_MR_VIRT_ADDR, else the offset).
#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "sync/engine.h"

namespace bspk::sync {

uint64_t Engine::register_user(void* base, size_t len, uint64_t* key) {
  if (!base || len == 0) fail(BSPK_ERR_ARG, "cannot register %zu bytes at %p", len, base);
  fabric::MemoryRegion mr = ep_.register_memory(base, len);
  const uint64_t handle = next_user_mr_++;
  *key = mr.key;
  user_mrs_.emplace(handle, mr);
  return handle;
}

void Engine::deregister_user(uint64_t handle) {
  auto it = user_mrs_.find(handle);
  if (it == user_mrs_.end()) fail(BSPK_ERR_ARG, "memory registration %llu does not exist", (unsigned long long)handle);
  ep_.deregister(it->second);
  user_mrs_.erase(it);
}

void Engine::read_user(int src, uint64_t remote_base, uint64_t key, uint64_t offset, uint64_t local, void* dst,
                       size_t len) {
  if (src < 0 || src >= nprocs_) fail(BSPK_ERR_ARG, "read from pid %d: out of range [0, %d)", src, nprocs_);
  auto it = user_mrs_.find(local);
  if (it == user_mrs_.end()) fail(BSPK_ERR_ARG, "memory registration %llu does not exist", (unsigned long long)local);
  const fabric::MemoryRegion* mr = &it->second;
  const uintptr_t d = reinterpret_cast<uintptr_t>(dst);
  if (d < mr->base || d - mr->base > mr->len || len > mr->len - (d - mr->base))
    fail(BSPK_ERR_ARG, "the destination [%p, +%zu) is not inside registration %llu ([%p, +%zu))", dst, len,
         (unsigned long long)local, reinterpret_cast<void*>(mr->base), mr->len);
  if (len == 0) return;
  ++stats_.reads;
  stats_.bytes_read += len;
  if (src == pid_) {  // its own memory: no fabric round trip
    std::memcpy(dst, reinterpret_cast<const void*>(remote_base + offset), len);
    stats_.bytes_copied += len;
    return;
  }
  stats_.bytes_read_remote += len;
  for (size_t done = 0; done < len;) {
    const size_t n = std::min(len - done, kReadPiece);
    SendOp* op = new_op();
    op->dest = src;
    op->step = step_;
    op->user_read = true;
    const uint64_t raddr = ep_.remote_addr(remote_base, offset + done);
    try {
      while (!ep_.post_read(src, static_cast<char*>(dst) + done, n, mr->desc, raddr, key, &op->ctx)) progress();
    } catch (...) {
      free_op(op);
      throw;
    }
    ++reads_in_flight_;
    done += n;
  }
}

void Engine::wait_reads() {
  if (reads_in_flight_ == 0) {
    throw_pending();
    return;
  }
  wait_until([this] { return reads_in_flight_ == 0; },
             [this] { return strprintf("%llu one-sided read(s) of program memory to complete",
                                       (unsigned long long)reads_in_flight_); });
  throw_pending();
}

}  // namespace bspk::sync
