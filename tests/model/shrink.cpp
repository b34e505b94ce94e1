// tests/model/shrink.cpp -- reduce a failing program to a small one.
//
// Runs the case as a job (bspkrun ... bspk_model --program FILE), then tries
// smaller programs, keeping each that still fails: drop trailing supersteps,
// whole supersteps, one process's operations in a superstep, single
// operations; then make sync modes counted, delays zero and sizes smaller.
// A candidate that leaves the contract is first repaired by dropping the
// operations the model refuses (e.g. the uses of a region whose bspk_malloc
// was dropped), and skipped if that does not help.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "driver.h"
#include "model.h"

namespace model {

namespace {

// Drop refused operations until the model accepts the program.
bool repair(Program* pr) {
  for (int guard = 0; guard < 10000; ++guard) {
    Where w;
    std::string bad = validate(*pr, &w);
    if (bad.empty()) return true;
    if (w.index < 0) return false;
    auto& v = pr->steps[w.step].ops[w.pid];
    v.erase(v.begin() + w.index);
  }
  return false;
}

struct Shrinker {
  explicit Shrinker(const Options& o_) : o(o_) {}
  const Options& o;
  std::string file, log;
  std::string want;      // signature of the failure being shrunk
  std::string last_out;  // output of the last failing run
  int jobs = 0;

  bool fails(const Program& pr) {
    if (!write_file(file, program_str(pr))) return false;
    for (int r = 0; r < o.runs; ++r) {
      const char* to = std::getenv("BSPK_SYNC_TIMEOUT");  // a hang costs this much per run
      std::string cmd = "BSPK_FRAME_SIZE=" + std::to_string(pr.frame) + " BSPK_SYNC_TIMEOUT=" + (to && *to ? to : "20") + " " + o.bspkrun + " -n " +
                        std::to_string(pr.p) + " --provider " + o.provider + " --timeout 120 " + o.self + " --program " +
                        file + " > " + log + " 2>&1";
      ++jobs;
      int st = std::system(cmd.c_str());
      if (st == 0) continue;
      std::string out;
      read_file(log, &out);
      std::string sig = signature(out);
      if (want.empty() || o.any_failure || sig == want) {
        if (want.empty()) want = sig;
        last_out = out;
        return true;
      }
    }
    return false;
  }

  // What kind of failure the output shows: the line after "DIFFERENCE"
  // without its numbers and pointer names (or the first error line), so that
  // the shrinker keeps the failure it started with.
  static std::string signature(const std::string& out) {
    size_t d = out.find("DIFFERENCE");
    size_t a = d == std::string::npos ? 0 : out.find('\n', d);
    if (a == std::string::npos) a = 0;
    else if (d != std::string::npos) ++a;
    size_t b = out.find('\n', a);
    std::string line = out.substr(a, b == std::string::npos ? std::string::npos : b - a);
    std::string sig;
    for (char c : line) {
      if (c >= '0' && c <= '9') continue;
      sig += c;
      if (sig.size() >= 60) break;
    }
    return sig;
  }

  // Keep `cand` (after repair) if it still fails.
  bool try_keep(Program& cur, Program cand) {
    if (!repair(&cand)) return false;
    if (cand.nops() == cur.nops() && cand.steps.size() == cur.steps.size() && program_str(cand) == program_str(cur))
      return false;
    if (!fails(cand)) return false;
    cur = cand;
    std::printf("  shrink: %zu supersteps, %zu operations (%d jobs)\n", cur.steps.size(), cur.nops(), jobs);
    std::fflush(stdout);
    return true;
  }

