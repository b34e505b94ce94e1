/* examples/example_util.h -- small helpers shared by the DSM examples. */
#ifndef BSPK_EXAMPLE_UTIL_H
#define BSPK_EXAMPLE_UTIL_H
#include <bspk.h>
#include <string.h>

/* Copy n doubles between a comem region and plain memory, frame by frame:
 * into the region if to_region, else out of it. */
static void comem_copy(bspk_ptr p, double *buf, size_t n, int to_region) {
    while (n) {
        void *base;
        size_t k = bspk_span(p, &base);
        if (k > n) k = n;
        if (to_region) memcpy(base, buf, k * sizeof(double));
        else memcpy(buf, base, k * sizeof(double));
        buf += k;
        n -= k;
        p = bspk_incr(p, (ptrdiff_t)k);
    }
}
static void to_comem(bspk_ptr p, const double *src, size_t n) { comem_copy(p, (double *)src, n, 1); }
static void from_comem(double *dst, bspk_ptr p, size_t n) { comem_copy(p, dst, n, 0); }

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
