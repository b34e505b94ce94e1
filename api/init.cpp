// api/init.cpp -- start-up and shutdown: the runtime is assembled bottom-up
// (bootstrap, placement, provider selection, endpoint, pools, engine, mp,
// dsm), proves its memory registration with one fi_read per process, and is
// torn down top-down after the final collective superstep.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/runtime.h"
#include "base/config.h"
#include "base/exit_status.h"
#include "base/placement.h"
#include "base/random.h"
#include "boot/hub.h"
#include "boot/protocol.h"
#include "fabric/local.h"
#include "fabric/select.h"
#include "fabric/shm_names.h"
#include "sync/board.h"
#include "sync/wire.h"

namespace bspk::api {

namespace {

// Under bspkrun, a process's stdout is a pipe to the launcher, which stdio
// buffers in blocks: a prompt printed before reading stdin (BSPlib programs
// with bsp_init), or a progress line, would reach the terminal only when the
// buffer fills or the program ends. Line-buffered instead, as at a terminal
// (and as under mpirun, which gives its processes a pty): set when the
// library is loaded, before the program writes anything. Not under Slurm or
// without a launcher (BSPK_BOOT_SOCKET is bspkrun's).
__attribute__((constructor)) void line_buffer_stdout_under_bspkrun() {
  if (std::getenv("BSPK_BOOT_SOCKET") && !isatty(STDOUT_FILENO)) std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
}

constexpr uint64_t kProbeMagic = 0xB5B0000000000000ull;

// Where the job's processes run: one exchange of host names and CPU affinity
// masks gives whether the job is on one host, how many of its processes share
// this host and our index among them (for binding), and whether any host has
// more processes than CPUs (the CPUs its processes may run on, together: a
// process bound to one core by bspkrun or srun sees one CPU, but two such
// processes on two cores are not oversubscribed) -- the same answer on every
// process, so that choices
// made from it (the count exchange) agree job-wide.
struct JobLayout {
  std::vector<std::string> hosts;  // by pid
  std::vector<int> host_of;        // by pid: its host's index in order of first appearance
  bool all_local = true;
  int local_procs = 0, local_rank = 0;
  int nhosts = 0;
  double oversubscription = 0;  // the most processes per CPU on any host of the job
  int local_cpus = 0;           // CPUs in the union of this host's processes' affinity masks
};

// Settings that must be the same on every process of a job, as the user set
// them (defaults applied): with the count exchange, the rings or the pull
// chosen differently, start-up or the first counted sync waited for a
// partner that had chosen otherwise (60 s, then a time-out naming neither);
// a process that does not split headers, or splits bodies into other
// pieces (BSPK_SPLIT_FRAMES), cannot receive the others' split messages.
// "NAME=value\n" each, compared with pid 0's (same_as_peer).
std::string job_wide_settings() {
  std::string out;
  for (config::Var v : {config::Var::COUNT_EXCHANGE, config::Var::SHM_RINGS, config::Var::SHM_PULL,
                        config::Var::SPLIT_HEADER})
    out += strprintf("%s=%s\n", config::name(v), config::get_enum(v).c_str());
  out += strprintf("%s=%lld\n", config::name(config::Var::SPLIT_FRAMES),
                   static_cast<long long>(config::get_int(config::Var::SPLIT_FRAMES)));
  return out;
}

// Job-wide agreement: `all[j]` ("NAME=value\n" items) is process j's, and
// every process compares each one with pid 0's. A difference ends bspk_init
// on every process, naming the item, both values and the pids, instead of a
// hang or a malformed message later.
void same_as_peer(int me, const std::vector<std::string>& all, int j) {
  if (j == 0) return;
  const std::string &base = all[0], &other = all[static_cast<size_t>(j)];
  if (base == other) return;
  // The first item that differs.
  size_t at = 0;
  while (at < base.size() && at < other.size() && base[at] == other[at]) ++at;
  size_t start = at == 0 ? std::string::npos : base.rfind('\n', at - 1);
  start = start == std::string::npos ? 0 : start + 1;
  auto item = [&](const std::string& s) { return s.substr(start, s.find('\n', start) - start); };
  const std::string at0 = item(base), atj = item(other);
  const size_t eq = at0.find('=');
  const char* rule = "it must be the same on every process of a job (set the same environment for all of them)";
  if (me == 0 || me == j)
    fail(BSPK_ERR_ARG, "%s is '%s' on this process but '%s' on pid %d: %s", at0.substr(0, eq).c_str(),
         (me == 0 ? at0 : atj).substr(eq + 1).c_str(), (me == 0 ? atj : at0).substr(eq + 1).c_str(),
         me == 0 ? j : 0, rule);
  fail(BSPK_ERR_ARG, "%s is '%s' on pid 0 but '%s' on pid %d: %s", at0.substr(0, eq).c_str(),
       at0.substr(eq + 1).c_str(), atj.substr(atj.find('=') + 1).c_str(), j, rule);
}

JobLayout job_layout(boot::Bootstrap& boot, int pid) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  // The affinity mask as hex digits, 4 CPUs each, lowest CPUs first.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) CPU_SET(0, &set);
  std::string mask;
  for (int c = 0; c < CPU_SETSIZE; c += 4) {
    int d = 0;
    for (int b = 0; b < 4; ++b) d |= CPU_ISSET(c + b, &set) ? 1 << b : 0;
    mask += "0123456789abcdef"[d];
  }
  while (mask.size() > 1 && mask.back() == '0') mask.pop_back();
  JobLayout l;
  std::vector<std::string> recs = boot.allgather(std::string(host) + "\t" + mask + "\t" + job_wide_settings());
  std::vector<std::string> masks, settings;
  for (const std::string& r : recs) {
    size_t t = r.find('\t'), u = t == std::string::npos ? t : r.find('\t', t + 1);
    if (u == std::string::npos || u == t + 1) fail(BSPK_ERR_BOOT, "malformed host record from a peer");
    l.hosts.push_back(r.substr(0, t));
    masks.push_back(r.substr(t + 1, u - t - 1));
    settings.push_back(r.substr(u + 1));
  }
  for (size_t j = 0; j < settings.size(); ++j) same_as_peer(pid, settings, static_cast<int>(j));
  std::vector<std::string> seen;
  for (int r = 0; r < static_cast<int>(l.hosts.size()); ++r) {
    const std::string& h = l.hosts[static_cast<size_t>(r)];
    if (h != l.hosts[0]) l.all_local = false;
    if (h == host) {
      if (r < pid) ++l.local_rank;
      ++l.local_procs;
    }
    auto it = std::find(seen.begin(), seen.end(), h);
    l.host_of.push_back(static_cast<int>(it - seen.begin()));
    if (it == seen.end()) seen.push_back(h);
  }
  auto hex = [](char c) -> unsigned { return c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= '0' && c <= '9' ? c - '0' : 0; };
  for (const std::string& h : seen) {
    int procs = 0;
    std::vector<unsigned> any;  // the union of the masks of h's processes, 4 CPUs per entry
    for (size_t r = 0; r < l.hosts.size(); ++r)
      if (l.hosts[r] == h) {
        ++procs;
        const std::string& m = masks[r];
        if (any.size() < m.size()) any.resize(m.size(), 0);
        for (size_t i = 0; i < m.size(); ++i) any[i] |= hex(m[i]);
      }
    int cpus = 0;
    for (unsigned d : any) cpus += __builtin_popcount(d);
    l.oversubscription = std::max(l.oversubscription, static_cast<double>(procs) / std::max(cpus, 1));
    if (h == host) l.local_cpus = cpus;
  }
  l.nhosts = static_cast<int>(seen.size());
  return l;
}

// bspk_init must not hang: if start-up (bootstrap, exchanges, fabric
// connections) has not completed within BSPK_START_TIMEOUT (default 60 s),
// say where it was stuck and end the process (a PMIx fence or a peer that never
// comes cannot be interrupted otherwise).
class StartWatch {
 public:
  explicit StartWatch(double limit) : limit_(limit), thread_([this] { run(); }) {}
  ~StartWatch() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void phase(const char* what) {
    std::lock_guard<std::mutex> lk(mu_);
    phase_ = what;
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lk(mu_);
    if (cv_.wait_for(lk, std::chrono::duration<double>(limit_), [&] { return done_; })) return;
    std::fflush(stdout);
    // Where in the bootstrap, if a job hub connection is what it waits for
    // (e.g. a resolver blocked on an unreachable DNS server).
    const std::string note = boot::hub_connect_note();
    std::fprintf(stderr, "bspk: bspk_init (os pid %d): start-up did not complete within %.0f s (stuck in: %s%s%s); "
                 "ending this process (BSPK_START_TIMEOUT sets the limit)\n", (int)getpid(), limit_, phase_,
                 note.empty() ? "" : ": ", note.c_str());
    std::fflush(stderr);
    _exit(1);
  }
  double limit_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  const char* phase_ = "the bootstrap";
  std::thread thread_;
};

// The runtime of a process whose bspk_finalize came after an [over] error.
Runtime* abandoned = nullptr;

// exit() without (a completed) bspk_finalize: tell the job (under Slurm the
// hub reports it, naming the superstep; bspkrun sees it by itself). `status`
// is the one passed to exit() (-1: not known); one process without a
// launcher reports it itself and then exits with 1 instead of 0, as
// `bspkrun -n 1` would.
void at_exit(int status) {
  Runtime* r = rt ? rt : abandoned;
  if (!r || !r->boot) return;
  if (r->boot->exiting(r->engine ? r->engine->step() : 0) && status == 0) {
    std::fflush(nullptr);
    _exit(1);  // (from an exit handler: the remaining ones are skipped)
  }
}

// The start-up record each process publishes: its endpoint address, plus the
// base, key and offset of a probe word in its first frame slab (fi_mr_key is
// always exchanged, whatever mr_mode says; see fabric/fabric.h).
struct PeerRecord {
  uint64_t base, key, offset, token;
  std::vector<uint8_t> address;
};

std::vector<PeerRecord> exchange_records(Runtime& r, uintptr_t probe) {
  const fabric::MemoryRegion& mr = r.frames->region_of(probe);
  // What every process must have chosen alike (same_as_peer): the provider
  // (one set BSPK_PROVIDER, another not) and the frame size (a frame count
  // that does not match the element count, or a truncated receive, later).
  const std::string chosen = strprintf("the provider=%s\nthe frame size (BSPK_FRAME_SIZE)=%zu\n",
                                       r.ep->provider().c_str(), r.frames->frame_size());
  // meta[3]: the job's fabric token (fabric.h, set_job_token), drawn by pid 0;
  // the others send 0 and take pid 0's. meta[4]: the length of `chosen`.
  uint64_t meta[5] = {static_cast<uint64_t>(mr.base), mr.key, probe - mr.base, r.pid == 0 ? random_u64() : 0,
                      chosen.size()};
  std::string blob(sizeof meta, '\0');
  std::memcpy(blob.data(), meta, sizeof meta);
  blob += chosen;
  auto name = r.ep->name();
  blob.append(name.begin(), name.end());
  std::vector<PeerRecord> out;
  std::vector<std::string> choices;
  for (auto& b : r.boot->allgather(blob)) {
    if (b.size() <= sizeof meta) fail(BSPK_ERR_BOOT, "malformed start-up record from a peer");
    PeerRecord p;
    std::memcpy(meta, b.data(), sizeof meta);
    if (meta[4] >= b.size() - sizeof meta) fail(BSPK_ERR_BOOT, "malformed start-up record from a peer");
    p.base = meta[0];
    p.key = meta[1];
    p.offset = meta[2];
    p.token = meta[3];
    choices.push_back(b.substr(sizeof meta, meta[4]));
    p.address.assign(b.begin() + static_cast<ptrdiff_t>(sizeof meta + meta[4]), b.end());
    out.push_back(std::move(p));
  }
  for (size_t j = 0; j < choices.size(); ++j) same_as_peer(r.pid, choices, static_cast<int>(j));
  return out;
}

// Shared-memory segments of a job on one host (base/shm_segment.h): the count
// board (sync/board.h) unless BSPK_COUNT_EXCHANGE says otherwise, and the
// small-message rings (fabric/local.h) unless BSPK_SHM_RINGS=off. Collective
// (two bootstrap exchanges when any is used): pid 0 creates them under random
// names, the others open them, and pid 0 removes the names once everyone has
// them mapped.
struct LocalSegments {
  std::unique_ptr<sync::Board> board;
  SharedSegment rings;
};

LocalSegments setup_local_segments(Runtime& r, bool all_local, const std::string& job) {
  LocalSegments out;
  std::string how = config::get_enum(config::Var::COUNT_EXCHANGE);
  std::string rings = config::get_enum(config::Var::SHM_RINGS);
  if (how == "board" && !all_local)
    fail(BSPK_ERR_ARG, "BSPK_COUNT_EXCHANGE=board needs every process on one host; this job spans several "
                       "(use direct, tree or auto)");
  if (rings == "on" && !all_local)
    fail(BSPK_ERR_ARG, "BSPK_SHM_RINGS=on needs every process on one host; this job spans several (use auto or off)");
  const bool one = all_local && r.nprocs > 1;
  const bool want_board = one && (how == "auto" || how == "board");
  const bool want_rings = all_local && (rings == "on" || (rings == "auto" && r.nprocs <= 16));
  if (!want_board && !want_rings) return out;
  std::string names;
  if (r.pid == 0) {
    std::string prefix = boot::shm_name(job, 0);
    // Chosen by auto, a segment /dev/shm has no room for (a container's
    // 64 MiB, the rings of 16 processes need 10 MiB), or a host without a
    // usable /dev/shm, leaves the segment out with a note, and its work goes
    // by messages; asked for by name, it is an error.
    auto make = [&](bool automatic, const char* instead, auto&& create) {
      try {
        create();
      } catch (const Error& e) {
        if (!automatic || (e.code() != BSPK_ERR_NOMEM && e.code() != BSPK_ERR_UNSUPPORTED)) throw;
        std::fprintf(stderr, "bspk: note: %s; %s\n", e.what(), instead);
      }
    };
    if (want_board)
      make(how == "auto", "the count exchange goes by messages instead (BSPK_COUNT_EXCHANGE)",
           [&] { out.board.reset(sync::Board::create(prefix, 0, r.nprocs)); });
    if (want_rings)
      make(rings == "auto", "small messages go through the provider instead (BSPK_SHM_RINGS)",
           [&] { out.rings = fabric::LocalTransport::create_segment(prefix, r.nprocs); });
    names = (out.board ? out.board->name() : std::string()) + "\n" + out.rings.name();
  }
  std::string all = r.boot->allgather(names)[0];
  size_t nl = all.find('\n');
  if (nl == std::string::npos) fail(BSPK_ERR_BOOT, "malformed shared-segment names from pid 0");
  const std::string board_name = all.substr(0, nl), rings_name = all.substr(nl + 1);  // (empty: left out)
  if (r.pid != 0) {
    if (want_board && !board_name.empty()) out.board.reset(sync::Board::open(board_name, r.pid, r.nprocs));
    if (want_rings && !rings_name.empty())
      out.rings = SharedSegment::open(rings_name, fabric::LocalTransport::segment_bytes(r.nprocs));
  }
  r.boot->barrier();
  if (r.pid == 0) {
    if (out.board) out.board->unlink();
    if (out.rings.base()) out.rings.unlink();
  }
  return out;
}

void start_runtime(Runtime& r, StartWatch& watch) {
  r.pid = r.boot->rank();
  r.nprocs = r.boot->size();
  r.print_stats = config::get_bool(config::Var::STATS);
  const bool verbose = config::get_bool(config::Var::VERBOSE) && r.pid == 0;
  // A BSPK_* variable that is no setting (a typo) is said once per job: by
  // bspkrun, else (srun, a program started directly) by pid 0 here.
  if (r.pid == 0 && std::strcmp(r.boot->kind(), "bspkrun") != 0)
    for (const config::Unknown& u : config::unknown_settings())
      std::fprintf(stderr, "bspk: warning: %s\n", config::unknown_text(u).c_str());
  // A malformed value of any user setting ends bspk_init, as one read below
  // would (a setting this job does not read included).
  if (auto bad = config::first_user_problem()) fail(BSPK_ERR_ARG, "%s", bad->c_str());
  watch.phase("the host-name exchange");
  JobLayout layout = job_layout(*r.boot, r.pid);
  r.local_procs = layout.local_procs;
  r.host_of = layout.host_of;
  const std::string job = r.boot->job_id();
  fabric::JobFacts facts;
  facts.nprocs = r.nprocs;
  facts.all_local = layout.all_local;
  // The shm provider's region: the job's prefix (for clean-up) and 64 random
  // bits of this process's own, so no other local user can know the name
  // before it exists (issue 13; fabric.cpp refuses a name already taken).
  uint64_t salt = random_u64();
  // kHeldMark: this process holds a lock on the region for its life, so a
  // later process can tell a dead job's region from a live one's.
  facts.local_name = boot::shm_name(job, r.pid) + fabric::kHeldMark +
                     strprintf("%016llx", static_cast<unsigned long long>(salt));
  facts.header_bytes = sizeof(wire::Header);
  fabric::Selection sel = fabric::select(facts);
  if (r.pid == 0 && !sel.note.empty()) std::fprintf(stderr, "bspk: note: %s\n", sel.note.c_str());
  // rxd parses every datagram that reaches its UDP ports before any tag is
  // compared, and libfabric 1.17's crashes on malformed ones (README,
  // Security): say so once per job, since the user chose it by name.
  if (r.pid == 0 && sel.config.provider.compare(0, 4, "udp;") == 0 &&
      sel.config.provider.find("ofi_rxd") != std::string::npos)
    std::fprintf(stderr, "bspk: warning: provider '%s' takes datagrams from anyone who can reach its UDP ports, and "
                 "libfabric's rxd crashes on malformed ones: a stranger can end this job (README, Security); use "
                 "tcp where that matters\n",
                 sel.config.provider.c_str());
  // Bind before anything is allocated, so pools land on our NUMA node.
  placement::Result placed =
      placement::place(layout.local_rank, layout.local_procs, std::string(r.boot->kind()) == "bspkrun");
  if (config::get_bool(config::Var::REPORT_BINDINGS) && std::string(r.boot->kind()) != "bspkrun")
    std::fprintf(stderr, "bspk: pid %d (os pid %d on %s): %s PUs %s, frames on NUMA node %s; %s\n", r.pid,
                 (int)getpid(), layout.hosts[static_cast<size_t>(r.pid)].c_str(),
                 placed.bound ? "bound to" : "not bound, runs on", placed.cpus.c_str(), placed.numa.c_str(),
                 placed.how.c_str());
  // The CPUs this host's processes may use: those of their affinity masks
  // together, within what the machine (or its cgroup) allows. A launcher's
  // mask counts (`taskset -c 0 bspkrun -n 2`, an affinity-only Slurm step):
  // two processes confined to one CPU are oversubscribed even on a machine
  // of many, and must yield at once instead of spinning for their peer
  // (spinning there cost a superstep 400 us instead of 2-5: the peer only
  // runs when the spinner's time slice ends).
  int host_cpus = placed.host_pus;
  if (layout.local_cpus > 0 && (host_cpus <= 0 || layout.local_cpus < host_cpus)) host_cpus = layout.local_cpus;
  sync::Options opt = sync::Options::from_env(r.local_procs, host_cpus, r.nprocs, layout.oversubscription);
  {
    // If the job fails, remove our shared-memory regions and those of a dead
    // peer on this host (bspkrun, or the job hub's failure path, calls this).
    std::vector<std::string> hosts = layout.hosts;
    int me = r.pid;
    r.boot->on_fatal([job, hosts, me](int failed) {
      boot::remove_shm_regions(job, me);
      if (failed >= 0 && failed < static_cast<int>(hosts.size()) && failed != me &&
          hosts[static_cast<size_t>(failed)] == hosts[static_cast<size_t>(me)])
        boot::remove_shm_regions(job, failed);
    });
  }
  // What a job of this user killed whole on this host left in /dev/shm
  // (fabric/shm_names.h); 10 s spares an endpoint being opened right now.
  if (int n = fabric::remove_dead_shm_regions(boot::kShmPrefix, 10.0); n > 0 && config::get_bool(config::Var::VERBOSE))
    std::fprintf(stderr, "bspk: pid %d removed %d shared-memory region(s) of killed processes from /dev/shm\n",
                 r.pid, n);
  watch.phase("opening the fabric endpoint");
  // A CQ wait object only where it pays (fabric/select.h cq_wait_fd_auto):
  // without one every completion is cheaper (on tcp;ofi_rxm 1.17 about 2 us
  // per small message), and an idle process yields, then naps 50 us - 1 ms
  // (sync/wait.cpp), which on net with more processes than CPUs wakes too
  // late. A per-process choice; the split is not (a process that does not
  // split cannot take split messages, sync/rx.cpp says so).
  const std::string cq_wait = config::get_enum(config::Var::CQ_WAIT);
  sel.config.cq_wait_fd =
      cq_wait == "fd" || (cq_wait == "auto" && fabric::cq_wait_fd_auto(sel.config.provider, opt.oversubscribed));
  sel.config.split_header = config::get_enum(config::Var::SPLIT_HEADER) == "on";
  sel.config.split_iov = opt.split_frames;
  if (config::get_enum(config::Var::BOUNCE) == "on") sel.config.bounce_size = sizeof(wire::Header) + wire::kSmallPayload;
  r.ep = std::make_unique<fabric::Endpoint>(sel.config);
  size_t fsz = config::get_size(config::Var::FRAME_SIZE, sel.default_frame_size);
  if (fsz < 64 || fsz > comem::kMaxFrameSize || (fsz & (fsz - 1)))
    fail(BSPK_ERR_ARG, "frame size %zu is not a power of two from 64 bytes to 64M (BSPK_FRAME_SIZE)", fsz);
  if (fsz + sizeof(wire::Header) > r.ep->max_msg_size())
    fail(BSPK_ERR_ARG, "frame size %zu bytes: a frame and its %zu-byte header exceed provider %s's largest message "
         "(%zu bytes); set BSPK_FRAME_SIZE lower", fsz, sizeof(wire::Header), r.ep->provider().c_str(),
         r.ep->max_msg_size());
  watch.phase("setting up shared memory (count board, rings)");
  LocalSegments seg = setup_local_segments(r, layout.all_local, job);
  r.transport = r.ep.get();
  if (seg.rings.base()) {
    const std::string pull = config::get_enum(config::Var::SHM_PULL);
    const bool pulls = pull == "on" || (pull == "auto" && r.ep->provider() == "shm");
    r.local = std::make_unique<fabric::LocalTransport>(*r.ep, std::move(seg.rings), r.pid, r.nprocs, wire::kTagSmall,
                                                       pulls);
    r.transport = r.local.get();
  }
  // The pools take their slabs from the transport (host-shared memory where
  // the same-host path pulls from it) and register them through it.
  size_t limit = config::get_size(config::Var::POOL_LIMIT);
  r.frames = std::make_unique<comem::FramePool>(r.transport, fsz, limit);
  r.small = std::make_unique<comem::FramePool>(r.transport, wire::kSmallPayload, limit, size_t{1} << 20);
  r.small->prefault();  // its buffers receive arrivals (comem/pool.h)
  if (size_t reserve = config::get_size(config::Var::POOL_RESERVE)) {
    if (limit && reserve > limit)
      fail(BSPK_ERR_ARG, "BSPK_POOL_RESERVE=%zu is larger than BSPK_POOL_LIMIT=%zu", reserve, limit);
    r.frames->reserve(reserve);
  }
  r.comem = std::make_unique<comem::Comem>(r.pid, *r.frames, r.index, r.small.get());
  r.engine = std::make_unique<sync::Engine>(r.pid, r.nprocs, *r.transport, *r.frames, *r.small, *r.boot, r.stats, opt);
  if (seg.board) r.engine->use_board(std::move(seg.board));
  r.engine->on_send_done([c = r.comem.get()](uint32_t region) { c->send_done(region); });
  r.mp = std::make_unique<mp::MessagePassing>(*r.engine, *r.comem, r.stats);
  r.dsm = std::make_unique<dsm::Dsm>(*r.engine, *r.comem, r.stats, config::get_bool(config::Var::CHECK));

  uintptr_t probe = r.frames->alloc();
  *reinterpret_cast<uint64_t*>(probe) = kProbeMagic | static_cast<uint64_t>(r.pid);
  if (auto path = config::get_string(config::Var::PROFILE); path && !path->empty()) {
    // A switch rather than a file name: off/0/no/false profile nothing,
    // on/1/yes/true into bspk-profile.csv (not into files named "1" or "off").
    std::string v = *path;
    for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (v == "1" || v == "on" || v == "yes" || v == "true") *path = "bspk-profile.csv";
    if (!(v == "0" || v == "off" || v == "no" || v == "false"))
      // (before the exchange: pid 0's header comes first; CPU times only
      // where processes share CPUs, as reading the clock costs a system call)
      r.profile = std::make_unique<Profile>(*path, r.pid, opt.host_cpus, opt.oversubscribed);
  }
  watch.phase("the endpoint-address exchange");
  std::vector<PeerRecord> peers = exchange_records(r, probe);
  std::vector<std::vector<uint8_t>> addrs;
  for (auto& p : peers) addrs.push_back(p.address);
  r.ep->insert_peers(addrs);
  r.ep->set_job_token(peers[0].token);  // before the engine posts its first receive
  r.engine->start();
  watch.phase("connecting to every peer over the fabric");
  // Out-of-band barrier before the first fabric message: every peer's
  // endpoint must exist before anyone sends (libfabric 1.17's shm provider
  // races otherwise).
  r.boot->barrier();
  // From here on every wait progresses the fabric: a provider whose first
  // contact with a peer needs that peer to progress (a process blocked in the
  // bootstrap would stall it) gets every connection opened now, all at once.
  r.engine->fabric_barrier(sel.connect_all_pairs || r.ep->control_progress_manual());
  // Registration check: read the right neighbour's probe word one-sidedly,
  // addressed per mr_mode (base + offset under FI_MR_VIRT_ADDR, else offset).
  int nb = (r.pid + 1) % r.nprocs;
  const PeerRecord& pn = peers[static_cast<size_t>(nb)];
  uint64_t got = r.engine->read_word(nb, pn.base, pn.offset, pn.key);
  if (got != (kProbeMagic | static_cast<uint64_t>(nb)))
    fail(BSPK_ERR_FABRIC,
         "registration check failed: fi_readmsg of pid %d's probe word returned %#llx, expected %#llx "
         "(provider %s, mr_mode %#llx)",
         nb, (unsigned long long)got, (unsigned long long)(kProbeMagic | static_cast<uint64_t>(nb)),
         r.ep->provider().c_str(), (unsigned long long)r.ep->mr_mode());
  r.engine->fabric_barrier(false);  // every probe has been read
  r.frames->free(probe);
  // Every process's pools exist now: map the other processes' frame slabs
  // here rather than at the first pull from each, inside a superstep.
  if (r.local) r.local->map_peer_slabs();
  if (verbose)
    std::fprintf(stderr,
                 "bspk: registration check ok: fi_readmsg of pid %d at remote address %#llx (%s), key %#llx\n",
                 nb, (unsigned long long)r.ep->remote_addr(pn.base, pn.offset),
                 r.ep->virt_addr() ? "virtual address" : "offset into the region", (unsigned long long)pn.key);
  r.boot->set_state(0, boot::ProcState::Running);
  if (verbose)
    std::fprintf(stderr, "bspk: %d processes on %d host%s, bootstrap %s, %s (%s), frame %zu bytes\n", r.nprocs,
                 layout.nhosts, layout.nhosts > 1 ? "s" : "", r.boot->kind(), r.ep->describe().c_str(),
                 sel.reason.c_str(), fsz);
  if (verbose)
    std::fprintf(stderr, "bspk: count exchange: %s; messages of up to %zu bytes (injected ones up to %zu): %s; larger ones: %s\n",
                 r.engine->board() ? "shared-memory board (one host)"
                 : r.nprocs == 1   ? "none (one process)"
                 : opt.count_exchange == sync::Options::Exchange::Direct  ? "direct (one round of p-1 messages)"
                 : opt.count_exchange == sync::Options::Exchange::Halving ? "recursive halving (log2 p rounds)"
                                                                          : "binomial tree (2 ceil(log2 p) rounds)",
                 fabric::LocalTransport::kCellPayload, fabric::LocalTransport::kRingMessage,
                 r.local ? "shared-memory rings (one host)" : "through the provider",
                 r.local && r.local->pulling() ? "pulled by the receiver (one memcpy from the sender's shared frame slab)"
                 : r.transport->eager_limit()  ? strprintf("through the provider, header then payload, up to %u frame%s "
                                                           "per payload message", r.engine->body_frames(),
                                                           r.engine->body_frames() > 1 ? "s" : "").c_str()
                                               : "through the provider");
  if (verbose) {
    // (Past the barriers above: every process has published its CPU.)
    std::string mates;
    for (int j : r.engine->cpu_mates()) mates += (mates.empty() ? "" : " ") + std::to_string(j);
    if (!mates.empty())
      mates = "; pid " + std::to_string(r.pid) + " shares its CPU with pid(s) " + mates +
              " and does not yield to them while they wait in the same barrier";
    std::fprintf(stderr, "bspk: waiting: %d process%s on %d CPU%s here%s: spin %.0f us, then yield %.0f ms%s\n",
                 r.local_procs, r.local_procs == 1 ? "" : "es", opt.host_cpus, opt.host_cpus == 1 ? "" : "s",
                 opt.oversubscribed ? " (oversubscribed)" : "", opt.spin_s * 1e6, opt.yield_s * 1e3, mates.c_str());
  }
  if (r.profile) r.profile->start(r.stats);  // superstep 0 starts now
}

// Pool occupancy lives in the pools; copy it into the counters before they are read.
void refresh_pool_stats(Runtime& r) {
  r.stats.frames_peak = r.frames->peak();
  r.stats.small_peak = r.small->peak();
  r.stats.pool_bytes = r.frames->bytes() + r.small->bytes();
}

}  // namespace

