// tests/test_local.cpp -- the same-host ring fast path (fabric/local.h) in one
// process: two LocalTransports over endpoints of the in-process fake fabric
// (tests/fake_fabric.h) share one ring segment. What must hold: small messages
// of the ring tag travel through the rings (the provider never sees them) and
// land in the receives posted for that tag, byte for byte, in order per pair,
// a message of up to 4 KiB + header over several cells;
// other tags, larger messages and a full ring go to the provider; receives of
// the ring tag are split between the rings and the provider.
#include <gtest/gtest.h>

#include <cstring>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <set>
#include <algorithm>
#include <atomic>
#include <functional>
#include <thread>
#include <chrono>
#include <vector>

#include "base/shm_segment.h"
#include "fabric/local.h"
#include "tests/fake_fabric.h"

using namespace bspk;
using fabric::Completion;
using fabric::CompletionKind;
using fabric::LocalTransport;
using fabric::OpContext;

namespace {

constexpr uint64_t kRingTag = 2, kOtherTag = 1;

struct Pair {
  fake::FakeNetwork net;
  std::unique_ptr<LocalTransport> t[2];
  explicit Pair(const fake::Config& cfg, bool pull0 = false, bool pull1 = false) : net(cfg) {
    SharedSegment s0 = LocalTransport::create_segment("bspk.test_local." + std::to_string(getpid()), 2);
    SharedSegment s1 = SharedSegment::open(s0.name(), LocalTransport::segment_bytes(2));
    s0.unlink();
    t[0] = std::make_unique<LocalTransport>(net.endpoint(0), std::move(s0), 0, 2, kRingTag, pull0);
    t[1] = std::make_unique<LocalTransport>(net.endpoint(1), std::move(s1), 1, 2, kRingTag, pull1);
  }
};

fake::Config two() {
  fake::Config c;
  c.nprocs = 2;
  return c;
}

// A receive buffer: 64-byte header slot and a 4 KiB payload buffer.
struct RecvBuf {
  unsigned char hdr[64] = {};
  unsigned char body[4096] = {};
  OpContext ctx{};
  bool post(LocalTransport& t, uint64_t tag) {
    iovec iov[2] = {{hdr, sizeof hdr}, {body, sizeof body}};
    void* desc[2] = {nullptr, nullptr};
    return t.post_recv(iov, desc, 2, &ctx, tag);
  }
};

bool send(LocalTransport& t, int dest, uint32_t word, size_t payload, OpContext* ctx, uint64_t tag = kRingTag) {
  std::vector<unsigned char> hdr(64, 0xAB), body(payload, 0);
  std::memcpy(hdr.data(), &word, sizeof word);
  if (payload >= 4) std::memcpy(body.data(), &word, sizeof word);
  iovec iov[2] = {{hdr.data(), hdr.size()}, {body.data(), body.size()}};
  void* desc[2] = {nullptr, nullptr};
  return t.post_send(dest, iov, desc, payload ? 2 : 1, ctx, tag);
}

std::vector<Completion> drain(LocalTransport& t, int polls = 20) {
  std::vector<Completion> out;
  for (int i = 0; i < polls; ++i) {
    Completion c[16];
    fabric::CompletionError err;
    ssize_t n = t.poll(c, 16, &err);
    EXPECT_GE(n, 0) << err.message;
    for (ssize_t k = 0; k < n; ++k) out.push_back(c[k]);
  }
  return out;
}

TEST(LocalRings, SmallRingTagMessageBypassesTheProvider) {
  Pair p(two());
  RecvBuf rb;
  ASSERT_TRUE(rb.post(*p.t[1], kRingTag));
  OpContext sctx{};
  ASSERT_TRUE(send(*p.t[0], 1, 0x1234567u, 4, &sctx));
  auto s = drain(*p.t[0]);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].context, &sctx);
  EXPECT_EQ(s[0].kind, CompletionKind::Sent);
  auto r = drain(*p.t[1]);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].context, &rb.ctx);
  EXPECT_EQ(r[0].kind, CompletionKind::Received);
  EXPECT_EQ(r[0].len, 68u);
  uint32_t w;
  std::memcpy(&w, rb.hdr, 4);
  EXPECT_EQ(w, 0x1234567u);
  EXPECT_EQ(rb.hdr[63], 0xAB);
  std::memcpy(&w, rb.body, 4);
  EXPECT_EQ(w, 0x1234567u);
  EXPECT_TRUE(p.net.delivered().empty()) << "the provider carried a ring message";
}

// An arrival sink that records what it is handed, and takes it or not.
struct Sink : fabric::Transport::ArrivalSink {
  struct Got {
    int src;
    std::vector<unsigned char> bytes;
  };
  std::vector<Got> got;
  bool accept = true;
  LocalTransport* nested = nullptr;  // polled from inside take, when set
  size_t nested_completions = 0;
  bool take(int src, const iovec* pieces, size_t count, size_t len) override {
    Got g{src, {}};
    for (size_t i = 0; i < count; ++i) {
      auto* b = static_cast<const unsigned char*>(pieces[i].iov_base);
      g.bytes.insert(g.bytes.end(), b, b + pieces[i].iov_len);
    }
    EXPECT_EQ(g.bytes.size(), len) << "the pieces do not add up to the message";
    if (nested) nested_completions += drain(*nested, 1).size();
    if (accept) got.push_back(std::move(g));
    return accept;
  }
};

