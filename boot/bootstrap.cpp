// boot/bootstrap.cpp -- the singleton and bspkrun bootstraps.
#include "boot/bootstrap.h"

#include <bspk.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "base/config.h"
#include "base/env.h"
#include "base/error.h"
#include "boot/protocol.h"
#include "boot/slurm.h"

namespace bspk::boot {

namespace {

// Whether process `pid` (of this host) is stopped by a signal: state T in
// /proc/<pid>/stat (t, a debugger's stop, is not). False when it cannot be
// read (gone, another pid namespace).
bool stopped_by_signal(int32_t pid) {
  if (pid <= 0) return false;
  char path[48];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* rp = std::strrchr(buf, ')');  // the command name may hold spaces and parentheses
  return rp && rp[1] == ' ' && rp[2] == 'T';
}

class Singleton final : public Bootstrap {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char* kind() const override { return "singleton"; }
  std::string job_id() const override { return strprintf("%d-%lx", (int)getpid(), (long)time(nullptr)); }
  std::vector<std::string> allgather(const std::string& mine) override { return {mine}; }
  void abort(int, const std::string&) override {}
  void finalized() override {}
  bool alive() override { return true; }
  // No launcher reports the exit: say it as bspkrun would, and fail.
  bool exiting(uint32_t step) override {
    std::fflush(nullptr);
    std::fprintf(stderr, "bspk: pid 0 (os pid %d, the only process, started without a launcher) %s in %s\n",
                 (int)getpid(), exit_text(static_cast<uint32_t>(state()))(layer(), layer_step1()).c_str(),
                 step_text(step).c_str());
    return true;
  }
};

class Launcher final : public Bootstrap {
 public:
  Launcher(const std::string& path, int rank, int size) : rank_(rank), size_(size) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) fail(BSPK_ERR_BOOT, "socket(AF_UNIX) failed: %s", strerror(errno));
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (path.size() >= sizeof sa.sun_path)
      fail(BSPK_ERR_BOOT, "BSPK_BOOT_SOCKET path too long: %s", path.c_str());
    std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
      fail(BSPK_ERR_BOOT, "cannot reach the launcher at %s: %s (was this process started by bspkrun?)",
           path.c_str(), strerror(errno));
    std::string hello = hello_payload(rank);
    if (!send_msg(fd_, Msg::Hello, hello))
      fail(BSPK_ERR_BOOT, "lost the launcher while saying hello: %s", strerror(errno));
    if (auto sf = config::get_string(config::Var::STATUS_FILE)) map_status(*sf);
  }
  ~Launcher() override {
    if (fd_ >= 0) ::close(fd_);
    if (status_) munmap(status_, status_len_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* kind() const override { return "bspkrun"; }
  std::string job_id() const override {
    auto j = config::get_string(config::Var::JOBID);
    return j ? *j : strprintf("bspkrun-%d", (int)getppid());
  }

  std::vector<std::string> allgather(const std::string& mine) override {
    if (!send_msg(fd_, Msg::Allgather, mine))
      fail(BSPK_ERR_BOOT, "lost the launcher (bspkrun) during start-up exchange: %s", strerror(errno));
    Msg t;
    std::string p;
    if (!recv_msg(fd_, &t, &p))
      fail(BSPK_ERR_BOOT, "lost the launcher (bspkrun) during start-up exchange: %s", strerror(errno));
    if (t == Msg::Refused) fail(BSPK_ERR_BOOT, "the launcher refused this process: %s", p.c_str());
    if (t != Msg::AllgatherResult) fail(BSPK_ERR_BOOT, "unexpected message %d from the launcher", int(t));
    std::vector<std::string> out;
    if (!unpack_blobs(p, &out)) fail(BSPK_ERR_BOOT, "truncated all-gather result from the launcher");
    if (static_cast<int>(out.size()) != size_)
      fail(BSPK_ERR_BOOT, "all-gather returned %zu entries for %d processes", out.size(), size_);
    return out;
  }

  void abort(int code, const std::string& message) override {
    std::string p(4, '\0');
    int32_t c = code;
    std::memcpy(p.data(), &c, 4);
    p += message;
    if (!send_msg(fd_, Msg::Abort, p)) std::fprintf(stderr, "%s\n", message.c_str());  // launcher gone: say it here
  }
  bool launcher_prints_abort() const override { return true; }
  void finalized() override { send_msg(fd_, Msg::Finalized, ""); }

  bool alive() override {
    pollfd pfd{fd_, POLLIN, 0};
    int n = ::poll(&pfd, 1, 0);
    if (n <= 0) return true;
    if (pfd.revents & (POLLHUP | POLLERR)) return false;
    char c;
    ssize_t r = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return r != 0;
  }

  // A process stopped by a signal (state T in /proc; a debugger's stop is t)
  // computes nothing: it does not hold the time-out, so `kill -STOP` of one
  // process (or ^Z of a process started outside a job-control shell) does
  // not hang the job. A process stopped in a debugger still does: the job
  // waits for the user.
  int computing_peer(uint32_t step) override {
    if (!status_) return -1;
    stopped_ = -1;
    for (int j = 0; j < size_; ++j) {
      if (j == rank_) continue;
      const auto st = static_cast<ProcState>(status_[j].state);
      // (state and superstep are two stores: a torn pair only makes a wait
      // look legitimate for one more look, 0.1 s)
      if ((st == ProcState::Starting || st == ProcState::Running) && step_at_or_before(status_[j].superstep, step)) {
        if (!stopped_by_signal(status_[j].os_pid)) return j;
        stopped_ = j;
      }
    }
    return -1;
  }
  int stopped_peer() const override { return stopped_; }
  int failed_peer() const override {
    if (!status_) return -1;
    for (int j = 0; j < size_; ++j)
      if (j != rank_ && status_[j].state == static_cast<uint32_t>(ProcState::Failed)) return j;
    return -1;
  }

 protected:
  void publish_state(uint32_t step, ProcState st) override {
    if (!status_) return;
    status_[rank_].superstep = step;
    status_[rank_].state = static_cast<uint32_t>(st);
  }
  void publish_layer_step(uint32_t layer_step1) override {
    if (!status_) return;
    StatusSlot& me = status_[rank_];
    if (!layer_published_) {  // the name first, then (released) the step
      std::memcpy(me.layer, layer(), sizeof me.layer);
      __atomic_thread_fence(__ATOMIC_RELEASE);
      layer_published_ = true;
    }
    me.layer_step1 = layer_step1;
  }

 private:
  void map_status(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return;  // reports will lack the superstep; not fatal
    status_len_ = sizeof(StatusSlot) * static_cast<size_t>(size_);
    void* m = mmap(nullptr, status_len_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (m == MAP_FAILED) return;
    status_ = static_cast<StatusSlot*>(m);
    status_[rank_].os_pid = static_cast<int32_t>(getpid());
  }

  int fd_ = -1;
  int rank_, size_;
  StatusSlot* status_ = nullptr;
  int stopped_ = -1;  // computing_peer: the last process passed over as stopped
  bool layer_published_ = false;  // the layer's name is in the status slot
  size_t status_len_ = 0;
};

}  // namespace

void Bootstrap::keep_layer(const char* layer) { std::snprintf(layer_, sizeof layer_, "%s", layer); }

std::string Bootstrap::step_text(uint32_t step) const { return superstep_text(step, layer_, layer_step1_); }

std::string bootstrap_kind() {
  using config::Var;
  if (config::is_set(Var::BOOTSTRAP)) return config::get_enum(Var::BOOTSTRAP, "");  // validated
  if (config::is_set(Var::BOOT_SOCKET)) return "bspkrun";
  if (env::get("PMIX_RANK") && env::get("PMIX_NAMESPACE")) return "pmix";
  if (env::get("PMI_FD")) return "pmi2";
  if (env::get("SLURM_STEP_ID") && env::get("SLURM_PROCID")) return "slurm";
  return "singleton";
}

std::unique_ptr<Bootstrap> make_bootstrap() {
  std::string kind = bootstrap_kind();
  if (kind == "singleton") return std::make_unique<Singleton>();
  if (kind != "bspkrun") return make_slurm_bootstrap(kind);
  using config::Var;
  auto sock = config::get_string(Var::BOOT_SOCKET);
  if (!sock) fail(BSPK_ERR_BOOT, "BSPK_BOOTSTRAP=bspkrun but BSPK_BOOT_SOCKET is not set: start the program with bspkrun");
  int size = static_cast<int>(config::get_int(Var::NPROCS, -1));  // in [1, 2^20]
  int rank = size < 1 ? -1 : static_cast<int>(config::get_int(Var::RANK, -1, 0, size - 1));
  if (size < 1 || rank < 0)
    fail(BSPK_ERR_BOOT, "BSPK_BOOT_SOCKET is set but BSPK_RANK/BSPK_NPROCS are missing");
  return std::make_unique<Launcher>(*sock, rank, size);
}

}  // namespace bspk::boot
