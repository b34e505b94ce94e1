/* examples/example_util.h -- small helpers shared by the DSM examples. */
#ifndef BSPK_EXAMPLE_UTIL_H
#define BSPK_EXAMPLE_UTIL_H
#include <bspk.h>
#include <string.h>

/* Copy n doubles between a comem region and plain memory, frame by frame. */
static void to_comem(bspk_ptr p, const double *src, size_t n) {
    while (n) {
        void *base;
        size_t k = bspk_span(p, &base);
        if (k > n) k = n;
        memcpy(base, src, k * sizeof(double));
        src += k;
        n -= k;
        p = bspk_incr(p, (ptrdiff_t)k);
    }
}
static void from_comem(double *dst, bspk_ptr p, size_t n) {
    while (n) {
        void *base;
        size_t k = bspk_span(p, &base);
        if (k > n) k = n;
        memcpy(dst, base, k * sizeof(double));
        dst += k;
        n -= k;
        p = bspk_incr(p, (ptrdiff_t)k);
    }
}

/* The largest of every process's x (NaN counts as largest), known at pid 0
 * after one superstep of message passing; other pids get their own x. */
static double max_at_pid0(double x) {
    bspk_ptr m = bspk_malloc("", 0, 1, sizeof(double));
    *(double *)bspk_elemP(m) = x;
    bspk_send(0, m, 1);
    bspk_expect(bspk_pid() == 0 ? bspk_nprocs() : 0);
    if (bspk_sync() != BSPK_OK) bspk_abort("sync: %s", bspk_error_string());
    double worst = x;
    for (bspk_ptr in; !bspk_is_null(in = bspk_recv());) {
        double d = *(double *)bspk_elemP(in);
        if (d > worst || d != d) worst = d;
        bspk_free(in);
    }
    bspk_free(m);
    return worst;
}

#endif
