/* tests/bsplib/own_names.c -- a program may define functions whose names the
 * library also exports beyond bsp.h (here the Oxford level-1 bsp_bcast, with
 * a signature of its own), and the library's own calls still reach the
 * library's functions: bsp_broadcast (which the library implements with its
 * bsp_bcast) broadcasts pid 0's value; the program's bsp_bcast is called once,
 * by the program. Prints "own_names pid=S ok" or "WRONG ...". */
#include <bsp.h>
#include <stdio.h>

void bsp_broadcast(int pid, void *ptr, int nbytes); /* bsp_level1.h's, declared by the program */

static int own_calls = 0;
int bsp_bcast(int times); /* the program's own, unrelated to the library's */
int bsp_bcast(int times) {
  own_calls += times;
  return own_calls;
}

int main(void) {
  bsp_begin(bsp_nprocs());
  {
    const int s = (int)bsp_pid();
    int value = s == 0 ? 4242 : -s;
    bsp_broadcast(0, &value, (int)sizeof value);
    const int calls = bsp_bcast(1);
    if (value == 4242 && calls == 1)
      printf("own_names pid=%d ok\n", s);
    else
      printf("own_names pid=%d WRONG value=%d own bsp_bcast calls=%d\n", s, value, calls);
  }
  bsp_end();
  return 0;
}