Runtime::~Runtime() {
  // Close the endpoint first (no more writes into frames), then the layers
  // above it, then the registered pools, then the same-host path (whose
  // shared memory the pools' slabs may be), then the domain.
  if (ep) ep->close_endpoint();
  dsm.reset();
  mp.reset();
  engine.reset();
  comem.reset();
  frames.reset();
  small.reset();
  local.reset();  // after the pools: their slabs may be its shared memory
  ep.reset();
}

void init_runtime(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  StartWatch watch(config::get_seconds(config::Var::START_TIMEOUT));
  auto r = std::make_unique<Runtime>();
  r->boot = boot::make_bootstrap();
  starting_pid = r->boot->rank();
  try {
    start_runtime(*r, watch);
  } catch (const std::exception& e) {
    // The job cannot start without this process: tell the others why (under
    // Slurm the hub ends them with this message), then return the error.
    r->boot->init_failed(strprintf("bspk_init failed on pid %d: %s", r->pid, e.what()));
    throw;
  }
  rt = r.release();
  static bool registered = false;
  if (!registered) registered = at_exit_with_status<at_exit>();
}

int finalize_runtime() {
  int late = 0;  // an error found at the final superstep's boundary (DSM), reported after shutdown
  Runtime& r = need();
  const uint32_t final_step = r.engine->step();  // what reports name, also once the final sync counted it ended
  r.boot->set_state(final_step, boot::ProcState::Finalizing);
  // BSPK_POOL_LIMIT no longer applies: the program allocates nothing more,
  // and a receive slot starved at the limit (a bspk_sync that returned
  // BSPK_ERR_NOMEM, the program then finalizing without freeing) would
  // otherwise keep this superstep's messages out, and their senders waiting
  // in their own bspk_finalize, until BSPK_SYNC_TIMEOUT.
  r.frames->lift_limit();
  r.small->lift_limit();
  r.dsm->before_sync();
  if (r.profile) r.profile->sync_called();
  r.engine->sync(/*finalizing=*/true);
  r.boot->set_state(final_step, boot::ProcState::Finalizing);  // (the superstep's end said "computing")
  if (r.profile) {
    r.profile->sync_done(r.engine->step() - 1, "finalize", r.stats, r.comem_bytes());
    r.profile.reset();  // written and closed
  }
  r.dsm->flush_errors();  // refusals of the final superstep's copies, too (issue 12, defect 3)
  std::string msg;
  if (int c = r.dsm->take_error(&msg)) late = record("bspk_finalize", c, msg.c_str());
  // Our last control messages (e.g. the Unregisters of regions freed just
  // before) complete while every peer still progresses: one sent through the
  // provider completes only once its receiver has taken it, and a receiver
  // that has left the barrier takes nothing. (Until 2026-12-04 the barrier
  // came first; a peer whose barrier Hellos came through the shared-memory
  // rings could leave with such messages not taken, and this process then
  // waited BSPK_SYNC_TIMEOUT for them and failed.)
  r.engine->quiesce();
  r.engine->fabric_barrier(false);  // nobody closes while a peer may still talk to it
  r.engine->quiesce();              // the barrier's own Hellos, taken by their receivers within it
  if (r.print_stats) {
    refresh_pool_stats(r);
    // stdout, so that `bspkrun ... | grep bspk-stats` finds it (the user asked for it).
    std::fflush(stdout);
    std::fprintf(stdout, "%s\n", r.stats.line(r.pid).c_str());
    std::fflush(stdout);
  }
  r.boot->set_state(final_step, boot::ProcState::Done);
  r.boot->finalized();
  delete rt;
  rt = nullptr;
  finalized = true;
  return late;
}

