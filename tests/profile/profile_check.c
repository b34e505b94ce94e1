/* tests/profile/profile_check.c -- BSPK_PROFILE writes the right rows (issue 14).
 *
 * Run under bspkrun with BSPK_PROFILE=FILE and FILE as the argument. Five
 * supersteps with known traffic, each process sending to its right neighbour
 * (next = pid + 1 mod p), pid 1 late in the first:
 *   0 counted    a message of 2 (pid + 1) doubles; pid 1 computes 50 ms first
 *   1 expect     a message of 3 doubles
 *   2 counted    a store of 5 doubles into next's region "g"
 *   3 will_send  a fetch of 7 doubles from next's "g"
 *   4 counted    bspk_send_buf of 8 MiB (copied into frames inside the call)
 *   5 finalize   nothing
 * (at p = 1 the store and the fetch are local copies, which move no data
 * between processes and count as neither, and every message goes to oneself:
 * remote_out counts none of them, self_bytes all of their bytes)
 * After bspk_finalize, pid 0 reads FILE and checks every process's row of
 * every superstep: mode, message and byte counts in both directions, the
 * operations issued to other processes and the bytes sent to oneself, end times in order, one host, the
 * late process's w covering its 50 ms, no process leaving superstep 0 before
 * pid 1 entered its sync (common clock), issue_s > 0 exactly in the
 * supersteps with communication calls, w + issue_s <= wall, and (p <= 3, no
 * oversubscription) the 8 MiB copy of superstep 4 in issue_s, not in w, and
 * comem_bytes covering the regions held and superstep 4's 8 MiB message;
 * cpus at least 1 on every row, and cpu_s filled exactly when the host runs
 * more processes than it has CPUs, then at most w + issue_s, a sleep not in it (pid 1's
 * 50 ms) and a computation in it (pid 2 runs 20 ms of CPU time in superstep 1).
 * Exit status 0 when every check holds; each failure is printed. */
#include <bspk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "profile_check: %s:%d: %s\n", __FILE__, __LINE__, #c); exit(1); } } while (0)

static int failures = 0;

static void expect_u(int pid, int step, const char *col, unsigned long long got, unsigned long long want) {
  if (got != want) {
    fprintf(stderr, "profile_check: pid %d superstep %d: %s = %llu, expected %llu\n", pid, step, col, got, want);
    ++failures;
  }
}

typedef struct {
  int pid, step;
  char mode[16];
  double w, issue, wait, wall, end;
  unsigned long long remote, self, comem;
  char host[64];
  char cpu[32]; /* cpu_s as written: empty where the host is not oversubscribed */
  int cpus;
  unsigned long long v[8]; /* msgs_out bytes_out msgs_in bytes_in stored_out stored_in fetched_out fetched_in */
} Row;

