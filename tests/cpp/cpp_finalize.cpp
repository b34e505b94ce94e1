// tests/cpp/cpp_finalize.cpp -- finalize errors are reported, never
// swallowed (bspk::runtime, include/bspk.hpp). One mode per run:
//   dtor      pid 0 finalizes through the C API, so that its runtime's
//             destructor gets BSPK_ERR_STATE from bspk_finalize: it must print
//             the error and end the process with status 1; the other pids
//             end normally (their destructors finalize).
//   explicit  the same, but pid 0 calls rt.finalize(), which must throw
//             bspk::error(BSPK_ERR_STATE, "bspk_finalize"); it prints that and
//             returns 3.
//   over      the last pid's rt.sync(expect{1}) times out (nothing is sent;
//             run with BSPK_SYNC_TIMEOUT=1): an [over] error, caught; its
//             destructor's bspk_finalize then returns BSPK_ERR_TIMEOUT at
//             once, which it prints before exiting with status 1 (run at
//             p = 1: at larger p the others' finalize times out too).
//   throw     on pid 0 an exception leaves the runtime's scope: the destructor
//             says it does not finalize; main catches the exception and
//             returns 0, and bspkrun reports the exit without bspk_finalize
//             (ending the job: the others wait in their finalize).
//   late      pid 1's store of the final superstep is refused (pid 0 freed
//             the region): rt.finalize() throws BSPK_ERR_PTR naming
//             superstep 2, where it was called, in superstep() and in what().
#include <bspk.hpp>

#include <cstdio>
#include <cstring>
#include <stdexcept>

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[argc - 1] : "";
    if (!std::strcmp(mode, "throw")) {
        try {
            bspk::runtime rt(argc, argv);
            rt.sync();
            if (rt.pid() == 0) throw std::runtime_error("boom");
        } catch (const std::runtime_error& e) {
            std::printf("cpp_finalize: caught %s\n", e.what());
        }
        return 0;
    }
    if (!std::strcmp(mode, "late")) {
        // A store refused at its target in the final superstep is reported by
        // finalize after its final sync: the error must still name the
        // superstep finalize was called in (2), as its message does.
        bspk::runtime rt(argc, argv);
        bspk_ptr fs = rt.pid() == 0 ? bspk_malloc("fs", 0, 4, 8) : BSPK_NULL;
        bspk_ptr src = bspk_malloc("", 0, 4, 8);
        bspk_ptr dst = rt.pid() == 1 ? bspk_lookup("fs", 0) : BSPK_NULL;
        rt.sync();
        if (rt.pid() == 0) bspk_free(fs);
        rt.sync();
        if (rt.pid() != 1) return 0;
        if (bspk_copy(dst, src, 4) != BSPK_OK) return 2;
        try {
            rt.finalize();
        } catch (const bspk::error& e) {
            std::printf("cpp_finalize: finalize threw %s from %s in superstep %lld: %s\n", e.code_name(),
                        e.call().c_str(), static_cast<long long>(e.superstep()), e.what());
            return 3;
        }
        std::printf("cpp_finalize: finalize did not throw\n");
        return 0;
    }
    bspk::runtime rt(argc, argv);
    bspk::region<int> r(rt, 10);
    rt.sync();
    if (!std::strcmp(mode, "over") && rt.pid() == rt.nprocs() - 1) {
        try {
            rt.sync(bspk::expect{1});
        } catch (const bspk::error& e) {
            std::printf("cpp_finalize: sync threw %s\n", e.code_name());
        }
        return 0;
    }
    if (rt.pid() != 0) return 0;
    if (!std::strcmp(mode, "dtor")) {
        if (bspk_finalize() != BSPK_OK) return 2;
        return 0;  // the destructor finalizes again
    }
    if (!std::strcmp(mode, "explicit")) {
        if (bspk_finalize() != BSPK_OK) return 2;
        try {
            rt.finalize();
        } catch (const bspk::error& e) {
            std::printf("cpp_finalize: finalize threw %s from %s\n", e.code_name(), e.call().c_str());
            return 3;
        }
        std::printf("cpp_finalize: finalize did not throw\n");
    }
    return 0;
}
