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
static_assert(std::is_same<decltype(&bsp_hpmove), int (*)(void**, void**)>::value, "bsp_hpmove");

extern "C" void (*const c_linkage_sync)(void);
void (*const c_linkage_sync)(void) = bsp_sync;

int main() {
  std::complex<double> z(1.0, 2.0);
  return z.real() > 0 ? 0 : 1;
}
