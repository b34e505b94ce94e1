/* tests/spawn/test_spawn_bsplib.c -- a BSPlib program as MulticoreBSP users
 * write it, started without a launcher (./prog): main prints a line, reads P
 * from stdin and sets a global before bsp_init/bsp_begin, so all of that must
 * happen once (pids 1..P-1 are forks made at bsp_begin); main's tail after
 * the SPMD function runs on pid 0 only. Checked by tests/spawn/run.sh (case
 * bsplib).
 *
 *   echo P | test_spawn_bsplib TAG [no_end | init_twice]
 *
 * Each pid prints "test_spawn_bsplib: pid I of P, global G, from left L"
 * (L: the pid of its left neighbour, put there in the SPMD section). With
 * no_end the SPMD function syncs once more and returns without bsp_end (a
 * program's bug: the job must fail, exit status 1, as under bsprun); with init_twice main calls
 * bsp_init a second time (an error, started directly too).
 *
 *   test_spawn_bsplib TAG abort_lines P
 *
 * prints a line, then (no stdin read, no bsp_init) bsp_begin(P); each pid
 * prints "test_spawn_bsplib: pid I line" (no fflush), all sync, then the last
 * pid calls bsp_abort: every pid's line must be out (stdout line-buffered from
 * bsp_begin on, also after the line printed before it). */
#include <bsp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int P = 0;
static int global = -1;
static int no_end = 0;

static void spmd(void) {
  bsp_begin(P);
  int left = -1, me = bsp_pid(), p = bsp_nprocs();
  bsp_push_reg(&left, sizeof left);
  bsp_sync();
  bsp_put((me + 1) % p, &me, &left, 0, sizeof me);
  bsp_sync();
  printf("test_spawn_bsplib: pid %d of %d, global %d, from left %d\n", me, p, global, left);
  bsp_pop_reg(&left);
  if (no_end) {
    /* a counted sync after the line: no pid leaves it (and returns, leaving
     * BSPk without bsp_end, which ends the job) before every pid has printed */
    bsp_sync();
    return;
  }
  bsp_end();
}

static int abort_lines(int p) {
  printf("test_spawn_bsplib: before bsp_begin\n");
  bsp_begin(p);
  /* puts, as printf of a constant string compiles to: glibc's printf and
   * fputs flush a line-buffered stream by its flag, while puts writes the
   * newline with putc, which flushes only where the stream's pointers were
   * set up for line buffering */
  char line[64];
  snprintf(line, sizeof line, "test_spawn_bsplib: pid %d line", bsp_pid());
  puts(line);
  bsp_sync();
  if (bsp_pid() == bsp_nprocs() - 1) bsp_abort("boom after the lines\n");
  bsp_sync();
  bsp_end();
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 3 && strcmp(argv[2], "abort_lines") == 0) return abort_lines(atoi(argv[3]));
  printf("test_spawn_bsplib: how many processes? (%d cores)\n", bsp_nprocs());
  if (scanf("%d", &P) != 1 || P < 1) {
    fprintf(stderr, "test_spawn_bsplib: no number of processes on stdin\n");
    return 2;
  }
  global = 100 + P;
  no_end = argc > 2 && strcmp(argv[2], "no_end") == 0;
  bsp_init(spmd, argc, argv);
  if (argc > 2 && strcmp(argv[2], "init_twice") == 0) bsp_init(spmd, argc, argv); /* an error */
  spmd();
  printf("test_spawn_bsplib: done\n");
  return 0;
}
