/*
 * inprod.c -- inner product of two distributed vectors (BSPlib).
 *
 *     inprod [n]            (default n = 100003)
 *
 * x and y have n components, distributed cyclically: component i lives on
 * process i mod p. Every process sums x[i]*y[i] over its own components, puts
 * its partial sum into slot s of a registered array on every process, and
 * after the sync adds the p partial sums. The values are small integers held
 * in doubles, so every sum is exact in any order and the result is compared
 * exactly against the sequential inner product on every process.
 *
 * Written in the bsp_init style: main reads the arguments on pid 0 only, the
 * SPMD part is a function, and n reaches the other processes with a bsp_put.
 */
#include <bsp.h>
#include <stdio.h>
#include <stdlib.h>

static bsp_pid_t P;  /* processes requested; set in main (pid 0 only) */
static long N;       /* vector length; set in main (pid 0 only) */

/* The global vectors, as functions of the global index. */
static double xval(long i) { return (double)(i % 7 + 1); }
static double yval(long i) { return (double)((3 * i) % 11 - 5); }

/* Number of components of process s under the cyclic distribution. */
static long nloc(long n, bsp_pid_t p, bsp_pid_t s) { return (n + p - s - 1) / p; }

static void spmd(void) {
  bsp_begin(P);
  bsp_pid_t p = bsp_nprocs(), s = bsp_pid();

  /* Superstep 0: pid 0 tells everyone n. */
  long n = N;
  bsp_push_reg(&n, sizeof n);
  bsp_sync();
  if (s == 0)
    for (bsp_pid_t t = 1; t < p; t++) bsp_put(t, &n, &n, 0, sizeof n);
  bsp_sync();
  bsp_pop_reg(&n);
  if (n < 0) bsp_abort("inprod: pid %d: bad n %ld\n", s, n);

  /* The local parts: local index j is global index j*p + s. */
  long nl = nloc(n, p, s);
  double *x = malloc((size_t)(nl > 0 ? nl : 1) * sizeof *x);
  double *y = malloc((size_t)(nl > 0 ? nl : 1) * sizeof *y);
  double *part = malloc((size_t)p * sizeof *part);
  if (!x || !y || !part) bsp_abort("inprod: pid %d: out of memory\n", s);
  for (long j = 0; j < nl; j++) {
    x[j] = xval(j * p + s);
    y[j] = yval(j * p + s);
  }
  for (bsp_pid_t t = 0; t < p; t++) part[t] = -1e300; /* poison: must be overwritten */
  bsp_push_reg(part, p * (bsp_size_t)sizeof *part);
  bsp_sync();

  /* Superstep: local partial sum, put into part[s] everywhere. */
  double mine = 0.0;
  for (long j = 0; j < nl; j++) mine += x[j] * y[j];
  for (bsp_pid_t t = 0; t < p; t++) bsp_put(t, &mine, part, s * (bsp_size_t)sizeof(double), sizeof(double));
  mine = 12345.0; /* bsp_put is buffered: this change must not reach anyone */
  bsp_sync();

  double alpha = 0.0;
  for (bsp_pid_t t = 0; t < p; t++) alpha += part[t];

  /* Check against the sequential inner product and the local partials. */
  double seq = 0.0;
  for (long i = 0; i < n; i++) seq += xval(i) * yval(i);
  for (bsp_pid_t t = 0; t < p; t++) {
    double want = 0.0;
    for (long i = t; i < n; i += p) want += xval(i) * yval(i);
    if (part[t] != want)
      bsp_abort("inprod: pid %d: partial sum of pid %d is %.17g, sequential %.17g\n", s, t, part[t], want);
  }
  if (alpha != seq) bsp_abort("inprod: pid %d: inner product %.17g, sequential %.17g\n", s, alpha, seq);

  bsp_pop_reg(part);
  bsp_sync();
  if (s == 0) printf("inprod ok n=%ld p=%d sum=%.0f\n", n, p, alpha);
  free(part);
  free(y);
  free(x);
  bsp_end();
}

int main(int argc, char **argv) {
  bsp_init(spmd, argc, argv);
  /* Only pid 0 gets here. */
  P = bsp_nprocs();
  N = argc > 1 ? atol(argv[1]) : 100003; /* checked in spmd, where an error ends every process */
  spmd();
  return 0;
}
