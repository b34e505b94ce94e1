// boot/slurm.cpp -- bootstraps for jobs started by Slurm's srun (or any PMIx
// launcher): PMIx (srun --mpi=pmix), PMI2 (srun --mpi=pmi2) and plain srun
// (no PMI: SLURM_* variables plus the job hub as rendezvous). All three start
// the job hub (boot/hub.h), which watches the job the way bspkrun does.
#include <bspk.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "base/config.h"
#include "base/env.h"
#include "base/error.h"
#include "boot/auth.h"
#include "boot/bootstrap.h"
#include "boot/hub.h"
#include "boot/slurm.h"

#ifdef BSPK_HAVE_PMIX
#include <pmix.h>
#endif
#ifdef BSPK_HAVE_PMI2
#include <slurm/pmi2.h>
#endif

namespace bspk::boot {

std::string first_host(const std::string& list) {
  // Slurm hostlist syntax: "h0", "h[0-2]", "node[01-03,07],gpu5", "a,b".
  std::string out;
  size_t i = 0;
  while (i < list.size() && list[i] != ',' && list[i] != '[') out += list[i++];
  if (i < list.size() && list[i] == '[') {
    ++i;
    while (i < list.size() && list[i] != ',' && list[i] != '-' && list[i] != ']') out += list[i++];
    while (i < list.size() && list[i] != ']') ++i;
    ++i;
    while (i < list.size() && list[i] != ',' && list[i] != '[') out += list[i++];
  }
  return out;
}

std::string hub_host(const std::string& hostlist, const std::string& aliases) {
  if (auto h = config::get_string(config::Var::HUB_HOST)) return *h;
  const std::string first = first_host(hostlist);
  // "name:addr:hostname" entries, comma-separated.
  for (size_t at = 0; at < aliases.size();) {
    size_t end = aliases.find(',', at);
    if (end == std::string::npos) end = aliases.size();
    const std::string e = aliases.substr(at, end - at);
    at = end + 1;
    const size_t c1 = e.find(':');
    if (c1 == std::string::npos || e.compare(0, c1, first) != 0 || c1 != first.size()) continue;
    // An IPv6 address ("[...]") is of no use: the hub listens on IPv4.
    if (c1 + 1 < e.size() && e[c1 + 1] == '[') continue;
    const size_t c2 = e.find(':', c1 + 1);
    const std::string addr = e.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1);
    if (!addr.empty()) return addr;
  }
  return first;
}

std::vector<uint16_t> hub_ports(uint64_t job, uint64_t step) {
  if (config::is_set(config::Var::HUB_PORT))
    return {static_cast<uint16_t>(config::get_int(config::Var::HUB_PORT, 0))};  // in [1, 65535]
  // Below Linux's ephemeral range (32768+) so outgoing connections never hold
  // it; 8 candidates in case another job's hub holds one (hellos carry the job
  // tag, so a process never joins another job's hub).
  uint64_t h = (job * 0x9E3779B97F4A7C15ull) ^ (step * 0xC2B2AE3D27D4EB4Full);
  h ^= h >> 29;
  uint16_t base = static_cast<uint16_t>(12000 + (h % 2500) * 8);
  std::vector<uint16_t> v;
  for (uint16_t k = 0; k < 8; ++k) v.push_back(static_cast<uint16_t>(base + k));
  return v;
}

std::string hub_record(const std::string& key, uint16_t port, const std::vector<std::string>& addrs) {
  std::string rec = auth::to_hex(key) + ";" + std::to_string(port);
  for (const auto& a : addrs) rec += "," + a;
  return rec;
}

bool parse_hub_record(const std::string& rec, std::string* key, uint16_t* port, std::vector<std::string>* hosts) {
  size_t semi = rec.find(';');
  if (semi == std::string::npos || !auth::from_hex(rec.substr(0, semi), key) || key->size() != auth::kKeyBytes)
    return false;
  size_t pos = rec.find(',', semi + 1);
  if (pos == std::string::npos || pos == semi + 1 || pos - semi - 1 > 5) return false;
  uint32_t p = 0;
  for (size_t i = semi + 1; i < pos; ++i) {
    if (rec[i] < '0' || rec[i] > '9') return false;
    p = p * 10 + static_cast<uint32_t>(rec[i] - '0');
  }
  if (p < 1 || p > 65535) return false;
  *port = static_cast<uint16_t>(p);
  hosts->clear();
  while (pos != std::string::npos) {
    size_t next = rec.find(',', pos + 1);
    std::string h = rec.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    if (h.empty()) return false;
    hosts->push_back(std::move(h));
    pos = next;
  }
  return true;
}

