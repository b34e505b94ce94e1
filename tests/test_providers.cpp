// tests/test_providers.cpp -- provider selection by capability (fabric/caps.h,
// fabric/select.h): a provider is refused for what it lacks, named in the
// message; any provider string libfabric knows is accepted.
#include <bspk.h>
#include <gtest/gtest.h>
#include <rdma/fabric.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "fabric/caps.h"
#include "fabric/fabric.h"
#include "fabric/select.h"
#include "fabric/shm_names.h"

namespace {

using bspk::fabric::caps::unmet;
using bspk::fabric::Completion;
using bspk::fabric::CompletionError;
using bspk::fabric::CompletionKind;
using bspk::fabric::Endpoint;
using bspk::fabric::OpContext;

// An fi_info entry that meets every requirement (what a good provider returns).
struct Entry {
  fi_info* i = fi_allocinfo();
  Entry() {
    i->ep_attr->type = FI_EP_RDM;
    i->caps = bspk::fabric::caps::kRequiredCaps | FI_LOCAL_COMM | FI_REMOTE_COMM;
    i->mode = 0;
    i->domain_attr->mr_mode = FI_MR_VIRT_ADDR;
    i->domain_attr->mr_key_size = 8;
    i->tx_attr->iov_limit = 4;
    i->rx_attr->iov_limit = 4;
  }
  ~Entry() { fi_freeinfo(i); }
};

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += x + "\n";
  return s;
}

TEST(ProviderCaps, AGoodEntryMeetsEverything) {
  Entry e;
  EXPECT_EQ(joined(unmet(e.i, true)), "");
  // Every mode and mr_mode bit BSPk honours is accepted.
  e.i->mode = FI_CONTEXT | FI_CONTEXT2;
  e.i->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  EXPECT_EQ(joined(unmet(e.i, true)), "");
}

TEST(ProviderCaps, EachMissingCapabilityIsNamed) {
  const std::pair<uint64_t, const char*> caps[] = {{FI_TAGGED, "FI_TAGGED"}, {FI_MSG, "FI_MSG"},
                                                   {FI_RMA, "FI_RMA"},       {FI_READ, "FI_READ"},
                                                   {FI_REMOTE_READ, "FI_REMOTE_READ"}};
  for (auto [bit, name] : caps) {
    Entry e;
    e.i->caps &= ~bit;
    std::vector<std::string> u = unmet(e.i, false);
    ASSERT_EQ(u.size(), 1u) << name << ":\n" << joined(u);
    EXPECT_EQ(u[0].rfind(name, 0), 0u) << u[0];
  }
}

TEST(ProviderCaps, EndpointTypeModesRegistrationAndIovecs) {
  {
    Entry e;
    e.i->ep_attr->type = FI_EP_DGRAM;
    EXPECT_NE(joined(unmet(e.i, false)).find("FI_EP_RDM"), std::string::npos);
  }
  {
    Entry e;
    e.i->mode = FI_RX_CQ_DATA | FI_CONTEXT;
    std::string u = joined(unmet(e.i, false));
    EXPECT_NE(u.find("without mode FI_RX_CQ_DATA ("), std::string::npos) << u;  // FI_CONTEXT: honoured, not named
  }
  {
    Entry e;
    e.i->domain_attr->mr_mode = FI_MR_RAW | FI_MR_PROV_KEY;
    std::string u = joined(unmet(e.i, false));
    EXPECT_NE(u.find("without mr_mode FI_MR_RAW ("), std::string::npos) << u;  // FI_MR_PROV_KEY: honoured
  }
  {
    Entry e;
    e.i->tx_attr->iov_limit = 1;
    EXPECT_NE(joined(unmet(e.i, false)).find("2 iovecs"), std::string::npos);
  }
}

TEST(ProviderCaps, OtherHostsNeedRemoteCommThisHostLocalComm) {
  Entry e;
  e.i->caps &= ~FI_REMOTE_COMM;
  EXPECT_EQ(joined(unmet(e.i, false)), "");
  EXPECT_NE(joined(unmet(e.i, true)).find("FI_REMOTE_COMM"), std::string::npos);
  // shm lists neither bit: this host only.
  e.i->caps &= ~FI_LOCAL_COMM;
  EXPECT_EQ(joined(unmet(e.i, false)), "");
  EXPECT_NE(joined(unmet(e.i, true)).find("FI_REMOTE_COMM"), std::string::npos);
  // Remote only: cannot reach processes of its own host (or itself).
  e.i->caps |= FI_REMOTE_COMM;
  EXPECT_NE(joined(unmet(e.i, true)).find("FI_LOCAL_COMM"), std::string::npos);
}

