// fabric/local.h -- a same-host fast path for small messages in front of an
// Endpoint: when every process of the job is on one host, a message of at most
// kCellPayload bytes (header included) goes through a single-producer
// single-consumer ring per ordered pair of processes in one shared segment,
// instead of through the libfabric provider. Everything else (larger
// messages, one-sided reads, registration) goes to the Endpoint unchanged.
//
// Why: libfabric 1.17's shm provider costs ~0.5 us per small message here
// (locks, its own command queue, a completion queue entry per operation); a
// ring cell is one cache line of flag plus the bytes. The receiver still gets
// the message in the receive buffer the engine posted, as with a provider
// (the copy from the cell into that buffer is the transport's, as the
// provider's copy through its bounce buffers is), so the engine does not know
// which path a message took.
//
// Receives posted with the ring tag (the receive class of small messages) are
// split: up to kLocalRecvs are kept here for ring arrivals, the others go to
// the provider. A ring message waits in its cell until a receive is free; a
// full ring sends through the provider instead. Messages of one pair can thus
// overtake each other; BSPk orders by superstep and sequence numbers, never
// by arrival.
//
// The segment is a SharedSegment (base/shm_segment.h): created by pid 0, its
// name passed through the bootstrap, opened by the others, then unlinked.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "base/shm_segment.h"
#include "fabric/fabric.h"

namespace bspk::fabric {

class LocalTransport final : public Transport {
 public:
  static constexpr size_t kCell = 512;                 // bytes per ring cell
  static constexpr size_t kCellPayload = kCell - 16;   // message bytes per cell
  static constexpr size_t kCells = 64;                 // cells per ordered pair
  static constexpr size_t kLocalRecvs = 32;            // ring-tag receives kept for ring arrivals

  // Bytes of the segment for p processes.
  static size_t segment_bytes(int nprocs);
  // pid 0: a new segment (its name() goes to the others). Errors: BSPK_ERR_BOOT.
  static SharedSegment create_segment(const std::string& prefix, int nprocs);

  // Over `ep`, with the mapped segment; messages tagged ring_tag may use rings.
  LocalTransport(Transport& ep, SharedSegment seg, int pid, int nprocs, uint64_t ring_tag);

  MemoryRegion register_memory(void* base, size_t len) override { return ep_.register_memory(base, len); }
  void deregister(MemoryRegion& mr) noexcept override { ep_.deregister(mr); }
  bool post_recv(const iovec* iov, void** desc, size_t count, OpContext* ctx, uint64_t tag) override;
  bool post_send(int dest, const iovec* iov, void** desc, size_t count, OpContext* ctx, uint64_t tag) override;
  bool inject(int dest, const iovec* iov, void** desc, size_t count, uint64_t tag) override;
  bool post_read(int src, void* local, size_t len, void* desc, uint64_t raddr, uint64_t key,
                 OpContext* ctx) override {
    return ep_.post_read(src, local, len, desc, raddr, key, ctx);
  }
  ssize_t poll(Completion* out, size_t n, CompletionError* err) override;
  // Never blocks: ring arrivals raise no file descriptor (the engine backs off).
  ssize_t wait(Completion* out, size_t n, int, CompletionError* err) override { return poll(out, n, err); }

  const SharedSegment& segment() const { return seg_; }

 private:
  struct alignas(64) Cell {
    std::atomic<uint32_t> full;  // 1: holds a message (release by the producer, acquire by the consumer)
    uint32_t len;                // message bytes
    uint64_t tag;
    unsigned char data[kCellPayload];
  };
  static_assert(sizeof(Cell) == kCell, "ring cell layout");
  struct Recv {
    iovec iov[2];
    size_t count;
    OpContext* ctx;
  };
  Cell* ring(int src, int dst) const {
    return static_cast<Cell*>(seg_.base()) +
           (static_cast<size_t>(src) * static_cast<size_t>(nprocs_) + static_cast<size_t>(dst)) * kCells;
  }
  bool push(int dest, const iovec* iov, size_t count, uint64_t tag);
  size_t deliver(Completion* out, size_t n);

  Transport& ep_;
  SharedSegment seg_;
  int pid_, nprocs_;
  uint64_t ring_tag_;
  std::vector<uint64_t> tail_;  // per destination: next cell to fill (producer side)
  std::vector<uint64_t> head_;  // per source: next cell to read (consumer side)
  std::deque<Recv> recvs_;      // ring-tag receives kept here
  std::deque<OpContext*> sent_; // ring sends whose Sent completion is due
  int next_src_ = 0;            // round-robin start of the next scan
};

}  // namespace bspk::fabric
