// bspkrun -- start a BSPk job on this machine.
//
//   bspkrun -n P [--provider NAME] [--bind auto|core|none] [--timeout S]
//           [--tag-output] [--report-bindings] prog args...
//   bspkrun --adopt OSPID --adopt-fd FD [--adopt-children OSPID,... --children-fd FD2] -n P [options]
//   bspkrun --info[=markdown]     every BSPK_* setting (base/config_defs.h)
//
// Starts P processes, runs the bootstrap exchange they use to find each other
// (a Unix socket, see boot/protocol.h), forwards their output line by line,
// binds them to cores with hwloc when asked, and ends the whole job when one
// process fails: it says which pid died, how, and in which superstep, ends the
// others (SIGTERM and SIGCONT, so a stopped process ends too, then SIGKILL
// after 2 s) and exits with that status. A process that called bspk_init and
// exits without bspk_finalize is a failure too (BSPlib's Err_SYNC case). Exit
// status: the first non-zero status of a process (128+signal for a signal),
// 124 when --timeout expires, else 0.
//
// Nothing a process does blocks the event loop: bootstrap connections and
// output pipes are non-blocking, messages are parsed as their bytes arrive
// and replies queued until the socket takes them. A stopped process, or any
// local process that connects and sends half a message, leaves output
// forwarding, failure handling and --timeout working.
//
// --adopt (bsplib/spawn.h): bspkrun starts nothing. Pid 0 is its parent, the
// running process OSPID; pids 1..P-1 are the --adopt-children, its own
// children (forks of pid 0 that the process which became bspkrun made before
// it executed bspkrun). It writes the job's settings (NAME=VALUE lines, then
// "ready") on the pipe FD for pid 0 and, as P-1 records of a SOCK_SEQPACKET
// socket FD2, for the children (without BSPK_RANK: each sets its own). Their
// output is not forwarded (they write to the terminal, pipe or file they
// share with pid 0); failures are handled and reported as for its own
// processes. Pid 0 leaves by closing its end of FD.
#include <CLI/CLI.hpp>
#include <bspk.h>
#include <dirent.h>
#include <fcntl.h>
#include <hwloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/config.h"
#include "base/end_of_job.h"
#include "base/env.h"
#include "base/error.h"
#include "base/version.h"
#include "boot/bootstrap.h"
#include "boot/protocol.h"
#include "base/exec_path.h"

using namespace bspk;
using namespace bspk::boot;

namespace {

volatile sig_atomic_t g_signal = 0;
void on_signal(int s) { g_signal = s; }
volatile sig_atomic_t g_suspend = 0;  // SIGTSTP (^Z): suspend the job (Launcher::suspend_job)
// SIGUSR1 / SIGUSR2 received, to be passed on to every process of the job (as
// mpirun and srun do: batch systems announce a coming time limit with them,
// e.g. sbatch --signal=B:USR1@60 to the batch script's bspkrun).
volatile sig_atomic_t g_usr1 = 0, g_usr2 = 0;
void on_usr(int s) { (s == SIGUSR1 ? g_usr1 : g_usr2) = 1; }
void on_tstp(int) { g_suspend = 1; }

// Whether FI_PROVIDER (libfabric's filter: names separated by commas, or
// after '^' names to exclude) lets the deprecated sockets provider be the
// only one: a list whose every name is sockets. "^sockets" excludes it, and
// from a list such as "sockets,tcp" the runtime chooses another
// (fabric/select.h).
bool provider_filter_is_sockets(const char* value) {
  const env::NameFilter f = env::parse_name_filter(value);
  if (f.exclude || f.names.empty()) return false;
  for (const std::string& n : f.names)
    if (n.find("sockets") == std::string::npos) return false;
  return true;
}

struct Proc {
  int rank = 0;
  pid_t pid = -1;
  int out_fd = -1, err_fd = -1;  // read ends of the output pipes
  std::string out_buf, err_buf;  // a line not yet ended (held back for its newline)
  bool out_mid = false, err_mid = false;  // a piece of a line longer than kMaxLine went out
  bool out_cut = false, err_cut = false;  // ... and another process's output ended that line early (emit)
  double out_held = 0, err_held = 0;      // when the line held back (no newline yet) began to wait; 0: none
  int sock = -1;  // bootstrap connection (after Hello)
  bool hello = false, finalized = false, exited = false;
  int status = 0;
};

// A connection to the bootstrap socket: a process of the job once its Hello
// is taken (rank >= 0), any local process before that. Never waited on: what
// it sends is parsed as it arrives (a half frame just waits in `in`), and what
// it is sent is queued and written as its socket takes it, so a stopped or
// slow process never blocks the event loop.
struct Client {
  int rank = -1;
  FrameReader in;
  std::deque<std::shared_ptr<const std::string>> out;  // frames not yet written (shared: the all-gather result)
  size_t out_off = 0;                                   // bytes of out.front() already written
};

// Before its Hello a connection may send one frame of at most this many bytes
// (a Hello is kHelloFixed + 1): more, or any other message first, and it is
// dropped; it is never buffered beyond that.
constexpr uint32_t kPreHelloFrame = 4096;
// Most bytes read from one process's socket (or pipe) per wake-up, so that
// one fast writer cannot hold up the others.
constexpr size_t kReadChunk = size_t{1} << 20;
// Most bytes of one line held back for its newline: a longer line (binary
// output, a progress bar redrawn with \r) goes out in pieces of this size, so
// bspkrun's memory stays bounded whatever a process writes.
constexpr size_t kMaxLine = size_t{1} << 20;
// When stdin is a terminal, pid 0's line that has waited this long for its
// newline goes out as it is (forward_prompt): a prompt before scanf
// ("Enter n: ", no newline) shows as it would without a launcher.
constexpr double kPromptDelay = 0.1;


// pidfd_open / pidfd_send_signal (Linux 5.1 / 5.3), through syscall(): -1 with
// errno ENOSYS where the kernel or headers lack them.
int pidfd_open_(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}
int pidfd_send_signal_(int pidfd, int sig, siginfo_t* info = nullptr) {
#ifdef SYS_pidfd_send_signal
  return static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd, sig, info, 0));
#else
  (void)pidfd, (void)sig, (void)info;
  errno = ENOSYS;
  return -1;
#endif
}

class Launcher {
 public:
  int nprocs = 1;
  std::string provider, bind_mode = "auto";
  double timeout = 0;
  bool tag = false, report_bindings = false;
  std::vector<std::string> cmd;
  std::string exe;  // --exe: the file to execute (default cmd[0], searched in PATH)
  // --adopt: pid 0 is this running process (bspkrun's parent); its settings go to adopt_fd.
  pid_t adopt_pid = 0;
  int adopt_fd = -1;
  // --adopt-children: pids 1..P-1 (bspkrun's children); their settings go to children_fd.
  std::vector<int> adopt_children;
  int children_fd = -1;

  // --adopt: checks the parent and opens its pidfd; "" or why it cannot be adopted.
  std::string prepare_adopt();
  int run();

 private:
  bool adopted(int rank) const { return adopt_pid > 0 && rank == 0; }
  bool adopting() const { return adopt_pid > 0; }
  std::vector<std::pair<std::string, std::string>> job_env(int rank) const;
  hwloc_bitmap_t core_set(int rank) const;
  void setup_rendezvous();
  bool spawn(int rank);  // false: it could not be started (the job is failing)
  void adopt_parent();
  void adopt_children_();
  void bind_to_cores(int rank, pid_t pid, hwloc_const_bitmap_t set);
  void bind_adopted(int rank);
  void send_children();
  void check_parent();
  void parent_gone(bool died);
  void signal_parent(int sig);
  void forward(Proc& p, int fd, bool is_err, bool eof);
  void emit(Proc& p, const char* data, size_t n, bool is_err);
  void accept_client();
  void read_client(int fd, bool drain);
  void handle_msg(int fd, Msg type, const std::string& pl);
  void send_to(int fd, Msg type, const std::string& pl);
  void send_to(int fd, const std::shared_ptr<const std::string>& frame);
  void flush_client(int fd);
  void drop_client(int fd);
  void reap();
  void fail_job(int status, const std::string& msg);
  // A job that can never start: a process left with status 0 without calling
  // bspk_init (it never said Hello) while another has called it and waits for
  // it there. Ended at once, naming both, instead of after BSPK_START_TIMEOUT.
  // (Processes that all exit without bspk_init are a job of a program that
  // does not use BSPk: `bspkrun -n 2 hostname` succeeds.)
  void check_unstartable();
  void kill_all(int sig);
  void forward_signal(int sig);
  void suspend_job();
  // " in <superstep_text>" of pid `rank`'s status slot ("" without one);
  // with `what` (abort_text, unfinalized_text), what it did comes first:
  // " called bspk_abort in superstep 3 (computing)".
  std::string where(int rank, std::string (*what)(const char*, uint32_t) = nullptr) const;

