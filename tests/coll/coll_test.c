/*
 * tests/coll/coll_test.c -- the collectives of bspk_coll.h against sequential
 * results computed locally from the same deterministic inputs.
 *
 *   coll_test [--mode all|quick|skew|state|mismatch-root|mismatch-n|mismatch-op|
 *              mismatch-kind|mismatch-counts|invalid]
 *
 * all: every op and type with reduce/allreduce/scan/exscan (every root for
 * reduce), broadcast/gather/allgather/alltoall/alltoallv with every root, n =
 * 0, 1, small and larger than one frame, contiguous regions and pointers not
 * at element 0, a non-commutative user op (2x2 integer matrix product).
 * Prints "coll_test pid=P p=N: C checks, F failures"; exit 0 iff F == 0.
 * The mismatch modes make one process pass a different argument; every
 * process must return the documented code, after which the job goes on (a
 * correct allreduce is run), and the program exits with status 3 so that
 * the job fails, as a program would.
 */
#include <bspk.h>
#include <bspk_coll.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int me, P;
static long checks, failures;
static size_t frame_elems8; /* elements of 8 bytes in one frame */

#define CHECK(cond, ...)                                     \
  do {                                                       \
    checks++;                                                \
    if (!(cond)) {                                           \
      failures++;                                            \
      if (failures < 20) {                                   \
        fprintf(stderr, "FAIL pid %d line %d: ", me, __LINE__); \
        fprintf(stderr, __VA_ARGS__);                        \
        fprintf(stderr, "\n");                               \
      }                                                      \
    }                                                        \
  } while (0)

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* ---- typed values ---- */
static const size_t tsize[7] = {0, 4, 8, 4, 8, 4, 8};
static const char *tname[7] = {"", "INT32", "INT64", "UINT32", "UINT64", "FLOAT", "DOUBLE"};
static const char *oname[10] = {"", "SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "BAND", "BOR", "BXOR"};

/* Input element i of pid j for (op, type), written at out (tsize bytes). */
static void input(int oper, int type, int j, size_t i, void *out) {
  uint64_t r = mix(((uint64_t)oper << 48) ^ ((uint64_t)type << 40) ^ ((uint64_t)j << 32) ^ i);
  int64_t v;
  if (oper == BSPK_PROD) v = (int64_t)(r % 3) + 1 - (int64_t)((r >> 8) % 2) * 2 * ((r >> 9) % 2 == 0); /* small */
  else if (oper == BSPK_LAND || oper == BSPK_LOR) v = (r % 4) == 0 ? 0 : (int64_t)(r % 3);
  else if (oper == BSPK_SUM) v = (int64_t)(r % 2001) - 1000;
  else v = (int64_t)r;
  switch (type) {
    case 1: { int32_t x = (int32_t)v; if (oper == BSPK_MIN || oper == BSPK_MAX || oper >= BSPK_BAND) x = (int32_t)(uint32_t)r; memcpy(out, &x, 4); break; }
    case 2: { int64_t x = v; if (oper == BSPK_SUM || oper == BSPK_PROD) x = (int64_t)r; memcpy(out, &x, 8); break; }
    case 3: { uint32_t x = (uint32_t)(oper == BSPK_PROD || oper == BSPK_SUM ? r : (uint64_t)v); memcpy(out, &x, 4); break; }
    case 4: { uint64_t x = (uint64_t)v; if (oper == BSPK_SUM || oper == BSPK_PROD) x = r; memcpy(out, &x, 8); break; }
    case 5: { float x; if (oper == BSPK_PROD) x = (r % 3 == 0) ? 0.5f : (r % 3 == 1 ? 1.0f : 2.0f) * ((r >> 5) % 2 ? -1.f : 1.f);
              else if (oper == BSPK_MIN || oper == BSPK_MAX) x = (float)((int64_t)(r % 100001) - 50000) / 8.0f;
              else x = (float)v;
              memcpy(out, &x, 4); break; }
    case 6: { double x; if (oper == BSPK_PROD) x = (r % 3 == 0) ? 0.5 : (r % 3 == 1 ? 1.0 : 2.0) * ((r >> 5) % 2 ? -1. : 1.);
              else if (oper == BSPK_MIN || oper == BSPK_MAX) x = (double)((int64_t)(r % 1000001) - 500000) / 16.0;
              else x = (double)v;
              memcpy(out, &x, 8); break; }
  }
}

#define SEQ_INT(T, U)                                                                 \
  { T x, y; memcpy(&x, acc, sizeof x); memcpy(&y, next, sizeof y);                    \
    switch (oper) {                                                                   \
      case BSPK_SUM: x = (T)((U)x + (U)y); break;                                     \
      case BSPK_PROD: x = (T)((U)x * (U)y); break;                                    \
      case BSPK_MIN: x = y < x ? y : x; break;                                        \
      case BSPK_MAX: x = y > x ? y : x; break;                                        \
      case BSPK_LAND: x = (x && y) ? 1 : 0; break;                                    \
      case BSPK_LOR: x = (x || y) ? 1 : 0; break;                                     \
      case BSPK_BAND: x = x & y; break;                                               \
      case BSPK_BOR: x = x | y; break;                                                \
      case BSPK_BXOR: x = x ^ y; break; }                                             \
    memcpy(acc, &x, sizeof x); }
#define SEQ_FLT(T)                                                                    \
  { T x, y; memcpy(&x, acc, sizeof x); memcpy(&y, next, sizeof y);                    \
    switch (oper) {                                                                   \
      case BSPK_SUM: x = x + y; break;                                                \
      case BSPK_PROD: x = x * y; break;                                               \
      case BSPK_MIN: x = y < x ? y : x; break;                                        \
      case BSPK_MAX: x = y > x ? y : x; break;                                        \
      case BSPK_LAND: x = (x != 0 && y != 0) ? 1 : 0; break;                          \
      case BSPK_LOR: x = (x != 0 || y != 0) ? 1 : 0; break; }                         \
    memcpy(acc, &x, sizeof x); }

static void seq_combine(int oper, int type, void *acc, const void *next) {
  switch (type) {
    case 1: SEQ_INT(int32_t, uint32_t); break;
    case 2: SEQ_INT(int64_t, uint64_t); break;
    case 3: SEQ_INT(uint32_t, uint32_t); break;
    case 4: SEQ_INT(uint64_t, uint64_t); break;
    case 5: SEQ_FLT(float); break;
    case 6: SEQ_FLT(double); break;
  }
}

/* Expected element i: x_0 op ... op x_{upto-1}. LAND / LOR give 1 or 0 even
 * of a single value (bspk_coll.h; the inputs include 2). */
static void expected(int oper, int type, int upto, size_t i, void *out) {
  unsigned char nx[8];
  input(oper, type, 0, i, out);
  if (oper == BSPK_LAND || oper == BSPK_LOR) seq_combine(oper, type, out, out);
  for (int j = 1; j < upto; j++) {
    input(oper, type, j, i, nx);
    seq_combine(oper, type, out, nx);
  }
}

/* ---- regions ---- */
static int alloc_kind; /* cycles: plain from 0, plain at offset 3, contiguous */
static bspk_ptr region_base;

static bspk_ptr alloc_n(size_t n, size_t es) {
  int k = alloc_kind++ % 3;
  if (k == 2) region_base = bspk_malloc_contiguous("", 0, n + 1, es);
  else region_base = bspk_malloc("", 0, n + 3, es);
  if (bspk_is_null(region_base)) { fprintf(stderr, "alloc failed: %s\n", bspk_error_string()); bspk_abort("alloc"); }
  return k == 1 ? bspk_incr(region_base, 3) : region_base;
}
static void free_last(void) { bspk_free(region_base); }

static void *el(bspk_ptr p, size_t i) { return bspk_elemP(bspk_incr(p, (ptrdiff_t)i)); }

static void must(int rc, const char *what) {
  if (rc != BSPK_OK) {
    fprintf(stderr, "pid %d: %s returned %d: %s\n", me, what, rc, bspk_coll_error_string());
    bspk_abort("%s failed", what);
  }
}

/* Whether BSPK_COLL_SHORT is set, and the short limit in force
 * (bspk_coll.h: 4032 bytes unless it is). */
static int short_set(void) {
  const char *e = getenv("BSPK_COLL_SHORT");
  return e && *e;
}
static size_t short_bytes(void) { return short_set() ? (size_t)strtoull(getenv("BSPK_COLL_SHORT"), NULL, 10) : 4032; }
static uint64_t supersteps_now(void) {
  bspk_stats s;
  bspk_get_stats(&s);
  return s.supersteps;
}
/* bspk_coll.h "Cost": on one host (bspk_sync_allgather_shared()) the
 * header superstep is a bspk_sync_allgather that carries data of up to
 * B bytes per process: 8192 for the reductions; for broadcast, gathers and
 * alltoall (all p blocks) 2048 at p <= 2 and 4096 above; capped by
 * BSPK_COLL_SHORT when it is set.
 * A collective whose data fit is that one superstep; any other takes its
 * algorithm's supersteps after it. */
/* Elsewhere (BSPK_COUNT_EXCHANGE set, or across hosts) the same header
 * superstep is ceil(log2 p) supersteps of one message per process where the
 * runtime's own count exchange goes in rounds (bspk_sync_exchange();
 * BSPK_COLL_HEADER=rounds: p >= 2; direct: never), and one direct exchange
 * otherwise. A broadcast in rounds at p <= 8 or of data that fit in them
 * (board_bytes) is those rounds alone, unless it splits (bcast_split). */
static int header_rounds(void) {
  const char *e = getenv("BSPK_COLL_HEADER");
  if (e && !strcmp(e, "direct")) return 0;
  if (e && !strcmp(e, "rounds")) return P >= 2;
  return P >= 2 && !bspk_sync_allgather_shared() && bspk_sync_exchange() == BSPK_EXCHANGE_ROUNDS;
}
static int board(void) { return bspk_sync_allgather_shared() || header_rounds(); }
static uint64_t header_steps(void) {
  uint64_t k = 0;
  if (bspk_sync_allgather_shared()) return 1;
  while ((1 << k) < P) k++;
  return k;
}
static size_t board_bytes(int move) {
  size_t cap = !bspk_sync_allgather_shared() ? (move ? 8192 : 16384) /* in rounds */
               : !move ? 8192 : P <= 2 ? 2048 : 4096;
  return short_set() && short_bytes() < cap ? short_bytes() : cap;
}
static uint64_t after_board(size_t bytes, uint64_t steps, int move) {
  if (!board()) return steps;
  return bytes <= board_bytes(move) ? header_steps() : header_steps() + steps; /* n == 0: the header alone */
}
/* A broadcast in rounds at 4 <= p <= 8 splits (rounds of digests, then
 * scatter + allgather) from p blocks of 256 KiB (of S bytes when
 * BSPK_COLL_SHORT is set). */
static int bcast_split(size_t bytes) {
  size_t block = short_set() ? short_bytes() : (size_t)256 << 10;
  return P >= 4 && P <= 8 && bytes >= (size_t)P * block;
}
/* The supersteps of a broadcast (move), reduction or scan of n elements of
 * es bytes: short 1; long 1 at p <= 2 and 2 at p >= 3 (the headers in the
 * tags of the first data superstep), but a broadcast on one host is direct
 * (1) up to 4 MiB unless BSPK_COLL_SHORT is set; plus the board's. */
static uint64_t rooted_steps(size_t n, size_t es, int move) {
  if (move && header_rounds() && !bspk_sync_allgather_shared() && !bcast_split(n * es) &&
      (P <= 8 || n * es <= board_bytes(1)))
    return header_steps(); /* a broadcast: the rounds carry the data */
  const int direct = n * es <= short_bytes() || P <= 2 ||
                     (move && bspk_sync_allgather_shared() && !short_set() && n * es <= ((size_t)4 << 20));
  return after_board(n * es, direct ? 1 : 2, move);
}
/* The collective started at superstep s0 took `want` supersteps. */
#define CHECK_STEPS(s0, want, fmt, ...)                                                            \
  do {                                                                                              \
    const uint64_t steps_ = supersteps_now() - (s0), want_ = (want);                                \
    CHECK(steps_ == want_, fmt " took %" PRIu64 " supersteps, not %" PRIu64, __VA_ARGS__, steps_, want_); \
  } while (0)

/* ---- reductions ---- */
static void test_reduction(int kind, int oper, int type, size_t n, int root) {
  size_t es = tsize[type];
  bspk_op op = oper | (type << 8);
  bspk_ptr x = alloc_n(n, es);
  for (size_t i = 0; i < n; i++) input(oper, type, me, i, el(x, i));
  const char *name = kind == 0 ? "reduce" : kind == 1 ? "allreduce" : kind == 2 ? "scan" : "exscan";
  const uint64_t s0 = supersteps_now();
  int rc = kind == 0 ? bspk_reduce(root, x, n, op) : kind == 1 ? bspk_allreduce(x, n, op)
           : kind == 2 ? bspk_scan(x, n, op) : bspk_exscan(x, n, op);
  must(rc, name);
  CHECK_STEPS(s0, rooted_steps(n, es, 0), "%s n=%zu es=%zu", name, n, es);
  int upto = kind == 2 ? me + 1 : kind == 3 ? me : P;
  int changed = kind == 1 || kind == 2 || (kind == 0 && me == root) || (kind == 3 && me > 0);
  unsigned char want[8];
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++) {
    if (changed) expected(oper, type, upto, i, want);
    else input(oper, type, me, i, want);
    if (memcmp(want, el(x, i), es) != 0) { if (!bad) first = i; bad++; }
  }
  CHECK(bad == 0, "%s %s|%s n=%zu root=%d: %zu wrong elements, first %zu", name, oname[oper], tname[type], n, root, bad, first);
  free_last();
}

