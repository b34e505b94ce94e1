/* tests/spawn/test_spawn.c -- a plain BSPk program that, started without a
 * launcher, makes itself pid 0 of a P-process job with bsplib_spawn_self
 * (bsplib/spawn.h): pids 1..P-1 are forks of it, made there. Run and checked
 * by tests/spawn/run.sh.
 *
 *   test_spawn P MODE ARGS...
 *
 * Before the job, pid 0 prints "test_spawn: before the job" (once: the forks
 * start after it), reads one line from stdin and sets a global from it. Right
 * after the spawn it reads the next line (which its stdio buffer may already
 * hold: the forks must not see it; their stdin is empty). In the first
 * superstep pid 0 sends the token to all and every process sends its pid to
 * every process. Each prints one line:
 *   test_spawn: pid I of P: N messages, sum ok, token T, global G, stdin S, args <A>...
 * (S: "read <next line>" on pid 0, "empty" on the others). MODE: ok; output
 * (each process prints 200 long numbered lines); abort (the last pid calls
 * bspk_abort in superstep 1); child_killed (the last pid raises SIGKILL in
 * superstep 2); child_crash (the last pid writes through a null pointer in
 * superstep 2); child_exit (the last pid calls exit(0) in superstep 2, without
 * bspk_finalize); parent_exit (pid 0 calls exit(3) in superstep 2);
 * parent_exit0 (pid 0 calls exit(0) in superstep 2); hang
 * (after its line every process syncs for up 60 s: the test kills pid 0
 * meanwhile); spawn_error (bsplib_spawn_self is expected to fail: print its
 * message and whether a child is left). */
#include <bspk.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bsplib/spawn.h"

#define CHECK(c)                                                                   \
  do {                                                                             \
    if (!(c)) bspk_abort("check failed: %s (%s)", #c, bspk_error_string());        \
  } while (0)

static long global = -1; /* set by pid 0 before the spawn */

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_spawn P ok|output|abort|child_killed|child_exit|parent_exit|parent_exit0|hang|spawn_error ARGS...\n");
    return 2;
  }
  const int P = atoi(argv[1]);
  const char *mode = argv[2];
  const int launched = getenv("BSPK_BOOT_SOCKET") != NULL;
  long token = -1;
  int rank = -1;
  char in[80] = "?";
  if (!launched) {
    printf("test_spawn: before the job\n");
    char line[64];
    if (fgets(line, sizeof line, stdin)) token = atol(line);
    global = 1000 + token;
    char err[1024];
    rank = bsplib_spawn_self(P, err, sizeof err);
    if (rank < 0) {
      int st;
      const int left = !(waitpid(-1, &st, WNOHANG) < 0 && errno == ECHILD);
      fprintf(stderr, "test_spawn: %s\ntest_spawn: %s\n", err, left ? "a child process is left" : "no child left");
      return strcmp(mode, "spawn_error") == 0 && !left ? 2 : 1;
    }
    if (strcmp(mode, "spawn_error") == 0) {
      fprintf(stderr, "test_spawn: bsplib_spawn_self succeeded, expected a failure\n");
      return 1;
    }
    if (rank == 0) {
      if (!fgets(line, sizeof line, stdin)) strcpy(line, "(nothing)\n");
      line[strcspn(line, "\n")] = '\0';
      snprintf(in, sizeof in, "read <%s>", line);
    } else {
      int c = getchar();
      snprintf(in, sizeof in, c == EOF ? "empty" : "NOT EMPTY: '%c'", c);
    }
  } else {
    strcpy(in, getchar() == EOF ? "empty" : "NOT EMPTY");
  }
  if (bspk_init(&argc, &argv) != BSPK_OK) {
    fprintf(stderr, "test_spawn: bspk_init: %s\n", bspk_error_string());
    return 1;
  }
  const int me = bspk_pid(), p = bspk_nprocs();
  CHECK(p == P);
  CHECK(launched || me == rank);

  for (int d = 0; d < p; ++d) {
    long msg[2] = {me, token};
    CHECK(bspk_send_buf(d, msg, sizeof msg) == BSPK_OK);
  }
  CHECK(bspk_sync() == BSPK_OK);
  long sum = 0, tok = -2;
  int n = 0;
  for (bspk_ptr m; !bspk_is_null(m = bspk_recv()); ++n) {
    const long *v = (const long *)bspk_elemP(m);
    CHECK(bspk_nelems(m) == sizeof(long[2]));
    sum += v[0];
    if (v[0] == 0) tok = v[1];
    CHECK(bspk_free(m) == BSPK_OK);
  }
  CHECK(n == p && sum == (long)p * (p - 1) / 2);
  char args[512] = "";
  for (int i = 3; i < argc; ++i) {
    size_t l = strlen(args);
    snprintf(args + l, sizeof args - l, " <%s>", argv[i]);
  }
  printf("test_spawn: pid %d of %d: %d messages, sum ok, token %ld, global %ld, stdin %s, args%s\n", me, p, n, tok,
         global, in, args);
  if (strcmp(mode, "output") == 0)
    for (int i = 0; i < 200; ++i)
      printf("test_spawn: out pid %d line %03d %s\n", me, i,
             "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz");
  else
    fflush(stdout); /* output: no flush of its own (exit and the line buffering must do) */

  if (strcmp(mode, "abort") == 0 && me == p - 1) bspk_abort("boom %d", 42);
  CHECK(bspk_sync() == BSPK_OK);  /* superstep 1 -> 2 */
  if (strcmp(mode, "child_killed") == 0 && me == p - 1) raise(SIGKILL);
  if (strcmp(mode, "child_crash") == 0 && me == p - 1) {
    const struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core); /* (no core file in the test's directory) */
    *(volatile int *)NULL = 1;
  }
  if (strcmp(mode, "child_exit") == 0 && me == p - 1) exit(0);
  if (strcmp(mode, "parent_exit") == 0 && me == 0) exit(3);
  if (strcmp(mode, "parent_exit0") == 0 && me == 0) exit(0);
  if (strcmp(mode, "hang") == 0) {
    for (int i = 0; i < 6000; ++i) { /* at least 60 s; the same count everywhere */
      CHECK(bspk_sync() == BSPK_OK);
      usleep(10000);
    }
  }
  CHECK(bspk_sync() == BSPK_OK);
  CHECK(bspk_finalize() == BSPK_OK);
  return 0;
}