// Transport::set_arrival_sink: ring messages go to the sink as poll() finds
// them -- the header and payload bytes in order, over one cell or several
// (an injected message of 1 KiB takes three), with the sender's pid -- and
// use no posted receive and make no completion; a message the sink declines
// goes into a posted receive as without a sink; a poll from inside the sink
// hands over no ring message (the scan in progress owns the cells).
TEST(LocalRings, AnArrivalSinkTakesRingMessagesOutOfTheirCells) {
  Pair p(two());
  Sink sink;
  p.t[1]->set_arrival_sink(&sink);
  RecvBuf rb;
  ASSERT_TRUE(rb.post(*p.t[1], kRingTag));
  OpContext s1{}, s2{}, s3{};
  ASSERT_TRUE(send(*p.t[0], 1, 0xA1u, 4, &s1));
  std::vector<unsigned char> hdr(64, 0x5C), big(1024);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<unsigned char>(i * 7);
  iovec iov[2] = {{hdr.data(), hdr.size()}, {big.data(), big.size()}};
  void* desc[2] = {nullptr, nullptr};
  ASSERT_TRUE(p.t[0]->inject(1, iov, desc, 2, kRingTag));
  sink.nested = p.t[1].get();
  EXPECT_TRUE(drain(*p.t[1]).empty()) << "a taken message also completed a receive";
  EXPECT_EQ(sink.nested_completions, 0u) << "a poll from inside the sink delivered something";
  sink.nested = nullptr;
  ASSERT_EQ(sink.got.size(), 2u);
  EXPECT_EQ(sink.got[0].src, 0);
  ASSERT_EQ(sink.got[0].bytes.size(), 68u);
  uint32_t w;
  std::memcpy(&w, sink.got[0].bytes.data(), 4);
  EXPECT_EQ(w, 0xA1u);
  std::memcpy(&w, sink.got[0].bytes.data() + 64, 4);
  EXPECT_EQ(w, 0xA1u);
  ASSERT_EQ(sink.got[1].bytes.size(), 64u + big.size());
  EXPECT_TRUE(std::equal(big.begin(), big.end(), sink.got[1].bytes.begin() + 64)) << "a multi-cell message garbled";
  EXPECT_EQ(sink.got[1].bytes[0], 0x5C);
  // Declined: the posted receive gets it, as without a sink.
  sink.accept = false;
  ASSERT_TRUE(send(*p.t[0], 1, 0xB2u, 4, &s2));
  auto r = drain(*p.t[1]);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].context, &rb.ctx);
  EXPECT_EQ(r[0].len, 68u);
  std::memcpy(&w, rb.hdr, 4);
  EXPECT_EQ(w, 0xB2u);
  // Cleared: back to posted receives.
  p.t[1]->set_arrival_sink(nullptr);
  RecvBuf rb2;
  ASSERT_TRUE(rb2.post(*p.t[1], kRingTag));
  ASSERT_TRUE(send(*p.t[0], 1, 0xC3u, 4, &s3));
  r = drain(*p.t[1]);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].context, &rb2.ctx);
  EXPECT_EQ(sink.got.size(), 2u);
  EXPECT_TRUE(p.net.delivered().empty()) << "the provider carried a ring message";
}

TEST(LocalRings, OtherTagsAndLargeMessagesGoToTheProvider) {
  Pair p(two());
  RecvBuf a;
  ASSERT_TRUE(a.post(*p.t[1], kOtherTag));
  OpContext c1{}, c2{};
  ASSERT_TRUE(send(*p.t[0], 1, 7, 8, &c1, kOtherTag));
  // Fill the 32 receives kept for rings, so the next ring-tag receive goes to the provider.
  std::vector<RecvBuf> kept(LocalTransport::kLocalRecvs);
  for (auto& k : kept) ASSERT_TRUE(k.post(*p.t[1], kRingTag));
  // 64 + kRingMessage bytes: more than the rings carry (received into a larger buffer).
  std::vector<unsigned char> big(64 + LocalTransport::kRingMessage + 64);
  OpContext bctx{};
  iovec biov[1] = {{big.data(), big.size()}};
  void* bdesc[1] = {nullptr};
  ASSERT_TRUE(p.t[1]->post_recv(biov, bdesc, 1, &bctx, kRingTag));
  ASSERT_TRUE(send(*p.t[0], 1, 8, LocalTransport::kRingMessage, &c2));
  drain(*p.t[0]);
  auto r = drain(*p.t[1]);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(p.net.delivered().size(), 2u);
  bool got_a = false, got_big = false;
  for (auto& c : r) {
    got_a |= c.context == &a.ctx;
    got_big |= c.context == &bctx && c.len == 64 + LocalTransport::kRingMessage;
  }
  EXPECT_TRUE(got_a && got_big) << "a provider message landed in a receive kept for the rings";
}

// Messages of 0 .. 4096 payload bytes (one to nine cells) in a stream longer
// than the ring, received while it is being filled: every byte and the order
// per pair survive the wrap-around, and the provider carries none of them.
TEST(LocalRings, MultiCellMessagesWrapAroundTheRingIntact) {
  Pair p(two());
  const size_t sizes[] = {0, 1, 431, 432, 433, 1000, 2000, 4095, 4096, 7};
  const int n = 200;
  int sent = 0, got = 0;
  std::vector<RecvBuf> rb(LocalTransport::kLocalRecvs);
  for (auto& r : rb) ASSERT_TRUE(r.post(*p.t[1], kRingTag));
  for (int rounds = 0; got < n; ++rounds) {
    ASSERT_LT(rounds, 10 * n) << "only " << got << " of " << sent << " messages arrived";
    while (sent < n) {
      size_t payload = sizes[sent % 10];
      std::vector<unsigned char> hdr(64), body(payload);
      for (size_t i = 0; i < 64; ++i) hdr[i] = static_cast<unsigned char>(sent + i);
      for (size_t i = 0; i < payload; ++i) body[i] = static_cast<unsigned char>(sent * 3 + i * 11);
      iovec iov[2] = {{hdr.data(), hdr.size()}, {body.data(), body.size()}};
      void* desc[2] = {nullptr, nullptr};
      if (!p.t[0]->inject(1, iov, desc, payload ? 2 : 1, kRingTag)) break;  // ring full (the fake cannot inject)
      ++sent;
    }
    for (auto& c : drain(*p.t[1], 1)) {
      auto* r = reinterpret_cast<RecvBuf*>(reinterpret_cast<char*>(c.context) - offsetof(RecvBuf, ctx));
      size_t payload = sizes[got % 10];
      ASSERT_EQ(c.len, 64 + payload) << "message " << got;
      for (size_t i = 0; i < 64; ++i) ASSERT_EQ(r->hdr[i], static_cast<unsigned char>(got + i)) << "message " << got;
      for (size_t i = 0; i < payload; ++i)
        ASSERT_EQ(r->body[i], static_cast<unsigned char>(got * 3 + i * 11)) << "message " << got << " byte " << i;
      ++got;
      ASSERT_TRUE(r->post(*p.t[1], kRingTag));
    }
  }
  EXPECT_EQ(sent, n);
  EXPECT_TRUE(p.net.delivered().empty()) << "the provider carried a ring message";
}

// A message needing more cells than are free waits (inject says "queue full"
// when the provider cannot take it) and goes in once the consumer frees them.
TEST(LocalRings, MultiCellMessageWaitsForEnoughFreeCells) {
  Pair p(two());
  unsigned char hdr[64] = {9};
  std::vector<unsigned char> body(4096, 0x5A);
  void* desc[2] = {nullptr, nullptr};
  iovec one[1] = {{hdr, sizeof hdr}};
  const size_t fill = LocalTransport::kCells - LocalTransport::kMaxMessageCells + 1;  // leaves 8 cells free
  for (size_t i = 0; i < fill; ++i) ASSERT_TRUE(p.t[0]->inject(1, one, desc, 1, kRingTag));
  iovec nine[2] = {{hdr, sizeof hdr}, {body.data(), body.size()}};
  EXPECT_FALSE(p.t[0]->inject(1, nine, desc, 2, kRingTag)) << "nine cells written over eight free ones";
  RecvBuf r;
  ASSERT_TRUE(r.post(*p.t[1], kRingTag));
  ASSERT_EQ(drain(*p.t[1], 1).size(), 1u);  // frees one cell
  EXPECT_TRUE(p.t[0]->inject(1, nine, desc, 2, kRingTag));
  EXPECT_TRUE(p.net.delivered().empty());
}

