// tests/bsplib/header_width_nonint.cpp -- must NOT compile: bsp.h's C++11
// width templates take pointers to integers only (its own integer trait,
// which stands in for <type_traits>); ctest expects the static_assert's
// message for bsp_qsize given a double *.
extern "C" {
#include <bsp.h>
}

void calls();
void calls() {
  double d = 0;
  int n = 0;
  bsp_qsize(&n, &d);
}
