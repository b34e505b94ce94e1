// coll/report.cpp -- error messages of the collectives (see report.h).
#include "coll/report.h"

#include <bspk.h>
#include <bspk_coll.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace bspk_coll {
namespace {
std::string& last() {
  static std::string s;
  return s;
}
}  // namespace

int64_t superstep_now() {
  if (bspk_nprocs() <= 0) return -1;
  return static_cast<int64_t>(bspk_superstep());
}

std::string where(const char* call, int64_t step) {
  const int pid = bspk_pid();
  if (pid < 0) return std::string(call) + " (no runtime)";
  if (step < 0) step = superstep_now();
  return std::string(call) + " (pid " + std::to_string(pid) + ", superstep " + std::to_string(step) + ")";
}

int report(const char* call, int64_t step, int code, const std::string& what) {
  last() = where(call, step) + ": " + what;
  const char* policy = std::getenv("BSPK_ERRORS");
  if (policy && std::strcmp(policy, "abort") == 0)
    bspk_abort_text(("bspk: error (BSPK_ERRORS=abort): " + last()).c_str());
  if (!policy || std::strcmp(policy, "quiet") != 0) {
    std::fflush(stdout);
    std::fprintf(stderr, "bspk: error: %s\n", last().c_str());
    std::fflush(stderr);
  }
  return code;
}

int report_local(const char* call, int code, const std::string& what) { return report(call, -1, code, what); }

int record_nested(const char* call, int64_t step, int code, const char* c_call) {
  std::string m = bspk_error_string() ? bspk_error_string() : "";
  if (m.empty()) m = "(no message)";
  // The C API's message starts "C_CALL (pid P, superstep S): "; the pid is
  // said already, and S only when it is a later superstep than the
  // collective's first (a collective may take several): "C_CALL [in
  // superstep S] failed: ...".
  std::string what = std::string(c_call) + " failed: " + m;
  const std::string head = std::string(c_call) + " (pid " + std::to_string(bspk_pid()) + ", superstep ";
  if (m.compare(0, head.size(), head) == 0) {
    const size_t close = m.find("): ", head.size());
    if (close != std::string::npos) {
      const std::string s = m.substr(head.size(), close - head.size());
      const bool same = s == std::to_string(step < 0 ? superstep_now() : step);
      what = std::string(c_call) + (same ? "" : " in superstep " + s) + " failed: " + m.substr(close + 3);
    }
  }
  // The engine speaks of its own calls (bspk_expect, bspk_sync_allgather);
  // say what the program did.
  if (code == BSPK_ERR_MODE)
    what += "; every process must make this collective call here, and another process ended the superstep "
            "otherwise (bspk_sync, or a superstep of its own)";
  last() = where(call, step) + ": " + what;
  return code;
}

}  // namespace bspk_coll

extern "C" const char* bspk_coll_error_string(void) { return bspk_coll::last().c_str(); }
