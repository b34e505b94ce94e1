// boot/bootstrap.h -- how processes of a job find each other before the fabric
// is up: rank, size, an all-gather of small blobs (endpoint names, memory keys),
// a liveness check, and failure reporting to whoever launched the job.
//
// Implementations: bspkrun (a key-value exchange over a local socket run by the
// launcher), singleton (a program started directly runs as 1 process), and for
// srun: PMIx, PMI2 and plain Slurm (boot/slurm.h), which also start the job hub
// (boot/hub.h) that watches the job the way bspkrun does.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace bspk::boot {

// Per-process state published for failure reports (see set_state). Failed:
// the process left BSPk after an error (its bspk_finalize returned at once
// after an earlier [over] error, api::abandon_runtime): it will join nothing
// more, and its exit ends the job.
enum class ProcState : uint32_t { Starting = 0, Running = 1, InSync = 2, Finalizing = 3, Done = 4, Failed = 5 };

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* kind() const = 0;
  // Unique per job (and job step): names the job's shared-memory regions.
  virtual std::string job_id() const = 0;

  // Collective: every process contributes `mine`; returns every blob, by rank.
  // Throws bspk::Error(BSPK_ERR_BOOT) if the launcher or a peer is gone.
  virtual std::vector<std::string> allgather(const std::string& mine) = 0;
  void barrier() { allgather(std::string()); }

  // Tell the launcher this process is ending the job (bspk_abort); the launcher
  // ends every other process. Does not exit.
  virtual void abort(int exit_code, const std::string& message) = 0;
  // True when abort() makes the launcher print the message (once for the
  // job, however many processes abort at the same time); else the process
  // prints it itself.
  virtual bool launcher_prints_abort() const { return false; }
  // Tell the launcher this process finalised (an exit without it is an error).
  virtual void finalized() = 0;
  // Called from exit() when the process did not finalize: report it (in which
  // superstep) so the job ends with that message. bspkrun sees it by itself.
  // True when no launcher will give the job a failed exit status for it (one
  // process started without a launcher, which reports it itself): the process
  // then exits with 1 where it would have exited with 0, as under bspkrun.
  virtual bool exiting(uint32_t /*superstep*/) { return false; }
  // bspk_init failed here after the bootstrap started: tell the others why
  // (under Slurm the hub ends the job with this message). Does not wait.
  virtual void init_failed(const std::string& /*message*/) {}
  // Hook run just before the bootstrap's watchdog ends this process because the
  // job failed (argument: the failed pid, -1 if none): remove what the process
  // would leave behind.
  virtual void on_fatal(std::function<void(int)>) {}
  // False once the launcher is gone (checked while waiting, so nothing waits forever).
  virtual bool alive() = 0;
  // Publish superstep and state where the launcher can read them when reporting
  // a failure (and the other processes, see computing_peer). Called at every
  // superstep boundary and around every wait: a few stores, no syscall.
  void set_state(uint32_t superstep, ProcState st) {
    state_ = st;
    state_step_ = superstep;
    publish_state(superstep, st);
  }
  // What this process published last.
  ProcState state() const { return state_; }
  uint32_t state_step() const { return state_step_; }

  // A layer's own count of this process's supersteps (bspk_set_layer_superstep:
  // the BSPlib layer's), published next to BSPk's for failure reports. `layer`
  // (1-15 characters, checked by the caller) is kept from the first call;
  // `step` < 2^32 - 1. A few stores, no syscall.
  void set_layer_step(const char* layer, uint32_t step) {
    if (!layer_[0]) keep_layer(layer);
    layer_step1_ = step + 1;
    publish_layer_step(step + 1);
  }
  const char* layer() const { return layer_; }
  // The layer's superstep + 1, 0 before set_layer_step.
  uint32_t layer_step1() const { return layer_step1_; }
  // How reports of this process name BSPk superstep `step` (superstep_text,
  // boot/protocol.h): "superstep 8" or "BSPlib superstep 5 (BSPk superstep 8)".
  std::string step_text(uint32_t step) const;

  // A process other than this one that, by what it published last, is
  // starting or computing (not waiting, finalizing or done) in superstep
  // `step` or an earlier one: it may still send messages of `step` or join its
  // count exchange, so a wait of this process in `step` may still end through
  // it. -1 if there is none, or if this bootstrap cannot tell (one process;
  // bspkrun without its status page). What it reads may be late by up to a
  // heartbeat (hub) and includes this process's own state only as the others
  // see it. Called every 0.1 s while a wait makes no progress (sync::Engine::
  // wait_until: BSPK_SYNC_TIMEOUT runs only while this returns -1).
  virtual int computing_peer(uint32_t /*step*/) { return -1; }
  // A process that computing_peer passed over because it is stopped by a
  // signal (SIGSTOP, SIGTSTP; not a debugger's stop), or -1: named in the
  // time-out's message. Only where this bootstrap can tell (bspkrun: every
  // process on this host); under the job hub a stopped process stops its
  // heartbeats and the hub ends the job.
  virtual int stopped_peer() const { return -1; }
  // A process other than this one that published ProcState::Failed (it left
  // BSPk after an error and has not exited yet: the launcher ends the job
  // with its report when it exits), or -1 (none, or this bootstrap cannot
  // tell: one process, bspkrun without its status page). Under the job hub
  // it is the hub's latest heartbeat (late by up to a heartbeat, 0.5 s at
  // most; HubClient::failed_peer). Read
  // by sync::Engine::wait_until, which then holds its time-out for one more
  // BSPK_SYNC_TIMEOUT so that the failed process's error stays the job's
  // only one. Called only when a wait is about to time out.
  virtual int failed_peer() const { return -1; }

 protected:
  // Where set_state publishes (the launcher's status page, the hub's heartbeats).
  virtual void publish_state(uint32_t /*superstep*/, ProcState /*state*/) {}
  // Where set_layer_step publishes; `layer` is set (and fixed) by then.
  virtual void publish_layer_step(uint32_t /*layer_step1*/) {}

 private:
  ProcState state_ = ProcState::Starting;
  uint32_t state_step_ = 0;
  void keep_layer(const char* layer);
  char layer_[16] = {};
  volatile uint32_t layer_step1_ = 0;
};

// Whether superstep a comes at or before superstep b (superstep numbers wrap
// at 2^32; processes are never 2^31 supersteps apart).
inline bool step_at_or_before(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) <= 0; }

// The bootstrap the environment asks for. BSPK_BOOTSTRAP=bspkrun|pmix|pmi2|
// slurm|singleton forces one; otherwise, in this order: bspkrun when
// BSPK_BOOT_SOCKET is set, PMIx when PMIX_RANK is (srun --mpi=pmix), PMI2 when
// PMI_FD is (srun --mpi=pmi2), plain Slurm when SLURM_STEP_ID and SLURM_PROCID
// are (srun --mpi=none), else a single process.
std::unique_ptr<Bootstrap> make_bootstrap();
// The name make_bootstrap() would choose (for messages and tests).
std::string bootstrap_kind();

}  // namespace bspk::boot
