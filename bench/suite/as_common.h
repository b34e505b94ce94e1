/*
 * bench/suite/as_common.h -- what the As programs (as_bspk.c, as_mpi.c and
 * as_paired.c) share beyond kernels.h: the test list, the payload of a Total
 * block with its repetition stamps, repetition counts, who sends to whom, the
 * command line and the report of a verification failure.
 */
#ifndef BSPK_BENCH_SUITE_AS_COMMON_H
#define BSPK_BENCH_SUITE_AS_COMMON_H

#include <stdarg.h>

#include "kernels.h"

enum { T_EMPTY, T_COMP, T_FULL, T_SIMPLE, T_SCATTER, T_TOTAL, NTESTS };
static const char *const test_names[NTESTS] = {"Empty", "Comp", "Full", "Simple", "Scatter", "Total"};

#define AS_STAMP 16384L        /* a repetition stamp every 16384 words (64 KiB, the default frame) */
#define AS_FULLCHECK 65536L    /* totals h up to this are verified word by word */
#define AS_HMAX (1L << 20)     /* default largest h of Total (words per process) */
#define AS_HMAX_QUICK (1L << 16)

typedef struct {
    unsigned tests, variants; /* bit sets */
    long hmin, hmax;
    int reps, quick;
} as_opts;

static int as_stamped(long i, long b) { return i % AS_STAMP == 0 || i == b - 1; }
/* The stamped position after i in a block of b words (b or more at the end):
 * for (i = 0; i < b; i = as_next_stamp(i, b)) visits exactly the stamped ones. */
static long as_next_stamp(long i, long b) { return i + AS_STAMP < b - 1 || i == b - 1 ? i + AS_STAMP : b - 1; }

/* Word i of the block of b words sent from `from` to `to` in repetition r. */
static uint32_t as_block_word(int from, int to, long i, long b, long r) {
    return as_stamped(i, b) ? suite_as_word(from, to, r) + (uint32_t)i : suite_as_word(from, to, -1 - i);
}

/* A verification failure of process `me` in repetition `rep`: counted in
 * *bad, the first 20 (*reported) described on stderr as "<prog>: pid P
 * <test>/<variant> h=H rep R: <message>". The programs call it through
 * as_fail(test, variant, h, fmt, ...) below, which names their own AS_PROG,
 * me, as_rep (the repetition about to run), bad_words and bad_reported. */
static void as_fail_at(const char *prog, int me, long rep, long *bad, int *reported, const char *test,
                       const char *variant, long h, const char *fmt, ...) __attribute__((format(printf, 9, 10)));
static void as_fail_at(const char *prog, int me, long rep, long *bad, int *reported, const char *test,
                       const char *variant, long h, const char *fmt, ...) {
    ++*bad;
    if ((*reported)++ >= 20) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: pid %d %s/%s h=%ld rep %ld: ", prog, me, test, variant, h, rep);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
#define as_fail(test, variant, h, ...) \
    as_fail_at(AS_PROG, me, as_rep - 1, &bad_words, &bad_reported, test, variant, h, __VA_ARGS__)

/* Timed repetitions: --reps, else scaled with h (2000 for h <= 64, at least 20;
 * --quick: 200, at least 5). Warm-up: a tenth, 2..100. */
static int as_reps(const as_opts *o, long h) {
    if (o->reps > 0) return o->reps;
    long base = o->quick ? 200 : 2000, lo = o->quick ? 5 : 20;
    long r = base * 64 / (h > 64 ? h : 64);
    return (int)(r < lo ? lo : r > base ? base : r);
}
static int as_warmup(int reps) {
    int w = reps / 10;
    return w < 2 ? 2 : w > 100 ? 100 : w;
}

/* Does process `from` send a block to process `to` in test t? */
static int as_sends(int t, int from, int to, int p) {
    switch (t) {
    case T_FULL: case T_TOTAL: return 1;
    case T_SIMPLE: return from == 0 && to == p - 1;
    case T_SCATTER: return from == 0 && to != 0;
    default: return 0;
    }
}

/* Parse a comma-separated list of names into a bit set; -1 on an unknown name. */
static long as_parse_list(const char *s, const char *const *names, int n, const char *alias, int alias_bit) {
    long set = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int k = -1;
        for (int i = 0; i < n; i++)
            if (!strcmp(tok, names[i])) k = i;
        if (k < 0 && alias && !strcmp(tok, alias)) k = alias_bit;
        if (k < 0) return -1;
        set |= 1L << k;
    }
    return set;
}

/* 0 on success, 1 for --help, -1 on a bad option (message in err). */
static int as_parse(int argc, char **argv, as_opts *o, const char *const *vnames, int nv, const char *alias,
                    int alias_bit, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    o->tests = (1u << NTESTS) - 1;
    o->variants = (1u << nv) - 1;
    long hmax = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long set;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return 1;
        if (!strcmp(a, "--quick")) { o->quick = 1; continue; }
        if (!v) { snprintf(err, errlen, "unknown option or missing value: %s", a); return -1; }
        if (!strcmp(a, "--tests")) {
            if ((set = as_parse_list(v, test_names, NTESTS, NULL, 0)) <= 0) {
                snprintf(err, errlen, "--tests: unknown test in '%s'", v);
                return -1;
            }
            o->tests = (unsigned)set;
        } else if (!strcmp(a, "--variants")) {
            if ((set = as_parse_list(v, vnames, nv, alias, alias_bit)) <= 0) {
                snprintf(err, errlen, "--variants: unknown variant in '%s'", v);
                return -1;
            }
            o->variants = (unsigned)set;
        } else if (!strcmp(a, "--hmin")) o->hmin = atol(v);
        else if (!strcmp(a, "--hmax")) hmax = atol(v);
        else if (!strcmp(a, "--reps")) {
            if ((o->reps = atoi(v)) <= 0) { snprintf(err, errlen, "--reps must be positive"); return -1; }
        } else { snprintf(err, errlen, "unknown option: %s", a); return -1; }
        i++;
    }
    o->hmax = hmax > 0 ? hmax : o->quick ? AS_HMAX_QUICK : AS_HMAX;
    return 0;
}

static const char *as_usage =
    "usage: as_bspk|as_mpi [--tests Empty,Comp,Full,Simple,Scatter,Total] [--variants LIST]\n"
    "                     [--hmin H] [--hmax H] [--reps R] [--quick]\n"
    "  Total runs h = p*2^k words per process with hmin <= h <= hmax (default 2^20, --quick 2^16);\n"
    "  --reps fixes the timed repetitions (default 2000*64/max(h,64) in [20,2000];\n"
    "  --quick: 200*64/max(h,64) in [5,200]). Warm-up: a tenth of the repetitions, 2..100.\n";


#endif /* BSPK_BENCH_SUITE_AS_COMMON_H */
