// api/bspk.cpp -- the C API: assembles the layers and turns exceptions into
// return codes.
//
// Layering (each knows only the one below):
//   bspk_send -> mp::MessagePassing::send -> sync::Engine::send_data
//             -> fabric::Endpoint::post_send -> fi_sendmsg
//   bspk_sync -> sync::Engine::sync (counting, reductions, waiting)
//   bspk_copy -> dsm::Dsm::copy -> sync::Engine::send_frame -> fi_sendmsg
//             (applied at the boundary: sync::Engine -> dsm::Dsm::on_boundary)
//   bspk_malloc/elemP/incr/span -> comem::Comem (regions over comem::FramePool)
#include <bspk.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdarg>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/env.h"
#include "base/error.h"
#include "base/placement.h"
#include "base/stats.h"
#include "boot/bootstrap.h"
#include "boot/protocol.h"
#include "comem/pool.h"
#include "comem/region.h"
#include "fabric/fabric.h"
#include "fabric/wire.h"
#include "dsm/dsm.h"
#include "mp/mp.h"
#include "sync/engine.h"

using namespace bspk;

namespace {

enum class ErrorPolicy { Print, Quiet, Abort };

struct Runtime {
  std::unique_ptr<boot::Bootstrap> boot;
  std::unique_ptr<fabric::Endpoint> ep;
  std::unique_ptr<comem::FramePool> frames;
  std::unique_ptr<comem::FramePool> small;  // 4 KiB receive buffers for small messages
  comem::IndexPool index;
  std::unique_ptr<comem::Comem> comem;
  std::unique_ptr<sync::Engine> engine;
  std::unique_ptr<mp::MessagePassing> mp;
  std::unique_ptr<dsm::Dsm> dsm;
  Stats stats;
  int pid = 0, nprocs = 1;
  int local_procs = 1;  // processes of the job on this host
  bool print_stats = false;

  ~Runtime() {
    // Close the endpoint first (no more writes into frames), then the layers
    // above it, then the registered pools, then the domain.
    if (ep) ep->close_endpoint();
    dsm.reset();
    mp.reset();
    engine.reset();
    comem.reset();
    frames.reset();
    small.reset();
    ep.reset();
  }
};

constexpr uint64_t kProbeMagic = 0xB5B0000000000000ull;

Runtime* rt = nullptr;
bool finalized = false;
std::string last_error;
ErrorPolicy policy = ErrorPolicy::Print;

uint32_t cur_step() { return rt && rt->engine ? rt->engine->step() : 0; }

std::string where(const char* call) {
  if (!rt) return strprintf("%s (before bspk_init)", call);
  return strprintf("%s (pid %d, superstep %u)", call, rt->pid, cur_step());
}

[[noreturn]] void abort_job(const std::string& line, int code) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
  if (rt && rt->boot) rt->boot->abort(code, line);
  _exit(code);
}

int record(const char* call, int code, const char* msg) {
  last_error = where(call) + ": " + msg;
  if (policy == ErrorPolicy::Abort) abort_job("bspk: error (BSPK_ERRORS=abort): " + last_error, 1);
  if (policy == ErrorPolicy::Print) {
    std::fflush(stdout);
    std::fprintf(stderr, "bspk: error: %s\n", last_error.c_str());
  }
  return code;
}

