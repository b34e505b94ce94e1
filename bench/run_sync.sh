#!/bin/sh
# Empty-superstep cost for p = 2, 4, 8 on tcp and shm (bench/sync.c).
# Usage: bench/run_sync.sh [build-dir]
B=${1:-build}
for prov in shm tcp; do
  for p in 2 4 8; do
    timeout --foreground 300 "$B/bspkrun" -n $p --provider $prov "$B/bench/sync" --time 0.5 | { [ $p = 2 ] && cat || grep -v '^#\|mode'; }
  done
done
