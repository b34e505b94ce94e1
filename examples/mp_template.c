/*
 * mp_template -- the message-passing superstep of the BSPk paper, Figure 4,
 * run for many supersteps with varying numbers and sizes of messages, and
 * checked.
 *
 *   (0) bspk_sync();
 *   (1) free the messages sent in the previous superstep;
 *   (2-3) pull in all pending messages with bspk_recv() until BSPK_NULL;
 *   (4) for each message to send: bspk_malloc a fresh region, compute its
 *       contents from the received messages, bspk_send it;
 *   (5) free the received messages;
 *   (6) bspk_sync();
 *
 * Schedule: in superstep s, process q sends k = (s + q) % 4 messages, message j
 * to pid (q + j + 1) % p with n(s, q, j) doubles (from empty to several frames).
 * Contents: element i = first + i, where `first` folds the first elements of
 * the messages q received in s (so every value depends on the communication).
 * Every process replays the schedule (first elements only) and checks each
 * received message completely: sender, order, length and every element.
 *
 * Usage: bspkrun -n P mp_template [--steps S] [--mode expect|will_send|counted]
 */
#include <bspk.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int P, me;

static size_t nelems(int s, int q, int j) {
    static const size_t sizes[] = {0, 1, 2, 100, 1000, 8191, 8192, 8193, 20000, 70000};
    return sizes[(size_t)(s * 7 + q * 3 + j) % (sizeof sizes / sizeof *sizes)];
}
static int nsend(int s, int q) { return (s + q) % 4; }
static int dest_of(int q, int j) { return (q + j + 1) % P; }

static double fold(double acc, double first) {
    uint64_t x = (uint64_t)acc * 31u + (uint64_t)first;
    return (double)(x % 1000003u);
}

int main(int argc, char **argv) {
    if (bspk_init(&argc, &argv) != BSPK_OK) {
        /* bspk_init has printed why on stderr (unless BSPK_ERRORS=quiet) */
        return 1;
    }
    P = bspk_nprocs();
    me = bspk_pid();
    int steps = 50;
    const char *mode = "expect";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mode") && i + 1 < argc) mode = argv[++i];
    }
    /* carry[q]: fold of the first elements q received at the start of superstep s */
    double *carry = calloc((size_t)P, sizeof *carry), *next = calloc((size_t)P, sizeof *next);
    int *v = calloc((size_t)P, sizeof *v);
    bspk_ptr out[4];
    int num_sent = 0;
    bspk_ptr in[64];
    long checked = 0;

    bspk_sync();                                                         /* (0) */
    for (int s = 0; s < steps; s++) {
        for (int j = 0; j < num_sent; j++) bspk_free(out[j]);            /* (1) */
        int num_rcvd = 0;                                                /* (2) */
        for (;;) {                                                       /* (3) */
            bspk_ptr m = bspk_recv();
            if (bspk_is_null(m)) break;
            if (num_rcvd == 64) bspk_abort("too many messages");
            in[num_rcvd++] = m;
        }
        /* Check what arrived against the replayed schedule of superstep s-1. */
        double acc = 0;
        int k = 0;
        if (s > 0) {
            for (int q = 0; q < P; q++)
                for (int j = 0; j < nsend(s - 1, q); j++) {
                    if (dest_of(q, j) != me) continue;
                    if (k >= num_rcvd) bspk_abort("superstep %d: message %d from pid %d missing", s, j, q);
                    bspk_ptr m = in[k++];
                    size_t n = nelems(s - 1, q, j);
                    if (bspk_sender_id(m) != q || bspk_nelems(m) != n || (n && bspk_elem_size(m) != sizeof(double)))
                        bspk_abort("superstep %d: message %d from pid %d has sender %d, %zu elements (expected %zu)",
                                   s, j, q, bspk_sender_id(m), bspk_nelems(m), n);
                    double first = carry[q] + j;
                    for (size_t i = 0; i < n;) { /* walk frame by frame */
                        void *b;
                        size_t len = bspk_span(bspk_incr(m, (ptrdiff_t)i), &b);
                        for (size_t t = 0; t < len; t++)
                            if (((double *)b)[t] != first + (double)(i + t))
                                bspk_abort("superstep %d: message %d from pid %d, element %zu is %g, expected %g",
                                           s, j, q, i + t, ((double *)b)[t], first + (double)(i + t));
                        i += len;
                        checked += (long)len;
                    }
                    if (n) acc = fold(acc, first);
                }
            if (k != num_rcvd) bspk_abort("superstep %d: %d messages arrived, %d expected", s, num_rcvd, k);
            /* replay everyone's fold for the next superstep */
            for (int r = 0; r < P; r++) {
                double a = 0;
                for (int q = 0; q < P; q++)
                    for (int j = 0; j < nsend(s - 1, q); j++)
                        if (dest_of(q, j) == r && nelems(s - 1, q, j)) a = fold(a, carry[q] + j);
                next[r] = a;
            }
            double *t = carry; carry = next; next = t;
            if (carry[me] != acc) bspk_abort("replay disagrees with received data");
        }
        /* (4) compute and send this superstep's messages */
        memset(v, 0, (size_t)P * sizeof *v);
        for (num_sent = 0; num_sent < nsend(s, me); num_sent++) {
            int j = num_sent;
            size_t n = nelems(s, me, j);
            out[j] = bspk_malloc("", 0, n, sizeof(double));
            if (bspk_is_null(out[j])) bspk_abort("bspk_malloc: %s", bspk_error_string());
            for (size_t i = 0; i < n;) {
                void *b;
                size_t len = bspk_span(bspk_incr(out[j], (ptrdiff_t)i), &b);
                for (size_t t = 0; t < len; t++) ((double *)b)[t] = carry[me] + j + (double)(i + t);
                i += len;
            }
            if (bspk_send(dest_of(me, j), out[j], n) != BSPK_OK) bspk_abort("bspk_send: %s", bspk_error_string());
            v[dest_of(me, j)]++;
        }
        for (int j = 0; j < num_rcvd; j++) bspk_free(in[j]);              /* (5) */
        if (!strcmp(mode, "expect")) {
            int e = 0;
            for (int q = 0; q < P; q++)
                for (int j = 0; j < nsend(s, q); j++) e += dest_of(q, j) == me;
            bspk_expect(e);
        } else if (!strcmp(mode, "will_send")) {
            bspk_will_send(v);
        }
        if (bspk_sync() != BSPK_OK) bspk_abort("bspk_sync: %s", bspk_error_string()); /* (6) */
    }
    for (int j = 0; j < num_sent; j++) bspk_free(out[j]);
    for (bspk_ptr m; !bspk_is_null(m = bspk_recv());) bspk_free(m);
    bspk_stats st;
    bspk_get_stats(&st);
    printf("mp_template pid=%d: %d supersteps, %llu messages received, %ld elements checked, "
           "runtime bytes copied %llu: ok\n",
           me, steps, (unsigned long long)st.msgs_recv, checked, (unsigned long long)st.bytes_copied);
    free(carry);
    free(next);
    free(v);
    return bspk_finalize() == BSPK_OK ? 0 : 1;
}
