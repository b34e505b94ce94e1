/* tests/bsplib/level1_c99.c -- the Oxford toolset's level-1 collectives
 * (bsp_level1.h) against values every process computes itself, in strict C99.
 *
 *   level1_c99            every function, several rounds, p = 1..8
 *   level1_c99 skew       the same, with process round % p sleeping 2 ms
 *                         before each group of calls (late into the syncs
 *                         inside them while the others wait or race ahead)
 *   level1_c99 mismatch   process p-1 passes another nbytes to bsp_fold
 *                         (must end the job with an error naming it)
 *   level1_c99 other-op   process p-1 calls bsp_maxI where the others call
 *                         bsp_sumI (must end the job with an error)
 *   level1_c99 roots FN   process p-1 names itself the root of FN (bcast,
 *                         broadcast, scatter or gather) where the others name
 *                         pid 0 (an error naming both roots; until
 *                         2026-12-07 bcast, broadcast and scatter went on
 *                         with different results)
 *   level1_c99 null-dst   the root of a bsp_gather passes dst NULL (an error
 *                         naming it, not a crash)
 *   level1_c99 grow-mismatch  process p-1 passes more bytes than the scratch
 *                         holds, the others fewer: it alone registers a
 *                         larger one (the core reports the difference)
 * Prints "level1 ok pid=K" per process; "CHECK FAILED" on a wrong value. */
#define _POSIX_C_SOURCE 199309L /* nanosleep in strict C99 */
#include "bsp.h"
#include "bsp_level1.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static int failures;
static int skew; /* "skew" mode: see the top */
static void late(int round) {
    if (skew && bsp_pid() == round % bsp_nprocs()) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
}
#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            printf("CHECK FAILED pid=%d line %d: ", bsp_pid(), __LINE__); \
            printf(__VA_ARGS__);                                           \
            printf("\n");                                                  \
            failures++;                                                    \
        }                                                                  \
    } while (0)

/* Not commutative: concatenation of digit strings ("0" op "1" = "01"),
 * 16 bytes, so that the fold order is visible. */
