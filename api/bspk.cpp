// api/bspk.cpp -- the C API's entry points: each checks its arguments, calls
// the layer that implements it, and turns exceptions into return codes
// (api/runtime.h). Start-up and shutdown are in api/init.cpp.
//
// Layering (each knows only the one below):
//   bspk_send -> mp::MessagePassing::send -> sync::Engine::send_frame
//             -> fabric::Transport::post_send -> fi_tsendmsg
//   bspk_sync -> sync::Engine::sync (counting, the count tree, waiting)
//   bspk_copy -> dsm::Dsm::copy -> sync::Engine::send_frame -> fi_tsendmsg
//             (applied at the boundary: sync::Engine -> dsm::Dsm::on_boundary)
//   bspk_send_buf -> mp::MessagePassing::send_bytes (staging region) -> send
//   bspk_put  -> dsm::Dsm::put (staging region) -> the bspk_copy path
//   bspk_malloc/elemP/incr/span -> comem::Comem (regions over comem::FramePool)
#include <bspk.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "api/runtime.h"
#include "base/clock.h"
#include "base/copy.h"
#include "base/config.h"
#include "base/env.h"
#include "boot/bootstrap.h"

using namespace bspk;
using namespace bspk::api;

namespace bspk::api {

Runtime* rt = nullptr;
bool finalized = false;
// The superstep the next recorded error names when the engine has already
// counted it ended (an error of bspk_sync_allgather's wait), or -1.
static int64_t ending_step = -1;
// The superstep bspk_finalize was called in, while it runs (else -1): its
// errors name it, also those found after its final sync has counted that
// superstep ended (a late arrival, a refused copy of the final superstep).
static int64_t finalize_step = -1;
int starting_pid = -1;
int over_code = 0;

namespace {

enum class ErrorPolicy { Print, Quiet, Abort };
std::string last_error;
ErrorPolicy policy = ErrorPolicy::Print;

// Does `code` from `call` leave the job in the [over] state (bspk.h, Return
// codes): the superstep did not end here and cannot end consistently?
bool leaves_over(const char* call, int code) {
  switch (code) {
    case BSPK_ERR_FABRIC:  // a registration the provider refused changed nothing: [call]
      return std::strcmp(call, "bspk_mem_register") != 0 && std::strcmp(call, "bspk_mem_deregister") != 0;
    case BSPK_ERR_COUNT:
    case BSPK_ERR_TIMEOUT:
    case BSPK_ERR_BOOT:
    case BSPK_ERR_PEER:
    case BSPK_ERR_INTERNAL:
      return true;
    default:  // BSPK_ERR_MODE: a repeated declaration is [call]; mixed kinds
              // come marked over by the engine (Error::over, fail_over)
      return false;
  }
}

// A bspk_lookup pointer, resolved when its pair is known (else unchanged).
bspk_ptr canon(bspk_ptr p) { return rt && dsm::Dsm::is_handle(p) ? rt->dsm->resolve(p) : p; }
// The same in place, for the pointer accessors: p is rewritten only when it
// is a handle (an unconditional `p = canon(p)` copied the 40-byte pointer
// through a temporary written field by field, whose wide reloads stall on
// store forwarding -- 15 ns per bspk_incr here, most of it that).
inline void canon_in_place(bspk_ptr& p) {
  if (dsm::Dsm::is_handle(p)) p = canon(p);
}

}  // namespace

std::string where(const char* call) {
  // bspk_init's own errors name the pid when its launcher told it (the
  // superstep: none yet); other calls without a runtime say when they came.
  if (!rt && !finalized && std::strcmp(call, "bspk_init") == 0)
    return starting_pid >= 0 ? strprintf("%s (pid %d, starting)", call, starting_pid) : strprintf("%s (starting)", call);
  if (!rt) return strprintf(finalized ? "%s (after bspk_finalize)" : "%s (before bspk_init)", call);
  const uint32_t step = ending_step >= 0     ? static_cast<uint32_t>(ending_step)
                        : finalize_step >= 0 ? static_cast<uint32_t>(finalize_step)  // (only bspk_finalize runs then)
                        : rt->engine         ? rt->engine->step()
                                             : 0;
  if (rt->boot && rt->boot->layer_step1())  // a layer's own count first (bspk_set_layer_superstep)
    return strprintf("%s (pid %d, %s superstep %u; BSPk superstep %u)", call, rt->pid, rt->boot->layer(),
                     rt->boot->layer_step1() - 1, step);
  return strprintf("%s (pid %d, superstep %u)", call, rt->pid, step);
}

// Is this the first abort message of the job? Under bspkrun, processes
// aborting together claim a marker file in the launcher's private directory
// (removed by bspkrun at the end), so the message is printed once even by
// processes without a runtime (before bspk_init, after bspk_finalize).
// Elsewhere every aborting process prints.
static bool first_abort_of_job() {
  const char* sock = std::getenv(config::name(config::Var::BOOT_SOCKET));
  if (!sock || !*sock) return true;
  std::string dir(sock);
  size_t slash = dir.rfind('/');
  if (slash == std::string::npos) return true;
  int fd = open((dir.substr(0, slash) + "/abort.printed").c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
  if (fd >= 0) close(fd);
  return fd >= 0 || errno != EEXIST;
}

void abort_job(const std::string& line, int code) {
  std::fflush(stdout);
  // Under bspkrun the launcher prints the first abort of the job, so
  // processes aborting together print the message once.
  bool first = first_abort_of_job();
  bool launcher_prints = rt && rt->boot && rt->boot->launcher_prints_abort();
  if (first && !launcher_prints) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  }
  if (!first) {
    // Another process is printing and ending the job; the launcher ends this
    // one with it. (Saying nothing: an Abort from here could end the job
    // before the first one's message reached the launcher.)
    sleep(2);
    _exit(code);
  }
  if (rt && rt->boot) rt->boot->abort(code, line);
  _exit(code);
}

namespace {
// Printed errors that repeat. A program that ignores a failing call's status
// and calls it again in a loop (a fill loop over a null region: bspk_span
// returns 0 every time) would print one line per call, millions a second. An
// error whose text (call, pid, superstep, message) is the one printed last
// is printed once more, marked, and after that only counted; the count is
// printed before the next different error, and when the process exits.
struct Repeats {
  std::string text;   // the error printed last
  uint64_t more = 0;  // times it came again after that
  pid_t counter = 0;  // the OS process that counted them (a forked child inherits the count, not the report)
  void flush() {
    if (more > 1 && counter == getpid())
      std::fprintf(stderr, "bspk: error: %s (%llu times in all)\n", text.c_str(),
                   static_cast<unsigned long long>(more + 1));
    more = 0;
  }
  ~Repeats() { flush(); }
};
Repeats repeats;

void print_error(const std::string& text) {
  std::fflush(stdout);
  if (text == repeats.text) {
    if (const pid_t self = getpid(); repeats.counter != self) repeats.counter = self, repeats.more = 0;
    if (++repeats.more == 1)
      std::fprintf(stderr, "bspk: error: %s (again; further repeats are counted, not printed)\n", text.c_str());
    return;
  }
  repeats.flush();
  repeats.text = text;
  std::fprintf(stderr, "bspk: error: %s\n", text.c_str());
}
}  // namespace

// BSPK_ERRORS, read by bspk_init; for errors before it (a call before
// bspk_init, bspk_init's own), read here once, a bad value leaving Print
// (bspk_init reports it).
static bool policy_read = false;
static ErrorPolicy read_policy() {
  const std::string e = config::get_enum(config::Var::ERRORS);
  policy_read = true;
  return e == "quiet" ? ErrorPolicy::Quiet : e == "abort" ? ErrorPolicy::Abort : ErrorPolicy::Print;
}

int record(const char* call, int code, const char* msg, bool over) {
  if (!policy_read) {
    try {
      policy = read_policy();
    } catch (...) {
      policy_read = true;
    }
  }
  last_error = where(call) + ": " + msg;
  ending_step = -1;
  // The first [over] error is the one bspk_finalize returns (without a second message).
  if (rt && over_code == 0 && (over || leaves_over(call, code))) over_code = code;
  if (policy == ErrorPolicy::Abort) abort_job("bspk: error (BSPK_ERRORS=abort): " + last_error, 1);
  if (policy == ErrorPolicy::Print) print_error(last_error);
  return code;
}

InCall in_call;

bool refused_after_over(const char* call) {
  static const char* const kCalls[] = {"bspk_sync",     "bspk_sync_allgather", "bspk_sync_allgatherv", "bspk_expect",
                                       "bspk_will_send", "bspk_send",          "bspk_send_buf",        "bspk_send_tag",
                                       "bspk_put",      "bspk_copy",           "bspk_mem_read",        "bspk_mem_wait"};
  for (const char* c : kCalls)
    if (std::strcmp(call, c) == 0) return true;
  return false;
}

int refuse_concurrent(const char* call, const char* other) {
  return record(call, BSPK_ERR_STATE,
                strprintf("called while another thread of this process is inside %s: BSPk takes calls from one "
                          "thread at a time (bspk.h, Threads); this call did nothing",
                          other ? other : "a BSPk call")
                    .c_str());
}

Runtime& need() {
  if (!rt) {
    if (finalized) fail(BSPK_ERR_STATE, "called after bspk_finalize");
    fail(BSPK_ERR_STATE, "called before bspk_init");
  }
  return *rt;
}

}  // namespace bspk::api

