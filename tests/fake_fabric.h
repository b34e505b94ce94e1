// tests/fake_fabric.h -- an in-process fabric for unit tests of the engine, mp
// and dsm: N FakeEndpoints (fabric::Transport) over one FakeNetwork, each
// endpoint used by one thread (its engine's), the network's queues shared
// under one mutex.
//
// Semantics are those of a reliable-datagram tagged endpoint (FI_EP_RDM with
// FI_TAGGED, exact tag match):
//   * post_recv queues a receive (its iovecs and context) for a tag; a message
//     fills the oldest receive posted for its tag, only when the destination
//     polls, and only when one is posted (until then it waits in flight, like
//     libfabric's unexpected-message queue);
//   * post_send / inject take a copy of the message (post_send under
//     SendCompletion::AtDelivery reads the sender's buffers at delivery
//     instead, like a rendezvous protocol: the sender must not touch them
//     until its Sent completion);
//   * which deliverable message a destination receives next is the delivery
//     policy's choice (Order), never the engine's business: FIFO per
//     sender-destination pair, a seeded random choice of sender (pair order
//     kept), seeded random over everything, or newest first. A poll may be
//     told to deliver nothing (stall_prob) so that messages pile up;
//   * hold(match) keeps every later message that matches in flight until
//     release(id): scripted reordering across supersteps and senders;
//   * post_send / inject / post_recv return false ("queue full", -FI_EAGAIN)
//     for their first K calls and then with a seeded probability, and
//     post_send also while tx_depth sends await their completion being read;
//   * post_read copies straight from the remote address (one address space:
//     virt_addr() is true); register_memory registers nothing (key = base);
//   * can_block() is false: the engine backs off by itself.
// A message larger than the receive it lands in completes that receive with
// an error (like FI_ETRUNC). Every delivery is logged (delivered()).
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "boot/bootstrap.h"
#include "fabric/fabric.h"
#include "sync/wire.h"

namespace bspk::fake {

enum class Order {
  Fifo,           // oldest deliverable message first (FIFO per sender-destination pair)
  RandomSenders,  // a random sender's oldest deliverable message (pair order kept)
  Random,         // any deliverable message, at random
  Reverse,        // newest deliverable message first
};

enum class SendCompletion {
  AtPost,      // the Sent completion is queued when the send is posted (data copied then)
  AtDelivery,  // queued when the message is delivered (data read from the sender's buffers then)
};

// -FI_EAGAIN injection for one operation: the first `first` calls fail, then
// each call fails with probability `prob` (seeded per endpoint).
struct Faults {
  uint64_t first = 0;
  double prob = 0;
};

struct Config {
  int nprocs = 2;
  Order order = Order::Fifo;
  uint64_t seed = 1;
  double stall_prob = 0;     // probability that a poll delivers nothing
  SendCompletion completion = SendCompletion::AtPost;
  size_t inject_size = 0;    // largest inject() (header + payload); 0: the engine never injects
  size_t tx_depth = 0;       // posted sends whose completion was not yet read; 0: unlimited
  bool can_block = false;    // endpoints report a CQ wait object (can_block()); wait() then polls until its time-out
  Faults send_eagain, inject_eagain, recv_eagain;
};

// One message as the network saw it.
struct MsgInfo {
  int src = -1, dest = -1;
  uint64_t tag = 0;
  wire::Header hdr{};      // its first 64 bytes as posted (every BSPk message starts with a header)
  size_t len = 0;          // header + payload bytes
  uint32_t word0 = 0;      // the payload's first 4 bytes (0 if shorter), e.g. a DSM DirRec's op
  uint64_t id = 0;         // global send order (1-based)
  uint64_t pair_seq = 0;   // send order within (src, dest) (0-based)
  bool injected = false;
  int hold = 0;            // the hold that held it (0: none)
  uint64_t delivered = 0;  // delivery order (1-based); 0 while in flight
};

class FakeEndpoint;

class FakeNetwork {
 public:
  using Match = std::function<bool(const MsgInfo&)>;

