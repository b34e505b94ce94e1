// tests/bsplib/header_mcbsp_templates.cpp -- MulticoreBSP's extra headers
// compile as MulticoreBSP programs include them, in C++98 to C++20,
// -pedantic -Werror: mcbsp-templates.hpp with the calls its programs make
// (element counts of any integer type, defaults, void * in bytes, the
// standard calls next to them), and mcbsp-affinity.h inside extern "C".
#include <mcbsp.hpp>
#include <mcbsp-templates.hpp>
extern "C" {
#include <mcbsp-affinity.h>
}

#include <cstddef>

struct Tag {
  int a;
  char b;
};

void calls();
void calls() {
  double grid[4] = {0, 0, 0, 0};
  const double src[2] = {1, 2};
  long x = 0;
  unsigned u = 1;
  size_t z = 2;
  int i = 0;
  char bytes[8] = {0};
  bsp_push_reg(grid, 4);
  bsp_push_reg(grid, z);
  bsp_push_reg(&x);
  bsp_push_reg(static_cast<void *>(bytes), 8);
  bsp_push_reg(static_cast<const void *>(bytes), i);
  bsp_put(u, src, grid, 1, 2);
  bsp_put(1, src, grid, z, z);
  bsp_put(1, src, grid, 3);
  bsp_put(1, &x, &x);
  bsp_put(1, src, static_cast<void *>(bytes), 0, 8);
  bsp_hpput(1, src, grid, 0, 1);
  bsp_get(1, grid, 2, &x);
  bsp_get(1, grid, 0, grid, 2u);
  bsp_hpget(1, grid, 0, grid, 1);
  bsp_direct_get(1, grid, 0, &x);
  bsp_direct_get(1, grid, 0, &x, 1);
  bsp_send(1, &x, src, 2);
  bsp_send(1, &x, src);
  bsp_hpsend(1, &x, src, z);
  bsp_move(grid, 4);
  bsp_move(&x);
  bsp_move(static_cast<void *>(bytes), 8);
  bsp_size_t old = bsp_set_tagsize<Tag>();
  Tag t = {0, 0};
  old = bsp_set_tagsize(t);
  bsp_set_tagsize(&i);  // the standard call
  (void)old;
  int status = 0;
  bsp_get_tag(&status, &t);
  bsp_pop_reg(grid);
  mcbsp_set_affinity_mode(COMPACT);
  mcbsp_set_thread_numbering(WRAPPED);
  const size_t pins[2] = {0, 1};
  mcbsp_set_pinning(pins, 2);
  enum mcbsp_affinity_mode m = mcbsp_get_affinity_mode();
  (void)m;
  MCBSP_DEFAULT_THREADS_PER_CORE = 1;
}

int main() { return 0; }