  bool pipe_ignored_ = false;  // SIGPIPE was ignored when bspkrun started (the job inherits that)
  int stream_mid_[2] = {-1, -1};  // stdout, stderr: the process whose piece of a long line each ended with
  bool stdin_tty_ = false;        // bspkrun's stdin is a terminal (pid 0's prompts go out: forward_prompt)
  void forward_prompt();
  rlimit files_limit_{};       // RLIMIT_NOFILE as bspkrun found it (each process gets it back: spawn)
  bool files_raised_ = false;  // files_for_job raised the soft limit for bspkrun itself
  bool files_for_job();
  std::string dir_, sock_path_, status_path_, jobid_;
  int listen_fd_ = -1;
  StatusSlot* status_ = nullptr;
  std::vector<Proc> procs_;
  std::map<int, Client> clients_;  // by socket: every accepted bootstrap connection
  std::vector<std::string> gather_;
  std::vector<bool> gathered_;
  int ngathered_ = 0;
  double gather_started_ = 0;  // when the first process entered the current exchange
 public:
  double exchange_timeout = 60;  // BSPK_SYNC_TIMEOUT: most seconds one exchange may wait
 private:
  bool failing_ = false;
  int exit_status_ = 0;
  double kill_deadline_ = 0;
  hwloc_topology_t topo_ = nullptr;
  hwloc_bitmap_t avail_ = nullptr;  // the CPUs bspkrun may run on (--bind core binds within them)
  bool abort_printed_ = false;  // the job's abort message was printed
  int adopt_pidfd_ = -1;  // pidfd of the adopted pid 0 (-1: none; then getppid() tells)
  std::string children_msg_;  // the record each adopted child gets on children_fd
  int children_unsent_ = 0;   // records still to send
};

std::string Launcher::where(int rank, std::string (*what)(const char*, uint32_t)) const {
  if (!status_) return what ? " " + what(nullptr, 0) : "";
  const StatusSlot& s = status_[rank];
  const uint32_t layer_step1 = s.layer_step1;
  char layer[sizeof s.layer] = {};
  if (layer_step1) {  // its name was written before (bootstrap.cpp, publish_layer_step)
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    std::memcpy(layer, s.layer, sizeof layer - 1);
  }
  // (what says it already when the process left from bspk_finalize)
  return (what ? " " + what(layer, layer_step1) : "") + " in " +
         superstep_text(s.superstep, layer, layer_step1, what == finalize_failed_text ? nullptr : state_name(s.state));
}

// A job's directory and what bspkrun and its processes put in it: the
// bootstrap socket, the status page, abort.printed (api/bspk.cpp: the first
// abort message was printed). True if the directory is gone.
bool remove_job_dir(const std::string& dir) {
  for (const char* f : {"/boot.sock", "/status", "/abort.printed"}) unlink((dir + f).c_str());
  return rmdir(dir.c_str()) == 0;
}

// What jobs of this user whose bspkrun was killed with SIGKILL (the OOM
// killer, `kill -9`, a batch system's last resort) left under `base`: their
// directory (bspkrun.XXXXXX: the bootstrap socket, the status page) and their
// processes' libfabric shm regions in /dev/shm (16 MiB each; the processes
// died with bspkrun, by PR_SET_PDEATHSIG, before they could remove them). A
// job is gone when its socket refuses connections (no bspkrun listens) and its
// directory is older than 10 s (never one whose bspkrun is between bind and
// listen). Only directories this user owns, under the TMPDIR this bspkrun
// uses: a job of another container sharing /dev/shm is never touched.
void remove_stale_jobs(const std::string& base) {
  DIR* d = opendir(base.c_str());
  if (!d) return;
  const std::string prefix = "bspkrun.";
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string dir = base + "/" + name, sock = dir + "/boot.sock";
    struct stat st;
    if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        time(nullptr) - st.st_mtime < 10)
      continue;
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (sock.size() >= sizeof sa.sun_path) continue;
    std::memcpy(sa.sun_path, sock.c_str(), sock.size() + 1);
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    const bool refused = connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 && errno == ECONNREFUSED;
    close(fd);
    if (!refused) continue;  // alive (or not ours to judge)
    const int regions = remove_job_regions_by_suffix(name.substr(prefix.size()));
    if (remove_job_dir(dir) && config::get_bool(config::Var::VERBOSE))
      std::fprintf(stderr, "bspkrun: removed %s and %d shared-memory region(s) of a job whose bspkrun was killed\n",
                   dir.c_str(), regions);
  }
  closedir(d);
}

void Launcher::setup_rendezvous() {
  // Under $TMPDIR (the per-job directory a site's batch system gives), else
  // /tmp: a TMPDIR that is not absolute, would make the socket's path longer
  // than a Unix socket takes (sun_path, 108 bytes), or where the directory
  // cannot be made, falls back to /tmp.
  std::string base = "/tmp";
  if (const char* t = std::getenv("TMPDIR"); t && t[0] == '/') {
    std::string b = t;
    while (b.size() > 1 && b.back() == '/') b.pop_back();
    if (b.size() + std::strlen("/bspkrun.XXXXXX/boot.sock") < sizeof(sockaddr_un{}.sun_path)) base = b;
  }
  remove_stale_jobs(base);
  if (base != "/tmp") remove_stale_jobs("/tmp");
  auto make = [](const std::string& in) {
    std::string t = in + "/bspkrun.XXXXXX";
    return mkdtemp(t.data()) ? t : std::string();
  };
  dir_ = make(base);
  if (dir_.empty() && base != "/tmp") dir_ = make("/tmp");
  if (dir_.empty()) {
    perror("bspkrun: mkdtemp");
    exit(1);
  }
  jobid_ = strprintf("%d-%s", (int)getpid(), dir_.substr(dir_.size() - 6).c_str());
  sock_path_ = dir_ + "/boot.sock";
  status_path_ = dir_ + "/status";
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock_path_.c_str());
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
      listen(listen_fd_, 1024) != 0) {
    perror("bspkrun: bootstrap socket");
    exit(1);
  }
  int fd = open(status_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  size_t len = sizeof(StatusSlot) * static_cast<size_t>(nprocs);
  // (Sized by posix_fallocate, every page reserved: a full /tmp leaves the job
  // without superstep reports, where ftruncate's sparse file killed its
  // processes with SIGBUS at their first report.)
  if (fd >= 0 && posix_fallocate(fd, 0, static_cast<off_t>(len)) == 0) {
    void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m != MAP_FAILED) status_ = static_cast<StatusSlot*>(m);
  }
  if (fd >= 0) close(fd);
}

// The variables bspkrun sets for pid `rank` (in its environment, or for an
// adopted pid 0 on the --adopt-fd pipe).
std::vector<std::pair<std::string, std::string>> Launcher::job_env(int rank) const {
  using config::Var;
  std::vector<std::pair<std::string, std::string>> env = {
      {config::name(Var::BOOT_SOCKET), sock_path_},
      {config::name(Var::JOBID), jobid_},
      {config::name(Var::RANK), std::to_string(rank)},
      {config::name(Var::NPROCS), std::to_string(nprocs)}};
  if (status_) env.emplace_back(config::name(Var::STATUS_FILE), status_path_);
  if (!provider.empty()) env.emplace_back(config::name(Var::PROVIDER), provider);
  return env;
}

// The PU pid `rank` is bound to (nullptr: not bound): with --bind core, and
// with --bind auto when the processes outnumber the cores, round-robin over
// the cores of the CPUs bspkrun itself may run on (its own affinity, as
// `taskset`, `numactl` or a Slurm step left it; the whole machine, or its
// cgroup, otherwise), so that binding never moves a process outside the
// CPUs the user gave the job. Why auto binds an oversubscribed job: left to
// the kernel, 4 processes on 2 cores ran a counted empty superstep in 2.3 or
// 3.7 us and 8 in 5.8-16 us, by where it put and moved them (as_bspk, shm,
// 5 runs each); bound round-robin 2.1-2.3 and 5.8-9.3 us in every run. A
// job that fits stays unbound (the kernel spreads it), and so do the
// processes of a BSPlib program started without a launcher (--adopt: its
// MulticoreBSP affinity settings decide).
hwloc_bitmap_t Launcher::core_set(int rank) const {
  if (bind_mode == "none" || !topo_ || !avail_) return nullptr;
  int ncores = hwloc_get_nbobjs_inside_cpuset_by_type(topo_, avail_, HWLOC_OBJ_CORE);
  if (bind_mode == "auto" && (adopting() || nprocs <= ncores)) return nullptr;
  hwloc_obj_t core =
      ncores > 0 ? hwloc_get_obj_inside_cpuset_by_type(topo_, avail_, HWLOC_OBJ_CORE, rank % ncores) : nullptr;
  if (!core) return nullptr;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  hwloc_bitmap_and(set, core->cpuset, avail_);
  hwloc_bitmap_singlify(set);
  return set;
}

