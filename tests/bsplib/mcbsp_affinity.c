/* tests/bsplib/mcbsp_affinity.c -- MulticoreBSP's affinity interface
 * (mcbsp-affinity.h) as its programs use it: bsp_init, then a setting in main,
 * then bsp_begin; each process prints the CPUs it may run on.
 *
 *   prog MODE P [CPU...]
 *     none      no setting (the kernel places the processes)
 *     compact   mcbsp_set_affinity_mode(COMPACT)
 *     scatter   mcbsp_set_affinity_mode(SCATTER)
 *     manual    mcbsp_set_pinning(CPU..., n)
 *     reserved  COMPACT with core 0 reserved
 *     default   MCBSP_DEFAULT_AFFINITY = COMPACT (a changed default)
 *     maxthreads  mcbsp_set_maximum_threads(P), then bsp_begin(bsp_nprocs())
 * Prints "before begin nprocs=N" (pid 0), then per process
 * "affinity pid=S cpus=LIST" (LIST "all" when it may run on every CPU
 * online). Getters are checked in main ("getters ok" or "WRONG ..."). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mcbsp.h>
#include <mcbsp-affinity.h>

static int P = 2;

static void spmd(void) {
  bsp_begin(P);
  cpu_set_t set;
  char list[256] = "";
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) bsp_abort("sched_getaffinity failed\n");
  if (CPU_COUNT(&set) == sysconf(_SC_NPROCESSORS_ONLN)) {
    strcpy(list, "all");
  } else {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", *list ? "," : "", c);
  }
  bsp_sync();
  printf("affinity pid=%d cpus=%s\n", (int)bsp_pid(), list);
  bsp_end();
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "none";
  bsp_init(spmd, argc, argv);
  if (argc > 2) P = atoi(argv[2]);
  if (!strcmp(mode, "compact")) {
    mcbsp_set_affinity_mode(COMPACT);
    if (mcbsp_get_affinity_mode() != COMPACT) printf("WRONG mode\n");
  } else if (!strcmp(mode, "scatter")) {
    mcbsp_set_affinity_mode(SCATTER);
  } else if (!strcmp(mode, "manual")) {
    size_t pins[64], n = 0;
    for (int i = 3; i < argc && n < 64; ++i) pins[n++] = (size_t)atoi(argv[i]);
    mcbsp_set_pinning(pins, n);
    size_t *copy = mcbsp_get_pinning();
    int ok = copy && mcbsp_get_affinity_mode() == MANUAL;
    for (size_t i = 0; ok && i < n; ++i) ok = copy[i] == pins[i];
    printf(ok ? "getters ok\n" : "WRONG pinning copy\n");
    free(copy);
  } else if (!strcmp(mode, "reserved")) {
    const size_t zero = 0;
    mcbsp_set_affinity_mode(COMPACT);
    mcbsp_set_reserved_cores(&zero, 1);
    size_t *r = mcbsp_get_reserved_cores();
    printf(r && r[0] == 0 && mcbsp_get_reserved_cores_number() == 1 ? "getters ok\n" : "WRONG reserved copy\n");
    free(r);
  } else if (!strcmp(mode, "default")) {
    MCBSP_DEFAULT_AFFINITY = COMPACT;
    if (mcbsp_get_affinity_mode() != COMPACT) printf("WRONG default\n");
  } else if (!strcmp(mode, "maxthreads")) {
    mcbsp_set_maximum_threads((size_t)P);
    if (mcbsp_get_maximum_threads() != (size_t)P || mcbsp_get_threads_per_core() != 1 ||
        mcbsp_get_thread_numbering() != CONSECUTIVE || mcbsp_get_pinning() != NULL)
      printf("WRONG getters\n");
    P = (int)bsp_nprocs();
  }
  printf("before begin nprocs=%d\n", (int)bsp_nprocs());
  spmd();
  printf("after end nprocs=%d\n", (int)bsp_nprocs());  /* pid 0 only: the forks exit in bsp_end */
  return 0;
}
