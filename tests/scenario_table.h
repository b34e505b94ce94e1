// tests/scenario_table.h -- the expectations of the multi-process scenarios,
// kept next to the scenarios themselves.
//
// Every scenario in tests/scenarios.cpp and tests/dsm_scenarios.cpp is
// registered, right next to its code, with one table row per run:
//
//   SCENARIO_ROW({.test = "DeliveryInTheRightSuperstepUnderSkew",
//                 .args = "skew",
//                 .out = {exactly(1, "skew ok")}});
//
// A row names the behaviour (the test name), the scenario and its arguments,
// the p values and providers it runs on, the environment and bspkrun options,
// the expected exit status, the expected output (regexes with counts, which
// may be computed from p) and the time limits. A scenario run with several
// argument sets or environments has one row per run; rows of one test name
// may split the p values or providers between them (e.g. p = 1, where there is
// nothing to report, and p >= 2).
//
// A scenario binary answers `--list` by printing its table, every row expanded
// for each of its p values, in the line format below; tests/test_multiproc.cpp
// reads it at start-up and registers one GoogleTest test per (row, provider, p):
// Suite.Test/PROVIDER_pN (Suite.Test/pN when bspkrun picks the provider).
//
// The line format (one block per row and p; KEY, a tab, the value):
//   case     Suite.Test             the block starts
//   at       FILE:LINE              where the row is
//   p        N
//   providers tcp shm               "default": no --provider option; "rxd"
//                                   (udp;ofi_rxd) and "rxm" (tcp;ofi_rxm) run at p = 2, 4 only
//   env      A=1 B=2                environment of the job (may be empty)
//   bspkrun  OPTIONS                more bspkrun options (may be empty)
//   args     NAME ARGS...           the scenario and its arguments
//   status   ==0 | !=0 !=124 | any  every term must hold
//   limit    SECONDS                the job is killed after this (timeout -k 5)
//   within   SECONDS                0, or: the job must end in less than this
//   expect   ==N|>=N<TAB>REGEX      ECMAScript regex, counted over the output
//                                   (stdout + stderr), non-overlapping matches
//   end
#pragma once

#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

namespace scen {

// The p values of the suite; a range selects among them.
constexpr int kSuiteP[] = {1, 2, 3, 4, 8};

// Output expectation: the regex matches exactly / at least n times.
struct Match {
  std::string regex;
  enum Cmp { kExactly, kAtLeast } cmp = kExactly;
  long n = 0;
};
using Matches = std::vector<Match>;

// A regex, as opposed to literal text: "flow_waits=[1-9]"_re.
struct Re {
  std::string s;
};
inline Re operator""_re(const char* s, size_t n) { return Re{std::string(s, n)}; }

// Literal text as a regex (every special character escaped; a newline as \n).
inline std::string literal(const std::string& text) {
  std::string r;
  for (char c : text) {
    if (c == '\n') {
      r += "\\n";
      continue;
    }
    if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) r += '\\';
    r += c;
  }
  return r;
}

inline Match exactly(long n, const std::string& text) { return {literal(text), Match::kExactly, n}; }
inline Match exactly(long n, const Re& re) { return {re.s, Match::kExactly, n}; }
inline Match at_least(long n, const std::string& text) { return {literal(text), Match::kAtLeast, n}; }
inline Match at_least(long n, const Re& re) { return {re.s, Match::kAtLeast, n}; }
inline Match has(const std::string& text) { return at_least(1, text); }
inline Match has(const Re& re) { return at_least(1, re); }
inline Match lacks(const std::string& text) { return exactly(0, text); }

// Expected output of one run: a fixed list, or a function of p.
struct Output {
  std::function<Matches(int)> of_p = [](int) { return Matches{}; };
  Output() = default;
  Output(std::initializer_list<Match> l) : of_p([v = Matches(l)](int) { return v; }) {}
  template <class F, class = std::enable_if_t<std::is_invocable_r_v<Matches, F, int>>>
  Output(F f) : of_p(std::move(f)) {}
};

// `text` exactly p times (a marker every process prints once).
inline Output once_per_process(const std::string& text) {
  return Output([text](int p) { return Matches{exactly(p, text)}; });
}

// Expected exit status of bspkrun (124: the time limit of `timeout` or of
// bspkrun --timeout). Every listed (in)equality must hold; none: any status.
struct Status {
  std::vector<int> eq, ne;
};
inline Status exits(int code) { return {{code}, {}}; }
inline Status fails() { return {{}, {0}}; }                    // any non-zero status
inline Status fails_before_limit() { return {{}, {0, 124}}; }  // ... but not by hitting the time limit
inline Status any_status() { return {}; }

