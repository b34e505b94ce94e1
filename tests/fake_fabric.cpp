// tests/fake_fabric.cpp -- see fake_fabric.h.
#include "tests/fake_fabric.h"

#include <bspk.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <random>
#include <thread>

#include "base/error.h"

namespace bspk::fake {

namespace {

size_t total_len(const iovec* iov, size_t count) {
  size_t n = 0;
  for (size_t i = 0; i < count; ++i) n += iov[i].iov_len;
  return n;
}

std::vector<char> gather(const std::vector<iovec>& iov) {
  std::vector<char> out;
  for (const iovec& v : iov) {
    const char* p = static_cast<const char*>(v.iov_base);
    out.insert(out.end(), p, p + v.iov_len);
  }
  return out;
}

// Copy bytes into iovecs; returns the bytes that fitted.
size_t scatter(const std::vector<iovec>& iov, const std::vector<char>& bytes) {
  size_t done = 0;
  for (const iovec& v : iov) {
    if (done == bytes.size()) break;
    size_t c = std::min(v.iov_len, bytes.size() - done);
    std::memcpy(v.iov_base, bytes.data() + done, c);
    done += c;
  }
  return done;
}

}  // namespace

struct FakeNetwork::Impl {
  struct Pending {
    MsgInfo info;
    std::vector<char> bytes;       // copied at post (inject, or SendCompletion::AtPost)
    std::vector<iovec> iov;        // read at delivery (post_send under AtDelivery)
    fabric::OpContext* ctx = nullptr;  // the send's context (nullptr: injected)
  };
  struct PostedRecv {
    std::vector<iovec> iov;
    fabric::OpContext* ctx = nullptr;
  };
  struct Ep {
    std::vector<Pending> inbound;  // messages to this endpoint, in send order
    std::map<uint64_t, std::deque<PostedRecv>> recvs;  // posted receives by tag
    std::deque<fabric::Completion> cq;
    std::deque<fabric::CompletionError> errq;
    size_t tx_outstanding = 0;  // post_sends whose Sent completion was not yet read
    uint64_t calls_send = 0, calls_inject = 0, calls_recv = 0;
    uint64_t polls = 0;  // poll() calls
    uint64_t waits = 0;  // wait() calls
    std::mt19937_64 rng;
  };

  mutable std::mutex mu;
  std::vector<Ep> eps;
  std::map<int, Match> holds;  // active holds
  int next_hold = 1;
  uint64_t next_id = 1;
  std::vector<uint64_t> pair_seq;  // by src * p + dest
  std::vector<MsgInfo> log;
  Counters ctr;