  explicit FakeNetwork(const Config& cfg);
  ~FakeNetwork();
  FakeNetwork(const FakeNetwork&) = delete;
  FakeNetwork& operator=(const FakeNetwork&) = delete;

  int nprocs() const { return cfg_.nprocs; }
  const Config& config() const { return cfg_; }
  FakeEndpoint& endpoint(int pid) { return *eps_.at(static_cast<size_t>(pid)); }

  // Hold every message posted from now on that matches (checked at post time,
  // under the network's lock: match must not call the network) until
  // release(id). Returns the hold's id (> 0). The first matching hold wins.
  int hold(Match match);
  // Let the messages held by `id` go (and hold no more under it).
  void release(int id);
  void release_all();
  // Messages held by `id` and still in flight.
  size_t held(int id) const;
  size_t in_flight() const;
  size_t in_flight(const Match& m) const;

  // The delivery log, in delivery order.
  std::vector<MsgInfo> delivered() const;
  size_t count_delivered(const Match& m) const;

  struct Counters {
    uint64_t sends = 0, injects = 0, recvs = 0, reads = 0;  // successful calls
    uint64_t eagain_send = 0, eagain_inject = 0, eagain_recv = 0;
    uint64_t delivered = 0, truncated = 0;
    size_t max_in_flight = 0;
  };
  Counters counters() const;

  // Sleep-poll (1 ms) until cond() holds; false after timeout_s.
  static bool wait_for(const std::function<bool()>& cond, double timeout_s);

 private:
  friend class FakeEndpoint;
  struct Impl;
  Config cfg_;
  std::unique_ptr<Impl> impl_;
  std::vector<std::unique_ptr<FakeEndpoint>> eps_;
};

class FakeEndpoint final : public fabric::Transport {
 public:
  FakeEndpoint(FakeNetwork& net, int pid);
  int pid() const { return pid_; }

  fabric::MemoryRegion register_memory(void* base, size_t len) override;
  void deregister(fabric::MemoryRegion& mr) noexcept override;
  bool post_recv(const iovec* iov, void** desc, size_t count, fabric::OpContext* ctx, uint64_t tag) override;
  bool post_send(int dest, const iovec* iov, void** desc, size_t count, fabric::OpContext* ctx,
                 uint64_t tag) override;
  bool inject(int dest, const iovec* iov, void** desc, size_t count, uint64_t tag) override;
  bool post_read(int src, void* local, size_t len, void* desc, uint64_t raddr, uint64_t key,
                 fabric::OpContext* ctx) override;
  ssize_t poll(fabric::Completion* out, size_t n, fabric::CompletionError* err) override;
  ssize_t wait(fabric::Completion* out, size_t n, int timeout_ms, fabric::CompletionError* err) override;
  // Sends whose completion was not read yet, or completions or errors
  // waiting in its queue.
  bool busy() const override;
  uint64_t polls() const;  // poll() calls so far
  uint64_t waits() const;  // wait() calls so far

 private:
  FakeNetwork& net_;
  int pid_;
};

// A bootstrap for engines in one process: rank and size, always alive (until
// kill()), no all-gather; records the states the engine publishes.
class FakeBootstrap final : public boot::Bootstrap {
 public:
  FakeBootstrap(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* kind() const override { return "fake"; }
  std::string job_id() const override { return "fake-job"; }
  std::vector<std::string> allgather(const std::string& mine) override;
  void abort(int exit_code, const std::string& message) override;
  void finalized() override {}
  bool alive() override { return alive_.load(); }
  void kill() { alive_ = false; }  // the "launcher" is gone: waits fail with BSPK_ERR_PEER
  // Supersteps in which the engine published InSync (it waited instead of
  // taking the lazy barrier's fast path). Read after the engine's thread ended.
  const std::vector<uint32_t>& waited_in() const { return waited_in_; }

 private:
  int rank_, size_;
  std::atomic<bool> alive_{true};
  std::vector<uint32_t> waited_in_;

 protected:
  void publish_state(uint32_t superstep, boot::ProcState state) override;
};

}  // namespace bspk::fake