/* ---- non-commutative user op: 2x2 matrices of uint64 (mod 2^64) ---- */
typedef struct { uint64_t a, b, c, d; } mat;
static void matmul(void *acc, const void *next, size_t n) {
  mat *x = (mat *)acc;
  const mat *y = (const mat *)next;
  for (size_t i = 0; i < n; i++) {
    mat r = {x[i].a * y[i].a + x[i].b * y[i].c, x[i].a * y[i].b + x[i].b * y[i].d,
             x[i].c * y[i].a + x[i].d * y[i].c, x[i].c * y[i].b + x[i].d * y[i].d};
    x[i] = r;
  }
}
static mat mat_in(int j, size_t i) {
  uint64_t r = mix((uint64_t)j * 1000003u + i);
  mat m = {r % 7 + 1, (r >> 8) % 5, (r >> 16) % 3, (r >> 24) % 7 + 2};
  return m;
}
static void test_user(int kind, size_t n, int root) {
  bspk_op op = bspk_op_create(matmul, sizeof(mat), 0);
  CHECK(op > 0, "bspk_op_create: %d", op);
  bspk_ptr x = alloc_n(n, sizeof(mat));
  for (size_t i = 0; i < n; i++) { mat m = mat_in(me, i); memcpy(el(x, i), &m, sizeof m); }
  int rc = kind == 0 ? bspk_reduce(root, x, n, op) : kind == 1 ? bspk_allreduce(x, n, op)
           : kind == 2 ? bspk_scan(x, n, op) : bspk_exscan(x, n, op);
  must(rc, "user op collective");
  int upto = kind == 2 ? me + 1 : kind == 3 ? me : P;
  int changed = kind == 1 || kind == 2 || (kind == 0 && me == root) || (kind == 3 && me > 0);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    mat want = mat_in(changed ? 0 : me, i);
    if (changed)
      for (int j = 1; j < upto; j++) { mat y = mat_in(j, i); matmul(&want, &y, 1); }
    if (memcmp(&want, el(x, i), sizeof want) != 0) bad++;
  }
  CHECK(bad == 0, "user op (matrix product) kind %d n=%zu root=%d: %zu wrong", kind, n, root, bad);
  free_last();
  CHECK(bspk_op_free(op) == BSPK_OK, "bspk_op_free");
}

