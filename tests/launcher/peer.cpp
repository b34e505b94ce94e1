// tests/launcher/peer.cpp -- a process of a bspkrun job that speaks the
// bootstrap protocol (boot/protocol.h) itself, so that a test can put exactly
// the bytes it wants on bspkrun's socket and stop where it wants. Run as
//   bspkrun -n 2 peer CASE DIR
// (DIR: a scratch directory for markers). Every case, pid by pid:
//
//   strangers      pid 0 first starts three local processes that connect to
//                  the rendezvous socket and stop talking: one after half a
//                  Hello frame, one after two bytes of a header, one after
//                  announcing a 1 MiB Hello and sending 64 KiB of it; then both
//                  pids run a normal job (Hello, all-gather, Finalized) and
//                  print "pid R: exchange ok".
//   stop           pid 1 says hello and stops itself (SIGSTOP); pid 0 runs the
//                  exchange's first half and prints "pid 0: tick N" every
//                  0.2 s until it is ended (by --timeout).
//   stop_reader    pid 1 says hello, sends an 8 MiB all-gather blob (the
//                  result cannot fit its socket buffer) and stops itself before
//                  reading the result; pid 0 takes the result, prints
//                  "pid 0: exchange ok" and ticks as in `stop`.
//   half_stop_exit pid 1 says hello, writes 3 bytes of an all-gather frame and
//                  stops itself; then pid 0 exits with status 3.
//   half_stop_abort  the same, but pid 0 aborts as bspk_abort does (an Abort
//                  message, code 3, "pid 0: test abort", then _exit(3)).
//   held_output    pid 0 starts a process that keeps its stdout and stderr
//                  open for 25 s without writing, says hello and exits with
//                  status 3; pid 1 says hello and waits.
//   bad_frame      pid 1 says hello, then sends a frame of length 0; pid 0
//                  says hello and waits.
//
// In every case a pid that is ended by SIGTERM first prints
// "pid R: got SIGTERM".
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "boot/protocol.h"

using namespace bspk::boot;

namespace {

int g_rank = -1;

void on_term(int) {
  char msg[] = "pid ?: got SIGTERM\n";
  msg[4] = static_cast<char>('0' + g_rank);
  (void)!write(2, msg, sizeof msg - 1);
  _exit(143);
}

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "peer pid %d: %s: %s\n", g_rank, what, std::strerror(errno));
  _exit(99);
}

int connect_boot() {
  const char* path = std::getenv("BSPK_BOOT_SOCKET");
  if (!path) die("BSPK_BOOT_SOCKET not set");
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) die("connect");
  return fd;
}

int hello() {
  int fd = connect_boot();
  if (!send_msg(fd, Msg::Hello, hello_payload(g_rank))) die("hello");
  return fd;
}

void exchange(int fd, const std::string& mine) {
  Msg t;
  std::string pl;
  std::vector<std::string> all;
  if (!send_msg(fd, Msg::Allgather, mine)) die("all-gather send");
  if (!recv_msg(fd, &t, &pl)) die("all-gather result");
  if (t != Msg::AllgatherResult || !unpack_blobs(pl, &all) || all.size() != 2) die("bad all-gather result");
  std::printf("pid %d: exchange ok\n", g_rank);
  std::fflush(stdout);
}

void finalize_and_exit(int fd) {
  send_msg(fd, Msg::Finalized, "");
  close(fd);
  std::exit(0);
}

[[noreturn]] void tick_forever() {
  for (int i = 0;; ++i) {
    std::printf("pid %d: tick %d\n", g_rank, i);
    std::fflush(stdout);
    usleep(200000);
  }
}

// A process that is not of the job: connects, writes `bytes`, tells the parent
// on `ready`, then sleeps until its parent (pid 0) ends.
void stranger(const std::string& bytes, int ready) {
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid > 0) return;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  int dn = open("/dev/null", O_WRONLY);
  dup2(dn, 1);  // not holding the job's output pipes
  dup2(dn, 2);
  int fd = connect_boot();
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  (void)!send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);  // what the socket takes
  (void)!write(ready, "x", 1);
  for (;;) pause();
}

