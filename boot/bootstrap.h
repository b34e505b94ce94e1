// boot/bootstrap.h -- how processes of a job find each other before the fabric
// is up: rank, size, an all-gather of small blobs (endpoint names, memory keys),
// a liveness check, and failure reporting to whoever launched the job.
//
// Implementations: bspkrun (a key-value exchange over a local socket run by the
// launcher) and singleton (a program started directly runs as 1 process).
// Slurm/PMIx plugs in beside them behind the same interface.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bspk::boot {

// Per-process state published for failure reports (see set_state).
enum class ProcState : uint32_t { Starting = 0, Running = 1, InSync = 2, Finalizing = 3, Done = 4 };

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* kind() const = 0;

  // Collective: every process contributes `mine`; returns every blob, by rank.
  // Throws bspk::Error(BSPK_ERR_BOOT) if the launcher or a peer is gone.
  virtual std::vector<std::string> allgather(const std::string& mine) = 0;
  void barrier() { allgather(std::string()); }

  // Tell the launcher this process is ending the job (bspk_abort); the launcher
  // ends every other process. Does not exit.
  virtual void abort(int exit_code, const std::string& message) = 0;
  // Tell the launcher this process finalised (an exit without it is an error).
  virtual void finalized() = 0;
  // False once the launcher is gone (checked while waiting, so nothing waits forever).
  virtual bool alive() = 0;
  // Publish superstep and state where the launcher can read them when reporting
  // a failure. Called at every superstep boundary: must be a few stores, no syscall.
  virtual void set_state(uint32_t /*superstep*/, ProcState /*state*/) {}
};

// The bootstrap the environment asks for: bspkrun when BSPK_BOOT_SOCKET is set,
// otherwise a single process.
std::unique_ptr<Bootstrap> make_bootstrap();

}  // namespace bspk::boot
