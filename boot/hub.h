// boot/hub.h -- the job hub: failure detection (and, under plain srun, the
// start-up rendezvous) for jobs that bspkrun does not watch.
//
// Under Slurm nobody watches a BSPk job the way bspkrun does: srun waits for
// the surviving tasks of a job whose process was killed, and a survivor blocked
// in bspk_sync would wait for ever. The hub is a TCP star: one process of the
// job (pid 0 under PMIx/PMI2; the first task on the step's first node under
// plain srun) runs a HubServer thread, and every process, the hub's own
// included, keeps one HubClient connection to it with a watchdog thread. The
// connection carries heartbeats with the sender's superstep both ways, so:
//
//  - a process that dies (SIGKILL, crash) closes its socket: the hub sees it at
//    once and tells everyone "pid P (os pid X on host H) died in superstep S";
//  - a process that calls exit() without bspk_finalize says so first (atexit),
//    and the report names the superstep exactly;
//  - a host that is cut off or hung goes silent: after 80% of the failure
//    time-out (BSPK_FAILURE_TIMEOUT, default 10 s) the hub declares it dead,
//    and processes on that host, hearing nothing from the hub, end themselves;
//  - a process that started with another BSPk build is refused at its hello.
//
// Only the job's processes get in (boot/auth.h): the hub opens every
// connection with a fresh nonce, a process answers with its Hello and a
// proof that it knows the job key, and the hub proves the same in its Welcome.
// Connections without a valid proof are closed quietly (they cannot end the
// job); until its proof a connection may send at most kPreAuthFrame bytes per
// message and must complete within kHandshakeSeconds; at most kMaxPending
// such connections are held at once (a new one pushes out the oldest).
//
// Every process that learns of a failure prints one line naming the failed
// pid, its host and superstep, runs the cleanup hook (removes its shared-memory
// regions) and ends with _exit(code): no process outlives a failed job by more
// than the failure time-out. The threads only sleep in poll() between
// heartbeats (every time-out/20, at most 0.5 s); the superstep they report is
// read from two atomics written at each superstep boundary (set_state), so the
// BSP fast path pays no system call.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "boot/bootstrap.h"
#include "boot/protocol.h"

