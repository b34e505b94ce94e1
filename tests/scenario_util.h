// tests/scenario_util.h -- shared by the multi-process scenario programs
// (scenarios.cpp, dsm_scenarios.cpp): checks that end the whole job with a
// message, and deterministic byte patterns to fill and verify regions with.
#pragma once
#include <bspk.h>

#include "scenario_table.h"

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <utility>

namespace {

int me, P;

#define CHECK(cond, ...)                                                               \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      char _m[512];                                                                    \
      std::snprintf(_m, sizeof _m, __VA_ARGS__);                                       \
      bspk_abort("CHECK FAILED at %s:%d (%s): %s", __FILE__, __LINE__, #cond, _m);    \
    }                                                                                  \
  } while (0)

#define OK(call) CHECK((call) == BSPK_OK, "%s -> %s", #call, bspk_error_string())

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
uint64_t h3(uint64_t a, uint64_t b, uint64_t c) { return mix(a * 0x100000001B3ull ^ mix(b * 31 + mix(c))); }

uint8_t pattern(int src, int step, int msg, uint64_t byte) {
  return static_cast<uint8_t>(h3(static_cast<uint64_t>(src) << 20 | static_cast<uint64_t>(step),
                                 static_cast<uint64_t>(msg), byte / 8) >> ((byte % 8) * 8));
}

// Visit the bytes of n elements from p, frame by frame (bspk_span), calling
// f(byte pointer, byte index) for each.
template <class F>
void for_each_byte(bspk_ptr p, size_t n, F&& f) {
  size_t es = bspk_elem_size(p);
  uint64_t byte = 0;
  while (n) {
    void* base;
    size_t k = bspk_span(p, &base);
    CHECK(k > 0, "span returned 0 with %zu elements left", n);
    if (k > n) k = n;
    auto* b = static_cast<uint8_t*>(base);
    for (size_t i = 0; i < k * es; ++i) f(b + i, byte++);
    n -= k;
    p = bspk_incr(p, static_cast<ptrdiff_t>(k));
  }
}

// Fill n elements from p with the pattern.
[[maybe_unused]] void fill(bspk_ptr p, size_t n, int src, int step, int msg) {
  for_each_byte(p, n, [&](uint8_t* b, uint64_t i) { *b = pattern(src, step, msg, i); });
}

// Verify a received region; returns a checksum of its bytes.
[[maybe_unused]] uint64_t verify(bspk_ptr p, size_t n, int src, int step, int msg) {
  uint64_t sum = 0;
  for_each_byte(p, n, [&](uint8_t* b, uint64_t i) {
    uint8_t want = pattern(src, step, msg, i);
    CHECK(*b == want, "message %d from pid %d (superstep %d): byte %llu is %u, expected %u", msg, src, step,
          (unsigned long long)i, *b, want);
    sum = sum * 1099511628211ull + *b;
  });
  return sum;
}

// The main() of a scenario program: `PROG --list` prints its table (before
// any bspk call); `PROG NAME [args]` starts the runtime, runs the scenario
// NAME and finalizes when it returns 0 (a scenario that finalized itself
// returns 2; its exit status is then 0). Any other return is the status.
using Scenario = int (*)(int, char**);
[[maybe_unused]] int scenario_main(int argc, char** argv, const char* prog,
                                   std::initializer_list<std::pair<const char*, Scenario>> scenarios) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s NAME [args] | %s --list\n", prog, prog);
    return 2;
  }
  if (std::string(argv[1]) == "--list") return scen::print_table(stdout);  // before any bspk call
  if (bspk_init(&argc, &argv) != BSPK_OK) {
    std::fprintf(stderr, "bspk_init failed: %s\n", bspk_error_string());
    return 1;
  }
  me = bspk_pid();
  P = bspk_nprocs();
  const std::string name = argv[1];
  for (const auto& [n, run] : scenarios) {
    if (name != n) continue;
    int rc = run(argc, argv);
    if (rc == 0) OK(bspk_finalize());
    return rc == 2 ? 0 : rc;
  }
  bspk_abort("unknown scenario '%s'", name.c_str());
}

}  // namespace
