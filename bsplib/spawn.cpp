// bsplib/spawn.cpp -- bsplib_spawn_self: this process becomes pid 0 of a job
// whose other processes are fork()s of it, watched by bspkrun --adopt (see
// bsplib/spawn.h). Talks to bspkrun only through its command line, its
// environment, the --adopt-fd pipe and the --children-fd socket.
#include "bsplib/spawn.h"

#include "base/end_of_job.h"
#include "base/exit_status.h"
#include "base/exec_path.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio_ext.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace {

constexpr int kAdoptFd = 3;           // bspkrun's end of pid 0's pipe (--adopt-fd)
constexpr int kChildrenFd = 4;        // bspkrun's end of the forked processes' socket (--children-fd)
constexpr double kReadySeconds = 60;  // bspkrun's start-up

// The variables bspkrun sets for the processes of a job: never passed down
// from an earlier job of this process (bspkrun sets them anew).
const char* const kLauncherVars[] = {"BSPK_BOOT_SOCKET", "BSPK_JOBID", "BSPK_RANK", "BSPK_NPROCS",
                                     "BSPK_STATUS_FILE"};

// The job this process started (one per process).
pid_t g_launcher = -1;  // bspkrun
int g_fd = -1;          // our (read) end of the --adopt-fd pipe
pid_t g_owner = -1;     // this process (a fork of it must not wait for bspkrun)

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

using bspk::executable_file;
using bspk::search_path;

// bspkrun: $BSPK_BSPKRUN, else ../bin/bspkrun next to the object holding this
// code (the installed libbspk-bsplib.so, or a program linked with it
// statically), else the build tree's (BSPKRUN_BUILD_PATH).
std::string find_bspkrun(std::string* why) {
  if (const char* env = std::getenv("BSPK_BSPKRUN"); env && *env) {
    std::string p = search_path(env);
    if (p.empty()) *why = format("BSPK_BSPKRUN=%s: not found or not executable", env);
    return p;
  }
  std::string tried;
  Dl_info info{};
  int (*self)(int, char*, size_t) = &bsplib_spawn_self;  // the C one, in the object to locate
  if (dladdr(reinterpret_cast<void*>(self), &info) && info.dli_fname && *info.dli_fname) {
    std::string obj = info.dli_fname;
    size_t slash = obj.rfind('/');
    std::string dir = slash == std::string::npos ? "." : obj.substr(0, slash);
    std::string cand = dir + "/../bin/bspkrun";
    if (executable_file(cand)) return cand;
    tried = cand;
  }
#ifdef BSPKRUN_BUILD_PATH
  if (executable_file(BSPKRUN_BUILD_PATH)) return BSPKRUN_BUILD_PATH;
  tried += std::string(tried.empty() ? "" : ", ") + BSPKRUN_BUILD_PATH;
#endif
  *why = format("cannot find bspkrun (tried %s); set BSPK_BSPKRUN to its path", tried.c_str());
  return "";
}

// Async-signal-safe: the decimal digits of v at out; returns their number.
size_t put_decimal(char* out, unsigned long v) {
  char digits[24];
  size_t d = 0;
  do digits[d++] = static_cast<char>('0' + v % 10), v /= 10;
  while (v);
  for (size_t i = 0; i < d; ++i) out[i] = digits[d - 1 - i];
  return d;
}

// Async-signal-safe: "<what> <errno>\n" on fd (the helper's report that a
// fork or the exec of bspkrun failed).
void report_error(int fd, const char* what, int err) {
  char msg[64];
  size_t n = std::strlen(what);
  std::memcpy(msg, what, n);
  msg[n++] = ' ';
  n += put_decimal(msg + n, static_cast<unsigned>(err));
  msg[n++] = '\n';
  ssize_t w = write(fd, msg, n);
  (void)w;
}

// Wait for bspkrun to end (SIGTERM after `grace` s, SIGKILL 2 s later);
// returns its wait status.
int reap(pid_t pid, double grace) {
  int st = 0;
  const double t0 = now();
  int sent = 0;
  for (;;) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) return r == pid ? st : 0;  // ECHILD: reaped elsewhere
    double waited = now() - t0;
    if (sent == 0 && waited > grace) kill(pid, SIGTERM), sent = 1;
    else if (sent == 1 && waited > grace + 2) kill(pid, SIGKILL), sent = 2;
    usleep(10000);
  }
}