namespace bspk::boot {

constexpr uint32_t kPreAuthFrame = 4096;   // longest message before a valid proof (a Hello is < 400 B)
constexpr double kHandshakeSeconds = 5;    // a connection proves itself within this, or is closed
constexpr size_t kMaxPending = 64;         // connections held before their proof

struct HubTiming {
  double failure_timeout = 10;  // BSPK_FAILURE_TIMEOUT (s); 0: never declare a silent peer dead
  double start_timeout = 60;    // BSPK_START_TIMEOUT (s): every process reaches the hub within it
  static HubTiming from_env();
  // A peer silent this long is dead; the rest of the time-out lets the report
  // reach everyone, so all processes have ended within failure_timeout.
  double silence() const { return failure_timeout * 0.8; }
  // How long the hub waits for every process to connect and a client tries
  // to reach it: a little less than start_timeout, so that their report
  // (the pids that never came, why the hub cannot be reached) comes before
  // bspk_init's start-up watchdog with the same BSPK_START_TIMEOUT, which
  // could only say "stuck in" a phase.
  double start_window() const { return start_timeout - std::min(2.0, 0.1 * start_timeout); }
  double heartbeat() const;
  // How often a changed superstep is reported (10 ms; more for big jobs).
  double update_interval(int nprocs) const;
};

// This host's IPv4 addresses, non-loopback ones first, as dotted strings.
std::vector<std::string> local_ipv4_addresses();

// What a HubClient under construction is doing, for bspk_init's start-up
// watchdog to say when start-up takes too long ("resolving vm, the job hub's
// host", "connecting to the job hub at 10.0.0.5:12345; last error: ...");
// empty once connected. A resolver that waits for an unreachable DNS server
// blocks in getaddrinfo longer than any time-out of ours: this is how the
// user learns of it. Thread-safe.
std::string hub_connect_note();

// State shared between a process's hub client and (in the hub process) the
// server, which reports the hub process's own superstep in its heartbeats.
struct LocalState {
  std::atomic<uint32_t> step{0};
  std::atomic<uint32_t> state{0};  // ProcState
  // The layer's superstep + 1 (bspk_set_layer_superstep; 0: none) and the
  // layer's name, written before layer_step1 first turns non-zero (release).
  std::atomic<uint32_t> layer_step1{0};
  char layer[16] = {};
  const char* layer_if_set() const { return layer_step1.load(std::memory_order_acquire) ? layer : nullptr; }
};

class HubServer {
 public:
  // Listens on one of `ports` (the first that is free; {0}: any) on every
  // interface. Throws BSPK_ERR_BOOT if none can be bound.
  // `own_rank`/`own` are the hub process's pid and state, reported to clients;
  // `key` the job key (auth::kKeyBytes) its processes prove they know.
  HubServer(int nprocs, std::string job_tag, const std::vector<uint16_t>& ports, const HubTiming& t,
            int own_rank, const LocalState* own, std::string key);
  // Waits (at most the failure time-out) for every process to finalize, then stops.
  ~HubServer();
  uint16_t port() const { return port_; }
  // After a failure: wait until every process of the job has been told (or
  // refused at its hello), at most `secs`, or until the start-up window
  // (start_timeout from the hub's creation) closes if that is later. A hub
  // whose own process is ending calls this first, so processes still starting
  // hear why instead of retrying a hub that is gone.
  bool wait_informed(double secs);
  // After a failure: the pids still connected that the hub has not heard
  // from for HubTiming::silence() -- stopped, or on a host cut off: they will
  // not exit by themselves -- once every other process's connection has
  // closed, or `secs` have passed (then as they are). *names (if given):
  // "pid 2 (os pid 4694 on node3), ..." (at most 8 named). Empty when the
  // job has not failed. For a launcher that waits for every process (plain
  // srun: boot/slurm.cpp ends the step).
  std::vector<int> stragglers(double secs, std::string* names = nullptr);
  // For tests and diagnostics: connections held now (proven or not), and
  // connections closed so far for a missing or wrong proof, an oversize
  // message or a handshake not completed in time, or refused at accept.
  size_t held() const { return held_.load(); }
  uint64_t turned_away() const { return turned_away_.load(); }

 private:
  struct Conn;
  void run();
  void on_message(Conn& c, uint8_t type, const std::string& pl);
  void drop(Conn& c, const char* why);
  void turn_away(Conn& c);
  std::string computing_summary() const;
  // The lowest pid whose last reported state is ProcState::Failed and that
  // has not exited or finalized, -1 if none (heartbeat bytes 32-35).
  int32_t failed_summary() const;
  void accept_one();
  void on_hello(Conn& c, uint8_t type, const std::string& pl);
  void fail_job(int code, int failed, const std::string& report);
  // After the failure, every tick: what stragglers() answers.
  void note_stragglers(double now);
  void send_to(Conn& c, uint8_t type, const std::string& pl);
  std::string who(int rank) const;
  // "pid 3 (os pid ... on ...) <what> in <superstep>": a process that left
  // early (what: abort_text or unfinalized_text, protocol.h).
  std::string left_early(const Conn& c, std::string (*what)(const char*, uint32_t)) const;

