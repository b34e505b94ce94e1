// tests/bsplib/mcbsp_templates.cpp -- MulticoreBSP's C++ templates
// (mcbsp-templates.hpp) as MulticoreBSP programs use them: offsets and sizes
// in elements of the typed pointer, defaults of 0 / 1 element, void * calls in
// bytes. Each process checks what arrived (a wrong count of bytes, or bytes
// where elements were meant, puts values at other places) and prints one line
// "templates pid=S ok" or "WRONG ...". With argument "negative", pid 0 puts
// -1 elements: the job must end with bsp_put's message.
// Run: bsprun -n P (P >= 2), or ./prog P (forks).
#include <mcbsp-templates.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

struct Tag {
  int from;
  short kind;
};

int P_arg = 2;
bool negative = false;

void spmd() {
  bsp_begin(P_arg);
  const int p = static_cast<int>(bsp_nprocs()), s = static_cast<int>(bsp_pid());
  const int right = (s + 1) % p, left = (s + p - 1) % p;
  int bad = 0;
  char why[256] = "";
#define CHECK(c, ...)                                           \
  do {                                                          \
    if (!(c) && !bad++) std::snprintf(why, sizeof why, __VA_ARGS__); \
  } while (0)

  double grid[8];
  long one = -1;
  unsigned char raw[16];
  for (int i = 0; i < 8; ++i) grid[i] = -1;
  std::memset(raw, 0, sizeof raw);
  bsp_push_reg(grid, 8);  // 8 elements: 64 bytes
  bsp_push_reg(&one);     // 1 element
  bsp_push_reg(static_cast<void *>(raw), 16);  // void *: bytes
  // Tag size from the type; returns the size requested before (the one in force: 0).
  const bsp_size_t before = bsp_set_tagsize<Tag>();
  CHECK(before == 0, "bsp_set_tagsize<Tag>() returned %d, expected 0", static_cast<int>(before));
  bsp_sync();

  // Puts: elements 5..6 of the right neighbour's grid; the default size (1)
  // at offset 7; a long with both defaults; 3 bytes through void *.
  const double two[2] = {100.0 + s, 200.0 + s};
  bsp_put(right, two, grid, 5, 2);
  const double seven = 700.0 + s;
  bsp_put(right, &seven, grid, 7);
  const long mine = 1000L + s;
  bsp_put(right, &mine, &one);
  const unsigned char bytes3[3] = {static_cast<unsigned char>(s + 1), 0x22, 0x33};
  bsp_put(right, bytes3, static_cast<void *>(raw), 13, 3);
  // Message: the Tag and 3 doubles.
  const Tag t = {s, 7};
  const double payload[3] = {1.5 * s, 2.5 * s, 3.5 * s};
  bsp_send(right, &t, payload, 3);
  bsp_sync();

  for (int i = 0; i < 5; ++i) CHECK(grid[i] == -1, "grid[%d] = %g, expected untouched", i, grid[i]);
  CHECK(grid[5] == 100.0 + left && grid[6] == 200.0 + left, "grid[5..6] = %g %g", grid[5], grid[6]);
  CHECK(grid[7] == 700.0 + left, "grid[7] = %g", grid[7]);
  CHECK(one == 1000L + left, "one = %ld", one);
  CHECK(raw[12] == 0 && raw[13] == left + 1 && raw[14] == 0x22 && raw[15] == 0x33, "raw[12..15] = %d %d %d %d",
        raw[12], raw[13], raw[14], raw[15]);
  bsp_nprocs_t nmsg = 0;
  bsp_size_t nbytes = 0;
  bsp_qsize(&nmsg, &nbytes);
  CHECK(nmsg == 1 && nbytes == 3 * static_cast<int>(sizeof(double)), "qsize %d messages, %d bytes", nmsg, nbytes);
  bsp_size_t status = -2;
  Tag got = {-1, -1};
  bsp_get_tag(&status, &got);
  CHECK(got.from == left && got.kind == 7, "tag (%d, %d)", got.from, got.kind);
  double moved[3] = {0, 0, 0};
  bsp_move(moved, 2);  // at most 2 elements
  CHECK(moved[0] == 1.5 * left && moved[1] == 2.5 * left && moved[2] == 0, "moved %g %g %g", moved[0], moved[1],
        moved[2]);

  // Gets: element 6 (default size) and elements 5..7 of the left
  // neighbour's grid (which holds its left neighbour's values), and a direct
  // get of its element 7.
  double g1 = 0, g3[3] = {0, 0, 0}, d1 = 0;
  bsp_get(left, grid, 6, &g1);
  bsp_get(left, grid, 5, g3, 3);
  bsp_sync();
  const int ll = (left + p - 1) % p;
  CHECK(g1 == 200.0 + ll, "bsp_get(grid, 6) = %g", g1);
  CHECK(g3[0] == 100.0 + ll && g3[1] == 200.0 + ll && g3[2] == 700.0 + ll, "bsp_get(grid, 5, 3) = %g %g %g", g3[0],
        g3[1], g3[2]);
  bsp_direct_get(left, grid, 7, &d1);
  CHECK(d1 == 700.0 + ll, "bsp_direct_get(grid, 7) = %g", d1);
  // hp variants in elements too.
  const double hp = 900.0 + s;
  bsp_hpput(right, &hp, grid, 0);
  bsp_sync();
  double h2[2] = {0, 0};
  bsp_hpget(left, grid, 0, h2, 2);
  bsp_sync();
  CHECK(grid[0] == 900.0 + left, "bsp_hpput -> grid[0] = %g", grid[0]);
  CHECK(h2[0] == 900.0 + ll && h2[1] == -1, "bsp_hpget(grid, 0, 2) = %g %g", h2[0], h2[1]);
  if (negative && s == 0) bsp_put(right, two, grid, 0, -1);
  bsp_sync();
  bsp_pop_reg(static_cast<void *>(raw));
  bsp_pop_reg(&one);
  bsp_pop_reg(grid);
  bsp_sync();
  if (bad)
    std::printf("templates pid=%d WRONG %s\n", s, why);
  else
    std::printf("templates pid=%d ok\n", s);
  bsp_end();
}

}  // namespace

int main(int argc, char **argv) {
  bool given = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "negative") == 0) {
      negative = true;
    } else {
      P_arg = std::atoi(argv[i]);
      given = true;
    }
  }
  bsp_init(spmd, argc, argv);
  if (!given) P_arg = static_cast<int>(bsp_nprocs());
  spmd();
  return 0;
}
