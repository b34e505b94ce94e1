// tests/test_multiproc.cpp -- runs the multi-process scenarios
// (tests/scenarios.cpp, tests/dsm_scenarios.cpp, tests/contig_scenarios.cpp) through bspkrun and checks
// exit status and output.
//
// What to run and what to expect is not written here: each scenario states it
// in its table rows, next to its code (tests/scenario_table.h). At start-up
// this driver reads the tables (`scenarios --list`, `dsm_scenarios --list`) and
// registers one test per (row, provider, p), e.g.
// MultiProc.DeliveryInTheRightSuperstepUnderSkew/shm_p3. Listing the tests
// (--gtest_list_tests, as gtest_discover_tests does) launches no job.
//
// Every run has a wall-clock limit, so a hang is a failure, not a stuck CI job.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "scenario_table.h"

namespace {

struct JobResult {
  int status = -1;  // exit status of bspkrun (124 = our time limit)
  std::string out;  // stdout + stderr
  double seconds = 0;
};

// Run a shell command, capturing stdout (and stderr unless keep_stderr),
// exit status and wall time.
JobResult shell(const std::string& cmd, bool keep_stderr = false) {
  auto t0 = std::chrono::steady_clock::now();
  JobResult r;
  FILE* f = popen((keep_stderr ? cmd : cmd + " 2>&1").c_str(), "r");
  if (!f) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) r.out.append(buf.data(), n);
  int st = pclose(f);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// Providers the whole suite also runs on, at p = 2 and 4 (issue 16): their
// properties differ from tcp's and shm's (udp;ofi_rxd: manual connection
// progress, 1256-byte injects; tcp;ofi_rxm: rxm's RDM emulation over tcp's
// connected endpoints, 64-byte injects, eager / rendezvous protocols, what
// `tcp` meant before it meant the native RDM endpoint `net`, and what it
// still means on a libfabric without net). Test names use the label (Suite.Test/rxd_p2). Small
// messages go through the provider too (BSPK_SHM_RINGS=off, unless the row
// sets it), so that it carries every kind of message.
struct ExtraProvider {
  const char* label;
  const char* name;
};
constexpr ExtraProvider kExtraProviders[] = {{"rxd", "udp;ofi_rxd"}, {"rxm", "tcp;ofi_rxm"}};
constexpr int kExtraP[] = {2, 4};

// Which tests this binary registers (one binary per set, so each set has its
// ctest label):
//   - core: the tcp/shm suite (test_multiproc; label multiproc, part of the
//     README test command), except tcp at p = 8;
//   - wide: tcp at p = 8, eight processes on two cores over libfabric tcp
//     (test_multiproc_wide, built with BSPK_TEST_SET=1; label wide:
//     `ctest -L wide`, run by .ci/run). Kept out of the README command, whose
//     20-minute budget it would take past (about 390 s of test time); shm at
//     p = 8 stays there, so oversubscription is covered by it;
//   - providers: the runs on the extra providers (test_multiproc_providers,
//     built with BSPK_TEST_SET=2; label providers: `ctest -L providers`).
enum class TestSet { Core = 0, Wide = 1, Providers = 2 };
#ifdef BSPK_TEST_SET
constexpr TestSet g_set = static_cast<TestSet>(BSPK_TEST_SET);
#else
constexpr TestSet g_set = TestSet::Core;
#endif

std::string provider_name(const std::string& label) {
  for (const ExtraProvider& e : kExtraProviders)
    if (label == e.label) return e.name;
  return label;
}
bool is_extra(const std::string& label) {
  for (const ExtraProvider& e : kExtraProviders)
    if (label == e.label) return true;
  return false;
}
// The set a run on provider `label` with np processes belongs to.
TestSet set_of(const std::string& label, int np) {
  if (is_extra(label)) return TestSet::Providers;
  return label == "tcp" && np == 8 ? TestSet::Wide : TestSet::Core;
}

// env ENV timeout LIMIT bspkrun -n P [--provider PROV] [OPTS] PROGRAM ARGS
// (`provider` is a label: tcp, shm, rxd, rxm, or "default").
std::string job_command(const std::string& program, int np, const std::string& provider, const std::string& opts,
                        const std::string& args, std::string env, int limit_s) {
  if (is_extra(provider) && env.find("BSPK_SHM_RINGS") == std::string::npos) env += " BSPK_SHM_RINGS=off";
  std::string cmd =
      "env " + env + " timeout -k 5 " + std::to_string(limit_s) + " " BSPKRUN_PATH " -n " + std::to_string(np);
  if (provider != scen::kDefaultProvider) cmd += " --provider '" + provider_name(provider) + "'";
  if (!opts.empty()) cmd += " " + opts;
  return cmd + " " + program + " " + args;
}

// "FILE:LINE" of a row -> FILE, LINE.
std::pair<std::string, int> file_line(const std::string& at) {
  size_t colon = at.rfind(':');
  return {at.substr(0, colon), std::atoi(at.substr(colon + 1).c_str())};
}

size_t count_matches(const std::string& s, const std::regex& re) {
  return static_cast<size_t>(std::distance(std::sregex_iterator(s.begin(), s.end(), re), std::sregex_iterator()));
}

// ---------------------------------------------------------------- table rows

// One (row, provider, p) of a scenario table: run the job, check its exit
// status, its duration and every expected regex count.
class TableCase : public ::testing::Test {
 public:
  TableCase(std::string program, scen::Case c, std::string provider)
      : program_(std::move(program)), c_(std::move(c)), provider_(std::move(provider)) {}

