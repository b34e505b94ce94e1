// fabric/shm_names.h -- the files libfabric's shm provider keeps in /dev/shm
// for BSPk's endpoints: a name already taken is refused, a live endpoint's
// file is marked as held, and the files of killed processes are removed.
//
// The shm provider (libfabric 1.17) keeps each endpoint's region, 16 MiB
// here, in /dev/shm/<node name>:<...>, created when the endpoint opens. The
// provider unlinks it when the endpoint closes and from its handlers of the
// signals it catches (SIGTERM, SIGINT, SIGSEGV, ...). A process killed with
// SIGKILL leaves it behind. When some processes of a job survive, they remove
// a dead peer's file (boot/protocol.h, remove_shm_regions), and bspkrun
// removes what its own killed jobs left. When a whole job is killed at once
// under Slurm (`kill -9` of every process, `scancel -s KILL`, the OOM killer
// of a cgroup), nobody is left to do it.
//
// The mechanism:
//   * every endpoint holds a shared flock(2) on its own file for as long as
//     the process lives (hold_shm_region); the kernel drops the lock when the
//     process ends, however it ends;
//   * a new BSPk process, before it opens its endpoint, unlinks the files of
//     this user under BSPk's prefix that carry the held-region mark and that
//     nobody holds (remove_dead_shm_regions).
// So what a killed job left is gone when the same user next starts a BSPk
// process on that host (README, Failures).
//
// Only names with the mark (kHeldMark followed by 16 hex digits, which
// api/init.cpp puts in every endpoint name) are candidates: a running job of
// an older BSPk build, which held no lock, is never taken for a dead one.
#pragma once

#include <string>

namespace bspk::fabric {

// The mark in an endpoint's node name that says its process holds a lock on
// the file for its whole life: "<prefix><job>.<rank>" + kHeldMark + 16 hex
// digits (the name's random salt).
inline constexpr const char* kHeldMark = ".f";

// Throws bspk::Error(BSPK_ERR_FABRIC) when /dev/shm already has a file whose
// name starts with `name`: libfabric 1.17's shm, finding its name taken,
// maps the existing file instead of failing, so a file planted by another
// local user would crash the process (SIGBUS) or share its messages
// (issue 13). Nothing happens where /dev/shm cannot be read.
void refuse_taken_shm_name(const std::string& name);

// Opens the file in /dev/shm whose name starts with `name` (this process's
// endpoint's region, which the provider has just created) and takes a
// shared flock on it. The Endpoint calls it after fi_enable, and again after
// fi_av_insert if the file did not exist yet (peers map it by name from
// then on), so a region the scan below can find is held well within its 10 s. Returns the descriptor (close-on-exec; closing it
// releases the lock), or -1 when there is no such file or it cannot be
// locked (then the file is left to the survivors' and bspkrun's clean-up
// only).
int hold_shm_region(const std::string& name);

// Unlinks the regions of dead processes: the regular files in /dev/shm whose
// name starts with `prefix` and carries the held-region mark, that belong to
// this user, whose status last changed at least `min_age_s` seconds ago, and
// on which nobody holds a lock (flock LOCK_EX | LOCK_NB succeeds). The age
// spares an endpoint that is being opened right now, between the provider's
// creating its file and hold_shm_region (ms). Returns how many it removed;
// files it cannot open or lock are left alone. Never throws.
int remove_dead_shm_regions(const std::string& prefix, double min_age_s);

}  // namespace bspk::fabric
