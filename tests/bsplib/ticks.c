/* tests/bsplib/ticks.c -- output under bsprun reaches the terminal line by
 * line: pid 0 prints a line, computes for a second and prints another,
 * without fflush (terminal_check.py --before checks the first arrives well
 * before the second; tests/bsplib/CMakeLists.txt). */
#include <bsp.h>
#include <stdio.h>
#include <time.h>

int main(void) {
  bsp_begin(bsp_nprocs());
  if (bsp_pid() == 0) {
    struct timespec t = {1, 0};
    printf("tick 1 of %d processes\n", bsp_nprocs());
    nanosleep(&t, NULL);
    printf("tick 2\n");
  }
  bsp_sync();
  bsp_end();
  return 0;
}
