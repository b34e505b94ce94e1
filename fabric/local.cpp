// fabric/local.cpp -- the same-host ring fast path (see local.h).
#include "fabric/local.h"

#include <bspk.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/error.h"

namespace bspk::fabric {

namespace {
size_t total_len(const iovec* iov, size_t count) {
  size_t n = 0;
  for (size_t i = 0; i < count; ++i) n += iov[i].iov_len;
  return n;
}
}  // namespace

size_t LocalTransport::segment_bytes(int nprocs) {
  return static_cast<size_t>(nprocs) * static_cast<size_t>(nprocs) * kCells * kCell;
}

SharedSegment LocalTransport::create_segment(const std::string& prefix, int nprocs) {
  return SharedSegment::create(prefix + ".rings", segment_bytes(nprocs));
}

LocalTransport::LocalTransport(Transport& ep, SharedSegment seg, int pid, int nprocs, uint64_t ring_tag)
    : ep_(ep), seg_(std::move(seg)), pid_(pid), nprocs_(nprocs), ring_tag_(ring_tag) {
  if (seg_.size() != segment_bytes(nprocs))
    fail(BSPK_ERR_INTERNAL, "ring segment of %zu bytes for %d processes", seg_.size(), nprocs);
  virt_addr_ = ep.virt_addr();
  inject_size_ = std::max(ep.inject_size(), kCellPayload);
  can_block_ = false;
  tail_.assign(static_cast<size_t>(nprocs), 0);
  head_.assign(static_cast<size_t>(nprocs), 0);
}

bool LocalTransport::push(int dest, const iovec* iov, size_t count, uint64_t tag) {
  uint64_t& t = tail_[static_cast<size_t>(dest)];
  Cell& c = ring(pid_, dest)[t % kCells];
  if (c.full.load(std::memory_order_acquire)) return false;  // the consumer has not freed it yet
  size_t off = 0;
  for (size_t i = 0; i < count; ++i) {
    std::memcpy(c.data + off, iov[i].iov_base, iov[i].iov_len);
    off += iov[i].iov_len;
  }
  c.len = static_cast<uint32_t>(off);
  c.tag = tag;
  c.full.store(1, std::memory_order_release);  // publishes len, tag and data
  ++t;
  return true;
}

bool LocalTransport::post_recv(const iovec* iov, void** desc, size_t count, OpContext* ctx, uint64_t tag) {
  if (tag == ring_tag_ && recvs_.size() < kLocalRecvs && count <= 2) {
    Recv r{};
    for (size_t i = 0; i < count; ++i) r.iov[i] = iov[i];
    r.count = count;
    r.ctx = ctx;
    recvs_.push_back(r);
    return true;
  }
  return ep_.post_recv(iov, desc, count, ctx, tag);
}

bool LocalTransport::post_send(int dest, const iovec* iov, void** desc, size_t count, OpContext* ctx,
                               uint64_t tag) {
  if (tag == ring_tag_ && total_len(iov, count) <= kCellPayload && push(dest, iov, count, tag)) {
    sent_.push_back(ctx);
    return true;
  }
  return ep_.post_send(dest, iov, desc, count, ctx, tag);
}

bool LocalTransport::inject(int dest, const iovec* iov, void** desc, size_t count, uint64_t tag) {
  size_t len = total_len(iov, count);
  if (tag == ring_tag_ && len <= kCellPayload && push(dest, iov, count, tag)) return true;
  return len <= ep_.inject_size() && ep_.inject(dest, iov, desc, count, tag);
}

// Ring arrivals into the receives kept here, scanning the sources round-robin.
size_t LocalTransport::deliver(Completion* out, size_t n) {
  size_t k = 0;
  for (int i = 0; i < nprocs_ && k < n && !recvs_.empty(); ++i) {
    int src = (next_src_ + i) % nprocs_;
    uint64_t& h = head_[static_cast<size_t>(src)];
    Cell* r = ring(src, pid_);
    while (k < n && !recvs_.empty()) {
      Cell& c = r[h % kCells];
      if (!c.full.load(std::memory_order_acquire)) break;
      Recv rv = recvs_.front();
      recvs_.pop_front();
      size_t off = 0, len = c.len;
      for (size_t j = 0; j < rv.count && off < len; ++j) {
        size_t m = std::min(rv.iov[j].iov_len, len - off);
        std::memcpy(rv.iov[j].iov_base, c.data + off, m);
        off += m;
      }
      if (off < len)
        fail(BSPK_ERR_INTERNAL, "a %zu-byte ring message from pid %d does not fit the posted receive", len, src);
      c.full.store(0, std::memory_order_release);  // the cell is the producer's again
      ++h;
      out[k++] = Completion{rv.ctx, CompletionKind::Received, off};
    }
  }
  next_src_ = (next_src_ + 1) % nprocs_;
  return k;
}

ssize_t LocalTransport::poll(Completion* out, size_t n, CompletionError* err) {
  // The provider first: an error there is returned before any local
  // completion has been taken (so none is lost).
  ssize_t m = ep_.poll(out, n, err);
  if (m < 0) return m;
  size_t k = static_cast<size_t>(m);
  while (k < n && !sent_.empty()) {
    out[k++] = Completion{sent_.front(), CompletionKind::Sent, 0};
    sent_.pop_front();
  }
  if (k < n) k += deliver(out + k, n - k);
  return static_cast<ssize_t>(k);
}

}  // namespace bspk::fabric
