/* bsplib/mcbsp.h -- MulticoreBSP for C 1.x's name for bsp.h, with its type
 * macros (here the BSPlib 1998 / BSPonMPI types of bsp.h: int). */
#ifndef BSPK_MCBSP_H
#define BSPK_MCBSP_H
#include "bsp.h"
#ifndef MCBSP_PROCESSOR_INDEX_DATATYPE
#define MCBSP_PROCESSOR_INDEX_DATATYPE bsp_pid_t
#endif
#ifndef MCBSP_NUMMSG_TYPE
#define MCBSP_NUMMSG_TYPE bsp_nprocs_t
#endif
#ifndef MCBSP_BYTESIZE_TYPE
#define MCBSP_BYTESIZE_TYPE bsp_size_t
#endif
#endif