// With this machine's libfabric: the real providers.
TEST(ProviderCaps, WhyUnusableOnThisHost) {
  std::string udp = bspk::fabric::caps::why_unusable("udp", false);
  EXPECT_NE(udp.find("no reliable-datagram endpoint (FI_EP_RDM)"), std::string::npos) << udp;
  EXPECT_NE(udp.find("udp;ofi_rxd"), std::string::npos) << udp;
  // Only the layered providers fi_getinfo lists here are suggested: rxm
  // needs a connected core endpoint, which udp does not offer.
  EXPECT_EQ(udp.find("ofi_rxm"), std::string::npos) << udp;
  std::string none = bspk::fabric::caps::why_unusable("no-such-provider", false);
  EXPECT_NE(none.find("unknown to this libfabric"), std::string::npos) << none;
  // shm cannot reach other hosts.
  std::string shm = bspk::fabric::caps::why_unusable("shm", true);
  EXPECT_NE(shm.find("FI_REMOTE_COMM"), std::string::npos) << shm;
}

TEST(ProviderSelect, AnyNamePassesShortNamesMapSocketsIsRefused) {
  using bspk::fabric::canonical_provider;
  // tcp is libfabric's native RDM endpoint over TCP where offered (Debian
  // 12's libfabric 1.17 offers it as "net"), else rxm over tcp.
  EXPECT_EQ(canonical_provider("tcp"), "net");
  EXPECT_EQ(bspk::fabric::tcp_provider(), "net");
  EXPECT_EQ(canonical_provider("tcp;ofi_rxm"), "tcp;ofi_rxm");
  EXPECT_EQ(canonical_provider("verbs"), "verbs;ofi_rxm");
  EXPECT_EQ(canonical_provider("shm"), "shm");
  EXPECT_EQ(canonical_provider("udp;ofi_rxd"), "udp;ofi_rxd");
  EXPECT_EQ(canonical_provider("net"), "net");
  EXPECT_EQ(canonical_provider("efa"), "efa");
  EXPECT_THROW(canonical_provider("sockets"), bspk::Error);
  EXPECT_THROW(canonical_provider(""), bspk::Error);
}

TEST(ProviderSelect, AvailabilityIsByCapability) {
  using bspk::fabric::provider_available;
  EXPECT_TRUE(provider_available("tcp;ofi_rxm", true));
  EXPECT_TRUE(provider_available("udp;ofi_rxd", true));
  EXPECT_TRUE(provider_available("net", true));
  EXPECT_TRUE(provider_available("shm", false));
  EXPECT_FALSE(provider_available("shm", true));  // no FI_REMOTE_COMM
  EXPECT_FALSE(provider_available("udp", false));  // no FI_EP_RDM
  EXPECT_FALSE(provider_available("no-such-provider", false));
}

// An endpoint for a job across hosts: fi_getinfo echoes the primary caps it
// is asked for, so both FI_LOCAL_COMM and FI_REMOTE_COMM must be asked (the
// 3-host Slurm test found tcp refused when only FI_REMOTE_COMM was).
TEST(ProviderSelect, EndpointAcrossHostsOpensOnTcpAndRefusesShm) {
  bspk::fabric::Config c;
  c.provider = "tcp;ofi_rxm";
  c.nprocs = 2;
  c.off_host = true;
  bool has_non_loopback = false;
  {
    fi_info* h = bspk::fabric::caps::hints(c.provider, true);
    fi_info* list = nullptr;
    if (fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, h, &list) == 0)
      for (fi_info* i = list; i; i = i->next)
        has_non_loopback |= i->domain_attr->name && std::strcmp(i->domain_attr->name, "lo") != 0;
    fi_freeinfo(h);
    if (list) fi_freeinfo(list);
  }
  if (!has_non_loopback) GTEST_SKIP() << "no non-loopback interface for tcp on this host";
  bspk::fabric::Endpoint ep(c);
  EXPECT_NE(ep.domain_name(), "lo");
  c.provider = "shm";
  try {
    bspk::fabric::Endpoint shm(c);
    ADD_FAILURE() << "shm opened for a job across hosts";
  } catch (const bspk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("FI_REMOTE_COMM"), std::string::npos) << e.what();
  }
}

