// boot/hub.cpp -- the job hub (see hub.h).
#include "boot/hub.h"

#include <arpa/inet.h>
#include <bspk.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/clock.h"
#include "base/config.h"
#include "base/error.h"
#include "base/shm_segment.h"
#include "boot/auth.h"
#include "boot/protocol.h"

namespace bspk::boot {

namespace {

std::string u32s(uint32_t a, uint32_t b, int32_t c = 0) {
  std::string s(12, '\0');
  std::memcpy(&s[0], &a, 4);
  std::memcpy(&s[4], &b, 4);
  std::memcpy(&s[8], &c, 4);
  return s;
}

std::string u32(uint32_t a) { return std::string(reinterpret_cast<const char*>(&a), 4); }

uint32_t u32_at(const std::string& s, size_t off) {
  uint32_t v = 0;
  if (s.size() >= off + 4) std::memcpy(&v, &s[off], 4);
  return v;
}

// When a process's heartbeat is due (the job hub's and a client's): every
// `hb` seconds, and whenever its superstep, state or layer's superstep
// changed, at most every `tick`, so that failure reports name a recent
// superstep. The layer's superstep is a change of its own: the layer sets it
// after BSPk's changed, and a tick between the two must not leave the others
// with the old one until the next heartbeat.
struct BeatPacer {
  double last = 0;
  uint64_t key = ~0ull;  // superstep << 32 | state
  uint32_t layer = 0;
  uint32_t extra = 0;  // the hub's failed_summary()
  bool due(double now, double hb, double tick, uint32_t step, uint32_t state, uint32_t layer_step1,
           uint32_t more = 0) {
    const uint64_t k = uint64_t{step} << 32 | state;
    if (now - last < hb && ((k == key && layer_step1 == layer && more == extra) || now - last < tick)) return false;
    last = now, key = k, layer = layer_step1, extra = more;
    return true;
  }
};

std::string hostname() {
  char h[256] = {0};
  gethostname(h, sizeof h - 1);
  return h;
}

// Sends on this socket give up after 2 s (a peer whose host was cut off must
// not block the sender); the caller treats that as a lost peer.
void tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

std::mutex note_mu;
std::string note;  // hub_connect_note()
void set_note(std::string s) {
  std::lock_guard<std::mutex> lk(note_mu);
  note = std::move(s);
}

// Connect with a time-out; -1 (and *err) on failure. *err on entry: the
// previous attempt's error, if any (for hub_connect_note). *unresolved (if
// given): whether the failure was the resolver's (the host name unknown here).
int connect_to(const std::string& host, uint16_t port, double timeout, std::string* err, bool* unresolved = nullptr) {
  const std::string since = err->empty() ? std::string() : "; last error: " + *err;
  set_note(strprintf("resolving %s, the job hub's host%s", host.c_str(), since.c_str()));
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (unresolved) *unresolved = rc != 0;
  if (rc != 0) {
    *err = strprintf("%s: %s", host.c_str(), gai_strerror(rc));
    set_note(strprintf("resolving %s, the job hub's host; last error: %s", host.c_str(), err->c_str()));
    return -1;
  }
  set_note(strprintf("connecting to the job hub at %s:%u%s", host.c_str(), port, since.c_str()));
  int fd = -1;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) break;
    int c = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (c != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int soerr = 0;
      socklen_t sl = sizeof soerr;
      if (::poll(&p, 1, static_cast<int>(timeout * 1000)) == 1 &&
          getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
        c = 0;
      else
        errno = soerr ? soerr : ETIMEDOUT;
    }
    if (c != 0) {
      *err = strprintf("%s:%u: %s", host.c_str(), port, strerror(errno));
      ::close(fd);
      fd = -1;
      continue;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    tune(fd);
  }
  freeaddrinfo(res);
  return fd;
}

// Waits up to `timeout` for one framed message (blocking socket).
bool recv_timed(int fd, FrameReader& rd, Msg* t, std::string* pl, double timeout) {
  double end = now_s() + timeout;
  for (;;) {
    if (rd.next(t, pl)) return true;
    double left = end - now_s();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left * 1000) + 1) < 0 && errno != EINTR) return false;
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) && !rd.fill(fd)) return rd.next(t, pl);
  }
}


}  // namespace

std::string hub_connect_note() {
  std::lock_guard<std::mutex> lk(note_mu);
  return note;
}

HubTiming HubTiming::from_env() {
  HubTiming t;
  t.failure_timeout = config::get_seconds(config::Var::FAILURE_TIMEOUT, t.failure_timeout);  // 0 / off: never
  t.start_timeout = config::get_seconds(config::Var::START_TIMEOUT, t.start_timeout);
  return t;
}