// Open files: bspkrun holds 3 per process (two pipes and its bootstrap
// connection) on top of those it has open now (the listening socket, the
// terminal, hwloc's). A soft `ulimit -n` below that is raised, up to the
// hard limit, for bspkrun alone (each process gets the limit back before
// exec), as mpirun does; beyond the hard limit the job is refused before any
// process starts, naming both numbers. (Until 2026-12-07 a limit of about 3
// per process let every process start and then left connections unaccepted:
// the job waited BSPK_SYNC_TIMEOUT, 60 s, and ended without naming the limit.)
bool Launcher::files_for_job() {
  if (getrlimit(RLIMIT_NOFILE, &files_limit_) != 0) return true;  // (unknown: spawn reports what fails)
  rlim_t open_now = 16;
  if (DIR* d = opendir("/proc/self/fd")) {
    open_now = 0;
    while (const dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++open_now;
    closedir(d);  // (it counted its own descriptor: one spare)
  }
  const rlim_t need = open_now + 3 * static_cast<rlim_t>(nprocs) + 2;
  if (files_limit_.rlim_cur == RLIM_INFINITY || files_limit_.rlim_cur >= need) return true;
  if (files_limit_.rlim_max == RLIM_INFINITY || files_limit_.rlim_max >= need) {
    rlimit raised = files_limit_;
    raised.rlim_cur = need;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) {
      files_raised_ = true;
      return true;
    }
  }
  fail_job(1, strprintf("bspkrun: -n %d needs %llu open files (3 per process: two pipes and its connection, and "
                        "%llu of bspkrun's own), but `ulimit -n` allows %llu (hard limit %s): raise it, e.g. "
                        "`ulimit -n %llu`, or run fewer processes; nothing was started",
                        nprocs, static_cast<unsigned long long>(need),
                        static_cast<unsigned long long>(need - 3 * static_cast<rlim_t>(nprocs)),
                        static_cast<unsigned long long>(files_limit_.rlim_cur),
                        files_limit_.rlim_max == RLIM_INFINITY
                            ? "unlimited"
                            : std::to_string(static_cast<unsigned long long>(files_limit_.rlim_max)).c_str(),
                        static_cast<unsigned long long>(need)));
  return false;
}

