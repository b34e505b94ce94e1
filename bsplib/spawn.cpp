// bsplib/spawn.cpp -- bsplib_spawn_self: this process becomes pid 0 of a job
// that bspkrun --adopt runs around it (see bsplib/spawn.h). Talks to bspkrun
// only through its command line, its environment and the --adopt-fd pipe.
#include "bsplib/spawn.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace {

constexpr int kAdoptFd = 3;           // where bspkrun finds its end of the pipe
constexpr double kReadySeconds = 60;  // bspkrun's start-up (it starts P-1 processes first)

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

bool executable(const std::string& path) { return !path.empty() && access(path.c_str(), X_OK) == 0; }

// `name` as execvp would find it ("" if not found).
std::string search_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return executable(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::string ps = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t s = 0;;) {
    size_t e = ps.find(':', s);
    std::string dir = ps.substr(s, e == std::string::npos ? std::string::npos : e - s);
    std::string cand = (dir.empty() ? "." : dir) + "/" + name;
    if (executable(cand)) return cand;
    if (e == std::string::npos) return "";
    s = e + 1;
  }
}

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
    if (executable(cand)) return cand;
    tried = cand;
  }
#ifdef BSPKRUN_BUILD_PATH
  if (executable(BSPKRUN_BUILD_PATH)) return BSPKRUN_BUILD_PATH;
  tried += std::string(tried.empty() ? "" : ", ") + BSPKRUN_BUILD_PATH;
#endif
  *why = format("cannot find bspkrun (tried %s); set BSPK_BSPKRUN to its path", tried.c_str());
  return "";
}

bool read_file(const char* path, std::string* out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      close(fd);
      return false;
    }
    out->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

// Async-signal-safe: "exec-error <errno>\n" on fd (the child's report that exec failed).
void report_exec_error(int fd, int err) {
  char msg[32] = "exec-error ";
  size_t n = std::strlen(msg);
  char digits[12];
  size_t d = 0;
  unsigned v = static_cast<unsigned>(err);
  do digits[d++] = static_cast<char>('0' + v % 10), v /= 10;
  while (v && d < sizeof digits);
  while (d) msg[n++] = digits[--d];
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

std::string describe(int st) {
  if (WIFSIGNALED(st)) return format("was killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
  return format("exited with status %d", WEXITSTATUS(st));
}

// At exit of pid 0: say it is leaving (close the pipe), then wait for the
// other processes to end and reap bspkrun. Its exit status stays its own.
void wait_for_job() {
  if (g_launcher <= 0 || getpid() != g_owner) return;
  std::fflush(nullptr);  // this process's output before any report of bspkrun's
  close(g_fd);
  g_fd = -1;
  int st;
  while (waitpid(g_launcher, &st, 0) < 0 && errno == EINTR) {
  }
  g_launcher = -1;
}

int fail(char* error, size_t size, const std::string& msg) {
  if (error && size > 0) std::snprintf(error, size, "%s", msg.c_str());
  return -1;
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

  // This program, and its argv as the kernel has it.
  const pid_t self = getpid();
  std::string exe;
  {
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) exe.assign(buf, static_cast<size_t>(n));
    const std::string deleted = " (deleted)";
    if (exe.empty() || (exe.size() > deleted.size() && exe.compare(exe.size() - deleted.size(), deleted.size(),
                                                                   deleted) == 0))
      exe = format("/proc/%d/exe", (int)self);  // replaced or removed since: the file this process runs
  }
  std::string cmdline;
  if (!read_file("/proc/self/cmdline", &cmdline))
    return fail(error, error_size, format("cannot read /proc/self/cmdline: %s", strerror(errno)));
  std::vector<std::string> args = {bspkrun, "--adopt", std::to_string(self), "--adopt-fd", std::to_string(kAdoptFd),
                                   "-n", std::to_string(nprocs), "--exe", exe, "--"};
  size_t nargs = 0;
  for (size_t s = 0; s < cmdline.size(); ++nargs) {
    size_t e = cmdline.find('\0', s);
    if (e == std::string::npos) e = cmdline.size();
    args.push_back(cmdline.substr(s, e - s));
    s = e + 1;
  }
  if (nargs == 0) args.push_back(exe);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The environment, less what an earlier job left in it.
  std::vector<char*> envp;
  for (char** e = environ; e && *e; ++e) {
    bool launcher_var = false;
    for (const char* v : kLauncherVars) {
      size_t n = std::strlen(v);
      if (std::strncmp(*e, v, n) == 0 && (*e)[n] == '=') launcher_var = true;
    }
    if (!launcher_var) envp.push_back(*e);
  }
  envp.push_back(nullptr);

  // The pipe, and /dev/null for bspkrun's stdin, on fds >= 10 so that the
  // child's dup2 onto 0 and 3 cannot overwrite one of them.
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) != 0)
    return fail(error, error_size, format("pipe: %s", strerror(errno)));
  int rd = fcntl(pfd[0], F_DUPFD_CLOEXEC, 10), wr = fcntl(pfd[1], F_DUPFD_CLOEXEC, 10);
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int dn = devnull >= 0 ? fcntl(devnull, F_DUPFD_CLOEXEC, 10) : -1;
  close(pfd[0]);
  close(pfd[1]);
  if (devnull >= 0) close(devnull);
  if (rd < 0 || wr < 0 || dn < 0) {
    int e = errno;
    for (int fd : {rd, wr, dn})
      if (fd >= 0) close(fd);
    return fail(error, error_size, format("cannot set up the pipe to bspkrun: %s", strerror(e)));
  }
  rlimit rl{};
  int max_fd = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536
                   ? static_cast<int>(rl.rlim_cur)
                   : 65536;

  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(rd), close(wr), close(dn);
    return fail(error, error_size, format("fork: %s", strerror(e)));
  }
  if (pid == 0) {
    // The child of a possibly multi-threaded process: async-signal-safe calls only.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(dn, 0);
    dup2(wr, kAdoptFd);  // without FD_CLOEXEC: bspkrun gets it
    // Nothing else of this process's files: bspkrun and its processes must not
    // hold them (a pipe that would never see its end, a lock, a socket).
#ifdef SYS_close_range
    if (syscall(SYS_close_range, kAdoptFd + 1, ~0U, 0) != 0)
#endif
      for (int fd = kAdoptFd + 1; fd < max_fd; ++fd) close(fd);
    execve(argv[0], argv.data(), envp.data());
    report_exec_error(kAdoptFd, errno);
    _exit(127);
  }
  close(wr);
  close(dn);

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
      } else if (line.rfind("BSPK_", 0) == 0 && eq != std::string::npos) {
        vars.emplace_back(line.substr(0, eq), line.substr(eq + 1));
      } else {
        problem = format("unexpected answer from bspkrun (%s): '%s'", bspkrun.c_str(), line.c_str());
      }
    }
  }
  if (ready) {
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
    // processes it started (reap() follows up with SIGTERM, then SIGKILL).
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
  static bool registered = false;
  if (!registered) registered = std::atexit(wait_for_job) == 0;
  return 0;
}