double HubTiming::update_interval(int nprocs) const {
  // 10 ms, longer for big jobs so the hub gets at most ~100k updates/s.
  return std::min(heartbeat(), std::max(0.01, nprocs * 1e-4));
}

double HubTiming::heartbeat() const {
  if (failure_timeout <= 0) return 0.5;
  return std::clamp(failure_timeout / 20, 0.02, 0.5);
}

std::vector<std::string> local_ipv4_addresses() {
  std::vector<std::string> out, loop;
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return {"127.0.0.1"};
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & 0x1 /*IFF_UP*/)) continue;
    char buf[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
    (std::strncmp(buf, "127.", 4) == 0 ? loop : out).push_back(buf);
  }
  freeifaddrs(ifs);
  out.insert(out.end(), loop.begin(), loop.end());
  if (out.empty()) out.push_back("127.0.0.1");
  return out;
}

// ------------------------------------------------------------------ server

struct HubServer::Conn {
  int fd = -1;
  FrameReader rd{kPreAuthFrame};  // raised to kMaxFrame once proven
  int rank = -1;  // -1 until its proven hello
  std::string nonce;  // the hub's challenge to it
  double opened = 0;
  int os_pid = 0;
  std::string host;
  uint32_t step = 0, state = 0;
  uint32_t layer_step1 = 0;  // its layer's superstep + 1 (0: none)
  double last = 0;
  bool finalized = false, exiting = false, gone = false;
};

HubServer::HubServer(int nprocs, std::string job_tag, const std::vector<uint16_t>& ports,
                     const HubTiming& t, int own_rank, const LocalState* own, std::string key)
    : nprocs_(nprocs), tag_(std::move(job_tag)), key_(std::move(key)), t_(t), hub_rank_(own_rank), own_(own) {
  by_rank_.assign(static_cast<size_t>(nprocs), nullptr);
  gather_.resize(static_cast<size_t>(nprocs));
  gathered_.assign(static_cast<size_t>(nprocs), false);
  std::string errs;
  for (uint16_t port : ports) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) fail(BSPK_ERR_BOOT, "job hub: socket() failed: %s", strerror(errno));
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    sa.sin_port = htons(port);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 && ::listen(fd, 1024) == 0) {
      socklen_t sl = sizeof sa;
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &sl);
      listen_fd_ = fd;
      port_ = ntohs(sa.sin_port);
      break;
    }
    errs += strprintf(" %u (%s)", port, strerror(errno));
    ::close(fd);
  }
  if (listen_fd_ < 0)
    fail(BSPK_ERR_BOOT, "job hub: cannot listen on any of the TCP ports%s; set BSPK_HUB_PORT to a free port "
         "or start the job with srun --mpi=pmix", errs.c_str());
  if (config::get_bool(config::Var::VERBOSE))
    std::fprintf(stderr, "bspk: job hub of %s listening on TCP port %u (os pid %d)\n", tag_.c_str(), port_,
                 static_cast<int>(getpid()));
  thread_ = std::thread([this] { run(); });
}

bool HubServer::wait_informed(double secs) {
  // While processes may still be starting (the start-up window), wait for
  // them too: one that has not reached the hub yet would retry until its
  // start-up timeout and learn nothing once this process is gone (seen under
  // load: tests/cluster/slurm_single.sh "version mismatch (--mpi=none)").
  // After start-up everyone connected counts as informed at once, and one
  // that never came is waited for no longer (its own deadline is the same).
  const double end = std::max(now_s() + secs, start_deadline());
  auto all = [&] { return told_.load() && (informed_.load() >= nprocs_ || now_s() > start_deadline()); };
  while (!all() && now_s() < end) usleep(2000);
  return all();
}