/* ---- data movement: element value = f(pid, index), es bytes ---- */
static void fill(void *p, size_t es, int j, size_t i, int tag) {
  uint64_t r = mix(((uint64_t)tag << 40) ^ ((uint64_t)j << 32) ^ i);
  unsigned char *b = (unsigned char *)p;
  for (size_t k = 0; k < es; k++) b[k] = (unsigned char)(r >> ((k % 8) * 8)) ^ (unsigned char)k;
}
static int same(const void *p, size_t es, int j, size_t i, int tag) {
  unsigned char w[64];
  fill(w, es, j, i, tag);
  return memcmp(w, p, es) == 0;
}

static void test_broadcast(size_t n, size_t es, int root) {
  bspk_ptr x = alloc_n(n, es);
  for (size_t i = 0; i < n; i++) fill(el(x, i), es, me, i, 1);
  const uint64_t s0 = supersteps_now();
  must(bspk_broadcast(root, x, n), "bspk_broadcast");
  CHECK_STEPS(s0, rooted_steps(n, es, 1), "broadcast n=%zu es=%zu root=%d", n, es, root);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += !same(el(x, i), es, root, i, 1);
  CHECK(bad == 0, "broadcast n=%zu es=%zu root=%d: %zu wrong", n, es, root, bad);
  free_last();
}

