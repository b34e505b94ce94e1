// bsplib/affinity.cpp -- MulticoreBSP's affinity interface (mcbsp-affinity.h):
// the settings, their getters, and the placement bsp_begin applies to the
// processes it starts itself (bsplib/affinity.h).
#include "bsplib/affinity.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "mcbsp-affinity.h"

enum mcbsp_affinity_mode MCBSP_DEFAULT_AFFINITY = SCATTER;
size_t MCBSP_DEFAULT_THREADS_PER_CORE = 1;
enum mcbsp_thread_numbering MCBSP_DEFAULT_THREAD_NUMBERING = CONSECUTIVE;

namespace {

struct Settings {
  // Which setters were called (mcbsp_set_pinning sets mode_set).
  bool max_set = false, cores_set = false, tpc_set = false, mode_set = false, numbering_set = false,
       reserved_set = false;
  size_t max_threads = 0, cores = 0, tpc = 1;
  mcbsp_affinity_mode mode = SCATTER;
  mcbsp_thread_numbering numbering = CONSECUTIVE;
  std::vector<size_t> pinning, reserved;
};
Settings g;

size_t online_cpus() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<size_t>(n) : 1;
}

size_t* copy_of(const std::vector<size_t>& v, size_t len) {
  if (v.empty()) return nullptr;
  len = std::max(len, v.size());
  auto* a = static_cast<size_t*>(std::calloc(len, sizeof(size_t)));
  if (a) std::copy(v.begin(), v.end(), a);
  return a;
}

// Whether the program chose a placement: a setter other than maximum threads,
// or a default changed.
bool chosen() {
  return g.mode_set || g.cores_set || g.tpc_set || g.numbering_set || g.reserved_set ||
         MCBSP_DEFAULT_AFFINITY != SCATTER || MCBSP_DEFAULT_THREADS_PER_CORE != 1 ||
         MCBSP_DEFAULT_THREAD_NUMBERING != CONSECUTIVE;
}

}  // namespace

extern "C" {

void mcbsp_set_maximum_threads(const size_t max) {
  g.max_set = true;  // (sizes bsp_nprocs() before bsp_begin; pins nothing by itself)
  g.max_threads = max;
}
void mcbsp_set_affinity_mode(const enum mcbsp_affinity_mode mode) {
  g.mode_set = true;
  g.mode = mode;
}
void mcbsp_set_available_cores(const size_t num_cores) {
  g.cores_set = true;
  g.cores = num_cores;
}
void mcbsp_set_threads_per_core(const size_t threads_per_core) {
  g.tpc_set = true;
  g.tpc = threads_per_core;
}
void mcbsp_set_thread_numbering(const enum mcbsp_thread_numbering numbering) {
  g.numbering_set = true;
  g.numbering = numbering;
}
void mcbsp_set_pinning(const size_t* const pinning, const size_t length) {
  g.mode_set = true;
  g.mode = MANUAL;
  g.pinning.assign(pinning, pinning ? pinning + length : pinning);
}
void mcbsp_set_reserved_cores(const size_t* const reserved, const size_t length) {
  g.reserved_set = true;
  g.reserved.assign(reserved, reserved ? reserved + length : reserved);
}

size_t mcbsp_get_maximum_threads(void) { return g.max_set && g.max_threads > 0 ? g.max_threads : online_cpus(); }
enum mcbsp_affinity_mode mcbsp_get_affinity_mode(void) { return g.mode_set ? g.mode : MCBSP_DEFAULT_AFFINITY; }
size_t mcbsp_get_threads_per_core(void) {
  const size_t t = g.tpc_set ? g.tpc : MCBSP_DEFAULT_THREADS_PER_CORE;
  return t > 0 ? t : 1;
}
size_t mcbsp_get_available_cores(void) {
  if (g.cores_set && g.cores > 0) return g.cores;
  return std::max<size_t>(1, online_cpus() / mcbsp_get_threads_per_core());
}
enum mcbsp_thread_numbering mcbsp_get_thread_numbering(void) {
  return g.numbering_set ? g.numbering : MCBSP_DEFAULT_THREAD_NUMBERING;
}
size_t* mcbsp_get_pinning(void) { return copy_of(g.pinning, mcbsp_get_maximum_threads()); }
size_t mcbsp_get_reserved_cores_number(void) { return g.reserved.size(); }
size_t* mcbsp_get_reserved_cores(void) { return copy_of(g.reserved, 0); }

}  // extern "C"

namespace bspk_bsplib {

std::string affinity_plan(int nprocs, std::vector<size_t>* cpus) {
  cpus->clear();
  if (!chosen() || nprocs <= 0) return "";
  const size_t P = static_cast<size_t>(nprocs);
  const mcbsp_affinity_mode mode = mcbsp_get_affinity_mode();
  std::vector<size_t> plan(P);
  if (mode == MANUAL) {
    if (g.pinning.empty())
      return "MANUAL affinity without a pinning: call mcbsp_set_pinning with a CPU for each of the " +
             std::to_string(P) + " processes";
    if (g.pinning.size() < P)
      return "the MANUAL pinning (mcbsp_set_pinning) names " + std::to_string(g.pinning.size()) + " CPUs, " +
             std::to_string(P) + " processes need one each";
    std::copy(g.pinning.begin(), g.pinning.begin() + static_cast<long>(P), plan.begin());
  } else {
    const size_t C = mcbsp_get_available_cores(), t = mcbsp_get_threads_per_core();
    std::vector<size_t> cores;
    for (size_t c = 0; c < C; ++c)
      if (std::find(g.reserved.begin(), g.reserved.end(), c) == g.reserved.end()) cores.push_back(c);
    if (cores.empty())
      return "every one of the " + std::to_string(C) + " available cores is reserved (mcbsp_set_reserved_cores)";
    const size_t n = cores.size();
    for (size_t s = 0; s < P; ++s) {
      const size_t core = cores[mode == COMPACT || P > n ? s % n : s * n / P];
      plan[s] = mcbsp_get_thread_numbering() == CONSECUTIVE ? core * t : core;
    }
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return std::string("sched_getaffinity: ") + std::strerror(errno);
  for (size_t s = 0; s < P; ++s)
    if (plan[s] >= CPU_SETSIZE || !CPU_ISSET(plan[s], &allowed)) {
      std::string may;
      for (size_t c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &allowed)) may += (may.empty() ? "" : ",") + std::to_string(c);
      return std::string("the ") + (mode == MANUAL ? "MANUAL" : mode == COMPACT ? "COMPACT" : "SCATTER") +
             " affinity pins process " + std::to_string(s) + " to CPU " + std::to_string(plan[s]) +
             ", which this process may not run on (its CPUs: " + may + ")";
    }
  *cpus = plan;
  return "";
}

std::string affinity_pin(size_t cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0)
    return "cannot pin to CPU " + std::to_string(cpu) + ": " + std::strerror(errno);
  return "";
}

int affinity_nprocs() {
  const size_t max = mcbsp_get_maximum_threads();
  const size_t res = g.reserved.size() * mcbsp_get_threads_per_core();
  const size_t n = max > res ? max - res : 1;
  return static_cast<int>(std::min<size_t>(n, 1 << 20));
}

}  // namespace bspk_bsplib
