// tests/test_multiproc.cpp -- runs tests/scenarios.cpp through bspkrun for
// p = 1, 2, 3, 4, 8 on the tcp and shm providers and checks exit status and
// output. Every run has a wall-clock limit, so a hang is a failure, not a
// stuck CI job.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <map>
#include <regex>
#include <set>
#include <string>

namespace {

struct JobResult {
  int status = -1;  // exit status of bspkrun (124 = our time limit)
  std::string out;  // stdout + stderr
  double seconds = 0;
};

// Run a shell command, capturing stdout+stderr, exit status and wall time.
JobResult shell(const std::string& cmd) {
  auto t0 = std::chrono::steady_clock::now();
  JobResult r;
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (!f) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) r.out.append(buf.data(), n);
  int st = pclose(f);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// bspkrun [opts] scenarios ARGS, with a wall-clock limit.
JobResult launch(const std::string& opts, const std::string& args, int limit_s = 60, const std::string& env = "") {
  return shell("env " + env + " timeout -k 5 " + std::to_string(limit_s) + " " BSPKRUN_PATH " " + opts +
               " " SCENARIOS_PATH " " + args);
}

JobResult run(const std::string& env, int np, const std::string& provider, const std::string& args,
              int limit_s = 120) {
  return launch("-n " + std::to_string(np) + " --provider " + provider, args, limit_s, env);
}

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

using Param = std::tuple<std::string, int>;  // provider, nprocs

class MultiProc : public ::testing::TestWithParam<Param> {
 protected:
  std::string prov() const { return std::get<0>(GetParam()); }
  int np() const { return std::get<1>(GetParam()); }
  // Common environment: fail fast on sync time-outs in tests that expect them.
  JobResult go(const std::string& args, const std::string& env = "BSPK_SYNC_TIMEOUT=60", int limit_s = 120) {
    return run(env, np(), prov(), args, limit_s);
  }
  // The same for tests/dsm_scenarios.cpp.
  JobResult dsm(const std::string& args, const std::string& env = "BSPK_SYNC_TIMEOUT=60", int limit_s = 120) {
    return shell("env " + env + " timeout -k 5 " + std::to_string(limit_s) + " " BSPKRUN_PATH " -n " +
                 std::to_string(np()) + " --provider " + prov() + " " DSM_SCENARIOS_PATH " " + args);
  }
  void dsm_ok(const std::string& args, const std::string& marker, const std::string& env = "BSPK_SYNC_TIMEOUT=60") {
    JobResult r = dsm(args, env);
    ASSERT_EQ(r.status, 0) << args << "\n" << r.out;
    EXPECT_EQ(count(r.out, marker), static_cast<size_t>(np())) << args << "\n" << r.out;
  }
  // The scenario exits 0 and prints `marker` `times` times.
  void expect_ok(const std::string& args, const std::string& marker, size_t times = 1) {
    JobResult r = go(args);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(count(r.out, marker), times) << r.out;
  }
};

// Random h-relations (sizes around frames and the 16 KiB / 128 KiB protocol
// switches, empty messages, misaligned starts) give identical checksums with
// bspk_expect, bspk_will_send and counted syncs; every byte and the receive
// order are verified inside the scenario; the runtime copies 0 bytes.
TEST_P(MultiProc, ModesAgreeOnRandomTraffic) {
  std::map<int, std::set<std::string>> per_pid;
  for (std::string mode : {"expect", "will_send", "counted", "cycle"}) {
    JobResult r = go("traffic " + mode + " 8");
    ASSERT_EQ(r.status, 0) << mode << "\n" << r.out;
    std::regex re("traffic checksum pid=(\\d+) mode=\\w+ value=([0-9a-f]+)");
    int lines = 0;
    for (std::sregex_iterator it(r.out.begin(), r.out.end(), re), end; it != end; ++it, ++lines)
      per_pid[std::stoi((*it)[1])].insert((*it)[2]);
    EXPECT_EQ(lines, np()) << r.out;
  }
  ASSERT_EQ(static_cast<int>(per_pid.size()), np());
  for (auto& [pid, sums] : per_pid) EXPECT_EQ(sums.size(), 1u) << "pid " << pid << " differs between modes";
}

// BSPK_STATS=1: one greppable line per process at finalize, zero runtime copies.
TEST_P(MultiProc, StatsLinePerProcess) {
  JobResult r = go("traffic expect 4", "BSPK_STATS=1");
  ASSERT_EQ(r.status, 0) << r.out;
  std::regex re(
      "bspk-stats pid=(\\d+) supersteps=(\\d+) msgs_sent=\\d+ bytes_sent=\\d+ bytes_copied=(\\d+) "
      "sync_wait_s=[0-9.]+ msgs_recv=\\d+ bytes_recv=\\d+");
  std::set<int> pids;
  for (std::sregex_iterator it(r.out.begin(), r.out.end(), re), end; it != end; ++it) {
    pids.insert(std::stoi((*it)[1]));
    EXPECT_EQ((*it)[2], "5") << "4 supersteps + the final one";
    EXPECT_EQ((*it)[3], "0") << "the runtime copied user bytes";
  }
  EXPECT_EQ(static_cast<int>(pids.size()), np()) << r.out;
}

// Frames smaller and larger than the default: 4 KiB frames make every large
// message many frames; 256 KiB frames push single frames past tcp's 128 KiB
// rendezvous threshold.
TEST_P(MultiProc, FrameSizes) {
  for (std::string fs : {"4096", "262144"}) {
    JobResult r = go("traffic cycle 6", "BSPK_FRAME_SIZE=" + fs);
    EXPECT_EQ(r.status, 0) << "frame " << fs << "\n" << r.out;
  }
}

// [RBS §5]: messages of superstep s+2 arrive before those of superstep s, and
// each is still received exactly in the superstep after it was sent.
TEST_P(MultiProc, DeliveryInTheRightSuperstepUnderSkew) { expect_ok("skew", "skew ok"); }

// Thousands of one-element messages per superstep arrive complete and in
// (sender, send order).
TEST_P(MultiProc, ManySmallMessagesPerSuperstep) { expect_ok("many 1000", "many ok"); }

TEST_P(MultiProc, UnclaimedMessagesAreDestroyed) {
  expect_ok("unclaimed 300", "unclaimed ok", static_cast<size_t>(np()));
}

// A producer with expect(0) for 10,000 supersteps and a slow consumer: the
// consumer's frames stay bounded (checked in the scenario) because the
// producer is held back (flow_waits > 0).
TEST_P(MultiProc, RunawayProducerHasBoundedMemory) {
  JobResult r = go("runaway 10000", "BSPK_SYNC_TIMEOUT=60", 240);
  ASSERT_EQ(r.status, 0) << r.out;
  if (np() >= 2) {
    std::regex re("role=producer frames_peak=\\d+ small_peak=\\d+ flow_waits=(\\d+)");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.out, m, re)) << r.out;
    EXPECT_GT(std::stoul(m[1]), 0u) << "producer was never held back\n" << r.out;
  }
}

