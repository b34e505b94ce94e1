/*
 * lu_bcast.c -- the pivot-row broadcast and rank-1 update of LU decomposition
 * (BSPlib).
 *
 *     lu_bcast [n]          (default n = 64)
 *
 * An n x n matrix of integers modulo the prime Q is distributed by cyclic
 * rows: row i lives on process i mod p. In stage k = 0..n-1 the owner of row
 * k broadcasts its part right of the diagonal (columns k+1..n-1) to every
 * process in two phases, as in Bisseling's LU: first it scatters the row in
 * p pieces, piece j going to process j; then every process j sends its piece
 * to all the others. Every process then applies the rank-1 update
 *     a[i][j] -= a[i][k] * a[k][j]   (mod Q)   for its rows i > k, j > k.
 * The arithmetic is exact, so the distributed matrix is compared element by
 * element with the same n stages run sequentially on every process.
 */
#include <bsp.h>
#include <stdio.h>
#include <stdlib.h>

#define Q 1000003L /* a prime; products of two residues fit easily in a long */

static long initval(long i, long j) {
  unsigned long h = (unsigned long)(i * 7919 + j * 104729 + 17);
  h ^= h >> 7;
  h *= 2654435761UL;
  return (long)((h >> 8) % (unsigned long)Q);
}

static long update(long aij, long aik, long akj) {
  long v = (aij - (aik * akj) % Q) % Q;
  return v < 0 ? v + Q : v;
}

int main(int argc, char **argv) {
  bsp_begin(bsp_nprocs());
  bsp_pid_t p = bsp_nprocs(), s = bsp_pid();
  long n = argc > 1 ? atol(argv[1]) : 64;
  if (n < 1) bsp_abort("lu_bcast: pid %d: bad n %ld\n", s, n);

  /* Local rows: local row r is global row r*p + s. */
  long nr = (n + p - s - 1) / p;
  long *a = malloc((size_t)(nr > 0 ? nr : 1) * (size_t)n * sizeof *a);
  long *rowk = malloc((size_t)n * sizeof *rowk);
  if (!a || !rowk) bsp_abort("lu_bcast: pid %d: out of memory\n", s);
  for (long r = 0; r < nr; r++)
    for (long j = 0; j < n; j++) a[r * n + j] = initval(r * p + s, j);
  bsp_push_reg(rowk, (bsp_size_t)(n * (long)sizeof(long)));
  bsp_sync();

  for (long k = 0; k < n; k++) {
    bsp_pid_t owner = (bsp_pid_t)(k % p);
    long len = n - k - 1;         /* columns k+1 .. n-1 */
    long b = (len + p - 1) / p;   /* piece size; pieces at the end may be empty */
    for (long j = k + 1; j < n; j++) rowk[j] = -1; /* poison what must arrive */

    /* Phase 1: the owner scatters piece j of row k to process j. */
    if (s == owner) {
      const long *src = &a[(k / p) * n];
      for (bsp_pid_t t = 0; t < p; t++) {
        long c0 = k + 1 + t * b < n ? k + 1 + t * b : n;
        long c1 = c0 + b < n ? c0 + b : n;
        bsp_put(t, &src[c0], rowk, (bsp_size_t)(c0 * (long)sizeof(long)),
                (bsp_size_t)((c1 - c0) * (long)sizeof(long)));
      }
    }
    bsp_sync();

    /* Phase 2: every process sends its piece to all the others. */
    {
      long c0 = k + 1 + s * b < n ? k + 1 + s * b : n;
      long c1 = c0 + b < n ? c0 + b : n;
      for (bsp_pid_t t = 0; t < p; t++)
        if (t != s)
          bsp_put(t, &rowk[c0], rowk, (bsp_size_t)(c0 * (long)sizeof(long)),
                  (bsp_size_t)((c1 - c0) * (long)sizeof(long)));
    }
    bsp_sync();

    for (long j = k + 1; j < n; j++)
      if (rowk[j] < 0 || rowk[j] >= Q)
        bsp_abort("lu_bcast: pid %d: stage %ld: element %ld of the pivot row is %ld after the broadcast\n", s, k,
                  j, rowk[j]);
    if (s == owner)
      for (long j = k + 1; j < n; j++)
        if (rowk[j] != a[(k / p) * n + j])
          bsp_abort("lu_bcast: pid %d: stage %ld: own pivot row element %ld came back as %ld, is %ld\n", s, k, j,
                    rowk[j], a[(k / p) * n + j]);

    /* Rank-1 update of the local rows below row k. */
    for (long r = 0; r < nr; r++) {
      long i = r * p + s;
      if (i <= k) continue;
      long aik = a[r * n + k];
      for (long j = k + 1; j < n; j++) a[r * n + j] = update(a[r * n + j], aik, rowk[j]);
    }
  }

  /* The same n stages, sequentially, on the whole matrix. */
  long *seq = malloc((size_t)n * (size_t)n * sizeof *seq);
  if (!seq) bsp_abort("lu_bcast: pid %d: out of memory\n", s);
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) seq[i * n + j] = initval(i, j);
  for (long k = 0; k < n; k++)
    for (long i = k + 1; i < n; i++)
      for (long j = k + 1; j < n; j++) seq[i * n + j] = update(seq[i * n + j], seq[i * n + k], seq[k * n + j]);
  long checksum = 0;
  for (long r = 0; r < nr; r++) {
    long i = r * p + s;
    for (long j = 0; j < n; j++) {
      if (a[r * n + j] != seq[i * n + j])
        bsp_abort("lu_bcast: pid %d: a[%ld][%ld] = %ld, sequential %ld\n", s, i, j, a[r * n + j], seq[i * n + j]);
    }
  }
  for (long i = 0; i < n * n; i++) checksum = (checksum * 31 + seq[i]) % Q;

  bsp_pop_reg(rowk);
  bsp_sync();
  if (s == 0) printf("lu_bcast ok n=%ld p=%d stages=%ld checksum=%ld\n", n, p, n, checksum);
  free(seq);
  free(rowk);
  free(a);
  bsp_end();
  return 0;
}
