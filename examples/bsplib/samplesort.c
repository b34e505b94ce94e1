/*
 * samplesort.c -- sample sort of random longs with BSMP (BSPlib).
 *
 *     samplesort [n]        (default n = 30011)
 *
 * n keys in all; process s generates n/p of them (one more when s < n mod p)
 * from a generator seeded with s. Half the keys come from a small range, so
 * there are many duplicates (ties with the splitters), half from the whole
 * range of long.
 *   1. Local sort; p regular samples per process go to pid 0 by bsp_send
 *      (tag: the source pid; a process without keys sends a 0-byte message).
 *   2. Pid 0 sorts the samples, picks p-1 splitters and puts them on every
 *      process. The tag size grows to two ints (source pid, key count).
 *   3. Every process sends each run of its sorted keys to the run's bucket
 *      owner with bsp_send, in chunks of at most CHUNK keys.
 *   4. The receiver checks bsp_qsize against the tags, takes the messages
 *      alternately with bsp_get_tag + bsp_move and with bsp_hpmove, and sorts.
 *   5. Count, min, max, sum and xor of every bucket are put on every process.
 * Checks on every process: the buckets are in global order (the max of each
 * non-empty bucket <= the min of the next non-empty one), the count is n and
 * the sum and xor match the sequential data; and each process compares its
 * bucket element by element with the sequentially sorted keys.
 */
#include <bsp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 1000

typedef struct { unsigned long x; } rng_t;

static unsigned long rng_next(rng_t *r) { /* xorshift64* */
  r->x ^= r->x >> 12;
  r->x ^= r->x << 25;
  r->x ^= r->x >> 27;
  return r->x * 2685821657736338717UL;
}

static long nkeys(long n, bsp_pid_t p, bsp_pid_t s) { return n / p + (s < n % p ? 1 : 0); }

/* The keys of process s, in generation order. */
static void gen_keys(long *k, long m, bsp_pid_t s) {
  rng_t r = {0x9E3779B97F4A7C15UL ^ ((unsigned long)s * 1000003UL + 1)};
  for (long i = 0; i < m; i++) {
    unsigned long v = rng_next(&r);
    if (v & 1)
      k[i] = (long)((v >> 1) % 2001) - 1000; /* small range: duplicates */
    else {
      long w;
      memcpy(&w, &v, sizeof w); /* the whole range of long, negatives too */
      k[i] = w;
    }
  }
}

