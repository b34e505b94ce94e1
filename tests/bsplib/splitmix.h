/* tests/bsplib/splitmix.h -- the randomized BSPlib tests' generator
 * (splitmix64): every process reseeds rng_state from (seed, pid, superstep)
 * and draws the same sequence as the processes that replay it. */
#ifndef BSPK_TESTS_SPLITMIX_H
#define BSPK_TESTS_SPLITMIX_H
#include <stdint.h>

static uint64_t rng_state;
static uint64_t rnd(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
#endif
