/* tests/bsplib/header_mcbsp_affinity_c99.c -- mcbsp-affinity.h after mcbsp.h
 * in strict C99, as MulticoreBSP's C programs include it. */
#include <mcbsp.h>
#include <mcbsp-affinity.h>

int main(void) {
  const size_t reserved[1] = {0};
  mcbsp_set_affinity_mode(SCATTER);
  mcbsp_set_available_cores(2);
  mcbsp_set_threads_per_core(1);
  mcbsp_set_reserved_cores(reserved, 1);
  MCBSP_DEFAULT_AFFINITY = MANUAL;
  return mcbsp_get_affinity_mode() == COMPACT && mcbsp_get_thread_numbering() == CONSECUTIVE;
}
