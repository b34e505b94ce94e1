#!/bin/bash
# tests/bsplib/soak.sh N [--from SEED] [--build DIR]
#
# Long randomized runs of the BSPlib layer beyond ctest's fixed seeds:
# bsplib_random for seeds FROM..FROM+N-1 (default FROM 1), each seed choosing
# p = 2..8, the mode (gets, nogets, runs, getruns, hp in turn), the frame size
# (4, 8, 16, 64 KiB), the provider (every third seed tcp, else shm) and, for
# every second seed, "declare skew" (bspk_expect from the replay, one process
# late before its operations and one before its bsp_sync); bsplib_regs for
# every fourth seed. The environment passes through (BSPK_BSPLIB_BOARD=off,
# BSPK_SHM_RINGS=off BSPK_COUNT_EXCHANGE=messages for jobs as across hosts).
# Prints each failure's replay command and its last output lines, then
# "runs R failed F"; exit status 1 if anything failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
n=${1:?usage: soak.sh N [--from SEED] [--build DIR]}
shift
from=1
build=$here/../../build
while [ $# -gt 0 ]; do
  case $1 in
    --from) from=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "soak.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
bspkrun=$build/bspkrun
random=$build/tests/bsplib/bsplib_random
regs=$build/tests/bsplib/bsplib_regs
for f in "$bspkrun" "$random" "$regs"; do
  [ -x "$f" ] || { echo "soak.sh: $f not built (cmake --build $build)" >&2; exit 2; }
done
modes=(gets nogets runs getruns hp)
frames=(4096 8192 16384 65536)
runs=0
failed=0
# one ENV... -- PROGRAM ARGS...: run it under bspkrun, check its "ok" line.
one() {
  local env=() p=$1 prov=$2 ok=$3
  shift 3
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  runs=$((runs + 1))
  local out
  if ! out=$(env "${env[@]}" timeout --foreground 150 "$bspkrun" -n "$p" --provider "$prov" --timeout 120 "$@" 2>&1) ||
     ! grep -q "$ok" <<<"$out"; then
    failed=$((failed + 1))
    echo "FAIL: ${env[*]} $bspkrun -n $p --provider $prov $*"
    tail -5 <<<"$out" | sed 's/^/  /'
  fi
}
for ((s = from; s < from + n; s++)); do
  p=$((s % 7 + 2))
  mode=${modes[$((s / 7 % 5))]}
  frame=${frames[$((s / 35 % 4))]}
  prov=shm
  [ $((s % 3)) = 0 ] && prov=tcp
  extra=()
  [ $((s % 2)) = 0 ] && extra=(declare skew)
  env=("BSPK_FRAME_SIZE=$frame")
  [ "$mode" = hp ] && env+=("BSPK_HP_ZEROCOPY_MIN=1024")
  one "$p" "$prov" "random ok" "${env[@]}" -- "$random" "$s" 10 40 "$mode" "${extra[@]}"
  [ $((s % 4)) = 0 ] && one "$p" "$prov" "regs ok" "BSPK_FRAME_SIZE=$frame" -- "$regs" "$s" 12 16
done
echo "runs $runs failed $failed"
[ "$failed" = 0 ]
