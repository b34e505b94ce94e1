/* bsplib/mcbsp-affinity.h -- MulticoreBSP for C's affinity interface (its
 * mcbsp-affinity.h: how bsp_begin pins the processes it starts) over BSPk's
 * BSPlib layer, so that programs written for MulticoreBSP, which include it
 * (often right after mcbsp.h, in C++ inside extern "C") and call e.g.
 * mcbsp_set_affinity_mode(COMPACT) after bsp_init, build and run unchanged.
 *
 * What the settings do here (bsplib/affinity.cpp):
 *   - A program started without a launcher (./prog): bsp_begin(P) forks the
 *     processes (bsp.h "Start") and, if the program chose a placement (called
 *     any mcbsp_set_* function below, or changed one of the MCBSP_DEFAULT_*
 *     variables; mcbsp_set_maximum_threads alone only sizes bsp_nprocs()),
 *     pins process s (0 <= s < P) to one CPU before the runtime
 *     starts, as MulticoreBSP pins its threads:
 *       COMPACT  core s,
 *       SCATTER  core floor(s * C / P) (spread over the C available cores),
 *       MANUAL   CPU pinning[s] as given to mcbsp_set_pinning (a CPU number,
 *                used as it is),
 *     cores counted over the available ones (mcbsp_set_available_cores,
 *     default: the CPUs online / threads per core) less the
 *     reserved ones (mcbsp_set_reserved_cores), wrapping around when P is
 *     larger; a core's CPU is core * threads_per_core (CONSECUTIVE) or the
 *     core number itself (WRAPPED). Without a choice the kernel places the
 *     processes (as bsprun --bind none), not MulticoreBSP's default SCATTER:
 *     with more processes than cores, pinning costs time here (README,
 *     "Performance"). A CPU the process may not run on, or a MANUAL pinning
 *     shorter than P, ends the job at bsp_begin with a message naming it.
 *   - Before bsp_begin without a launcher, bsp_nprocs() is
 *     mcbsp_get_maximum_threads() less the reserved cores' CPUs (at least 1).
 *   - Under a launcher (bsprun / bspkrun, srun) the launcher places the
 *     processes (bsprun --bind core|none): the settings are kept and
 *     returned by the getters, and pin nothing.
 * Settings take effect at the next bsp_begin, as in MulticoreBSP; they are
 * per process (the forks inherit pid 0's). Sizes are size_t, as there.
 * MulticoreBSP's machine.info file is not read. */
#ifndef BSPK_MCBSP_AFFINITY_H
#define BSPK_MCBSP_AFFINITY_H

#include <stddef.h>

#include "bsp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How bsp_begin pins the processes it starts (see above). */
enum mcbsp_affinity_mode {
  SCATTER = 0, /* spread over all available cores */
  COMPACT,     /* the first P available cores */
  MANUAL       /* as given by mcbsp_set_pinning */
};

/* How the machine numbers the hardware threads of its cores (t threads per
 * core): CONSECUTIVE: core i has CPUs i*t .. i*t+t-1; WRAPPED: core i has
 * CPUs i, i+C, i+2C, ... (C cores). Pinning uses each core's first. */
enum mcbsp_thread_numbering { CONSECUTIVE = 0, WRAPPED };

/* The most processes (hardware threads) to count on; default: the CPUs
 * online. Decides bsp_nprocs() before bsp_begin without a launcher. */
BSPK_BSP_API void mcbsp_set_maximum_threads(const size_t max);
BSPK_BSP_API void mcbsp_set_affinity_mode(const enum mcbsp_affinity_mode mode);
/* Cores to place on (default: the CPUs online / threads per core). */
BSPK_BSP_API void mcbsp_set_available_cores(const size_t num_cores);
/* Hardware threads per core (default 1). */
BSPK_BSP_API void mcbsp_set_threads_per_core(const size_t threads_per_core);
BSPK_BSP_API void mcbsp_set_thread_numbering(const enum mcbsp_thread_numbering numbering);
/* CPU of process s = pinning[s], for s < length (copied; implies MANUAL). */
BSPK_BSP_API void mcbsp_set_pinning(const size_t *const pinning, const size_t length);
/* Core numbers not to place on (copied); NULL or 0: none. */
BSPK_BSP_API void mcbsp_set_reserved_cores(const size_t *const reserved, const size_t length);

BSPK_BSP_API size_t mcbsp_get_maximum_threads(void);
BSPK_BSP_API enum mcbsp_affinity_mode mcbsp_get_affinity_mode(void);
BSPK_BSP_API size_t mcbsp_get_available_cores(void);
BSPK_BSP_API size_t mcbsp_get_threads_per_core(void);
BSPK_BSP_API enum mcbsp_thread_numbering mcbsp_get_thread_numbering(void);
/* A copy (malloc; the caller frees it) of the manual pinning, of
 * max(its length, mcbsp_get_maximum_threads()) entries (0 past the given
 * ones), or NULL if none was set. */
BSPK_BSP_API size_t *mcbsp_get_pinning(void);
BSPK_BSP_API size_t mcbsp_get_reserved_cores_number(void);
/* A copy (malloc; the caller frees it) of the reserved cores, or NULL. */
BSPK_BSP_API size_t *mcbsp_get_reserved_cores(void);

/* The defaults the settings start from (SCATTER, 1, CONSECUTIVE); a program
 * may change them before bsp_begin, which counts as a choice (above). */
extern BSPK_BSP_API enum mcbsp_affinity_mode MCBSP_DEFAULT_AFFINITY;
extern BSPK_BSP_API size_t MCBSP_DEFAULT_THREADS_PER_CORE;
extern BSPK_BSP_API enum mcbsp_thread_numbering MCBSP_DEFAULT_THREAD_NUMBERING;

#ifdef __cplusplus
}
#endif

#endif /* BSPK_MCBSP_AFFINITY_H */