  void TestBody() override {
    std::string cmd = job_command(program_, c_.p, provider_, c_.bspkrun, c_.args, c_.env, c_.limit_s);
    JobResult r = shell(cmd);
    auto [file, line] = file_line(c_.at);  // failures point at the row in the scenario source
    for (int v : c_.status.eq)
      if (r.status != v) ADD_FAILURE_AT(file.c_str(), line) << "exit status " << r.status << ", expected " << v;
    for (int v : c_.status.ne)
      if (r.status == v) ADD_FAILURE_AT(file.c_str(), line) << "exit status " << r.status << ", expected another";
    if (c_.within_s > 0 && !(r.seconds < c_.within_s))
      ADD_FAILURE_AT(file.c_str(), line) << "the job took " << std::fixed << std::setprecision(1) << r.seconds
                                         << " s, expected less than " << c_.within_s;
    for (const scen::Match& m : c_.out) {
      long n = static_cast<long>(count_matches(r.out, std::regex(m.regex)));
      if (m.cmp == scen::Match::kExactly ? n != m.n : n < m.n)
        ADD_FAILURE_AT(file.c_str(), line) << n << " match(es) of /" << m.regex << "/, expected "
                                           << (m.cmp == scen::Match::kExactly ? "exactly " : "at least ") << m.n;
    }
    if (HasFailure())
      std::printf("command: %s\nexit status %d after %.1f s, output:\n%s\n", cmd.c_str(), r.status, r.seconds,
                  r.out.c_str());
  }

 private:
  std::string program_;
  scen::Case c_;
  std::string provider_;
};

// A table that cannot be read is a failing test, not a silently empty suite.
class TableReadable : public ::testing::Test {
 public:
  TableReadable(std::string error, size_t cases) : error_(std::move(error)), cases_(cases) {}
  void TestBody() override {
    EXPECT_EQ(error_, "");
    EXPECT_GT(cases_, 0u) << "the table lists no case";
  }

 private:
  std::string error_;
  size_t cases_;
};

std::string test_suffix(const std::string& provider, int np) {
  return (provider == scen::kDefaultProvider ? "p" : provider + "_p") + std::to_string(np);
}

// `PROGRAM --list`. Every program linked with libfabric spends ~0.2 s in a
// provider library's constructor before main, and ctest starts this driver
// once per test; so the listing is kept next to the program (PROGRAM.list,
// tagged with the program's size and modification time) and read again only
// when the program has changed.
JobResult read_list(const std::string& program) {
  struct stat st;
  if (stat(program.c_str(), &st) != 0) return shell(program + " --list", /*keep_stderr=*/true);
  const std::string tag = "# " + program + " size " + std::to_string(st.st_size) + " mtime " +
                          std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + "\n";
  const std::string cache = program + ".list";
  if (std::ifstream in{cache}) {
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.compare(0, tag.size(), tag) == 0) return JobResult{0, text.substr(tag.size()), 0};
  }
  JobResult r = shell(program + " --list", /*keep_stderr=*/true);
  if (r.status == 0) {  // written whole, then renamed: concurrent readers see the old file or the new one
    std::string tmp = cache + ".tmp" + std::to_string(getpid());
    if (std::ofstream out{tmp}; out << tag << r.out && out.flush()) std::rename(tmp.c_str(), cache.c_str());
    std::remove(tmp.c_str());
  }
  return r;
}

