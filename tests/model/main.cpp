// tests/model/main.cpp -- bspk_model: randomized differential testing of BSPk
// against a sequential reference model of include/bspk.h.
//
//   bspkrun -n P [--provider tcp|shm] bspk_model --seed S [--seeds N]   run seeds S..S+N-1 in one job
//   bspkrun -n P ... bspk_model --program FILE                            run one program file
//   bspk_model --print-program --seed S --np P --frame-size F             print the program (no job)
//   bspk_model --dump-program FILE --seed S --np P --frame-size F         write it to FILE
//   bspk_model --gen-check N [--frame-size F]                             generate and validate N seeds x p 1..8 (no job)
//   bspk_model --shrink (--seed S | --program FILE) --np P --provider X --frame-size F   reduce a failing case
//   --feature NAME=on|off (or no-NAME): see --features
// The frame size of a job is BSPK_FRAME_SIZE (read by bspk_init).
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "driver.h"
#include "model.h"

using namespace model;

namespace {

void usage() {
  std::fputs(
      "usage: bspkrun -n P [--provider tcp|shm] bspk_model [--seed S] [--seeds N] [--program FILE] [--verbose]\n"
      "       bspk_model --print-program|--dump-program FILE (--seed S | --program FILE) --np P --frame-size F\n"
      "       bspk_model --gen-check N [--seed S] [--frame-size F]\n"
      "       bspk_model --shrink (--seed S | --program FILE) --np P --provider X --frame-size F [--runs R] [--out FILE] [--any-failure]\n"
      "       any mode: --feature NAME=on|off (or no-NAME); --features lists them\n",
      stderr);
}

std::string self_path(const char* argv0) {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) return std::string(buf, static_cast<size_t>(n));
  return argv0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.self = self_path(argv[0]);
  o.bspkrun = BSPKRUN_PATH;
  std::string mode = "run", dump;
  uint64_t gen_n = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bspk_model: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seed") o.seed = std::strtoull(val().c_str(), nullptr, 10);
    else if (a == "--seeds") o.seeds = std::strtoull(val().c_str(), nullptr, 10);
    else if (a == "--program") o.program_file = val();
    else if (a == "--verbose") o.verbose = true;
    else if (a == "--np") o.np = std::atoi(val().c_str());
    else if (a == "--provider") o.provider = val();
    else if (a == "--frame-size") o.frame = std::strtoull(val().c_str(), nullptr, 10);
    else if (a == "--runs") o.runs = std::atoi(val().c_str());
    else if (a == "--out") o.out = val();
    else if (a == "--any-failure") o.any_failure = true;
    else if (a == "--print-program") mode = "print";
    else if (a == "--dump-program") mode = "dump", dump = val();
    else if (a == "--gen-check") mode = "gencheck", gen_n = std::strtoull(val().c_str(), nullptr, 10);
    else if (a == "--shrink") mode = "shrink";
    else if (a == "--feature") {
      std::string f = val();
      if (!o.feat.set(f)) {
        std::fprintf(stderr, "bspk_model: unknown feature %s (--features lists them)\n", f.c_str());
        return 2;
      }
    } else if (a == "--features") {
      for (auto& [name, what] : Features::list()) std::printf("%-22s %s\n", name.c_str(), what.c_str());
      return 0;
    } else if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else {
      std::fprintf(stderr, "bspk_model: unknown argument %s\n", a.c_str());
      usage();
      return 2;
    }
  }
  if (o.frame == 0) {
    const char* fs = std::getenv("BSPK_FRAME_SIZE");
    o.frame = fs && *fs ? std::strtoull(fs, nullptr, 10) : 4096;
  }
  if (mode == "run") return run_job(o);
  if (mode == "shrink") return shrink_main(o);
  if (mode == "gencheck") {
    // The generator stays within the contract, and a program survives its
    // text form unchanged.
    uint64_t progs = 0, ops = 0;
    for (uint64_t s = o.seed; s < o.seed + gen_n; ++s)
      for (int p = 1; p <= 8; ++p) {
        Program pr = generate(s, p, o.frame, o.feat);
        std::string bad = validate(pr);
        if (!bad.empty()) {
          std::printf("gen-check: seed %llu p=%d frame=%llu: %s\n", static_cast<unsigned long long>(s), p,
                      static_cast<unsigned long long>(o.frame), bad.c_str());
          return 1;
        }
        Program back;
        std::string err, text = program_str(pr);
        if (!parse_program(text, &back, &err) || program_str(back) != text) {
          std::printf("gen-check: seed %llu p=%d: text form does not round-trip: %s\n", static_cast<unsigned long long>(s), p,
                      err.c_str());
          return 1;
        }
        ++progs, ops += pr.nops();
      }
    std::printf("gen-check: %llu programs, %llu operations, all within the contract\n", static_cast<unsigned long long>(progs),
                static_cast<unsigned long long>(ops));
    return 0;
  }
  // print / dump
  Program pr;
  if (o.program_file.empty() && o.np < 1) {
    std::fprintf(stderr, "bspk_model: --np P is needed\n");
    return 2;
  }
  if (!load_program(o, &pr)) return 2;
  if (mode == "print") {
    std::fputs(program_str(pr).c_str(), stdout);
    return 0;
  }
  if (!write_file(dump, program_str(pr))) {
    std::fprintf(stderr, "bspk_model: cannot write %s\n", dump.c_str());
    return 2;
  }
  return 0;
}