// The p values of a row: the suite's values within [lo, hi], or a list.
struct Procs {
  std::vector<int> values{std::begin(kSuiteP), std::end(kSuiteP)};
};
inline Procs p_range(int lo, int hi) {
  Procs r{{}};
  for (int p : kSuiteP)
    if (p >= lo && p <= hi) r.values.push_back(p);
  return r;
}
inline Procs p_list(std::initializer_list<int> l) { return Procs{std::vector<int>(l)}; }

inline const char* const kDefaultProvider = "default";  // no --provider: bspkrun chooses

struct Row {
  std::string test;                                     // the behaviour; the test name
  std::string args;                                     // scenario name and arguments
  Procs procs = {};                                     // p values
  std::vector<std::string> providers = {"tcp", "shm"};  // or {kDefaultProvider}; {"tcp", "shm"} also runs
                                                        // on rxd and net at p = 2, 4 (test_multiproc.cpp)
  std::string env = "BSPK_SYNC_TIMEOUT=60";             // replaces the default, not added to it
  std::string bspkrun = "";                             // more bspkrun options
  Status status = exits(0);
  Output out = {};
  int limit_s = 120;    // wall-clock limit of the job; a hang is a failure
  double within_s = 0;  // > 0: the job must end within this many seconds
  std::string suite = "MultiProc";
  // Set by SCENARIO_ROW.
  const char* file = "";
  int line = 0;
};

// One row expanded for one p: what --list prints and the test driver reads.
struct Case {
  std::string name;  // Suite.Test
  std::string at;    // FILE:LINE
  int p = 0;
  std::vector<std::string> providers;
  std::string env, bspkrun, args;
  Status status;
  int limit_s = 0;
  double within_s = 0;
  Matches out;
};

inline std::vector<Row>& table() {
  static std::vector<Row> rows;
  return rows;
}

inline bool add_row(const char* file, int line, Row r) {
  const char* slash = std::strrchr(file, '/');
  r.file = slash ? slash + 1 : file;
  r.line = line;
  table().push_back(std::move(r));
  return true;
}

#define SCENARIO_ROW_CAT2(a, b) a##b
#define SCENARIO_ROW_CAT(a, b) SCENARIO_ROW_CAT2(a, b)
// SCENARIO_ROW({.test = ..., .args = ..., ...}); at namespace scope.
#define SCENARIO_ROW(...)                                                    \
  [[maybe_unused]] const bool SCENARIO_ROW_CAT(scenario_row_, __COUNTER__) = \
      ::scen::add_row(__FILE__, __LINE__, ::scen::Row __VA_ARGS__)

// ------------------------------------------------------------- line format

inline std::string status_text(const Status& s) {
  std::string t;
  // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on
  // const char* + std::string temporaries here.
  for (int v : s.eq) (t += t.empty() ? "==" : " ==") += std::to_string(v);
  for (int v : s.ne) (t += t.empty() ? "!=" : " !=") += std::to_string(v);
  return t.empty() ? "any" : t;
}

inline std::string join(const std::vector<std::string>& v) {
  std::string t;
  for (auto& s : v) t += (t.empty() ? "" : " ") + s;
  return t;
}

inline std::vector<Case> expand(const Row& r) {
  std::vector<Case> cases;
  for (int p : r.procs.values) {
    Case c;
    c.name = r.suite + "." + r.test;
    c.at = std::string(r.file) + ":" + std::to_string(r.line);
    c.p = p;
    c.providers = r.providers;
    c.env = r.env;
    c.bspkrun = r.bspkrun;
    c.args = r.args;
    c.status = r.status;
    c.limit_s = r.limit_s;
    c.within_s = r.within_s;
    c.out = r.out.of_p(p);
    cases.push_back(std::move(c));
  }
  return cases;
}

inline void print_case(FILE* f, const Case& c) {
  std::fprintf(f, "case\t%s\nat\t%s\np\t%d\nproviders\t%s\nenv\t%s\nbspkrun\t%s\nargs\t%s\nstatus\t%s\n",
               c.name.c_str(), c.at.c_str(), c.p, join(c.providers).c_str(), c.env.c_str(), c.bspkrun.c_str(),
               c.args.c_str(), status_text(c.status).c_str());
  std::fprintf(f, "limit\t%d\nwithin\t%g\n", c.limit_s, c.within_s);
  for (auto& m : c.out)
    std::fprintf(f, "expect\t%s%ld\t%s\n", m.cmp == Match::kExactly ? "==" : ">=", m.n, m.regex.c_str());
  std::fprintf(f, "end\n");
}

