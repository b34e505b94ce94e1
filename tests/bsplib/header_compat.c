/* tests/bsplib/header_compat.c -- bsp.h as programs written for other BSPlib
 * libraries expect it (compile only; tests/bsplib/CMakeLists.txt builds it
 * as C99 and C11 with -pedantic -Werror, and as C++98 and C++17):
 * - the Oxford toolset's examples call printf and strlen without including
 *   <stdio.h> or <string.h> (its bsp.h did);
 * - a program's own macros T, N, B defined before the include (C++ builds
 *   of bsp.h's templates must not use those names);
 * - BSPonMPI's get_tag_status_null passes NULL to bsp_get_tag and bsp_qsize
 *   (reported at run time, so it must compile);
 * - the Oxford toolset's older names bsp_pushregister, bsp_popregister and
 *   bsp_set_tag_size;
 * - LPF's BSPlib declares bsp_hpmove(const void **, const void **), and its
 *   programs pass const void ** (C would warn, GCC 14 refuse; C++ refuse),
 *   alone or mixed with void **, and compare the result with -1 or with
 *   LPF's name for it, bsp_size_unavailable. */
#define T double
#define N 1000
#define B 3
#include <bsp.h>
#include <bsp_level1.h> /* the Oxford toolset's level-1 collectives, included after bsp.h as its programs do */

int compat(void);
int compat(void) {
  T x[N];
  int tag = B;
  x[0] = 1.0;
  printf("%d %d\n", (int)strlen("bsp"), (int)x[0]);
  bsp_get_tag(NULL, &tag);
  bsp_qsize(NULL, NULL);
  bsp_pushregister(x, (int)sizeof x);
  bsp_set_tag_size(&tag);
  bsp_popregister(x);
  {
    const void *ctag, *cpayload;
    void *vtag;
    if (bsp_hpmove(&ctag, &cpayload) != -1) tag += *(const int *)cpayload + *(const int *)ctag;
    if (bsp_hpmove(&vtag, &cpayload) == bsp_size_unavailable) tag += 1;
    if (bsp_hpmove((void **)&ctag, (void **)&cpayload) == -1) tag += 1;
  }
  return tag;
}
