#!/bin/bash
# tests/fuzz/run.sh [SECONDS] -- the fuzzing CI step (issue 13): configures
# build-fuzz with clang and libFuzzer (-DBSPK_FUZZ=ON, ASan + UBSan, coverage
# instrumentation for the runtime's objects), builds only the fuzz targets,
# runs each for SECONDS (default 30) on a copy of its seed corpus through
# `ctest -L fuzz` (one at a time), and prints per target the runs executed and
# "no finding" or the file holding the crashing input.
# (BSPK_BUILD_EXAMPLES stays ON: tests/CMakeLists.txt names the example
# targets unconditionally; they are configured, never built here.)
# Exit status: 0 only if every target ran its time without a finding.
# BSPK_FUZZ_BUILD overrides the build directory (default: <repo>/build-fuzz).
set -u
secs=${1:-30}
case "$secs" in ''|*[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;; esac
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BSPK_FUZZ_BUILD:-$root/build-fuzz}
targets="fuzz_mp_header fuzz_hub_frames fuzz_boot_blob fuzz_env"
flags="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer"

command -v clang++ >/dev/null || { echo "run.sh: clang++ not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }
set -e
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DBSPK_FUZZ=ON -DBSPK_FUZZ_SECONDS="$secs" \
  -DBSPK_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" >/dev/null
# (tests/fuzz/CMakeLists.txt stops with a message if $build was configured with another compiler.)
start=$(date +%s)
# shellcheck disable=SC2086
cmake --build "$build" -j2 --target $targets
echo "run.sh: fuzz targets built in $(( $(date +%s) - start )) s"
set +e
ctest --test-dir "$build" -L fuzz --output-on-failure
rc=$?

echo
echo "run.sh: ${secs} s per target"
for t in $targets; do
  work=$build/tests/fuzz/work/$t
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" 2>/dev/null | tail -n 1)
  [ -n "$runs" ] || runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$work/log" 2>/dev/null | tail -n 1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" 2>/dev/null | tail -n 1)
  found=$(ls "$work"/artifacts/ 2>/dev/null | sed "s|^|$work/artifacts/|" | tr '\n' ' ')
  printf '  %-16s %10s runs (%s/s)  %s\n' "$t" "${runs:-?}" "${speed:-?}" "${found:-no finding}"
done
exit $rc