extern "C" {

int bspk_init(int* argc, char*** argv) {
  return guarded("bspk_init", [&] {
    if (rt) fail(BSPK_ERR_STATE, "bspk_init was already called");
    if (finalized) fail(BSPK_ERR_STATE, "bspk_init after bspk_finalize is not supported");
    policy = read_policy();
    init_runtime(argc, argv);
  });
}

int bspk_finalize(void) {
  if (rt && over_code != 0) {
    // An [over] error was returned (and reported) already: the collective end
    // could only wait for processes that will not come and then report a
    // second, different error. Leave at once with the same code, silently.
    int code = over_code;
    over_code = 0;
    abandon_runtime();
    return code;
  }
  int late = 0;
  finalize_step = rt && rt->engine ? static_cast<int64_t>(rt->engine->step()) : -1;
  int rc = guarded("bspk_finalize", [&] { late = finalize_runtime(); });
  finalize_step = -1;
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

void bspk_abort_text(const char* message) {
  std::string msg = message ? message : "(no message)";
  while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  abort_job(msg, 1);
}

int bspk_launched(void) {
  try {
    std::string kind = boot::bootstrap_kind();
    if (kind == "singleton") return 0;
    if (kind == "bspkrun") return static_cast<int>(env::get_int(config::name(config::Var::NPROCS), -1, 1, 1 << 24));
    for (const char* v : {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "PMI_SIZE"})
      if (env::get(v)) return static_cast<int>(env::get_int(v, -1, 1, 1 << 24));
    return -1;
  } catch (const std::exception&) {
    return -1;  // a launcher's variable is malformed: bspk_init will say which
  }
}

int bspk_same_host(int pid) {
  int same = 0;
  int rc = guarded("bspk_same_host", [&] {
    Runtime& r = need();
    if (pid < 0 || pid >= r.nprocs) fail(BSPK_ERR_ARG, "pid %d is out of range [0, %d)", pid, r.nprocs);
    same = r.host_of[static_cast<size_t>(pid)] == r.host_of[static_cast<size_t>(r.pid)];
  });
  return rc == BSPK_OK ? same : rc;
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
    if (r.comem->local(q).named) r.dsm->freeing(q.region, q.gen);  // (its name leaves the directory)
    r.comem->release(q.region);
  });
}

