/* bsplib/mcbsp.hpp -- MulticoreBSP for C 1.x's name for bsp.hpp (the C++
 * wrapper, mcbsp::BSP_program), with mcbsp.h's type macros. */
#ifndef BSPK_MCBSP_HPP
#define BSPK_MCBSP_HPP
#include "mcbsp.h"
#include "bsp.hpp"
#endif
