#!/bin/sh
# The sanitizer suite (issue 13; README "Security"): the unit tests and the
# multi-process suite at p = 4 on shm and p = 3 on tcp, the BSPlib layer's
# randomized test and the collectives' test, under AddressSanitizer +
# UndefinedBehaviorSanitizer, then the job hub, watchdog and engine tests under
# ThreadSanitizer, each in its own build directory. Any report fails the run.
# About 20 minutes on the 2-core CI machine (mostly the instrumented builds).
set -eu
cd "$(dirname "$0")/.."
TESTS="test_units test_boot test_providers test_config test_engine test_local test_multiproc bspkrun bsplib_random coll_test"
cmake -S . -B build-asan -DBSPK_SANITIZE=address,undefined -DBSPK_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j2 --target $TESTS
ctest --test-dir build-asan -L sanitize -j2 --output-on-failure
cmake -S . -B build-tsan -DBSPK_SANITIZE=thread -DBSPK_BUILD_BENCH=OFF >/dev/null
cmake --build build-tsan -j2 --target test_boot test_engine
ctest --test-dir build-tsan -L sanitize -j2 --output-on-failure
