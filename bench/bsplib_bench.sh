#!/bin/sh
# bench/bsplib_bench.sh -- the BSP parameters of the BSPlib layer next to Open
# MPI, in one invocation (bench/bsplib/bsplib_bench.c and mpi_bench.c): the
# computing rate r, the empty superstep, g and l from the least-squares fit of
# T(h) = g h + l over h-relations of single-word puts (bsp_put, bsp_hpput,
# bsp_send; MPI_Put + MPI_Win_fence on a window from MPI_Win_allocate) and of
# their mirror, single-word gets (bsp_get; MPI_Get + fence), and the
# h-relation at h = p with bspk_expect. For every provider, round and p the
# BSPk and MPI programs run one after the other (alternating which goes first).
#
#   bench/bsplib_bench.sh [--provider shm,tcp] [--procs 2,4] [--rounds R]
#                         [--quick] [--build DIR] [--out DIR]
#
#   --provider  shm: BSPk's libfabric shm against Open MPI's vader BTL (osc
#               rdma); tcp: libfabric tcp against the TCP BTL with osc pt2pt.
#               The tcp rows stand for a job across hosts: BSPk runs them with
#               BSPK_SHM_RINGS=off and BSPK_COUNT_EXCHANGE=messages (what auto
#               picks across hosts), as bench/suite.sh.
#   --procs     process counts (default 2,4); p above the cores is
#               oversubscribed (Open MPI unbound then, BSPk with its
#               default --bind auto: round-robin over the cores)
#   --rounds    alternating rounds (default 3; 1 with --quick); a table cell is
#               the median over rounds
#   --quick     h = 0,1,2,4,...,2048 and a shorter time per measurement (under
#               2 minutes once built); the full run (h = 0,1,2,3,4,6,...,2048)
#               takes under 10
#   --out       where tables.md, bsplib_bench.csv and raw.csv go
#               (default BUILD/bsplib-bench-results)
#
# The tables (stdout and tables.md) have per provider and p the rows: r; empty
# bsp_sync vs MPI_Barrier and vs an empty fence; g per bsp_put / bsp_hpput /
# bsp_send vs per MPI_Put and per bsp_get vs per MPI_Get (us and flops); l;
# the same g and l fitted over the loop averages instead (bspbench's own
# T(h): a loop's time / its supersteps); h = p with bspk_expect (or not) vs
# puts + fence; columns BSPk, MPI, BSPk/MPI. Then, per provider and p, the
# same goal rows measured with both libraries in the SAME processes
# (bench/bsplib/paired_bench.c under mpirun, once per round, a few seconds
# each): the two programs above run one after the other, and this VM's host
# moves its vCPUs between near and far placements within a second, which
# moves every small superstep of either library (README, Performance);
# paired_bench alternates the libraries chunk by chunk instead.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROVIDERS=shm,tcp
PROCS=2,4
ROUNDS=
QUICK=0
BUILD="$ROOT/build"
OUT=
usage() { sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --provider) PROVIDERS=$2; shift 2 ;;
    --procs) PROCS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --build) BUILD=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "bsplib_bench.sh: unknown option $1" >&2; usage 2 >&2 ;;
  esac
done
[ -n "$ROUNDS" ] || { [ $QUICK = 1 ] && ROUNDS=1 || ROUNDS=3; }
[ -n "$OUT" ] || OUT="$BUILD/bsplib-bench-results"
command -v mpirun >/dev/null || { echo "bsplib_bench.sh: mpirun not found: run ./install-deps.sh (openmpi-bin)" >&2; exit 2; }

# Build what is needed (Release unless the build directory says otherwise).
[ -f "$BUILD/CMakeCache.txt" ] || cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j2 --target bspkrun bsplib_bench bsplib_mpi_bench bsplib_paired_bench >/dev/null
BIN="$BUILD/bench/bsplib"
mkdir -p "$OUT"
RAW="$OUT/raw.lines"
: >"$RAW"
NCORES=$(nproc)