// Run f, mapping exceptions to error codes recorded for bspk_error_string().
template <class F>
int guarded(const char* call, F&& f) {
  try {
    f();
    return BSPK_OK;
  } catch (const Error& e) {
    return record(call, e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return record(call, BSPK_ERR_NOMEM, "out of memory");
  } catch (const std::exception& e) {
    return record(call, BSPK_ERR_FABRIC, e.what());
  }
}

Runtime& need() {
  if (!rt) {
    if (finalized) fail(BSPK_ERR_STATE, "called after bspk_finalize");
    fail(BSPK_ERR_STATE, "called before bspk_init");
  }
  return *rt;
}

// Default frame size per provider (BSPK_FRAME_SIZE overrides), measured with
// bench/pingpong on libfabric 1.17:
//  - tcp/verbs (rxm): 256 KiB. A frame above rxm's 128 KiB segmentation limit
//    moves by rendezvous (RMA), 77-85% of raw bandwidth at >= 256 KiB against
//    40-50% with 64 KiB frames.
//  - shm: 64 KiB. Bandwidth is no worse than with 256 KiB frames, and every
//    message occupies at least one frame on its receiver until freed, so small
//    messages cost 4x less memory.
size_t default_frame_size(const std::string& provider) {
  if (provider == "shm") return size_t{64} << 10;
  return size_t{256} << 10;  // tcp;ofi_rxm, verbs;ofi_rxm
}

// Where the job's processes run: one host-name exchange gives whether the job
// is on one host, how many of its processes share this host and our index
// among them (for binding).
struct JobLayout {
  std::vector<std::string> hosts;  // by pid
  bool all_local = true;
  int local_procs = 0, local_rank = 0;
  int nhosts = 0;
};

JobLayout job_layout(boot::Bootstrap& boot, int pid) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  JobLayout l;
  l.hosts = boot.allgather(host);
  std::vector<std::string> seen;
  for (int r = 0; r < static_cast<int>(l.hosts.size()); ++r) {
    const std::string& h = l.hosts[static_cast<size_t>(r)];
    if (h != l.hosts[0]) l.all_local = false;
    if (h == host) {
      if (r < pid) ++l.local_rank;
      ++l.local_procs;
    }
    if (std::find(seen.begin(), seen.end(), h) == seen.end()) seen.push_back(h);
  }
  l.nhosts = static_cast<int>(seen.size());
  return l;
}

