// A C++98 BSPlib program built with find_package(bspk) and bspk::bsplib:
// a dynamic exception specification, which C++17 refuses, proves the
// standard the program asked for is the one it is compiled with.
#include <bsp.h>
#include <cstdio>

static int twice(int x) throw(int) { return 2 * x; }

int main() {
  bsp_begin(bsp_nprocs());
  int v = twice(bsp_pid());
  bsp_push_reg(&v, sizeof v);
  bsp_sync();
  int got = -1;
  bsp_get((bsp_pid() + 1) % bsp_nprocs(), &v, 0, &got, sizeof got);
  bsp_sync();
  if (got == twice((bsp_pid() + 1) % bsp_nprocs())) std::printf("%d: c++98 ok\n", bsp_pid());
  bsp_pop_reg(&v);
  bsp_end();
  return 0;
}