HubServer::~HubServer() {
  {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_for(lk, std::chrono::duration<double>(std::max(t_.failure_timeout, 5.0)), [&] { return done_; });
  }
  // The job failed while processes were still starting (e.g. one was
  // refused): those that have not reached the hub yet would retry until their
  // start-up timeout and learn nothing once this process is gone. Keep
  // answering (a Refused: "the job has already failed") until every process
  // has heard, until the start-up window closes (a process that never came
  // is not waited for twice). Seen under load in tests/cluster/slurm_single.sh
  // "version mismatch (--mpi=none)".
  if (told_.load()) wait_informed(0);
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  for (Conn* c : conns_) {
    if (c->fd >= 0) ::close(c->fd);
    delete c;
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

std::string HubServer::who(int rank) const {
  const Conn* c = rank >= 0 && rank < nprocs_ ? by_rank_[static_cast<size_t>(rank)] : nullptr;
  if (!c) return strprintf("pid %d", rank);
  return strprintf("pid %d (os pid %d on %s)", rank, c->os_pid, c->host.c_str());
}

std::string HubServer::left_early(const Conn& c, std::string (*what)(const char*, uint32_t)) const {
  const char* layer = own_->layer_if_set();  // (every process of a job runs the same layer)
  return who(c.rank) + " " + what(layer, c.layer_step1) + " in " + superstep_text(c.step, layer, c.layer_step1);
}

void HubServer::send_to(Conn& c, uint8_t type, const std::string& pl) {
  if (c.fd < 0 || c.gone) return;
  if (!send_msg(c.fd, static_cast<Msg>(type), pl)) c.gone = true;  // its EOF or silence reports it
}

void HubServer::fail_job(int code, int failed, const std::string& report) {
  if (failed_) return;
  failed_ = true;
  report_ = report;
  std::string pl(8, '\0');
  int32_t c = code, f = failed;
  std::memcpy(&pl[0], &c, 4);
  std::memcpy(&pl[4], &f, 4);
  pl += report;
  // Everyone still running hears it, the failed process too if it can (a
  // stopped process that wakes up, a process that reported its own exit).
  for (Conn* k : conns_)
    if (k->rank >= 0 && !k->finalized) send_to(*k, uint8_t(Msg::Fail), pl);
  told_ = true;
  std::lock_guard<std::mutex> lk(mu_);
  done_ = true;
  cv_.notify_all();
}

void HubServer::drop(Conn& c, const char* why) {
  if (c.fd < 0) return;
  ::close(c.fd);
  c.fd = -1;
  if (c.rank < 0 || c.finalized || c.exiting) return;
  fail_job(1, c.rank,
           strprintf("%s died (%s); its last report: %s", who(c.rank).c_str(), why,
                     superstep_text(c.step, own_->layer_if_set(), c.layer_step1, state_name(c.state)).c_str()));
}

// A connection's first message: a Hello with its proof (boot/auth.h). Without
// a valid proof for this job's key and tag the connection is closed quietly:
// a stranger can neither join nor end the job.
void HubServer::on_hello(Conn& c, uint8_t type, const std::string& pl) {
  constexpr size_t kTrailer = auth::kNonceBytes + auth::kMacBytes;
  if (static_cast<Msg>(type) != Msg::Hello || pl.size() < kHelloFixed + kTrailer) return turn_away(c);
  const size_t body_len = pl.size() - kTrailer;
  const std::string body = pl.substr(0, body_len), peer_nonce = pl.substr(body_len, auth::kNonceBytes);
  if (!auth::same_mac(pl.substr(body_len + auth::kNonceBytes), auth::mac(key_, "bspk-hub-hello", {c.nonce, peer_nonce, body})))
    return turn_away(c);
  HelloInfo h;
  if (!parse_hello(body, &h)) return turn_away(c);
  size_t z = h.rest.find('\0');
  std::string tag = h.rest.substr(0, z), host = z == std::string::npos ? "?" : h.rest.substr(z + 1);
  if (tag != tag_) return turn_away(c);  // another step of the same user, with the same key: not ours
  c.rd.set_max_frame(kMaxFrame);
  std::string why;
  if (h.rank < 0 || h.rank >= nprocs_) why = strprintf("pid %d is not in [0, %d)", h.rank, nprocs_);
  else if (by_rank_[static_cast<size_t>(h.rank)]) why = strprintf("pid %d connected twice", h.rank);
  else why = version_mismatch(h);
  if (failed_ && why.empty()) why = "the job has already failed: " + report_;
  if (!why.empty()) {
    send_msg(c.fd, Msg::Refused, auth::mac(key_, "bspk-hub-refused", {peer_nonce, c.nonce, tag_, why}) + why);
    ++informed_;
    ::close(c.fd);
    c.fd = -1;
    fail_job(1, -1, "refused a process at start-up: " + why);
    return;
  }
  c.rank = h.rank;
  c.os_pid = h.os_pid;
  c.host = host;
  c.last = now_s();
  by_rank_[static_cast<size_t>(c.rank)] = &c;
  // Welcome: the hub's proof, then a heartbeat carrying who the hub is (pid,
  // os pid, host).
  std::string beat =
      u32s(own_->step.load(), own_->state.load(), hub_rank_) + u32s(static_cast<uint32_t>(getpid()), 0) + hostname();
  send_to(c, uint8_t(Msg::Welcome), auth::mac(key_, "bspk-hub-welcome", {peer_nonce, c.nonce, tag_, beat}) + beat);
  ++informed_;  // it will hear of the job's end, however it ends
}

void HubServer::turn_away(Conn& c) {
  if (c.fd >= 0) ::close(c.fd);
  c.fd = -1;
  ++turned_away_;
}

// At most kMaxPending unproven connections: a new one pushes out the oldest,
// so a stranger must open connections faster than a process completes its
// handshake (a round trip) to keep one out, not merely hold 64 open.
void HubServer::accept_one() {
  int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return;
  Conn* oldest = nullptr;
  size_t pending = 0;
  for (Conn* c : conns_)
    if (c->rank < 0 && c->fd >= 0) {
      ++pending;
      if (!oldest || c->opened < oldest->opened) oldest = c;
    }
  if (pending >= kMaxPending && oldest) turn_away(*oldest);
  std::string nonce;
  try {
    nonce = auth::random_bytes(auth::kNonceBytes);
  } catch (const std::exception&) {
    ::close(fd);
    ++turned_away_;
    return;
  }
  tune(fd);
  auto* c = new Conn;
  c->fd = fd;
  c->last = c->opened = now_s();
  c->nonce = std::move(nonce);
  conns_.push_back(c);
  send_to(*c, uint8_t(Msg::Challenge), c->nonce);
}

// The two processes computing (or starting) in the earliest supersteps, as
// (pid, superstep) pairs, pid -1 where there are fewer: what each process's
// HubClient::computing_peer reads (a process skips itself in it).
std::string HubServer::computing_summary() const {
  int32_t r[2] = {-1, -1};
  uint32_t st[2] = {0, 0};
  for (const Conn* c : by_rank_) {
    if (!c || c->finalized || c->exiting ||
        (c->state != uint32_t(ProcState::Starting) && c->state != uint32_t(ProcState::Running)))
      continue;
    if (r[0] < 0 || !step_at_or_before(st[0], c->step)) {  // earlier than the first
      r[1] = r[0], st[1] = st[0];
      r[0] = c->rank, st[0] = c->step;
    } else if (r[1] < 0 || !step_at_or_before(st[1], c->step)) {
      r[1] = c->rank, st[1] = c->step;
    }
  }
  return u32s(static_cast<uint32_t>(r[0]), st[0], r[1]) + u32(st[1]);
}

int32_t HubServer::failed_summary() const {
  for (const Conn* c : by_rank_)
    if (c && !c->finalized && !c->exiting && c->state == uint32_t(ProcState::Failed)) return c->rank;
  return -1;
}

void HubServer::on_message(Conn& c, uint8_t type, const std::string& pl) {
  const Msg t = static_cast<Msg>(type);
  if (c.rank < 0) return on_hello(c, type, pl);
  c.last = now_s();
  switch (t) {
    case Msg::Heartbeat:
      c.step = u32_at(pl, 0);
      c.state = u32_at(pl, 4);
      if (pl.size() >= 12) c.layer_step1 = u32_at(pl, 8);
      break;
    case Msg::Allgather:
      if (gathered_[static_cast<size_t>(c.rank)]) {
        fail_job(1, c.rank, strprintf("%s started a second start-up exchange before the first ended",
                                      who(c.rank).c_str()));
        return;
      }
      gathered_[static_cast<size_t>(c.rank)] = true;
      gather_[static_cast<size_t>(c.rank)] = pl;
      if (++ngathered_ == nprocs_) {
        std::string res = pack_blobs(gather_);
        for (Conn* k : by_rank_) send_to(*k, uint8_t(Msg::AllgatherResult), res);
        ngathered_ = 0;
        gathered_.assign(gathered_.size(), false);
      }
      break;
    case Msg::Abort: {
      int32_t code = 1;
      if (pl.size() >= 4) std::memcpy(&code, pl.data(), 4);
      c.exiting = true;  // its exit is expected now
      fail_job(code, c.rank, pl.size() > 4 ? pl.substr(4) : left_early(c, abort_text));
      break;
    }
    case Msg::Exiting:
      c.step = u32_at(pl, 0);
      if (pl.size() >= 8) c.layer_step1 = u32_at(pl, 4);
      if (pl.size() >= 12) c.state = u32_at(pl, 8);
      c.exiting = true;
      fail_job(1, c.rank, left_early(c, exit_text(c.state)));
      break;
    case Msg::Finalized:
      if (!c.finalized) {
        c.finalized = true;
        if (++nfinalized_ == nprocs_) {
          std::lock_guard<std::mutex> lk(mu_);
          done_ = true;
          cv_.notify_all();
        }
      }
      break;
    default:
      fail_job(1, c.rank, strprintf("%s sent an unexpected message %d to the job hub", who(c.rank).c_str(), type));
  }
}

void HubServer::run() {
  const double start = now_s(), hb = t_.heartbeat(), tick = t_.update_interval(nprocs_);
  double last_look = start;
  BeatPacer pacer;
  std::vector<pollfd> pfds;
  while (!stop_) {
    pfds.clear();
    pfds.push_back({listen_fd_, POLLIN, 0});
    for (Conn* c : conns_) pfds.push_back({c->fd, static_cast<short>(c->fd >= 0 ? POLLIN : 0), 0});
    int n = ::poll(pfds.data(), pfds.size(), static_cast<int>(tick * 1000) + 1);
    if (n < 0 && errno != EINTR) break;
    const size_t polled = conns_.size();
    if (pfds[0].revents & POLLIN) accept_one();
    for (size_t i = 1; i <= polled; ++i) {
      Conn& c = *conns_[i - 1];
      if (c.fd < 0 || !(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      // Before its proof a connection is read a frame's worth at a time.
      bool open = c.rd.fill(c.fd, c.rank < 0 ? kPreAuthFrame + 8 : SIZE_MAX);
      Msg t;
      std::string pl;
      while (c.fd >= 0 && c.rd.next(&t, &pl)) on_message(c, static_cast<uint8_t>(t), pl);
      if (c.fd >= 0 && c.rank < 0 && (!open || c.rd.bad() || c.rd.buffered() > kPreAuthFrame + 8))
        turn_away(c);
      else if (c.fd >= 0 && (!open || c.rd.bad()))
        drop(c, c.rd.bad() ? "garbled hub connection" : "killed or crashed: its hub connection closed without "
                                                          "bspk_finalize");
    }
    const double now = now_s();
    // This loop looks every tick: a longer gap (kPauseGap) means the hub's
    // own process did not run -- the whole job was suspended (a batch
    // system's suspend, SIGSTOP of every process) or starved. No process was
    // silent meanwhile; each gets a whole silence() from now.
    if (now - last_look > kPauseGap)
      for (Conn* c : conns_) c->last = now;
    last_look = now;
    // Unproven connections: closed after kHandshakeSeconds; closed ones freed.
    for (Conn* c : conns_)
      if (c->rank < 0 && c->fd >= 0 && now - c->opened > kHandshakeSeconds) turn_away(*c);
    conns_.erase(std::remove_if(conns_.begin(), conns_.end(),
                                [](Conn* c) {
                                  if (c->rank >= 0 || c->fd >= 0) return false;
                                  delete c;
                                  return true;
                                }),
                 conns_.end());
    held_ = conns_.size();
    const uint32_t step = own_->step.load(), pstate = own_->state.load(), layer = own_->layer_step1.load();
    const int32_t failed = failed_summary();
    if (pacer.due(now, hb, tick, step, pstate, layer, static_cast<uint32_t>(failed))) {
      // pid, superstep and state of the hub process, the computing summary
      // (bytes 12-27), the hub process's layer superstep + 1 (28-31), the
      // failed summary (32-35: a process that left BSPk after an error, which
      // the others' waits hold their time-out for, sync/wait.cpp)
      std::string beat = u32s(step, pstate, hub_rank_) + computing_summary() + u32(layer) +
                         u32(static_cast<uint32_t>(failed));
      for (Conn* c : conns_)
        if (c->rank >= 0 && !c->finalized) send_to(*c, uint8_t(Msg::Heartbeat), beat);
    }
    if (failed_) {
      note_stragglers(now);
      continue;
    }
    int connected = 0;
    for (Conn* c : by_rank_) connected += c != nullptr;
    if (connected < nprocs_ && now > start_deadline()) {
      std::string missing;
      int shown = 0;
      for (int r = 0; r < nprocs_ && shown < 16; ++r)
        if (!by_rank_[static_cast<size_t>(r)]) missing += (shown++ ? ", " : "") + std::to_string(r);
      fail_job(1, -1, strprintf("only %d of %d processes reached the job hub within %.0f s (missing pids: %s%s); "
                                "raise BSPK_START_TIMEOUT if start-up is this slow",
                                connected, nprocs_, now - created_, missing.c_str(),
                                nprocs_ - connected > shown ? ", ..." : ""));
      continue;
    }
    if (t_.failure_timeout > 0)
      for (Conn* c : conns_)
        if (c->rank >= 0 && c->fd >= 0 && !c->finalized && !c->exiting && now - c->last > t_.silence()) {
          // If every process on another host is silent (and there are some),
          // the likelier culprit is the hub's own host: say so.
          int remote = 0, silent = 0;
          const std::string me = hostname();
          for (Conn* k : by_rank_)
            if (k && k->host != me && !k->finalized) {
              ++remote;
              silent += now - k->last > t_.silence() / 2;
            }
          if (remote > 1 && silent == remote)
            fail_job(1, -1,
                     strprintf("no process on another host has been heard from for %.1f s (%d of them): this host "
                               "(%s, where the job hub runs) is probably cut off",
                               now - c->last, remote, me.c_str()));
          else
            fail_job(1, c->rank,
                     strprintf("%s has not been heard from for %.1f s, last while %s in %s: its host is "
                               "down or cut off, or the process is stopped",
                               who(c->rank).c_str(), now - c->last, state_name(c->state),
                               superstep_text(c->step, own_->layer_if_set(), c->layer_step1).c_str()));
          break;
        }
  }
}

void HubServer::note_stragglers(double now) {
  std::vector<int> silent;
  std::string names;
  int open = 0;
  for (Conn* c : by_rank_) {
    if (!c || c->fd < 0 || c->finalized || c->rank == hub_rank_) continue;
    if (now - c->last > t_.silence()) {
      if (silent.size() < 8) names += (silent.empty() ? "" : ", ") + who(c->rank);
      silent.push_back(c->rank);
    } else {
      ++open;
    }
  }
  if (silent.size() > 8) names += strprintf(" and %zu more", silent.size() - 8);
  std::lock_guard<std::mutex> lk(mu_);
  stragglers_ = std::move(silent);
  straggler_names_ = std::move(names);
  others_open_ = open;
  stragglers_noted_ = true;
}

std::vector<int> HubServer::stragglers(double secs, std::string* names) {
  const double end = now_s() + secs;
  for (;;) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (stragglers_noted_ && (others_open_ == 0 || now_s() >= end)) {
        if (names) *names = straggler_names_;
        return stragglers_;
      }
    }
    if (now_s() >= end) return {};
    usleep(10000);
  }
}

// ------------------------------------------------------------------ client

HubClient::HubClient(const std::vector<std::string>& hosts, const std::vector<uint16_t>& ports, int rank,
                     int nprocs, const std::string& job_tag, const HubTiming& t, LocalState* state,
                     const std::string& key)
    : rank_(rank), nprocs_(nprocs), t_(t), state_(state) {
  const std::string body = hello_payload(rank) + job_tag + '\0' + hostname();
  const double deadline = now_s() + t_.start_window();
  std::string last_err, unresolved;  // unresolved: a host name the resolver does not know (its error)
  FrameReader rd;
  while (fd_ < 0) {
    for (const auto& h : hosts) {
      for (uint16_t port : ports) {
        bool no_name = false;
        int fd = connect_to(h, port, 1.0, &last_err, &no_name);
        if (no_name) unresolved = last_err;
        else unresolved.clear();
        if (fd < 0) continue;
        // The hub speaks first (its nonce); we answer with our hello and
        // proof, and accept only an answer proven with the same key and tag.
        Msg type;
        std::string challenge, pl;
        FrameReader r(kPreAuthFrame);
        if (!recv_timed(fd, r, &type, &challenge, 5.0) || type != Msg::Challenge ||
            challenge.size() != auth::kNonceBytes) {
          last_err = strprintf("%s:%u: no job hub there (no challenge)", h.c_str(), port);
          ::close(fd);
          continue;
        }
        const std::string nonce = auth::random_bytes(auth::kNonceBytes);
        r.set_max_frame(kMaxFrame);
        if (!send_msg(fd, Msg::Hello, body + nonce + auth::mac(key, "bspk-hub-hello", {challenge, nonce, body})) ||
            !recv_timed(fd, r, &type, &pl, 5.0)) {
          last_err = strprintf("%s:%u: the hub there closed the connection (another job's hub, or this process "
                               "does not have the job's key)", h.c_str(), port);
          ::close(fd);
          continue;
        }
        const std::string proof = pl.substr(0, std::min(pl.size(), auth::kMacBytes));
        const std::string rest = pl.size() > auth::kMacBytes ? pl.substr(auth::kMacBytes) : std::string();
        const char* label = type == Msg::Refused ? "bspk-hub-refused" : "bspk-hub-welcome";
        if ((type != Msg::Refused && type != Msg::Welcome) ||
            !auth::same_mac(proof, auth::mac(key, label, {nonce, challenge, job_tag, rest}))) {
          last_err = strprintf("%s:%u: a hub that does not prove it knows this job's key (another job's or a "
                               "stranger's): ignored", h.c_str(), port);
          ::close(fd);
          continue;
        }
        if (type == Msg::Refused) {
          ::close(fd);
          fail(BSPK_ERR_BOOT, "the job hub at %s:%u refused this process: %s", h.c_str(), port, rest.c_str());
        }
        hub_rank_ = static_cast<int32_t>(u32_at(rest, 8));
        hub_where_ = strprintf("os pid %u on %s, port %u", u32_at(rest, 12), rest.size() > 24 ? rest.c_str() + 24 : "?",
                               port);
        rd = std::move(r);
        fd_ = fd;
        break;
      }
      if (fd_ >= 0) break;
    }
    if (fd_ >= 0) break;
    if (now_s() > deadline && !unresolved.empty())
      fail(BSPK_ERR_BOOT, "cannot reach the job hub: its host, the step's first node, is not known to this node's "
           "resolver (%s); make the node names resolvable on every node (DNS or /etc/hosts), set BSPK_HUB_HOST to "
           "that node's address, or start the job with srun --mpi=pmix", unresolved.c_str());
    if (now_s() > deadline)
      fail(BSPK_ERR_BOOT, "cannot reach the job hub within %.0f s (last error: %s); raise BSPK_START_TIMEOUT, or "
           "start the job with srun --mpi=pmix", t_.start_timeout, last_err.c_str());
    usleep(100000);
  }
  set_note(std::string());
  reader_ = std::move(rd);
  thread_ = std::thread([this] { run(); });
}

HubClient::~HubClient() {
  stop_ = true;
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) ::close(fd_);
}

void HubClient::send(uint8_t type, const std::string& pl) {
  std::lock_guard<std::mutex> lk(send_mu_);
  if (!send_msg(fd_, static_cast<Msg>(type), pl)) lost_ = true;
}

std::vector<std::string> HubClient::allgather(const std::string& mine) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    have_result_ = false;
  }
  send(uint8_t(Msg::Allgather), mine);
  std::string p;
  {
    std::unique_lock<std::mutex> lk(mu_);
    // The hub ends the job if a process never arrives (start time-out) or dies.
    if (!cv_.wait_for(lk, std::chrono::duration<double>(t_.start_timeout + t_.failure_timeout + 5),
                      [&] { return have_result_; }))
      fail(BSPK_ERR_BOOT, "the job hub did not complete a start-up exchange within %.0f s", t_.start_timeout);
    p = std::move(result_);
  }
  std::vector<std::string> out;
  if (!unpack_blobs(p, &out)) fail(BSPK_ERR_BOOT, "truncated start-up exchange from the job hub");
  if (static_cast<int>(out.size()) != nprocs_)
    fail(BSPK_ERR_BOOT, "start-up exchange returned %zu entries for %d processes", out.size(), nprocs_);
  return out;
}