// Provider per job: BSPK_PROVIDER / FI_PROVIDER if set; shm when every process
// is on this host; on several hosts never shm: verbs when this host has
// InfiniBand, else tcp.
std::string choose_provider(const JobLayout& l) {
  if (auto p = env::get("BSPK_PROVIDER")) return fabric::canonical_provider(*p);
  if (auto p = env::get("FI_PROVIDER")) return fabric::canonical_provider(*p);
  if (l.all_local) return "shm";
  if (fabric::provider_available("verbs;ofi_rxm")) return "verbs;ofi_rxm";
  return "tcp;ofi_rxm";
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
    std::fprintf(stderr, "bspk: bspk_init (os pid %d): start-up did not complete within %.0f s (stuck in: %s); "
                 "ending this process (BSPK_START_TIMEOUT sets the limit)\n", (int)getpid(), limit_, phase_);
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

void at_exit() {
  // exit() without bspk_finalize: tell the job (under Slurm the hub reports
  // it, naming the superstep; bspkrun sees it by itself).
  if (rt && rt->boot) rt->boot->exiting(cur_step());
}

void start_runtime(Runtime& r, StartWatch& watch);

void init_runtime(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  if (auto v = env::get("BSPK_ERRORS")) {
    if (*v == "print") policy = ErrorPolicy::Print;
    else if (*v == "quiet") policy = ErrorPolicy::Quiet;
    else if (*v == "abort") policy = ErrorPolicy::Abort;
    else fail(BSPK_ERR_ARG, "BSPK_ERRORS='%s' is not one of print, quiet, abort", v->c_str());
  }
  StartWatch watch(env::get_seconds("BSPK_START_TIMEOUT", 60));
  auto r = std::make_unique<Runtime>();
  r->boot = boot::make_bootstrap();
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
  if (!registered) registered = std::atexit(at_exit) == 0;
}

void start_runtime(Runtime& rr, StartWatch& watch) {
  Runtime* r = &rr;
  r->pid = r->boot->rank();
  r->nprocs = r->boot->size();
  r->print_stats = env::get_bool("BSPK_STATS", false);
  watch.phase("the host-name exchange");
  JobLayout layout = job_layout(*r->boot, r->pid);
  r->local_procs = layout.local_procs;
  std::string provider = choose_provider(layout);
  // Bind before anything is allocated, so pools land on our NUMA node.
  placement::Result placed =
      placement::place(layout.local_rank, layout.local_procs, std::string(r->boot->kind()) == "bspkrun");
  if (env::get_bool("BSPK_REPORT_BINDINGS", false) && std::string(r->boot->kind()) != "bspkrun")
    std::fprintf(stderr, "bspk: pid %d (os pid %d on %s): %s PUs %s, frames on NUMA node %s; %s\n", r->pid,
                 (int)getpid(), layout.hosts[static_cast<size_t>(r->pid)].c_str(),
                 placed.bound ? "bound to" : "not bound, runs on", placed.cpus.c_str(), placed.numa.c_str(),
                 placed.how.c_str());
  sync::Options opt = sync::Options::from_env(r->local_procs, placed.host_pus);
  fabric::Config cfg;
  cfg.provider = provider;
  cfg.nprocs = r->nprocs;
  // Unique per job and rank, so a region left behind by a killed process (whose
  // pid may be reused) never blocks a new one; bspkrun, or the job hub's
  // failure path, removes the job's regions.
  const std::string job = r->boot->job_id();
  cfg.shm_name = boot::shm_name(job, r->pid);
  {
    // If the job fails, remove our regions and those of a dead peer on this host.
    std::vector<std::string> hosts = layout.hosts;
    int me = r->pid;
    r->boot->on_fatal([job, hosts, me](int failed) {
      boot::remove_shm_regions(job, me);
      if (failed >= 0 && failed < static_cast<int>(hosts.size()) && failed != me &&
          hosts[static_cast<size_t>(failed)] == hosts[static_cast<size_t>(me)])
        boot::remove_shm_regions(job, failed);
    });
  }
  if (auto i = env::get("BSPK_IFACE")) cfg.iface = *i;
  else if (auto i2 = env::get("FI_TCP_IFACE")) cfg.iface = *i2;
  else if (layout.all_local && cfg.provider != "shm") cfg.iface = "lo";
  cfg.off_host = !layout.all_local;
  // libfabric filters providers by FI_PROVIDER: keep it consistent with our choice.
  setenv("FI_PROVIDER", cfg.provider.c_str(), 1);
  if (!env::get("FI_UNIVERSE_SIZE")) setenv("FI_UNIVERSE_SIZE", std::to_string(r->nprocs).c_str(), 1);
  // rxm (tcp, verbs) picks eager / segmented / rendezvous by total message size
  // (16 KiB and 128 KiB by default). Every BSPk message carries a 64-byte header,
  // which would push a 16 KiB payload onto the 5x slower segmented path: shift
  // both thresholds by the header so protocols switch at the same payload sizes.
  if (cfg.provider.find("ofi_rxm") != std::string::npos) {
    if (!env::get("FI_OFI_RXM_BUFFER_SIZE"))
      setenv("FI_OFI_RXM_BUFFER_SIZE", std::to_string(16384 + sizeof(wire::Header)).c_str(), 1);
    if (!env::get("FI_OFI_RXM_SAR_LIMIT"))
      setenv("FI_OFI_RXM_SAR_LIMIT", std::to_string(131072 + sizeof(wire::Header)).c_str(), 1);
  }
  watch.phase("opening the fabric endpoint");
  r->ep = std::make_unique<fabric::Endpoint>(cfg);
  size_t fsz = env::get_size("BSPK_FRAME_SIZE", default_frame_size(cfg.provider));
  size_t limit = env::get_size("BSPK_POOL_LIMIT", 0);
  r->frames = std::make_unique<comem::FramePool>(r->ep.get(), fsz, limit);
  r->small = std::make_unique<comem::FramePool>(r->ep.get(), wire::kSmallPayload, limit, size_t{1} << 20);
  r->comem = std::make_unique<comem::Comem>(r->pid, *r->frames, r->index, r->small.get());
  r->engine = std::make_unique<sync::Engine>(r->pid, r->nprocs, *r->ep, *r->frames, *r->small,
                                             *r->boot, r->stats, opt);
  r->mp = std::make_unique<mp::MessagePassing>(*r->engine, *r->comem, r->stats);
  r->dsm = std::make_unique<dsm::Dsm>(*r->engine, *r->comem, r->stats, env::get_bool("BSPK_CHECK", false));

  // Start-up exchange: endpoint name, plus the base, key and offset of a probe
  // word in our first frame slab (fi_mr_key is always exchanged, whatever
  // mr_mode says; see fabric/fabric.h).
  uintptr_t probe = r->frames->alloc();
  *reinterpret_cast<uint64_t*>(probe) = kProbeMagic | static_cast<uint64_t>(r->pid);
  const fabric::MemoryRegion& mr = r->frames->region_of(probe);
  auto name = r->ep->name();
  std::string blob(3 * sizeof(uint64_t), '\0');
  uint64_t meta[3] = {static_cast<uint64_t>(mr.base), mr.key, probe - mr.base};
  std::memcpy(blob.data(), meta, sizeof meta);
  blob.append(name.begin(), name.end());
  watch.phase("the endpoint-address exchange");
  auto blobs = r->boot->allgather(blob);
  std::vector<std::vector<uint8_t>> addrs;
  std::vector<std::array<uint64_t, 3>> peer_meta;
  for (auto& b : blobs) {
    if (b.size() <= sizeof meta) fail(BSPK_ERR_BOOT, "malformed start-up record from a peer");
    std::array<uint64_t, 3> m3;
    std::memcpy(m3.data(), b.data(), sizeof meta);
    peer_meta.push_back(m3);
    addrs.emplace_back(b.begin() + sizeof meta, b.end());
  }
  r->ep->insert_peers(addrs);
  r->engine->start();
  watch.phase("connecting to every peer over the fabric");
  // Out-of-band barrier before the first fabric message: shm peers must all
  // exist before anyone sends (libfabric 1.17 connection set-up race).
  r->boot->barrier();
  // From here on every wait progresses the fabric: libfabric 1.17 shm's first
  // contact with a peer needs that peer to progress (a process blocked in the
  // bootstrap would stall it), so connections are opened now, all at once.
  r->engine->fabric_barrier(/*all_pairs=*/cfg.provider == "shm");
  // Registration check: read the right neighbour's probe word with fi_read,
  // addressed per mr_mode (base + offset under FI_MR_VIRT_ADDR, else offset).
  int nb = (r->pid + 1) % r->nprocs;
  uint64_t got = r->engine->read_word(nb, peer_meta[nb][0], peer_meta[nb][2], peer_meta[nb][1]);
  if (got != (kProbeMagic | static_cast<uint64_t>(nb)))
    fail(BSPK_ERR_FABRIC,
         "registration check failed: fi_read of pid %d's probe word returned %#llx, expected %#llx "
         "(provider %s, mr_mode %#llx)",
         nb, (unsigned long long)got, (unsigned long long)(kProbeMagic | static_cast<uint64_t>(nb)),
         r->ep->provider().c_str(), (unsigned long long)r->ep->mr_mode());
  r->engine->fabric_barrier(false);  // every probe has been read
  r->frames->free(probe);
  if (env::get_bool("BSPK_VERBOSE", false) && r->pid == 0)
    std::fprintf(stderr,
                 "bspk: registration check ok: fi_read of pid %d at remote address %#llx (%s), key %#llx\n",
                 nb, (unsigned long long)r->ep->remote_addr(peer_meta[nb][0], peer_meta[nb][2]),
                 (r->ep->mr_mode() & FI_MR_VIRT_ADDR) ? "virtual address" : "offset into the region",
                 (unsigned long long)peer_meta[nb][1]);
  r->boot->set_state(0, boot::ProcState::Running);
  if (env::get_bool("BSPK_VERBOSE", false) && r->pid == 0)
    std::fprintf(stderr, "bspk: %d processes on %d host%s, bootstrap %s, %s, frame %zu bytes\n", r->nprocs,
                 layout.nhosts, layout.nhosts > 1 ? "s" : "", r->boot->kind(), r->ep->describe().c_str(), fsz);
}

// Pool occupancy lives in the pools; copy it into the counters before they are read.
void refresh_pool_stats(Runtime& r) {
  r.stats.frames_peak = r.frames->peak();
  r.stats.small_peak = r.small->peak();
  r.stats.pool_bytes = r.frames->bytes() + r.small->bytes();
}

void fill_stats(bspk_stats* o) {
  refresh_pool_stats(*rt);
  const Stats& s = rt->stats;
  o->supersteps = s.supersteps;
  o->msgs_sent = s.msgs_sent;
  o->bytes_sent = s.bytes_sent;
  o->msgs_recv = s.msgs_recv;
  o->bytes_recv = s.bytes_recv;
  o->bytes_copied = s.bytes_copied;
  o->ctrl_sent = s.ctrl_sent;
  o->flow_waits = s.flow_waits;
  o->frames_in_use = rt->frames->in_use();
  o->frames_peak = s.frames_peak;
  o->frame_size = rt->frames->frame_size();
  o->pool_bytes = s.pool_bytes;
  o->small_in_use = rt->small->in_use();
  o->small_peak = s.small_peak;
  o->sync_wait_s = s.sync_wait_s;
  o->copies = s.copies;
  o->bytes_stored = s.bytes_stored;
  o->bytes_fetched = s.bytes_fetched;
  o->frames_flipped = s.frames_flipped;
}

// A bspk_lookup pointer, resolved when its pair is known (else unchanged).
bspk_ptr canon(bspk_ptr p) { return rt && dsm::Dsm::is_handle(p) ? rt->dsm->resolve(p) : p; }

}  // namespace

