// tests/test_config.cpp -- the BSPK_* configuration table (base/config.h):
// defaults, set values, range and type checks, parsing of sizes and booleans,
// the README table, and `bspkrun --info`.
#include <bspk.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>

#include "base/config.h"
#include "base/env.h"
#include "base/error.h"
#include "boot/hub.h"
#include "base/version.h"
#include "sync/engine.h"

using namespace bspk;
using config::Var;

namespace {

// Every test starts with no BSPK_* setting in the environment and leaves the
// environment as it found it.
class Config : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const config::Row& r : config::rows()) {
      if (const char* v = std::getenv(r.name)) saved_[r.name] = v;
      unsetenv(r.name);
    }
  }
  void TearDown() override {
    for (const config::Row& r : config::rows()) unsetenv(r.name);
    for (auto& [n, v] : saved_) setenv(n.c_str(), v.c_str(), 1);
  }
  static void set(Var v, const char* value) { setenv(config::name(v), value, 1); }

  // The message of the bspk::Error (BSPK_ERR_ARG) that f throws.
  template <class F>
  static std::string arg_error(F f) {
    try {
      f();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), BSPK_ERR_ARG);
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
  }

 private:
  std::map<std::string, std::string> saved_;
};

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_F(Config, EveryVarHasARow) {
  ASSERT_EQ(config::rows().size(), config::kNumVars);
  for (size_t k = 0; k < config::kNumVars; ++k) {
    Var v = static_cast<Var>(k);
    const config::Row& r = config::row(v);
    EXPECT_EQ(r.var, v);
    EXPECT_EQ(std::string(r.name).rfind("BSPK_", 0), 0u) << r.name;
    EXPECT_EQ(config::find(r.name), v) << r.name;
    EXPECT_TRUE(r.help && *r.help) << r.name;
    EXPECT_FALSE(config::default_text(v).empty()) << r.name;
    EXPECT_FALSE(config::allowed_text(v).empty()) << r.name;
  }
  EXPECT_FALSE(config::find("BSPK_NO_SUCH_SETTING"));
  EXPECT_THROW(config::row(static_cast<Var>(config::kNumVars)), std::logic_error);
  // The variables bspkrun sets, and the test hook, are marked as such.
  for (Var v : {Var::BOOT_SOCKET, Var::RANK, Var::NPROCS, Var::JOBID, Var::STATUS_FILE})
    EXPECT_EQ(config::row(v).category, config::Category::Launcher) << config::name(v);
  EXPECT_EQ(config::row(Var::TEST_WIRE_VERSION).category, config::Category::Test);
}

