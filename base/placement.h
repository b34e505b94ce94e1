// base/placement.h -- where a process runs and where its frame pools live (hwloc).
//
// Binding (BSPK_BIND=auto|core|none, default auto), done once in bspk_init:
//  - under bspkrun the launcher has already bound (bspkrun --bind core) or not:
//    nothing changes;
//  - if the process's CPU set is already narrower than what the machine (or
//    its cgroup) allows, the launcher gave it its cores (Slurm task/affinity,
//    srun --cpu-bind): kept as is;
//  - otherwise the cores this host's processes of the job may use are split
//    among them with hwloc_distrib, so each gets its own core(s) and no core is
//    held by two of them; if there are more processes than cores, auto leaves
//    them unbound (the kernel balances better than a fixed share) and core
//    binds them round-robin.
// Memory: frame pool slabs are bound to the NUMA node(s) of the process's
// cores (hwloc_set_area_membind) before first touch, so frames are local to
// the core that computes in them.
// BSPK_REPORT_BINDINGS=1 prints one line per process (bspkrun --report-bindings
// prints bspkrun's own).
#pragma once

#include <cstddef>
#include <string>

namespace bspk::placement {

struct Result {
  bool bound = false;      // this process has a CPU set of its own
  std::string cpus;        // PUs it may run on, hwloc list syntax ("0-3")
  std::string numa;        // NUMA node(s) of those PUs ("0")
  std::string how;         // why: "bound by bspk", "bound by the launcher", "not bound: ..."
  int host_pus = 0;        // PUs the machine (or its cgroup) allows this job here; 0 if unknown
};

// local_rank: this process's index among the job's processes on this host;
// local_procs: their number. launcher_binds: bspkrun decides binding.
// Never fails the job: hwloc problems give an unbound process and say so.
Result place(int local_rank, int local_procs, bool launcher_binds);

// Bind [p, p+len) to the process's NUMA node(s); no-op before place() or
// when memory binding is unsupported. Returns true if bound.
bool bind_memory(void* p, size_t len);

// NUMA node(s) [p, p+len) is bound to ("" if unknown), for tests.
std::string memory_nodes(void* p, size_t len);

}  // namespace bspk::placement