bool Launcher::spawn(int rank) {
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  // A process that cannot be started fails the job like one that dies: those
  // started are ended, their output forwarded, the rendezvous directory
  // removed (it used to stay behind after exit(1) here).
  auto cannot = [&](const char* what) {
    const int e = errno;
    for (int fd : {out[0], out[1], err[0], err[1]})
      if (fd >= 0) close(fd);
    std::string hint;
    rlimit rl{};
    if ((e == EMFILE || e == ENFILE) && getrlimit(RLIMIT_NOFILE, &rl) == 0)
      hint = strprintf(" (bspkrun may open %llu files, `ulimit -n`; it holds 3 per process: two pipes and the "
                       "process's connection)",
                       static_cast<unsigned long long>(rl.rlim_cur));
    fail_job(1, strprintf("bspkrun: cannot start pid %d of %d: %s: %s%s; ending the job", rank, nprocs, what,
                          strerror(e), hint.c_str()));
    return false;
  };
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return cannot("pipe");
  // Our read ends only (the process's ends stay blocking): a read never waits,
  // e.g. for a process that holds its output open but is stopped.
  fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
  fcntl(err[0], F_SETFL, fcntl(err[0], F_GETFL) | O_NONBLOCK);
  hwloc_bitmap_t set = core_set(rank);
  pid_t pid = fork();
  if (pid < 0) {
    if (set) hwloc_bitmap_free(set);
    return cannot("fork");
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the launcher
    if (!pipe_ignored_) signal(SIGPIPE, SIG_DFL);  // ignored by bspkrun only (run())
    // A process group of its own (kill_all signals the group, so processes
    // it started go too), except pid 0 reading a terminal: in a group other
    // than the terminal's foreground one, its first read of stdin would stop
    // it (SIGTTIN) and an interactive program (a prompt, then scanf) would
    // never go on. It stays in ours, the foreground group.
    if (!(rank == 0 && isatty(STDIN_FILENO))) setpgid(0, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    if (rank != 0) {
      int dn = open("/dev/null", O_RDONLY);
      if (dn >= 0) dup2(dn, 0);
    }
    for (const auto& [name, value] : job_env(rank)) setenv(name.c_str(), value.c_str(), 1);
    bind_to_cores(rank, getpid(), set);
    // The limit bspkrun raised for itself (files_for_job) goes back only now:
    // until exec this process still holds bspkrun's descriptors, and hwloc's
    // binding opens /proc files (under a soft `ulimit -n` of 20, pids 5 and
    // up were left unbound with "Too many open files" until 2026-12-08).
    if (files_raised_) setrlimit(RLIMIT_NOFILE, &files_limit_);
    std::vector<char*> argv;
    for (auto& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const char* file = exe.empty() ? argv[0] : exe.c_str();
    execvp(file, argv.data());
    std::fprintf(stderr, "bspkrun: cannot execute %s: %s\n", file, strerror(errno));
    _exit(127);
  }
  if (set) hwloc_bitmap_free(set);
  close(out[1]);
  close(err[1]);
  Proc& p = procs_[rank];
  p.rank = rank;
  p.pid = pid;
  p.out_fd = out[0];
  p.err_fd = err[0];
  return true;
}

std::string Launcher::prepare_adopt() {
  if (getppid() != adopt_pid)
    return strprintf("--adopt %d: pid 0 must be the process that started bspkrun (os pid %d)", (int)adopt_pid,
                     (int)getppid());
  if (fcntl(adopt_fd, F_SETFD, FD_CLOEXEC) != 0)  // the other processes must not hold it
    return strprintf("--adopt-fd %d: %s", adopt_fd, strerror(errno));
  adopt_pidfd_ = pidfd_open_(adopt_pid);
  if (adopt_pidfd_ < 0 && errno != ENOSYS)
    return strprintf("--adopt %d: pidfd_open: %s", (int)adopt_pid, strerror(errno));
  if (adopt_pidfd_ >= 0) fcntl(adopt_pidfd_, F_SETFD, FD_CLOEXEC);
  // Still our parent now, so the pidfd is that process, not a reused pid.
  if (getppid() != adopt_pid) return strprintf("--adopt %d: the process is gone", (int)adopt_pid);
  if (static_cast<int>(adopt_children.size()) != nprocs - 1)
    return strprintf("--adopt-children: %zu os pid(s) for -n %d (pids 1..%d)", adopt_children.size(), nprocs,
                     nprocs - 1);
  for (size_t i = 0; i < adopt_children.size(); ++i) {
    // Our child (running, or exited and not yet reaped: reap() reports it).
    siginfo_t si{};
    if (waitid(P_PID, static_cast<id_t>(adopt_children[i]), &si, WEXITED | WNOHANG | WNOWAIT) != 0)
      return strprintf("--adopt-children: os pid %d (pid %zu) is not a child of bspkrun", adopt_children[i], i + 1);
    for (size_t j = 0; j < i; ++j)
      if (adopt_children[j] == adopt_children[i])
        return strprintf("--adopt-children: os pid %d given twice", adopt_children[i]);
  }
  if (!adopt_children.empty()) {
    int fl = fcntl(children_fd, F_GETFL);
    if (fl < 0 || fcntl(children_fd, F_SETFL, fl | O_NONBLOCK) != 0 || fcntl(children_fd, F_SETFD, FD_CLOEXEC) != 0)
      return strprintf("--children-fd %d: %s", children_fd, strerror(errno));
  }
  return "";
}

// --bind core for a process bspkrun did not start (pid 0, the adopted children).
// Bind process `pid` (pid `rank` of the job) to `set` (null: --bind none),
// saying so when --report-bindings asks.
void Launcher::bind_to_cores(int rank, pid_t pid, hwloc_const_bitmap_t set) {
  if (set) {
    if (hwloc_set_proc_cpubind(topo_, pid, set, HWLOC_CPUBIND_PROCESS) != 0)
      std::fprintf(stderr, "bspkrun: warning: could not bind pid %d: %s\n", rank, strerror(errno));
    else if (report_bindings) {
      char* s = nullptr;
      hwloc_bitmap_list_asprintf(&s, set);
      std::fprintf(stderr, "bspkrun: pid %d bound to cpu %s\n", rank, s ? s : "?");
      free(s);
    }
  } else if (report_bindings) {
    std::fprintf(stderr, "bspkrun: pid %d not bound (--bind %s)\n", rank, bind_mode.c_str());
  }
}

void Launcher::bind_adopted(int rank) {
  hwloc_bitmap_t set = core_set(rank);
  bind_to_cores(rank, procs_[rank].pid, set);
  if (set) hwloc_bitmap_free(set);
}

// --adopt-children: pids 1..P-1 are bspkrun's children, waiting for the job's
// settings on children_fd (one record each, taken by whichever reads first:
// the same for all, BSPK_RANK left out).
void Launcher::adopt_children_() {
  for (size_t i = 0; i < adopt_children.size(); ++i) {
    Proc& p = procs_[i + 1];
    p.rank = static_cast<int>(i + 1);
    p.pid = adopt_children[i];
    bind_adopted(p.rank);
  }
  const std::string rank_var = config::name(config::Var::RANK);
  for (const auto& [name, value] : job_env(0))
    if (name != rank_var) children_msg_ += name + "=" + value + "\n";
  children_msg_ += "ready\n";
  children_unsent_ = static_cast<int>(adopt_children.size());
  send_children();
}

// As many records as the socket takes now (it is non-blocking: a full queue
// waits for the children to read; the main loop calls again).
void Launcher::send_children() {
  while (children_unsent_ > 0) {
    ssize_t n = send(children_fd, children_msg_.data(), children_msg_.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0) {  // no child holds its end any more: reap() says why
      children_unsent_ = 0;
      break;
    }
    --children_unsent_;
  }
  // A record sent stays readable after we close our end.
  if (children_fd >= 0) close(children_fd), children_fd = -1;
}

// --adopt: pid 0 is the running parent. Bind it when asked, then hand it the
// job's settings and "ready" (it waits for that line before bspk_init).
void Launcher::adopt_parent() {
  Proc& p = procs_[0];
  p.rank = 0;
  p.pid = adopt_pid;
  bind_adopted(0);
  std::string msg;
  for (const auto& [name, value] : job_env(0)) msg += name + "=" + value + "\n";
  msg += "ready\n";
  // A pipe (boot's write_all is for sockets); SIGPIPE is ignored. A failed
  // write means pid 0 has closed its end: check_parent() reports it.
  for (size_t off = 0; off < msg.size();) {
    ssize_t n = write(adopt_fd, msg.data() + off, msg.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
}

// Has the adopted pid 0 died (pidfd readable; without a pidfd: bspkrun was
// re-parented) or left (closed its end of --adopt-fd)?
void Launcher::check_parent() {
  if (adopt_pid <= 0 || procs_[0].exited) return;
  bool died = false, left = false;
  if (adopt_pidfd_ >= 0) {
    pollfd pf{adopt_pidfd_, POLLIN, 0};
    died = poll(&pf, 1, 0) > 0;
  } else {
    died = getppid() != adopt_pid;
  }
  if (adopt_fd >= 0) {
    pollfd pf{adopt_fd, 0, 0};  // a pipe's write end reports POLLERR once no reader is left
    left = poll(&pf, 1, 0) > 0 && (pf.revents & (POLLERR | POLLHUP | POLLNVAL));
  }
  const bool done = procs_[0].finalized || (status_ && status_[0].state == static_cast<uint32_t>(ProcState::Done));
  if (left && !died && !done) {
    // A dying process closes its files just before it is reported dead: wait a
    // moment, so that the message says which of the two happened.
    for (int i = 0; i < 10 && !died; ++i) {
      if (adopt_pidfd_ >= 0) {
        pollfd pf{adopt_pidfd_, POLLIN, 0};
        died = poll(&pf, 1, 10) > 0;
      } else {
        usleep(10000);
        died = getppid() != adopt_pid;
      }
    }
  }
  if (died || left) parent_gone(died);
}

void Launcher::parent_gone(bool died) {
  Proc& p = procs_[0];
  p.exited = true;  // not signalled from now on
  if (adopt_fd >= 0) close(adopt_fd), adopt_fd = -1;
  // Its last bootstrap messages (e.g. Finalized) before judging, as in reap().
  if (p.sock >= 0) read_client(p.sock, true);
  if (status_ && status_[0].state == static_cast<uint32_t>(ProcState::Done)) p.finalized = true;
  if (failing_ || p.finalized) return;
  // Died: before bspk_finalize, in the superstep it published last. Exited:
  // named as for any process (a BSPlib program's "(BSPlib's end)").
  if (died)
    fail_job(1, strprintf("bspkrun: pid 0 (os pid %d, the process that started this job) died before calling "
                          "bspk_finalize%s; ending the job",
                          (int)adopt_pid, where(0).c_str()));
  else
    fail_job(1, strprintf("bspkrun: pid 0 (os pid %d, the process that started this job)%s; ending the job",
                          (int)adopt_pid,
                          where(0, status_ ? exit_text(status_[0].state) : unfinalized_text).c_str()));
}

// SIGTERM goes queued with the job's exit status (kEndOfJob | status): pid 0
// exits with it (bsplib/spawn.cpp), so that a program started without a
// launcher ends as bspkrun would (139 after a crash, 1 after bsp_abort), not
// "Terminated".
void Launcher::signal_parent(int sig) {
  sigval value{};
  value.sival_int = end_of_job_value(exit_status_);
  if (adopt_pidfd_ >= 0) {
    siginfo_t info{};
    info.si_signo = sig;
    info.si_code = SI_QUEUE;
    info.si_pid = getpid();
    info.si_uid = getuid();
    info.si_value = value;
    if (sig != SIGTERM || pidfd_send_signal_(adopt_pidfd_, sig, &info) != 0) pidfd_send_signal_(adopt_pidfd_, sig);
  } else if (getppid() == adopt_pid) {  // never a reused pid: it is still our parent
    if (sig != SIGTERM || sigqueue(adopt_pid, sig, value) != 0) kill(adopt_pid, sig);
  }
}

// Writes n bytes of process p's output (whole lines, or a piece of a line
// longer than kMaxLine) with one write where the stream takes it: lines of
// different processes never mix, and a process printing many short lines
// costs one write per read of its pipe, not one per line (until 2026-12-04:
// 200 MB of 6-byte lines took 58 s, Open MPI's mpirun 3.3 s).
// When the stream was left in the middle of another process's long line (a
// piece went out), a newline first, so that this output starts a line of its
// own and that line goes on, later, on a line of its own too (with its
// `[rank] ` under --tag-output); a stream one process writes alone is
// forwarded byte for byte. (Until 2026-12-07 a short line of another process
// was glued onto the end of the piece.)
void Launcher::emit(Proc& p, const char* data, size_t n, bool is_err) {
  FILE* f = is_err ? stderr : stdout;
  bool& mid = is_err ? p.err_mid : p.out_mid;
  int& owner = stream_mid_[is_err ? 1 : 0];
  if (owner >= 0 && owner != p.rank && n > 0) {
    std::fputc('\n', f);
    Proc& o = procs_[static_cast<size_t>(owner)];
    (is_err ? o.err_mid : o.out_mid) = false;
    (is_err ? o.err_cut : o.out_cut) = true;
    owner = -1;
  }
  bool& cut = is_err ? p.err_cut : p.out_cut;
  if (cut && n > 0) {  // the newline that ends the line cut short went out already
    cut = false;
    if (data[0] == '\n') ++data, --n;
    if (n == 0) return;
  }
  if (!tag) {
    std::fwrite(data, 1, n, f);
  } else {
    const std::string prefix = strprintf("[%d] ", p.rank);
    std::string out;
    out.reserve(n + n / 8 + prefix.size());
    for (size_t at = 0; at < n;) {
      const char* nl = static_cast<const char*>(std::memchr(data + at, '\n', n - at));
      const size_t end = nl ? static_cast<size_t>(nl - data) + 1 : n;
      if (!mid) out += prefix;
      out.append(data + at, end - at);
      mid = !nl;
      at = end;
    }
    std::fwrite(out.data(), 1, out.size(), f);
  }
  if (n) {
    mid = data[n - 1] != '\n';
    owner = mid ? p.rank : -1;
  }
  std::fflush(f);
}

// Forwards what the pipe has now (it is non-blocking): its whole lines, or a
// line's first kMaxLine bytes; at its end (or `eof`) the rest too, ended with a
// newline if it had none, and closes it.
void Launcher::forward(Proc& p, int fd, bool is_err, bool eof) {
  std::string& buf = is_err ? p.err_buf : p.out_buf;
  for (size_t got = 0; !eof && got < kReadChunk;) {
    const size_t old = buf.size();
    buf.resize(old + 65536);
    ssize_t n = read(fd, &buf[old], 65536);
    buf.resize(old + static_cast<size_t>(n > 0 ? n : 0));
    if (n > 0) got += static_cast<size_t>(n);
    else if (n < 0 && errno == EINTR) continue;
    else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    else eof = true;
  }
  size_t upto = buf.rfind('\n');
  upto = upto == std::string::npos ? 0 : upto + 1;
  if (eof || buf.size() - upto >= kMaxLine) upto = buf.size();
  if (upto) emit(p, buf.data(), upto, is_err);
  buf.erase(0, upto);
  // (pid 0's held line, read by forward_prompt, when stdin is a terminal)
  if (stdin_tty_ && p.rank == 0) {
    double& held = is_err ? p.err_held : p.out_held;
    if (buf.empty()) held = 0;
    else if (held == 0 || upto > 0) held = now_s();
  }
  if (eof) {
    bool& mid = is_err ? p.err_mid : p.out_mid;
    if (mid) emit(p, "\n", 1, is_err);
    close(fd);
    (is_err ? p.err_fd : p.out_fd) = -1;
  }
}

// pid 0's line held back for its newline for kPromptDelay, when stdin is a
// terminal: out as it is (a prompt; the rest of the line follows it, or, if
// another process writes first, goes on on a line of its own: emit). Only
// there, so that elsewhere a process descheduled in the middle of a line
// (4 processes on 2 cores) never has its line split.
void Launcher::forward_prompt() {
  if (!stdin_tty_ || procs_.empty()) return;
  Proc& p = procs_[0];
  const double t = now_s();
  for (bool is_err : {false, true}) {
    std::string& buf = is_err ? p.err_buf : p.out_buf;
    double& held = is_err ? p.err_held : p.out_held;
    if (buf.empty() || held == 0 || t - held < kPromptDelay) continue;
    emit(p, buf.data(), buf.size(), is_err);
    buf.clear();
    held = 0;
  }
}

void Launcher::accept_client() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0 && errno == EINTR) continue;
    if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
      // (files_for_job made room for every process's connection: something
      // else took the descriptors) Polling again would spin, and the process
      // would wait for its connection until BSPK_SYNC_TIMEOUT.
      rlimit rl{};
      getrlimit(RLIMIT_NOFILE, &rl);
      fail_job(1, strprintf("bspkrun: cannot accept a process's bootstrap connection: %s (`ulimit -n` %llu); "
                            "ending the job",
                            strerror(errno), static_cast<unsigned long long>(rl.rlim_cur)));
      return;
    }
    if (fd < 0) return;  // none left (EAGAIN): poll again
    clients_[fd].in.set_max_frame(kPreHelloFrame);
  }
}

