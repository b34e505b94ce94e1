// tests/bsplib/header_mcbsp.cpp -- MulticoreBSP's C++ wrapper header
// (bsp.hpp, and mcbsp.hpp as 1.x named it) compiles as MulticoreBSP's does,
// in ANSI C++98 and later, -pedantic -Werror: a program extends
// mcbsp::BSP_program as MulticoreBSP's documentation shows.
#include <mcbsp.hpp>

class Program : public mcbsp::BSP_program {
 protected:
  virtual void spmd() { bsp_sync(); }
  virtual mcbsp::BSP_program *newInstance() { return new Program(); }
};

int main() {
  Program p;
  (void)p;
  MCBSP_PROCESSOR_INDEX_DATATYPE pid = 0;  // 1.x's type macros (mcbsp.h, included by mcbsp.hpp)
  (void)pid;
  return 0;
}