// Issue 13: memory keys are not guessable where BSPk chooses them (no
// FI_MR_PROV_KEY here): two regions' keys differ, are not small counters, and
// another endpoint draws others.
TEST(ProviderSelect, MemoryKeysAreRandomWhereTheProviderTakesOurs) {
  for (const char* prov : {"tcp;ofi_rxm", "shm"}) {
    bspk::fabric::Config c;
    c.provider = prov;
    c.nprocs = 1;
    std::vector<char> buf(3 * 4096);
    std::set<uint64_t> keys;
    for (int e = 0; e < 2; ++e) {
      bspk::fabric::Endpoint ep(c);
      for (int r = 0; r < 3; ++r) {
        bspk::fabric::MemoryRegion m = ep.register_memory(buf.data() + r * 4096, 4096);
        EXPECT_GT(m.key, uint64_t{1} << 20) << prov << ": a small key";
        keys.insert(m.key);
        ep.deregister(m);
      }
    }
    EXPECT_EQ(keys.size(), 6u) << prov << ": keys repeat";
  }
}

// Which messages go as header + directed-receive body (sync/tx.cpp,
// Transport::eager_limit / split_min_frames), from the provider's policy
// (select.cpp's table): on rxm every frame past rxm's eager limit; on net only
// messages of more than 4 frames (up to 4 whole: 1.1x raw libfabric's
// pingpong time at 256 KiB against 1.3x split, and the long collectives' 2-4
// frame messages faster; many frames split: 8 MiB 0.7-1.1x against 2.3-7.8x
// whole); shm never. BSPK_SPLIT_HEADER=off
// (Config::split_header) sends every message whole.
TEST(ProviderSelect, SplitPolicyPerProvider) {
  struct Want {
    const char* prov;
    bool split;
    uint32_t min_frames;
  };
  for (const Want& w : {Want{"tcp;ofi_rxm", true, 1}, Want{"net", true, 5}, Want{"shm", false, 1}}) {
    SCOPED_TRACE(w.prov);
#if defined(__SANITIZE_ADDRESS__)
    // libfabric 1.17's net provider leaks inside libfabric (LeakSanitizer; see
    // tests/lsan_libfabric.supp): not opened in the sanitizer build.
    if (std::string(w.prov) == "net") continue;
#endif
    bspk::fabric::Config c;
    c.provider = w.prov;
    c.nprocs = 2;
    c.split = bspk::fabric::split_policy(w.prov);
    if (std::string(w.prov) == "shm") c.node_name = "bspk.split-test." + std::to_string(getpid());
    {
      Endpoint ep(c);
      EXPECT_EQ(ep.eager_limit() > 0, w.split);
      if (w.split) {
        EXPECT_EQ(ep.split_min_frames(), w.min_frames);
      }
    }
    if (w.split) {
      c.split_header = false;
      if (std::string(w.prov) == "shm") c.node_name += ".whole";
      Endpoint whole(c);
      EXPECT_EQ(whole.eager_limit(), 0u) << "BSPK_SPLIT_HEADER=off sends every message whole";
    }
  }
  EXPECT_EQ(bspk::fabric::split_policy("udp;ofi_rxm"), bspk::fabric::SplitPolicy::PastRxmEagerLimit);
  EXPECT_EQ(bspk::fabric::split_policy("udp;ofi_rxd"), bspk::fabric::SplitPolicy::None);
}

// BSPK_CQ_WAIT (issue 10): the completion queue has a wait object only when
// the configuration asks for one (and the provider has one: tcp does, shm
// does not), and messages flow either way. tcp without a wait object is what
// a job with a CPU per process runs.
// BSPK_CQ_WAIT=auto: a wait object only on net (tcp without rxm) and only
// when the host's processes outnumber its CPUs (fabric/select.h says why).
TEST(ProviderSelect, CompletionQueueWaitObjectAutoOnlyOversubscribedOnNet) {
  using bspk::fabric::cq_wait_fd_auto;
  EXPECT_TRUE(cq_wait_fd_auto("net", true));
  EXPECT_TRUE(cq_wait_fd_auto("tcp", true));  // libfabric >= 1.18: net is the tcp provider's RDM endpoint
  EXPECT_FALSE(cq_wait_fd_auto("net", false));
  EXPECT_FALSE(cq_wait_fd_auto("tcp", false));
  for (const char* prov : {"tcp;ofi_rxm", "verbs;ofi_rxm", "shm", "udp;ofi_rxd"}) {
    EXPECT_FALSE(cq_wait_fd_auto(prov, true)) << prov;
    EXPECT_FALSE(cq_wait_fd_auto(prov, false)) << prov;
  }
}

