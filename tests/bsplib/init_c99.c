/* tests/bsplib/init_c99.c -- bsp_init, as BSPlib programs use it, in a strict
 * C99 program (C_STANDARD 99, no extensions, -pedantic -Werror): pid 0 runs
 * main, prints a prompt once, reads the number of processes from stdin (only
 * pid 0 gets stdin) and calls spmd itself, keeping the globals it set in main;
 * the other processes go straight to spmd and exit after it, so the line
 * after spmd() in main is printed once. Run by run_check.sh with
 * `echo 3 | bspkrun -n 4 init_c99` (tests/bsplib/CMakeLists.txt); `init_c99
 * noeol` prompts without a newline, as interactive programs do. */
#include <bsp.h>
#include <stdio.h>
#include <stdlib.h>

static int g_nprocs = 0;      /* read by pid 0 in main; 0 on the others */
static int g_set_in_main = 0; /* 42 once main has run */

static void spmd(void) {
  bsp_pid_t me, k;
  bsp_nprocs_t p;
  int seen[64] = {0};
  int one = 1;
  bsp_begin(g_nprocs);
  me = bsp_pid();
  p = bsp_nprocs();
  if (me == 0 && g_set_in_main != 42)
    bsp_abort("CHECK FAILED: pid 0 lost the global set in main (%d)\n", g_set_in_main);
  if (me != 0 && g_set_in_main != 0) bsp_abort("CHECK FAILED: pid %d ran main's code before spmd\n", me);
  if (me == 0 && p != g_nprocs)
    bsp_abort("CHECK FAILED: bsp_nprocs() is %d, pid 0 asked for %d\n", p, g_nprocs);
  if (p > 64) bsp_abort("CHECK FAILED: %d processes\n", p);
  bsp_push_reg(seen, (bsp_size_t)sizeof seen);
  bsp_sync();
  bsp_put(0, &one, seen, me * (bsp_size_t)sizeof(int), (bsp_size_t)sizeof(int));
  bsp_sync();
  if (me == 0)
    for (k = 0; k < p; ++k)
      if (seen[k] != 1) bsp_abort("CHECK FAILED: no process has pid %d\n", k);
  bsp_pop_reg(seen);
  bsp_sync();
  printf("init spmd pid=%d nprocs=%d\n", me, p);
  bsp_end();
}

int main(int argc, char **argv) {
  bsp_init(spmd, argc, argv);
  if (argc > 1 && strcmp(argv[1], "noeol") == 0) {
    /* a prompt without a newline and without fflush: stdio flushes it
     * (line-buffered stdout) when scanf reads the terminal, and bsprun must
     * show it although its line has not ended */
    printf("How many processes (at most %d)? ", bsp_nprocs());
  } else {
    printf("How many processes (at most %d)?\n", bsp_nprocs());
    fflush(stdout);
  }
  if (scanf("%d", &g_nprocs) != 1) bsp_abort("CHECK FAILED: could not read the number of processes\n");
  g_set_in_main = 42;
  spmd();
  printf("after spmd in main, read %d\n", g_nprocs);
  return 0;
}
