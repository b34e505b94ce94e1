/* tests/bsplib/oxford_names.c -- the Oxford BSP toolset's older names
 * (bsp_pushregister, bsp_popregister, bsp_set_tag_size), which its programs
 * and code ported from it use: each process registers x under the old name,
 * puts its pid into its right neighbour's x, sends it a message with a
 * 4-byte tag set by bsp_set_tag_size, and checks both arrived; prints
 * "oxford pid=S ok" or "WRONG ...". */
#include <bsp.h>

int main(void) {
  bsp_begin(bsp_nprocs());
  {
    const int p = bsp_nprocs(), s = bsp_pid(), right = (s + 1) % p, left = (s + p - 1) % p;
    int x = -1, tagsize = 4, tag = s + 100, got_tag = -1, status = -2, payload = -1;
    bsp_pushregister(&x, (int)sizeof x);
    bsp_set_tag_size(&tagsize);
    bsp_sync();
    bsp_put(right, &s, &x, 0, (int)sizeof s);
    bsp_send(right, &tag, &s, (int)sizeof s);
    bsp_sync();
    bsp_get_tag(&status, &got_tag);
    bsp_move(&payload, (int)sizeof payload);
    bsp_popregister(&x);
    bsp_sync();
    if (x == left && tagsize == 0 && got_tag == left + 100 && status == (int)sizeof(int) && payload == left)
      printf("oxford pid=%d ok\n", s);
    else
      printf("oxford pid=%d WRONG x=%d tagsize=%d tag=%d status=%d payload=%d\n", s, x, tagsize, got_tag, status,
             payload);
  }
  bsp_end();
  return 0;
}