static void test_gather(int all, size_t n, size_t es, int root) {
  bspk_ptr src = alloc_n(n, es);
  bspk_ptr sbase = region_base;
  for (size_t i = 0; i < n; i++) fill(el(src, i), es, me, i, 2);
  bspk_ptr dst = BSPK_NULL;
  if (all || me == root) dst = alloc_n((size_t)P * n, es);
  const uint64_t s0 = supersteps_now();
  int rc = all ? bspk_allgather(dst, src, n) : bspk_gather(root, dst, src, n);
  must(rc, all ? "bspk_allgather" : "bspk_gather");
  /* bspk_coll.h: 1 superstep, short or long (long: headers in the tags), plus the board's */
  CHECK_STEPS(s0, after_board(n * es, 1, 1), "%s n=%zu es=%zu", all ? "allgather" : "gather", n, es);
  size_t bad = 0;
  if (all || me == root)
    for (int j = 0; j < P; j++)
      for (size_t i = 0; i < n; i++) bad += !same(el(dst, (size_t)j * n + i), es, j, i, 2);
  for (size_t i = 0; i < n; i++) bad += !same(el(src, i), es, me, i, 2);
  CHECK(bad == 0, "%s n=%zu es=%zu root=%d: %zu wrong", all ? "allgather" : "gather", n, es, root, bad);
  if (all || me == root) free_last();
  bspk_free(sbase);
}