namespace {

std::string slurm_job_step() {
  auto j = env::get("SLURM_JOB_ID");
  auto s = env::get("SLURM_STEP_ID");
  return (j ? *j : "0") + "." + (s ? *s : "0");
}

// Runs `scancel JOB.STEP` (found on PATH) and waits for it at most `secs`;
// "" once it exited with status 0, else what went wrong.
std::string cancel_step(const std::string& step, double secs) {
  char* argv[] = {const_cast<char*>("scancel"), const_cast<char*>(step.c_str()), nullptr};
  pid_t pid;
  if (int e = posix_spawnp(&pid, "scancel", nullptr, nullptr, argv, ::environ); e != 0)
    return strprintf("cannot run scancel: %s", strerror(e));
  int st = 0;
  for (int i = 0; i < static_cast<int>(secs * 100); ++i) {
    const pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid)
      return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? std::string()
             : WIFEXITED(st) ? strprintf("scancel exited with status %d", WEXITSTATUS(st))
                             : strprintf("scancel ended by signal %d", WTERMSIG(st));
    if (r < 0) return strprintf("waitpid(scancel): %s", strerror(errno));
    usleep(10000);
  }
  return strprintf("scancel did not finish within %.0f s", secs);
}

// Common part: the hub, state reporting, abort/finalize through it.
class HubBacked : public Bootstrap {
 public:
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string job_id() const override { return job_; }
  void abort(int code, const std::string& message) override {
    if (client_) client_->abort(code, message);
    if (server_) server_->wait_informed(5.0);  // the hub runs here: everyone heard before we go
  }
  void finalized() override {
    if (client_) client_->finalized();
  }
  void init_failed(const std::string& message) override {
    if (client_) client_->abort(1, message, /*wait=*/false);
  }
  bool exiting(uint32_t step) override {
    if (client_) client_->exiting(step);
    return false;
  }
  bool alive() override { return !client_ || client_->alive(); }
  int computing_peer(uint32_t step) override { return client_ ? client_->computing_peer(step) : -1; }
  int failed_peer() const override { return client_ ? client_->failed_peer() : -1; }

 protected:
  void publish_state(uint32_t step, ProcState st) override {
    state_.step.store(step, std::memory_order_relaxed);
    state_.state.store(static_cast<uint32_t>(st), std::memory_order_relaxed);
  }
  void publish_layer_step(uint32_t layer_step1) override {
    if (!state_.layer[0]) std::memcpy(state_.layer, layer(), sizeof state_.layer);
    state_.layer_step1.store(layer_step1, std::memory_order_release);
  }

 public:
  void on_fatal(std::function<void(int)> f) override {
    if (!client_) return;
    HubServer* server = server_.get();
    HubClient* client = client_.get();
    client_->on_fatal([this, f = std::move(f), server, client](int failed) {
      if (f) f(failed);
      if (server) {
        server->wait_informed(5.0);
        // The clean-up again: while the hub informed the others (up to 5 s),
        // this process's main thread went on and may have created more (the
        // shared-memory segments of bspk_init) before this thread exits it.
        if (f) f(failed);
        end_stragglers(*server);
      } else if (client->hub_silent()) {
        end_silent_hub(*client);
      }
    });
  }

 protected:
  // As the job ends after a failure, what to do about processes that cannot
  // end by themselves: in the hub's process, those the hub names
  // (HubServer::stragglers); in the others, the hub's own process once it
  // went silent. Here nothing: srun --mpi=pmix/pmi2 ends the step once the
  // others have exited.
  virtual void end_stragglers(HubServer&) {}
  virtual void end_silent_hub(HubClient&) {}