void HubClient::abort(int code, const std::string& message, bool wait) {
  std::string p(4, '\0');
  int32_t c = code;
  std::memcpy(p.data(), &c, 4);
  self_reported_ = true;  // the caller printed the message
  send(uint8_t(Msg::Abort), p + message);
  if (wait) await_end();
}

void HubClient::exiting(uint32_t superstep) {
  if (finalized_) return;
  // (the state: a process whose bspk_finalize failed is still Finalizing)
  send(uint8_t(Msg::Exiting), u32s(superstep, state_->layer_step1.load(), static_cast<int32_t>(state_->state.load())));
  await_end();
}

void HubClient::await_end() {
  // The hub answers with the job's end, and the watchdog then ends this
  // process; waiting for that (at most 3 s) lets the hub, which may run in this
  // very process, tell everyone before this process goes.
  for (int i = 0; i < 300 && !lost_; ++i) usleep(10000);
}

void HubClient::finalized() {
  finalized_ = true;
  send(uint8_t(Msg::Finalized), "");
}

void HubClient::die(int code, int failed, const std::string& line) {
  static std::atomic<bool> dying{false};
  if (dying.exchange(true))
    for (;;) pause();  // another thread is already ending the process
  std::fflush(stdout);
  std::fprintf(stderr, "bspk: ending pid %d (%s): %s\n", rank_,
               superstep_text(state_->step.load(), state_->layer_if_set(), state_->layer_step1.load()).c_str(),
               line.c_str());
  std::fflush(stderr);
  std::function<void(int)> cleanup;
  {
    std::lock_guard<std::mutex> lk(mu_);
    cleanup = cleanup_;
  }
  // No other thread of this process (bspk_init on the main thread) makes a
  // file in /dev/shm after the clean-up has looked (base/shm_segment.h).
  shm_creation_stop();
  if (cleanup) cleanup(failed);
  _exit(code);
}

