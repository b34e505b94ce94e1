/*
 * bench/align -- a copy from program memory at every page offset of the
 * source: BSPk's bspk_put against glibc's memcpy of the same bytes, in the
 * same process.
 *
 *   build/bench/align [--bytes N] [--reps R]      (one process, no launcher needed)
 *
 * For source page offsets 0..4095 (every 8 bytes up to 56 and from 4032,
 * every 512 between): the time of memcpy of N bytes (default 64 KiB) from the
 * source into a page-aligned buffer (the baseline: where a frame starts), and
 * of bspk_put of the same N bytes into a region (its frames page-aligned) --
 * the copy into the staging region at the call; the local store is applied at
 * the bspk_sync, outside the timed part. Prints us per copy (best of R after
 * a warm-up) and bspk_put / memcpy. Where glibc's memcpy takes its slow path
 * (destination 1-31 bytes above the source modulo 4 KiB on AMD Zen 3 / 4 with
 * glibc < 2.39: base/copy.h) the ratio drops far below 1; elsewhere it is
 * about 1 (both are one copy). Exit status 1 if a copied byte is wrong.
 */
#include <bspk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (bspk_init(&argc, &argv) != BSPK_OK) return 1;
    size_t n = 65536;
    int reps = 200;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bytes") && i + 1 < argc) n = strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: align [--bytes N] [--reps R]\n");
            bspk_abort("align: unknown argument %s\n", argv[i]);
        }
    }
    const int me = bspk_pid();  /* (with -n P every process measures; pid 0 prints) */
    unsigned char *raw = aligned_alloc(4096, n + 8192), *plain = aligned_alloc(4096, n + 4096);
    for (size_t i = 0; i < n + 8192; i++) raw[i] = (unsigned char)(i * 131 + 7);
    bspk_ptr region = bspk_malloc(NULL, 0, n, 1);
    if (!raw || !plain || bspk_is_null(region)) bspk_abort("align: out of memory for %zu bytes\n", n);
    if (me == 0) {
        printf("Copies of %zu bytes from program memory (best of %d), us\n\n", n, reps);
        printf("| source page offset | memcpy (glibc) | bspk_put | bspk_put / memcpy |\n|---:|---:|---:|---:|\n");
    }
    int bad = 0;
    for (size_t off = 0; off < 4096; off = off < 56 || off >= 4032 ? off + 8 : off < 3584 ? (off + 512) & ~(size_t)511 : 4032) {
        const unsigned char *src = raw + off;
        double best_m = 1e9, best_b = 1e9;
        for (int r = 0; r < reps + 10; r++) {
            double t0 = now();
            memcpy(plain, src, n);
            double t1 = now();
            if (bspk_put(region, src, n) != BSPK_OK) bspk_abort("align: bspk_put: %s\n", bspk_error_string());
            double t2 = now();
            if (bspk_sync() != BSPK_OK) bspk_abort("align: bspk_sync: %s\n", bspk_error_string());
            if (r >= 10) {
                if (t1 - t0 < best_m) best_m = t1 - t0;
                if (t2 - t1 < best_b) best_b = t2 - t1;
            }
        }
        /* the region holds the source's bytes (frame by frame) */
        size_t done = 0;
        while (done < n) {
            void *base;
            size_t span = bspk_span(bspk_incr(region, (ptrdiff_t)done), &base);
            if (span == 0 || memcmp(base, src + done, span) != 0) {
                bad = 1;
                break;
            }
            done += span;
        }
        if (me == 0) printf("| %#6zx | %.2f | %.2f | %.2f |\n", off, best_m * 1e6, best_b * 1e6, best_b / best_m);
    }
    if (bad) fprintf(stderr, "align: pid %d: the region does not hold the bytes put into it\n", me);
    bspk_free(region);
    bspk_finalize();
    return bad;
}
