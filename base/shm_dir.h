// base/shm_dir.h -- the entries of /dev/shm, header-only: one directory walk
// for the code that finds and removes the files BSPk's jobs keep there
// (fabric/shm_names.h: endpoint regions, held or dead; boot/protocol.h: a
// failed job's regions).
#pragma once

#include <dirent.h>

namespace bspk {

inline constexpr const char* kShmDir = "/dev/shm";

// Calls visit(dir_fd, name) for every entry of /dev/shm ("." and ".."
// included), in directory order, until it returns false. dir_fd is the open
// directory's descriptor, for openat / fstatat / unlinkat relative to it.
// Nothing happens where /dev/shm cannot be read.
template <class Visit>
void for_each_shm_entry(Visit visit) {
  DIR* d = opendir(kShmDir);
  if (!d) return;
  while (dirent* e = readdir(d))
    if (!visit(dirfd(d), static_cast<const char*>(e->d_name))) break;
  closedir(d);
}

}  // namespace bspk
