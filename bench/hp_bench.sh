#!/bin/sh
# bench/hp_bench.sh -- block-sized bsp_hpput / bsp_hpget on BSPlib over BSPk,
# zero copy (the default from BSPK_HP_ZEROCOPY_MIN = 64K) against the copying
# path (BSPK_HP_ZEROCOPY_MIN=off) and against Open MPI's MPI_Put / MPI_Get +
# MPI_Win_fence (bench/bsplib/hp_bench.c, mpi_hp_bench.c), in one invocation:
# the three run one after the other per provider, p and round. The same runs
# time block-sized bsp_puts staged (copied once; BSPK_PUT_ZEROCOPY_MIN=64K in
# the zero-copy run, where the default is 1M) against the batch path
# (BSPK_PUT_ZEROCOPY_MIN=off in the copying run).
#
#   bench/hp_bench.sh [--provider shm,tcp] [--procs 2,4] [--rounds R]
#                     [--min BYTES] [--max BYTES] [--build DIR] [--out DIR]
#
#   --provider  shm: BSPk on one host (rings and pulls, as by default) against
#               Open MPI's vader BTL (osc rdma); tcp: as across hosts (BSPk
#               with BSPK_SHM_RINGS=off, BSPK_COUNT_EXCHANGE=messages, as
#               bench/suite.sh) against the TCP BTL with osc pt2pt
#   --rounds    alternating rounds (default 1); a cell is the median
#   --min/--max block sizes, x4 apart (default 4096 .. 4194304)
#   --out       where tables.md and raw.csv go (default BUILD/hp-bench-results)
#
# Table per provider and p: per block size the time per superstep (us) of
# hpput zero-copy, hpput copying, MPI_Put + fence, and the same for gets,
# with the ratios zero-copy / copying and zero-copy / MPI, and bytes_copied
# per superstep on pid 0 for both BSPk columns; then one for bsp_put: staged,
# through the batch, MPI_Put + fence, the ratios, bytes_copied on pid 0.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROVIDERS=shm,tcp PROCS=2,4 ROUNDS=1 MIN=4096 MAX=4194304 BUILD="$ROOT/build" OUT=
usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --provider) PROVIDERS=$2; shift 2 ;;
    --procs) PROCS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --min) MIN=$2; shift 2 ;;
    --max) MAX=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "hp_bench.sh: unknown option $1" >&2; usage 2 >&2 ;;
  esac
done
[ -n "$OUT" ] || OUT="$BUILD/hp-bench-results"
command -v mpirun >/dev/null || { echo "hp_bench.sh: mpirun not found: run ./install-deps.sh (openmpi-bin)" >&2; exit 2; }
[ -f "$BUILD/CMakeCache.txt" ] || cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j2 --target bspkrun bsplib_hp_bench bsplib_mpi_hp_bench >/dev/null
BIN="$BUILD/bench/bsplib"
mkdir -p "$OUT"
RAW="$OUT/raw.csv"
: >"$RAW"
NCORES=$(nproc)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
FAILED=0
# one PROVIDER ROUND P LABEL COMMAND...: run it, keep its csv lines as LABEL.
one() {
  prov=$1 round=$2 p=$3 label=$4; shift 4
  echo "hp_bench.sh: $prov p=$p round $round: $label" >&2
  if ! timeout --foreground 300 "$@" >"$OUT/last.out" 2>"$OUT/last.err"; then
    echo "hp_bench.sh: FAILED: $label on $prov p=$p (stderr below)" >&2
    tail -20 "$OUT/last.err" >&2
    FAILED=1
  fi
  grep '^csv,' "$OUT/last.out" | sed "s/^csv,[a-z]*,/$prov,$round,$label,/" >>"$RAW" || true
}
for prov in $(echo "$PROVIDERS" | tr , ' '); do
  case $prov in
    shm) env="BSPK_SHM_RINGS=auto BSPK_COUNT_EXCHANGE=auto"; mca="--mca pml ob1 --mca btl self,vader --mca osc rdma,pt2pt" ;;
    tcp) env="BSPK_SHM_RINGS=off BSPK_COUNT_EXCHANGE=messages"; mca="--mca pml ob1 --mca btl self,tcp --mca osc pt2pt" ;;
    *) echo "hp_bench.sh: unknown provider $prov (shm or tcp)" >&2; exit 2 ;;
  esac
  for round in $(seq 1 "$ROUNDS"); do
    for p in $(echo "$PROCS" | tr , ' '); do
      if [ "$p" -le "$NCORES" ]; then bind=core mbind="--bind-to core"; else bind=auto mbind="--bind-to none --oversubscribe"; fi
      # shellcheck disable=SC2086
      one "$prov" "$round" "$p" zc env $env BSPK_PUT_ZEROCOPY_MIN=64K "$BUILD/bspkrun" -n "$p" --provider "$prov" --bind $bind "$BIN/hp_bench" --min "$MIN" --max "$MAX"
      # shellcheck disable=SC2086
      one "$prov" "$round" "$p" copy env $env BSPK_HP_ZEROCOPY_MIN=off BSPK_PUT_ZEROCOPY_MIN=off "$BUILD/bspkrun" -n "$p" --provider "$prov" --bind $bind "$BIN/hp_bench" --min "$MIN" --max "$MAX"
      # shellcheck disable=SC2086
      one "$prov" "$round" "$p" mpi mpirun -n "$p" $mbind $mca "$BIN/mpi_hp_bench" --min "$MIN" --max "$MAX"
    done
  done
