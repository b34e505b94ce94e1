#include "base/shm_segment.h"

#include <bspk.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "base/error.h"
#include "base/random.h"

namespace bspk {

SharedSegment& SharedSegment::operator=(SharedSegment&& o) noexcept {
  if (this != &o) {
    if (base_) munmap(base_, len_);
    base_ = std::exchange(o.base_, nullptr);
    len_ = std::exchange(o.len_, 0);
    name_ = std::move(o.name_);
  }
  return *this;
}

SharedSegment::~SharedSegment() {
  if (base_) munmap(base_, len_);
}

namespace {
// Segments up to 64 MiB (the rings of up to ~40 processes on a host, the
// board) are mapped with every page present: the rings' pages would
// otherwise fault one by one as messages first reach them, each fault (about
// 3 us on this VM) inside a superstep. Larger ones fault on first use.
int populate_flag(size_t len) { return len <= (size_t{64} << 20) ? MAP_POPULATE : 0; }
}  // namespace

namespace {
std::timed_mutex& shm_creation_mutex() {
  static std::timed_mutex m;
  return m;
}
}  // namespace

std::unique_lock<std::timed_mutex> shm_creation_guard() { return std::unique_lock<std::timed_mutex>(shm_creation_mutex()); }

void shm_creation_stop() { (void)shm_creation_mutex().try_lock_for(std::chrono::seconds(2)); }

SharedSegment SharedSegment::create(const std::string& prefix, size_t len) {
  const auto guard = shm_creation_guard();  // (released once mapped, or on a failure)
  unsigned char rnd[8];
  random_bytes(rnd, sizeof rnd);
  std::string name = "/" + prefix + ".";
  for (unsigned char c : rnd) name += strprintf("%02x", c);
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    // No usable /dev/shm here (absent, read-only, not ours to write): a
    // property of the host, which a caller may work around. A name already
    // taken (EEXIST: the names are random) stays a refusal.
    const int e = errno;
    const bool host = e == ENOENT || e == EROFS || e == EACCES || e == ENOSYS || e == ENOSPC;
    fail(host ? BSPK_ERR_UNSUPPORTED : BSPK_ERR_BOOT, "shared segment: shm_open(%s): %s (/dev/shm)", name.c_str(),
         std::strerror(e));
  }
  // Sized and every page reserved at once (posix_fallocate extends the
  // file): ftruncate alone, which tmpfs grants whatever its room, left a
  // segment that a container's 64 MiB /dev/shm could not hold to kill the
  // process with SIGBUS at the first store beyond the free pages, at start-up
  // (MAP_POPULATE) or in the middle of a run.
  if (int e = posix_fallocate(fd, 0, static_cast<off_t>(len)); e != 0) {
    close(fd);
    shm_unlink(name.c_str());
    std::string room = dev_shm_room();
    if (!room.empty()) room = " (" + room + ")";
    fail(e == ENOSPC ? BSPK_ERR_NOMEM : BSPK_ERR_BOOT,
         "shared segment %s: reserving %.1f MiB in /dev/shm%s: %s (enlarge /dev/shm, e.g. `docker run "
         "--shm-size=1g`)",
         name.c_str(), static_cast<double>(len) / 1048576.0, room.c_str(), std::strerror(e));
  }
  void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | populate_flag(len), fd, 0);
  int e = errno;
  close(fd);
  if (m == MAP_FAILED) {
    shm_unlink(name.c_str());
    fail(BSPK_ERR_BOOT, "shared segment: mmap(%s): %s", name.c_str(), std::strerror(e));
  }
  SharedSegment s;
  s.base_ = m;
  s.len_ = len;
  s.name_ = name;
  return s;
}

SharedSegment SharedSegment::open(const std::string& name, size_t len) {
  int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) fail(BSPK_ERR_BOOT, "shared segment: shm_open(%s): %s", name.c_str(), std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != len) {
    close(fd);
    fail(BSPK_ERR_BOOT, "shared segment %s: size %lld, expected %zu", name.c_str(), (long long)st.st_size, len);
  }
  void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | populate_flag(len), fd, 0);
  int e = errno;
  close(fd);
  if (m == MAP_FAILED) fail(BSPK_ERR_BOOT, "shared segment: mmap(%s): %s", name.c_str(), std::strerror(e));
  SharedSegment s;
  s.base_ = m;
  s.len_ = len;
  s.name_ = name;
  return s;
}

void SharedSegment::unlink() const { shm_unlink(name_.c_str()); }

std::string dev_shm_unusable() {
  struct stat st {};
  if (stat("/dev/shm", &st) != 0 || !S_ISDIR(st.st_mode)) return "is absent";
  struct statvfs v {};
  if (statvfs("/dev/shm", &v) == 0 && (v.f_flag & ST_RDONLY)) return "is mounted read-only";
  if (access("/dev/shm", W_OK | X_OK) != 0) return "is not writable by this user";
  return "";
}

std::string dev_shm_room() {
  struct statvfs v {};
  if (statvfs("/dev/shm", &v) != 0) return "";
  return strprintf("%.1f MiB free of %.1f MiB", static_cast<double>(v.f_bavail) * v.f_frsize / 1048576.0,
                   static_cast<double>(v.f_blocks) * v.f_frsize / 1048576.0);
}

}  // namespace bspk