static void test_alltoall(size_t n, size_t es) {
  bspk_ptr src = alloc_n((size_t)P * n, es);
  bspk_ptr sbase = region_base;
  for (int j = 0; j < P; j++)
    for (size_t i = 0; i < n; i++) fill(el(src, (size_t)j * n + i), es, me * 1000 + j, i, 3);
  bspk_ptr dst = alloc_n((size_t)P * n, es);
  const uint64_t s0 = supersteps_now();
  must(bspk_alltoall(dst, src, n), "bspk_alltoall");
  CHECK_STEPS(s0, after_board((size_t)P * n * es, 1, 1), "alltoall n=%zu es=%zu", n, es);
  size_t bad = 0;
  for (int j = 0; j < P; j++)
    for (size_t i = 0; i < n; i++) bad += !same(el(dst, (size_t)j * n + i), es, j * 1000 + me, i, 3);
  CHECK(bad == 0, "alltoall n=%zu es=%zu: %zu wrong", n, es, bad);
  free_last();
  bspk_free(sbase);
}

/* counts: pid a sends cnt(a, b) elements to pid b */
static size_t cnt(int a, int b, size_t big) {
  uint64_t r = mix((uint64_t)a * 131 + (uint64_t)b);
  switch (r % 4) {
    case 0: return 0;
    case 1: return 1 + r % 5;
    case 2: return 17;
    default: return big;
  }
}
static void test_alltoallv(size_t big, size_t es) {
  size_t sc[64], sd[64], rc_[64], rd[64], stot = 0, rtot = 0;
  for (int j = 0; j < P; j++) {
    sc[j] = cnt(me, j, big);
    rc_[j] = cnt(j, me, big);
  }
  /* displacements in reverse pid order with gaps of 2 */
  for (int j = P - 1; j >= 0; j--) { sd[j] = stot; stot += sc[j] + 2; rd[j] = rtot; rtot += rc_[j] + 2; }
  bspk_ptr src = alloc_n(stot, es);
  bspk_ptr sbase = region_base;
  for (int j = 0; j < P; j++)
    for (size_t i = 0; i < sc[j]; i++) fill(el(src, sd[j] + i), es, me * 1000 + j, i, 4);
  bspk_ptr dst = alloc_n(rtot, es);
  const uint64_t s0 = supersteps_now();
  must(bspk_alltoallv(dst, rc_, rd, src, sc, sd), "bspk_alltoallv");
  CHECK_STEPS(s0, board() ? header_steps() + 2 : 2, "alltoallv big=%zu es=%zu", big, es);
  size_t bad = 0;
  for (int j = 0; j < P; j++)
    for (size_t i = 0; i < rc_[j]; i++) bad += !same(el(dst, rd[j] + i), es, j * 1000 + me, i, 4);
  CHECK(bad == 0, "alltoallv big=%zu es=%zu: %zu wrong", big, es, bad);
  free_last();
  bspk_free(sbase);
}

