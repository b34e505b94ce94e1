/*
 * bench/collectives.c -- BSPk's collectives (bspk_coll.h) next to Open MPI's:
 * bspk_broadcast / bspk_allreduce / bspk_alltoall against MPI_Bcast /
 * MPI_Allreduce / MPI_Alltoall, 8 B .. 16 MiB (factors of 8, and 1 MiB). One source, two twins:
 * compiled with -DCOLL_MPI it is the MPI program (bench/coll/CMakeLists.txt).
 *
 *   collectives [--quick] [--max BYTES]
 *
 * Size = bytes per process: the broadcast's and allreduce's vector (doubles,
 * BSPK_SUM | BSPK_DOUBLE / MPI_SUM), alltoall's whole send buffer (blocks of
 * size / p bytes). A time is the largest over the processes of the mean over
 * the repetitions (after 20 warm-up calls), in microseconds. Prints one line
 * per measurement: "csv,coll,LIB,OP,P,BYTES,US"; bench/collectives.sh joins
 * the twins into tables. Not a test: run it through bench/collectives.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef COLL_MPI
#include <mpi.h>
#define LIB "mpi"
#else
#include <bspk.h>
#include <bspk_coll.h>
#define LIB "bspk"
#endif

static int me, P;

static double now(void) {
#ifdef COLL_MPI
  return MPI_Wtime();
#else
  return bspk_time();
#endif
}

/* 8 B .. by factors of 8, plus 1 MiB (the size issue 15's broadcast goal names). */
static size_t next_size(size_t b) {
  if (b == ((size_t)256 << 10)) return (size_t)1 << 20;
  if (b == ((size_t)1 << 20)) return (size_t)2 << 20;
  return b * 8;
}

static double max_over_procs(double x) {
#ifdef COLL_MPI
  double y;
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return y;
#else
  bspk_ptr r = bspk_malloc("", 0, 1, sizeof(double));
  *(double *)bspk_elemP(r) = x;
  if (bspk_allreduce(r, 1, BSPK_MAX | BSPK_DOUBLE) != BSPK_OK) bspk_abort("allreduce failed");
  double y = *(double *)bspk_elemP(r);
  bspk_free(r);
  return y;
#endif
}

static void fail(const char *what) {
#ifdef COLL_MPI
  fprintf(stderr, "%s failed\n", what);
  MPI_Abort(MPI_COMM_WORLD, 1);
#else
  bspk_abort("%s failed: %s", what, bspk_coll_error_string());
#endif
}

/* One call of coll (0 broadcast, 1 allreduce, 2 alltoall) on `bytes`. */
#ifdef COLL_MPI
static char *buf_a, *buf_b;
static void one(int coll, size_t bytes) {
  int rc;
  if (coll == 0) rc = MPI_Bcast(buf_a, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
  else if (coll == 1) rc = MPI_Allreduce(MPI_IN_PLACE, buf_a, (int)(bytes / 8), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  else rc = MPI_Alltoall(buf_a, (int)(bytes / (size_t)P), MPI_BYTE, buf_b, (int)(bytes / (size_t)P), MPI_BYTE, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) fail("MPI collective");
}
#else
static bspk_ptr reg_a, reg_b;
static void one(int coll, size_t bytes) {
  int rc;
  if (coll == 0) rc = bspk_broadcast(0, reg_a, bytes / 8);
  else if (coll == 1) rc = bspk_allreduce(reg_a, bytes / 8, BSPK_SUM | BSPK_DOUBLE);
  else rc = bspk_alltoall(reg_b, reg_a, bytes / 8 / (size_t)P);
  if (rc != BSPK_OK) fail("bspk collective");
}
#endif

int main(int argc, char **argv) {
  int quick = 0;
  size_t maxb = (size_t)16 << 20;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--max") && i + 1 < argc) maxb = (size_t)strtoull(argv[++i], NULL, 10);
  }
  if (quick && maxb > 4096) maxb = 4096;
#ifdef COLL_MPI
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  buf_a = calloc(maxb * (size_t)P + 64, 1);
  buf_b = calloc(maxb * (size_t)P + 64, 1);
  if (!buf_a || !buf_b) fail("calloc");
#else
  if (bspk_init(&argc, &argv) != BSPK_OK) return 1;
  me = bspk_pid();
  P = bspk_nprocs();
  /* alltoall: blocks of bytes / p, in 8-byte elements: room for rounding up */
  size_t elems = maxb / 8 + (size_t)P;
  reg_a = bspk_malloc("", 0, elems, 8);
  reg_b = bspk_malloc("", 0, elems, 8);
  if (bspk_is_null(reg_a) || bspk_is_null(reg_b)) fail("bspk_malloc");
#endif
  static const char *names[3] = {"broadcast", "allreduce", "alltoall"};
  for (int coll = 0; coll < 3; coll++)
    for (size_t bytes = 8; bytes <= maxb; bytes = next_size(bytes)) {
      size_t b = bytes;
      if (coll == 2) { /* whole blocks of 8-byte elements */
        size_t blk = b / 8 / (size_t)P;
        if (blk == 0) blk = 1;
        b = blk * 8 * (size_t)P;
      }
      /* Enough repetitions that a measurement lasts milliseconds, not
       * microseconds (200 calls of 1 us made the small rows swing 2-3x);
       * 150 from 64 KiB to 1 MiB (was 40: 20 ms of a 1 MiB broadcast at
       * tcp p = 4, where one scheduler hiccup moved a cell by 20%). */
      int reps = quick ? 5 : (int)(b <= 4096 ? 3000 : b <= 65536 ? 500 : b <= (1u << 20) ? 150 : b <= (2u << 20) ? 40 : 8);
      for (int w = 0; w < (quick ? 1 : 20); w++) one(coll, b); /* warm-up */
      double t0 = now();
      for (int r = 0; r < reps; r++) one(coll, b);
      double us = (now() - t0) / reps * 1e6;
      us = max_over_procs(us);
      if (me == 0) printf("csv,coll,%s,%s,%d,%zu,%.2f\n", LIB, names[coll], P, b, us);
      fflush(stdout);
    }
#ifdef COLL_MPI
  MPI_Finalize();
#else
  bspk_free(reg_a);
  bspk_free(reg_b);
  bspk_finalize();
#endif
  return 0;
}
