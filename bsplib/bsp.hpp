/* bsplib/bsp.hpp -- MulticoreBSP for C's C++ wrapper (its bsp.hpp since 2.0.1,
 * mcbsp.hpp before) over BSPk's BSPlib layer, so that C++ programs written
 * for MulticoreBSP build unchanged with bspcxx.
 *
 * A program extends mcbsp::BSP_program, implements spmd() (the SPMD section:
 * the BSPlib calls of bsp.h, without bsp_begin / bsp_end) and newInstance(),
 * and calls begin(P) on an instance. What begin does, as in MulticoreBSP:
 *   - bsp_begin(P) (P from pid 0, default bsp_nprocs());
 *   - pid 0 runs spmd() on the instance begin was called on; every other
 *     process runs it on a fresh instance from newInstance(), destroyed after
 *     it with destroyInstance() (default: delete) -- so members main set on
 *     the original instance are seen by pid 0 only, as in MulticoreBSP,
 *     where the other threads get new instances;
 *   - bsp_end(); then only pid 0 returns from begin and goes on with main:
 *     the other processes exit with status 0 (as with bsp_init).
 * Processes: started without a launcher (./prog) the others are forks made
 * at bsp_begin, so main before begin ran once, as with MulticoreBSP's
 * threads; under bsprun every process runs main up to begin (as for any
 * bsp_begin program). Errors: those of bsp_begin, bsp_end and spmd's calls
 * (bsp.h). mcbsp-templates.hpp (element counts) and mcbsp-affinity.h
 * (pinning the processes bsp_begin forks) are next to it; mcbsp-resiliency.h
 * (checkpoints) is not provided. */
#ifndef BSPK_BSP_HPP
#define BSPK_BSP_HPP

#include "bsp.h"

#include <cstdio>
#include <cstdlib>

namespace mcbsp {

class BSP_program {
 protected:
  BSP_program() {}
  /* The SPMD section, run by every process between bsp_begin and bsp_end. */
  virtual void spmd() = 0;
  /* A new instance for a process other than pid 0 (MulticoreBSP's advice:
   * return new FinalType();). */
  virtual BSP_program *newInstance() = 0;
  /* Undoes newInstance (default: delete). */
  virtual void destroyInstance(BSP_program *const instance) { delete instance; }

 public:
  /* bsp_begin(P); spmd() (pid 0 on this instance, the others on
   * newInstance()); bsp_end(); only pid 0 returns. */
  void begin(const bsp_pid_t P = bsp_nprocs()) {
    bsp_begin(P);
    if (bsp_pid() == 0) {
      spmd();
      bsp_end();
      return;
    }
    BSP_program *const instance = newInstance();
    instance->spmd();
    destroyInstance(instance);
    bsp_end();
    std::fflush(NULL);
    std::exit(0);
  }
  virtual ~BSP_program() {}
};

}  // namespace mcbsp

#endif