extern "C" {

int bspk_init(int* argc, char*** argv) {
  return guarded("bspk_init", [&] {
    if (rt) fail(BSPK_ERR_STATE, "bspk_init was already called");
    if (finalized) fail(BSPK_ERR_STATE, "bspk_init after bspk_finalize is not supported");
    init_runtime(argc, argv);
  });
}

int bspk_finalize(void) {
  int late = 0;  // an error found at the final superstep's boundary (DSM), reported after shutdown
  int rc = guarded("bspk_finalize", [&] {
    Runtime& r = need();
    r.boot->set_state(r.engine->step(), boot::ProcState::Finalizing);
    r.dsm->before_sync();
    r.engine->sync(/*finalizing=*/true);
    std::string msg;
    if (int c = r.dsm->take_error(&msg)) late = record("bspk_finalize", c, msg.c_str());
    r.engine->fabric_barrier(false);  // nobody closes while a peer may still talk to it
    r.engine->quiesce();               // our last control messages have left
    if (r.print_stats) {
      refresh_pool_stats(r);
      // stdout, so that `bspkrun ... | grep bspk-stats` finds it (the user asked for it).
      std::fflush(stdout);
      std::fprintf(stdout, "%s\n", r.stats.line(r.pid).c_str());
      std::fflush(stdout);
    }
    r.boot->set_state(r.engine->step(), boot::ProcState::Done);
    r.boot->finalized();
    delete rt;
    rt = nullptr;
    finalized = true;
  });
  return rc != BSPK_OK ? rc : late;
}

int bspk_pid(void) { return rt ? rt->pid : -1; }
int bspk_nprocs(void) { return rt ? rt->nprocs : 0; }
double bspk_time(void) { return now_s(); }

void bspk_abort(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string msg = fmt ? vstrprintf(fmt, ap) : std::string("(no message)");
  va_end(ap);
  while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  abort_job(where("bspk_abort") + ": " + msg, 1);
}

const char* bspk_error_string(void) { return last_error.c_str(); }

bspk_ptr bspk_malloc(const char* name, int idx, size_t n, size_t elem_size) {
  bspk_ptr p = BSPK_NULL;
  guarded("bspk_malloc", [&] {
    Runtime& r = need();
    p = r.comem->create(name, idx, n, elem_size);
    if (name && *name) r.dsm->registered(p, name, idx);
  });
  return p;
}

int bspk_free(bspk_ptr p) {
  return guarded("bspk_free", [&] {
    Runtime& r = need();
    bspk_ptr q = r.dsm->resolve(p);
    r.comem->local(q);
    r.dsm->freeing(q.region);
    r.comem->release(q.region);
  });
}

void* bspk_elemP(bspk_ptr p) {
  p = canon(p);
  if (rt && p.owner == rt->pid) {
    // Fast path: a live local region and an element inside it.
    if (comem::Region* r = rt->comem->find(p.region); r && p.offset < r->nelems) return r->elem(p.offset);
  }
  void* out = nullptr;
  guarded("bspk_elemP", [&] {
    Runtime& r = need();
    comem::Region& reg = r.comem->local(p);
    if (p.offset >= reg.nelems)
      fail(BSPK_ERR_RANGE, "pointer is at element %llu of a %llu-element region (no element there)",
           (unsigned long long)p.offset, (unsigned long long)reg.nelems);
    out = reg.elem(p.offset);
  });
  return out;
}

bspk_ptr bspk_incr(bspk_ptr p, ptrdiff_t amount) {
  p = canon(p);
  if (dsm::Dsm::is_handle(p)) {
    // Not resolved yet: offset arithmetic only, the range is checked when used.
    if (amount >= 0 || static_cast<uint64_t>(-(amount + 1)) < p.offset) {
      p.offset += static_cast<uint64_t>(amount);
      return p;
    }
  } else if (p.region != 0) {
    // Pure arithmetic on the pointer value (valid for remote pointers too).
    if (amount >= 0 ? static_cast<uint64_t>(amount) <= p.nelems - p.offset
                    : static_cast<uint64_t>(-(amount + 1)) < p.offset) {
      p.offset += static_cast<uint64_t>(amount);
      return p;
    }
  }
  guarded("bspk_incr", [&] {
    if (p.region == 0) fail(BSPK_ERR_PTR, "comem pointer is BSPK_NULL");
    fail(BSPK_ERR_RANGE, "element %llu %+td is outside the region [0, %llu]",
         (unsigned long long)p.offset, amount, (unsigned long long)p.nelems);
  });
  return BSPK_NULL;
}

size_t bspk_span(bspk_ptr p, void** base) {
  p = canon(p);
  size_t n = 0;
  void* b = nullptr;
  if (rt && p.owner == rt->pid) {
    if (comem::Region* r = rt->comem->find(p.region); r && p.offset <= r->nelems) {
      if (p.offset < r->nelems) {
        b = r->elem(p.offset);
        n = r->span(p.offset);
      }
      if (base) *base = b;
      return n;
    }
  }
  guarded("bspk_span", [&] {
    Runtime& r = need();
    comem::Region& reg = r.comem->local(p);
    fail(BSPK_ERR_RANGE, "pointer is past the end of its region (element %llu of %llu)",
         (unsigned long long)p.offset, (unsigned long long)reg.nelems);
  });
  if (base) *base = nullptr;
  return 0;
}

int bspk_is_null(bspk_ptr p) { return p.region == 0; }
size_t bspk_nelems(bspk_ptr p) {
  p = canon(p);
  return p.region && !dsm::Dsm::is_handle(p) && p.offset <= p.nelems ? p.nelems - p.offset : 0;
}
size_t bspk_elem_size(bspk_ptr p) {
  p = canon(p);
  return p.region && !dsm::Dsm::is_handle(p) ? p.elem_size : 0;
}
int bspk_owner(bspk_ptr p) {
  p = canon(p);
  return p.region && !dsm::Dsm::is_handle(p) ? p.owner : -1;
}

int bspk_sync(void) {
  return guarded("bspk_sync", [&] {
    Runtime& r = need();
    r.dsm->before_sync();
    r.engine->sync(false);
    r.dsm->after_sync();
  });
}

int bspk_expect(int nmsgs) {
  return guarded("bspk_expect", [&] { need().engine->expect(nmsgs); });
}

int bspk_will_send(const int* nmsgs) {
  return guarded("bspk_will_send", [&] { need().engine->will_send(nmsgs); });
}

int bspk_send(int dest, bspk_ptr p, size_t n) {
  return guarded("bspk_send", [&] {
    Runtime& r = need();
    r.mp->send(dest, canon(p), n);
    r.engine->progress_if_busy();
  });
}

bspk_ptr bspk_recv(void) {
  bspk_ptr p = BSPK_NULL;
  guarded("bspk_recv", [&] { p = need().mp->recv(); });
  return p;
}

bspk_ptr bspk_lookup(const char* name, int idx) {
  bspk_ptr p = BSPK_NULL;
  guarded("bspk_lookup", [&] { p = need().dsm->lookup(name, idx); });
  return p;
}

int bspk_copy(bspk_ptr dst, bspk_ptr src, size_t n) {
  return guarded("bspk_copy", [&] {
    Runtime& r = need();
    r.dsm->copy(dst, src, n);
    r.engine->progress_if_busy();
  });
}

int bspk_sender_id(bspk_ptr p) {
  if (p.region == 0) return record("bspk_sender_id", BSPK_ERR_PTR, "comem pointer is BSPK_NULL");
  return p.sender;
}

int bspk_get_stats(bspk_stats* out) {
  return guarded("bspk_get_stats", [&] {
    if (!out) fail(BSPK_ERR_ARG, "NULL output pointer");
    need();
    fill_stats(out);
  });
}

}  // extern "C"