TEST_F(Config, Defaults) {
  EXPECT_EQ(config::get_int(Var::MAX_AHEAD), 16);
  EXPECT_EQ(config::get_int(Var::RX_DEPTH), 32);
  EXPECT_EQ(config::get_int(Var::SMALL_RX_DEPTH), 64);
  EXPECT_EQ(config::get_int(Var::SPIN_US), 200);
  EXPECT_EQ(config::get_int(Var::SPIN_US, 0), 0) << "run-time default (oversubscribed)";
  EXPECT_EQ(config::get_int(Var::YIELD_MS), 100);
  EXPECT_EQ(config::get_int(Var::YIELD_MS, 2), 2) << "run-time default (oversubscribed)";
  EXPECT_EQ(config::get_int(Var::TEST_WIRE_VERSION), version::kWireVersion);
  EXPECT_EQ(config::get_seconds(Var::SYNC_TIMEOUT), 60);
  EXPECT_EQ(config::get_seconds(Var::START_TIMEOUT), 60);
  EXPECT_EQ(config::get_seconds(Var::FAILURE_TIMEOUT), 10);
  EXPECT_EQ(config::get_size(Var::POOL_LIMIT), 0u);
  EXPECT_EQ(config::get_size(Var::FRAME_SIZE, 65536), 65536u) << "run-time default";
  EXPECT_FALSE(config::get_bool(Var::STATS));
  EXPECT_FALSE(config::get_bool(Var::CHECK));
  EXPECT_FALSE(config::get_bool(Var::VERBOSE));
  EXPECT_FALSE(config::get_bool(Var::REPORT_BINDINGS));
  EXPECT_EQ(config::get_enum(Var::BIND), "auto");
  EXPECT_EQ(config::get_enum(Var::ERRORS), "print");
  EXPECT_EQ(config::get_enum(Var::BOOTSTRAP, "singleton"), "singleton");
  EXPECT_EQ(config::get_string(Var::IFACE), std::nullopt);
  EXPECT_EQ(config::get_int(Var::HUB_PORT, 0), 0);
  EXPECT_FALSE(config::is_set(Var::HUB_PORT));
  EXPECT_EQ(config::current_text(Var::MAX_AHEAD), "(default: 16)");
  EXPECT_EQ(config::current_text(Var::FRAME_SIZE), "(default: 64K on shm, 256K on tcp/verbs)");
  EXPECT_EQ(config::current_text(Var::POOL_LIMIT), "(default: none)");
  // The table agrees with the defaults the layers still carry themselves.
  sync::Options o;
  EXPECT_EQ(o.max_ahead, config::get_int(Var::MAX_AHEAD));
  EXPECT_EQ(o.timeout_s, config::get_seconds(Var::SYNC_TIMEOUT));
  EXPECT_EQ(static_cast<int64_t>(o.spin_s * 1e6 + 0.5), config::get_int(Var::SPIN_US));
  EXPECT_EQ(static_cast<int64_t>(o.yield_s * 1e3 + 0.5), config::get_int(Var::YIELD_MS));
  EXPECT_EQ(o.rx_depth, config::get_int(Var::RX_DEPTH));
  EXPECT_EQ(o.small_rx_depth, config::get_int(Var::SMALL_RX_DEPTH));
  boot::HubTiming t;
  EXPECT_EQ(t.failure_timeout, config::get_seconds(Var::FAILURE_TIMEOUT));
  EXPECT_EQ(t.start_timeout, config::get_seconds(Var::START_TIMEOUT));
}

TEST_F(Config, SetValues) {
  set(Var::MAX_AHEAD, "20");
  EXPECT_EQ(config::get_int(Var::MAX_AHEAD), 20);
  EXPECT_EQ(config::get_int(Var::MAX_AHEAD, 3), 20) << "a set value beats the run-time default";
  EXPECT_EQ(config::current_text(Var::MAX_AHEAD), "20");
  EXPECT_EQ(config::raw(Var::MAX_AHEAD), "20");
  set(Var::SYNC_TIMEOUT, "0.5");
  EXPECT_EQ(config::get_seconds(Var::SYNC_TIMEOUT), 0.5);
  set(Var::IFACE, "eth1");
  EXPECT_EQ(config::get_string(Var::IFACE), "eth1");
  set(Var::BIND, "core");
  EXPECT_EQ(config::get_enum(Var::BIND), "core");
  set(Var::BOOTSTRAP, "pmi2");
  EXPECT_EQ(config::get_enum(Var::BOOTSTRAP, ""), "pmi2");
  set(Var::FAILURE_TIMEOUT, "0");
  EXPECT_EQ(config::get_seconds(Var::FAILURE_TIMEOUT), 0);
  set(Var::FAILURE_TIMEOUT, "off");
  EXPECT_EQ(config::get_seconds(Var::FAILURE_TIMEOUT), 0);
  set(Var::FAILURE_TIMEOUT, "2.5");
  EXPECT_EQ(config::get_seconds(Var::FAILURE_TIMEOUT), 2.5);
  EXPECT_EQ(boot::HubTiming::from_env().failure_timeout, 2.5);
  EXPECT_EQ(sync::Options::from_env(1, 2).yield_s, 0.1);
  EXPECT_EQ(sync::Options::from_env(3, 2).yield_s, 0.002) << "oversubscribed: 3 processes on 2 CPUs";
  set(Var::YIELD_MS, "5");
  EXPECT_EQ(sync::Options::from_env(1).yield_s, 0.005);
  set(Var::YIELD_MS, "0");
  EXPECT_EQ(sync::Options::from_env(1).yield_s, 0.0) << "0: sleep as soon as the spin ends";
  set(Var::HUB_PORT, "23456");
  EXPECT_TRUE(config::is_set(Var::HUB_PORT));
  EXPECT_EQ(config::get_int(Var::HUB_PORT, 0), 23456);
  // An empty value is no value.
  set(Var::MAX_AHEAD, "");
  EXPECT_FALSE(config::is_set(Var::MAX_AHEAD));
  EXPECT_EQ(config::get_int(Var::MAX_AHEAD), 16);
  EXPECT_EQ(config::current_text(Var::MAX_AHEAD), "(default: 16)");
}