TEST(LocalRings, FullRingFallsBackToTheProviderAndOrderPerPairHolds) {
  Pair p(two());
  const size_t n = LocalTransport::kCells + 3;
  std::vector<OpContext> ctx(n);
  for (size_t i = 0; i < n; ++i) ASSERT_TRUE(send(*p.t[0], 1, static_cast<uint32_t>(i), 4, &ctx[i]));
  EXPECT_EQ(drain(*p.t[0]).size(), n);  // 64 from the rings, 3 from the provider (the fake completes at post)
  // The receiver takes them 32 at a time (its receives kept for rings), in send order.
  std::vector<RecvBuf> rb(LocalTransport::kLocalRecvs);
  uint32_t expect = 0;
  for (int round = 0; round < 2; ++round) {
    for (auto& r : rb) ASSERT_TRUE(r.post(*p.t[1], kRingTag));
    auto got = drain(*p.t[1], 2);
    ASSERT_EQ(got.size(), LocalTransport::kLocalRecvs);
    for (auto& c : got) {
      auto* r = reinterpret_cast<RecvBuf*>(reinterpret_cast<char*>(c.context) - offsetof(RecvBuf, ctx));
      uint32_t w;
      std::memcpy(&w, r->hdr, 4);
      EXPECT_EQ(w, expect++);
    }
  }
  // The three that did not fit went through the provider.
  RecvBuf extra[3];
  // 35 more receives: 32 are kept for the rings, 3 go to the provider.
  for (auto& r : extra) ASSERT_TRUE(r.post(*p.t[1], kRingTag));
  for (auto& r : rb) ASSERT_TRUE(r.post(*p.t[1], kRingTag));
  auto rest = drain(*p.t[1]);
  EXPECT_EQ(rest.size(), 3u);
  EXPECT_EQ(p.net.delivered().size(), 3u);
}

TEST(LocalRings, SelfSendsAndInject) {
  Pair p(two());
  RecvBuf rb;
  ASSERT_TRUE(rb.post(*p.t[0], kRingTag));
  unsigned char hdr[64] = {1, 2, 3};
  iovec iov[1] = {{hdr, sizeof hdr}};
  void* desc[1] = {nullptr};
  ASSERT_TRUE(p.t[0]->inject(0, iov, desc, 1, kRingTag));  // to itself, no completion
  auto got = drain(*p.t[0]);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].context, &rb.ctx);
  EXPECT_EQ(got[0].len, 64u);
  EXPECT_EQ(rb.hdr[2], 3);
  // A full ring: inject cannot fall back (the fake's inject size is 0) and says "queue full".
  for (size_t i = 0; i < LocalTransport::kCells; ++i) ASSERT_TRUE(p.t[0]->inject(1, iov, desc, 1, kRingTag));
  EXPECT_FALSE(p.t[0]->inject(1, iov, desc, 1, kRingTag));
  EXPECT_FALSE(p.t[0]->can_block());
}

// ---- Pulls: larger messages copied by the receiver from the sender's memory.

// A message the sender keeps alive until its Sent completion (pulls read it late).
struct SendBuf {
  std::vector<unsigned char> hdr, body;
  OpContext ctx{};
  SendBuf(uint32_t word, size_t payload) : hdr(64, 0xCD), body(payload) {
    std::memcpy(hdr.data(), &word, sizeof word);
    for (size_t i = 0; i < payload; ++i) body[i] = static_cast<unsigned char>(word + i * 7);
  }
  bool post(LocalTransport& t, int dest, uint64_t tag = kOtherTag) {
    iovec iov[2] = {{hdr.data(), hdr.size()}, {body.data(), body.size()}};
    void* desc[2] = {nullptr, nullptr};
    return t.post_send(dest, iov, desc, body.empty() ? 1 : 2, &ctx, tag);
  }
  bool inject(LocalTransport& t, int dest, uint64_t tag = kOtherTag) {
    iovec iov[2] = {{hdr.data(), hdr.size()}, {body.data(), body.size()}};
    void* desc[2] = {nullptr, nullptr};
    return t.inject(dest, iov, desc, body.empty() ? 1 : 2, tag);
  }
};

bool same_bytes(const RecvBuf& r, const SendBuf& s) {
  return std::memcmp(r.hdr, s.hdr.data(), 64) == 0 && std::memcmp(r.body, s.body.data(), s.body.size()) == 0;
}

// The provider's completion queue is read only when something can be there
// (local.h, "Polling the provider"): idle, on every kPollEvery-th poll; a
// message sent through the provider (posted or injected) is taken by the
// receiver's very next poll; the sender reads its own completions at once.
TEST(LocalRings, ProviderIsPolledOnlyWhenItCanHaveWork) {
  fake::Config cfg = two();
  cfg.inject_size = 256;
  Pair p(cfg);
  auto& ep0 = p.net.endpoint(0);
  auto& ep1 = p.net.endpoint(1);
  RecvBuf rb[2];
  for (auto& r : rb) ASSERT_TRUE(r.post(*p.t[1], kOtherTag));  // other tags: on the provider
  auto polls = [](LocalTransport& t, int n) {
    size_t got = 0;
    for (int i = 0; i < n; ++i) {
      Completion c[16];
      fabric::CompletionError err;
      ssize_t k = t.poll(c, 16, &err);
      EXPECT_GE(k, 0) << err.message;
      got += k > 0 ? static_cast<size_t>(k) : 0;
    }
    return got;
  };
  const int idle = 10 * static_cast<int>(LocalTransport::kPollEvery);
  uint64_t before = ep1.polls();
  EXPECT_EQ(polls(*p.t[1], idle), 0u);
  EXPECT_EQ(ep1.polls() - before, 10u) << "an idle provider is polled on every kPollEvery-th poll only";

  // A posted send through the provider: the receiver's next poll takes it.
  SendBuf s(0x5151, 100);
  ASSERT_TRUE(s.post(*p.t[0], 1, kOtherTag));
  {
    Completion c[16];
    fabric::CompletionError err;
    ASSERT_EQ(p.t[1]->poll(c, 16, &err), 1);
    EXPECT_EQ(c[0].kind, CompletionKind::Received);
    EXPECT_EQ(c[0].context, &rb[0].ctx);
    EXPECT_TRUE(same_bytes(rb[0], s));
    ASSERT_EQ(p.t[0]->poll(c, 16, &err), 1);  // the sender's own completion, at once
    EXPECT_EQ(c[0].kind, CompletionKind::Sent);
    EXPECT_EQ(c[0].context, &s.ctx);
  }
  before = ep1.polls();
  EXPECT_EQ(polls(*p.t[1], idle), 0u);
  EXPECT_EQ(ep1.polls() - before, 10u) << "back to idle once the message was taken";

  // An injected send through the provider (another tag: not a ring's).
  unsigned char hdr[64] = {9, 8, 7};
  iovec iov[1] = {{hdr, sizeof hdr}};
  void* desc[1] = {nullptr};
  ASSERT_TRUE(p.t[0]->inject(1, iov, desc, 1, kOtherTag));
  {
    Completion c[16];
    fabric::CompletionError err;
    ASSERT_EQ(p.t[1]->poll(c, 16, &err), 1);
    EXPECT_EQ(c[0].context, &rb[1].ctx);
    EXPECT_EQ(rb[1].hdr[2], 7);
  }
  before = ep0.polls();
  polls(*p.t[0], static_cast<int>(LocalTransport::kInjectPolls));
  EXPECT_EQ(ep0.polls() - before, LocalTransport::kInjectPolls) << "the injecting side keeps polling for a while";
}

