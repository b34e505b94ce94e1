/*
 * corelat -- the machine's core-to-core latency: the round trip of one cache
 * line between two processes pinned to two cores, through shared memory (no
 * BSPk, no MPI). Every sub-microsecond figure of bench/suite.sh (an empty or
 * one-word superstep, a barrier) is a few such transfers plus software, so the
 * suite records this before and after its run: on this VM it moved between
 * 0.05 and 0.5 us from one hour to the next (the host places the two vCPUs
 * on nearby or distant cores), taking BSPk's and Open MPI's small-superstep
 * times with it.
 *
 *   corelat [--cores A,B] [--iters N]
 *
 * Output: one line "corelat,<cores>,<round trip in us>,<iters>". Exit status
 * 2 when the machine has one core or a core cannot be bound.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int bind_core(int core) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(core, &s);
  return sched_setaffinity(0, sizeof s, &s);
}

int main(int argc, char **argv) {
  int a = 0, b = 1;
  long iters = 200000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--cores") && i + 1 < argc && sscanf(argv[i + 1], "%d,%d", &a, &b) == 2) {
      i++;
    } else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
      iters = atol(argv[++i]);
    } else {
      fprintf(stderr, "usage: corelat [--cores A,B] [--iters N]\n");
      return 1;
    }
  }
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || a == b || iters <= 0) {
    fprintf(stderr, "corelat: needs two distinct cores and iters > 0\n");
    return 2;
  }
  /* Two flags on separate cache lines: each written by one side only. */
  _Atomic long *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    perror("corelat: mmap");
    return 2;
  }
  _Atomic long *ping = mem, *pong = mem + 16;
  pid_t child = fork();
  if (child < 0) {
    perror("corelat: fork");
    return 2;
  }
  if (bind_core(child == 0 ? b : a) != 0) {
    perror("corelat: sched_setaffinity");
    if (child == 0) _exit(2);
    waitpid(child, NULL, 0);
    return 2;
  }
  long warm = iters / 10 + 1;
  if (child == 0) {
    for (long i = 1; i <= warm + iters; i++) {
      while (atomic_load_explicit(ping, memory_order_acquire) != i) {
      }
      atomic_store_explicit(pong, i, memory_order_release);
    }
    _exit(0);
  }
  double t0 = 0;
  for (long i = 1; i <= warm + iters; i++) {
    if (i == warm + 1) t0 = now_s();
    atomic_store_explicit(ping, i, memory_order_release);
    while (atomic_load_explicit(pong, memory_order_acquire) != i) {
    }
  }
  double t = now_s() - t0;
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 2;
  printf("corelat,%d-%d,%.4f,%ld\n", a, b, t / (double)iters * 1e6, iters);
  return 0;
}