  // PMIx/PMI2: pid 0 draws the job key, runs the hub on any free port and
  // publishes both in the job's key-value store, which only the job's
  // processes read ("<key hex>;<port>,<address>,...").
  void start_hub_published() {
    std::string rec, key;
    auto ports = config::is_set(config::Var::HUB_PORT) ? hub_ports(0, 0) : std::vector<uint16_t>{0};
    if (rank_ == 0) {
      key = auth::random_bytes(auth::kKeyBytes);
      server_ = std::make_unique<HubServer>(size_, job_, ports, timing_, 0, &state_, key);
      rec = hub_record(key, server_->port(), local_ipv4_addresses());
    }
    auto all = allgather(rec);
    std::vector<std::string> hosts;
    uint16_t port = 0;
    if (!parse_hub_record(all[0], &key, &port, &hosts))
      fail(BSPK_ERR_BOOT, "malformed job hub record from pid 0 (%zu bytes)", all[0].size());
    client_ = std::make_unique<HubClient>(hosts, std::vector<uint16_t>{port}, rank_, size_, job_, timing_, &state_,
                                          key);
    on_fatal(nullptr);
  }
  void stop_hub() {
    client_.reset();
    server_.reset();
  }
  // A collective of the process manager (PMIx or PMI2 fence) failed. With the
  // hub up, the usual cause is a process that failed and told the hub why:
  // this process's watchdog then ends it with that reason within moments
  // ("ending pid 0: bspk_init failed on pid 2: ..."). Give it up to 2 s
  // before the fence's own error ("PMIx_Fence failed: PARTIAL SUCCESS"),
  // which says nothing of the cause (cluster_slurm_single_node saw it once).
  void let_the_hub_report() {
    for (int i = 0; i < 40 && client_ && client_->alive(); ++i) usleep(50000);
  }

  int rank_ = 0, size_ = 1;
  std::string job_;
  HubTiming timing_ = HubTiming::from_env();
  LocalState state_;
  std::unique_ptr<HubServer> server_;
  std::unique_ptr<HubClient> client_;
};

// Plain srun: rank and size from SLURM_*, the hub at a port derived from the
// job and step ids on the step's first node, where the first task of that node
// runs it.
class SlurmEnv final : public HubBacked {
 public:
  SlurmEnv() {
    auto need = [](const char* n) {
      auto v = env::get(n);
      if (!v)
        fail(BSPK_ERR_BOOT, "BSPK_BOOTSTRAP=slurm but %s is not set: start the program with srun (best: srun "
             "--mpi=pmix)", n);
      return *v;
    };
    size_ = static_cast<int>(env::get_int("SLURM_STEP_NUM_TASKS", -1, 1, 1 << 24));
    if (size_ < 0) size_ = static_cast<int>(env::get_int("SLURM_NTASKS", -1, 1, 1 << 24));
    if (size_ < 0) need("SLURM_STEP_NUM_TASKS");
    rank_ = static_cast<int>(env::get_int("SLURM_PROCID", -1, 0, size_ - 1));
    if (rank_ < 0) need("SLURM_PROCID");
    std::string nodes = env::get("SLURM_STEP_NODELIST") ? need("SLURM_STEP_NODELIST") : need("SLURM_JOB_NODELIST");
    job_ = "slurm." + slurm_job_step();
    auto ports = hub_ports(static_cast<uint64_t>(env::get_int("SLURM_JOB_ID", 0, 0, INT64_MAX)),
                           static_cast<uint64_t>(env::get_int("SLURM_STEP_ID", 0, 0, INT64_MAX)));
    node_ = static_cast<int>(env::get_int("SLURM_NODEID", -1, -1, INT32_MAX));
    local_ = static_cast<int>(env::get_int("SLURM_LOCALID", -1, -1, INT32_MAX));
    nodes_ = static_cast<int>(env::get_int("SLURM_STEP_NUM_NODES", -1, -1, INT32_MAX));
    if (nodes_ < 0) nodes_ = static_cast<int>(env::get_int("SLURM_NNODES", -1, -1, INT32_MAX));
    bool hub = node_ == 0 && local_ == 0;
    std::vector<std::string> hosts{hub_host(nodes, env::get("SLURM_NODE_ALIASES").value_or(""))};
    // No key-value store here: the key is the user's (BSPK_JOB_KEY, exported
    // before srun), else a public one and a warning.
    std::string key = auth::key_from_env();
    if (key.empty()) {
      key = auth::public_key_for(job_);
      if (rank_ == 0)
        std::fprintf(stderr, "bspk: warning: plain srun without BSPK_JOB_KEY: the job hub cannot tell this job's "
                     "processes from a stranger's; start the job with srun --mpi=pmix (or pmi2), or export "
                     "BSPK_JOB_KEY=$(openssl rand -hex 32) before srun (README, Security)\n");
    }
    if (hub) {
      server_ = std::make_unique<HubServer>(size_, job_, ports, timing_, rank_, &state_, key);
      hosts = {"127.0.0.1"};
      ports = {server_->port()};
    }
    client_ = std::make_unique<HubClient>(hosts, ports, rank_, size_, job_, timing_, &state_, key);
    on_fatal(nullptr);
  }
  ~SlurmEnv() override { stop_hub(); }
  const char* kind() const override { return "slurm"; }