TEST_F(Config, OutOfRangeAndMalformedValuesNameTheVariableAndTheRange) {
  set(Var::MAX_AHEAD, "0");
  std::string e = arg_error([] { config::get_int(Var::MAX_AHEAD); });
  EXPECT_TRUE(has(e, "BSPK_MAX_AHEAD") && has(e, "[1, 4095]")) << e;
  set(Var::MAX_AHEAD, "5000");
  e = arg_error([] { config::get_int(Var::MAX_AHEAD, 16); });
  EXPECT_TRUE(has(e, "BSPK_MAX_AHEAD=5000") && has(e, "[1, 4095]")) << e;
  set(Var::MAX_AHEAD, "12abc");
  e = arg_error([] { config::get_int(Var::MAX_AHEAD); });
  EXPECT_TRUE(has(e, "BSPK_MAX_AHEAD='12abc'") && has(e, "not an integer")) << e;
  EXPECT_EQ(config::problem(Var::MAX_AHEAD), e);
  set(Var::HUB_PORT, "70000");
  e = arg_error([] { config::get_int(Var::HUB_PORT, 0); });
  EXPECT_TRUE(has(e, "BSPK_HUB_PORT") && has(e, "[1, 65535]")) << e;
  // A range known only at run time: BSPK_RANK below BSPK_NPROCS.
  set(Var::RANK, "4");
  e = arg_error([] { config::get_int(Var::RANK, -1, 0, 3); });
  EXPECT_TRUE(has(e, "BSPK_RANK=4") && has(e, "[0, 3]")) << e;
  EXPECT_EQ(config::get_int(Var::RANK, -1, 0, 4), 4);
  set(Var::SYNC_TIMEOUT, "-1");
  e = arg_error([] { config::get_seconds(Var::SYNC_TIMEOUT); });
  EXPECT_TRUE(has(e, "BSPK_SYNC_TIMEOUT='-1'") && has(e, "positive number of seconds")) << e;
  set(Var::SYNC_TIMEOUT, "off");  // never (BSPlib programs' default)
  EXPECT_EQ(config::get_seconds(Var::SYNC_TIMEOUT), 0);
  set(Var::FAILURE_TIMEOUT, "never");
  e = arg_error([] { config::get_seconds(Var::FAILURE_TIMEOUT); });
  EXPECT_TRUE(has(e, "BSPK_FAILURE_TIMEOUT='never'")) << e;
  set(Var::BIND, "socket");
  e = arg_error([] { config::get_enum(Var::BIND); });
  EXPECT_EQ(e, "BSPK_BIND='socket' is not one of auto, core, none");
  set(Var::ERRORS, "loud");
  e = arg_error([] { config::get_enum(Var::ERRORS); });
  EXPECT_EQ(e, "BSPK_ERRORS='loud' is not one of print, quiet, abort");
  set(Var::BOOTSTRAP, "mpi");
  e = arg_error([] { config::get_enum(Var::BOOTSTRAP, ""); });
  EXPECT_EQ(e, "BSPK_BOOTSTRAP='mpi' is not one of bspkrun, pmix, pmi2, slurm, singleton");
  EXPECT_EQ(config::current_text(Var::BIND), "socket") << "--info shows the value as set";
  EXPECT_TRUE(config::problem(Var::BIND).has_value());
  EXPECT_FALSE(config::problem(Var::STATS).has_value()) << "unset is fine";
}