// pid 0 ends with the job's exit status when bspkrun ends the job (another
// process crashed, aborted or exited early): bspkrun sends it SIGTERM queued
// (SI_QUEUE) with kEndOfJob | status, and this handler exits with that status,
// as bspkrun's own exit status would be. Any other SIGTERM (a user's kill)
// goes to the action that was in place before (by default: terminated).
struct sigaction g_old_term {};

void on_term(int sig, siginfo_t* si, void* uc) {
  if (si && si->si_code == SI_QUEUE && g_launcher > 0 && si->si_pid == g_launcher &&
      bspk::is_end_of_job(si->si_value.sival_int))
    _exit(si->si_value.sival_int & 0xff);
  if (g_old_term.sa_flags & SA_SIGINFO) {
    g_old_term.sa_sigaction(sig, si, uc);
  } else if (g_old_term.sa_handler == SIG_DFL) {
    sigaction(sig, &g_old_term, nullptr);  // terminated by it when the handler returns
    raise(sig);
  } else if (g_old_term.sa_handler != SIG_IGN) {
    g_old_term.sa_handler(sig);
  }
}

std::string describe(int st) {
  if (WIFSIGNALED(st)) return format("was killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
  return format("exited with status %d", WEXITSTATUS(st));
}

// At exit of pid 0: say it is leaving (close the pipe), then wait until the
// other processes have ended and reap bspkrun (their parent: it reaps them).
// `own` is the status this process passed to exit() (-1: not known). A
// non-zero one stays its own; with 0, if bspkrun ended the job as failed
// (this process left before bspk_finalize, or another process failed after
// it had finalized), the process exits with bspkrun's status instead, as
// bsprun would have (an SPMD function that returned without bsp_end: 1, not
// 0). A forked process has g_owner -1 (or another pid): it returns at once.
void wait_for_job(int own) {
  if (g_launcher <= 0 || getpid() != g_owner) return;
  std::fflush(nullptr);  // this process's output before any report of bspkrun's
  close(g_fd);
  g_fd = -1;
  int st = 0;
  pid_t r;
  while ((r = waitpid(g_launcher, &st, 0)) < 0 && errno == EINTR) {
  }
  g_launcher = -1;
  if (own == 0 && r > 0 && WIFEXITED(st) && WEXITSTATUS(st) != 0) {
    std::fflush(nullptr);
    _exit(WEXITSTATUS(st));  // (from an exit handler: the remaining ones are skipped)
  }
}

int fail(char* error, size_t size, const std::string& msg) {
  if (error && size > 0) std::snprintf(error, size, "%s", msg.c_str());
  return -1;
}

// What the helper and the forked processes use: prepared by pid 0 before the
// first fork, so that the helper (a fork of a possibly multi-threaded
// process) needs no allocation.
struct Plan {
  int nprocs = 1;
  int rd = -1, wr = -1;    // pid 0's pipe: pid 0 reads, bspkrun writes (kAdoptFd)
  int cs0 = -1, cs1 = -1;  // the forked processes' socket: bspkrun's end (kChildrenFd), theirs
  int devnull = -1;        // their stdin, and bspkrun's
  int max_fd = 65536;
  std::vector<char*> argv, envp;  // bspkrun's; argv holds `pids` for --adopt-children
  char* pids = nullptr;           // room for P-1 os pids, comma-separated
  std::vector<pid_t> kids;        // the helper's record of them (to kill them when exec fails)
};

// In fork k of pid 0 (a child of the helper, bspkrun's once the helper has
// become it): wait for the job's settings from bspkrun, make them this
// process's environment with BSPK_RANK=k, give it an empty stdin; returns k.
// Exits (status 127, silently: pid 0 reports) if the job does not start.
int become_fork(int k, const Plan& plan, pid_t helper, const struct sigaction& old_chld) {
  sigaction(SIGCHLD, &old_chld, nullptr);  // pid 0's, which the helper changed
  prctl(PR_SET_PDEATHSIG, SIGKILL);        // never outlive bspkrun (as its processes)
  if (getppid() != helper) _exit(127);     // the helper is already gone
  close(plan.rd);
  close(plan.wr);
  close(plan.cs0);
  // stdin: /dev/null, and nothing of what pid 0 had read ahead into stdin's
  // buffer (dup2 first: the file position pid 0 shares with us stays untouched).
  dup2(plan.devnull, 0);
  close(plan.devnull);
  __fpurge(stdin);
  clearerr(stdin);
  // One record from bspkrun: NAME=VALUE lines, then "ready". End of stream:
  // bspkrun is gone, the job did not start.
  std::vector<char> buf(65536);
  ssize_t n;
  do n = recv(plan.cs1, buf.data(), buf.size() - 1, 0);
  while (n < 0 && errno == EINTR);
  close(plan.cs1);
  if (n <= 0) _exit(127);
  std::string rec(buf.data(), static_cast<size_t>(n));
  for (const char* v : kLauncherVars) unsetenv(v);
  bool ready = false;
  for (size_t s = 0, nl; !ready && (nl = rec.find('\n', s)) != std::string::npos; s = nl + 1) {
    std::string line = rec.substr(s, nl - s);
    size_t eq = line.find('=');
    if (line == "ready") ready = true;
    else if (line.rfind("BSPK_", 0) == 0 && eq != std::string::npos)
      setenv(line.substr(0, eq).c_str(), line.substr(eq + 1).c_str(), 1);
  }
  if (!ready || setenv("BSPK_RANK", std::to_string(k).c_str(), 1) != 0) _exit(127);
  return k;
}

// The helper, a fork of pid 0: forks pids 1..P-1 from itself (copies of pid 0
// as it was at bsplib_spawn_self), then executes bspkrun, which thus is their
// parent and reaps them. Returns only in the forks (their pid k);
// async-signal-safe until then.
int run_helper(Plan& plan) {
  const pid_t self = getpid();
  // SIGCHLD as the default while the forks are made: ignored, it would make
  // the kernel reap them, and bspkrun could not learn how they ended.
  struct sigaction dfl{}, old_chld{};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGCHLD, &dfl, &old_chld);
  char* p = plan.pids;
  for (int k = 1; k < plan.nprocs; ++k) {
    pid_t c = fork();
    if (c == 0) return become_fork(k, plan, self, old_chld);
    if (c < 0) {
      const int e = errno;
      for (int j = 1; j < k; ++j) kill(plan.kids[static_cast<size_t>(j)], SIGKILL);
      report_error(plan.wr, "fork-error", e);
      _exit(127);
    }
    plan.kids[static_cast<size_t>(k)] = c;
    if (k > 1) *p++ = ',';
    p += put_decimal(p, static_cast<unsigned long>(c));
  }
  if (p) *p = '\0';
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  dup2(plan.devnull, 0);
  dup2(plan.wr, kAdoptFd);     // without FD_CLOEXEC: bspkrun gets them
  dup2(plan.cs0, kChildrenFd);
  // Nothing else of pid 0's files: bspkrun must not hold them (a pipe that
  // would never see its end, a lock, a socket).
#ifdef SYS_close_range
  if (syscall(SYS_close_range, kChildrenFd + 1, ~0U, 0) != 0)
#endif
    for (int fd = kChildrenFd + 1; fd < plan.max_fd; ++fd) close(fd);
  execve(plan.argv[0], plan.argv.data(), plan.envp.data());
  const int e = errno;
  for (int j = 1; j < plan.nprocs; ++j) kill(plan.kids[static_cast<size_t>(j)], SIGKILL);
  report_error(kAdoptFd, "exec-error", e);
  _exit(127);
}

