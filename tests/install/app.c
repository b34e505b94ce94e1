/* A user program built outside the tree, as in the README:
 *   cc app.c $(pkg-config --cflags --libs bspk) && bspkrun -n 4 ./a.out */
#include <bspk.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* bspk_get_stats in its three forms: (&s), (&s, sizeof s), and a caller built
 * against an older, shorter bspk_stats (only its fields are written). */
static int stats_ok(void) {
    bspk_stats a, b;
    if (bspk_get_stats(&a) != BSPK_OK || bspk_get_stats(&b, sizeof b) != BSPK_OK) return 0;
    if (a.supersteps != 1 || b.supersteps != 1 || a.frame_size == 0 || b.frame_size != a.frame_size) return 0;
    bspk_stats older;
    unsigned char *old = (unsigned char *)&older;
    memset(old, 0xAB, sizeof older);
    size_t old_size = offsetof(bspk_stats, bytes_sent);  /* supersteps, msgs_sent */
    if (bspk_get_stats_sized(&older, old_size) != BSPK_OK) return 0;
    for (size_t i = old_size; i < sizeof older; i++)
        if (old[i] != 0xAB) return 0; /* wrote past the caller's struct */
    return older.supersteps == 1 && bspk_get_stats(&a, 4) == BSPK_ERR_ARG;
}

/* bspk_malloc_contiguous: three frames of doubles in one piece of memory. */
static int contiguous_ok(void) {
    bspk_stats s;
    if (bspk_get_stats(&s) != BSPK_OK) return 0;
    size_t n = 3 * s.frame_size / sizeof(double);
    bspk_ptr c = bspk_malloc_contiguous("", 0, n, sizeof(double));
    void *base = NULL;
    int ok = !bspk_is_null(c) && bspk_is_contiguous(c) == 1 && bspk_span(c, &base) == n;
    if (ok) ((double *)base)[n - 1] = 1.0;
    return bspk_free(c) == BSPK_OK && ok;
}

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
    if (!stats_ok() || !contiguous_ok()) {
        printf("pid %d: bspk_get_stats forms or bspk_malloc_contiguous: WRONG\n", me);
        got = -2;
    }
    bspk_free(r);
    /* The buffered calls, from a stack variable reused at once: a message to
     * the next process and a store into this process's own region (a local
     * copy, counted here too): bspk_expect(2). */
    int v = 100 + me;
    bspk_ptr box = bspk_malloc("", 0, 1, sizeof(int));
    if (bspk_send_buf((me + 1) % p, &v, sizeof v) != BSPK_OK || bspk_put(box, &v, sizeof v) != BSPK_OK) got = -3;
    v = -1;
    bspk_expect(2);
    if (bspk_sync() != BSPK_OK) return 2;
    r = bspk_recv();
    void *bytes = NULL;
    int in = -1;
    if (!bspk_is_null(r) && bspk_elem_size(r) == 1 && bspk_span(r, &bytes) == sizeof in) memcpy(&in, bytes, sizeof in);
    if (in != 100 + want || *(int *)bspk_elemP(box) != 100 + me) {
        printf("pid %d: bspk_send_buf / bspk_put: WRONG\n", me);
        got = -4;
    }
    printf("pid %d of %d received %d: %s\n", me, p, got, got == want ? "ok" : "WRONG");
    bspk_free(r);
    bspk_free(box);
    bspk_free(m);
    return bspk_finalize() == BSPK_OK && got == want ? 0 : 3;
}
