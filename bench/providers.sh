#!/bin/sh
# bench/providers.sh [--build DIR] [--time S] [--providers "shm tcp tcp;ofi_rxm udp;ofi_rxd"] [--procs "2 4"]
#
# bench/pingpong (p = 2) and bench/sync (each p) on every provider tested
# here, each against raw libfabric on the same provider in the same process
# (bench/rawfab.h). Small messages go through the provider
# (BSPK_SHM_RINGS=off), so that the row measures the provider BSPk runs on;
# the count exchange stays as the job layout picks it (shared-memory board on
# one host). Prints each benchmark's own table, then one summary table per
# provider: half round trip at 8 B and bandwidth at 64 KiB and 1 MiB (BSPk,
# raw, ratio), and the empty superstep per sync mode against the raw barrier.
# Timing runs: nothing else should run on the machine meanwhile.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../build
t=0.3
provs="shm tcp tcp;ofi_rxm udp;ofi_rxd"
procs="2 4"
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --time) t=$2; shift 2 ;;
    --providers) provs=$2; shift 2 ;;
    --procs) procs=$2; shift 2 ;;
    *) echo "providers.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
run=$build/bspkrun
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
IFS_SAVE=$IFS
for prov in $provs; do
  tag=$(echo "$prov" | tr ';' '_')
  echo "=== provider $prov: pingpong, p = 2"
  if ! BSPK_SHM_RINGS=off timeout --foreground 300 "$run" -n 2 --provider "$prov" "$build/bench/pingpong" --max 1048576 \
      --time "$t" >"$out/pp.$tag" 2>&1; then
    echo "pingpong on $prov failed:"; status=1
  fi
  cat "$out/pp.$tag"
  for p in $procs; do
    echo "=== provider $prov: sync, p = $p"
    if ! BSPK_SHM_RINGS=off timeout --foreground 300 "$run" -n "$p" --provider "$prov" "$build/bench/sync" --time "$t" \
        >"$out/sync.$tag.$p" 2>&1; then
      echo "sync on $prov at p = $p failed:"; status=1
    fi
    cat "$out/sync.$tag.$p"
  done
done
IFS=$IFS_SAVE
# Summary: one Markdown row per provider (ratios are BSPk / raw: latency and
# superstep time, lower is better; bandwidth, higher is better).
echo
echo "=== summary (BSPk against raw libfabric on the same provider, same process)"
printf '| provider | 8 B half round trip: raw, BSPk (x) | 64 KiB: raw, BSPk MB/s (x) | 1 MiB: raw, BSPk MB/s (x) |'
for p in $procs; do printf ' p=%s empty superstep expect0 / counted, us (x raw barrier) |' "$p"; done
echo
printf '|---|---|---|---|'; for p in $procs; do printf '%s' '---|'; done; echo
for prov in $provs; do
  tag=$(echo "$prov" | tr ';' '_')
  row=$(awk -v prov="$prov" '
    $1 == 8 { lat = sprintf("%.2f, %.2f us (%.2fx)", $2, $3, $4) }
    $1 == 65536 { b64 = sprintf("%.0f, %.0f (%.2fx)", $5, $6, $6 / $5) }
    $1 == 1048576 { b1m = sprintf("%.0f, %.0f (%.2fx)", $5, $6, $6 / $5) }
    END { printf "| %s | %s | %s | %s |", prov, lat ? lat : "-", b64 ? b64 : "-", b1m ? b1m : "-" }' "$out/pp.$tag")
  for p in $procs; do
    row=$row$(awk '
      $2 == "raw" { raw = $3 } $2 == "expect0" { e = $3; ex = $4 } $2 == "counted" { c = $3; cx = $4 }
      END { if (c) printf " %.2f (%.2fx) / %.2f (%.2fx), raw %.2f |", e, ex, c, cx, raw; else printf " - |" }'       "$out/sync.$tag.$p")
  done
  echo "$row"
done
exit $status
