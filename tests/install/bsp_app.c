/* tests/install/bsp_app.c -- a BSPlib program built from the installed tree
 * (bspcc, pkg-config bspk-bsplib, find_package(bspk) -> bspk::bsplib) and run
 * with the installed bsprun: every process puts its pid into every other's
 * array, gets its right neighbour's pid and sends pid 0 a tagged message. */
#include <bsp.h>
#include <stdio.h>

int main(void) {
    bsp_begin(bsp_nprocs());
    bsp_pid_t p = bsp_nprocs(), s = bsp_pid();
    int all[64] = {0}, right = -1, tagsize = (int)sizeof(int);
    bsp_push_reg(all, (bsp_size_t)sizeof all);
    bsp_set_tagsize(&tagsize);
    bsp_sync();
    for (bsp_pid_t j = 0; j < p; j++) bsp_put(j, &s, all, s * (bsp_size_t)sizeof(int), sizeof(int));
    bsp_get((s + 1) % p, all, 0, &right, sizeof right); /* read before the puts land: 0 */
    bsp_send(0, &s, &s, sizeof s);
    bsp_sync();
    int bad = right != 0;
    for (bsp_pid_t j = 0; j < p; j++) bad |= all[j] != j;
    if (s == 0) {
        bsp_nprocs_t n;
        bsp_size_t bytes;
        bsp_qsize(&n, &bytes);
        bad |= n != p || bytes != p * (bsp_size_t)sizeof(int);
    }
    printf("%d: %s\n", s, bad ? "BAD" : "bsp ok");
    bsp_end();
    return bad;
}
