// fabric/getinfo.h -- fi_getinfo as BSPk calls it, without libfabric's
// /proc/kallsyms scan.
//
// libfabric initializes every built-in provider in the process's first
// fi_getinfo (fi_getinfo(3): "the first call initializes the library"),
// whatever provider the hints name and whatever FI_PROVIDER says (the filter
// applies after each provider's initialization). The verbs provider of the
// libfabric Debian 12 ships (1.17) then reads all of /proc/kallsyms, twice,
// looking for the kernel symbol ib_umem_dmabuf_get: whether dma-buf memory
// (GPU memory exported as a file descriptor) can be registered. On this VM
// (122,000 kernel symbols) that first fi_getinfo takes 70-110 ms, 80% of it in
// the kernel formatting the symbol table, and bspk_init 110-190 ms at p = 2,
// 490 ms at p = 8 on 2 cores; with the scan answered "no such file" the same
// fi_getinfo takes 1-2 ms.
//
// BSPk never registers dma-buf memory (it asks for no FI_HMEM), so by default
// every fi_getinfo it makes runs with a guard up: while it
// is up, an fopen of exactly "/proc/kallsyms" in this process fails with
// ENOENT, as on a kernel that hides the file, and libfabric's verbs provider
// takes dma-buf registration as unsupported; nothing else changes. The
// guard's fopen is in libbspk.so only (fabric/kallsyms.cpp), and works where
// the program's link order puts libbspk before libc in the global symbol
// scope (as `cc prog.c -lbspk`, pkg-config, CMake, bspcc and bspcxx do);
// elsewhere, and with libbspk.a, libfabric reads the file as before.
// BSPK_DMABUF_PROBE=on lets the scan run: for a program that also uses
// libfabric itself (or through another library in the same process) with
// FI_HMEM dma-buf memory on verbs, and initializes it through BSPk first.
#pragma once

#include <rdma/fabric.h>

#include <cstdint>

namespace bspk::fabric {

// fi_getinfo(version, node, service, flags, hints, info) with the guard up
// unless BSPK_DMABUF_PROBE is on: while any such call runs (in any thread),
// fopen("/proc/kallsyms") in this process fails with ENOENT (see above).
// Returns what fi_getinfo returns (0 or a negative FI_* error; fi_getinfo(3)).
int getinfo(uint32_t version, const char* node, const char* service, uint64_t flags, const fi_info* hints,
            fi_info** info);

namespace detail {
// Whether a getinfo() call holds the guard up: read by the fopen of
// fabric/kallsyms.cpp (libbspk.so only).
bool kallsyms_hidden();
}  // namespace detail

}  // namespace bspk::fabric