void abandon_runtime() {
  // Not torn down: closing the endpoint now could make peers that are still
  // sending to this process report fabric errors of their own, and the
  // launcher must learn of the failure from this process's exit (no
  // Finalized message is sent). Failed: the others' waits leave the report
  // to that exit (Bootstrap::failed_peer) rather than time out first.
  rt->boot->set_state(rt->engine->step(), boot::ProcState::Failed);
  abandoned = rt;
  rt = nullptr;
  finalized = true;
}

void fill_stats(bspk_stats* out, size_t size) {
  refresh_pool_stats(*rt);
  const Stats& s = rt->stats;
  bspk_stats o{};
  o.supersteps = s.supersteps;
  o.msgs_sent = s.msgs_sent;
  o.bytes_sent = s.bytes_sent;
  o.msgs_recv = s.msgs_recv;
  o.bytes_recv = s.bytes_recv;
  o.bytes_copied = s.bytes_copied;
  o.ctrl_sent = s.ctrl_sent;
  o.flow_waits = s.flow_waits;
  o.frames_in_use = rt->frames->in_use();
  o.frames_peak = s.frames_peak;
  o.frame_size = rt->frames->frame_size();
  o.pool_bytes = s.pool_bytes;
  o.small_in_use = rt->small->in_use();
  o.small_peak = s.small_peak;
  o.sync_wait_s = s.sync_wait_s;
  o.copies = s.copies;
  o.bytes_stored = s.bytes_stored;
  o.bytes_fetched = s.bytes_fetched;
  o.frames_flipped = s.frames_flipped;
  o.step_sends = rt->step_sends();
  o.reads = s.reads;
  o.bytes_read = s.bytes_read;
  o.rx_frames = rt->engine ? rt->engine->rx_frames() : 0;
  o.kept_bytes = rt->frames->kept_bytes();
  // A caller built against an older header gets the fields it knows; one
  // built against a newer header gets zeros in the fields this build lacks.
  std::memcpy(out, &o, std::min(size, sizeof o));
  if (size > sizeof o) std::memset(reinterpret_cast<char*>(out) + sizeof o, 0, size - sizeof o);
}

}  // namespace bspk::api