int main(int argc, char **argv) {
  CHECK(bspk_init(&argc, &argv) == BSPK_OK);
  CHECK(argc == 2);
  const char *path = argv[1];
  int p = bspk_nprocs(), me = bspk_pid(), next = (me + 1) % p;
  bspk_ptr g = bspk_malloc("g", me, 64, sizeof(double));
  bspk_ptr src = bspk_malloc(NULL, 0, 64, sizeof(double));
  CHECK(!bspk_is_null(g) && !bspk_is_null(src));
  for (int i = 0; i < 64; ++i) *(double *)bspk_elemP(bspk_incr(src, i)) = me + i;

  /* 0: counted, pid 1 late */
  CHECK(bspk_send(next, src, (size_t)(2 * (me + 1))) == BSPK_OK);
  if (me == 1) {
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  CHECK(bspk_sync() == BSPK_OK);
  /* 1: expect; pid 2 computes 20 ms of CPU time */
  if (me == 2) {
    struct timespec c0, c;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c);
    while ((double)(c.tv_sec - c0.tv_sec) + 1e-9 * (double)(c.tv_nsec - c0.tv_nsec) < 0.02);
  }
  CHECK(bspk_expect(1) == BSPK_OK);
  CHECK(bspk_send(next, src, 3) == BSPK_OK);
  CHECK(bspk_sync() == BSPK_OK);
  /* 2: counted store */
  bspk_ptr remote = bspk_lookup("g", next);
  CHECK(bspk_copy(remote, src, 5) == BSPK_OK);
  CHECK(bspk_sync() == BSPK_OK);
  /* 3: will_send fetch */
  int *v = calloc((size_t)p, sizeof(int));
  v[next] = 1;
  CHECK(bspk_will_send(v) == BSPK_OK);
  CHECK(bspk_copy(src, remote, 7) == BSPK_OK);
  CHECK(bspk_sync() == BSPK_OK);
  free(v);
  /* 4: counted, 8 MiB copied at the call */
  const size_t big = (size_t)8 << 20;
  char *buf = calloc(big, 1);
  CHECK(buf != NULL);
  CHECK(bspk_send_buf(next, buf, big) == BSPK_OK);
  CHECK(bspk_sync() == BSPK_OK);
  free(buf);
  for (bspk_ptr m = bspk_recv(); !bspk_is_null(m); m = bspk_recv()) CHECK(bspk_free(m) == BSPK_OK);
  CHECK(bspk_finalize() == BSPK_OK);
  if (me != 0) return 0;

  const int nsteps = 6;
  Row *rows = calloc((size_t)(p * nsteps), sizeof(Row));
  int *seen = calloc((size_t)(p * nsteps), sizeof(int));
  int nrows = 0;
  /* One shared file, or with %p in the name one file per pid. */
  const char *pct = strstr(path, "%p");
  for (int file = 0; file < (pct ? p : 1); ++file) {
    char name[1024];
    if (pct)
      snprintf(name, sizeof name, "%.*s%d%s", (int)(pct - path), path, file, pct + 2);
    else
      snprintf(name, sizeof name, "%s", path);
    FILE *f = fopen(name, "r");
    if (!f) {
      fprintf(stderr, "profile_check: cannot open %s\n", name);
      return 1;
    }
    char line[512];
    CHECK(fgets(line, sizeof line, f) != NULL);
    CHECK(strcmp(line, "pid,superstep,mode,w_s,issue_s,msgs_out,bytes_out,msgs_in,bytes_in,remote_out,self_bytes,"
                       "stored_out,stored_in,fetched_out,fetched_in,wait_s,wall_s,end_s,host,comem_bytes,cpu_s,cpus\n") == 0);
    while (fgets(line, sizeof line, f)) {
      Row r;
      int used = 0;
      int n = sscanf(line, "%d,%d,%15[^,],%lf,%lf,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%lf,%lf,%lf,%63[^,\n],%llu,%n",
                     &r.pid, &r.step, r.mode, &r.w, &r.issue, &r.v[0], &r.v[1], &r.v[2], &r.v[3], &r.remote, &r.self,
                     &r.v[4], &r.v[5], &r.v[6], &r.v[7], &r.wait, &r.wall, &r.end, r.host, &r.comem, &used);
      /* the last two columns: cpu_s (possibly empty), cpus */
      const char *rest = line + used;
      size_t cpulen = strcspn(rest, ",");
      r.cpus = 0;
      if (n == 20 && used > 0 && cpulen < sizeof r.cpu && rest[cpulen] == ',' && sscanf(rest + cpulen + 1, "%d", &r.cpus) == 1) {
        memcpy(r.cpu, rest, cpulen);
        r.cpu[cpulen] = 0;
      } else {
        n = -1;
      }
      if (n != 20 || r.pid < 0 || r.pid >= p || r.step < 0 || r.step >= nsteps || (pct && r.pid != file)) {
        fprintf(stderr, "profile_check: malformed or unexpected row in %s: %s", name, line);
        ++failures;
        continue;
      }
      rows[r.pid * nsteps + r.step] = r;
      seen[r.pid * nsteps + r.step]++;
      ++nrows;
    }
    fclose(f);
  }
  const char *modes[6] = {"counted", "expect", "counted", "will_send", "counted", "finalize"};
  for (int q = 0; q < p; ++q) {
    int prev = (q + p - 1) % p;
    for (int s = 0; s < nsteps; ++s) {
      if (seen[q * nsteps + s] != 1) {
        fprintf(stderr, "profile_check: pid %d superstep %d: %d rows, expected 1\n", q, s, seen[q * nsteps + s]);
        ++failures;
        continue;
      }
      Row *r = &rows[q * nsteps + s];
      if (strcmp(r->mode, modes[s]) != 0) {
        fprintf(stderr, "profile_check: pid %d superstep %d: mode %s, expected %s\n", q, s, r->mode, modes[s]);
        ++failures;
      }
      unsigned long long want[8] = {0};
      if (s == 0) {
        want[0] = 1, want[1] = 16ull * (unsigned)(q + 1), want[2] = 1, want[3] = 16ull * (unsigned)(prev + 1);
      } else if (s == 1) {
        want[0] = 1, want[1] = 24, want[2] = 1, want[3] = 24;
      } else if (s == 2 && p > 1) {  /* at p = 1 the "store" is a local copy: no communication */
        want[4] = 40, want[5] = 40;
      } else if (s == 3 && p > 1) {
        want[6] = 56, want[7] = 56;
      } else if (s == 4) {
        want[0] = 1, want[1] = 8ull << 20, want[2] = 1, want[3] = 8ull << 20;
      }
      /* one operation to next in supersteps 0-4 (none at p = 1: next is oneself) */
      expect_u(q, s, "remote_out", r->remote, s < 5 && p > 1 ? 1 : 0);
      /* at p = 1 the messages of supersteps 0, 1 and 4 go to oneself */
      expect_u(q, s, "self_bytes", r->self, p == 1 && (s == 0 || s == 1 || s == 4) ? want[1] : 0);
      if ((s < 5) != (r->issue > 0)) {
        fprintf(stderr, "profile_check: pid %d superstep %d: issue_s = %g, expected %s\n", q, s, r->issue,
                s < 5 ? "> 0 (a communication call)" : "0 (no communication call)");
        ++failures;
      }
      /* comem_bytes: the frames of g and src all along (64 doubles each); at
       * the end of superstep 4 also the 8 MiB message received, not yet taken. */
      const unsigned long long held = s == 4 ? (8ull << 20) + 2 * 64 * 8 : 2 * 64 * 8;
      if (r->comem < held) {
        fprintf(stderr, "profile_check: pid %d superstep %d: comem_bytes = %llu, expected at least %llu\n", q, s,
                r->comem, held);
        ++failures;
      }
      if (s == 4 && p <= 3 && !(r->issue > r->w)) {
        fprintf(stderr, "profile_check: pid %d superstep 4: the 8 MiB bspk_send_buf is not in issue_s (%g s) "
                "but in w (%g s)\n", q, r->issue, r->w);
        ++failures;
      }
      const char *cols[8] = {"msgs_out", "bytes_out", "msgs_in", "bytes_in", "stored_out", "stored_in",
                             "fetched_out", "fetched_in"};
      for (int k = 0; k < 8; ++k) expect_u(q, s, cols[k], r->v[k], want[k]);
      if (s > 0 && !(r->end > rows[q * nsteps + s - 1].end)) {
        fprintf(stderr, "profile_check: pid %d superstep %d: end_s %.9f not after the previous superstep's\n", q, s,
                r->end);
        ++failures;
      }
      if (strcmp(r->host, rows[0].host) != 0) {
        fprintf(stderr, "profile_check: pid %d: host %s, pid 0's is %s (one host here)\n", q, r->host, rows[0].host);
        ++failures;
      }
      if (r->w < 0 || r->issue < 0 || r->wait < 0 || r->wall + 1e-9 < r->w + r->issue + r->wait) {
        fprintf(stderr, "profile_check: pid %d superstep %d: times w=%g issue=%g wait=%g wall=%g inconsistent\n", q, s,
                r->w, r->issue, r->wait, r->wall);
        ++failures;
      }
    }
    /* A counted superstep ends nowhere before every process has entered its
     * sync: on the common clock (one host), every end of superstep 0 comes
     * after the moment pid 1 called bspk_sync, 50 ms into it. */
    if (p > 1) {
      const Row *late = &rows[1 * nsteps];
      double called = late->end - late->wall + late->w + late->issue;
      if (rows[q * nsteps].end < called - 1e-6) {
        fprintf(stderr, "profile_check: pid %d left superstep 0 at %.6f, before pid 1 called bspk_sync at %.6f\n", q,
                rows[q * nsteps].end, called);
        ++failures;
      }
    }
  }
  /* cpu_s: filled exactly on an oversubscribed host (p > cpus: one host here) */
  for (int q = 0; q < p; ++q)
    for (int s = 0; s < nsteps; ++s) {
      const Row *r = &rows[q * nsteps + s];
      const int over = r->cpus > 0 && p > r->cpus;
      if (r->cpus < 1) {
        fprintf(stderr, "profile_check: pid %d superstep %d: cpus = %d, expected at least 1\n", q, s, r->cpus);
        ++failures;
      } else if (over != (r->cpu[0] != 0)) {
        fprintf(stderr, "profile_check: pid %d superstep %d: cpu_s '%s' with %d processes on %d CPUs: expected %s\n",
                q, s, r->cpu, p, r->cpus, over ? "a number" : "empty");
        ++failures;
      } else if (over && atof(r->cpu) > r->w + r->issue + 2e-3) {
        fprintf(stderr, "profile_check: pid %d superstep %d: cpu_s %s larger than w + issue_s %g\n", q, s, r->cpu,
                r->w + r->issue);
        ++failures;
      }
    }
  if (p > rows[0].cpus && p > 2) {
    if (atof(rows[1 * nsteps].cpu) > 0.025) {
      fprintf(stderr, "profile_check: pid 1 slept 50 ms in superstep 0, which is no CPU time; its cpu_s is %s\n",
              rows[1 * nsteps].cpu);
      ++failures;
    }
    if (atof(rows[2 * nsteps + 1].cpu) < 0.019) {
      fprintf(stderr, "profile_check: pid 2 computed 20 ms of CPU time in superstep 1; its cpu_s is %s\n",
              rows[2 * nsteps + 1].cpu);
      ++failures;
    }
  }
  if (p > 1 && rows[1 * nsteps].w < 0.05) {
    fprintf(stderr, "profile_check: pid 1 computed 50 ms in superstep 0, its w is %g s\n", rows[nsteps].w);
    ++failures;
  }
  printf("profile_check: %d rows from %d processes, %d failures\n", nrows, p, failures);
  return failures ? 1 : 0;
}