TEST(ProviderSelect, CompletionQueueWaitObjectFollowsTheConfig) {
  for (const char* prov : {"tcp;ofi_rxm", "net", "shm"}) {
    if (!bspk::fabric::provider_available(prov, false)) continue;
#if defined(__SANITIZE_ADDRESS__)
    // libfabric 1.17's net provider leaks inside libfabric (LeakSanitizer; see
    // tests/lsan_libfabric.supp): not opened in the sanitizer build.
    if (std::string(prov) == "net") continue;
#endif
    for (bool fd : {true, false}) {
      SCOPED_TRACE(std::string(prov) + (fd ? ", cq_wait_fd" : ", no wait object"));
      bspk::fabric::Config c;
      c.provider = prov;
      c.nprocs = 2;
      c.cq_wait_fd = fd;
      bspk::fabric::Config cb = c;
      if (std::string(prov) == "shm") {  // one region name per endpoint
        c.node_name = "bspk.cqwait-test." + std::to_string(getpid()) + (fd ? ".fd.a" : ".no.a");
        cb.node_name = c.node_name.substr(0, c.node_name.size() - 1) + "b";
      }
      Endpoint a(c), b(cb);
      EXPECT_EQ(a.can_block(), fd && std::string(prov) != "shm");
      a.insert_peers({a.name(), b.name()});
      b.insert_peers({a.name(), b.name()});
      char rbuf[32] = {0}, msg[] = "no wait object needed";
      bspk::fabric::MemoryRegion rm = a.register_memory(rbuf, sizeof rbuf), sm = b.register_memory(msg, sizeof msg);
      OpContext rctx, sctx;
      iovec riov{rbuf, sizeof rbuf}, siov{msg, sizeof msg};
      void *rdesc = rm.desc, *sdesc = sm.desc;
      ASSERT_TRUE(a.post_recv(&riov, &rdesc, 1, &rctx, 2));
      bool received = false, sent = false, posted = false;
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while ((!received || !sent) && std::chrono::steady_clock::now() < until) {
        if (!posted) posted = b.post_send(0, &siov, &sdesc, 1, &sctx, 2);
        Completion comp[4];
        CompletionError err;
        ssize_t n = b.poll(comp, 4, &err);
        ASSERT_GE(n, 0) << err.message;
        for (ssize_t i = 0; i < n; ++i) sent |= comp[i].context == &sctx;
        n = a.wait(comp, 4, 1, &err);
        ASSERT_GE(n, 0) << err.message;
        for (ssize_t i = 0; i < n; ++i) received |= comp[i].kind == CompletionKind::Received && comp[i].context == &rctx;
      }
      EXPECT_TRUE(sent);
      ASSERT_TRUE(received);
      EXPECT_STREQ(rbuf, msg);
      a.deregister(rm);
      b.deregister(sm);
    }
  }
}

// Issue 13: a shared-memory name planted in /dev/shm before the job (by
// another local user who guessed it) is never used: the endpoint refuses to
// open with a message naming the file, instead of sharing memory with it.
TEST(ProviderSelect, PlantedSharedMemoryNameIsRefused) {
  const std::string name = "bspk.planted-test." + std::to_string(getpid()) + ".0";
  const std::string path = "/dev/shm/" + name + ":0:0";
  int fd = open(path.c_str(), O_CREAT | O_RDWR, 0666);
  ASSERT_GE(fd, 0);
  close(fd);
  bspk::fabric::Config c;
  c.provider = "shm";
  c.nprocs = 2;
  c.node_name = name;
  try {
    bspk::fabric::Endpoint ep(c);
    ep.name();
    ADD_FAILURE() << "opened an endpoint on a planted file";
  } catch (const bspk::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  unlink(path.c_str());
}

// A job killed whole (every process SIGKILLed, so the shm provider removed
// nothing and no peer survived to) leaves its endpoints' regions in /dev/shm;
// the next process removes them (fabric/shm_names.h), and only them: a live
// endpoint's region (held), a region younger than the age given, a file
// without the held-region mark (an older build's) and another user's file
// stay.
bool shm_exists(const std::string& prefix) {
  const std::string dir = "/dev/shm";
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) return false;
  while (dirent* e = readdir(d.get()))
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) return true;
  return false;
}

