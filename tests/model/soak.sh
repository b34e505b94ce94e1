#!/bin/bash
# tests/model/soak.sh N [options] [-- bspk_model options]
#
# Long randomized differential runs: N programs (seeds FROM..FROM+N-1) for
# every p in NP and every provider, in jobs of BATCH seeds; each job draws its
# frame size from FRAMES in turn. A difference (or a job that fails without
# one: crash, time-out) is recorded with its replay command and log, and the
# run goes on after the failing seed. Ends with a summary table; exit status 1
# if anything failed.
#
# Options: --build DIR (default: build next to the source tree), --from SEED
# (1), --batch B (50), --np "1 2 3 4 5 6 7 8", --providers "tcp shm",
# --frames "64 256 1024 4096 65536", --out DIR (soak-<date>).
# Anything after -- goes to bspk_model (e.g. --feature no-lookup-ptr-same-step).
set -u
here=$(cd "$(dirname "$0")" && pwd)
n=${1:?usage: soak.sh N [--build DIR] [--from SEED] [--batch B] [--np LIST] [--providers LIST] [--frames LIST] [--out DIR] [-- bspk_model options]}
shift
build=$here/../../build
from=1
batch=50
nps="1 2 3 4 5 6 7 8"
provs="tcp shm"
frames="64 256 1024 4096 65536"
out=soak-$(date +%Y%m%d-%H%M%S)
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --from) from=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --np) nps=$2; shift 2 ;;
    --providers) provs=$2; shift 2 ;;
    --frames) frames=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "soak.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
bspkrun=$(cd "$build" && pwd)/bspkrun
model=$(cd "$build" && pwd)/tests/model/bspk_model
[ -x "$bspkrun" ] && [ -x "$model" ] || { echo "soak.sh: no $bspkrun or $model (build first)" >&2; exit 2; }
mkdir -p "$out"
read -r -a flist <<<"$frames"
summary=$out/summary.txt
failures=$out/failures.txt
: >"$failures"
printf '%-4s %-9s %-9s %-12s %-28s %s\n' p provider programs supersteps "frame sizes" differences >"$summary"
total_prog=0 total_diff=0 job=0 start=$(date +%s)
for p in $nps; do
  for prov in $provs; do
    progs=0 steps=0 diffs=0 used=""
    seed=$from
    last=$((from + n - 1))
    while [ "$seed" -le "$last" ]; do
      cnt=$((last - seed + 1))
      [ "$cnt" -gt "$batch" ] && cnt=$batch
      frame=${flist[$((job % ${#flist[@]}))]}
      job=$((job + 1))
      case " $used " in *" $frame "*) ;; *) used="$used $frame" ;; esac
      log=$out/job-p$p-$prov-f$frame-s$seed.log
      BSPK_FRAME_SIZE=$frame BSPK_SYNC_TIMEOUT=60 timeout --foreground 900 "$bspkrun" -n "$p" --provider "$prov" --timeout 850 \
        "$model" --seed "$seed" --seeds "$cnt" "${extra[@]}" >"$log" 2>&1
      rc=$?
      if [ $rc -eq 0 ] && grep -q " 0 differences" "$log"; then
        progs=$((progs + cnt))
        steps=$((steps + $(sed -n 's/.* \([0-9]*\) supersteps.*/\1/p' "$log" | head -1)))
        rm -f "$log"
        seed=$((seed + cnt))
        continue
      fi
      # Which seed failed: the DIFFERENCE line names it; else the whole job is suspect.
      bad=$(sed -n 's/.*DIFFERENCE seed=\([0-9]*\).*/\1/p' "$log" | head -1)
      diffs=$((diffs + 1))
      if [ -n "$bad" ]; then
        progs=$((progs + bad - seed + 1))
        {
          echo "== p=$p provider=$prov frame=$frame seed=$bad (job seeds $seed..$((seed + cnt - 1)), log $log)"
          grep -A1 "DIFFERENCE" "$log" | head -2
          grep "replay:\|shrink:" "$log" | head -2
        } >>"$failures"
        seed=$((bad + 1))
      else
        {
          echo "== p=$p provider=$prov frame=$frame job seeds $seed..$((seed + cnt - 1)) failed without a difference (exit $rc, log $log):"
          tail -5 "$log"
          echo "  replay: BSPK_FRAME_SIZE=$frame BSPK_SYNC_TIMEOUT=60 $bspkrun -n $p --provider $prov $model --seed $seed --seeds $cnt ${extra[*]}"
        } >>"$failures"
        seed=$((seed + cnt))
      fi
    done
    printf '%-4s %-9s %-9s %-12s %-28s %s\n' "$p" "$prov" "$progs" "$steps" "${used# }" "$diffs" >>"$summary"
    total_prog=$((total_prog + progs))
    total_diff=$((total_diff + diffs))
    echo "soak: p=$p $prov: $progs programs, $diffs differences ($(($(date +%s) - start)) s)"
  done
done
echo
cat "$summary"
echo "total: $total_prog programs, $total_diff differences, $(($(date +%s) - start)) s; features: ${extra[*]:-defaults}"
if [ -s "$failures" ]; then
  echo
  echo "failures ($failures):"
  cat "$failures"
  exit 1
fi
exit 0