void Launcher::drop_client(int fd) {
  close(fd);
  clients_.erase(fd);
  for (auto& p : procs_)
    if (p.sock == fd) p.sock = -1;
}

// Takes what connection `fd` has sent and acts on each whole message. `drain`:
// its process is gone, so take everything left (its last messages, e.g.
// Finalized, before it is judged) instead of one chunk.
void Launcher::read_client(int fd, bool drain) {
  auto it = clients_.find(fd);
  if (it == clients_.end()) return;
  Client& c = it->second;  // stays valid while fd is in clients_ (std::map)
  const size_t pre_hello = 4 + size_t{kPreHelloFrame};
  size_t max_read = c.rank >= 0 ? (drain ? SIZE_MAX : kReadChunk)
                                : (c.in.buffered() < pre_hello ? pre_hello - c.in.buffered() : 0);
  const bool open = c.in.fill(fd, max_read);
  Msg type;
  std::string pl;
  while (c.in.next(&type, &pl)) {
    handle_msg(fd, type, pl);
    if (!clients_.count(fd)) return;  // dropped
  }
  if (c.in.bad() && c.rank >= 0) {
    const Proc& p = procs_[c.rank];
    fail_job(1, strprintf("bspkrun: pid %d (os pid %d) sent a malformed bootstrap message (bad frame length); "
                          "ending the job",
                          p.rank, (int)p.pid));
    drop_client(fd);
  } else if (c.rank < 0 && (c.in.bad() || c.in.buffered() >= pre_hello)) {
    std::fprintf(stderr, "bspkrun: warning: dropped a connection to the bootstrap socket that sent no valid "
                         "hello (a frame longer than %u bytes)\n", kPreHelloFrame);
    drop_client(fd);
  } else if (!open) {
    drop_client(fd);  // the process exited or closed; reap() reports how
  }
}

// Queues a message for connection `fd` and writes what its socket takes now;
// the rest goes when poll() says it can (flush_client).
void Launcher::send_to(int fd, Msg type, const std::string& pl) {
  send_to(fd, std::make_shared<const std::string>(frame(type, pl)));
}

void Launcher::send_to(int fd, const std::shared_ptr<const std::string>& f) {
  auto it = clients_.find(fd);
  if (it == clients_.end()) return;
  it->second.out.push_back(f);
  flush_client(fd);
}

