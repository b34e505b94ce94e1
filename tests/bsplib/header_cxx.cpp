// tests/bsplib/header_cxx.cpp -- bsp.h compiles as C++ (C++11, -pedantic
// -Werror) next to <complex> and <complex.h>, with C linkage and int types.
#include <complex.h>
#include <complex>
#include <type_traits>

#include <bsp.h>

static_assert(std::is_same<bsp_pid_t, int>::value, "bsp_pid_t is int");
static_assert(std::is_same<bsp_nprocs_t, int>::value, "bsp_nprocs_t is int");
static_assert(std::is_same<bsp_size_t, int>::value, "bsp_size_t is int");
static_assert(std::is_same<decltype(&bsp_put), void (*)(int, const void*, void*, int, int)>::value, "bsp_put");
// (bsp_hpmove is overloaded for const void ** in C++: the C function by its type)
static_assert(std::is_same<decltype(static_cast<int (*)(void**, void**)>(&bsp_hpmove)), int (*)(void**, void**)>::value,
              "bsp_hpmove");

extern "C" void (*const c_linkage_sync)(void);
void (*const c_linkage_sync)(void) = bsp_sync;

// MulticoreBSP 2.0 widths resolve to bsp.h's templates; int * to the C
// functions; a pointer to the standard signature still names the C function.
void (*const f_qsize)(int*, int*) = bsp_qsize;
void mcbsp_widths();
void mcbsp_widths() {
  size_t tagsize = 8, status = 0, bytes = 0;
  unsigned int nmessages = 0;
  int n = 0, b = 0;
  long tag = 0;
  bsp_set_tagsize(&tagsize);
  bsp_qsize(&nmessages, &bytes);
  bsp_qsize(&n, &b);
  bsp_get_tag(&status, &tag);
}

int main() {
  std::complex<double> z(1.0, 2.0);
  return z.real() > 0 ? 0 : 1;
}