# A run that takes longer than LIMIT seconds is ended (its rows so far count).
if [ $QUICK = 1 ]; then QARG=--quick LIMIT=120; else QARG= LIMIT=300; fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# run_bspk PROVIDER P PROGRAM ARGS...
run_bspk() {
  prov=$1 p=$2; shift 2
  if [ "$p" -le "$NCORES" ]; then bind=core; else bind=auto; fi  # auto: round-robin, BSPk's default
  exch=auto rings=auto
  if [ "$prov" = tcp ]; then
    rings=off
    exch=messages
  fi
  BSPK_COUNT_EXCHANGE=$exch BSPK_SHM_RINGS=$rings timeout $LIMIT "$BUILD/bspkrun" -n "$p" --provider "$prov" --bind $bind "$@"
}
# run_mpi PROVIDER P PROGRAM ARGS...
run_mpi() {
  prov=$1 p=$2; shift 2
  if [ "$p" -le "$NCORES" ]; then bind="--bind-to core"; else bind="--bind-to none --oversubscribe"; fi
  case $prov in
    shm) mca="--mca pml ob1 --mca btl self,vader --mca osc rdma,pt2pt" ;;
    tcp) mca="--mca pml ob1 --mca btl self,tcp --mca osc pt2pt" ;;
    *) echo "bsplib_bench.sh: unknown provider $prov (shm or tcp)" >&2; exit 2 ;;
  esac
  # shellcheck disable=SC2086
  timeout $LIMIT mpirun -n "$p" $bind $mca "$@"
}
# one PROVIDER ROUND LIB P PROGRAM ARGS...: run it, keep its csv lines.
one() {
  prov=$1 round=$2 lib=$3 p=$4; shift 4
  echo "bsplib_bench.sh: $prov p=$p round $round: $(basename "$1")" >&2
  rc=0
  "run_$lib" "$prov" "$p" "$@" >"$OUT/last.out" 2>"$OUT/last.err" || rc=$?
  if [ $rc != 0 ]; then
    if [ $rc = 124 ]; then why="timed out after $LIMIT s"; else why="exit status $rc"; fi
    echo "bsplib_bench.sh: FAILED ($why): $lib $* on $prov p=$p (stderr below)" >&2
    tail -20 "$OUT/last.err" >&2
    FAILED=1
  fi
  grep '^csv,' "$OUT/last.out" | sed "s/^csv,/$prov,$round,/" >>"$RAW" || true
}

FAILED=0
START=$(date +%s)
for prov in $(echo "$PROVIDERS" | tr , ' '); do
  for round in $(seq 1 "$ROUNDS"); do
    for p in $(echo "$PROCS" | tr , ' '); do
      if [ $((round % 2)) = 1 ]; then
        one "$prov" "$round" bspk "$p" "$BIN/bsplib_bench" $QARG
        one "$prov" "$round" mpi "$p" "$BIN/mpi_bench" $QARG
      else
        one "$prov" "$round" mpi "$p" "$BIN/mpi_bench" $QARG
        one "$prov" "$round" bspk "$p" "$BIN/bsplib_bench" $QARG
      fi
    done
  done
done
# Both libraries in the same processes: mpirun with the MCA flags above and
# BSPk's settings of run_bspk (BSPk bootstraps through mpirun's PMIx).
PAIRED="$OUT/paired.lines"
: >"$PAIRED"
for prov in $(echo "$PROVIDERS" | tr , ' '); do
  for round in $(seq 1 "$ROUNDS"); do
    for p in $(echo "$PROCS" | tr , ' '); do
      xenv="-x BSPK_PROVIDER=$prov"
      [ "$prov" = tcp ] && xenv="$xenv -x BSPK_SHM_RINGS=off -x BSPK_COUNT_EXCHANGE=messages"
      echo "bsplib_bench.sh: $prov p=$p round $round: paired_bench" >&2
      rc=0
      # shellcheck disable=SC2086
      run_mpi "$prov" "$p" $xenv "$BIN/paired_bench" $QARG >"$OUT/last.out" 2>"$OUT/last.err" || rc=$?
      if [ $rc != 0 ]; then
        echo "bsplib_bench.sh: FAILED (exit status $rc): paired_bench on $prov p=$p (stderr below)" >&2
        tail -20 "$OUT/last.err" >&2
        FAILED=1
      fi
      grep '^csv,' "$OUT/last.out" | sed "s/^csv,/$prov,$round,/" >>"$PAIRED" || true
    done
  done
done
echo "bsplib_bench.sh: measured in $(( $(date +%s) - START )) s" >&2
python3 "$ROOT/bench/bsplib/report.py" --raw "$RAW" --out "$OUT" || FAILED=1
python3 "$ROOT/bench/bsplib/paired_report.py" --raw "$PAIRED" | tee -a "$OUT/tables.md" || FAILED=1
echo "bsplib_bench.sh: tables in $OUT/tables.md, summary $OUT/bsplib_bench.csv, every measurement $OUT/raw.csv" >&2
exit $FAILED