// An injection of another tag (a frame-class message the engine would
// inject: a store of a few KiB that fills its region) is refused when it can
// be pulled, so that the engine posts it and the receiver pulls it; through
// the provider it cost a bounce copy and a process_vm_readv (fabric/local.h).
TEST(LocalPulls, InjectOfAnotherTagIsRefusedForAPull) {
  fake::Config cfg = two();
  cfg.inject_size = 8192;
  Pair p(cfg, true, true);
  RecvBuf rb;
  ASSERT_TRUE(rb.post(*p.t[1], kOtherTag));
  SendBuf s(7, 8);
  EXPECT_FALSE(s.inject(*p.t[0], 1)) << "a pullable inject of another tag was taken";
  EXPECT_TRUE(p.net.delivered().empty()) << "a refused inject reached the provider";
  ASSERT_TRUE(s.post(*p.t[0], 1));  // what the engine does next
  auto r = drain(*p.t[1]);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].context, &rb.ctx);
  EXPECT_EQ(r[0].len, 64u + 8u);
  EXPECT_TRUE(same_bytes(rb, s));
  EXPECT_TRUE(p.net.delivered().empty()) << "the provider carried a pulled message";
}

// Without pulls the same injection goes through the provider.
TEST(LocalPulls, InjectOfAnotherTagWithoutPullsGoesThroughTheProvider) {
  fake::Config cfg = two();
  cfg.inject_size = 8192;
  Pair p(cfg);
  RecvBuf rb;
  ASSERT_TRUE(rb.post(*p.t[1], kOtherTag));
  SendBuf s(7, 8);
  ASSERT_TRUE(s.inject(*p.t[0], 1)) << "without pulls, another tag's inject must be taken";
  auto r = drain(*p.t[1], 200);
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(p.net.delivered().size(), 1u) << "it went through the provider";
  EXPECT_EQ(r[0].context, &rb.ctx);
  EXPECT_TRUE(same_bytes(rb, s));
}

TEST(LocalPulls, LargeMessageIsCopiedByTheReceiverAndCompletesTheSendOnlyThen) {
  Pair p(two(), true, true);
  SendBuf s(0xBEEF, 4000);
  RecvBuf rb;
  ASSERT_TRUE(rb.post(*p.t[1], kOtherTag));
  ASSERT_TRUE(s.post(*p.t[0], 1));
  EXPECT_TRUE(drain(*p.t[0], 3).empty()) << "Sent before the receiver took the message";
  auto r = drain(*p.t[1]);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].context, &rb.ctx);
  EXPECT_EQ(r[0].kind, CompletionKind::Received);
  EXPECT_EQ(r[0].len, 64u + 4000u);
  EXPECT_TRUE(same_bytes(rb, s));
  auto sent = drain(*p.t[0]);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].context, &s.ctx);
  EXPECT_EQ(sent[0].kind, CompletionKind::Sent);
  EXPECT_TRUE(p.net.delivered().empty()) << "the provider carried a pulled message";
}

TEST(LocalPulls, RingTagMessagesLargerThanACellArePulledUnlessInjected) {
  Pair p(two(), true, true);
  SendBuf s(42, 1000);  // 1064 bytes: more than a cell
  RecvBuf rb;
  ASSERT_TRUE(rb.post(*p.t[1], kRingTag));
  ASSERT_TRUE(s.post(*p.t[0], 1, kRingTag));
  EXPECT_TRUE(drain(*p.t[0], 1).empty()) << "pulled: Sent only once the receiver has copied";
  auto r = drain(*p.t[1]);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].len, 1064u);
  EXPECT_TRUE(same_bytes(rb, s));
  EXPECT_EQ(drain(*p.t[0]).size(), 1u);
  // Injected (the buffer is reusable at return, so it cannot be pulled): three ring cells.
  SendBuf s2(43, 1000);
  RecvBuf rb2;
  ASSERT_TRUE(rb2.post(*p.t[1], kRingTag));
  iovec iov[2] = {{s2.hdr.data(), 64}, {s2.body.data(), 1000}};
  void* desc[2] = {nullptr, nullptr};
  ASSERT_TRUE(p.t[0]->inject(1, iov, desc, 2, kRingTag));
  r = drain(*p.t[1]);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(same_bytes(rb2, s2));
  EXPECT_TRUE(p.net.delivered().empty());
}