  bool fault(Ep& e, const Faults& f, uint64_t call) {
    if (call <= f.first) return true;
    if (f.prob <= 0) return false;
    return std::uniform_real_distribution<double>(0, 1)(e.rng) < f.prob;
  }
  bool deliverable(const Pending& m, Ep& dest) const {
    if (m.info.hold && holds.count(m.info.hold)) return false;
    auto it = dest.recvs.find(m.info.tag);
    return it != dest.recvs.end() && !it->second.empty();
  }
  void enqueue(Pending&& m, int dest) {
    for (auto& [id, match] : holds)
      if (match(m.info)) {
        m.info.hold = id;
        break;
      }
    eps[static_cast<size_t>(dest)].inbound.push_back(std::move(m));
    size_t n = 0;
    for (const Ep& e : eps) n += e.inbound.size();
    ctr.max_in_flight = std::max(ctr.max_in_flight, n);
  }
  MsgInfo info_of(int src, int dest, const iovec* iov, size_t count, uint64_t tag, bool injected) {
    MsgInfo i;
    i.src = src;
    i.dest = dest;
    i.tag = tag;
    i.len = total_len(iov, count);
    i.id = next_id++;
    i.pair_seq = pair_seq[static_cast<size_t>(src * static_cast<int>(eps.size()) + dest)]++;
    i.injected = injected;
    // The header, gathered from the iovecs (it is the first 64 bytes).
    // The header and the payload's first word, gathered from the iovecs (the
    // header is the first 64 bytes).
    char head[sizeof(wire::Header) + sizeof(uint32_t)] = {};
    size_t got = 0;
    for (size_t k = 0; k < count && got < sizeof head; ++k) {
      size_t c = std::min(iov[k].iov_len, sizeof head - got);
      std::memcpy(head + got, iov[k].iov_base, c);
      got += c;
    }
    std::memcpy(&i.hdr, head, sizeof i.hdr);
    if (got == sizeof head) std::memcpy(&i.word0, head + sizeof i.hdr, sizeof i.word0);
    return i;
  }
  // Index into me.inbound of the message the policy delivers next, or -1.
  long pick(Ep& me, Order order) {
    const auto& in = me.inbound;
    switch (order) {
      case Order::Fifo:
        for (size_t i = 0; i < in.size(); ++i)
          if (deliverable(in[i], me)) return static_cast<long>(i);
        return -1;
      case Order::Reverse:
        for (size_t i = in.size(); i-- > 0;)
          if (deliverable(in[i], me)) return static_cast<long>(i);
        return -1;
      case Order::Random: {
        std::vector<size_t> c;
        for (size_t i = 0; i < in.size(); ++i)
          if (deliverable(in[i], me)) c.push_back(i);
        if (c.empty()) return -1;
        return static_cast<long>(c[std::uniform_int_distribution<size_t>(0, c.size() - 1)(me.rng)]);
      }
      case Order::RandomSenders: {
        std::map<int, size_t> first;  // sender -> its oldest deliverable message
        for (size_t i = 0; i < in.size(); ++i)
          if (!first.count(in[i].info.src) && deliverable(in[i], me)) first[in[i].info.src] = i;
        if (first.empty()) return -1;
        auto it = first.begin();
        std::advance(it, std::uniform_int_distribution<size_t>(0, first.size() - 1)(me.rng));
        return static_cast<long>(it->second);
      }
    }
    return -1;
  }
  // Deliver message k of me.inbound into the oldest receive posted for its tag.
  void deliver(int me_pid, size_t k, SendCompletion completion) {
    Ep& me = eps[static_cast<size_t>(me_pid)];
    Pending m = std::move(me.inbound[k]);
    me.inbound.erase(me.inbound.begin() + static_cast<long>(k));
    auto& q = me.recvs[m.info.tag];
    PostedRecv r = std::move(q.front());
    q.pop_front();
    const std::vector<char> bytes = m.iov.empty() ? std::move(m.bytes) : gather(m.iov);
    size_t fitted = scatter(r.iov, bytes);
    if (fitted < bytes.size()) {
      ctr.truncated++;
      fabric::CompletionError e;
      e.context = r.ctx;
      e.message = "fake fabric: message truncated (" + std::to_string(bytes.size()) + " bytes into a receive of " +
                  std::to_string(fitted) + ")";
      me.errq.push_back(e);
    } else {
      me.cq.push_back(fabric::Completion{r.ctx, fabric::CompletionKind::Received, bytes.size()});
    }
    if (m.ctx && completion == SendCompletion::AtDelivery)
      eps[static_cast<size_t>(m.info.src)].cq.push_back(fabric::Completion{m.ctx, fabric::CompletionKind::Sent, 0});
    m.info.delivered = ++ctr.delivered;
    log.push_back(m.info);
  }
};

FakeNetwork::FakeNetwork(const Config& cfg) : cfg_(cfg), impl_(std::make_unique<Impl>()) {
  if (cfg.nprocs < 1) fail(BSPK_ERR_ARG, "fake network of %d processes", cfg.nprocs);
  impl_->eps.resize(static_cast<size_t>(cfg.nprocs));
  for (int r = 0; r < cfg.nprocs; ++r)
    impl_->eps[static_cast<size_t>(r)].rng.seed(cfg.seed * 1000003u + static_cast<uint64_t>(r));
  impl_->pair_seq.assign(static_cast<size_t>(cfg.nprocs * cfg.nprocs), 0);
  for (int r = 0; r < cfg.nprocs; ++r) eps_.push_back(std::make_unique<FakeEndpoint>(*this, r));
}

FakeNetwork::~FakeNetwork() = default;

int FakeNetwork::hold(Match match) {
  std::lock_guard<std::mutex> lk(impl_->mu);
  int id = impl_->next_hold++;
  impl_->holds[id] = std::move(match);
  return id;
}

void FakeNetwork::release(int id) {
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->holds.erase(id);
}

void FakeNetwork::release_all() {
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->holds.clear();
}

size_t FakeNetwork::held(int id) const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  if (!impl_->holds.count(id)) return 0;
  size_t n = 0;
  for (const auto& e : impl_->eps)
    for (const auto& m : e.inbound) n += m.info.hold == id;
  return n;
}