done
python3 - "$RAW" "$OUT/tables.md" <<'PY'
import csv, statistics, sys
from collections import defaultdict
raw, out = sys.argv[1], sys.argv[2]
cell = defaultdict(list)   # (prov, label, variant, p, n) -> [seconds]
copied = {}
bad = []
for row in csv.reader(open(raw)):
    prov, rnd, label, var, p, n, t, cp, ok = row
    key = (prov, label, var, int(p), int(n))
    cell[key].append(float(t))
    copied[key] = float(cp)
    if ok != "1": bad.append(key)
lines = []
def us(k): return statistics.median(cell[k]) * 1e6 if k in cell else None
def f(x): return "-" if x is None else f"{x:.1f}" if x >= 10 else f"{x:.2f}"
def r(a, b): return "-" if a is None or b is None else f"{a / b:.2f}"
for prov, p in sorted({(k[0], k[3]) for k in cell}):
    lines.append(f"### {prov}, p = {p} (us per superstep; slowest process)\n")
    lines.append("| bytes | hpput zero-copy | hpput copying | MPI_Put + fence | zc / copying | zc / MPI | hpget zero-copy | hpget copying | MPI_Get + fence | zc / copying | zc / MPI | bytes_copied zc / copying |")
    lines.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in sorted({k[4] for k in cell if k[0] == prov and k[3] == p}):
        a, b, m = us((prov, "zc", "hpput", p, n)), us((prov, "copy", "hpput", p, n)), us((prov, "mpi", "put", p, n))
        c, d, g = us((prov, "zc", "hpget", p, n)), us((prov, "copy", "hpget", p, n)), us((prov, "mpi", "get", p, n))
        cz = copied.get((prov, "zc", "hpput", p, n), 0) + copied.get((prov, "zc", "hpget", p, n), 0)
        cc = copied.get((prov, "copy", "hpput", p, n), 0) + copied.get((prov, "copy", "hpget", p, n), 0)
        lines.append(f"| {n} | {f(a)} | {f(b)} | {f(m)} | {r(a, b)} | {r(a, m)} | {f(c)} | {f(d)} | {f(g)} | {r(c, d)} | {r(c, g)} | {cz:.0f} / {cc:.0f} |")
    lines.append("")
    lines.append(f"bsp_put, {prov}, p = {p}: staged (BSPK_PUT_ZEROCOPY_MIN=64K) against the batch (off)\n")
    lines.append("| bytes | bsp_put staged | bsp_put batch | MPI_Put + fence | staged / batch | staged / MPI | bytes_copied staged / batch |")
    lines.append("|---:|---:|---:|---:|---:|---:|---:|")
    for n in sorted({k[4] for k in cell if k[0] == prov and k[3] == p}):
        a, b, m = us((prov, "zc", "put", p, n)), us((prov, "copy", "put", p, n)), us((prov, "mpi", "put", p, n))
        cz, cc = copied.get((prov, "zc", "put", p, n), 0), copied.get((prov, "copy", "put", p, n), 0)
        lines.append(f"| {n} | {f(a)} | {f(b)} | {f(m)} | {r(a, b)} | {r(a, m)} | {cz:.0f} / {cc:.0f} |")
    lines.append("")
if bad: lines.append("NOT VERIFIED: " + ", ".join(map(str, bad)))
text = "\n".join(lines)
open(out, "w").write(text + "\n")
print(text)
sys.exit(1 if bad else 0)
PY
[ $? = 0 ] || FAILED=1
echo "hp_bench.sh: tables in $OUT/tables.md, every measurement in $RAW" >&2
exit $FAILED
