/* A user program built outside the tree, as in the README:
 *   cc app.c $(pkg-config --cflags --libs bspk) && bspkrun -n 4 ./a.out */
#include <bspk.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (bspk_init(&argc, &argv) != BSPK_OK) return 1;
    int me = bspk_pid(), p = bspk_nprocs();
    bspk_ptr m = bspk_malloc("", 0, 1, sizeof(int));
    *(int *)bspk_elemP(m) = me;
    bspk_send((me + 1) % p, m, 1);
    bspk_expect(1);
    if (bspk_sync() != BSPK_OK) return 2;
    bspk_ptr r = bspk_recv();
    int got = bspk_is_null(r) ? -1 : *(int *)bspk_elemP(r);
    int want = (me + p - 1) % p;
    printf("pid %d of %d received %d: %s\n", me, p, got, got == want ? "ok" : "WRONG");
    bspk_free(r);
    bspk_free(m);
    return bspk_finalize() == BSPK_OK && got == want ? 0 : 3;
}
