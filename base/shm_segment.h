// base/shm_segment.h -- a POSIX shared-memory segment that the processes of a
// job on one host map: created by one process under a fresh random name
// (O_CREAT | O_EXCL, mode 0600, so no other user can open it and nobody can
// have created it first), opened by the others once the name has reached them
// through the bootstrap, and unlinked as soon as everyone has it mapped, so
// nothing is left in /dev/shm and no later process can open it. Zero-filled
// at creation. Used by sync/board.h and fabric/rings.h.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>

namespace bspk {

// Making files in /dev/shm and removing a failing process's files exclude
// each other. A creator holds shm_creation_guard() over the call that makes
// the file (SharedSegment::create; the shm provider's endpoint, fabric/); a
// process that ends on a job failure (boot/hub.cpp, HubClient::die) calls
// shm_creation_stop() before it removes its files and exits, so no thread of
// it creates a file between that removal and the exit (CI saw the count
// board and the endpoint region of a pid 0 ended mid-bspk_init left behind).
std::unique_lock<std::timed_mutex> shm_creation_guard();
// Takes the guard for good (waits up to 2 s for a creator to finish).
void shm_creation_stop();

class SharedSegment {
 public:
  // Create len bytes under "/<prefix>.<16 random hex digits>", every page
  // reserved (posix_fallocate) before it is mapped.
  // Errors: BSPK_ERR_NOMEM (/dev/shm has no room for len bytes: the message
  // gives its free space), BSPK_ERR_UNSUPPORTED (no usable /dev/shm:
  // shm_open fails with ENOENT, EROFS, EACCES, ENOSYS or ENOSPC),
  // BSPK_ERR_BOOT (getrandom, shm_open otherwise -- EEXIST, a name taken --,
  // posix_fallocate otherwise, mmap).
  static SharedSegment create(const std::string& prefix, size_t len);
  // Open a segment another process created; its size must be len.
  // Errors: BSPK_ERR_BOOT.
  static SharedSegment open(const std::string& name, size_t len);

  SharedSegment() = default;
  SharedSegment(SharedSegment&& o) noexcept { *this = std::move(o); }
  SharedSegment& operator=(SharedSegment&& o) noexcept;
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;
  ~SharedSegment();

  void* base() const { return base_; }
  size_t size() const { return len_; }
  const std::string& name() const { return name_; }
  // Remove the name (the creator, once every process has opened it).
  void unlink() const;

 private:
  void* base_ = nullptr;
  size_t len_ = 0;
  std::string name_;
};

// Why /dev/shm cannot hold this process's shared memory ("is absent", "is
// mounted read-only", "is not writable by this user"), or "" when it can.
std::string dev_shm_unusable();

// "7.5 MiB free of 8.0 MiB" (of /dev/shm), or "" when statvfs cannot tell: for
// messages about a /dev/shm too small (for BSPk's segments or a provider's).
std::string dev_shm_room();

}  // namespace bspk