static void run_all(int quick) {
  size_t big8 = frame_elems8 + 37; /* 8-byte elements: more than one frame */
  for (int type = 1; type <= 6; type++)
    for (int oper = 1; oper <= 9; oper++) {
      if (oper >= BSPK_BAND && type >= 5) continue;
      size_t big = big8 * 8 / tsize[type];
      size_t sizes[4] = {0, 1, 7, big};
      for (int s = 0; s < 4; s++) {
        size_t n = sizes[s];
        if (quick && s == 3 && !(oper == BSPK_SUM || oper == BSPK_MAX)) continue;
        if (s == 3 && !(type == 2 || type == 6 || oper == BSPK_SUM)) continue; /* big: a subset */
        for (int kind = 0; kind < 4; kind++) {
          if (kind == 0) {
            for (int root = 0; root < P; root++)
              if (s == 2 || root == (int)(n % (size_t)P)) test_reduction(0, oper, type, n, root);
          } else {
            test_reduction(kind, oper, type, n, 0);
          }
        }
      }
    }
  size_t msizes[3] = {1, 5, frame_elems8 / 4 + 3};
  for (int s = 0; s < 3; s++)
    for (int kind = 0; kind < 4; kind++) test_user(kind, msizes[s], (s + kind) % P);
  size_t es_list[3] = {8, 12, 1};
  for (int e = 0; e < 3; e++) {
    size_t es = es_list[e];
    size_t bigd = frame_elems8 * 8 / es + 11;
    size_t sizes[4] = {0, 1, 9, bigd};
    for (int s = 0; s < 4; s++) {
      for (int root = 0; root < P; root++) {
        if (s == 3 && root > 1 && quick) continue;
        test_broadcast(sizes[s], es, root);
        test_gather(0, sizes[s], es, root);
      }
      test_gather(1, sizes[s], es, 0);
      test_alltoall(sizes[s], es);
    }
    test_alltoallv(bigd, es);
    test_alltoallv(3, es);
  }
}

/* A process delayed before each call, one racing ahead. */
static void run_skew(void) {
  for (int round = 0; round < 6; round++) {
    if (me == 0) usleep(150000);
    test_reduction(1, BSPK_SUM, 6, 1000, 0);
    if (me == P - 1) usleep(100000);
    test_broadcast(frame_elems8 + 5, 8, round % P);
    test_reduction(2, BSPK_SUM, 2, 3, 0);
    test_alltoall(100, 8);
    /* long data (headers in the tags) with pid 0 late and the others early */
    if (me == 0) usleep(50000);
    test_alltoall(600, 8);
    test_gather(round & 1, 600, 8, (round + 1) % P);
    test_reduction(3, BSPK_SUM, 6, 1000, 0);
  }
}

static void run_state(void) {
  bspk_ptr x = bspk_malloc("", 0, 4, 8);
  memset(el(x, 0), 0, 8);
  must(bspk_send(me, x, 1), "bspk_send");
  int rc = bspk_allreduce(x, 4, BSPK_SUM | BSPK_INT64);
  CHECK(rc == BSPK_ERR_STATE, "allreduce after a send: %d, expected BSPK_ERR_STATE", rc);
  CHECK(strstr(bspk_coll_error_string(), "bspk_allreduce (pid ") != NULL, "message: %s", bspk_coll_error_string());
  must(bspk_sync(), "bspk_sync");
  CHECK(bspk_expect(0) == BSPK_OK, "bspk_expect");
  rc = bspk_broadcast(0, x, 4);
  CHECK(rc == BSPK_ERR_STATE, "broadcast after bspk_expect: %d, expected BSPK_ERR_STATE", rc);
  must(bspk_sync(), "bspk_sync");
  /* unread messages are discarded by the collective's first sync */
  must(bspk_send_buf((me + 1) % P, "x", 1), "bspk_send_buf");
  must(bspk_sync(), "bspk_sync");
  test_reduction(1, BSPK_SUM, 2, 9, 0);
  CHECK(bspk_is_null(bspk_recv()), "inbox empty after a collective");
  bspk_free(x);
  if (me == 0) printf("state checks done\n");
}