// fd as a close-on-exec descriptor >= 10 (so that the helper's dup2 onto 0, 3
// and 4 cannot overwrite one of the others); closes fd; -1 on failure.
int high_fd(int fd) {
  if (fd < 0) return -1;
  int h = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  close(fd);
  return h;
}

// Threads of this process (the "Threads:" line of /proc/self/status), 0 if unknown.
int thread_count() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  int n = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "Threads: %d", &n) == 1) break;
  std::fclose(f);
  return n;
}

}  // namespace

extern "C" int bsplib_spawn_self(int nprocs, char* error, size_t error_size) {
  if (nprocs < 1) return fail(error, error_size, format("nprocs is %d, must be >= 1", nprocs));
  if (g_launcher > 0)
    return fail(error, error_size,
                format("this process already started its job (bspkrun os pid %d)",
                       (int)g_launcher));
  if (const char* b = std::getenv("BSPK_BOOTSTRAP"); b && *b && std::strcmp(b, "bspkrun") != 0)
    return fail(error, error_size,
                format("BSPK_BOOTSTRAP=%s is set: this process cannot join a job of bspkrun", b));
  std::string why;
  const std::string bspkrun = find_bspkrun(&why);
  if (bspkrun.empty()) return fail(error, error_size, why);
  // A fork has only the calling thread. Said, not refused: a thread that
  // only sleeps harms nothing, but libgomp's (left by an OpenMP parallel
  // region before the spawn) makes the forks hang at their first parallel
  // region, for ever, since they compute as far as the job can tell.
  if (const int threads = thread_count(); nprocs > 1 && threads > 1) {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "bspk: warning: this process runs %d threads and starts the other %d processes of its job as forks "
                 "of itself (no launcher), which have only the calling thread; an OpenMP parallel region before "
                 "bsp_begin leaves such threads, and OpenMP (libgomp) then hangs in the forks at their first parallel "
                 "region. Start the job before any thread (before the first parallel region), or run the program "
                 "with bsprun -n %d.\n",
                 threads, nprocs - 1, nprocs);
  }

  const pid_t self = getpid();
  Plan plan;
  plan.nprocs = nprocs;
  std::string pids(static_cast<size_t>(nprocs) * 24 + 1, '\0');
  plan.pids = nprocs > 1 ? pids.data() : nullptr;
  plan.kids.assign(static_cast<size_t>(nprocs), -1);
  std::vector<std::string> args = {bspkrun, "--adopt", std::to_string(self), "--adopt-fd", std::to_string(kAdoptFd),
                                   "-n", std::to_string(nprocs)};
  for (auto& a : args) plan.argv.push_back(a.data());
  std::string opt_children = "--adopt-children", opt_fd = "--children-fd", fd4 = std::to_string(kChildrenFd);
  if (nprocs > 1) plan.argv.insert(plan.argv.end(), {opt_children.data(), plan.pids, opt_fd.data(), fd4.data()});
  plan.argv.push_back(nullptr);
  // bspkrun's environment: ours, less what an earlier job left in it.
  for (char** e = environ; e && *e; ++e) {
    bool launcher_var = false;
    for (const char* v : kLauncherVars) {
      size_t n = std::strlen(v);
      if (std::strncmp(*e, v, n) == 0 && (*e)[n] == '=') launcher_var = true;
    }
    if (!launcher_var) plan.envp.push_back(*e);
  }
  plan.envp.push_back(nullptr);

  int pfd[2] = {-1, -1}, sfd[2] = {-1, -1};
  int setup_errno = 0;
  if (pipe2(pfd, O_CLOEXEC) != 0) setup_errno = errno;
  if (!setup_errno && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sfd) != 0) setup_errno = errno;
  if (!setup_errno) {
    errno = 0;
    plan.rd = high_fd(pfd[0]);
    plan.wr = high_fd(pfd[1]);
    plan.cs0 = high_fd(sfd[0]);
    plan.cs1 = high_fd(sfd[1]);
    plan.devnull = high_fd(open("/dev/null", O_RDWR | O_CLOEXEC));
    if (plan.rd < 0 || plan.wr < 0 || plan.cs0 < 0 || plan.cs1 < 0 || plan.devnull < 0)
      setup_errno = errno ? errno : EMFILE;
  } else {
    for (int fd : {pfd[0], pfd[1], sfd[0], sfd[1]})
      if (fd >= 0) close(fd);
  }
  auto close_all = [&plan] {
    for (int* fd : {&plan.rd, &plan.wr, &plan.cs0, &plan.cs1, &plan.devnull})
      if (*fd >= 0) close(*fd), *fd = -1;
  };
  if (setup_errno) {
    close_all();
    return fail(error, error_size, format("cannot set up the pipes to bspkrun: %s", strerror(setup_errno)));
  }
  rlimit rl{};
  plan.max_fd = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536
                    ? static_cast<int>(rl.rlim_cur)
                    : 65536;

  // What this process has written so far is printed once: nothing buffered
  // is copied into the forks. From now on stdout is line-buffered in every
  // process (a line is one write, so lines of different processes do not mix
  // on a pipe or in a file, and a line printed is out before a failure
  // elsewhere ends the process). With a buffer of its own: on a stream that
  // has written before (a prompt before bsp_begin), glibc's setvbuf with NULL
  // only sets the flag and keeps the full buffering its last flush set up,
  // where a new buffer resets the stream (lines of pid 0 were lost when
  // another process's failure ended it; test Spawn.bsplib_abort_lines_p3).
  static char line_buffer[BUFSIZ];
  std::cout.flush();
  std::clog.flush();
  std::fflush(nullptr);
  std::setvbuf(stdout, line_buffer, _IOLBF, sizeof line_buffer);

  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close_all();
    return fail(error, error_size, format("fork: %s", strerror(e)));
  }
  if (pid == 0) return run_helper(plan);  // returns only in forks 1..P-1
  close(plan.wr);
  close(plan.cs0);
  close(plan.cs1);
  close(plan.devnull);
  const int rd = plan.rd;

  // bspkrun's answer: NAME=VALUE lines, then "ready".
  std::vector<std::pair<std::string, std::string>> vars;
  std::string buf, problem;
  bool ready = false, eof = false;
  const double deadline = now() + kReadySeconds;
  while (!ready && !eof && problem.empty()) {
    double left = deadline - now();
    if (left <= 0) {
      problem = format("bspkrun (%s) did not start the job within %.0f s", bspkrun.c_str(), kReadySeconds);
      break;
    }
    pollfd pf{rd, POLLIN, 0};
    int n = poll(&pf, 1, static_cast<int>(left * 1000) + 1);
    if (n < 0 && errno != EINTR) {
      problem = format("poll: %s", strerror(errno));
      break;
    }
    if (n <= 0) continue;
    char tmp[4096];
    ssize_t got = read(rd, tmp, sizeof tmp);
    if (got < 0) {
      if (errno != EINTR) problem = format("reading from bspkrun: %s", strerror(errno));
      continue;
    }
    if (got == 0) eof = true;
    buf.append(tmp, static_cast<size_t>(got));
    for (size_t nl; problem.empty() && !ready && (nl = buf.find('\n')) != std::string::npos;) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      size_t eq = line.find('=');
      if (line == "ready") {
        ready = true;
      } else if (line.rfind("exec-error ", 0) == 0) {
        problem = format("cannot execute bspkrun (%s): %s", bspkrun.c_str(), strerror(std::atoi(line.c_str() + 11)));
      } else if (line.rfind("fork-error ", 0) == 0) {
        problem = format("cannot fork the %d other processes: %s", nprocs - 1, strerror(std::atoi(line.c_str() + 11)));
      } else if (line.rfind("BSPK_", 0) == 0 && eq != std::string::npos) {
        vars.emplace_back(line.substr(0, eq), line.substr(eq + 1));
      } else {
        problem = format("unexpected answer from bspkrun (%s): '%s'", bspkrun.c_str(), line.c_str());
      }
    }
  }
  if (ready) {
    for (const char* v : kLauncherVars) unsetenv(v);
    for (const auto& [name, value] : vars)
      if (setenv(name.c_str(), value.c_str(), 1) != 0) {
        problem = format("setenv %s: %s", name.c_str(), strerror(errno));
        break;
      }
    if (!problem.empty()) {
      for (const char* v : kLauncherVars) unsetenv(v);
      ready = false;
    }
  }
  if (!ready) {
    // Closing our end tells a running bspkrun that pid 0 is gone: it ends the
    // forks (reap() follows up with SIGTERM, then SIGKILL); they also die with
    // it (PR_SET_PDEATHSIG), and the helper killed them if it failed.
    close(rd);
    int st = reap(pid, eof ? 10 : 2);
    if (problem.empty())
      problem = format("bspkrun (%s) %s before the job started (its message, if any, is above)", bspkrun.c_str(),
                       describe(st).c_str());
    return fail(error, error_size, problem);
  }
  g_launcher = pid;
  g_fd = rd;
  g_owner = self;
  struct sigaction term{};
  term.sa_sigaction = on_term;
  term.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&term.sa_mask);
  sigaction(SIGTERM, &term, &g_old_term);
  static bool registered = false;
  if (!registered) registered = bspk::at_exit_with_status<wait_for_job>();
  return 0;
}