void wait_for_file(const std::string& path) {
  for (int i = 0; i < 1000 && access(path.c_str(), F_OK) != 0; ++i) usleep(10000);
  usleep(300000);  // bspkrun has seen what the other pid wrote by now
}

// pid 1 of the half_stop cases: hello, 3 bytes of an all-gather frame, stop.
void half_frame_then_stop(const std::string& dir) {
  int fd = hello();
  std::string f = frame(Msg::Allgather, "blob of pid 1");
  if (!write_all(fd, f.data(), 3)) die("half frame");
  usleep(100000);
  close(open((dir + "/stopped").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  raise(SIGSTOP);
  for (;;) pause();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bspkrun -n 2 peer CASE DIR\n");
    return 2;
  }
  const std::string mode = argv[1], dir = argv[2];
  const char* r = std::getenv("BSPK_RANK");
  g_rank = r ? std::atoi(r) : -1;
  if (g_rank < 0 || g_rank > 1) die("BSPK_RANK must be 0 or 1 (bspkrun -n 2)");
  signal(SIGTERM, on_term);

  if (mode == "strangers") {
    if (g_rank == 0) {
      int p[2];
      if (pipe(p) != 0) die("pipe");
      std::string h = frame(Msg::Hello, hello_payload(0));
      stranger(h.substr(0, h.size() / 2), p[1]);
      stranger(h.substr(0, 2), p[1]);
      std::string big(4 + 1 + 65536, 'z');
      uint32_t len = 1u << 20;
      std::memcpy(big.data(), &len, 4);
      big[4] = static_cast<char>(Msg::Hello);
      stranger(big, p[1]);
      char buf[3];
      for (size_t got = 0; got < sizeof buf;) {
        ssize_t n = read(p[0], buf + got, sizeof buf - got);
        if (n <= 0) die("strangers");
        got += static_cast<size_t>(n);
      }
      usleep(300000);  // bspkrun has seen their bytes by now
    }
    int fd = hello();
    exchange(fd, "blob of pid " + std::to_string(g_rank));
    finalize_and_exit(fd);
  }
  if (mode == "stop" || mode == "stop_reader") {
    int fd = hello();
    if (g_rank == 1) {
      if (mode == "stop_reader") {
        std::string blob(8u << 20, 'b');
        if (!send_msg(fd, Msg::Allgather, blob)) die("all-gather send");
      }
      raise(SIGSTOP);
      for (;;) pause();
    }
    if (mode == "stop_reader") exchange(fd, "blob of pid 0");
    tick_forever();
  }
  if (mode == "half_stop_exit" || mode == "half_stop_abort") {
    if (g_rank == 1) half_frame_then_stop(dir);
    int fd = hello();
    wait_for_file(dir + "/stopped");
    if (mode == "half_stop_exit") {
      std::fprintf(stderr, "pid 0: exiting with status 3\n");
      std::exit(3);
    }
    std::string pl(4, '\0');
    int32_t code = 3;
    std::memcpy(pl.data(), &code, 4);
    pl += "pid 0: test abort";
    send_msg(fd, Msg::Abort, pl);
    _exit(3);
  }
  if (mode == "held_output") {
    int fd = hello();
    if (g_rank == 0) {
      pid_t pid = fork();
      if (pid == 0) {  // keeps the job's stdout and stderr open, writes nothing
        close(fd);
        sleep(25);
        _exit(0);
      }
      usleep(200000);
      std::exit(3);
    }
    for (;;) pause();
  }
  if (mode == "bad_frame") {
    int fd = hello();
    if (g_rank == 1) {
      usleep(200000);
      uint32_t zero = 0;
      if (!write_all(fd, &zero, 4)) die("bad frame");
    }
    for (;;) pause();
  }
  std::fprintf(stderr, "peer: unknown case %s\n", mode.c_str());
  return 2;
}