/* A collective on all but the last pid, a plain bspk_sync on the last: an
 * error of the superstep (the job ends), whose messages name the user's
 * calls: the collective and its superstep once, not the sync layer's own
 * call with a second superstep number. */
static int run_coll_vs_sync(void) {
  bspk_ptr x = bspk_malloc("", 0, 16, 8);
  for (int i = 0; i < 16; i++) *(int64_t *)el(x, (size_t)i) = me;
  int rc = me == P - 1 ? bspk_sync() : bspk_allreduce(x, 4, BSPK_SUM | BSPK_INT64);
  printf("pid %d: coll-vs-sync rc is BSPK_ERR_MODE=%d: %s\n", me, rc == BSPK_ERR_MODE,
         me == P - 1 ? bspk_error_string() : bspk_coll_error_string());
  fflush(stdout);
  sleep(1); /* every process prints before the first exit ends the job */
  return 1;
}

/* The same with the collective's callers late: the last pid's count (its
 * counted sync) reaches pid 0 (its parent in the count tree,
 * BSPK_COUNT_EXCHANGE=tree) before pid 0's collective's header bspk_expect,
 * which finds the mix itself. That error is [over] like bspk_sync's, so
 * pid 0's bspk_finalize leaves at once and its exit ends the job: nobody
 * waits BSPK_SYNC_TIMEOUT. The last pid runs ahead through 32 declared
 * empty supersteps (BSPK_MAX_AHEAD=64 lets it) into its counted one while
 * the others sleep; their own 32 then look for arrivals (a declared
 * bspk_sync does at least every 16th time), so the count is there before
 * the collective starts. */
static int run_coll_vs_sync_late(void) {
  if (me != P - 1) sleep(2);
  for (int i = 0; i < 32; i++) {
    int rc = bspk_expect(0);
    if (rc == BSPK_OK) rc = bspk_sync();
    if (rc != BSPK_OK) {
      printf("pid %d: declared superstep %d failed: %s\n", me, i, bspk_error_string());
      return 1;
    }
  }
  return run_coll_vs_sync();
}

/* Mismatches: the last pid passes something else. */
static int run_mismatch(const char *what) {
  int odd = me == P - 1;
  bspk_ptr x = bspk_malloc("", 0, 16, 8), y = bspk_malloc("", 0, 16 * (size_t)P, 8), z = bspk_malloc("", 0, 1024, 8);
  for (int i = 0; i < 16; i++) *(int64_t *)el(x, (size_t)i) = me;
  for (int i = 0; i < 1024; i++) *(int64_t *)el(z, (size_t)i) = me;
  int rc, want = BSPK_ERR_ARG;
  if (!strcmp(what, "root")) rc = bspk_broadcast(odd ? 1 : 0, x, 4);
  else if (!strcmp(what, "n")) rc = bspk_allreduce(x, odd ? 5 : 4, BSPK_SUM | BSPK_INT64);
  else if (!strcmp(what, "op")) rc = bspk_reduce(0, x, 4, odd ? (BSPK_MAX | BSPK_INT64) : (BSPK_SUM | BSPK_INT64));
  else if (!strcmp(what, "kind")) rc = odd ? bspk_reduce(0, x, 4, BSPK_SUM | BSPK_INT64) : bspk_allreduce(x, 4, BSPK_SUM | BSPK_INT64);
  else if (!strcmp(what, "root-long")) rc = bspk_gather(odd ? 1 : 0, y, x, 16);
  /* a broadcast (8 KiB from the odd process, its data messages going out)
   * against the others' allreduce */
  else if (!strcmp(what, "kind-bcast")) rc = odd ? bspk_broadcast(P - 1, z, 1024) : bspk_allreduce(x, 4, BSPK_SUM | BSPK_INT64);
  /* long broadcasts (8 KiB): the headers ride in the data messages' tags */
  else if (!strcmp(what, "bcast-root-long")) rc = bspk_broadcast(odd ? 1 : 0, z, 1024);
  else if (!strcmp(what, "gather-root-long")) {
    bspk_ptr w = bspk_malloc("", 0, 1024 * (size_t)P, 8);
    rc = bspk_gather(odd ? 1 : 0, w, z, 1024);
    bspk_free(w);
  } else if (!strcmp(what, "bcast-n-mixed")) rc = bspk_broadcast(0, z, odd ? 4 : 1024); /* short against long */
  else if (!strcmp(what, "bcast-limit")) {
    /* the same arguments, but the odd process's short limit (read at its
     * first collective) makes it take scatter + allgather, while the others
     * broadcast 8 KiB directly (one host: direct up to 4 MiB) */
    if (odd) setenv("BSPK_COLL_SHORT", "4096", 1);
    rc = bspk_broadcast(0, z, 1024);
  }
  else if (!strcmp(what, "invalid")) { rc = bspk_allreduce(x, 4, odd ? BSPK_SUM : (BSPK_SUM | BSPK_INT64)); }
  else if (!strcmp(what, "counts")) {
    size_t sc[64], sd[64], rcv[64], rd[64];
    for (int j = 0; j < P; j++) { sc[j] = rcv[j] = 1; sd[j] = rd[j] = (size_t)j; }
    if (odd) sc[0] = 2; /* pid P-1 sends 2 to pid 0, which expects 1 */
    rc = bspk_alltoallv(y, rcv, rd, x, sc, sd);
    want = (me == 0 || odd) ? BSPK_ERR_ARG : BSPK_OK;
  } else { fprintf(stderr, "unknown mismatch %s\n", what); return 2; }
  CHECK(rc == want, "mismatch %s: rc %d, expected %d (%s)", what, rc, want, bspk_coll_error_string());
  /* nothing was written: z still holds this process's own values */
  int written = 0;
  for (int i = 0; i < 1024; i++) written += *(int64_t *)el(z, (size_t)i) != me;
  CHECK(written == 0, "mismatch %s wrote into %d elements of z", what, written);
  /* the job goes on: all processes are in step */
  for (int i = 0; i < 16; i++) *(int64_t *)el(x, (size_t)i) = me;
  must(bspk_allreduce(x, 16, BSPK_SUM | BSPK_INT64), "bspk_allreduce after the mismatch");
  CHECK(*(int64_t *)el(x, 3) == (int64_t)P * (P - 1) / 2, "allreduce after the mismatch");
  printf("pid %d: mismatch %s gave rc %d as expected=%d, job went on\n", me, what, rc, rc == want);
  bspk_free(x);
  bspk_free(y);
  bspk_free(z);
  return failures ? 1 : 3;
}