size_t FakeNetwork::in_flight() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  size_t n = 0;
  for (const auto& e : impl_->eps) n += e.inbound.size();
  return n;
}

size_t FakeNetwork::in_flight(const Match& m) const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  size_t n = 0;
  for (const auto& e : impl_->eps)
    for (const auto& x : e.inbound) n += m(x.info);
  return n;
}

std::vector<MsgInfo> FakeNetwork::delivered() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return impl_->log;
}

size_t FakeNetwork::count_delivered(const Match& m) const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  size_t n = 0;
  for (const auto& i : impl_->log) n += m(i);
  return n;
}

FakeNetwork::Counters FakeNetwork::counters() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return impl_->ctr;
}

bool FakeNetwork::wait_for(const std::function<bool()>& cond, double timeout_s) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// ---------------------------------------------------------------------------

FakeEndpoint::FakeEndpoint(FakeNetwork& net, int pid) : net_(net), pid_(pid) {
  virt_addr_ = true;  // one address space: remote addresses are addresses
  inject_size_ = net.config().inject_size;
  can_block_ = net.config().can_block;
}

fabric::MemoryRegion FakeEndpoint::register_memory(void* base, size_t len) {
  fabric::MemoryRegion mr;
  mr.base = reinterpret_cast<uintptr_t>(base);
  mr.key = mr.base;
  mr.len = len;
  return mr;
}

void FakeEndpoint::deregister(fabric::MemoryRegion& mr) noexcept { mr = fabric::MemoryRegion{}; }

bool FakeEndpoint::post_recv(const iovec* iov, void** /*desc*/, size_t count, fabric::OpContext* ctx, uint64_t tag) {
  auto& im = *net_.impl_;
  std::lock_guard<std::mutex> lk(im.mu);
  auto& me = im.eps[static_cast<size_t>(pid_)];
  if (im.fault(me, net_.cfg_.recv_eagain, ++me.calls_recv)) {
    im.ctr.eagain_recv++;
    return false;
  }
  im.ctr.recvs++;
  me.recvs[tag].push_back(FakeNetwork::Impl::PostedRecv{std::vector<iovec>(iov, iov + count), ctx});
  return true;
}

bool FakeEndpoint::post_send(int dest, const iovec* iov, void** /*desc*/, size_t count, fabric::OpContext* ctx,
                             uint64_t tag) {
  auto& im = *net_.impl_;
  std::lock_guard<std::mutex> lk(im.mu);
  if (dest < 0 || dest >= net_.nprocs()) fail(BSPK_ERR_FABRIC, "fake fabric: send to pid %d", dest);
  auto& me = im.eps[static_cast<size_t>(pid_)];
  if (im.fault(me, net_.cfg_.send_eagain, ++me.calls_send) ||
      (net_.cfg_.tx_depth && me.tx_outstanding >= net_.cfg_.tx_depth)) {
    im.ctr.eagain_send++;
    return false;
  }
  im.ctr.sends++;
  FakeNetwork::Impl::Pending m;
  m.info = im.info_of(pid_, dest, iov, count, tag, false);
  m.ctx = ctx;
  std::vector<iovec> v(iov, iov + count);
  if (net_.cfg_.completion == SendCompletion::AtPost) {
    m.bytes = gather(v);
    me.cq.push_back(fabric::Completion{ctx, fabric::CompletionKind::Sent, 0});
  } else {
    m.iov = std::move(v);
  }
  me.tx_outstanding++;
  im.enqueue(std::move(m), dest);
  return true;
}

