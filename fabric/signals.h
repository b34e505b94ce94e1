// fabric/signals.h -- the fatal-signal handlers of libfabric's PSM libraries,
// taken back.
//
// libfabric as Debian 12 ships it (and as many sites build it) links the PSM
// libraries of Intel True Scale (libpsm_infinipath, with libinfinipath) and
// Omni-Path (libpsm2). Unless IPATH_NO_BACKTRACE is set, libinfinipath's
// constructor installs, when the program is loaded -- on every machine, with
// or without that hardware -- handlers for SIGINT, SIGILL, SIGABRT, SIGBUS,
// SIGSEGV and SIGTERM that print "prog:PID terminated with signal N at PC=..."
// and a raw backtrace, then exit(1); libpsm2 does the same in psm2_init unless
// HFI_NO_BACKTRACE is set. A BSPk process that dereferences a null pointer or
// fails an assert() then exits with status 1 instead of dying by its signal:
// no core dump, and bspkrun (or the BSPlib launcher-less start) reports "exited
// with status 1" instead of "was killed by signal 11 (Segmentation fault)".
// Open MPI turns the same handlers off for the same reason (its PSM components
// set both variables; open-mpi/ompi#1781).
//
// BSPk never uses PSM, so libbspk takes them back: when libbspk is loaded
// (after its dependencies, so after libinfinipath's constructor) and after
// each fi_getinfo, every signal whose handler is code of libinfinipath or
// libpsm* (found with dladdr) is set back to its default action, and
// (at load only) IPATH_NO_BACKTRACE=1 and HFI_NO_BACKTRACE=1 are set in the
// environment where unset, so that a PSM library initialized later (or in a child
// process) installs none. Handlers of anything else -- the program's own,
// libfabric's shm provider's (which remove its /dev/shm files and then pass
// the signal on to the action before them) -- are left alone.
#pragma once

namespace bspk::fabric {

// Set every signal whose handler is code of libinfinipath or libpsm* back to
// its default action. Cheap (a sigaction per signal); idempotent; never fails.
void release_psm_signal_handlers();

}  // namespace bspk::fabric