static int cmp_long(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

/* Per-bucket statistics, put on every process. */
typedef struct { long count, min, max; unsigned long sum, xr; } stats_t;

int main(int argc, char **argv) {
  bsp_begin(bsp_nprocs());
  bsp_pid_t p = bsp_nprocs(), s = bsp_pid();
  long n = argc > 1 ? atol(argv[1]) : 30011;
  if (n < 0) bsp_abort("samplesort: pid %d: bad n %ld\n", s, n);

  long nl = nkeys(n, p, s);
  long *key = malloc((size_t)(nl > 0 ? nl : 1) * sizeof *key);
  long *split = malloc((size_t)(p > 1 ? p - 1 : 1) * sizeof *split);
  stats_t *st = malloc((size_t)p * sizeof *st);
  if (!key || !split || !st) bsp_abort("samplesort: pid %d: out of memory\n", s);
  gen_keys(key, nl, s);

  /* Superstep 0: registrations; tag size: one int (the source pid). */
  bsp_push_reg(split, (bsp_size_t)((p - 1) * (long)sizeof(long)));
  bsp_push_reg(st, p * (bsp_size_t)sizeof(stats_t));
  bsp_size_t ts = sizeof(int);
  bsp_set_tagsize(&ts);
  if (ts != 0) bsp_abort("samplesort: pid %d: bsp_set_tagsize: previous tag size %d, expected 0 (default)\n", s, ts);
  qsort(key, (size_t)nl, sizeof *key, cmp_long);
  bsp_sync();

  /* Superstep 1: regular samples to pid 0. */
  {
    long *smp = malloc((size_t)p * sizeof *smp);
    int ns = nl > 0 ? p : 0;
    for (int j = 0; j < ns; j++) smp[j] = key[(long)j * nl / p];
    int tag = s;
    bsp_send(0, &tag, smp, ns * (bsp_size_t)sizeof(long));
    free(smp);
  }
  bsp_sync();

  /* Superstep 2: pid 0 picks the splitters and puts them everywhere; the tag
   * size becomes two ints. */
  if (s == 0) {
    bsp_nprocs_t nm;
    bsp_size_t nb;
    bsp_qsize(&nm, &nb);
    if (nm != p) bsp_abort("samplesort: pid 0: bsp_qsize: %d sample messages, expected %d\n", nm, p);
    long *all = malloc((size_t)(nb > 0 ? nb : 1));
    long ns = 0;
    int seen[4096] = {0};
    for (bsp_nprocs_t m = 0; m < nm; m++) {
      bsp_size_t len;
      int tag = -1;
      bsp_get_tag(&len, &tag);
      if (tag < 0 || tag >= p || seen[tag]++)
        bsp_abort("samplesort: pid 0: sample message %d has tag %d (source pids 0..%d, each once)\n", m, tag, p - 1);
      long want = nkeys(n, p, tag) > 0 ? p : 0;
      if (len != want * (long)sizeof(long))
        bsp_abort("samplesort: pid 0: samples of pid %d: %d bytes, expected %ld\n", tag, len, want * (long)sizeof(long));
      bsp_move(&all[ns], len);
      ns += want;
    }
    if (ns * (long)sizeof(long) != nb) bsp_abort("samplesort: pid 0: bsp_qsize said %d bytes, moved %ld\n", nb, ns * 8);
    qsort(all, (size_t)ns, sizeof *all, cmp_long);
    for (bsp_pid_t j = 1; j < p; j++) split[j - 1] = ns > 0 ? all[(long)j * ns / p] : 0;
    for (bsp_pid_t t = 0; t < p; t++) bsp_put(t, split, split, 0, (p - 1) * (bsp_size_t)sizeof(long));
    free(all);
  }
  ts = 2 * sizeof(int);
  bsp_set_tagsize(&ts);
  if (ts != sizeof(int))
    bsp_abort("samplesort: pid %d: bsp_set_tagsize: previous tag size %d, expected %d\n", s, ts, (int)sizeof(int));
  bsp_sync();

  /* Superstep 3: bucket t gets the keys x with split[t-1] < x <= split[t]. */
  {
    long i = 0;
    for (bsp_pid_t t = 0; t < p; t++) {
      long end = i;
      while (end < nl && (t == p - 1 || key[end] <= split[t])) end++;
      for (long c = i; c < end; c += CHUNK) {
        int tag[2] = {s, (int)(end - c < CHUNK ? end - c : CHUNK)};
        bsp_send(t, tag, &key[c], tag[1] * (bsp_size_t)sizeof(long));
      }
      i = end;
    }
    if (i != nl) bsp_abort("samplesort: pid %d: %ld of %ld keys in no bucket\n", s, nl - i, nl);
  }
  bsp_sync();

  /* Superstep 4: receive the bucket, sort it, put its statistics everywhere. */
  bsp_nprocs_t nm;
  bsp_size_t nb;
  bsp_qsize(&nm, &nb);
  long cnt = nb / (long)sizeof(long);
  long *bucket = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *bucket);
  if (!bucket) bsp_abort("samplesort: pid %d: out of memory\n", s);
  long got = 0;
  for (bsp_nprocs_t m = 0; m < nm; m++) {
    int tag[2] = {-1, -1};
    bsp_size_t len;
    if (m % 2 == 0) {
      bsp_get_tag(&len, tag);
      if (len < 0) bsp_abort("samplesort: pid %d: bsp_get_tag: queue empty at message %d of %d\n", s, m, nm);
      if (tag[0] < 0 || tag[0] >= p || len != tag[1] * (long)sizeof(long) || got + tag[1] > cnt)
        bsp_abort("samplesort: pid %d: message %d: tag (%d, %d), %d bytes\n", s, m, tag[0], tag[1], len);
      bsp_move(&bucket[got], len);
    } else {
      void *tp, *pp;
      len = bsp_hpmove(&tp, &pp);
      if (len < 0) bsp_abort("samplesort: pid %d: bsp_hpmove: queue empty at message %d of %d\n", s, m, nm);
      memcpy(tag, tp, sizeof tag);
      if (tag[0] < 0 || tag[0] >= p || len != tag[1] * (long)sizeof(long) || got + tag[1] > cnt)
        bsp_abort("samplesort: pid %d: message %d: tag (%d, %d), %d bytes\n", s, m, tag[0], tag[1], len);
      const long *pl = pp; /* the layer promises storage aligned for any type */
      for (int j = 0; j < tag[1]; j++) bucket[got + j] = pl[j];
    }
    got += tag[1];
  }
  if (got != cnt) bsp_abort("samplesort: pid %d: bsp_qsize said %ld keys, received %ld\n", s, cnt, got);
  {
    bsp_nprocs_t left;
    bsp_size_t lb, st0 = 7;
    int dummy[2];
    void *tp, *pp;
    bsp_qsize(&left, &lb);
    bsp_get_tag(&st0, dummy);
    if (left != 0 || lb != 0 || st0 != -1 || bsp_hpmove(&tp, &pp) != -1)
      bsp_abort("samplesort: pid %d: queue not empty after %d messages: qsize %d/%d, get_tag %d\n", s, nm, left, lb,
                st0);
  }
  qsort(bucket, (size_t)cnt, sizeof *bucket, cmp_long);
  stats_t me = {cnt, cnt > 0 ? bucket[0] : 0, cnt > 0 ? bucket[cnt - 1] : 0, 0, 0};
  for (long i = 0; i < cnt; i++) {
    me.sum += (unsigned long)bucket[i];
    me.xr ^= (unsigned long)bucket[i];
  }
  for (bsp_pid_t t = 0; t < p; t++) bsp_put(t, &me, st, s * (bsp_size_t)sizeof(stats_t), sizeof(stats_t));
  bsp_sync();

  /* Checks. */
  long total = 0, before = 0, have_prev = 0, prev_max = 0;
  unsigned long sum = 0, xr = 0;
  for (bsp_pid_t t = 0; t < p; t++) {
    if (t < s) before += st[t].count;
    total += st[t].count;
    sum += st[t].sum;
    xr ^= st[t].xr;
    if (st[t].count > 0) {
      if (have_prev && prev_max > st[t].min)
        bsp_abort("samplesort: pid %d: out of order: a bucket before pid %d ends with %ld, pid %d starts with %ld\n",
                  s, t, prev_max, t, st[t].min);
      have_prev = 1;
      prev_max = st[t].max;
    }
  }
  long *seq = malloc((size_t)(n > 0 ? n : 1) * sizeof *seq);
  if (!seq) bsp_abort("samplesort: pid %d: out of memory\n", s);
  unsigned long ssum = 0, sxr = 0;
  for (bsp_pid_t t = 0, at = 0; t < p; at += nkeys(n, p, t), t++) gen_keys(&seq[at], nkeys(n, p, t), t);
  for (long i = 0; i < n; i++) {
    ssum += (unsigned long)seq[i];
    sxr ^= (unsigned long)seq[i];
  }
  if (total != n) bsp_abort("samplesort: pid %d: %ld keys after sorting, %ld before\n", s, total, n);
  if (sum != ssum || xr != sxr)
    bsp_abort("samplesort: pid %d: checksum sum %lx xor %lx, sequential sum %lx xor %lx\n", s, sum, xr, ssum, sxr);
  qsort(seq, (size_t)n, sizeof *seq, cmp_long);
  for (long i = 0; i < cnt; i++)
    if (bucket[i] != seq[before + i])
      bsp_abort("samplesort: pid %d: sorted position %ld holds %ld, sequential sort %ld\n", s, before + i, bucket[i],
                seq[before + i]);

  bsp_pop_reg(st);
  bsp_pop_reg(split);
  bsp_sync();
  if (s == 0) {
    long mx = 0;
    for (bsp_pid_t t = 0; t < p; t++) mx = st[t].count > mx ? st[t].count : mx;
    printf("samplesort ok n=%ld p=%d largest bucket=%ld sum=%lx xor=%lx\n", n, p, mx, sum, xr);
  }
  free(seq);
  free(bucket);
  free(st);
  free(split);
  free(key);
  bsp_end();
  return 0;
}
