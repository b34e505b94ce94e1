/* bsplib/mcbsp.hpp -- MulticoreBSP for C 1.x's name for bsp.hpp (the C++
 * wrapper, mcbsp::BSP_program). */
#ifndef BSPK_MCBSP_HPP
#define BSPK_MCBSP_HPP
#include "bsp.hpp"
#endif