TEST_F(Config, SizeSuffixes) {
  struct {
    const char* text;
    uint64_t bytes;
  } cases[] = {{"4096", 4096},  {"4096B", 4096},     {"64K", 65536},      {"64k", 65536},
               {"64KiB", 65536}, {"1M", 1u << 20},   {"3m", 3u << 20},    {"2MiB", 2u << 20},
               {"1G", 1ull << 30}, {"2g", 2ull << 30}, {"1GiB", 1ull << 30}};
  for (auto& c : cases) {
    set(Var::FRAME_SIZE, c.text);
    EXPECT_EQ(config::get_size(Var::FRAME_SIZE, 1), c.bytes) << c.text;
    set(Var::POOL_LIMIT, c.text);
    EXPECT_EQ(config::get_size(Var::POOL_LIMIT), c.bytes) << c.text;
  }
  set(Var::FRAME_SIZE, "64X");
  std::string e = arg_error([] { config::get_size(Var::FRAME_SIZE, 1); });
  EXPECT_TRUE(has(e, "BSPK_FRAME_SIZE='64X'") && has(e, "unknown unit 'X'")) << e;
  set(Var::POOL_LIMIT, "lots");
  e = arg_error([] { config::get_size(Var::POOL_LIMIT); });
  EXPECT_TRUE(has(e, "BSPK_POOL_LIMIT='lots'") && has(e, "not a size")) << e;
}

TEST_F(Config, BoolParsing) {
  for (const char* t : {"1", "yes", "true", "on", "YES", "True", "ON"}) {
    set(Var::STATS, t);
    EXPECT_TRUE(config::get_bool(Var::STATS)) << t;
  }
  for (const char* f : {"0", "no", "false", "off", "No", "FALSE"}) {
    set(Var::STATS, f);
    EXPECT_FALSE(config::get_bool(Var::STATS)) << f;
  }
  set(Var::CHECK, "2");
  std::string e = arg_error([] { config::get_bool(Var::CHECK); });
  EXPECT_TRUE(has(e, "BSPK_CHECK='2'") && has(e, "not a boolean")) << e;
}

TEST_F(Config, WrongAccessorIsAnInternalError) {
  EXPECT_THROW(config::get_int(Var::STATS), std::logic_error);         // a bool row
  EXPECT_THROW(config::get_bool(Var::MAX_AHEAD), std::logic_error);    // an int row
  EXPECT_THROW(config::get_size(Var::SYNC_TIMEOUT), std::logic_error); // a seconds row
  EXPECT_THROW(config::get_seconds(Var::FRAME_SIZE, 1.0), std::logic_error);
  EXPECT_THROW(config::get_string(Var::BIND), std::logic_error);       // an enum row
  EXPECT_THROW(config::get_enum(Var::IFACE), std::logic_error);        // a string row
  // No fixed default: the reader must pass the run-time one.
  EXPECT_THROW(config::get_size(Var::FRAME_SIZE), std::logic_error);
  EXPECT_THROW(config::get_int(Var::HUB_PORT), std::logic_error);
  EXPECT_THROW(config::get_enum(Var::BOOTSTRAP), std::logic_error);
  // A run-time range must lie within the table's.
  EXPECT_THROW(config::get_int(Var::RANK, -1, 0, 1 << 21), std::logic_error);
  try {
    config::get_int(Var::STATS);
  } catch (const std::logic_error& e) {
    EXPECT_TRUE(has(e.what(), "internal error") && has(e.what(), "BSPK_STATS") && has(e.what(), "bool"))
        << e.what();
  }
}