bool FakeEndpoint::inject(int dest, const iovec* iov, void** /*desc*/, size_t count, uint64_t tag) {
  auto& im = *net_.impl_;
  std::lock_guard<std::mutex> lk(im.mu);
  if (dest < 0 || dest >= net_.nprocs()) fail(BSPK_ERR_FABRIC, "fake fabric: inject to pid %d", dest);
  if (total_len(iov, count) > inject_size_)
    fail(BSPK_ERR_FABRIC, "fake fabric: inject of %zu bytes (inject size %zu)", total_len(iov, count), inject_size_);
  auto& me = im.eps[static_cast<size_t>(pid_)];
  if (im.fault(me, net_.cfg_.inject_eagain, ++me.calls_inject)) {
    im.ctr.eagain_inject++;
    return false;
  }
  im.ctr.injects++;
  FakeNetwork::Impl::Pending m;
  m.info = im.info_of(pid_, dest, iov, count, tag, true);
  m.bytes = gather(std::vector<iovec>(iov, iov + count));
  im.enqueue(std::move(m), dest);
  return true;
}

bool FakeEndpoint::post_read(int src, void* local, size_t len, void* /*desc*/, uint64_t raddr, uint64_t /*key*/,
                             fabric::OpContext* ctx) {
  auto& im = *net_.impl_;
  std::lock_guard<std::mutex> lk(im.mu);
  if (src < 0 || src >= net_.nprocs()) fail(BSPK_ERR_FABRIC, "fake fabric: read from pid %d", src);
  im.ctr.reads++;
  std::memcpy(local, reinterpret_cast<const void*>(static_cast<uintptr_t>(raddr)), len);
  im.eps[static_cast<size_t>(pid_)].cq.push_back(fabric::Completion{ctx, fabric::CompletionKind::Read, 0});
  return true;
}

ssize_t FakeEndpoint::poll(fabric::Completion* out, size_t n, fabric::CompletionError* err) {
  auto& im = *net_.impl_;
  std::lock_guard<std::mutex> lk(im.mu);
  auto& me = im.eps[static_cast<size_t>(pid_)];
  me.polls++;
  const Config& cfg = net_.cfg_;
  bool stall = cfg.stall_prob > 0 && std::uniform_real_distribution<double>(0, 1)(me.rng) < cfg.stall_prob;
  while (!stall && me.cq.size() < n && me.errq.empty()) {
    long k = im.pick(me, cfg.order);
    if (k < 0) break;
    im.deliver(pid_, static_cast<size_t>(k), cfg.completion);
  }
  if (!me.errq.empty()) {
    *err = me.errq.front();
    me.errq.pop_front();
    return -1;
  }
  size_t got = 0;
  while (got < n && !me.cq.empty()) {
    out[got] = me.cq.front();
    me.cq.pop_front();
    if (out[got].kind == fabric::CompletionKind::Sent && me.tx_outstanding) me.tx_outstanding--;
    ++got;
  }
  return static_cast<ssize_t>(got);
}

bool FakeEndpoint::busy() const {
  auto& im = *net_.impl_;
  std::lock_guard<std::mutex> lk(im.mu);
  const auto& me = im.eps[static_cast<size_t>(pid_)];
  return me.tx_outstanding > 0 || !me.cq.empty() || !me.errq.empty();
}

uint64_t FakeEndpoint::polls() const {
  auto& im = *net_.impl_;
  std::lock_guard<std::mutex> lk(im.mu);
  return im.eps[static_cast<size_t>(pid_)].polls;
}

uint64_t FakeEndpoint::waits() const {
  auto& im = *net_.impl_;
  std::lock_guard<std::mutex> lk(im.mu);
  return im.eps[static_cast<size_t>(pid_)].waits;
}

ssize_t FakeEndpoint::wait(fabric::Completion* out, size_t n, int timeout_ms, fabric::CompletionError* err) {
  {
    auto& im = *net_.impl_;
    std::lock_guard<std::mutex> lk(im.mu);
    im.eps[static_cast<size_t>(pid_)].waits++;
  }
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    ssize_t r = poll(out, n, err);
    if (r != 0 || std::chrono::steady_clock::now() >= end) return r;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

// ---------------------------------------------------------------------------

std::vector<std::string> FakeBootstrap::allgather(const std::string&) {
  fail(BSPK_ERR_BOOT, "the fake bootstrap has no all-gather (engines in one process need none)");
}

void FakeBootstrap::abort(int, const std::string&) { alive_ = false; }

void FakeBootstrap::publish_state(uint32_t superstep, boot::ProcState state) {
  if (state == boot::ProcState::InSync) waited_in_.push_back(superstep);
}

}  // namespace bspk::fake