 protected:
  // Plain srun (without -K) waits for every task, and a process stopped
  // (SIGSTOP) or on a host cut off never exits: once the others have
  // (at most 3 s), ask Slurm to end the step. Found 2026-12-06: a process
  // stopped with kill -STOP kept srun waiting after the others had ended.
  void end_stragglers(HubServer& server) override {
    std::string names;
    if (!server.stragglers(3.0, &names).empty()) cancel(names, " (the job hub)");
  }
  // The hub's process silent: one process cancels, after a moment for the
  // others, which saw the same silence within a heartbeat, to print their
  // reports and exit. On a step of several nodes it is the first task of the
  // second node, not of the hub's: when the hub's host is the one cut off,
  // a task there cannot reach slurmctld (and sees no silence), and srun would
  // wait until Slurm declared that node down (SlurmdTimeout; 50 s in
  // tests/cluster/slurm_netns.sh, found 2026-12-07). On one node, the second
  // task; without SLURM_NODEID / SLURM_LOCALID, the lowest pid but the hub's.
  void end_silent_hub(HubClient& client) override {
    const bool canceller = node_ < 0 || local_ < 0 ? rank_ == (client.hub_rank() == 0 ? 1 : 0)
                           : nodes_ > 1            ? node_ == 1 && local_ == 0
                                                   : node_ == 0 && local_ == 1;
    if (!canceller) return;
    usleep(1500000);
    cancel(client.hub_who(), "");
  }
  // who: the processes; role: " (the job hub)" or "".
  void cancel(const std::string& who, const char* role) {
    const std::string step = slurm_job_step();
    std::fprintf(stderr, "bspk: pid %d%s: %s cannot end by itself (stopped, or its host cut off), and srun waits "
                 "for every process: cancelling job step %s (scancel)\n", rank_, role, who.c_str(), step.c_str());
    std::fflush(stderr);
    const std::string err = cancel_step(step, 10.0);
    if (!err.empty())
      std::fprintf(stderr, "bspk: pid %d%s: %s; end the step with `scancel %s` (or start jobs with srun -K, or "
                   "srun --mpi=pmix)\n", rank_, role, err.c_str(), step.c_str());
  }

 public:
  std::vector<std::string> allgather(const std::string& mine) override { return client_->allgather(mine); }

 private:
  // SLURM_NODEID, SLURM_LOCALID, the step's nodes (-1: not set)
  int node_ = -1, local_ = -1, nodes_ = -1;
};