void Launcher::flush_client(int fd) {
  auto it = clients_.find(fd);
  if (it == clients_.end()) return;
  Client& c = it->second;
  while (!c.out.empty()) {
    const std::string& f = *c.out.front();
    ssize_t n = send(fd, f.data() + c.out_off, f.size() - c.out_off, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // full: POLLOUT wakes us
    if (n < 0) {  // the process is gone: its end of stream (and reap()) report it
      c.out.clear();
      c.out_off = 0;
      return;
    }
    c.out_off += static_cast<size_t>(n);
    if (c.out_off == f.size()) c.out.pop_front(), c.out_off = 0;
  }
}

void Launcher::handle_msg(int fd, Msg type, const std::string& pl) {
  Client& c = clients_.at(fd);
  if (type == Msg::Hello) {
    HelloInfo h;
    std::string why;
    const int32_t rank = parse_hello(pl, &h) ? h.rank : -1;
    if (rank < 0 || rank >= nprocs) why = strprintf("rank %d is not in [0, %d)", rank, nprocs);
    else if (procs_[rank].hello) why = strprintf("rank %d connected twice", rank);
    else if (adopting() && h.os_pid != procs_[rank].pid)
      why = strprintf("os pid %d connected as pid %d, which is os pid %d (--adopt)", (int)h.os_pid, rank,
                      (int)procs_[rank].pid);
    else why = version_mismatch(h);
    if (!why.empty()) {
      send_to(fd, Msg::Refused, why);
      fail_job(1, "bspkrun: refused a process: " + why);
      return;
    }
    procs_[rank].hello = true;
    procs_[rank].sock = fd;
    c.rank = rank;
    c.in.set_max_frame(kMaxFrame);
    check_unstartable();
    return;
  }
  if (c.rank < 0) {  // anything but a Hello first: not one of ours
    drop_client(fd);
    return;
  }
  int rank = c.rank;
  switch (type) {
    case Msg::Allgather: {
      if (gathered_[rank]) {
        fail_job(1, strprintf("bspkrun: pid %d started a second exchange before the first ended", rank));
        return;
      }
      gathered_[rank] = true;
      gather_[rank] = pl;
      if (ngathered_ == 0) gather_started_ = now_s();
      if (++ngathered_ == nprocs) {
        auto res = std::make_shared<const std::string>(frame(Msg::AllgatherResult, pack_blobs(gather_)));
        for (auto& p : procs_)
          if (p.sock >= 0) send_to(p.sock, res);
        ngathered_ = 0;
        std::fill(gathered_.begin(), gathered_.end(), false);
      }
      break;
    }
    case Msg::Abort: {
      int32_t code = 1;
      if (pl.size() >= 4) std::memcpy(&code, pl.data(), 4);
      // The first abort's message is printed here, once for the job (the
      // process does not print it), after what the process wrote before it.
      // (An empty message: another process of the job claimed the printing,
      // see api/bspk.cpp; its Abort may come second.)
      if (!abort_printed_ && pl.size() > 4) {
        abort_printed_ = true;
        Proc& p = procs_[rank];
        if (p.out_fd >= 0) forward(p, p.out_fd, false, false);
        if (p.err_fd >= 0) forward(p, p.err_fd, true, false);
        std::fflush(stdout);
        std::fprintf(stderr, "%s\n", pl.c_str() + 4);
      }
      fail_job(code ? code : 1, strprintf("bspkrun: pid %d%s; ending the job", rank, where(rank, abort_text).c_str()));
      break;
    }
    case Msg::Finalized:
      procs_[rank].finalized = true;
      break;
    default:
      break;
  }
}

void Launcher::kill_all(int sig) {
  for (auto& p : procs_) {
    if (p.pid <= 0) continue;
    if (p.exited) {
      // Its process group may live on: a process it started that holds its
      // output open. (While the group has a member its id is not reused.)
      if (!adopting() && (p.out_fd >= 0 || p.err_fd >= 0)) kill(-p.pid, sig);
      continue;
    }
    if (adopted(p.rank)) signal_parent(sig);  // that process only: its group is the user's
    else if (adopting()) kill(p.pid, sig);    // an adopted child, in that group too (not reaped yet)
    else kill(-p.pid, sig), kill(p.pid, sig);
  }
}

// A signal for the program (SIGUSR1, SIGUSR2): to each process of the job
// that runs, not to what it started (its process group).
void Launcher::forward_signal(int sig) {
  for (auto& p : procs_) {
    if (p.pid <= 0 || p.exited) continue;
    if (adopted(p.rank)) signal_parent(sig);
    else kill(p.pid, sig);
  }
}

// SIGTSTP (^Z at the terminal): stop every process of the job, then bspkrun
// itself; when bspkrun is continued (fg, bg, SIGCONT) continue them. Their
// time-outs do not count the pause (base/clock.h kPauseGap).
void Launcher::suspend_job() {
  g_suspend = 0;
  if (failing_) return;
  kill_all(SIGSTOP);
  raise(SIGSTOP);  // (SIGTSTP's default would be discarded in an orphaned process group)
  kill_all(SIGCONT);
}

void Launcher::fail_job(int status, const std::string& msg) {
  if (failing_) return;
  failing_ = true;
  exit_status_ = status;
  std::fflush(stdout);
  std::fprintf(stderr, "%s\n", msg.c_str());
  std::fflush(stderr);
  kill_all(SIGTERM);
  // A stopped process acts on SIGTERM only once continued (else only the
  // SIGKILL 2 s later would end it).
  kill_all(SIGCONT);
  kill_deadline_ = now_s() + 2.0;
}

void Launcher::reap() {
  for (;;) {
    int st = 0;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid <= 0) return;
    for (auto& p : procs_) {
      if (p.pid != pid) continue;
      p.exited = true;
      p.status = st;
      // Drain its output and bootstrap messages (e.g. Finalized) before judging.
      if (p.out_fd >= 0) forward(p, p.out_fd, false, false);
      if (p.err_fd >= 0) forward(p, p.err_fd, true, false);
      if (p.sock >= 0) read_client(p.sock, true);
      if (status_ && status_[p.rank].state == static_cast<uint32_t>(ProcState::Done)) p.finalized = true;
      if (failing_) break;
      if (WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        fail_job(128 + sig, strprintf("bspkrun: pid %d (os pid %d) was killed by signal %d (%s)%s; "
                                      "ending the job",
                                      p.rank, (int)pid, sig, strsignal(sig), where(p.rank).c_str()));
      } else if (WEXITSTATUS(st) != 0) {
        fail_job(WEXITSTATUS(st),
                 strprintf("bspkrun: pid %d (os pid %d) exited with status %d%s; ending the job",
                           p.rank, (int)pid, WEXITSTATUS(st), where(p.rank).c_str()));
      } else if (!p.hello && !adopting()) {
        check_unstartable();
      } else if (!p.finalized) {
        fail_job(1, strprintf("bspkrun: pid %d (os pid %d)%s; ending the job", p.rank, (int)pid,
                              where(p.rank, status_ ? exit_text(status_[p.rank].state) : unfinalized_text).c_str()));
      }
      break;
    }
  }
}


void Launcher::check_unstartable() {
  if (failing_ || adopting()) return;
  const Proc* gone = nullptr;
  const Proc* waiting = nullptr;
  for (const Proc& p : procs_) {
    if (p.exited && !p.hello && WIFEXITED(p.status) && WEXITSTATUS(p.status) == 0 && !gone) gone = &p;
    if (p.hello && !p.exited && !waiting) waiting = &p;
  }
  if (gone && waiting)
    fail_job(1, strprintf("bspkrun: pid %d (os pid %d) exited with status 0 without calling bspk_init, while pid %d "
                          "waits for it in bspk_init (the job cannot start); ending the job",
                          gone->rank, (int)gone->pid, waiting->rank));
}

