#!/bin/sh
# bench/collectives.sh -- BSPk's collectives next to Open MPI's, in one
# invocation: for every provider and p, the BSPk twin (bench/collectives.c)
# and the MPI twin run one after the other, and one Markdown table per
# (provider, p, collective) is printed: size, BSPk us, MPI us, ratio
# (BSPk / MPI: below 1 BSPk is faster).
#
#   bench/collectives.sh [--provider shm,tcp] [--procs 2,4,8] [--quick]
#                        [--rounds R] [--max BYTES] [--build DIR] [--out FILE]
#
#   --provider  BSPk provider / Open MPI transport pairs: shm (libfabric shm
#               against the vader BTL: --mca btl self,vader) and tcp
#               (libfabric tcp against --mca pml ob1 --mca btl self,tcp; BSPk
#               with BSPK_COUNT_EXCHANGE=messages -- what auto picks across
#               hosts -- and BSPK_SHM_RINGS=off; see bench/suite.sh)
#   --procs     process counts (default 2,4,8; above the core count both
#               sides run oversubscribed: Open MPI unbound, BSPk with
#               bspkrun's default --bind auto, round-robin over the cores)
#   --quick     sizes 8 B .. 4 KiB and 5 repetitions: checks that it runs
#   --rounds    alternating rounds (default 3, 1 with --quick): BSPk first in
#               odd rounds, MPI first in even ones; a cell is the median over
#               the rounds of each side (this VM has slow phases of seconds to
#               minutes in which both sides slow down, unequally)
#   --max       largest size in bytes (default 16 MiB = 16777216)
#   --out       also write the tables there (default: stdout only)
# Sizes: 8 B .. max by factors of 8 and 1 MiB, in bytes per process (alltoall: its
# whole send buffer). Without mpirun (or the MPI twin) the MPI columns say "-".
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROVIDERS=shm,tcp
PROCS=2,4,8
QUICK=
ROUNDS=
MAX=
BUILD="$ROOT/build"
OUT=
usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --provider) PROVIDERS=$2; shift 2 ;;
    --procs) PROCS=$2; shift 2 ;;
    --quick) QUICK=--quick; shift ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --max) MAX="--max $2"; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "collectives.sh: unknown option $1" >&2; usage 2 >&2 ;;
  esac
done
if [ -z "$ROUNDS" ]; then if [ -n "$QUICK" ]; then ROUNDS=1; else ROUNDS=3; fi; fi
case $ROUNDS in ''|*[!0-9]*|0) echo "collectives.sh: --rounds takes a positive number" >&2; exit 2 ;; esac
. "$ROOT/bench/twins.sh"
twins_build collectives.sh "$BUILD" "$BUILD/bench/coll" coll_bspk coll_mpi
RAW=$(mktemp)
trap 'rm -f "$RAW"' EXIT
FAILED=0

# shellcheck disable=SC2086
run_bspk() { twins_run_bspk "$1" "$2" "$BIN/coll_bspk" $QUICK $MAX; }
# shellcheck disable=SC2086
run_mpi() { twins_run_mpi "$1" "$2" "$BIN/coll_mpi" $QUICK $MAX; }
round=1
while [ $round -le "$ROUNDS" ]; do
for prov in $(echo "$PROVIDERS" | tr , ' '); do
  for p in $(echo "$PROCS" | tr , ' '); do
    if [ $((round % 2)) = 1 ]; then libs="bspk mpi"; else libs="mpi bspk"; fi
    for lib in $libs; do
      [ $lib = mpi ] && [ $HAVE_MPI = 0 ] && continue
      echo "collectives.sh: round $round/$ROUNDS: $prov p=$p $lib" >&2
      if ! out=$(run_$lib "$prov" "$p" 2>&1); then
        echo "collectives.sh: FAILED: $lib on $prov p=$p:" >&2
        printf '%s\n' "$out" | tail -20 >&2
        FAILED=1
      fi
      printf '%s\n' "$out" | grep '^csv,coll,' | sed "s/^csv,coll,/$prov,/" >>"$RAW" || true
    done
  done
done
round=$((round + 1))
done
# RAW: provider,lib,op,p,bytes,us (one line per round) -> one table per
# (provider, p, op), each cell the median over the rounds
tables=$(awk -F, '
  function human(b) { if (b >= 1048576) return (b / 1048576) " MiB"; if (b >= 1024) return (b / 1024) " KiB"; return b " B" }
  { key = $1 SUBSEP $4 SUBSEP $3; if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
    sz = key SUBSEP $5; if (!(sz in szseen)) { szseen[sz] = 1; sizes[key] = sizes[key] " " $5 }
    c = ++cnt[key, $5, $2]; t[key, $5, $2, c] = $6 }
  function median(k, lib,    n, i, j, v, x) {
    n = cnt[k, lib]; if (n == 0) return ""
    for (i = 1; i <= n; i++) v[i] = t[k, lib, i] + 0
    for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  END {
    for (i = 1; i <= nk; i++) {
      split(order[i], k, SUBSEP)
      printf "\n### %s, p = %s: %s\n\n| size | BSPk us | MPI us | ratio |\n|---:|---:|---:|---:|\n", k[1], k[2], k[3]
      n = split(sizes[order[i]], s, " ")
      for (j = 1; j <= n; j++) {
        b = median(order[i] SUBSEP s[j], "bspk"); m = median(order[i] SUBSEP s[j], "mpi")
        r = (b != "" && m != "" && m + 0 > 0) ? sprintf("%.2f", b / m) : "-"
        printf "| %s | %s | %s | %s |\n", human(s[j]), (b == "" ? "-" : b), (m == "" ? "-" : m), r
      }
    }
  }' "$RAW")
printf '%s\n' "$tables"
[ -n "$OUT" ] && printf '%s\n' "$tables" >"$OUT"
exit $FAILED
