/* tests/spawn/spawn_thread.c -- a BSPlib program started without a launcher
 * that has a second thread (idle, as libgomp's pool is after an OpenMP
 * parallel region) when bsp_begin forks the other processes: bsp_begin says
 * so on stderr (the forks have only the calling thread; bsplib/spawn.cpp),
 * and the job still runs. Prints "spawn_thread: pid K of P ok" per process. */
#include <bsp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *idle(void *arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

int main(int argc, char **argv) {
  const int P = argc > 1 ? atoi(argv[1]) : 3;
  pthread_t t;
  if (pthread_create(&t, NULL, idle, NULL) != 0) return 2;
  bsp_begin(P);
  int sum = bsp_pid();
  bsp_push_reg(&sum, sizeof sum);
  bsp_sync();
  if (bsp_pid() != 0) bsp_put(0, &sum, &sum, 0, 0); /* a superstep with the others */
  bsp_sync();
  printf("spawn_thread: pid %d of %d ok\n", bsp_pid(), bsp_nprocs());
  bsp_end();
  return 0;
}