int Launcher::run() {
  hwloc_topology_init(&topo_);
  if (hwloc_topology_load(topo_) != 0) {
    hwloc_topology_destroy(topo_);
    topo_ = nullptr;
  }
  if (topo_) {
    avail_ = hwloc_bitmap_alloc();
    if (hwloc_get_cpubind(topo_, avail_, HWLOC_CPUBIND_PROCESS) != 0 || hwloc_bitmap_iszero(avail_))
      hwloc_bitmap_copy(avail_, hwloc_topology_get_allowed_cpuset(topo_));
    else
      hwloc_bitmap_and(avail_, avail_, hwloc_topology_get_allowed_cpuset(topo_));
  }
  if (bind_mode == "core" && !topo_) std::fprintf(stderr, "bspkrun: warning: hwloc unavailable; not binding\n");
  setup_rendezvous();
  procs_.resize(static_cast<size_t>(nprocs));
  gather_.resize(static_cast<size_t>(nprocs));
  gathered_.assign(static_cast<size_t>(nprocs), false);

  // A signal ignored when bspkrun started stays ignored, for bspkrun and (by
  // exec) for the job: `nohup bspkrun ... &` survives the terminal's hangup,
  // and a job started in the background by a non-interactive shell ignores
  // SIGINT, as any other program there would. (Until 2026-12-04 bspkrun
  // caught SIGHUP regardless and ended a nohup'ed job at logout.)
  auto ignored = [](int sig) {
    struct sigaction old{};
    return sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN;
  };
  auto catch_unless_ignored = [&ignored](int sig, void (*handler)(int)) {
    if (ignored(sig)) return;
    struct sigaction sa{};
    sa.sa_handler = handler;
    sigaction(sig, &sa, nullptr);
  };
  catch_unless_ignored(SIGINT, on_signal);
  catch_unless_ignored(SIGTERM, on_signal);
  catch_unless_ignored(SIGHUP, on_signal);
  // ^Z suspends the whole job, not only bspkrun (its processes are in
  // process groups of their own, out of the terminal's reach); a program
  // started without a launcher shares pid 0's group, which the terminal stops.
  if (!adopting()) catch_unless_ignored(SIGTSTP, on_tstp);
  catch_unless_ignored(SIGUSR1, on_usr);
  catch_unless_ignored(SIGUSR2, on_usr);
  // bspkrun's own writes to a closed output get EPIPE; the job's processes
  // get SIGPIPE as bspkrun got it (spawn restores it: an ignored signal would
  // stay ignored across exec, and `yes | head` in a job then reported
  // "Broken pipe" instead of ending quietly).
  pipe_ignored_ = ignored(SIGPIPE);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGCHLD, SIG_DFL);  // ignored (inherited), the kernel would reap our processes before reap() sees how

  stdin_tty_ = isatty(STDIN_FILENO) != 0;
  if (adopting()) {
    adopt_children_();
    adopt_parent();
  } else if (!files_for_job()) {
    for (int q = 0; q < nprocs; ++q) procs_[q].rank = q, procs_[q].exited = true, procs_[q].status = 1 << 8;
  } else {
    for (int r = 0; r < nprocs; ++r)
      if (!spawn(r)) {  // this one and those after it never ran: exited, as far as the loop below is concerned
        for (int q = r; q < nprocs; ++q) procs_[q].rank = q, procs_[q].exited = true, procs_[q].status = 1 << 8;
        break;
      }
  }
  const double t0 = now_s();
  double last_look = t0;  // this loop's last look at the clock (it looks every 50 ms while it runs)
  bool sent_kill = false;
  double ended_at = 0;  // when every process had exited

  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<int, int>> what;  // (kind, index): 0 listen, 1 out, 2 err, 3 client
    fds.push_back({listen_fd_, static_cast<short>(failing_ ? 0 : POLLIN), 0});  // (ending: no one new)
    what.push_back({0, 0});
    for (auto& p : procs_) {
      if (p.out_fd >= 0) fds.push_back({p.out_fd, POLLIN, 0}), what.push_back({1, p.rank});
      if (p.err_fd >= 0) fds.push_back({p.err_fd, POLLIN, 0}), what.push_back({2, p.rank});
    }
    for (auto& [fd, c] : clients_)
      fds.push_back({fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0}), what.push_back({3, fd});
    if (adopt_pid > 0 && !procs_[0].exited) {  // wake at once when pid 0 dies or leaves
      if (adopt_pidfd_ >= 0) fds.push_back({adopt_pidfd_, POLLIN, 0}), what.push_back({4, 0});
      if (adopt_fd >= 0) fds.push_back({adopt_fd, 0, 0}), what.push_back({4, 0});
    }
    if (children_unsent_ > 0) fds.push_back({children_fd, POLLOUT, 0}), what.push_back({5, 0});

    int n = poll(fds.data(), fds.size(), 50);
    if (n > 0) {
      for (size_t i = 0; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        auto [k, idx] = what[i];
        if (k == 0) accept_client();
        else if (k == 1) forward(procs_[idx], procs_[idx].out_fd, false, false);
        else if (k == 2) forward(procs_[idx], procs_[idx].err_fd, true, false);
        else if (k == 4) continue;  // check_parent() below
        else if (k == 5) send_children();
        else {
          if (fds[i].revents & POLLOUT) flush_client(idx);
          if (fds[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) read_client(idx, false);
        }
      }
    }
    forward_prompt();
    reap();
    check_parent();
    if (g_suspend) suspend_job();
    if (g_usr1) g_usr1 = 0, forward_signal(SIGUSR1);
    if (g_usr2) g_usr2 = 0, forward_signal(SIGUSR2);
    if (g_signal && !failing_)
      fail_job(128 + g_signal, strprintf("bspkrun: received signal %d (%s); ending the job", (int)g_signal,
                                         strsignal(g_signal)));
    // A pause of bspkrun itself (the job suspended) is not the late
    // process's delay (base/clock.h kPauseGap).
    if (const double tl = now_s(); tl - last_look > kPauseGap) gather_started_ += tl - last_look, last_look = tl;
    else last_look = tl;
    if (!failing_ && ngathered_ > 0 && now_s() - gather_started_ > exchange_timeout) {
      std::string missing;
      int shown = 0;
      for (int r = 0; r < nprocs && shown < 16; ++r)
        if (!gathered_[r]) missing += strprintf(" %d", r), ++shown;
      fail_job(1, strprintf("bspkrun: %d of %d processes have waited %.0f s in the start-up exchange "
                            "(bspk_init) for pid(s)%s%s; ending the job (BSPK_SYNC_TIMEOUT)",
                            ngathered_, nprocs, exchange_timeout, missing.c_str(),
                            nprocs - ngathered_ > shown ? " ..." : ""));
    }
    if (timeout > 0 && !failing_ && now_s() - t0 > timeout)
      fail_job(124, strprintf("bspkrun: time limit of %g s reached; ending the job", timeout));
    if (failing_ && !sent_kill && now_s() > kill_deadline_) {
      kill_all(SIGKILL);
      sent_kill = true;
    }
    // Output pipes that something else still holds open once the job's
    // processes have ended (a process they started in the background, or one
    // started with setsid after a failure) are not waited for beyond a second
    // after the last process's exit or the SIGKILL: bspkrun ends with its
    // job, as mpirun does (until 2026-12-05 `sleep 60 &` in a job held
    // bspkrun for the minute). What the processes wrote is in the pipes by
    // then and is forwarded; later output of what they left running is not.
    if (ended_at == 0 && std::all_of(procs_.begin(), procs_.end(), [](const Proc& p) { return p.exited; }))
      ended_at = now_s();
    const bool stop_forwarding =
        (sent_kill && now_s() > kill_deadline_ + 1.0) || (ended_at > 0 && now_s() > ended_at + 1.0);
    bool all_done = true;
    for (auto& p : procs_) {
      if (p.exited && stop_forwarding) {  // what is there now, then close
        if (p.out_fd >= 0) forward(p, p.out_fd, false, false);
        if (p.out_fd >= 0) forward(p, p.out_fd, false, true);
        if (p.err_fd >= 0) forward(p, p.err_fd, true, false);
        if (p.err_fd >= 0) forward(p, p.err_fd, true, true);
      }
      if (!p.exited || p.out_fd >= 0 || p.err_fd >= 0) all_done = false;
    }
    if (all_done) break;
  }
  if (!failing_) {
    for (auto& p : procs_) {
      int code = WIFSIGNALED(p.status) ? 128 + WTERMSIG(p.status) : WEXITSTATUS(p.status);
      if (code) {
        exit_status_ = code;
        break;
      }
    }
  }
  // libfabric removes shm regions at a normal exit; a killed process leaves its own.
  remove_shm_regions(jobid_, -1);
  remove_job_dir(dir_);
  if (avail_) hwloc_bitmap_free(avail_);
  if (topo_) hwloc_topology_destroy(topo_);
  if (adopt_fd >= 0) close(adopt_fd);
  if (children_fd >= 0) close(children_fd);
  if (adopt_pidfd_ >= 0) close(adopt_pidfd_);
  return exit_status_;
}

}  // namespace

namespace {

// Started as `bsprun` (the name installed for BSPlib programs).
bool invoked_as_bsprun(const char* argv0) {
  const char* base = std::strrchr(argv0, '/');
  base = base ? base + 1 : argv0;
  return std::strcmp(base, "bsprun") == 0;
}

// mpirun's spelling `-np P` (BSPonMPI's bsprun wraps mpirun) as --np, in the
// launcher's options only (before the program, whose own arguments are
// left alone).
void accept_mpirun_np(int argc, char** argv) {
  static char np[] = "--np";
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (a[0] != '-' || std::strcmp(a, "--") == 0) return;  // the program starts here
    if (std::strcmp(a, "-np") == 0) argv[i] = np;
    if (std::strncmp(a, "-np=", 4) == 0) {  // -np=P (CLI11 read it as -n with the value "p=P")
      static std::string np_eq;
      np_eq = std::string("--np=") + (a + 4);
      argv[i] = np_eq.data();
    }
    static const char* const with_value[] = {"-n", "--np", "-np", "--provider", "--bind", "--timeout", "--exe",
                                             "--adopt", "--adopt-fd", "--adopt-children", "--children-fd"};
    for (const char* o : with_value)
      if (std::strcmp(a, o) == 0) {
        ++i;  // its value
        break;
      }
  }
}

}  // namespace

