// tests/model/driver.h -- the runner (runner.cpp: runs programs through the
// public API and compares with the model) and the shrinker (shrink.cpp).
#pragma once
#include <string>

#include "program.h"

namespace model {

struct Options {
  uint64_t seed = 1;
  uint64_t seeds = 1;
  std::string program_file;  // --program: run this program instead of generating
  Features feat;
  bool verbose = false;
  // shrinker
  int np = 0;
  std::string provider;
  uint64_t frame = 0;
  int runs = 3;           // a candidate fails if one of this many runs fails
  bool any_failure = false;  // keep candidates failing in any way (default: the same way)
  std::string out;
  std::string self;      // this executable
  std::string bspkrun;   // the launcher
};

// Inside a job (bspkrun): run seeds [seed, seed + seeds) or the program file.
// Returns the process exit status (a difference ends the job with bspk_abort).
int run_job(const Options& o);

// Outside a job: reduce a failing program by re-running jobs.
int shrink_main(const Options& o);

// The program of --program FILE, or generated from --seed for o.np
// processes and frame size o.frame. False (after a message on stderr) if the
// file cannot be read or parsed.
bool load_program(const Options& o, Program* pr);

}  // namespace model
