/* tests/bsplib/header_c99.c -- bsp.h is strict C99 (compiled with
 * cc -std=c99 -Wall -Wextra -Werror -pedantic -fsyntax-only) and lives next
 * to <complex.h> and <tgmath.h> (whose I, complex and type-generic macros it
 * must not collide with). Its count and size types are signed int: a pointer
 * to one converts to int * without a diagnostic (long, unsigned: an error
 * under -Werror). */
#include <complex.h>
#include <tgmath.h>

#include <bsp.h>

#include <complex.h>
#include <tgmath.h>

typedef char bsp_pid_t_is_signed[(bsp_pid_t)-1 < 0 ? 1 : -1];
typedef char bsp_nprocs_t_is_signed[(bsp_nprocs_t)-1 < 0 ? 1 : -1];
typedef char bsp_size_t_is_signed[(bsp_size_t)-1 < 0 ? 1 : -1];
typedef char bsp_size_t_is_int_sized[sizeof(bsp_size_t) == sizeof(int) ? 1 : -1];

static int *as_int_pid(bsp_pid_t *p) { return p; }
static int *as_int_nprocs(bsp_nprocs_t *p) { return p; }
static int *as_int_size(bsp_size_t *p) { return p; }

/* The prototypes take and return those types (assigning the functions to
 * pointers of the standard's signatures). */
static void (*const f_put)(int, const void *, void *, int, int) = bsp_put;
static void (*const f_get)(int, const void *, int, void *, int) = bsp_get;
static void (*const f_qsize)(int *, int *) = bsp_qsize;
static void (*const f_get_tag)(int *, void *) = bsp_get_tag;
static int (*const f_hpmove)(void **, void **) = bsp_hpmove;
static int (*const f_pid)(void) = bsp_pid;
static int (*const f_nprocs)(void) = bsp_nprocs;
static void (*const f_begin)(int) = bsp_begin;
static void (*const f_abort)(const char *, ...) = bsp_abort;

/* MulticoreBSP 2.0 programs pass size_t * and unsigned * (BSPedupack's
 * bspsort): no diagnostic either (bsp.h, "Integer arguments of any width").
 * Not called: this file is only compiled. */
void mcbsp_widths(void);
void mcbsp_widths(void) {
  size_t tagsize = 8, status = 0, bytes = 0;
  unsigned int nmessages = 0;
  long tag = 0;
  bsp_set_tagsize(&tagsize);
  bsp_qsize(&nmessages, &bytes);
  bsp_get_tag(&status, &tag);
}

int main(void) {
  bsp_pid_t a = 0;
  bsp_nprocs_t b = 0;
  bsp_size_t c = -1;
  double complex z = 1.0 + 2.0 * I;
  double r = sqrt(4.0) + creal(z) + fabs(z);
  return (as_int_pid(&a) != 0) + (as_int_nprocs(&b) != 0) + (as_int_size(&c) != 0) + (r > 0) +
         (f_put != 0) + (f_get != 0) + (f_qsize != 0) + (f_get_tag != 0) + (f_hpmove != 0) + (f_pid != 0) +
         (f_nprocs != 0) + (f_begin != 0) + (f_abort != 0) + BSPK_BSPLIB - 14;
}