  void pass(Program& cur) {
    bool changed = true;
    while (changed) {
      changed = false;
      // trailing supersteps
      for (size_t keep = 1; keep < cur.steps.size(); ++keep) {
        Program c = cur;
        c.steps.resize(keep);
        if (try_keep(cur, c)) {
          changed = true;
          break;
        }
      }
      // whole supersteps
      for (size_t s = cur.steps.size(); s-- > 0;) {
        if (cur.steps.size() <= 1) break;
        Program c = cur;
        c.steps.erase(c.steps.begin() + static_cast<long>(s));
        if (try_keep(cur, c)) changed = true;
      }
      // one process's operations in a superstep
      for (size_t s = 0; s < cur.steps.size(); ++s)
        for (int q = 0; q < cur.p; ++q) {
          if (cur.steps[s].ops[q].empty()) continue;
          Program c = cur;
          c.steps[s].ops[q].clear();
          if (try_keep(cur, c)) changed = true;
        }
      // single operations, last first
      for (size_t s = cur.steps.size(); s-- > 0;)
        for (int q = 0; q < cur.p; ++q)
          for (size_t i = cur.steps[s].ops[q].size(); i-- > 0;) {
            if (s >= cur.steps.size() || i >= cur.steps[s].ops[q].size()) continue;
            Program c = cur;
            c.steps[s].ops[q].erase(c.steps[s].ops[q].begin() + static_cast<long>(i));
            if (try_keep(cur, c)) changed = true;
          }
      // simpler supersteps and smaller operations
      for (size_t s = 0; s < cur.steps.size(); ++s) {
        if (cur.steps[s].mode != Mode::Counted) {
          Program c = cur;
          c.steps[s].mode = Mode::Counted;
          if (try_keep(cur, c)) changed = true;
        }
        for (int q = 0; q < cur.p; ++q)
          for (size_t i = 0; i < cur.steps[s].ops[q].size(); ++i) {
            Op op = cur.steps[s].ops[q][i];
            Program c = cur;
            Op& co = c.steps[s].ops[q][i];
            if (op.k == K::Delay && op.us > 0) co.us = 0;
            else if (op.n > 1 && op.k != K::Recv) co.n = op.n / 2;
            else continue;
            if (try_keep(cur, c)) changed = true;
          }
      }
    }
  }
};

}  // namespace

bool load_program(const Options& o, Program* pr) {
  if (o.program_file.empty()) {
    *pr = generate(o.seed, o.np, o.frame, o.feat);
    return true;
  }
  std::string text, err;
  if (read_file(o.program_file, &text) && parse_program(text, pr, &err)) return true;
  std::fprintf(stderr, "bspk_model: cannot read %s: %s\n", o.program_file.c_str(), err.c_str());
  return false;
}

int shrink_main(const Options& o) {
  if (o.np < 1 || o.provider.empty()) {
    std::fprintf(stderr, "bspk_model --shrink needs --np P --provider tcp|shm --frame-size F\n");
    return 2;
  }
  Program pr;
  if (!load_program(o, &pr)) return 2;
  Shrinker sh{o};
  std::string base = o.out.empty() ? "shrunk-seed" + std::to_string(pr.seed) + "-p" + std::to_string(pr.p) + "-" + o.provider +
                                         "-f" + std::to_string(pr.frame)
                                   : o.out;
  sh.file = base + ".work.prog";
  sh.log = base + ".log";
  std::printf("shrink: seed %llu p=%d provider=%s frame=%llu: %zu supersteps, %zu operations\n",
              static_cast<unsigned long long>(pr.seed), pr.p, o.provider.c_str(), static_cast<unsigned long long>(pr.frame),
              pr.steps.size(), pr.nops());
  if (!sh.fails(pr)) {
    std::printf("shrink: the case does not fail (in %d run(s)); nothing to shrink\n", o.runs);
    return 1;
  }
  sh.pass(pr);
  std::string final_file = base + ".prog";
  write_file(final_file, program_str(pr));
  std::string logtext = sh.last_out;
  std::printf("shrink: failure kept: %s\n", sh.want.c_str());
  std::printf("shrink: done after %d jobs; the smallest failing program (%s):\n%s\nits output:\n%s",
              sh.jobs, final_file.c_str(), program_str(pr).c_str(), logtext.c_str());
  std::printf("replay: BSPK_FRAME_SIZE=%llu BSPK_SYNC_TIMEOUT=60 %s -n %d --provider %s %s --program %s\n",
              static_cast<unsigned long long>(pr.frame), o.bspkrun.c_str(), pr.p, o.provider.c_str(), o.self.c_str(),
              final_file.c_str());
  unlink(sh.file.c_str());
  return 0;
}

}  // namespace model