#ifdef BSPK_HAVE_PMIX
class Pmix final : public HubBacked {
 public:
  Pmix() {
    pmix_status_t rc = PMIx_Init(&me_, nullptr, 0);
    if (rc != PMIX_SUCCESS)
      fail(BSPK_ERR_BOOT, "PMIx_Init failed: %s (BSPK_BOOTSTRAP=pmix needs a PMIx launcher such as srun --mpi=pmix)",
           PMIx_Error_string(rc));
    inited_ = true;
    PMIX_LOAD_PROCID(&wild_, me_.nspace, PMIX_RANK_WILDCARD);
    pmix_value_t* val = nullptr;
    rc = PMIx_Get(&wild_, PMIX_JOB_SIZE, nullptr, 0, &val);
    if (rc != PMIX_SUCCESS || !val) fail(BSPK_ERR_BOOT, "PMIx_Get(PMIX_JOB_SIZE) failed: %s", PMIx_Error_string(rc));
    size_ = static_cast<int>(val->data.uint32);
    PMIX_VALUE_RELEASE(val);
    rank_ = static_cast<int>(me_.rank);
    job_ = env::get("SLURM_JOB_ID") ? "slurm." + slurm_job_step() : std::string(me_.nspace);
    for (char& c : job_)
      if (c == '/' || c == ' ') c = '_';
    start_hub_published();
  }
  ~Pmix() override {
    stop_hub();
    if (inited_) PMIx_Finalize(nullptr, 0);
  }
  const char* kind() const override { return "pmix"; }

  // PMIx_Put of our blob under a fresh key, PMIx_Commit, PMIx_Fence with data
  // collection, then PMIx_Get of every peer's (served from the local store).
  std::vector<std::string> allgather(const std::string& mine) override {
    std::string key = "bspk.ag." + std::to_string(seq_++);
    std::string blob = "#" + mine;  // never an empty byte object
    pmix_value_t v;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = blob.data();
    v.data.bo.size = blob.size();
    check(PMIx_Put(PMIX_GLOBAL, key.c_str(), &v), "PMIx_Put");
    v.data.bo.bytes = nullptr;  // not ours to free
    check(PMIx_Commit(), "PMIx_Commit");
    pmix_info_t info;
    bool collect = true;
    PMIX_INFO_CONSTRUCT(&info);
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    pmix_status_t rc = PMIx_Fence(&wild_, 1, &info, 1);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PMIX_SUCCESS) let_the_hub_report();
    check(rc, "PMIx_Fence");
    std::vector<std::string> out;
    for (int r = 0; r < size_; ++r) {
      pmix_proc_t peer;
      PMIX_LOAD_PROCID(&peer, me_.nspace, static_cast<pmix_rank_t>(r));
      pmix_value_t* val = nullptr;
      check(PMIx_Get(&peer, key.c_str(), nullptr, 0, &val), "PMIx_Get");
      if (!val || val->type != PMIX_BYTE_OBJECT || val->data.bo.size < 1)
        fail(BSPK_ERR_BOOT, "PMIx_Get(%s) of pid %d returned no data", key.c_str(), r);
      out.emplace_back(val->data.bo.bytes + 1, val->data.bo.size - 1);
      PMIX_VALUE_RELEASE(val);
    }
    return out;
  }

 private:
  static void check(pmix_status_t rc, const char* what) {
    if (rc != PMIX_SUCCESS) fail(BSPK_ERR_BOOT, "%s failed: %s", what, PMIx_Error_string(rc));
  }
  pmix_proc_t me_{}, wild_{};
  bool inited_ = false;
  int seq_ = 0;
};
#endif

#ifdef BSPK_HAVE_PMI2
class Pmi2 final : public HubBacked {
 public:
  Pmi2() {
    int spawned = 0, appnum = 0;
    int rc = PMI2_Init(&spawned, &size_, &rank_, &appnum);
    if (rc != PMI2_SUCCESS)
      fail(BSPK_ERR_BOOT, "PMI2_Init failed (%d): BSPK_BOOTSTRAP=pmi2 needs srun --mpi=pmi2", rc);
    inited_ = true;
    char id[256] = {0};
    // Slurm's libpmi2 initializes without a PMI2 server (as a singleton)
    // and fails here: under bspkrun or started directly.
    if (PMI2_Job_GetId(id, sizeof id) != PMI2_SUCCESS)
      fail(BSPK_ERR_BOOT, "PMI2_Job_GetId failed: BSPK_BOOTSTRAP=pmi2 needs a PMI2 launcher such as srun --mpi=pmi2 "
           "(under bspkrun, or started directly, leave BSPK_BOOTSTRAP unset)");
    kvs_ = id;
    job_ = env::get("SLURM_JOB_ID") ? "slurm." + slurm_job_step() : "pmi2." + kvs_;
    start_hub_published();
  }
  ~Pmi2() override {
    stop_hub();
    if (inited_) PMI2_Finalize();
  }
  const char* kind() const override { return "pmi2"; }

