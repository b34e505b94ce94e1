/* tests/bsplib/widths_c99.c -- bsp_set_tagsize, bsp_qsize and bsp_get_tag
 * with the integer variables MulticoreBSP for C 2.0 programs pass (size_t
 * and unsigned, as BSPedupack 2.0's bspsort and bspmv do), next to the
 * standard's int ones: every byte of an 8-byte variable is written (it is
 * filled with garbage first), -1 is SIZE_MAX in a size_t, and the values
 * agree with the int calls. Strict C99, -Wall -Wextra -Werror: passing a
 * size_t * must not even warn.
 *
 * Every pid sends pid + 1 messages to every process (itself included), each
 * with an 8-byte tag (source, index) and a payload of 3 * index + 1 bytes.
 * Prints "widths ok pid=<pid>" per process; "CHECK FAILED ..." otherwise. */
#include <bsp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GARBAGE_SIZE ((size_t)0xdeadbeefcafef00dull)

static int failed = 0;
#define CHECK(cond, ...)                                               \
  do {                                                                 \
    if (!(cond)) {                                                     \
      printf("CHECK FAILED pid %d line %d: ", (int)bsp_pid(), __LINE__); \
      printf(__VA_ARGS__);                                             \
      printf("\n");                                                    \
      failed = 1;                                                      \
    }                                                                  \
  } while (0)

int main(void) {
  bsp_begin(bsp_nprocs());
  const int p = bsp_nprocs(), s = bsp_pid();

  /* Tag size 8, set through a size_t; the previous size (0) comes back in
   * all 8 bytes. */
  size_t ts = 8;
  bsp_set_tagsize(&ts);
  CHECK(ts == 0, "bsp_set_tagsize(size_t *) returned %zu, expected 0", ts);
  bsp_sync();
  unsigned int ts_u = 8; /* the same size again, through an unsigned */
  bsp_set_tagsize(&ts_u);
  CHECK(ts_u == 8, "bsp_set_tagsize(unsigned *) returned %u, expected 8", ts_u);
  bsp_sync();

  size_t sent_bytes = 0;
  char payload[3 * 16 + 1];
  memset(payload, 'x', sizeof payload);
  for (int t = 0; t < p; ++t)
    for (int i = 0; i <= s && i < 16; ++i) {
      int32_t tag[2] = {s, i};
      bsp_send(t, tag, payload, 3 * i + 1);
    }
  (void)sent_bytes;
  bsp_sync();

  /* What arrived: pids 0..p-1 each sent min(pid + 1, 16) messages. */
  size_t want_n = 0, want_bytes = 0;
  for (int q = 0; q < p; ++q)
    for (int i = 0; i <= q && i < 16; ++i) {
      ++want_n;
      want_bytes += (size_t)(3 * i + 1);
    }
  unsigned int n_u = 0xdeadbeefu;
  size_t bytes_z = GARBAGE_SIZE;
  bsp_qsize(&n_u, &bytes_z);
  CHECK(n_u == want_n && bytes_z == want_bytes, "bsp_qsize(unsigned *, size_t *): %u messages, %zu bytes; expected %zu, %zu",
        n_u, bytes_z, want_n, want_bytes);
  int n_i = -7, bytes_i = -7;
  bsp_qsize(&n_i, &bytes_i);
  CHECK((size_t)n_i == want_n && (size_t)bytes_i == want_bytes, "bsp_qsize(int *, int *): %d, %d", n_i, bytes_i);
  long long n_ll = -7;
  size_t bytes_z2 = GARBAGE_SIZE;
  bsp_qsize(&n_ll, &bytes_z2);
  CHECK(n_ll == (long long)want_n && bytes_z2 == want_bytes, "bsp_qsize(long long *, size_t *): %lld, %zu", n_ll, bytes_z2);

  /* Read every message: status through a size_t filled with garbage, and
   * through an int, must agree with the payload's size. */
  size_t got = 0;
  for (;;) {
    size_t status = GARBAGE_SIZE;
    int32_t tag[2] = {-1, -1};
    bsp_get_tag(&status, tag);
    int status_i = -7;
    int32_t tag2[2];
    bsp_get_tag(&status_i, tag2);
    if (status == SIZE_MAX) {
      CHECK(status_i == -1, "empty queue: int status %d, expected -1", status_i);
      break;
    }
    CHECK(status == (size_t)(3 * tag[1] + 1), "bsp_get_tag(size_t *): status %zu for message (%d, %d), expected %d",
          status, tag[0], tag[1], 3 * tag[1] + 1);
    CHECK((size_t)status_i == status, "bsp_get_tag(int *) %d, bsp_get_tag(size_t *) %zu", status_i, status);
    char buf[sizeof payload];
    bsp_move(buf, (int)sizeof buf);
    ++got;
    if (got > want_n) break;
  }
  CHECK(got == want_n, "read %zu messages, expected %zu", got, want_n);
  /* An empty queue: -1 is SIZE_MAX in a size_t and the tag is untouched. */
  size_t status = GARBAGE_SIZE;
  int32_t tag[2] = {42, 43};
  bsp_get_tag(&status, tag);
  CHECK(status == SIZE_MAX && tag[0] == 42 && tag[1] == 43, "empty queue: status %zu, tag (%d, %d)", status, tag[0],
        tag[1]);
  bsp_sync();
  if (!failed) printf("widths ok pid=%d\n", s);
  bsp_end();
  return failed;
}
