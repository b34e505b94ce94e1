// tests/fuzz/fuzz_util.h -- shared by the fuzz targets (include it from exactly
// one file of each target: it defines LLVMFuzzerInitialize).
//  * FUZZ_CHECK(cond): a property of the target; on violation prints it, the
//    input that broke it (as the target describes it) and the stack, then
//    aborts, which libFuzzer reports as a crash and saves the input.
//  * LLVMFuzzerInitialize: libfabric's PSM provider (libinfinipath, linked in
//    with the runtime's objects) installs SIGABRT/SIGSEGV/... handlers of its
//    own in a constructor that print a raw backtrace and exit(), which hides
//    sanitizer and libFuzzer reports ("fuzz target exited"); IPATH_NO_BACKTRACE
//    turns them off, but only if set before the process starts, so a target
//    started without it re-executes itself once with it set.
#pragma once

#include <sanitizer/common_interface_defs.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace fuzz {

// What the failing input was, for the report (set by the target; may be null).
inline const char* g_context = nullptr;

[[noreturn]] inline void violated(const char* target, const char* what, const char* file, int line) {
  std::fprintf(stderr, "%s: property violated at %s:%d: %s\n", target, file, line, what);
  if (g_context) std::fprintf(stderr, "  input: %s\n", g_context);
  __sanitizer_print_stack_trace();
  std::fflush(stderr);
  std::abort();
}

}  // namespace fuzz

#define FUZZ_CHECK(cond)                                                   \
  do {                                                                     \
    if (!(cond)) ::fuzz::violated(FUZZ_TARGET, #cond, __FILE__, __LINE__); \
  } while (0)

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** argv) {
  if (!std::getenv("IPATH_NO_BACKTRACE")) {
    setenv("IPATH_NO_BACKTRACE", "1", 1);
    execv("/proc/self/exe", *argv);
    std::perror("fuzz: re-executing with IPATH_NO_BACKTRACE=1");  // then go on with the handlers as they are
  }
  return 0;
}