// `scenarios --list`: the whole table. Returns the exit status; a row that
// cannot be printed in the line format is an error, not a silent omission.
inline int print_table(FILE* f) {
  for (const Row& r : table()) {
    auto bad = [&](const char* why) {
      std::fprintf(stderr, "%s:%d: row %s: %s\n", r.file, r.line, r.test.c_str(), why);
      return 2;
    };
    if (r.test.empty() || r.args.empty()) return bad("no test name or no arguments");
    if (r.test.find_first_of("./ \t\n") != std::string::npos) return bad("test names have no '.', '/' or blanks");
    if (r.procs.values.empty() || r.providers.empty()) return bad("no p values or no providers");
    for (const Case& c : expand(r)) {
      for (auto* s : {&c.env, &c.bspkrun, &c.args})
        if (s->find_first_of("\t\n") != std::string::npos) return bad("tab or newline in env/bspkrun/args");
      for (auto& m : c.out)
        if (m.regex.find_first_of("\t\n") != std::string::npos) return bad("raw tab or newline in a regex");
      print_case(f, c);
    }
  }
  return 0;
}

// Parse --list output. Returns false (and sets err) on a malformed line.
inline bool parse_cases(const std::string& text, std::vector<Case>& cases, std::string& err) {
  Case c;
  bool open = false;
  size_t lineno = 0;
  auto words = [](const std::string& s) {
    std::vector<std::string> w;
    size_t i = 0;
    while (i < s.size()) {
      size_t j = s.find(' ', i);
      if (j == std::string::npos) j = s.size();
      if (j > i) w.push_back(s.substr(i, j - i));
      i = j + 1;
    }
    return w;
  };
  for (size_t pos = 0; pos < text.size();) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++lineno;
    auto fail = [&](const std::string& why) {
      err = "line " + std::to_string(lineno) + " (" + line + "): " + why;
      return false;
    };
    size_t tab = line.find('\t');
    std::string key = line.substr(0, tab), val = tab == std::string::npos ? "" : line.substr(tab + 1);
    try {
      if (key == "case") {
        if (open) return fail("case inside a case");
        c = Case{};
        c.name = val;
        open = true;
        continue;
      }
      if (!open) return fail("outside a case");
      if (key == "at")
        c.at = val;
      else if (key == "p")
        c.p = std::stoi(val);
      else if (key == "providers")
        c.providers = words(val);
      else if (key == "env")
        c.env = val;
      else if (key == "bspkrun")
        c.bspkrun = val;
      else if (key == "args")
        c.args = val;
      else if (key == "limit")
        c.limit_s = std::stoi(val);
      else if (key == "within")
        c.within_s = std::stod(val);
      else if (key == "status") {
        if (val != "any")
          for (auto& w : words(val)) {
            if (w.size() < 3 || (w.compare(0, 2, "==") != 0 && w.compare(0, 2, "!=") != 0)) return fail("bad status");
            (w[0] == '=' ? c.status.eq : c.status.ne).push_back(std::stoi(w.substr(2)));
          }
      } else if (key == "expect") {
        size_t t2 = val.find('\t');
        if (t2 == std::string::npos || t2 < 3) return fail("expect needs ==N or >=N, a tab and a regex");
        Match m;
        std::string op = val.substr(0, 2);
        if (op != "==" && op != ">=") return fail("bad count");
        m.cmp = op == "==" ? Match::kExactly : Match::kAtLeast;
        m.n = std::stol(val.substr(2, t2 - 2));
        m.regex = val.substr(t2 + 1);
        c.out.push_back(m);
      } else if (key == "end") {
        if (c.p <= 0 || c.providers.empty() || c.args.empty() || c.limit_s <= 0) return fail("incomplete case");
        cases.push_back(c);
        open = false;
      } else if (!key.empty()) {
        return fail("unknown key");
      }
    } catch (const std::exception& e) {
      return fail(std::string("bad number: ") + e.what());
    }
  }
  if (open) {
    err = "last case has no end";
    return false;
  }
  return true;
}

}  // namespace scen