// A full ring with pulls on: inject() refuses (the engine then posts the
// message as an operation) instead of handing it to the provider, whose
// bounce-and-cross-memory path cost shm 3.3 us per 4 KiB message; a posted
// message that meets the full ring, even one of a single cell, is pulled.
// Nothing reaches the provider and every byte arrives.
TEST(LocalPulls, FullRingWithPullsRefusesInjectAndPullsPostedMessages) {
  fake::Config cfg = two();
  cfg.inject_size = 8192;  // a provider that could take them: it must not be asked
  Pair p(cfg, true, true);
  std::vector<std::unique_ptr<SendBuf>> ring;
  const size_t nine = 4096;  // 4 KiB + header: kMaxMessageCells cells
  for (size_t used = 0; used + LocalTransport::kMaxMessageCells <= LocalTransport::kCells;
       used += LocalTransport::kMaxMessageCells) {
    ring.push_back(std::make_unique<SendBuf>(static_cast<uint32_t>(ring.size()), nine));
    iovec iov[2] = {{ring.back()->hdr.data(), 64}, {ring.back()->body.data(), nine}};
    void* desc[2] = {nullptr, nullptr};
    ASSERT_TRUE(p.t[0]->inject(1, iov, desc, 2, kRingTag));
  }
  SendBuf big(100, nine), small(101, 8);
  iovec iov[2] = {{big.hdr.data(), 64}, {big.body.data(), nine}};
  void* desc[2] = {nullptr, nullptr};
  EXPECT_FALSE(p.t[0]->inject(1, iov, desc, 2, kRingTag)) << "a full ring with pulls must refuse, not use the provider";
  ASSERT_TRUE(big.post(*p.t[0], 1, kRingTag));
  // Fill the ring's last cells so that a one-cell message meets a full ring too.
  std::vector<std::unique_ptr<SendBuf>> fill;
  for (size_t used = ring.size() * LocalTransport::kMaxMessageCells; used < LocalTransport::kCells; ++used) {
    fill.push_back(std::make_unique<SendBuf>(static_cast<uint32_t>(200 + used), 8));
    iovec f[2] = {{fill.back()->hdr.data(), 64}, {fill.back()->body.data(), 8}};
    ASSERT_TRUE(p.t[0]->inject(1, f, desc, 2, kRingTag));
  }
  ASSERT_TRUE(small.post(*p.t[0], 1, kRingTag));
  EXPECT_TRUE(p.net.delivered().empty()) << "nothing may go through the provider";
  // The receiver takes everything: ring messages first (each source's ring, then its pulls).
  const size_t total = ring.size() + fill.size() + 2;
  std::vector<RecvBuf> rb(total);
  size_t got = 0;
  std::set<uint32_t> seen;
  for (size_t posted = 0; got < total;) {
    while (posted < total && posted - got < LocalTransport::kLocalRecvs) ASSERT_TRUE(rb[posted++].post(*p.t[1], kRingTag));
    auto c = drain(*p.t[1], 4);
    ASSERT_FALSE(c.empty()) << "stalled after " << got << " of " << total;
    for (auto& x : c) {
      auto* r = reinterpret_cast<RecvBuf*>(reinterpret_cast<char*>(x.context) - offsetof(RecvBuf, ctx));
      uint32_t w;
      std::memcpy(&w, r->hdr, 4);
      const SendBuf* s = w < 100 ? ring[w].get() : w == 100 ? &big : w == 101 ? &small : fill[w - 200 - ring.size() * LocalTransport::kMaxMessageCells].get();
      EXPECT_EQ(x.len, 64 + s->body.size()) << "message " << w;
      EXPECT_TRUE(same_bytes(*r, *s)) << "message " << w;
      seen.insert(w);
    }
    got += c.size();
  }
  EXPECT_EQ(seen.size(), total);
  EXPECT_EQ(drain(*p.t[0]).size(), 2u) << "the two pulled sends complete once taken";
  EXPECT_TRUE(p.net.delivered().empty());
}

TEST(LocalPulls, FullPullRingIsAFullQueueAndEveryMessageArrivesInOrder) {
  Pair p(two(), true, true);
  const size_t n = LocalTransport::kPullCells;
  std::vector<std::unique_ptr<SendBuf>> s;
  for (size_t i = 0; i < n; ++i) {
    s.push_back(std::make_unique<SendBuf>(static_cast<uint32_t>(i), 600));
    ASSERT_TRUE(s.back()->post(*p.t[0], 1));
  }
  SendBuf extra(9999, 600);
  EXPECT_FALSE(extra.post(*p.t[0], 1)) << "a full pull ring must refuse (the engine retries), not drop";
  // The receiver takes them 16 at a time (the receives it keeps for pulls), in order.
  std::vector<RecvBuf> rb(LocalTransport::kLocalPullRecvs);
  uint32_t expect = 0;
  while (expect < n) {
    for (auto& r : rb) ASSERT_TRUE(r.post(*p.t[1], kOtherTag));
    auto got = drain(*p.t[1], 2);
    ASSERT_EQ(got.size(), LocalTransport::kLocalPullRecvs);
    for (auto& c : got) {
      auto* r = reinterpret_cast<RecvBuf*>(reinterpret_cast<char*>(c.context) - offsetof(RecvBuf, ctx));
      ASSERT_TRUE(same_bytes(*r, *s[expect])) << "message " << expect;
      ++expect;
    }
  }
  EXPECT_EQ(drain(*p.t[0]).size(), n);
  EXPECT_TRUE(extra.post(*p.t[0], 1));
  EXPECT_TRUE(p.net.delivered().empty());
}

TEST(LocalPulls, SendToItselfIsCopied) {
  Pair p(two(), true, true);
  SendBuf s(77, 3000);
  RecvBuf rb;
  ASSERT_TRUE(rb.post(*p.t[0], kOtherTag));
  ASSERT_TRUE(s.post(*p.t[0], 0));
  auto got = drain(*p.t[0]);
  ASSERT_EQ(got.size(), 2u);  // Received, then Sent at the next poll
  EXPECT_TRUE(same_bytes(rb, s));
}

// Where the kernel refuses cross-memory reads, the receiver hands its receives
// to the provider and the sender re-sends: nothing lost, later messages too.
TEST(LocalPulls, RefusedPullsGoThroughTheProviderAndNothingIsLost) {
  Pair p(two(), true, true);
  p.t[1]->refuse_next_pull_for_test();
  std::vector<std::unique_ptr<SendBuf>> s;
  for (uint32_t i = 0; i < 3; ++i) {
    s.push_back(std::make_unique<SendBuf>(100 + i, 2000));
    ASSERT_TRUE(s.back()->post(*p.t[0], 1));
  }
  std::vector<RecvBuf> rb(4);
  for (auto& r : rb) ASSERT_TRUE(r.post(*p.t[1], kOtherTag));
  EXPECT_TRUE(drain(*p.t[1], 2).empty());  // refused: the receives moved to the provider
  EXPECT_FALSE(p.t[1]->pulling());
  EXPECT_EQ(drain(*p.t[0]).size(), 3u);    // re-sent through the provider (the fake completes at post)
  s.push_back(std::make_unique<SendBuf>(103, 2000));
  ASSERT_TRUE(s.back()->post(*p.t[0], 1));  // later ones go to the provider directly
  EXPECT_EQ(drain(*p.t[0]).size(), 1u);
  auto r = drain(*p.t[1]);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(p.net.delivered().size(), 4u);
  std::set<uint32_t> words;
  for (auto& c : r) {
    auto* b = reinterpret_cast<RecvBuf*>(reinterpret_cast<char*>(c.context) - offsetof(RecvBuf, ctx));
    uint32_t w;
    std::memcpy(&w, b->hdr, 4);
    words.insert(w);
    ASSERT_TRUE(same_bytes(*b, *s[w - 100]));
  }
  EXPECT_EQ(words, (std::set<uint32_t>{100, 101, 102, 103}));
}