  // PMI2 values are strings of < PMI2_MAX_VALLEN: the blob goes hex-encoded in
  // chunks, "bspk.<seq>.<rank>.<k>"; chunk 0 starts with the chunk count.
  std::vector<std::string> allgather(const std::string& mine) override {
    static const char* hex = "0123456789abcdef";
    const size_t per = (PMI2_MAX_VALLEN - 16) / 2;
    const int seq = seq_++;
    size_t nchunks = mine.empty() ? 1 : (mine.size() + per - 1) / per;
    for (size_t k = 0; k < nchunks; ++k) {
      std::string val = k == 0 ? std::to_string(nchunks) + ":" : "";
      for (size_t i = k * per; i < std::min(mine.size(), (k + 1) * per); ++i) {
        val += hex[static_cast<uint8_t>(mine[i]) >> 4];
        val += hex[static_cast<uint8_t>(mine[i]) & 15];
      }
      std::string key = strprintf("bspk.%d.%d.%zu", seq, rank_, k);
      if (PMI2_KVS_Put(key.c_str(), val.c_str()) != PMI2_SUCCESS) fail(BSPK_ERR_BOOT, "PMI2_KVS_Put(%s) failed", key.c_str());
    }
    if (PMI2_KVS_Fence() != PMI2_SUCCESS) {
      let_the_hub_report();
      fail(BSPK_ERR_BOOT, "PMI2_KVS_Fence failed");
    }
    std::vector<std::string> out;
    char buf[PMI2_MAX_VALLEN + 1];
    for (int r = 0; r < size_; ++r) {
      std::string blob;
      size_t n = 1;
      for (size_t k = 0; k < n; ++k) {
        std::string key = strprintf("bspk.%d.%d.%zu", seq, r, k);
        int len = 0;
        if (PMI2_KVS_Get(kvs_.c_str(), PMI2_ID_NULL, key.c_str(), buf, sizeof buf - 1, &len) != PMI2_SUCCESS)
          fail(BSPK_ERR_BOOT, "PMI2_KVS_Get(%s) failed", key.c_str());
        buf[sizeof buf - 1] = '\0';
        const char* p = buf;
        if (k == 0) {
          n = std::strtoul(buf, nullptr, 10);
          p = std::strchr(buf, ':');
          if (!p || n < 1) fail(BSPK_ERR_BOOT, "malformed PMI2 value for %s", key.c_str());
          ++p;
        }
        for (; p[0] && p[1]; p += 2) {
          auto nib = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
          blob += static_cast<char>(nib(p[0]) << 4 | nib(p[1]));
        }
      }
      out.push_back(std::move(blob));
    }
    return out;
  }

 private:
  bool inited_ = false;
  std::string kvs_;
  int seq_ = 0;
};
#endif

}  // namespace

std::unique_ptr<Bootstrap> make_slurm_bootstrap(const std::string& kind) {
  if (kind == "slurm") return std::make_unique<SlurmEnv>();
  if (kind == "pmix") {
#ifdef BSPK_HAVE_PMIX
    return std::make_unique<Pmix>();
#else
    fail(BSPK_ERR_BOOT, "this BSPk was built without PMIx (install libpmix-dev and rebuild); use srun --mpi=pmi2");
#endif
  }
  if (kind == "pmi2") {
#ifdef BSPK_HAVE_PMI2
    return std::make_unique<Pmi2>();
#else
    fail(BSPK_ERR_BOOT, "this BSPk was built without PMI2 (install libpmi2-0-dev and rebuild); use srun --mpi=pmix");
#endif
  }
  fail(BSPK_ERR_ARG, "unknown bootstrap '%s'", kind.c_str());
}

}  // namespace bspk::boot