static void concat(void *res, void *l, void *r, int *nbytes) {
    char buf[16];
    CHECK(*nbytes == 16, "op got nbytes %d", *nbytes);
    snprintf(buf, sizeof buf, "%s%s", (const char *)l, (const char *)r);
    memcpy(res, buf, 16);
}
static void addv(void *res, void *l, void *r, int *nbytes) { /* elementwise int sum */
    int k, n = *nbytes / (int)sizeof(int), a, b;
    for (k = 0; k < n; k++) {
        memcpy(&a, (char *)l + k * sizeof a, sizeof a);
        memcpy(&b, (char *)r + k * sizeof b, sizeof b);
        a += b;
        memcpy((char *)res + k * sizeof a, &a, sizeof a);
    }
}
static int lt_desc(void *a, void *b, int *nbytes) {
    (void)nbytes;
    return *(const int *)a > *(const int *)b;
}
static void digits(char *out, int from, int to) { /* "from..to" as digits mod 10 */
    int n = 0, k;
    for (k = from; k <= to && n < 15; k++) out[n++] = (char)('0' + k % 10);
    out[n] = '\0';
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "all";
    int p, me, round, k;
    bsp_begin(bsp_nprocs());
    p = bsp_nprocs();
    me = bsp_pid();
    skew = strcmp(mode, "skew") == 0;

    if (strcmp(mode, "mismatch") == 0) {
        char src[32] = "x", dst[32];
        bsp_fold(concat, src, dst, me == p - 1 ? 24 : 16);
        printf("CHECK FAILED pid=%d: a mismatched bsp_fold returned\n", me);
        bsp_end();
        return 1;
    }
    if (strcmp(mode, "null-dst") == 0) {
        int x = me;
        bsp_gather(0, &x, me == 0 ? NULL : &x, sizeof x);
        printf("CHECK FAILED pid=%d: bsp_gather into NULL returned\n", me);
        bsp_end();
        return 1;
    }
    if (strcmp(mode, "grow-mismatch") == 0) {
        char src[1024] = "x", dst[1024];
        bsp_fold(concat, src, dst, 16);
        bsp_fold(concat, src, dst, me == p - 1 ? 1000 : 16);
        printf("CHECK FAILED pid=%d: a mismatched bsp_fold returned\n", me);
        bsp_end();
        return 1;
    }
    if (strcmp(mode, "roots") == 0) {
        const char *fn = argc > 2 ? argv[2] : "bcast";
        int a[8], b[8] = {0}, root = me == p - 1 ? p - 1 : 0, i;
        for (i = 0; i < 8; i++) a[i] = 100 + me;
        if (strcmp(fn, "bcast") == 0) bsp_bcast(root, a, b, (int)sizeof(int));
        if (strcmp(fn, "broadcast") == 0) bsp_broadcast(root, a, (int)sizeof(int));
        if (strcmp(fn, "scatter") == 0) bsp_scatter(root, a, b, (int)sizeof(int));
        if (strcmp(fn, "gather") == 0) bsp_gather(root, a, b, (int)sizeof(int));
        printf("CHECK FAILED pid=%d: bsp_%s with different roots returned\n", me, fn);
        bsp_end();
        return 1;
    }
    if (strcmp(mode, "other-op") == 0) {
        if (me == p - 1) (void)bsp_maxI(me);
        else (void)bsp_sumI(me);
        printf("CHECK FAILED pid=%d: mismatched level-1 calls returned\n", me);
        bsp_end();
        return 1;
    }

    for (round = 0; round < 3; round++) {
        int sum = 0, prod = 1, v;
        double dsum = 0;
        char src[16], dst[16], want[16];
        int all[64], mine[4], got[4], gathered[4 * 64];
        /* a BSMP message sent before a level-1 call is in the queue after it
         * (from round 1 on: the scratch registration is there, one sync) */
        int msg_bytes = -1, msgs = -1;
        bsp_send((me + 1) % p, NULL, &me, sizeof me);
        for (k = 0; k < p; k++) {
            sum += k + round;
            prod *= (k % 3) + 1;
            dsum += 0.5 * k;
        }
        late(round);
        v = bsp_sumI(me + round);
        bsp_qsize(&msgs, &msg_bytes);
        if (round > 0) {
            int from = -1;
            bsp_size_t status = 0;
            CHECK(msgs == 1, "round %d: %d messages in the queue after bsp_sumI, expected 1", round, msgs);
            CHECK(msg_bytes == (int)sizeof from, "round %d: %d payload bytes queued, expected %d", round, msg_bytes,
                  (int)sizeof from);
            bsp_get_tag(&status, want);
            if (status == (bsp_size_t)sizeof from) bsp_move(&from, sizeof from);
            CHECK(from == (me + p - 1) % p, "message from %d, expected %d", from, (me + p - 1) % p);
        }
        CHECK(v == sum, "bsp_sumI = %d, expected %d", v, sum);
        CHECK(bsp_sumD(0.5 * me) == dsum, "bsp_sumD");
        CHECK(bsp_sumR((float)me) == (float)(p * (p - 1) / 2), "bsp_sumR");
        CHECK(bsp_productI((me % 3) + 1) == prod, "bsp_productI");
        CHECK(bsp_minI(10 - me) == 10 - (p - 1), "bsp_minI");
        CHECK(bsp_maxD((double)me * 2) == 2.0 * (p - 1), "bsp_maxD");
        CHECK(bsp_minR((float)me) == 0.0f, "bsp_minR");
        CHECK(bsp_sumI_prefix(1) == me + 1, "bsp_sumI_prefix = %d", bsp_sumI_prefix(1));
        CHECK(bsp_maxI_prefix(me % 2 ? -me : me) == (me % 2 ? me - 1 : me), "bsp_maxI_prefix");
        CHECK(bsp_productD_prefix(2.0) == (double)(1 << (me + 1)), "bsp_productD_prefix");
        CHECK(bsp_all(me >= 0) == 1 && bsp_all(me != p - 1) == 0, "bsp_all");
        CHECK(bsp_any(me == p - 1) == 1 && bsp_any(0) == 0, "bsp_any");
        CHECK(bsp_constantI(42) == 1, "bsp_constantI equal");
        CHECK(bsp_constantI(p == 1 ? 42 : me) == (p == 1), "bsp_constantI different");
        CHECK(bsp_sortI(p - me) == me + 1, "bsp_sortI");
        CHECK(bsp_sortC((char)('a' + (p - 1 - me))) == (char)('a' + me), "bsp_sortC");
        {
            int x = me * 10, y = -1;
            bsp_sort(lt_desc, &x, &y, sizeof x);
            CHECK(y == (p - 1 - me) * 10, "bsp_sort descending: %d", y);
        }
        late(round);
        /* fold and scan with a non-commutative op: pid order */
        memset(src, 0, sizeof src);
        src[0] = (char)('0' + me % 10);
        bsp_fold(concat, src, dst, 16);
        digits(want, 0, p - 1);
        CHECK(strcmp(dst, want) == 0, "bsp_fold: \"%s\", expected \"%s\"", dst, want);
        bsp_scan(concat, src, dst, 16);
        digits(want, 0, me);
        CHECK(strcmp(dst, want) == 0, "bsp_scan: \"%s\", expected \"%s\"", dst, want);
        /* bcast, in place too; the root's dst gets its src as well */
        for (k = 0; k < p; k++) {
            int b[4] = {-1, -1, -1, -1}, s[4];
            s[0] = k; s[1] = round; s[2] = 7; s[3] = k * k;
            bsp_bcast(k, s, b, sizeof b);
            CHECK(b[0] == k && b[1] == round && b[3] == k * k, "bsp_bcast from %d", k);
            b[0] = me == k ? 99 + k : -1;
            bsp_broadcast(k, b, sizeof b[0]);
            CHECK(b[0] == 99 + k, "bsp_broadcast from %d: %d", k, b[0]);
        }
        late(round + 1);
        /* gather and scatter through root p-1-round%p */
        {
            int root = (p - 1 + round) % p;
            for (k = 0; k < 4; k++) mine[k] = me * 100 + k;
            for (k = 0; k < 4 * p; k++) gathered[k] = -1;
            bsp_gather(root, mine, gathered, sizeof mine);
            if (me == root)
                for (k = 0; k < 4 * p; k++)
                    CHECK(gathered[k] == (k / 4) * 100 + k % 4, "bsp_gather[%d] = %d", k, gathered[k]);
            else
                CHECK(gathered[0] == -1, "bsp_gather wrote a non-root's dst");
            for (k = 0; k < 4 * p; k++) gathered[k] = me == root ? 1000 + k : -5;
            bsp_scatter(root, gathered, got, sizeof got);
            for (k = 0; k < 4; k++) CHECK(got[k] == 1000 + me * 4 + k, "bsp_scatter[%d] = %d", k, got[k]);
        }
        late(round + 2);
        /* a large fold (grows the scratch): sums of 64 ints elementwise */
        for (k = 0; k < 64; k++) all[k] = me + k;
        {
            int out[64];
            bsp_fold(addv, all, out, (int)sizeof all);
            for (k = 0; k < 64; k++) CHECK(out[k] == p * (p - 1) / 2 + p * k, "large bsp_fold[%d] = %d", k, out[k]);
        }
        bsp_sync();
    }
    printf("level1 ok pid=%d%s\n", me, failures ? " (with failures)" : "");
    bsp_end();
    return failures ? 1 : 0;
}