void HubClient::run() {
  const double hb = t_.heartbeat(), tick = t_.update_interval(nprocs_);
  double last_heard = now_s(), last_look = last_heard;
  uint32_t hub_step = 0;
  BeatPacer pacer;
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(tick * 1000) + 1);
    if (stop_) return;
    // A gap in this loop (kPauseGap) is a pause of this process (the whole
    // job suspended), not silence of the hub: it gets a whole silence() again.
    if (const double now = now_s(); now - last_look > kPauseGap) last_heard = last_look = now;
    else last_look = now;
    bool open = true;
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      open = reader_.fill(fd_);
      Msg t;
      std::string pl;
      while (reader_.next(&t, &pl)) {
        last_heard = now_s();
        if (t == Msg::Heartbeat) {
          hub_step = u32_at(pl, 0);
          if (pl.size() >= 28) {  // computing_summary(): (pid, superstep) twice
            computing_[0] = uint64_t{u32_at(pl, 12)} << 32 | u32_at(pl, 16);
            computing_[1] = uint64_t{u32_at(pl, 20)} << 32 | u32_at(pl, 24);
          }
          if (pl.size() >= 32) hub_layer_step1_ = u32_at(pl, 28);  // the hub process's layer superstep
          if (pl.size() >= 36) failed_.store(static_cast<int32_t>(u32_at(pl, 32)), std::memory_order_relaxed);
        } else if (t == Msg::AllgatherResult) {
          std::lock_guard<std::mutex> lk(mu_);
          result_ = std::move(pl);
          have_result_ = true;
          cv_.notify_all();
        } else if (t == Msg::Fail || t == Msg::Refused) {
          int32_t code = 1, failed = -1;
          std::string report = pl;
          if (t == Msg::Fail && pl.size() >= 8) {
            std::memcpy(&code, &pl[0], 4);
            std::memcpy(&failed, &pl[4], 4);
            report = pl.substr(8);
          }
          if (self_reported_ && failed == rank_) {
            // Our own abort or failed bspk_init, now known to everyone: the
            // caller ends or returns; this thread's work is done.
            lost_ = true;
            return;
          }
          if (finalized_) {  // this process is done; say what happened, do not change its result
            std::fprintf(stderr, "bspk: pid %d (finalized): %s\n", rank_, report.c_str());
            continue;
          }
          die(code ? code : 1, failed, report);
        }
      }
    }
    if (!open || reader_.bad()) {
      lost_ = true;
      if (finalized_ || stop_) return;
      die(1, hub_rank_,
          strprintf("%s died (killed or crashed: the hub connection closed); its last report: %s", hub_who().c_str(),
                    superstep_text(hub_step, state_->layer_if_set(), hub_layer_step1_).c_str()));
    }
    const double now = now_s();
    const uint32_t step = state_->step.load(), pstate = state_->state.load(), layer = state_->layer_step1.load();
    if (pacer.due(now, hb, tick, step, pstate, layer))
      send(uint8_t(Msg::Heartbeat), u32s(step, pstate, static_cast<int32_t>(layer)));
    if (t_.failure_timeout > 0 && !finalized_ && now - last_heard > t_.silence()) {
      hub_silent_ = true;
      die(1, hub_rank_,
          strprintf("%s has not been heard from for %.1f s, last in %s: its host is down or cut off, or this "
                    "host is", hub_who().c_str(), now - last_heard,
                    superstep_text(hub_step, state_->layer_if_set(), hub_layer_step1_).c_str()));
    }
  }
}

std::string HubClient::hub_who() const {
  return strprintf("pid %d (%s; the job hub)", hub_rank_, hub_where_.c_str());
}

int HubClient::failed_peer() const {
  const int32_t f = failed_.load(std::memory_order_relaxed);
  return f >= 0 && f != rank_ ? f : -1;
}

int HubClient::computing_peer(uint32_t step) const {
  for (const auto& c : computing_) {
    const uint64_t v = c.load(std::memory_order_relaxed);
    const auto pid = static_cast<int32_t>(v >> 32);
    if (pid >= 0 && pid != rank_ && step_at_or_before(static_cast<uint32_t>(v), step)) return pid;
  }
  return -1;
}

}  // namespace bspk::boot
