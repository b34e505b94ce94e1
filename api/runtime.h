// api/runtime.h -- the assembled runtime behind the C API (internal to api/).
//
// One Runtime per process between bspk_init and bspk_finalize: the bootstrap,
// the fabric endpoint, the comem pools, the engine and the mp / dsm layers,
// built bottom-up by api/init.cpp and torn down top-down. Entry points
// (api/bspk.cpp) run their work through guarded(), which turns bspk::Error
// into a BSPK_ERR_* return code and records the message for
// bspk_error_string(), prefixed with the call, the pid and the superstep.
#pragma once

#include <bspk.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "api/profile.h"
#include "base/error.h"
#include "base/stats.h"
#include "boot/bootstrap.h"
#include "comem/pool.h"
#include "comem/region.h"
#include "dsm/dsm.h"
#include "fabric/fabric.h"
#include "fabric/local.h"
#include "mp/mp.h"
#include "sync/engine.h"

namespace bspk::api {

struct Runtime {
  std::unique_ptr<boot::Bootstrap> boot;
  std::unique_ptr<fabric::Endpoint> ep;
  std::unique_ptr<fabric::LocalTransport> local;  // same-host fast path over ep (fabric/local.h), or null
  fabric::Transport* transport = nullptr;   // what the engine uses: local, else ep
  std::unique_ptr<comem::FramePool> frames;
  std::unique_ptr<comem::FramePool> small;  // 4 KiB receive buffers for small messages
  comem::IndexPool index;
  std::unique_ptr<comem::Comem> comem;
  std::unique_ptr<sync::Engine> engine;
  std::unique_ptr<mp::MessagePassing> mp;
  std::unique_ptr<dsm::Dsm> dsm;
  Stats stats;
  uint64_t step_base = 0;  // msgs_sent + copies when the current superstep began (bspk_stats.step_sends)
  // Messages and copies issued in the current superstep (bspk_step_sends).
  uint64_t step_sends() const {
    return stats.msgs_sent + stats.copies - step_base + (dsm ? dsm->deferred() : 0);  // (deferred: not yet in copies)
  }
  std::unique_ptr<Profile> profile;  // BSPK_PROFILE, or null (api/profile.h)
  int pid = 0, nprocs = 1;
  int local_procs = 1;  // processes of the job on this host
  std::vector<int> host_of;  // by pid: its host, numbered by first appearance (bspk_same_host)
  bool print_stats = false;
  // The layer name of the last accepted bspk_set_layer_superstep, as passed
  // (a layer passes one literal: the same pointer skips the checks).
  const char* layer_name = nullptr;

  // Bytes of comem frames and small buffers holding data now (the profile's
  // comem_bytes): all in use, less those posted for receiving.
  uint64_t comem_bytes() const {
    const uint64_t held = static_cast<uint64_t>(frames->in_use()) * frames->frame_size() +
                          static_cast<uint64_t>(small->in_use()) * small->frame_size();
    const uint64_t posted = engine->posted_bytes();
    return held > posted ? held - posted : 0;
  }

  ~Runtime();
};

extern Runtime* rt;      // null before bspk_init and after bspk_finalize
extern bool finalized;   // bspk_finalize has run
extern int starting_pid; // this process's pid once bspk_init knows it (its launcher said), before rt exists; else -1
extern int over_code;    // the first [over] error since the last superstep ended (bspk.h), else 0

// The runtime, or BSPK_ERR_STATE naming why there is none.
Runtime& need();

// Record an error of `call` (for bspk_error_string, printed or fatal per
// BSPK_ERRORS); returns code. `over`: the error leaves the job [over]
// whatever call and code (an error found while progressing: base/error.h).
int record(const char* call, int code, const char* msg, bool over = false);
// "call (pid P, superstep S)".
std::string where(const char* call);
// End the whole job with `line` (printed once) and exit status `code`.
[[noreturn]] void abort_job(const std::string& line, int code);

// Which thread is inside a guarded call, and which call (bspk.h, "Threads").
// Relaxed atomics: a check, not a lock. Two threads entering at the same
// instant can both pass; a thread entering while another is inside (blocked
// in bspk_sync, say) is refused every time. One load and three stores per
// call (thread and call at entry, thread at exit).
struct InCall {
  std::atomic<uintptr_t> thread{0};  // 0: no call in progress
  std::atomic<const char*> call{nullptr};
};
extern InCall in_call;

// A value that differs between the threads of a process (the thread pointer).
inline uintptr_t this_thread() {
#if defined(__has_builtin) && __has_builtin(__builtin_thread_pointer)
  return reinterpret_cast<uintptr_t>(__builtin_thread_pointer());
#else
  static thread_local char tag;
  return reinterpret_cast<uintptr_t>(&tag);
#endif
}

// Refuse `call`, made while another thread is inside `other`: BSPK_ERR_STATE,
// recorded like any error; nothing of the call is done.
int refuse_concurrent(const char* call, const char* other);

// Is `call` one that communicates or ends a superstep? After an [over] error
// such calls return that error's code at once and silently (bspk.h, Return
// codes): a bspk_sync retried after a time-out must not end a superstep the
// other processes have given up on, nor a bspk_expect repeated in the loop
// of a program that ignores return codes add a second, confusing error.
bool refused_after_over(const char* call);

// Run f, mapping exceptions to error codes recorded for bspk_error_string().
// A call while another thread of the process is inside one is refused. A
// call from inside a call on the same thread (a bspk_sync_allgatherv reader,
// a C++ collective's operator) runs: the outermost call marks the thread.
template <class F>
int guarded(const char* call, F&& f) {
  if (over_code != 0 && refused_after_over(call)) return over_code;
  const uintptr_t me = this_thread();
  const uintptr_t inside = in_call.thread.load(std::memory_order_relaxed);
  if (inside != 0 && inside != me) return refuse_concurrent(call, in_call.call.load(std::memory_order_relaxed));
  struct Leave {
    bool outermost;
    ~Leave() {
      if (outermost) in_call.thread.store(0, std::memory_order_relaxed);
    }
  } leave{inside == 0};
  if (inside == 0) {
    in_call.call.store(call, std::memory_order_relaxed);
    in_call.thread.store(me, std::memory_order_relaxed);
  }
  try {
    f();
    return BSPK_OK;
  } catch (const Error& e) {
    return record(call, e.code(), e.what(), e.over());
  } catch (const std::bad_alloc&) {
    return record(call, BSPK_ERR_NOMEM, "out of memory");
  } catch (const std::exception& e) {
    return record(call, BSPK_ERR_INTERNAL, e.what());
  }
}

// bspk_init's work (api/init.cpp).
void init_runtime(int* argc, char*** argv);
// bspk_finalize's work; returns an error found at the final boundary (or 0).
int finalize_runtime();
// bspk_finalize after an [over] error: no collective end. The runtime is set
// aside untouched (rt becomes null, as after bspk_finalize) and dies with the
// process, whose exit then ends the job through the launcher or the job hub
// (which report it as a process that left after its bspk_finalize failed).
void abandon_runtime();
// Copy this process's counters into a bspk_stats of `size` bytes.
void fill_stats(bspk_stats* out, size_t size);

}  // namespace bspk::api