TEST_P(MultiProc, BadArgumentsGiveClearErrors) { expect_ok("errors", "errors ok"); }

TEST_P(MultiProc, MoreArrivalsThanExpectedIsAnError) {
  JobResult r = go("err_expect_more");
  EXPECT_NE(r.status, 0) << r.out;
  // Depending on timing it is seen by bspk_expect (already there), by bspk_sync,
  // or after pid 0 left the superstep (the extra message came late); always
  // reported by pid 0 with the same phrase.
  EXPECT_TRUE(has(r.out, "(pid 0, superstep ")) << r.out;
  EXPECT_TRUE(has(r.out, "more messages than declared")) << r.out;
  EXPECT_TRUE(has(r.out, "pid 0 called bspk_abort")) << r.out;
}

TEST_P(MultiProc, FewerArrivalsThanExpectedTimesOutWithDiagnosis) {
  JobResult r = go("err_expect_fewer", "BSPK_SYNC_TIMEOUT=2");
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "no progress for 2 s in superstep 0")) << r.out;
  EXPECT_TRUE(has(r.out, "bspk_expect(" + std::to_string(np() + 1) + ") declared, " + std::to_string(np()) +
                  " message(s) arrived"))
      << r.out;
  EXPECT_LT(r.seconds, 30) << r.out;
}

TEST_P(MultiProc, MixedSyncKindsAreReported) {
  for (std::string variant : {"counted first", "will_send first", "counted last", "will_send last"}) {
    JobResult r = go("err_mixed " + variant, "BSPK_SYNC_TIMEOUT=20");
    if (np() == 1) {
      EXPECT_EQ(r.status, 0) << r.out;  // nothing to mix with
      continue;
    }
    EXPECT_NE(r.status, 0) << variant << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "mixed synchronisation kinds in superstep 1")) << variant << "\n" << r.out;
    EXPECT_LT(r.seconds, 15) << "detected only by the time-out\n" << r.out;
  }
}