int main(int argc, char** argv) {
  accept_mpirun_np(argc, argv);
  Launcher L;
  // Usage errors name the command the user typed (bsprun for BSPlib
  // programs); the job's own messages stay "bspkrun:", one launcher.
  const bool as_bsprun = invoked_as_bsprun(argv[0]);
  const char* const me = as_bsprun ? "bsprun" : "bspkrun";
  CLI::App app{std::string(me) + ": start a BSPk job of P processes on this machine"};
  app.add_option("-n,--np", L.nprocs, "number of processes")
      ->required()
      ->check([](const std::string& v) {
        char* end = nullptr;
        errno = 0;
        const long n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || errno || n < 1 || n > 4096)
          return "'" + v + "' is not a number of processes (an integer from 1 to 4096)";
        return std::string();
      });
  app.add_option("--provider", L.provider,
                 "libfabric provider, by any name `fi_info -l` lists (tcp = net where offered, else tcp;ofi_rxm; "
                 "\"tcp;ofi_rxm\", shm, verbs = verbs;ofi_rxm, \"udp;ofi_rxd\", efa, cxi, ...); it must offer what BSPk needs (README \"Providers\"). "
                 "A filter as FI_PROVIDER's also works ('^shm', 'tcp,shm': BSPk's choice within it). "
                 "Default: shm on one host; FI_PROVIDER is honoured")
      ->check([](const std::string& v) { return v.empty() ? std::string("empty provider name") : std::string(); });
  // BSPK_BIND (the processes' own setting without bspkrun) is --bind's default.
  if (const char* b = std::getenv(config::name(config::Var::BIND)); b && *b) L.bind_mode = b;
  app.add_option("--bind", L.bind_mode,
                 "bind each process to one core with hwloc, round-robin (core), or not (none); auto (the default, "
                 "or BSPK_BIND): core when the processes outnumber the cores bspkrun may use, else none")
      ->check(CLI::IsMember({"auto", "core", "none"}));
  // (CLI::PositiveNumber's own message prints the largest double in full: 300 digits.)
  app.add_option("--timeout", L.timeout, "end the job after S seconds (exit status 124)")
      ->check([](const std::string& v) {
        char* end = nullptr;
        const double s = std::strtod(v.c_str(), &end);
        return end != v.c_str() && *end == '\0' && s > 0 && std::isfinite(s)
                   ? std::string()
                   : "'" + v + "' is not a positive number of seconds (e.g. --timeout 600)";
      });
  app.add_flag("--tag-output", L.tag, "prefix every output line with [pid]");
  app.add_flag("--report-bindings", L.report_bindings, "print each process's core binding");
  app.add_option("--exe", L.exe, "file to execute (default: the program, searched in PATH; the program is then "
                                 "only argv[0])");
  auto* adopt = app.add_option("--adopt", L.adopt_pid,
                               "pid 0 is this running process, which started bspkrun; pids 1..P-1 are the "
                               "--adopt-children; bspkrun starts no program (see bsplib/spawn.h)")
                    ->check(CLI::PositiveNumber);
  app.add_option("--adopt-fd", L.adopt_fd, "with --adopt: the pipe that gets pid 0's NAME=VALUE lines, then \"ready\"")
      ->check(CLI::NonNegativeNumber)
      ->needs(adopt);
  adopt->needs("--adopt-fd");
  auto* kids = app.add_option("--adopt-children", L.adopt_children,
                              "with --adopt: os pids of pids 1..P-1, comma-separated: children of bspkrun")
                   ->delimiter(',')
                   ->check(CLI::PositiveNumber)
                   ->needs(adopt);
  app.add_option("--children-fd", L.children_fd,
                 "with --adopt-children: a SOCK_SEQPACKET socket that gets one record of settings per child")
      ->check(CLI::NonNegativeNumber)
      ->needs(kids);
  kids->needs("--children-fd");
  // --version and --info need no -n or program: their callbacks end the
  // parse (CLI11 runs option callbacks before it checks required options).
  bool version_asked = false;
  app.add_flag("-V,--version", version_asked, "print BSPk's version and the protocols this build speaks, and exit")
      ->each([&version_asked](const std::string&) {
        version_asked = true;
        throw CLI::Success();
      });
  std::string info_format;
  app.add_flag("--info{text}", info_format,
               "print every BSPK_* setting (its value here, default and meaning) and exit; "
               "--info=markdown: the README's Environment table")
      ->check(CLI::IsMember({"text", "markdown"}))
      ->option_text("[=text|markdown]")
      ->each([&info_format](const std::string& f) {
        info_format = f;
        throw CLI::Success();
      });
  app.prefix_command();  // the first positional is the program; everything after it is its own
  app.footer("Everything from the program name on is passed to the program unchanged.\n"
             "Environment: BSPK_SYNC_TIMEOUT, BSPK_FRAME_SIZE, BSPK_STATS, BSPK_VERBOSE, ... (bspkrun --info "
             "lists them all).");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (version_asked) {
      std::printf("%s (BSPk) %d.%d.%d; bootstrap protocol %u, wire protocol %u (every process of a job must "
                  "speak the same)\n",
                  me, BSPK_VERSION_MAJOR, BSPK_VERSION_MINOR,
                  BSPK_VERSION_PATCH, kProtocolVersion,
                  version::kWireVersion);
      return 0;
    }
    if (!info_format.empty()) {
      std::fputs((info_format == "markdown" ? config::markdown_table() : config::info_text()).c_str(), stdout);
      return 0;
    }
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    // A usage error: named as the command typed (bsprun or bspkrun), exit
    // status 2 as for an unknown option (CLI11's own codes, 105 and up, mean
    // nothing to a script).
    std::fprintf(stderr, "%s: %s (%s --help lists the options)\n", me, e.what(), me);
    return 2;
  }
  L.cmd = app.remaining();
  if (L.bind_mode != "auto" && L.bind_mode != "core" && L.bind_mode != "none") {  // (from BSPK_BIND)
    std::fprintf(stderr, "%s: BSPK_BIND='%s' is not one of auto, core, none\n", me, L.bind_mode.c_str());
    return 2;
  }
  // An unknown option before the program ends the options (prefix_command):
  // say so rather than "cannot execute '--bogus'". After "--" anything is the
  // program.
  if (!L.cmd.empty() && L.cmd[0].size() > 1 && L.cmd[0][0] == '-' && L.cmd[0] != "--") {
    std::fprintf(stderr, "%s: unknown option '%s' (%s --help lists them; the program and its "
                 "arguments come after %s's options, or after --)\n", me, L.cmd[0].c_str(), me, me);
    return 2;
  }
  if (!L.cmd.empty() && L.cmd[0] == "--") L.cmd.erase(L.cmd.begin());  // kept by prefix_command()
  if (L.adopt_pid > 0 && !L.cmd.empty()) {
    std::fprintf(stderr, "bspkrun: --adopt starts no program (pids 1..P-1 are --adopt-children), but '%s' is given\n",
                 L.cmd[0].c_str());
    return 2;
  }
  if (L.cmd.empty() && L.adopt_pid <= 0) {
    std::fprintf(stderr, "%s: no program given\n%s", me, app.help().c_str());
    return 2;
  }
  // A BSPK_* variable that is no setting (a typo such as BSPK_SYNC_TIMOUT)
  // would be ignored without a word: say so, once for the job.
  for (const config::Unknown& u : config::unknown_settings())
    std::fprintf(stderr, "bspkrun: warning: %s\n", config::unknown_text(u).c_str());
  // A malformed value is left for the processes to report (each does, in bspk_init).
  // Run as bsprun (BSPlib programs): no time-out unless the user sets one.
  // Pid 0 of a BSPlib program may read stdin for as long as the user takes,
  // before bsp_begin (while the others wait in the start-up exchange) or
  // inside the SPMD section (BSPedupack's programs ask for n there), and
  // BSPonMPI and MulticoreBSP wait for ever; the processes' BSPlib layer
  // makes the same default for their syncs.
  if (as_bsprun && !std::getenv(config::name(config::Var::SYNC_TIMEOUT)))
    setenv(config::name(config::Var::SYNC_TIMEOUT), "off", 1);
  try {
    L.exchange_timeout = config::get_seconds(config::Var::SYNC_TIMEOUT, L.exchange_timeout);
    if (L.exchange_timeout == 0) L.exchange_timeout = std::numeric_limits<double>::infinity();  // off
  } catch (const bspk::Error&) {
  }
  try {
    if (config::get_bool(config::Var::REPORT_BINDINGS)) L.report_bindings = true;
  } catch (const bspk::Error&) {
  }
  if (!L.provider.empty()) {
    // nothing else to check: the runtime maps the name and refuses sockets
  } else if (const char* fp = std::getenv("FI_PROVIDER"); fp && provider_filter_is_sockets(fp)) {
    std::fprintf(stderr,
                 "bspkrun: FI_PROVIDER=%s: the sockets provider is deprecated and lost messages in "
                 "BSPk's tests; use --provider tcp or shm\n",
                 fp);
    return 2;
  }
  if (L.adopt_pid > 0) {
    std::string why = L.prepare_adopt();
    if (!why.empty()) {
      std::fprintf(stderr, "bspkrun: %s\n", why.c_str());
      return 2;
    }
  }
  if (L.adopt_pid > 0) return L.run();
  // Resolve the program now, so a typo is one clear message, not P of them
  // (a directory or a file without execute permission included: exec would
  // refuse them in every process).
  const std::string& prog = L.exe.empty() ? L.cmd[0] : L.exe;
  bool found = !bspk::search_path(prog).empty();
  if (!found && prog.find('/') == std::string::npos && bspk::executable_file(prog)) {
    // Not in PATH but here: run ./prog, as mpirun does (argv[0] stays prog).
    L.exe = "./" + prog;
    found = true;
  }
  if (!found) {
    std::fprintf(stderr, "%s: cannot execute '%s': not found or not executable\n", me, prog.c_str());
    return 127;
  }
  return L.run();
}