void* bspk_elemP(bspk_ptr p) {
  canon_in_place(p);
  if (rt && p.owner == rt->pid) {
    // Fast path: a live local region and an element inside it.
    if (comem::Region* r = rt->comem->find(p.region, p.gen); r && p.offset < r->nelems) return r->elem(p.offset);
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
  canon_in_place(p);
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
  canon_in_place(p);
  size_t n = 0;
  void* b = nullptr;
  if (rt && p.owner == rt->pid) {
    if (comem::Region* r = rt->comem->find(p.region, p.gen); r && p.offset <= r->nelems) {
      if (p.offset < r->nelems) {
        b = r->elem(p.offset);
        n = r->contiguous_span(p.offset);
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
  canon_in_place(p);
  return p.region && !dsm::Dsm::is_handle(p) && p.offset <= p.nelems ? p.nelems - p.offset : 0;
}
size_t bspk_elem_size(bspk_ptr p) {
  canon_in_place(p);
  return p.region && !dsm::Dsm::is_handle(p) ? p.elem_size : 0;
}
int bspk_owner(bspk_ptr p) {
  canon_in_place(p);
  return p.region && !dsm::Dsm::is_handle(p) ? p.owner : -1;
}

// ---- Contiguous regions: one run of consecutive frames (comem::FramePool::alloc_run).

bspk_ptr bspk_malloc_contiguous(const char* name, int idx, size_t n, size_t elem_size) {
  bspk_ptr p = BSPK_NULL;
  guarded("bspk_malloc_contiguous", [&] {
    Runtime& r = need();
    p = r.comem->create(name, idx, n, elem_size, true);
    if (name && *name) r.dsm->registered(p, name, idx);
  });
  return p;
}

int bspk_is_contiguous(bspk_ptr p) {
  canon_in_place(p);
  if (!rt || p.region == 0 || p.owner != rt->pid) return 0;
  const comem::Region* r = rt->comem->find(p.region);
  return r && (r->contiguous || r->nframes <= 1) ? 1 : 0;
}

bspk_ptr bspk_recv_contiguous(void) {
  bspk_ptr p = BSPK_NULL;
  guarded("bspk_recv_contiguous", [&] { p = need().mp->recv_contiguous(); });
  return p;
}

}  // extern "C"

namespace {

// bspk_sync's work, also the boundary of bspk_sync_allgather.
void end_superstep(Runtime& r) {
  if (r.profile) r.profile->sync_called();
  const sync::Mode mode = r.profile ? r.engine->declared() : sync::Mode::None;
  r.dsm->before_sync();
  r.engine->sync(false);
  over_code = 0;  // the superstep ended: whatever failed before is behind us
  r.step_base = r.stats.msgs_sent + r.stats.copies;
  r.dsm->after_sync();
  if (r.profile)
    r.profile->sync_done(r.engine->step() - 1,
                         mode == sync::Mode::Expect ? "expect" : mode == sync::Mode::WillSend ? "will_send" : "counted",
                         r.stats, r.comem_bytes());
}

// Up to max bytes of local region q into dst; returns its size in bytes.
size_t region_bytes(Runtime& r, bspk_ptr q, void* dst, size_t max) {
  comem::Region& reg = r.comem->local(q);
  const size_t total = static_cast<size_t>(reg.nelems) * reg.elem_size;
  size_t done = 0;
  for (uint64_t i = 0; done < std::min(total, max);) {
    const size_t k = std::min<size_t>(static_cast<size_t>(reg.contiguous_span(i)) * reg.elem_size, max - done);
    bspk::copy_bytes(static_cast<char*>(dst) + done, reg.elem(i), k);
    done += k;
    i += reg.contiguous_span(i);
  }
  return total;
}

// bspk_sync_allgather(v): the block is the iovcnt pieces at iov (nbytes in
// all); got(j, block, n) is called for every process's block, in pid order.
template <class Got>
void sync_allgather(const char* call, const iovec* iov, int iovcnt, size_t nbytes, Got&& got) {
  Runtime& r = need();
  if (nbytes > BSPK_SYNC_BLOCK_MAX)
    fail(BSPK_ERR_ARG, "nbytes = %zu is larger than BSPK_SYNC_BLOCK_MAX (%d)", nbytes, BSPK_SYNC_BLOCK_MAX);
  if (r.engine->declared() != sync::Mode::None)
    fail(BSPK_ERR_STATE, "called after %s in this superstep: %s makes its own declaration",
         r.engine->declared() == sync::Mode::Expect ? "bspk_expect" : "bspk_will_send", call);
  if (const uint64_t sends = r.step_sends())
    fail(BSPK_ERR_STATE,
         "called after %llu message(s) or copies were issued in this superstep: its superstep carries the "
         "blocks only (call bspk_sync first)",
         (unsigned long long)sends);
  const int p = r.nprocs, me = r.pid;
  if (r.engine->board()) {
    // One host: the blocks go through the shared-memory board (sync/board.h).
    // The superstep ends between the two halves: its work overlaps the
    // blocks' way, as a lazy barrier's does its messages'.
    r.engine->gather_publish(iov, iovcnt);
    try {
      end_superstep(r);
    } catch (...) {
      r.engine->gather_end();
      throw;
    }
    try {
      r.engine->gather_wait();
    } catch (...) {
      // An error of the wait is the ended superstep's (the engine counts it
      // ended already): record() names that one, as for a counted bspk_sync.
      ending_step = static_cast<int64_t>(r.engine->step()) - 1;
      throw;
    }
    for (int j = 0; j < p; ++j) {
      size_t n = 0;
      const unsigned char* b = r.engine->gather_block(j, &n);
      // This process's block from its own memory when it is one piece: the
      // board's copy has been read by the others, so it is no longer in this
      // process's cache (sync/board.h).
      if (j == me && iovcnt == 1) b = static_cast<const unsigned char*>(iov[0].iov_base);
      got(j, b, n);
    }
    r.engine->gather_end();  // every block read: the next gather
    return;
  }
  // Elsewhere: one message to every other process, bspk_expect(p - 1).
  std::vector<unsigned char> joined;  // (several pieces: sent from one buffer)
  const void* mine = iovcnt == 1 ? iov[0].iov_base : nullptr;
  if (iovcnt > 1) {
    joined.reserve(nbytes);
    for (int i = 0; i < iovcnt; ++i) {
      const auto* b = static_cast<const unsigned char*>(iov[i].iov_base);
      joined.insert(joined.end(), b, b + iov[i].iov_len);
    }
    mine = joined.data();
  }
  for (int j = 0; j < p; ++j)
    if (j != me) r.mp->send_bytes(j, mine, nbytes);
  r.engine->expect(p - 1);
  end_superstep(r);
  std::vector<bspk_ptr> block(static_cast<size_t>(p), BSPK_NULL);  // the messages, by sender
  struct Release {  // every message back to the pool on every exit
    Runtime& r;
    std::vector<bspk_ptr>& v;
    ~Release() {
      for (const bspk_ptr& q : v)
        if (q.region) r.comem->release(q.region);
    }
  } release{r, block};
  for (bspk_ptr q; (q = r.mp->recv()).region != 0;) {
    const int j = q.sender;
    if (j < 0 || j >= p || j == me || block[static_cast<size_t>(j)].region) {
      r.comem->release(q.region);
      fail(BSPK_ERR_INTERNAL, "an unexpected message from pid %d in the superstep of the blocks", j);
    }
    block[static_cast<size_t>(j)] = q;
  }
  std::vector<unsigned char> buf;
  for (int j = 0; j < p; ++j) {
    if (j == me) {
      got(j, mine, nbytes);
      continue;
    }
    const bspk_ptr& q = block[static_cast<size_t>(j)];
    if (!q.region) fail(BSPK_ERR_INTERNAL, "no block from pid %d", j);
    comem::Region& reg = r.comem->local(q);  // (1-byte elements: send_bytes)
    const size_t n = static_cast<size_t>(reg.nelems);
    if (n == 0 || reg.contiguous_span(0) >= n) {  // one run: read in place
      got(j, n ? reg.elem(0) : nullptr, n);
    } else {
      buf.resize(n);
      region_bytes(r, q, buf.data(), n);
      got(j, buf.data(), n);
    }
  }
}

}  // namespace

extern "C" {

int bspk_sync(void) {
  return guarded("bspk_sync", [&] { end_superstep(need()); });
}

int bspk_sync_allgather_shared(void) { return rt && rt->engine && rt->engine->board() ? 1 : 0; }

int bspk_sync_exchange(void) {
  if (!rt || !rt->engine) return 0;
  if (rt->engine->board()) return BSPK_EXCHANGE_BOARD;
  return rt->engine->options().count_exchange == bspk::sync::Options::Exchange::Direct ? BSPK_EXCHANGE_DIRECT
                                                                                       : BSPK_EXCHANGE_ROUNDS;
}


int bspk_sync_allgather(const void* mine, size_t nbytes, void* all, size_t* sizes) {
  return guarded("bspk_sync_allgather", [&] {
    Runtime& r = need();
    if (nbytes && (!mine || !all)) fail(BSPK_ERR_ARG, "%s is NULL (with nbytes = %zu)", mine ? "all" : "mine", nbytes);
    unsigned char* out = static_cast<unsigned char*>(all);
    // Each process's size, and the first one that differs from nbytes;
    // every block cut to nbytes at its place.
    int differs = -1;
    size_t differs_bytes = 0;
    const iovec one{const_cast<void*>(mine), nbytes};
    sync_allgather("bspk_sync_allgather", &one, 1, nbytes, [&](int j, const void* data, size_t n) {
      if (sizes) sizes[j] = n;
      if (n != nbytes && differs < 0) differs = j, differs_bytes = n;
      if (out && n && nbytes) bspk::copy_bytes(out + static_cast<size_t>(j) * nbytes, data, std::min(n, nbytes));
    });
    if (!sizes && differs >= 0)
      fail(BSPK_ERR_ARG,
           "pid %d passed nbytes = %zu to the all-gather of superstep %u, this process nbytes = %zu (that superstep "
           "ended; the blocks were copied, cut to this process's nbytes)",
           differs, differs_bytes, r.engine->step() - 1, nbytes);
  });
}

int bspk_sync_allgatherv(const iovec* iov, int iovcnt, bspk_block_fn read, void* arg) {
  return guarded("bspk_sync_allgatherv", [&] {
    if (iovcnt < 0) fail(BSPK_ERR_ARG, "iovcnt = %d is negative", iovcnt);
    if (iovcnt > 0 && !iov) fail(BSPK_ERR_ARG, "iov is NULL (with iovcnt = %d)", iovcnt);
    if (!read) fail(BSPK_ERR_ARG, "read is NULL");
    size_t nbytes = 0;
    for (int i = 0; i < iovcnt; ++i) {
      if (iov[i].iov_len && !iov[i].iov_base)
        fail(BSPK_ERR_ARG, "piece %d of the block is NULL (with %zu bytes)", i, iov[i].iov_len);
      nbytes += iov[i].iov_len;
    }
    sync_allgather("bspk_sync_allgatherv", iov, iovcnt, nbytes,
                   [&](int j, const void* data, size_t n) { read(j, data, n, arg); });
  });
}

int bspk_expect(int nmsgs) {
  return guarded("bspk_expect", [&] { need().engine->expect(nmsgs); });
}

int bspk_will_send(const int* nmsgs) {
  return guarded("bspk_will_send", [&] { need().engine->will_send(nmsgs); });
}

int bspk_declared(void) { return rt && rt->engine ? static_cast<int>(rt->engine->declared()) : 0; }

int bspk_withdraw(int64_t* nmsgs, int* counts) {
  if (!rt || !rt->engine) {
    if (nmsgs) *nmsgs = 0;
    return 0;
  }
  return static_cast<int>(rt->engine->withdraw(nmsgs, counts));
}

uint64_t bspk_superstep(void) { return rt ? rt->stats.supersteps : 0; }

int bspk_set_layer_superstep(const char* layer, unsigned long superstep) {
  // Once per superstep of the layer (every bsp_sync): the name checked once
  // (14 -> 2 ns per call here, 2026-12-05).
  if (rt && rt->layer_name && layer == rt->layer_name && superstep < 0xFFFFFFFFul) {
    rt->boot->set_layer_step(layer, static_cast<uint32_t>(superstep));
    return BSPK_OK;
  }
  return guarded("bspk_set_layer_superstep", [&] {
    Runtime& r = need();
    if (!layer || !*layer) fail(BSPK_ERR_ARG, "layer is %s", layer ? "empty" : "NULL");
    size_t n = 0;
    for (; layer[n] && n < 16; ++n)
      if (layer[n] <= ' ' || layer[n] > '~')
        fail(BSPK_ERR_ARG, "layer's character %zu is not printable ASCII or is a space", n);
    if (n > 15) fail(BSPK_ERR_ARG, "layer \"%.15s...\" is longer than 15 characters", layer);
    if (r.boot->layer_step1() && std::strcmp(layer, r.boot->layer()) != 0)
      fail(BSPK_ERR_ARG, "layer \"%s\" is not \"%s\", the name this process's first call gave", layer,
           r.boot->layer());
    if (superstep >= 0xFFFFFFFFul) fail(BSPK_ERR_ARG, "superstep %lu is past 2^32 - 2", superstep);
    r.boot->set_layer_step(layer, static_cast<uint32_t>(superstep));
    r.layer_name = layer;
  });
}

uint64_t bspk_step_sends(void) { return rt ? rt->step_sends() : 0; }

int bspk_send(int dest, bspk_ptr p, size_t n) {
  return guarded("bspk_send", [&] {
    Runtime& r = need();
    IssueTimer timer(r.profile.get());
    r.mp->send(dest, canon(p), n);
    r.engine->progress_if_busy();
  });
}

int bspk_send_tag(int dest, bspk_ptr p, size_t n, uint64_t tag) {
  return guarded("bspk_send_tag", [&] {
    Runtime& r = need();
    IssueTimer timer(r.profile.get());
    r.mp->send(dest, canon(p), n, tag);
    r.engine->progress_if_busy();
  });
}

uint64_t bspk_tag(bspk_ptr p) {
  uint64_t tag = 0;
  guarded("bspk_tag", [&] {
    Runtime& r = need();
    tag = r.comem->local(canon(p)).tag;
  });
  return tag;
}

int bspk_send_buf(int dest, const void* src, size_t nbytes) {
  return guarded("bspk_send_buf", [&] {
    Runtime& r = need();
    IssueTimer timer(r.profile.get());
    r.mp->send_bytes(dest, src, nbytes);
    r.engine->progress_if_busy();
  });
}

int bspk_mem_register(const void* addr, size_t nbytes, bspk_memreg* out) {
  return guarded("bspk_mem_register", [&] {
    Runtime& r = need();
    if (!out) fail(BSPK_ERR_ARG, "out is NULL");
    if (!addr || nbytes == 0) fail(BSPK_ERR_ARG, "cannot register %zu bytes at %p", nbytes, addr);
    uint64_t key = 0;
    const uint64_t id = r.engine->register_user(const_cast<void*>(addr), nbytes, &key);
    *out = bspk_memreg{id, bspk_memkey{reinterpret_cast<uintptr_t>(addr), key, nbytes}};
  });
}

int bspk_mem_deregister(bspk_memreg* reg) {
  return guarded("bspk_mem_deregister", [&] {
    Runtime& r = need();
    if (!reg) fail(BSPK_ERR_ARG, "reg is NULL");
    r.engine->deregister_user(reg->id);
    reg->id = 0;
  });
}

int bspk_mem_read(int src, const bspk_memkey* from, size_t offset, const bspk_memreg* into, void* dst,
                  size_t nbytes) {
  return guarded("bspk_mem_read", [&] {
    Runtime& r = need();
    if (src < 0 || src >= r.nprocs) fail(BSPK_ERR_PID, "pid %d is out of range [0, %d)", src, r.nprocs);
    if (!from || !into) fail(BSPK_ERR_ARG, "%s is NULL", from ? "into" : "from");
    if (offset > from->len || nbytes > from->len - offset)
      fail(BSPK_ERR_ARG, "reading %zu bytes at offset %zu of pid %d's registration of %llu bytes", nbytes, offset,
           src, (unsigned long long)from->len);
    r.engine->read_user(src, from->addr, from->key, offset, into->id, dst, nbytes);
  });
}

int bspk_mem_wait(void) {
  return guarded("bspk_mem_wait", [&] { need().engine->wait_reads(); });
}

void bspk_note_copied(size_t nbytes) {
  if (rt) rt->stats.bytes_copied += nbytes;
}

void bspk_note_read_by(size_t nbytes) {
  if (rt) rt->stats.bytes_read_by += nbytes;
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
    IssueTimer timer(r.profile.get());
    r.dsm->copy(dst, src, n);
    r.engine->progress_if_busy();
  });
}

int bspk_put(bspk_ptr dst, const void* src, size_t nbytes) {
  return guarded("bspk_put", [&] {
    Runtime& r = need();
    IssueTimer timer(r.profile.get());
    r.dsm->put(dst, src, nbytes);
    r.engine->progress_if_busy();
  });
}

int bspk_move(bspk_ptr dst, bspk_ptr src, size_t n) {
  return guarded("bspk_move", [&] {
    Runtime& r = need();
    r.dsm->move(r.dsm->resolve(dst), r.dsm->resolve(src), n);
  });
}

int bspk_sender_id(bspk_ptr p) {
  if (p.region == 0) return record("bspk_sender_id", BSPK_ERR_PTR, "comem pointer is BSPK_NULL");
  // A bspk_lookup pointer names a region, not a message: its owner (as
  // bspk_owner gives it), not the handle's placeholder field.
  if (dsm::Dsm::is_handle(p)) return bspk_owner(p);
  return p.sender;
}

int bspk_get_stats_sized(bspk_stats* out, size_t size) {
  return guarded("bspk_get_stats", [&] {
    if (!out) fail(BSPK_ERR_ARG, "NULL output pointer");
    if (size < sizeof(uint64_t)) fail(BSPK_ERR_ARG, "size %zu is smaller than one counter", size);
    need();
    fill_stats(out, size);
  });
}

int(bspk_get_stats)(bspk_stats* out) { return bspk_get_stats_sized(out, sizeof(bspk_stats)); }

}  // extern "C"