TEST_P(MultiProc, WillSendMismatchIsAnError) {
  JobResult r = go("err_will_send");
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "bspk_will_send declared 2 message(s) to pid")) << r.out;
  EXPECT_TRUE(has(r.out, "but 1 were sent")) << r.out;
}

TEST_P(MultiProc, KilledProcessEndsTheJob) {
  JobResult r = go("killed", "BSPK_SYNC_TIMEOUT=60", 60);
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.status, 124) << "hung until the time limit\n" << r.out;
  EXPECT_TRUE(has(r.out, "pid " + std::to_string(np() - 1) + " (os pid")) << r.out;
  EXPECT_TRUE(has(r.out, "killed by signal 9")) << r.out;
  EXPECT_TRUE(has(r.out, "in superstep 3")) << r.out;
  EXPECT_LT(r.seconds, 20) << r.out;
}

TEST_P(MultiProc, ExitWithoutFinalizeEndsTheJob) {
  JobResult r = go("no_finalize", "BSPK_SYNC_TIMEOUT=60", 60);
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "pid " + std::to_string(np() - 1) + " (os pid")) << r.out;
  EXPECT_TRUE(has(r.out, "exited without calling bspk_finalize in superstep 2")) << r.out;
  EXPECT_LT(r.seconds, 20) << r.out;
}

// BSPlib's Err_SYNC: one process finalizes while the others are still in a
// superstep; reported by the count exchange, not by a time-out.
TEST_P(MultiProc, FinalizeWhileOthersSyncIsReported) {
  JobResult r = go("early_finalize", "BSPK_SYNC_TIMEOUT=30", 60);
  if (np() == 1) {
    EXPECT_EQ(r.status, 0) << r.out;
    return;
  }
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "called bspk_finalize while others called bspk_sync")) << r.out;
  EXPECT_TRUE(has(r.out, "bspk_finalize (pid " + std::to_string(np() - 1) + ")")) << r.out;
  EXPECT_LT(r.seconds, 20) << r.out;
}

TEST_P(MultiProc, AbortPrintsOnceAndEndsTheJob) {
  JobResult r = go("abort", "BSPK_SYNC_TIMEOUT=60", 60);
  EXPECT_EQ(r.status, 1) << r.out;
  std::string msg = "bspk_abort (pid " + std::to_string(np() - 1) + ", superstep 1): boom 42";
  EXPECT_EQ(count(r.out, msg), 1u) << r.out;
  EXPECT_LT(r.seconds, 20) << r.out;
}

// Both registration branches: tcp addresses remote frames by offset into the
// registered region (no mr_mode bits), shm by virtual address (FI_MR_VIRT_ADDR).
// The start-up fi_read probe proves the key exchange and the addressing.
TEST_P(MultiProc, RegistrationFollowsProviderMrMode) {
  JobResult r = go("traffic expect 2", "BSPK_VERBOSE=1");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "bspk: registration check ok")) << r.out;
  if (prov() == "tcp") {
    EXPECT_TRUE(has(r.out, "mr_mode=none (offset addressing)")) << r.out;
    EXPECT_TRUE(has(r.out, "(offset into the region)")) << r.out;
  } else {
    EXPECT_TRUE(has(r.out, "mr_mode=VIRT_ADDR")) << r.out;
    EXPECT_TRUE(has(r.out, "(virtual address)")) << r.out;
  }
}

// ---- DSM (issue 3): every rule on p = 1..8, tcp and shm, with injected delays.

// Rules 1, 5, 6: a store issued in superstep s is visible to its owner from
// s+1 on and never earlier, although the storing neighbour runs ahead; counted
// by bspk_expect / bspk_will_send / the counted mode at the target. Whole-frame
// stores are flipped in (0 bytes copied); misaligned ones are merged.
TEST_P(MultiProc, DsmStoreVisibleExactlyAtTheOwnersNextSuperstep) {
  for (std::string mode : {"expect", "will_send", "counted"}) dsm_ok("ring " + mode + " 100000 0 10", "dsm ring ok");
  dsm_ok("ring expect 100000 7 8", "dsm ring ok");
  dsm_ok("ring expect 3 1 8", "dsm ring ok");
}

// Rule 2: a fetch sees the owner's own writes and the stores of its superstep.
TEST_P(MultiProc, DsmFetchFollowsStoresAndOwnerWrites) {
  for (std::string mode : {"expect", "will_send", "counted"}) dsm_ok("fetch " + mode + " 50000 20001 8", "dsm fetch ok");
  dsm_ok("fetch expect 300 300 6", "dsm fetch ok", "BSPK_FRAME_SIZE=4096");
}