// A receiver without pulls (another setting) refuses them too.
TEST(LocalPulls, ReceiverWithoutPullsGetsThemThroughTheProvider) {
  Pair p(two(), true, false);
  SendBuf s(5, 4000);
  RecvBuf rb;
  ASSERT_TRUE(rb.post(*p.t[1], kOtherTag));
  ASSERT_TRUE(s.post(*p.t[0], 1));
  EXPECT_TRUE(drain(*p.t[1], 2).empty());
  EXPECT_EQ(drain(*p.t[0]).size(), 1u);
  auto r = drain(*p.t[1]);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(same_bytes(rb, s));
  EXPECT_EQ(p.net.delivered().size(), 1u);
}

// The /proc/self/maps line of the mapping holding address a ("" if none).
std::string mapping_of(const void* a) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  auto x = reinterpret_cast<uintptr_t>(a);
  while (std::getline(maps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2 && x >= lo && x < hi) return line;
  }
  return "";
}

// A 64-byte header and 4000 bytes at src (process 0's memory) sent to
// process 1, which refuses cross-memory reads (test hook): the message must
// arrive whole, pulled with memcpy, and complete at the sender.
void expect_pulled_without_cross_memory_read(Pair& p, unsigned char* src) {
  for (size_t i = 0; i < 64 + 4000; ++i) src[i] = static_cast<unsigned char>(i * 13 + 1);
  p.t[1]->refuse_next_pull_for_test();
  RecvBuf rb;
  ASSERT_TRUE(rb.post(*p.t[1], kOtherTag));
  OpContext ctx{};
  iovec iov[2] = {{src, 64}, {src + 64, 4000}};
  void* desc[2] = {nullptr, nullptr};
  ASSERT_TRUE(p.t[0]->post_send(1, iov, desc, 2, &ctx, kOtherTag));
  auto r = drain(*p.t[1]);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].len, 4064u);
  EXPECT_TRUE(p.t[1]->pulling()) << "the message went through process_vm_readv";
  EXPECT_EQ(std::memcmp(rb.hdr, src, 64), 0);
  EXPECT_EQ(std::memcmp(rb.body, src + 64, 4000), 0);
  EXPECT_EQ(drain(*p.t[0]).size(), 1u);
  EXPECT_TRUE(p.net.delivered().empty());
}

// Memory from alloc_memory (the pools' slabs) is host-shared: the receiver
// maps the sender's slab and copies with memcpy, without process_vm_readv
// (a receiver told to refuse cross-memory reads still gets the message).
TEST(LocalPulls, MessagesFromSharedSlabsAreCopiedWithoutCrossMemoryReads) {
  Pair p(two(), true, true);
  const size_t len = size_t{1} << 20;
  auto* slab = static_cast<unsigned char*>(p.t[0]->alloc_memory(len, len));
  ASSERT_NE(slab, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(slab) % len, 0u) << "slab not aligned";
  expect_pulled_without_cross_memory_read(p, slab);
  p.t[0]->free_memory(slab, len);
}

// Runs (local.h "Runs"): contiguous runs come from one host-shared arena,
// listed once, so a message from a run is pulled with memcpy like one from a
// frame slab (the receiver refuses cross-memory reads here and still gets
// it). A freed run's range is reused first fit and coalesced with its
// neighbours, and its pages are released: the next run there reads zeros,
// never the bytes of the run before.
TEST(LocalPulls, RunsComeFromASharedArenaAndArePulledWithoutCrossMemoryReads) {
  Pair p(two(), true, true);
  EXPECT_EQ(p.t[0]->run_arena_bytes(), 0u) << "made before the first run";
  const size_t frame = 65536, len = 3 * frame;
  auto* run = static_cast<unsigned char*>(p.t[0]->alloc_run_memory(len, frame));
  ASSERT_NE(run, nullptr);
  EXPECT_GT(p.t[0]->run_arena_bytes(), len);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(run) % frame, 0u) << "run not aligned";
  EXPECT_NE(mapping_of(run).find("bspk-runs"), std::string::npos) << mapping_of(run);
  expect_pulled_without_cross_memory_read(p, run + 2 * frame);

  // Two more runs after it; free the first two, and one run of their joint
  // size takes their place; its bytes are zeros.
  auto* second = static_cast<unsigned char*>(p.t[0]->alloc_run_memory(frame + 1, frame));
  auto* third = static_cast<unsigned char*>(p.t[0]->alloc_run_memory(frame, frame));
  ASSERT_NE(second, nullptr);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(second, run + len) << "first fit";
  EXPECT_EQ(third, second + 2 * frame) << "a run takes whole pages, aligned";
  std::memset(second, 0x5A, frame + 1);
  std::memset(third, 0x6B, frame);
  p.t[0]->free_run_memory(second, frame + 1);
  p.t[0]->free_run_memory(run, len);
  auto* joint = static_cast<unsigned char*>(p.t[0]->alloc_run_memory(len + 2 * frame, frame));
  EXPECT_EQ(joint, run) << "the two freed ranges were not coalesced";
  ASSERT_NE(joint, nullptr);
  size_t nonzero = 0;
  for (size_t i = 0; i < len + 2 * frame; ++i) nonzero += joint[i] != 0;
  EXPECT_EQ(nonzero, 0u) << "a freed run's pages were not released";
  EXPECT_EQ(third[frame - 1], 0x6B) << "freeing its neighbours touched a live run";
  // Many runs of a region's life: the same range again and again.
  for (int i = 0; i < 1000; ++i) {
    void* q = p.t[0]->alloc_run_memory(frame, frame);
    ASSERT_EQ(q, static_cast<void*>(joint + len + 2 * frame + frame)) << "run " << i;
    p.t[0]->free_run_memory(q, frame);
  }
  p.t[0]->free_run_memory(joint, len + 2 * frame);
  p.t[0]->free_run_memory(third, frame);
}

// Drains process 1's completions while process 0 calls assist() from another
// thread, as a waiting engine does; *helped: the calls that copied a chunk.
std::vector<Completion> drain_while_helping(Pair& p, int* helped) {
  std::atomic<bool> stop{false};
  std::atomic<int> n{0};
  std::thread sender([&] {
    while (!stop.load()) n += p.t[0]->assist() ? 1 : 0;
  });
  auto r = drain(*p.t[1]);
  stop = true;
  sender.join();
  *helped = n.load();
  return r;
}

