// bsplib/affinity.h -- (internal) the placement MulticoreBSP's affinity
// interface asks for (mcbsp-affinity.h), for bsp_begin and bsp_nprocs of a
// program started without a launcher.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace bspk_bsplib {

// The CPU each of nprocs processes is to be pinned to (*cpus, one per pid),
// if the program chose a placement; empty if it did not (the kernel places
// them). Checked against the CPUs this process may run on. Returns "" or
// what is wrong (for bsp_begin's message).
std::string affinity_plan(int nprocs, std::vector<size_t>* cpus);

// Pins the calling process (a process of one thread, before the runtime
// starts) to `cpu`; "" or the error.
std::string affinity_pin(size_t cpu);

// bsp_nprocs() before bsp_begin without a launcher: the maximum threads less
// the reserved cores' CPUs, at least 1.
int affinity_nprocs();

}  // namespace bspk_bsplib
