#include "fabric/shm_names.h"

#include <bspk.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "base/error.h"
#include "base/shm_dir.h"

namespace bspk::fabric {

namespace {

// The first entry of /dev/shm whose name starts with `name`, or "".
std::string find_prefixed(const std::string& name) {
  std::string found;
  for_each_shm_entry([&](int, const char* n) {
    if (std::strncmp(n, name.c_str(), name.size()) != 0) return true;
    found = n;
    return false;
  });
  return found;
}

// Whether `n` carries the held-region mark: kHeldMark, 16 hex digits, then
// the end of the name or the provider's ':' suffix.
bool has_held_mark(const char* n) {
  const size_t mark = std::strlen(kHeldMark);
  for (const char* p = std::strstr(n, kHeldMark); p; p = std::strstr(p + 1, kHeldMark)) {
    const char* h = p + mark;
    int digits = 0;
    while (digits < 16 && std::isxdigit(static_cast<unsigned char>(h[digits]))) ++digits;
    if (digits == 16 && (h[16] == '\0' || h[16] == ':')) return true;
  }
  return false;
}

}  // namespace

void refuse_taken_shm_name(const std::string& name) {
  const std::string found = find_prefixed(name);
  if (!found.empty())
    fail(BSPK_ERR_FABRIC, "the shared-memory name of this process's endpoint is taken: %s/%s already exists "
         "(created by another process, possibly another user); refusing to use it", kShmDir, found.c_str());
}

int hold_shm_region(const std::string& name) {
  const std::string found = find_prefixed(name);
  if (found.empty()) return -1;
  int fd = open((std::string(kShmDir) + "/" + found).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -1;
  int rc;
  while ((rc = flock(fd, LOCK_SH)) != 0 && errno == EINTR) {
  }
  if (rc != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int remove_dead_shm_regions(const std::string& prefix, double min_age_s) {
  int removed = 0;
  const uid_t me = geteuid();
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  for_each_shm_entry([&](int dir, const char* n) {
    if (std::strncmp(n, prefix.c_str(), prefix.size()) != 0 || !has_held_mark(n)) return true;
    int fd = openat(dir, n, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return true;
    struct stat st;
    const bool candidate = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == me && st.st_nlink > 0 &&
                           static_cast<double>(now.tv_sec - st.st_ctim.tv_sec) +
                                   1e-9 * static_cast<double>(now.tv_nsec - st.st_ctim.tv_nsec) >=
                               min_age_s;
    // Nobody holds it: its process is gone. Unlinked while this process
    // holds the exclusive lock, so no endpoint can be taking it meanwhile.
    if (candidate && flock(fd, LOCK_EX | LOCK_NB) == 0 && unlinkat(dir, n, 0) == 0) ++removed;
    close(fd);
    return true;
  });
  return removed;
}

}  // namespace bspk::fabric
