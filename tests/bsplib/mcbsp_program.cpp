// tests/bsplib/mcbsp_program.cpp -- a MulticoreBSP-style C++ program
// (mcbsp::BSP_program, bsp.hpp) as such programs are written: main sets a
// member on its instance and calls begin(); pid 0 must run spmd() on that
// instance (it sees the member), every other process on a newInstance() (it
// does not), each instance destroyed by destroyInstance once; the processes
// communicate (a put ring and a sum gathered with bsp_direct_get); only pid 0
// returns from begin() ("after begin" once, with the sum).
#include <bsp.hpp>

#include <cstdio>
#include <cstdlib>

static int destroyed = 0;

class Ring : public mcbsp::BSP_program {
 public:
  int base = 0;  // set by main on the original instance only
  int total = -1;

 protected:
  void spmd() override {
    const int p = bsp_nprocs(), s = bsp_pid();
    int from_left = -1, mine = base + s;
    bsp_push_reg(&from_left, sizeof from_left);
    bsp_push_reg(&mine, sizeof mine);
    bsp_sync();
    bsp_put((s + 1) % p, &mine, &from_left, 0, sizeof mine);
    bsp_sync();
    const int l = (s + p - 1) % p;
    const bool right = from_left == (l == 0 ? 1000 : 0) + l && base == (s == 0 ? 1000 : 0);
    int sum = 0;
    for (int j = 0; j < p; ++j) {
      int v = -1;
      bsp_direct_get(j, &mine, 0, &v, sizeof v);
      sum += v;
    }
    std::printf("spmd pid=%d base=%d from_left=%d %s\n", s, base, from_left, right ? "ok" : "WRONG");
    bsp_sync();
    bsp_pop_reg(&mine);
    bsp_pop_reg(&from_left);
    bsp_sync();
    total = sum;
  }
  BSP_program* newInstance() override { return new Ring(); }
  void destroyInstance(BSP_program* const instance) override {
    ++destroyed;
    delete instance;
  }
};

int main(int argc, char** argv) {
  Ring ring;
  ring.base = 1000;
  if (argc > 1)
    ring.begin(std::atoi(argv[1]));
  else
    ring.begin();  // bsp_nprocs() processes
  // pid 0 only: the sum is 1000 + 0 + 1 + ... + (p - 1) for p = bsp_nprocs() of the section.
  std::printf("after begin total=%d destroyed=%d\n", ring.total, destroyed);
  return 0;
}