void register_table(const char* label, const std::string& program, std::set<std::string>& names) {
  JobResult list = read_list(program);
  std::vector<scen::Case> cases;
  std::string error;
  if (list.status != 0)
    error = program + " --list exited with status " + std::to_string(list.status);
  else if (scen::parse_cases(list.out, cases, error))
    error.clear();
  else
    error = program + " --list: " + error;
  for (size_t i = 0; i < cases.size() && error.empty(); ++i) {
    for (auto& m : cases[i].out) try {
        std::regex check(m.regex);
      } catch (const std::regex_error& e) {
        error = cases[i].at + ": bad regex /" + m.regex + "/ in " + cases[i].name + ": " + e.what();
      }
  }
  // Per row (consecutive cases from the same place): every provider, every p.
  for (size_t i = 0; i < cases.size() && error.empty();) {
    size_t j = i;
    while (j < cases.size() && cases[j].at == cases[i].at) ++j;
    // Rows run on tcp and shm run on the extra providers too, at p = 2 and 4
    // (a row may also name extra providers itself: then only those).
    std::vector<std::string> provs = cases[i].providers;
    if (provs == std::vector<std::string>{"tcp", "shm"})
      for (const ExtraProvider& e : kExtraProviders) provs.push_back(e.label);
    for (const std::string& prov : provs)
      for (size_t k = i; k < j && error.empty(); ++k) {
        const scen::Case& c = cases[k];
        if (set_of(prov, c.p) != g_set) continue;
        // p = 1 runs on shm; on tcp as well it would exercise nothing more
        // (a lone process talks only to itself) and cost a minute of the
        // README test command.
        if (prov == "tcp" && c.p == 1 && std::find(provs.begin(), provs.end(), "shm") != provs.end()) continue;
        if (is_extra(prov) && std::find(std::begin(kExtraP), std::end(kExtraP), c.p) == std::end(kExtraP)) continue;
        std::string full = c.name + "/" + test_suffix(prov, c.p);
        if (!names.insert(full).second) {
          error = c.at + ": " + full + " is listed twice";
          continue;
        }
        size_t dot = c.name.find('.');
        std::string suite = c.name.substr(0, dot), test = c.name.substr(dot + 1) + "/" + test_suffix(prov, c.p);
        auto [file, line] = file_line(c.at);
        ::testing::RegisterTest(suite.c_str(), test.c_str(), nullptr, nullptr, file.c_str(), line,
                                [=]() -> ::testing::Test* { return new TableCase(program, c, prov); });
      }
    i = j;
  }
  const char* readable = g_set == TestSet::Providers ? "ListIsReadableForProviders"
                         : g_set == TestSet::Wide    ? "ListIsReadableForWide"
                                                     : "ListIsReadable";
  ::testing::RegisterTest("ScenarioTable", (std::string(label) + readable).c_str(),
                          nullptr, nullptr, __FILE__, __LINE__,
                          [=]() -> ::testing::Test* { return new TableReadable(error, cases.size()); });
}

// ---------------------------------------------------------------- hand-written
// Checks that are not "exit status + regex counts" of one job.

