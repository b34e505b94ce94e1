/*
 * bench/imbalance -- what a superstep costs beyond its computation when the
 * processes' computations differ (load imbalance), BSPk next to Open MPI:
 * the time a waiting process takes to notice that its data are in, which
 * decides every superstep of a program whose processes do not finish
 * together. bench/imbalance.sh runs both twins side by side.
 *
 *   bspkrun -n P imbalance [--work LIST] [--time SECONDS]
 *   mpirun  -n P imbalance_mpi [same]
 *
 * Superstep s: process s mod P computes w microseconds (a dependent
 * floating-point loop calibrated at the start, so that a process sharing its
 * core gets the same work done, not the same wall time); every process then
 * sends one 8-byte word to process (pid + 1) mod P and ends the superstep:
 *   BSPk   counted:  bspk_send + bspk_sync (no declaration)
 *          declared: bspk_send + bspk_expect(1) + bspk_sync
 *   MPI    MPI_Isend + MPI_Irecv + MPI_Waitall + MPI_Barrier (what a BSP
 *          superstep is over MPI; bench/suite's isend-barrier)
 * Printed per w: microseconds per superstep (loop average, pid 0's clock
 * after a final barrier) and the overhead: that less the computation as
 * measured by the processes that did it (its sum over all processes divided
 * by the supersteps; a calibrated w is only nominal on a VM whose clock
 * speed moves); CSV lines "csv,imbalance,LIB,VARIANT,P,W_US,US_PER_STEP,OVERHEAD_US".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef IMB_MPI
#include <mpi.h>
#define LIB "mpi"
#else
#include <bspk.h>
#define LIB "bspk"
#endif

static int me, P;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The computation: n dependent multiply-adds. */
static double sink;
static void compute(long n) {
  double x = 1.0;
  for (long i = 0; i < n; i++) x = x * 1.0000001 + 1e-9;
  sink += x;
}

/* Iterations per microsecond: the fastest of 5 timings of 1e6 iterations
 * (the fastest is the one no other process interrupted). */
static double calibrate(void) {
  double best = 1e30;
  for (int k = 0; k < 5; k++) {
    double t = now();
    compute(1000000);
    t = now() - t;
    if (t < best) best = t;
  }
  return 1e6 / (best * 1e6);
}

/* The sum of x over all processes, at pid 0. */
static double sum_at_0(double x) {
#ifdef IMB_MPI
  double y = 0;
  MPI_Reduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  return y;
#else
  bspk_ptr r = bspk_malloc("", 0, 1, sizeof(double));
  *(double *)bspk_elemP(r) = x;
  if (me != 0) bspk_send(0, r, 1);
  if (bspk_sync() != BSPK_OK) bspk_abort("bspk_sync failed");
  double y = x;
  for (bspk_ptr m; !bspk_is_null(m = bspk_recv());) {
    y += *(double *)bspk_elemP(m);
    bspk_free(m);
  }
  bspk_free(r);
  return y;
#endif
}

static void barrier(void) {
#ifdef IMB_MPI
  MPI_Barrier(MPI_COMM_WORLD);
#else
  if (bspk_sync() != BSPK_OK) bspk_abort("bspk_sync failed");
#endif
}

#ifndef IMB_MPI
static bspk_ptr word;
#endif

/* Seconds this process spent computing (its own clock around compute()). */
static double busy;

/* One superstep of variant v (0: counted / MPI, 1: declared). */
static void step(int s, long iters, int v) {
  if (s % P == me && iters > 0) {
    double t = now();
    compute(iters);
    busy += now() - t;
  }
#ifdef IMB_MPI
  (void)v;
  static double out, in;
  MPI_Request rq[2];
  out = (double)s;
  MPI_Irecv(&in, 1, MPI_DOUBLE, (me + P - 1) % P, 0, MPI_COMM_WORLD, &rq[0]);
  MPI_Isend(&out, 1, MPI_DOUBLE, (me + 1) % P, 0, MPI_COMM_WORLD, &rq[1]);
  MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
  MPI_Barrier(MPI_COMM_WORLD);
#else
  if (bspk_send((me + 1) % P, word, 1) != BSPK_OK) bspk_abort("bspk_send failed");
  if (v == 1 && bspk_expect(1) != BSPK_OK) bspk_abort("bspk_expect failed");
  if (bspk_sync() != BSPK_OK) bspk_abort("bspk_sync failed");
  int got = 0;
  for (bspk_ptr m; !bspk_is_null(m = bspk_recv());) {
    got++;
    bspk_free(m);
  }
  if (got != 1) bspk_abort("superstep %d: %d messages, expected 1", s, got);
#endif
}

int main(int argc, char **argv) {
#ifdef IMB_MPI
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  const char *variants[] = {"isend-barrier"};
  const int nvar = 1;
#else
  if (bspk_init(&argc, &argv) != BSPK_OK) return 1;
  me = bspk_pid();
  P = bspk_nprocs();
  word = bspk_malloc("", 0, 1, sizeof(double));
  const char *variants[] = {"counted", "declared"};
  const int nvar = 2;
#endif
  const char *list = "0,100,1000,3000,10000";
  double budget = 0.5; /* seconds per (w, variant) */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--work") && i + 1 < argc) list = argv[++i];
    else if (!strcmp(argv[i], "--time") && i + 1 < argc) budget = atof(argv[++i]);
    else {
      if (me == 0) fprintf(stderr, "usage: imbalance [--work US,US,...] [--time SECONDS]\n");
      return 2;
    }
  }
  double ipus = calibrate();
#ifdef IMB_MPI
  MPI_Bcast(&ipus, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); /* pid 0's rate: every process the same work */
#else
  {
    bspk_ptr r = bspk_malloc("", 0, 1, sizeof(double));
    *(double *)bspk_elemP(r) = ipus;
    if (me == 0)
      for (int j = 1; j < P; j++) bspk_send(j, r, 1);
    bspk_sync();
    bspk_ptr m = bspk_recv();
    if (!bspk_is_null(m)) {
      ipus = *(double *)bspk_elemP(m);
      bspk_free(m);
    }
    bspk_free(r);
  }
#endif
  if (me == 0) {
    printf("# imbalance (%s), p = %d: process s mod p computes w us in superstep s (%.0f iterations/us)\n", LIB, P,
           ipus);
    printf("#      w_us  variant          us/superstep   overhead_us\n");
  }
  char *dup = strdup(list);
  for (char *tok = strtok(dup, ","); tok; tok = strtok(NULL, ",")) {
    double w = atof(tok);
    long iters = (long)(w * ipus);
    int steps = w > 0 ? (int)(budget * 1e6 / w) : 20000;
    if (steps < 20) steps = 20;
    if (steps > 20000) steps = 20000;
    for (int v = 0; v < nvar; v++) {
      for (int s = 0; s < steps / 10 + 2; s++) step(s, iters, v); /* warm-up */
      barrier();
      busy = 0;
      double t0 = now();
      for (int s = 0; s < steps; s++) step(s, iters, v);
      barrier();
      double per = (now() - t0) / steps * 1e6;
      double work = sum_at_0(busy) / steps * 1e6;
      if (me == 0) {
        printf("  %9.0f  %-15s %14.2f %13.2f\n", w, variants[v], per, per - work);
        printf("csv,imbalance,%s,%s,%d,%.0f,%.3f,%.3f\n", LIB, variants[v], P, w, per, per - work);
      }
    }
  }
  free(dup);
#ifdef IMB_MPI
  MPI_Finalize();
#else
  bspk_free(word);
  bspk_finalize();
#endif
  return sink == 42.0; /* keeps the computation */
}
