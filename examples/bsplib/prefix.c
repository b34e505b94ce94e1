/*
 * prefix.c -- parallel prefix sums (inclusive scan) of a block-distributed
 * array of longs (BSPlib).
 *
 *     prefix [n]            (default n = 50001)
 *
 * Block distribution with block size b = ceil(n/p): process s owns the global
 * indices [s*b, min(n, (s+1)*b)), so the last processes may own nothing when
 * p does not divide n. Each process scans its block, then fetches the block
 * totals of all processes with bsp_get (superstep A) and adds the totals of
 * the processes before it. The same offsets are fetched a second time with
 * bsp_hpget, and the grand total is delivered with bsp_put by the last
 * process, as cross-checks. Every element is compared with the sequential
 * prefix sum.
 */
#include <bsp.h>
#include <stdio.h>
#include <stdlib.h>

/* The global input, as a function of the global index (signed, small). */
static long aval(long i) { return (long)((i * 2654435761UL) % 1000UL) - 500; }

int main(int argc, char **argv) {
  bsp_begin(bsp_nprocs());
  bsp_pid_t p = bsp_nprocs(), s = bsp_pid();
  long n = argc > 1 ? atol(argv[1]) : 50001;
  if (n < 0) bsp_abort("prefix: pid %d: bad n %ld\n", s, n);

  long b = (n + p - 1) / p;
  long lo = s * b < n ? s * b : n;
  long hi = (s + 1) * b < n ? (s + 1) * b : n;
  long nl = hi - lo;
  long *a = malloc((size_t)(nl > 0 ? nl : 1) * sizeof *a);
  long *tot = malloc((size_t)p * sizeof *tot);
  long *tot2 = malloc((size_t)p * sizeof *tot2);
  if (!a || !tot || !tot2) bsp_abort("prefix: pid %d: out of memory\n", s);
  for (long j = 0; j < nl; j++) a[j] = aval(lo + j);

  long mytotal = 0, grand = 0;
  bsp_push_reg(&mytotal, sizeof mytotal);
  bsp_push_reg(&grand, sizeof grand);
  bsp_sync();

  /* Superstep A: local scan; get every block total. The gets read mytotal
   * at the owner after all of its computation in this superstep. */
  for (long j = 1; j < nl; j++) a[j] += a[j - 1];
  mytotal = nl > 0 ? a[nl - 1] : 0;
  for (bsp_pid_t t = 0; t < p; t++) {
    tot[t] = 0x5a5a5a5a;  /* poison */
    bsp_get(t, &mytotal, 0, &tot[t], sizeof(long));
  }
  bsp_sync();

  /* Superstep B: the same with bsp_hpget, and the grand total from the last
   * process by bsp_put. */
  for (bsp_pid_t t = 0; t < p; t++) {
    tot2[t] = 0x3c3c3c3c;
    bsp_hpget(t, &mytotal, 0, &tot2[t], sizeof(long));
  }
  if (s == p - 1) {
    long g = 0;
    for (bsp_pid_t t = 0; t < p; t++) g += tot[t];
    for (bsp_pid_t t = 0; t < p; t++) bsp_put(t, &g, &grand, 0, sizeof g);
  }
  bsp_sync();

  long off = 0, g = 0;
  for (bsp_pid_t t = 0; t < p; t++) {
    if (tot2[t] != tot[t])
      bsp_abort("prefix: pid %d: total of pid %d is %ld by bsp_get, %ld by bsp_hpget\n", s, t, tot[t], tot2[t]);
    if (t < s) off += tot[t];
    g += tot[t];
  }
  if (g != grand) bsp_abort("prefix: pid %d: grand total %ld from pid %d, summed here %ld\n", s, grand, p - 1, g);
  for (long j = 0; j < nl; j++) a[j] += off;

  /* Check: the sequential prefix sum up to the end of this block. */
  long seq = 0;
  for (long i = 0; i < hi; i++) {
    seq += aval(i);
    if (i >= lo && a[i - lo] != seq)
      bsp_abort("prefix: pid %d: element %ld is %ld, sequential prefix sum %ld\n", s, i, a[i - lo], seq);
  }
  for (long i = hi; i < n; i++) seq += aval(i);
  if (seq != grand) bsp_abort("prefix: pid %d: grand total %ld, sequential %ld\n", s, grand, seq);

  bsp_pop_reg(&grand);
  bsp_pop_reg(&mytotal);
  bsp_sync();
  if (s == 0) printf("prefix ok n=%ld p=%d total=%ld\n", n, p, grand);
  free(tot2);
  free(tot);
  free(a);
  bsp_end();
  return 0;
}