// Figure 5: bspk_lookup in the superstep of the registration; the pointer is
// usable in bspk_copy at once.
TEST_P(MultiProc, DsmLookupInTheSuperstepOfRegistration) { dsm_ok("samestep", "dsm samestep ok"); }

// Rule 4: overlapping stores leave whole elements; BSPK_CHECK=1 reports them.
TEST_P(MultiProc, DsmConflictingStores) {
  dsm_ok("conflict", "dsm conflict ok");
  JobResult r = dsm("conflict check", "BSPK_CHECK=1");
  ASSERT_EQ(r.status, 0) << r.out;
  if (np() > 1) {
    EXPECT_TRUE(has(r.out, "conflicting writes in superstep 1")) << r.out;
  }
}

// Duplicate registration (both owners named), unknown pair, both-remote copy,
// out-of-range, element-size mismatch, copies into freed regions.
TEST_P(MultiProc, DsmErrors) { dsm_ok("errors", "dsm errors ok"); }

INSTANTIATE_TEST_SUITE_P(Providers, MultiProc,
                         ::testing::Combine(::testing::Values("tcp", "shm"), ::testing::Values(1, 2, 3, 4, 8)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_p" + std::to_string(std::get<1>(info.param));
                         });

TEST(Launcher, RefusesTheSocketsProvider) {
  JobResult r = run("FI_PROVIDER=sockets", 2, "tcp", "skew", 30);  // --provider wins over FI_PROVIDER
  EXPECT_EQ(r.status, 0) << r.out;
  JobResult s = launch("-n 2", "skew", 30, "FI_PROVIDER=sockets");
  EXPECT_NE(s.status, 0) << s.out;
  EXPECT_TRUE(has(s.out, "sockets provider is deprecated")) << s.out;
}

TEST(Launcher, ForwardsEveryLineOfEveryProcess) {
  JobResult r = launch("-n 4 --tag-output", "hello");
  ASSERT_EQ(r.status, 0) << r.out;
  for (int p = 0; p < 4; ++p) {
    for (int k = 0; k < 3; ++k)
      EXPECT_TRUE(has(r.out, "[" + std::to_string(p) + "] hello from pid " + std::to_string(p) + " line " +
                                 std::to_string(k) + "\n"))
          << r.out;
    EXPECT_TRUE(has(r.out, "[" + std::to_string(p) + "] stderr from pid " + std::to_string(p))) << r.out;
  }
}

TEST(Launcher, TimeoutEndsTheJob) {
  JobResult r = launch("-n 3 --timeout 2", "sleep");
  EXPECT_EQ(r.status, 124) << r.out;
  EXPECT_TRUE(has(r.out, "time limit of 2 s reached")) << r.out;
  EXPECT_LT(r.seconds, 15) << r.out;
}

// Processes of another BSPk build (another wire protocol) are refused at
// start-up, before any superstep, with a message naming both versions.
TEST(Launcher, RefusesAnotherBuildAtStartup) {
  JobResult r = launch("-n 2", "hello", 30, "BSPK_TEST_WIRE_VERSION=99");
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "was built against another BSPk version (bootstrap protocol 1, wire protocol 99")) << r.out;
  EXPECT_FALSE(has(r.out, "hello from pid")) << r.out;
  EXPECT_LT(r.seconds, 15) << r.out;
}

TEST(Launcher, BindsToCoresWithHwloc) {
  JobResult r = launch("-n 2 --bind core --report-bindings", "hello");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "bspkrun: pid 0 bound to cpu ")) << r.out;
  EXPECT_TRUE(has(r.out, "bspkrun: pid 1 bound to cpu ")) << r.out;
  JobResult u = launch("-n 2 --report-bindings", "hello");
  EXPECT_TRUE(has(u.out, "pid 0 not bound")) << u.out;
}

// A process that never reaches bspk_init does not leave the others waiting
// forever in the start-up exchange.
TEST(Launcher, ProcessMissingFromStartupIsReported) {
  JobResult r = launch("-n 3", "late_init", 60, "BSPK_SYNC_TIMEOUT=2");
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "waited 2 s in the start-up exchange (bspk_init) for pid(s) 1;")) << r.out;
  EXPECT_LT(r.seconds, 15) << r.out;
}

TEST(Launcher, MissingProgramIsOneClearError) {
  JobResult r = shell("timeout 30 " BSPKRUN_PATH " -n 4 /nonexistent/prog");
  EXPECT_EQ(r.status, 127) << r.out;
  EXPECT_EQ(count(r.out, "cannot execute"), 1u) << r.out;
}

}  // namespace
