/* tests/bsplib/header_mcbsp_c99.c -- mcbsp.h (MulticoreBSP for C 1.x's name
 * for bsp.h) compiles as strict C99 with its type macros. */
#include <mcbsp.h>

int main(void) {
    MCBSP_PROCESSOR_INDEX_DATATYPE p = 0;
    MCBSP_BYTESIZE_TYPE n = 0;
    MCBSP_NUMMSG_TYPE m = 0;
    (void)p;
    (void)n;
    (void)m;
    return 0;
}
