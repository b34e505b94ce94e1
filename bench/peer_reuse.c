/*
 * peer_reuse -- what a process pays for writing into memory that a process
 * on another core has just read: the situation of a send buffer that the
 * receiver pulled from (BSPk on one host: the receiver copies a message out
 * of the sender's frames or contiguous region) and that the sender then fills
 * again, e.g. the next pass of a radix sort scattering its keys into the
 * region it sends. Open MPI's put has the opposite pattern: the sender writes
 * into the receiver's window, and its own buffer is never read by another
 * core. No BSPk, no MPI: two processes pinned to two cores, one shared
 * mapping.
 *
 * Process A count-sorts N random 32-bit keys by one 8-bit digit
 * (bench/suite/kernels.h's suite_count_sort, the Rdx kernel) into an output
 * buffer; process B, between A's sorts, reads (one load per cache line) the
 * first half of the shared output buffer, as a receiver pulling its part. The
 * iterations cycle through six steps, so every case is measured in the same
 * minutes (this VM's speed moves between runs):
 *   0  sort into a private buffer; B then reads half of the shared one
 *   1  sort into the shared buffer                 "after the peer read it"
 *   2  sort into the private buffer; B reads half of the shared one and
 *      demotes the lines it read (CLDEMOTE: from its core's caches to the
 *      shared last-level cache; a no-op hint where unsupported)
 *   3  sort into the shared buffer                 "after read + cldemote"
 *   4  sort into the private buffer; B idle
 *   5  sort into the shared buffer                 "peer idle" (A wrote it
 *      last, in step 3)
 * Steps 0, 2 and 4 are the baseline ("private").
 *
 *   peer_reuse [--keys N] [--iters I] [--cores A,B]
 *
 * Output: a Markdown table (case, median and 10th percentile of A's sort
 * time in us, median / private median) and a csv line per case
 * "peer_reuse,<case>,<keys>,<median us>,<p10 us>,<ratio>". Exit status 2 on
 * a usage error or when a core cannot be bound.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "suite/kernels.h"

static int bind_core(int core) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(core, &s);
  return sched_setaffinity(0, sizeof s, &s);
}

/* The control block A and B share: A raises `go` (odd) with the step's
 * request for B, B answers by setting `done` to the same value. */
struct ctl {
  volatile uint64_t go, done;
  volatile int what; /* 0: idle, 1: read half, 2: read half and demote, -1: exit */
};

static volatile uint64_t sink; /* keeps B's loads */

static void reader(struct ctl *c, const uint32_t *x, size_t n) {
  uint64_t seen = 0, sum = 0;
  for (;;) {
    while (c->go == seen) __builtin_ia32_pause();
    seen = c->go;
    const int what = c->what;
    if (what < 0) {
      sink = sum;
      _exit(0);
    }
    if (what > 0)
      for (size_t i = 0; i < n / 2; i += 16) sum += x[i];
    if (what == 2)
      for (size_t i = 0; i < n / 2; i += 16) __asm__ volatile("cldemote %0" : : "m"(x[i]));
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    c->done = seen;
  }
}

int main(int argc, char **argv) {
  size_t n = 131072; /* Rdx --quick at p = 2: 2^18 keys, half per process */
  int iters = 1800, ca = 0, cb = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--keys") && i + 1 < argc) n = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--cores") && i + 1 < argc && sscanf(argv[++i], "%d,%d", &ca, &cb) == 2) {
    } else {
      fprintf(stderr, "usage: peer_reuse [--keys N] [--iters I] [--cores A,B]\n");
      return 2;
    }
  }
  if (n < 1024 || iters < 60) {
    fprintf(stderr, "peer_reuse: --keys must be at least 1024 and --iters at least 60\n");
    return 2;
  }
  iters -= iters % 6;
  const size_t len = n * sizeof(uint32_t);
  struct ctl *c = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  uint32_t *shared = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  uint32_t *priv = malloc(len), *in = malloc(len);
  double *t = malloc((size_t)iters * sizeof *t);
  if (c == MAP_FAILED || shared == MAP_FAILED || !priv || !in || !t) {
    perror("peer_reuse");
    return 2;
  }
  memset(c, 0, sizeof *c);
  memset(shared, 0, len);
  memset(priv, 0, len);
  for (size_t i = 0; i < n; i++) in[i] = (uint32_t)suite_mix64(i);
  pid_t child = fork();
  if (child < 0) {
    perror("peer_reuse: fork");
    return 2;
  }
  if (child == 0) {
    if (bind_core(cb)) _exit(2);
    reader(c, shared, n);
  }
  if (bind_core(ca)) {
    fprintf(stderr, "peer_reuse: cannot bind to cores %d,%d\n", ca, cb);
    c->what = -1;
    c->go = c->go + 1;
    waitpid(child, NULL, 0);
    return 2;
  }
  static const int request[6] = {1, 0, 2, 0, 0, 0};
  uint64_t counts[256];
  for (int it = -60; it < iters; it++) { /* 60 untimed warm-up iterations */
    const int step = (it + 60) % 6;
    const double t0 = suite_now();
    suite_count_sort(step % 2 ? shared : priv, counts, in, n, (it + 60) / 6 % 4);
    const double dt = suite_now() - t0;
    if (it >= 0) t[it] = dt;
    c->what = request[step];
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    const uint64_t go = c->go + 1;
    c->go = go;
    while (c->done != go) __builtin_ia32_pause();
  }
  c->what = -1;
  c->go = c->go + 1;
  waitpid(child, NULL, 0);

  /* Per case: its iterations' times, sorted. */
  static const char *const name[4] = {"private (steps 0, 2, 4)", "after the peer read it", "after read + cldemote",
                                      "peer idle"};
  static const int steps[4][3] = {{0, 2, 4}, {1, -1, -1}, {3, -1, -1}, {5, -1, -1}};
  double med[4], p10[4];
  double *v = malloc((size_t)iters * sizeof *v);
  for (int k = 0; k < 4; k++) {
    size_t m = 0;
    for (int it = 0; it < iters; it++)
      for (int s = 0; s < 3; s++)
        if (steps[k][s] == it % 6) v[m++] = t[it];
    qsort(v, m, sizeof *v, suite_cmp_double);
    med[k] = v[m / 2] * 1e6;
    p10[k] = v[m / 10] * 1e6;
  }
  printf("Count sort of %zu keys into a buffer (us per sort, %d iterations; cores %d,%d):\n\n", n, iters, ca, cb);
  printf("| case | median | p10 | median / private |\n|---|---:|---:|---:|\n");
  for (int k = 0; k < 4; k++) printf("| %s | %.1f | %.1f | %.2f |\n", name[k], med[k], p10[k], med[k] / med[0]);
  printf("\n");
  for (int k = 0; k < 4; k++)
    printf("peer_reuse,%s,%zu,%.1f,%.1f,%.3f\n", k == 0 ? "private" : k == 1 ? "peer-read" : k == 2 ? "peer-read-cldemote" : "peer-idle",
           n, med[k], p10[k], med[k] / med[0]);
  free(v);
  free(t);
  free(in);
  free(priv);
  return 0;
}