int main(int argc, char **argv) {
  const char *mode = "all";
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--mode") && i + 1 < argc) mode = argv[++i];
  if (bspk_init(&argc, &argv) != BSPK_OK) return 2;
  me = bspk_pid();
  P = bspk_nprocs();
  bspk_stats st;
  bspk_get_stats(&st);
  frame_elems8 = st.frame_size / 8;
  int status = 0;
  { /* bspk_sync_exchange (bspk.h), which the header superstep follows */
    const char *ce = getenv("BSPK_COUNT_EXCHANGE");
    const int x = bspk_sync_exchange();
    if (bspk_sync_allgather_shared()) CHECK(x == BSPK_EXCHANGE_BOARD, "bspk_sync_exchange %d with the board", x);
    else if (ce && !strcmp(ce, "direct")) CHECK(x == BSPK_EXCHANGE_DIRECT, "bspk_sync_exchange %d, direct set", x);
    else if (ce && (!strcmp(ce, "tree") || !strcmp(ce, "halving")))
      CHECK(x == BSPK_EXCHANGE_ROUNDS, "bspk_sync_exchange %d, %s set", x, ce);
    else CHECK(x == BSPK_EXCHANGE_DIRECT || x == BSPK_EXCHANGE_ROUNDS, "bspk_sync_exchange %d", x);
  }
  if (!strcmp(mode, "all")) run_all(0);
  else if (!strcmp(mode, "quick")) run_all(1);
  else if (!strcmp(mode, "skew")) run_skew();
  else if (!strcmp(mode, "state")) run_state();
  else if (!strcmp(mode, "coll-vs-sync")) status = run_coll_vs_sync();
  else if (!strcmp(mode, "coll-vs-sync-late")) status = run_coll_vs_sync_late();
  else if (!strncmp(mode, "mismatch-", 9)) status = run_mismatch(mode + 9);
  else { fprintf(stderr, "unknown mode %s\n", mode); return 2; }
  printf("coll_test pid=%d p=%d: %ld checks, %ld failures\n", me, P, checks, failures);
  fflush(stdout);
  if (bspk_finalize() != BSPK_OK) return 1;
  if (status) return status;
  return failures ? 1 : 0;
}