// A BSPK_* variable that is no setting is found, with the closest setting
// when one is within 2 edits (and a third of its length: BSPK_FOO gets no
// suggestion); settings read outside the table (the
// collectives', BSPK_BSPKRUN, BSPK_APP) and the tests' BSPK_TEST_* are not.
TEST_F(Config, UnknownSettingsAreFoundWithTheClosestName) {
  const char* const unknown[] = {"BSPK_SYNC_TIMOUT", "BSPK_FRAMESIZE", "BSPK_ZZZZZZZZZZZZZZ", "BSPK_FOO"};
  const char* const fine[] = {"BSPK_COLL_SHORT", "BSPK_COLL_HEADER", "BSPK_BSPKRUN", "BSPK_APP", "BSPK_TEST_ANYTHING"};
  for (const char* n : unknown) setenv(n, "1", 1);
  for (const char* n : fine) setenv(n, "1", 1);
  set(Var::SYNC_TIMEOUT, "30");
  std::map<std::string, std::string> found;
  for (const config::Unknown& u : config::unknown_settings()) found[u.name] = u.closest;
  for (const char* n : unknown) unsetenv(n);
  for (const char* n : fine) unsetenv(n);
  for (const char* n : fine) EXPECT_EQ(found.count(n), 0u) << n;
  EXPECT_EQ(found.count("BSPK_SYNC_TIMEOUT"), 0u);
  ASSERT_EQ(found.count("BSPK_SYNC_TIMOUT"), 1u);
  EXPECT_EQ(found["BSPK_SYNC_TIMOUT"], "BSPK_SYNC_TIMEOUT");
  EXPECT_EQ(found["BSPK_FRAMESIZE"], "BSPK_FRAME_SIZE");
  ASSERT_EQ(found.count("BSPK_ZZZZZZZZZZZZZZ"), 1u);
  EXPECT_EQ(found["BSPK_ZZZZZZZZZZZZZZ"], "");
  ASSERT_EQ(found.count("BSPK_FOO"), 1u);
  EXPECT_EQ(found["BSPK_FOO"], "");
  const std::string t = config::unknown_text({"BSPK_SYNC_TIMOUT", "BSPK_SYNC_TIMEOUT"});
  EXPECT_TRUE(has(t, "BSPK_SYNC_TIMOUT is not a BSPk setting (did you mean BSPK_SYNC_TIMEOUT?)")) << t;
}

TEST_F(Config, MarkdownTableHasTheUserRowsOnly) {
  std::string md = config::markdown_table();
  EXPECT_EQ(md.rfind("| variable | default | meaning |\n|---|---|---|\n", 0), 0u);
  for (const config::Row& r : config::rows()) {
    std::string cell = "| `" + std::string(r.name) + "` |";
    if (r.category == config::Category::User) EXPECT_TRUE(has(md, cell)) << r.name;
    else EXPECT_FALSE(has(md, cell)) << r.name;
  }
  EXPECT_TRUE(has(md, "| `BSPK_MAX_AHEAD` | 16 | supersteps a sender may run ahead of a receiver |\n"));
  EXPECT_TRUE(has(md, "| `BSPK_SPIN_US` | 200 (0 if oversubscribed) |"));
  EXPECT_TRUE(has(md, "FI_TCP_IFACE")) << "the fallback is named in BSPK_IFACE's help";
}

// `bspkrun --info` needs no program, exits 0 and names every row, with values
// from the environment; --info=markdown prints the table above.
namespace {
std::string run(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *status = pclose(p);
  return out;
}
}  // namespace