// Assisted pulls (local.h): a payload of 8 chunks and a bit into a receive
// in the receiver's own slab. The receiver holds its copy (test hook) until
// the sender, calling assist() from another thread as a waiting engine does,
// has claimed 3 chunks; then both copy. Every byte arrives once, where it
// belongs; the send completes; the sender finds nothing left to do for a
// message that is done, nor with nothing pending.
TEST(LocalPulls, SenderCopiesPartOfALargePullIntoTheReceiversSlab) {
  Pair p(two(), true, true);
  const size_t slab_len = size_t{1} << 20, payload = 8 * LocalTransport::kAssistChunk + 1000;
  auto* src = static_cast<unsigned char*>(p.t[0]->alloc_memory(slab_len, slab_len));
  auto* dst = static_cast<unsigned char*>(p.t[1]->alloc_memory(slab_len, slab_len));
  ASSERT_NE(src, nullptr);
  ASSERT_NE(dst, nullptr);
  EXPECT_FALSE(p.t[0]->assist()) << "nothing pending";
  for (size_t i = 0; i < 64 + payload; ++i) src[i] = static_cast<unsigned char>(i * 131 + i / 4096 + 7);
  std::memset(dst, 0, payload + 64);
  unsigned char hdr[64] = {};
  OpContext rctx{}, sctx{};
  iovec riov[2] = {{hdr, sizeof hdr}, {dst, payload + 64}};  // room to spare past the payload
  void* desc[2] = {nullptr, nullptr};
  ASSERT_TRUE(p.t[1]->post_recv(riov, desc, 2, &rctx, kOtherTag));
  iovec siov[2] = {{src, 64}, {src + 64, payload}};
  ASSERT_TRUE(p.t[0]->post_send(1, siov, desc, 2, &sctx, kOtherTag));
  p.t[1]->hold_next_assisted_pull_for_test(3);
  int helped = 0;
  auto r = drain_while_helping(p, &helped);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].context, &rctx);
  EXPECT_EQ(r[0].len, 64 + payload);
  EXPECT_GE(helped, 1) << "the sender copied no chunk";
  EXPECT_EQ(std::memcmp(hdr, src, 64), 0);
  EXPECT_EQ(std::memcmp(dst, src + 64, payload), 0) << "payload differs";
  for (size_t i = payload; i < payload + 64; ++i) ASSERT_EQ(dst[i], 0) << "written past the payload at " << i;
  EXPECT_FALSE(p.t[0]->assist()) << "a message already copied";
  auto s = drain(*p.t[0]);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].context, &sctx);
  EXPECT_EQ(s[0].kind, CompletionKind::Sent);
  EXPECT_FALSE(p.t[0]->assist()) << "nothing pending";
  EXPECT_TRUE(p.net.delivered().empty());
  p.t[0]->free_memory(src, slab_len);
  p.t[1]->free_memory(dst, slab_len);
}

// A train of pulls (local.h, "Assisted pulls"): 11 messages to one process,
// more than kAssistSlots, with a small one (not assisted) in the middle, are
// published kAssistSlots at a time and copied by both processes. Every
// message arrives whole in its own receive, the receives complete in send
// order, the sends complete, in order, only after that; the sender copied
// some chunks.
TEST(LocalPulls, ATrainOfLargePullsIsCopiedByBothInOrder) {
  Pair p(two(), true, true);
  constexpr size_t kMsgs = 11, kSmall = 5, kRoom = 4 * LocalTransport::kAssistChunk;
  static_assert(kMsgs > LocalTransport::kAssistSlots, "two trains");
  const size_t slab_len = size_t{1} << 20;
  auto* src = static_cast<unsigned char*>(p.t[0]->alloc_memory(slab_len, slab_len));
  auto* dst = static_cast<unsigned char*>(p.t[1]->alloc_memory(slab_len, slab_len));
  ASSERT_NE(src, nullptr);
  ASSERT_NE(dst, nullptr);
  auto payload = [&](size_t m) { return m == kSmall ? size_t{1000} : 3 * LocalTransport::kAssistChunk + 100 * m; };
  for (size_t i = 0; i < kMsgs * (64 + kRoom); ++i) src[i] = static_cast<unsigned char>(i * 7 + i / 5000 + 3);
  std::memset(dst, 0, kMsgs * kRoom);
  unsigned char hdr[kMsgs][64] = {};
  OpContext rctx[kMsgs] = {}, sctx[kMsgs] = {};
  void* desc[2] = {nullptr, nullptr};
  for (size_t m = 0; m < kMsgs; ++m) {
    iovec riov[2] = {{hdr[m], 64}, {dst + m * kRoom, kRoom}};
    ASSERT_TRUE(p.t[1]->post_recv(riov, desc, 2, &rctx[m], kOtherTag));
  }
  for (size_t m = 0; m < kMsgs; ++m) {
    unsigned char* at = src + m * (64 + kRoom);
    iovec siov[2] = {{at, 64}, {at + 64, payload(m)}};
    ASSERT_TRUE(p.t[0]->post_send(1, siov, desc, 2, &sctx[m], kOtherTag));
  }
  p.t[1]->hold_next_assisted_pull_for_test(2);
  int helped = 0;
  auto r = drain_while_helping(p, &helped);
  ASSERT_EQ(r.size(), kMsgs);
  EXPECT_GE(helped, 1) << "the sender copied no chunk";
  std::vector<bool> used(kMsgs, false);
  for (size_t m = 0; m < kMsgs; ++m) {  // the m-th completion is message m, in whichever receive it took
    EXPECT_EQ(r[m].kind, CompletionKind::Received);
    EXPECT_EQ(r[m].len, 64 + payload(m)) << "message " << m;
    const size_t k = static_cast<size_t>(r[m].context - rctx);
    ASSERT_LT(k, kMsgs) << "message " << m << ": not one of the receives";
    EXPECT_FALSE(used[k]) << "receive " << k << " completed twice";
    used[k] = true;
    const unsigned char* at = src + m * (64 + kRoom);
    EXPECT_EQ(std::memcmp(hdr[k], at, 64), 0) << "message " << m << ": header";
    EXPECT_EQ(std::memcmp(dst + k * kRoom, at + 64, payload(m)), 0) << "message " << m << ": payload";
    for (size_t i = payload(m); i < kRoom; ++i)
      ASSERT_EQ(dst[k * kRoom + i], 0) << "message " << m << ": written past its payload at " << i;
  }
  auto s = drain(*p.t[0]);
  ASSERT_EQ(s.size(), kMsgs);
  for (size_t m = 0; m < kMsgs; ++m) {
    EXPECT_EQ(s[m].context, &sctx[m]) << "send " << m << " out of order";
    EXPECT_EQ(s[m].kind, CompletionKind::Sent);
  }
  EXPECT_FALSE(p.t[0]->assist()) << "nothing pending";
  EXPECT_TRUE(p.net.delivered().empty());
  p.t[0]->free_memory(src, slab_len);
  p.t[1]->free_memory(dst, slab_len);
}