TEST(ShmNames, RegionsOfKilledProcessesAreRemovedLiveOnesKept) {
  if (access("/dev/shm", W_OK) != 0) GTEST_SKIP() << "no writable /dev/shm";
  const std::string prefix = "bspk.held-test." + std::to_string(getpid()) + ".";
  const std::string held = prefix + "0" + bspk::fabric::kHeldMark + "0123456789abcdef";
  const std::string live = prefix + "1" + bspk::fabric::kHeldMark + "fedcba9876543210";
  // Two processes with an shm endpoint each; one is then killed.
  pid_t kids[2];
  for (int k = 0; k < 2; ++k) {
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    kids[k] = fork();
    ASSERT_GE(kids[k], 0);
    if (kids[k] == 0) {
      close(ready[0]);
      bspk::fabric::Config c;
      c.provider = "shm";
      c.nprocs = 2;
      c.node_name = k == 0 ? held : live;
      char ok = 'n';
      try {
        Endpoint ep(c);
        ok = 'y';
        (void)!write(ready[1], &ok, 1);
        for (;;) pause();
      } catch (...) {
      }
      (void)!write(ready[1], &ok, 1);
      _exit(1);
    }
    close(ready[1]);
    char ok = 0;
    ASSERT_EQ(read(ready[0], &ok, 1), 1);
    close(ready[0]);
    ASSERT_EQ(ok, 'y') << "child " << k << " could not open an shm endpoint";
  }
  ASSERT_TRUE(shm_exists(held) && shm_exists(live));
  // Without the mark, and another user's: never candidates.
  const std::string unmarked = "/dev/shm/" + prefix + "2.0123456789abcdef:0:0";
  const std::string foreign = "/dev/shm/" + prefix + "3" + bspk::fabric::kHeldMark + "0123456789abcdef:0:0";
  for (const std::string& f : {unmarked, foreign}) {
    int fd = open(f.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    ASSERT_GE(fd, 0) << f;
    close(fd);
  }
  const bool other_user = geteuid() == 0 && chown(foreign.c_str(), 65534, 65534) == 0;

  // Both alive: nothing to remove.
  EXPECT_EQ(bspk::fabric::remove_dead_shm_regions(prefix, 0), other_user ? 0 : 1);
  EXPECT_TRUE(shm_exists(held) && shm_exists(live));
  kill(kids[0], SIGKILL);
  int st = 0;
  ASSERT_EQ(waitpid(kids[0], &st, 0), kids[0]);
  ASSERT_TRUE(WIFSIGNALED(st));
  EXPECT_TRUE(shm_exists(held)) << "the killed process's region should still be there (SIGKILL)";
  // Too young for an age of an hour: kept.
  EXPECT_EQ(bspk::fabric::remove_dead_shm_regions(prefix, 3600), 0);
  EXPECT_TRUE(shm_exists(held));
  // The killed one's goes, the live one's stays.
  EXPECT_EQ(bspk::fabric::remove_dead_shm_regions(prefix, 0), 1);
  EXPECT_FALSE(shm_exists(held));
  EXPECT_TRUE(shm_exists(live));
  EXPECT_EQ(access(unmarked.c_str(), F_OK), 0) << "a region without the mark was removed";
  if (other_user) {
    EXPECT_EQ(access(foreign.c_str(), F_OK), 0) << "another user's region was removed";
  }
  // The live endpoint ends normally (SIGTERM: the provider removes its own).
  kill(kids[1], SIGTERM);
  ASSERT_EQ(waitpid(kids[1], &st, 0), kids[1]);
  unlink(unmarked.c_str());
  unlink(foreign.c_str());
  if (shm_exists(live)) {
    ADD_FAILURE() << "the live endpoint's region outlived its SIGTERM";
    bspk::fabric::remove_dead_shm_regions(prefix, 0);
  }
}

// Issue 13: fabric traffic from outside the job is never accepted. Three
// endpoints in one process on a network provider: A (a process of the job,
// token K) posts receives; B (another process of the job, token K) and S (a
// stranger who learnt A's address but not the token) send to it. Only B's
// message arrives; S's never matches. A control S2 holding the right token
// gets through, so what keeps S out is the token, not its address.
class JobToken : public ::testing::TestWithParam<const char*> {};
TEST_P(JobToken, AStrangersMessageNeverReachesTheRuntime) {
#if defined(__SANITIZE_ADDRESS__)
  // libfabric 1.17's net provider leaks inside libfabric: the fi_info its
  // endpoint copies at fi_endpoint, and per connection (LeakSanitizer; the
  // same Endpoint code on tcp;ofi_rxm and rxd leaks nothing; see
  // tests/lsan_libfabric.supp): the sanitizer build does not run this case.
  if (std::string(GetParam()) == "net") GTEST_SKIP() << "net provider leaks inside libfabric 1.17 (LeakSanitizer)";
#endif
  bspk::fabric::Config c;
  c.provider = GetParam();
  c.nprocs = 2;
  std::unique_ptr<Endpoint> a, b, s, s2;
  try {
    a = std::make_unique<Endpoint>(c);
  } catch (const bspk::Error& e) {
    GTEST_SKIP() << GetParam() << " unavailable here: " << e.what();
  }
  b = std::make_unique<Endpoint>(c);
  s = std::make_unique<Endpoint>(c);
  s2 = std::make_unique<Endpoint>(c);
  const uint64_t token = 0x5eed'1234'abcd'0042ull;
  a->set_job_token(token);
  b->set_job_token(token);
  s->set_job_token(token ^ 0x10000);  // one bit off
  s2->set_job_token(token);
  EXPECT_GE(a->token_bits(), 32) << GetParam();
  a->insert_peers({a->name(), b->name()});
  b->insert_peers({a->name(), b->name()});
  s->insert_peers({a->name(), s->name()});
  s2->insert_peers({a->name(), s2->name()});

  constexpr uint64_t kClass = 2;
  std::vector<std::vector<char>> rbuf(3, std::vector<char>(64, 0));
  OpContext rctx[3], sctx[3];
  std::vector<bspk::fabric::MemoryRegion> mrs;
  for (auto& buf : rbuf) {
    mrs.push_back(a->register_memory(buf.data(), buf.size()));
    iovec iov{buf.data(), buf.size()};
    void* desc = mrs.back().desc;
    ASSERT_TRUE(a->post_recv(&iov, &desc, 1, &rctx[&buf - rbuf.data()], kClass));
  }
  char from_s[] = "stranger", from_b[] = "member", from_s2[] = "holder";
  std::vector<bspk::fabric::MemoryRegion> smrs = {s->register_memory(from_s, sizeof from_s),
                                                  b->register_memory(from_b, sizeof from_b),
                                                  s2->register_memory(from_s2, sizeof from_s2)};
  Endpoint* senders[3] = {s.get(), b.get(), s2.get()};
  char* payloads[3] = {from_s, from_b, from_s2};
  size_t lens[3] = {sizeof from_s, sizeof from_b, sizeof from_s2};
  std::vector<std::string> got;
  auto progress = [&](double seconds, size_t want) {
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    do {
      Completion comp[8];
      CompletionError err;
      for (Endpoint* e : senders) e->poll(comp, 8, &err);
      ssize_t n = a->poll(comp, 8, &err);
      ASSERT_GE(n, 0) << err.message;
      for (ssize_t i = 0; i < n; ++i)
        if (comp[i].kind == CompletionKind::Received)
          got.push_back(rbuf[static_cast<size_t>(comp[i].context - rctx)].data());
    } while (std::chrono::steady_clock::now() < until && got.size() < want);
  };
  // The stranger first, then the member: the stranger's message must not take
  // the member's receive.
  for (int k = 0; k < 2; ++k) {
    iovec iov{payloads[k], lens[k]};
    void* desc = smrs[static_cast<size_t>(k)].desc;
    while (!senders[k]->post_send(0, &iov, &desc, 1, &sctx[k], kClass)) progress(0.01, 0);
    progress(k == 0 ? 1.0 : 5.0, 1);
  }
  progress(1.0, 2);  // time for a stranger's message to show up if it could
  ASSERT_EQ(got.size(), 1u) << GetParam();
  EXPECT_EQ(got[0], "member");
  // Control: the same message with the job's token is accepted.
  iovec iov{payloads[2], lens[2]};
  void* desc = smrs[2].desc;
  while (!s2->post_send(0, &iov, &desc, 1, &sctx[2], kClass)) progress(0.01, 1);
  progress(5.0, 2);
  ASSERT_EQ(got.size(), 2u) << GetParam();
  EXPECT_EQ(got[1], "holder");
  for (auto& m : smrs) (&m == &smrs[0] ? s : &m == &smrs[1] ? b : s2)->deregister(m);
  a->close_endpoint();
  for (auto& m : mrs) a->deregister(m);
}
INSTANTIATE_TEST_SUITE_P(Fabric, JobToken, ::testing::Values("tcp;ofi_rxm", "udp;ofi_rxd", "net"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
