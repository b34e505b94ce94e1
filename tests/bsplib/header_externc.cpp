// tests/bsplib/header_externc.cpp -- bsp.h and the other C headers of the
// BSPlib layer compile when a C++ program includes them inside extern "C"
// { }, as many C++ BSPlib programs do (found with public programs: a sieve
// with its own bsp.hpp, course code sending structs), C++98 to C++20,
// -pedantic -Werror: bsp.h's C++ part (the const void ** overloads of
// bsp_hpmove, the integer-width templates of C++11) keeps C++ linkage, and
// the calls resolve as they do without the extern "C".
extern "C" {
#include <bsp.h>
#include <bsp_level1.h>
#include <mcbsp-affinity.h>
#include <mcbsp.h>
}

#include <cstddef>

struct Item {
  int key;
  double value;
};

void calls();
void calls() {
  int n = 0, b = 0, status = 0;
  bsp_qsize(&n, &b);
  bsp_get_tag(&status, &n);
  const void *ctag = 0, *cpayload = 0;
  void *tag = 0, *payload = 0;
  bsp_hpmove(&ctag, &cpayload);
  bsp_hpmove(&tag, &payload);
  Item items[4];
  bsp_push_reg(items, static_cast<int>(sizeof items));
  bsp_put(0, &items[0], items, 0, static_cast<int>(sizeof(Item)));
  bsp_send(0, &n, &items[1], static_cast<int>(sizeof(Item)));
#if __cplusplus >= 201103L
  // MulticoreBSP 2.0 widths: the templates, with C++ linkage
  size_t tagsize = sizeof(int), bytes = 0, st = 0;
  unsigned int nmessages = 0;
  long long wide = 0;
  bsp_set_tagsize(&tagsize);
  bsp_qsize(&nmessages, &bytes);
  bsp_qsize(&wide, &wide);
  bsp_get_tag(&st, &n);
#endif
}

// The C functions keep C linkage (a pointer to the standard signature).
extern void (*const f_qsize)(int *, int *);
void (*const f_qsize)(int *, int *) = bsp_qsize;
extern "C" void (*const c_linkage_sync)(void);
void (*const c_linkage_sync)(void) = bsp_sync;

int main() { return 0; }