// Without pulls alloc_memory is private memory, as before; with them a memfd.
TEST(LocalPulls, SlabsAreSharedMemfdMemoryOnlyWithPulls) {
  Pair priv(two()), shared(two(), true, true);
  const size_t len = size_t{1} << 20;
  void* a = priv.t[0]->alloc_memory(len, len);
  void* b = shared.t[0]->alloc_memory(len, len);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(mapping_of(a).find("memfd:bspk-frames"), std::string::npos) << mapping_of(a);
  EXPECT_NE(mapping_of(b).find("memfd:bspk-frames"), std::string::npos) << mapping_of(b);
  priv.t[0]->free_memory(a, len);
  shared.t[0]->free_memory(b, len);
  EXPECT_EQ(mapping_of(b), "") << "freed slab still mapped";
}

// nap(): an idle process sleeps on its doorbell and a peer's send through a
// ring, a send through the provider, or wake_local() ends the nap at once
// (sync/wait.cpp naps there once it has yielded for BSPK_YIELD_MS). Each nap
// here is 5 s long; the peer acts after 100 ms, so a nap that ends before
// 4 s was woken, not timed out.
double timed_nap(LocalTransport& t, double seconds, const std::function<bool()>* ready = nullptr) {
  auto t0 = std::chrono::steady_clock::now();
  t.nap(seconds, ready);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Seconds a 5 s nap of t lasted when `act` ran 100 ms into it.
template <class F>
double nap_woken_by(LocalTransport& t, F&& act) {
  double slept = -1;
  std::thread napper([&] { slept = timed_nap(t, 5.0); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  act();
  napper.join();
  return slept;
}

// Transport::may_have_arrivals: the engine's count-board loop takes arrivals
// in while it waits only when this says some may be there. False on an idle
// transport; true once a ring message, a pulled message or a message
// through the provider waits for this process; false again once they are
// delivered.
TEST(LocalRings, MayHaveArrivalsSeesRingPullAndProviderMessages) {
  {
    Pair p(two(), true, true);  // pulls on: a message of another tag is pulled
    EXPECT_FALSE(p.t[1]->may_have_arrivals());
    RecvBuf ring, other;
    ASSERT_TRUE(ring.post(*p.t[1], kRingTag));
    ASSERT_TRUE(other.post(*p.t[1], kOtherTag));
    OpContext s1{}, s2{};
    ASSERT_TRUE(send(*p.t[0], 1, 1u, 4, &s1));
    EXPECT_TRUE(p.t[1]->may_have_arrivals()) << "a ring message waits";
    EXPECT_FALSE(p.t[0]->may_have_arrivals()) << "the sender has nothing to receive";
    EXPECT_EQ(drain(*p.t[1]).size(), 1u);
    EXPECT_FALSE(p.t[1]->may_have_arrivals()) << "the ring message was delivered";
    ASSERT_TRUE(send(*p.t[0], 1, 2u, 4, &s2, kOtherTag));
    EXPECT_TRUE(p.t[1]->may_have_arrivals()) << "a pulled message waits";
    EXPECT_EQ(drain(*p.t[1]).size(), 1u);
    EXPECT_FALSE(p.t[1]->may_have_arrivals()) << "the pulled message was delivered";
  }
  {
    Pair p(two());  // no pulls: a message of another tag goes through the provider
    RecvBuf other;
    ASSERT_TRUE(other.post(*p.t[1], kOtherTag));
    OpContext s{};
    ASSERT_TRUE(send(*p.t[0], 1, 3u, 4, &s, kOtherTag));
    EXPECT_TRUE(p.t[1]->may_have_arrivals()) << "a provider message waits";
    EXPECT_EQ(drain(*p.t[1]).size(), 1u);
    EXPECT_FALSE(p.t[1]->may_have_arrivals()) << "the provider message was delivered";
  }
}

TEST(LocalNap, EndsWhenAPeerSendsThroughARing) {
  Pair p(two());
  RecvBuf rb;
  ASSERT_TRUE(rb.post(*p.t[1], kRingTag));
  OpContext sctx{};
  EXPECT_LT(nap_woken_by(*p.t[1], [&] { EXPECT_TRUE(send(*p.t[0], 1, 7u, 4, &sctx)); }), 4.0)
      << "the ring send did not wake the napping receiver";
  auto r = drain(*p.t[1]);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].context, &rb.ctx);
}

TEST(LocalNap, EndsWhenAPeerSendsThroughTheProvider) {
  Pair p(two());
  RecvBuf rb;
  ASSERT_TRUE(rb.post(*p.t[1], kOtherTag));
  OpContext sctx{};
  EXPECT_LT(nap_woken_by(*p.t[1], [&] { EXPECT_TRUE(send(*p.t[0], 1, 8u, 4, &sctx, kOtherTag)); }), 4.0)
      << "a provider send did not wake the napping receiver";
  EXPECT_EQ(drain(*p.t[1]).size(), 1u);
}

TEST(LocalNap, EndsOnWakeLocal) {
  Pair p(two());
  EXPECT_LT(nap_woken_by(*p.t[1], [&] { p.t[0]->wake_local(); }), 4.0) << "wake_local did not wake the napping peer";
}

// The engine's own condition (a count-board join, a gather block: news that
// is no message) published and announced with wake_local() just before the
// napper said it naps: the wake found no napper, so nap must look at the
// condition after setting its flag, or it sleeps through the news (until
// 2026-12-02 it did, for the whole nap). The condition is looked at once,
// after the flag is up; false, the nap lasts its time.
TEST(LocalNap, DoesNotSleepThroughNewsAnnouncedJustBefore) {
  Pair p(two());
  std::atomic<int> news{0};
  bool flag_was_up = false;
  std::function<bool()> ready = [&] {
    flag_was_up = p.t[1]->napping_for_test();
    return news.load() != 0;
  };
  news.store(1);
  p.t[0]->wake_local();  // nobody naps yet: no ring
  EXPECT_LT(timed_nap(*p.t[1], 5.0, &ready), 4.0) << "slept through news published before the nap";
  EXPECT_TRUE(flag_was_up) << "the condition was looked at before the napping flag was up";
  news.store(0);
  EXPECT_GE(timed_nap(*p.t[1], 0.05, &ready), 0.045) << "a nap whose condition is false ended early";
}

TEST(LocalNap, DoesNotSleepOverAWaitingMessageAndLastsItsTimeOtherwise) {
  Pair p(two());
  RecvBuf rb;
  ASSERT_TRUE(rb.post(*p.t[1], kRingTag));
  OpContext sctx{};
  ASSERT_TRUE(send(*p.t[0], 1, 9u, 4, &sctx));
  EXPECT_LT(timed_nap(*p.t[1], 5.0), 4.0) << "napped with a message in its ring";
  EXPECT_EQ(drain(*p.t[1]).size(), 1u);
  EXPECT_GE(timed_nap(*p.t[1], 0.05), 0.045) << "a nap without news ended early";
}

}  // namespace
