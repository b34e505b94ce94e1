#!/bin/sh
# tests/bsplib/profile_reads.sh BSPKRUN BSPLIB_SCENARIOS -- the zero-copy
# traffic of a BSPlib program is in its per-superstep profile: one-sided
# reads count as fetches (fetched_in at the reader, fetched_out at the owner,
# which the layer reports with bspk_note_read_by). Runs the bigput scenario
# (counted, p = 3, shm): superstep 1, three staged puts of 128 KiB; superstep
# 2, six staged puts (two per process), three zero-copy hpgets and three
# zero-copy hpputs; superstep 3, two staged puts to pid 0 (its own is local):
# 17 x 131072 bytes read, summed over all rows of each column.
set -u
bspkrun=$1
prog=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
if ! BSPK_PROFILE="$tmp/prof.csv" "$bspkrun" -n 3 --provider shm "$prog" bigput counted >"$tmp/out" 2>&1; then
  echo "FAIL: the bigput scenario failed:"; cat "$tmp/out"; exit 1
fi
want=$((17 * 131072))
awk -F, -v want="$want" '
  NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  { fo += $col["fetched_out"]; fi += $col["fetched_in"]; rows++ }
  END {
    printf "profile rows %d: fetched_out total %d, fetched_in total %d, expected %d each\n", rows, fo, fi, want
    exit !(fo == want && fi == want)
  }' "$tmp/prof.csv" || { echo "FAIL: the profile does not count the zero-copy reads"; exit 1; }
echo "zero-copy reads are in the profile"
