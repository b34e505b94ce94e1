// base/exec_path.h -- find a program as execvp would, header-only: for
// bspkrun (the job's program) and bsplib/spawn.cpp (bspkrun itself), so
// that both refuse the same things with one clear message before any exec.
//
// A candidate is a regular file this process may execute: access(X_OK)
// alone also passes a directory (and, for root, a file with any x bit),
// which exec then refuses with EACCES; execvp skips such a PATH entry, and
// so does this.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace bspk {

inline bool executable_file(const std::string& path) {
  struct stat st;
  return !path.empty() && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// `name` itself if it contains a '/', else the first PATH entry holding it
// (an empty entry is the current directory; no PATH: "/usr/local/bin:/usr/bin:/bin");
// "" if none is executable_file.
inline std::string search_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return executable_file(name) ? name : "";
  const char* path = std::getenv("PATH");
  const std::string ps = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t s = 0;;) {
    const size_t e = ps.find(':', s);
    const std::string dir = ps.substr(s, e == std::string::npos ? std::string::npos : e - s);
    const std::string cand = (dir.empty() ? "." : dir) + "/" + name;
    if (executable_file(cand)) return cand;
    if (e == std::string::npos) return "";
    s = e + 1;
  }
}

}  // namespace bspk