TEST_F(Config, BspkrunInfoListsEveryRow) {
  int st = -1;
  std::string out = run("BSPK_MAX_AHEAD=21 BSPK_BIND=socket " BSPKRUN_PATH " --info", &st);
  ASSERT_EQ(st, 0) << out;
  for (const config::Row& r : config::rows()) EXPECT_TRUE(has(out, std::string("  ") + r.name + " ")) << r.name;
  EXPECT_TRUE(has(out, "BSPK_MAX_AHEAD           21\n")) << out;
  EXPECT_TRUE(has(out, "BSPK_SYNC_TIMEOUT        (default: 60; off for BSPlib programs and under bsprun)\n")) << out;
  EXPECT_TRUE(has(out, "BSPK_BIND='socket' is not one of auto, core, none")) << out;
  EXPECT_TRUE(has(out, "Set by bspkrun") && has(out, "Test hooks")) << out;
  std::string md = run(BSPKRUN_PATH " --info=markdown", &st);
  ASSERT_EQ(st, 0);
  EXPECT_EQ(md, config::markdown_table());
  run(BSPKRUN_PATH " --info=html 2>/dev/null", &st);
  EXPECT_NE(st, 0) << "an unknown format is refused";
}

// Issue 13, found by tests/fuzz/fuzz_env: negative sizes were negated by
// strtoull, sizes times their unit wrapped past 2^64 (17179869184G gave 0), and
// time-outs of 1e10 s or inf overflowed the nanosecond clock (bspk_init then
// gave up at once). All are refused now, naming the variable.
TEST(EnvParsers, NegativeOverflowingAndUnrepresentableValuesAreRefused) {
  auto refused = [](const char* name, const char* value, auto parse) {
    setenv(name, value, 1);
    try {
      parse();
      ADD_FAILURE() << name << "=" << value << " was accepted";
    } catch (const bspk::Error& e) {
      EXPECT_EQ(e.code(), BSPK_ERR_ARG);
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
    unsetenv(name);
  };
  for (const char* v : {"-5", "-1M", " -3", "17179869184G", "175921860444161MiB", "349999999999999999k", "18446744073709551616"})
    refused("BSPK_TEST_SIZE", v, [] { bspk::env::get_size("BSPK_TEST_SIZE", 1); });
  for (const char* v : {"1e10", "inf", "nan", "-1", "0"})
    refused("BSPK_TEST_SECONDS", v, [] { bspk::env::get_seconds("BSPK_TEST_SECONDS", 1); });
  setenv("BSPK_TEST_SIZE", "16384G", 1);
  EXPECT_EQ(bspk::env::get_size("BSPK_TEST_SIZE", 1), uint64_t{16384} << 30);
  setenv("BSPK_TEST_SECONDS", "1e9", 1);
  EXPECT_EQ(bspk::env::get_seconds("BSPK_TEST_SECONDS", 1), 1e9);
  unsetenv("BSPK_TEST_SIZE");
  unsetenv("BSPK_TEST_SECONDS");
}

// FI_PROVIDER's syntax (fabric(7)): one parser for the runtime's choice
// (fabric/select.cpp) and bspkrun's sockets check.
TEST(EnvParsers, NameFilterTrimsDropsEmptyEntriesAndReadsTheCaret) {
  env::NameFilter f = env::parse_name_filter(" tcp , shm,, verbs;ofi_rxm ");
  EXPECT_FALSE(f.exclude);
  EXPECT_EQ(f.names, (std::vector<std::string>{"tcp", "shm", "verbs;ofi_rxm"}));
  f = env::parse_name_filter("  ^psm3,\tpsm2");
  EXPECT_TRUE(f.exclude);
  EXPECT_EQ(f.names, (std::vector<std::string>{"psm3", "psm2"}));
  f = env::parse_name_filter("^");
  EXPECT_TRUE(f.exclude);
  EXPECT_TRUE(f.names.empty());
  EXPECT_TRUE(env::parse_name_filter(" , ").names.empty());
  EXPECT_TRUE(env::parse_name_filter("").names.empty());
  // A '^' after the first name is part of a name, as in libfabric.
  EXPECT_EQ(env::parse_name_filter("tcp,^shm").names, (std::vector<std::string>{"tcp", "^shm"}));
}