  int nprocs_;
  std::string tag_;
  std::string key_;
  HubTiming t_;
  int32_t hub_rank_;
  const LocalState* own_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::vector<Conn*> conns_;        // accepted, by arrival
  std::vector<Conn*> by_rank_;      // after hello
  std::vector<std::string> gather_;
  std::vector<bool> gathered_;
  int ngathered_ = 0;
  int nfinalized_ = 0;
  bool failed_ = false;
  std::string report_;
  std::atomic<int> informed_{0};
  const double created_ = now_s();  // start of the start-up window (HubTiming::start_window)
  double start_deadline() const { return created_ + t_.start_window(); }  // end of that window
  std::atomic<bool> told_{false};  // the failure has been sent to everyone connected
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;               // every process finalized, or the job failed
  // stragglers(), noted by the hub's thread under mu_ once the job failed
  bool stragglers_noted_ = false;
  std::vector<int> stragglers_;
  std::string straggler_names_;
  int others_open_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> held_{0};
  std::atomic<uint64_t> turned_away_{0};
  std::thread thread_;
};

class HubClient {
 public:
  // Connects to the hub at one of `hosts` x `ports` (tried in turn until the
  // start time-out: under plain srun the hub may start after us), says hello
  // with a proof that it knows `key`, accepts only a hub that proves the same,
  // and starts the watchdog thread. Throws BSPK_ERR_BOOT with the addresses
  // tried if it cannot.
  HubClient(const std::vector<std::string>& hosts, const std::vector<uint16_t>& ports, int rank,
            int nprocs, const std::string& job_tag, const HubTiming& t, LocalState* state, const std::string& key);
  ~HubClient();

  std::vector<std::string> allgather(const std::string& mine);
  // Ends the job with `message` (the caller printed it). wait: stay until the
  // hub has told everyone (the watchdog then ends this process).
  void abort(int code, const std::string& message, bool wait = true);
  void exiting(uint32_t superstep);  // from atexit: reports, then waits for the job's end
  void finalized();
  bool alive() const { return !lost_.load(); }
  // Bootstrap::computing_peer, from the hub's latest heartbeat (which names
  // the two processes computing in the earliest supersteps).
  int computing_peer(uint32_t step) const;
  // Bootstrap::failed_peer, from the hub's latest heartbeat (which names the
  // lowest pid whose last state was ProcState::Failed and that has neither
  // exited nor finalized): that pid unless it is this process, else -1.
  int failed_peer() const;
  // Whether this process is ending because the hub's process went silent
  // (stopped, or its host cut off), and that process's pid: a launcher that
  // waits for every process may need telling (boot/slurm.cpp).
  bool hub_silent() const { return hub_silent_.load(); }
  int hub_rank() const { return hub_rank_; }
  // "pid 0 (os pid 4242 on node1, port 26080; the job hub)", for messages.
  std::string hub_who() const;
  // Called by the watchdog just before it ends the process (with the failed
  // pid, -1 if unknown): remove what the process leaves behind.
  void on_fatal(std::function<void(int failed)> f) {
    std::lock_guard<std::mutex> lk(mu_);
    cleanup_ = std::move(f);
  }

 private:
  void run();
  void await_end();
  [[noreturn]] void die(int code, int failed, const std::string& line);
  void send(uint8_t type, const std::string& pl);

  int fd_ = -1;
  int rank_, nprocs_;
  HubTiming t_;
  LocalState* state_;
  std::string hub_where_;  // "host:port", for messages
  int32_t hub_rank_ = 0;   // the hub process's pid
  FrameReader reader_;
  std::mutex send_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool have_result_ = false;
  std::string result_;
  std::atomic<bool> finalized_{false};
  std::atomic<bool> lost_{false};
  std::atomic<bool> stop_{false};
  std::atomic<bool> self_reported_{false};
  std::atomic<bool> hub_silent_{false};
  // The hub process's layer superstep + 1 from its heartbeats (0: none).
  uint32_t hub_layer_step1_ = 0;
  // From the hub's heartbeats: pid << 32 | superstep of the two processes
  // computing in the earliest supersteps (pid 0xFFFFFFFF: none).
  std::atomic<uint64_t> computing_[2]{{~0ull}, {~0ull}};
  // From the hub's heartbeats: the failed process they name, -1 if none.
  std::atomic<int32_t> failed_{-1};
  std::function<void(int)> cleanup_;
  std::thread thread_;
};

}  // namespace bspk::boot