// Random h-relations (sizes around frames and the 16 KiB / 128 KiB protocol
// switches, empty messages, misaligned starts) give identical checksums with
// bspk_expect, bspk_will_send and counted syncs; every byte and the receive
// order are verified inside the scenario; the runtime copies 0 bytes.
// Not a table row: it compares a value captured from four separate jobs.
class ModesAgreeOnRandomTraffic : public ::testing::Test {
 public:
  ModesAgreeOnRandomTraffic(std::string prov, int np) : prov_(std::move(prov)), np_(np) {}
  void TestBody() override {
    std::map<int, std::set<std::string>> per_pid;
    // "cycle" four times: with the count exchange the job's layout picks
    // (the shared-memory board here), over the message tree, direct and
    // recursive halving.
    const std::pair<const char*, const char*> runs[] = {
        {"expect", ""}, {"will_send", ""}, {"counted", ""}, {"cycle", ""}, {"cycle", " BSPK_COUNT_EXCHANGE=tree"},
        {"cycle", " BSPK_COUNT_EXCHANGE=direct"}, {"cycle", " BSPK_COUNT_EXCHANGE=halving"}};
    for (auto [mode, more_env] : runs) {
      JobResult r = shell(job_command(SCENARIOS_PATH, np_, prov_, "", std::string("traffic ") + mode + " 8",
                                      std::string("BSPK_SYNC_TIMEOUT=60") + more_env, 120));
      ASSERT_EQ(r.status, 0) << mode << "\n" << r.out;
      std::regex re("traffic checksum pid=(\\d+) mode=\\w+ value=([0-9a-f]+)");
      int lines = 0;
      for (std::sregex_iterator it(r.out.begin(), r.out.end(), re), end; it != end; ++it, ++lines)
        per_pid[std::stoi((*it)[1])].insert((*it)[2]);
      EXPECT_EQ(lines, np_) << r.out;
    }
    ASSERT_EQ(static_cast<int>(per_pid.size()), np_);
    for (auto& [pid, sums] : per_pid) EXPECT_EQ(sums.size(), 1u) << "pid " << pid << " differs between modes";
  }

 private:
  std::string prov_;
  int np_;
};

// Not a table row: no scenario program is involved.
class MissingProgramIsOneClearError : public ::testing::Test {
 public:
  void TestBody() override {
    // A missing file, a directory (access(X_OK) passes, exec fails) and a file
    // without execute permission: one message before any process starts.
    char plain[] = "/tmp/bspk-not-executable-XXXXXX";
    int fd = mkstemp(plain);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "true\n", 5), 5);
    close(fd);
    ASSERT_EQ(chmod(plain, 0644), 0);
    for (const char* prog : {"/nonexistent/prog", "/tmp", static_cast<const char*>(plain)}) {
      JobResult r = shell(std::string("timeout 30 " BSPKRUN_PATH " -n 4 ") + prog);
      EXPECT_EQ(r.status, 127) << prog << ": " << r.out;
      EXPECT_EQ(count_matches(r.out, std::regex("cannot execute")), 1u) << prog << ": " << r.out;
      EXPECT_EQ(count_matches(r.out, std::regex("exited with status")), 0u) << prog << ": " << r.out;
    }
    unlink(plain);
  }
};

void register_hand_written(std::set<std::string>& names) {
  if (g_set == TestSet::Core && names.insert("Launcher.MissingProgramIsOneClearError").second)
    ::testing::RegisterTest("Launcher", "MissingProgramIsOneClearError", nullptr, nullptr, __FILE__, __LINE__,
                            []() -> ::testing::Test* { return new MissingProgramIsOneClearError(); });
  for (std::string prov : {"tcp", "shm", "rxd", "rxm"})
    for (int np : scen::kSuiteP)
      if (set_of(prov, np) == g_set &&
          (!is_extra(prov) || std::find(std::begin(kExtraP), std::end(kExtraP), np) != std::end(kExtraP)) &&
          names.insert("MultiProc.ModesAgreeOnRandomTraffic/" + test_suffix(prov, np)).second)
        ::testing::RegisterTest("MultiProc", ("ModesAgreeOnRandomTraffic/" + test_suffix(prov, np)).c_str(), nullptr,
                                nullptr, __FILE__, __LINE__,
                                [=]() -> ::testing::Test* { return new ModesAgreeOnRandomTraffic(prov, np); });
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::set<std::string> names;
  register_hand_written(names);
  register_table("Scenarios", SCENARIOS_PATH, names);
  register_table("DsmScenarios", DSM_SCENARIOS_PATH, names);
#ifdef CONTIG_SCENARIOS_PATH
  register_table("ContigScenarios", CONTIG_SCENARIOS_PATH, names);
#endif
#ifdef FIDELITY_SCENARIOS_PATH
  register_table("FidelityScenarios", FIDELITY_SCENARIOS_PATH, names);
#endif
#ifdef BSPLIB_SCENARIOS_PATH
  register_table("BsplibScenarios", BSPLIB_SCENARIOS_PATH, names);
#endif
  return RUN_ALL_TESTS();
}
