#!/bin/bash
# tests/fuzz/run_one.sh TARGET SEEDS WORKDIR SECONDS [DICT] -- one `ctest -L fuzz`
# test: runs the libFuzzer binary TARGET for SECONDS on a fresh copy of the seed
# corpus SEEDS (the source tree is never written), findings and the log in
# WORKDIR (artifacts/, log). Exit status: libFuzzer's (0: no finding).
set -u
exe=$1 seeds=$2 work=$3 secs=$4 dict=${5:-}
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
if [ -d "$seeds" ]; then cp -R "$seeds"/. "$work/corpus/"; fi
args=(-max_total_time="$secs" -rss_limit_mb=2048 -timeout=25 -print_final_stats=1
      -artifact_prefix="$work/artifacts/")
if [ -n "$dict" ] && [ -f "$dict" ]; then args+=(-dict="$dict"); fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1:strict_string_checks=1}
export IPATH_NO_BACKTRACE=1  # see fuzz_util.h
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
echo "+ $exe ${args[*]} $work/corpus"
"$exe" "${args[@]}" "$work/corpus" > "$work/log" 2>&1
rc=$?
# ctest keeps the output; the pulse lines are many: the head and the tail suffice.
if [ "$(wc -l < "$work/log")" -gt 80 ]; then
  head -n 30 "$work/log"; echo "... ($work/log)"; tail -n 50 "$work/log"
else
  cat "$work/log"
fi
for f in "$work"/artifacts/*; do
  [ -e "$f" ] && echo "finding: $f ($(od -An -tx1 -v "$f" | tr -d ' \n' | cut -c1-400))"
done
exit $rc
