#!/bin/sh
# bench/imbalance.sh -- load imbalance, BSPk next to Open MPI in one
# invocation (bench/imbalance.c): in superstep s process s mod p computes w
# microseconds and every process sends one word to the next; the table gives,
# per w, the time per superstep beyond the computation (overhead, us) of BSPk
# counted, BSPk with bspk_expect, and Open MPI's Isend/Irecv + MPI_Barrier,
# and the ratio of the superstep times (BSPk counted / MPI). What it shows:
# how soon a process that waited notices its data, which every superstep of
# an unbalanced program pays (BSPK_YIELD_MS, README Environment).
#
#   bench/imbalance.sh [--provider shm,tcp] [--procs 2,4] [--rounds R]
#                      [--work LIST] [--time SECONDS] [--build DIR]
#
#   --provider  shm: libfabric shm against the vader BTL; tcp: libfabric tcp
#               (rings off, counts by messages: as across hosts) against the
#               TCP BTL
#   --procs     process counts (default 2,4; above the cores both unbound)
#   --rounds    alternating rounds (default 3); a cell is the median
#   --work      w values in microseconds (default 0,100,1000,3000,10000)
#   --time      seconds per (w, variant) and run (default 0.3)
# Extra environment (e.g. BSPK_YIELD_MS=2) reaches the BSPk runs.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROVIDERS=shm,tcp
PROCS=2,4
ROUNDS=3
WORK=0,100,1000,3000,10000
TIME=0.3
BUILD="$ROOT/build"
usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --provider) PROVIDERS=$2; shift 2 ;;
    --procs) PROCS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --time) TIME=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "imbalance.sh: unknown option $1" >&2; usage 2 >&2 ;;
  esac
done
case $ROUNDS in ''|*[!0-9]*|0) echo "imbalance.sh: --rounds takes a positive number" >&2; exit 2 ;; esac
. "$ROOT/bench/twins.sh"
twins_build imbalance.sh "$BUILD" "$BUILD/bench" imbalance imbalance_mpi
RAW=$(mktemp)
trap 'rm -f "$RAW"' EXIT

run_bspk() { twins_run_bspk "$1" "$2" "$BIN/imbalance" --work "$WORK" --time "$TIME"; }
run_mpi() { twins_run_mpi "$1" "$2" "$BIN/imbalance_mpi" --work "$WORK" --time "$TIME"; }

FAILED=0
round=1
while [ "$round" -le "$ROUNDS" ]; do
  for prov in $(echo "$PROVIDERS" | tr , ' '); do
    for p in $(echo "$PROCS" | tr , ' '); do
      echo "imbalance.sh: $prov p=$p round $round" >&2
      if [ $((round % 2)) = 1 ] || [ $HAVE_MPI = 0 ]; then order="bspk mpi"; else order="mpi bspk"; fi
      for who in $order; do
        [ "$who" = mpi ] && [ $HAVE_MPI = 0 ] && continue
        if ! "run_$who" "$prov" "$p" | grep '^csv,' | sed "s/^/$prov,/" >>"$RAW"; then
          echo "imbalance.sh: the $who run ($prov, p=$p) failed" >&2
          FAILED=1
        fi
      done
    done
  done
  round=$((round + 1))
done

# provider,csv,imbalance,LIB,VARIANT,P,W,US,OVERHEAD -> a table per provider and p (medians over rounds)
python3 - "$RAW" <<'EOF'
import sys, statistics, collections
cells = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.strip().split(',')
    if len(f) < 9: continue
    prov, lib, var, p, w, us, ov = f[0], f[3], f[4], int(f[5]), float(f[6]), float(f[7]), float(f[8])
    cells[(prov, p, w, lib + ' ' + var)].append((us, ov))
med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for k, v in cells.items()}
for prov, p in sorted({(k[0], k[1]) for k in med}):
    print(f"\n### {prov}, p = {p}: overhead per superstep beyond the computation (us); ratio of superstep times\n")
    print("| w (us) | BSPk counted | BSPk declared | Open MPI | counted / MPI | declared / MPI |")
    print("|---:|---:|---:|---:|---:|---:|")
    for w in sorted({k[2] for k in med if k[0] == prov and k[1] == p}):
        c = med.get((prov, p, w, 'bspk counted')); d = med.get((prov, p, w, 'bspk declared'))
        m = med.get((prov, p, w, 'mpi isend-barrier'))
        fmt = lambda x: '-' if x is None else f"{x[1]:.2f}"
        rat = lambda x: '-' if x is None or m is None or m[0] <= 0 else f"{x[0] / m[0]:.3f}"
        print(f"| {w:.0f} | {fmt(c)} | {fmt(d)} | {fmt(m)} | {rat(c)} | {rat(d)} |")
EOF
exit $FAILED
