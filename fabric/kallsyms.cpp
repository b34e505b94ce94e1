// fabric/kallsyms.cpp -- the fopen of libbspk.so: fopen(3) of libc, except
// that while fabric::getinfo holds its guard up (fabric/getinfo.h) an fopen of
// exactly "/proc/kallsyms" fails with ENOENT. Built into the shared library
// only: a static libbspk.a must not define a libc symbol (a fully static link
// would see it twice).
//
// It takes effect where the dynamic linker finds libbspk's fopen before
// libc's for the caller (libfabric.so, loaded as libbspk's dependency): the
// program's link order puts libbspk before libc in the global scope (ld.so(8),
// "symbol lookup"); otherwise libc's fopen is called and nothing changes.
#include <dlfcn.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "fabric/getinfo.h"

namespace {
using FopenFn = FILE* (*)(const char*, const char*);

FopenFn next_fopen() {
  // The definition after this library's in the lookup order: libc's.
  static const FopenFn next = reinterpret_cast<FopenFn>(dlsym(RTLD_NEXT, "fopen"));
  return next;
}
}  // namespace

extern "C" __attribute__((visibility("default"))) FILE* fopen(const char* path, const char* mode) {
  if (path && std::strcmp(path, "/proc/kallsyms") == 0 && bspk::fabric::detail::kallsyms_hidden()) {
    errno = ENOENT;
    return nullptr;
  }
  const FopenFn next = next_fopen();
  if (!next) {  // (no fopen after this one: cannot happen with glibc)
    errno = ENOSYS;
    return nullptr;
  }
  return next(path, mode);
}
