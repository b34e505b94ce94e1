#!/usr/bin/env bash
# slurm_netns.sh BUILD -- BSPk across 3 "hosts": network namespaces on a
# bridge, one slurmd per host, slurmctld and srun in the root namespace (all
# started here, torn down by PID at exit, also when a check fails).
#  - srun -N 3 -n 6 with PMIx, PMI2 and plain srun runs the examples over the
#    tcp provider (never shm: the job spans hosts);
#  - fault injection: a process killed on one host, a host whose link goes down
#    (default failure time-out, 10 s), the hub's host silently dropping all
#    input (BSPK_FAILURE_TIMEOUT=4), under plain srun a host cut off for good
#    (a process cancels the step: Slurm would wait for the host), and 1% / 5%
#    packet loss on one host (runs must complete with correct results; the
#    time cost is printed).
BUILD=${1:?usage: slurm_netns.sh BUILD_DIR}
source "$(dirname "$0")/lib.sh"
need_slurm
for c in ip nft; do command -v $c >/dev/null || skip "$c not installed (run ./install-deps.sh)"; done
export SLURM_TEST_DIR=/tmp/bspk-ctest-slurm-mn SLURM_TEST_PORT=16927
export NETNS_PREFIX=bh NETNS_SUBNET=10.77.9 NETNS_BRIDGE=bspkbr9
ip netns add bspk-probe 2>/dev/null && ip netns del bspk-probe || skip "cannot create network namespaces here"

NET=$HERE/netns-cluster.sh
cleanup() {
  "$HERE/stop-slurm.sh" >/dev/null 2>&1
  "$NET" down 3 >/dev/null 2>&1
}
trap cleanup EXIT
cleanup
"$NET" up 3 || { echo "FAIL: namespaces did not come up"; exit 1; }
"$HERE/start-slurm.sh" --netns 3 >/dev/null || { echo "FAIL: the 3-host test cluster did not start"; exit 1; }
source "$SLURM_TEST_DIR/env.sh"
export BSPK_VERBOSE=1
SRUN=(srun --immediate=10 -N 3 -n 6)

# ---- examples across hosts --------------------------------------------------
for mpi in pmix pmi2 none; do
  kind=$mpi; [[ $mpi == none ]] && kind=slurm
  run "radix_sort -N 3 -n 6 --mpi=$mpi" 120 "${SRUN[@]}" --mpi=$mpi "$RADIX" --n 2000000
  expect_rc 0; expect "order ok, checksum ok"; expect "6 processes on 3 hosts, bootstrap $kind,"
  expect "provider=net domain=eth0"; expect_not "provider=shm"
done
run "mp_template -N 3 -n 6 --mpi=pmix" 120 "${SRUN[@]}" --mpi=pmix "$MPT" --steps 20 --mode counted
expect_rc 0; expect_count 6 "^mp_template pid=[0-5]: .*: ok$"; expect "provider=net"; expect_not "provider=shm"
# Chosen by capability: no RDMA-class provider here offers what BSPk needs
# across hosts, so tcp; and a provider forced by name that cannot reach other
# hosts (shm) is refused by the capability it lacks.
expect "\(several hosts; not offered with BSPk's capabilities: verbs;ofi_rxm, cxi, efa, opx, psm3\)"
run "shm across hosts is refused" 60 "${SRUN[@]}" --mpi=pmix env BSPK_PROVIDER=shm "$MPT" --steps 2 --mode counted
expect_fail; expect "provider 'shm' lacks what BSPk needs: FI_REMOTE_COMM \(processes on other hosts\)"
# tcp is libfabric's native RDM endpoint (net) where offered; rxm over tcp,
# what it was before and is on a libfabric without net, still runs.
run "tcp;ofi_rxm across hosts" 120 "${SRUN[@]}" --mpi=pmix env "BSPK_PROVIDER=tcp;ofi_rxm" "$RADIX" --n 2000000
expect_rc 0; expect "order ok, checksum ok"; expect "provider=tcp;ofi_rxm domain=eth0"
run "udp;ofi_rxd across hosts" 120 "${SRUN[@]}" --mpi=pmix env "BSPK_PROVIDER=udp;ofi_rxd" "$MPT" --steps 20 --mode counted
expect_rc 0; expect_count 6 "^mp_template pid=[0-5]: .*: ok$"; expect "provider=udp;ofi_rxd domain=eth0"

# ---- failures -----------------------------------------------------------------
# steady_job NAME LOG [ENV...]: start the 'steady' scenario on 3 hosts in the
# background (srun --mpi=$MPI, default pmix); sets SPID (srun) and PIDS (the
# 6 processes' os pids, by pid).
steady_job() {
  local log=$2
  : >"$log"   # a stale log from an earlier run would name old pids
  shift 2
  timeout -k 5 120 "${SRUN[@]}" --mpi="${MPI:-pmix}" env "$@" "$SCEN" steady 60 >"$log" 2>&1 &
  SPID=$!
  local k
  for ((k = 0; k < 300; k++)); do (($(grep -c "^steady pid .* running" "$log") >= 6)) && break; sleep 0.1; done
  PIDS=()
  for r in 0 1 2 3 4 5; do PIDS+=("$(sed -n "s/^steady pid $r os pid \([0-9]*\) on .* running/\1/p" "$log")"); done
  # VICTIM: a pid other than 0 (the hub) running on host bh2
  VICTIM=$(sed -n 's/^steady pid \([1-5]\) os pid [0-9]* on bh2 running/\1/p' "$log" | head -1)
  sleep 1.5  # well inside the run
}
finish_job() {  # finish_job NAME LOG GONE
  local rc
  wait "$SPID"; rc=$?
  step "$1" "srun ... steady 60 (every process gone after $3 s)" "$rc" "$3" \
    "$(grep -v "^steady pid .* running" "$2")"
}

# A process on host bh2 killed with SIGKILL mid-run.
log=$BUILD/netns-kill.log
steady_job kill "$log"
kill -9 "${PIDS[$VICTIM]}"
gone=$(wait_gone 20 "${PIDS[@]}")
finish_job "SIGKILL on a remote host" "$log" "$gone"
expect_within 10 "$gone" "every process ended"; expect_fail
expect_count 5 "^bspk: ending pid [0-5] \(superstep [0-9]+\): pid $VICTIM \(os pid ${PIDS[$VICTIM]} on bh2\) died"

# Host bh2's link goes down mid-run (default time-out, 10 s). Its processes
# hear nothing from the hub and end; the hub declares them dead after 8 s.
log=$BUILD/netns-cut.log
steady_job cut "$log"
"$NET" cut 2
gone=$(wait_gone 25 "${PIDS[@]}")
"$NET" uncut 2
finish_job "link of host bh2 down" "$log" "$gone"
expect_within 10 "$gone" "every process ended (default BSPK_FAILURE_TIMEOUT=10)"; expect_fail
expect "^bspk: ending pid [0-5] \(superstep [0-9]+\): pid [1-5] \(os pid [0-9]+ on bh2\) has not been heard from for [0-9.]+ s"

# The hub's host (bh0) silently drops everything it receives (a hung node);
# BSPK_FAILURE_TIMEOUT=4.
log=$BUILD/netns-blackhole.log
steady_job blackhole "$log" BSPK_FAILURE_TIMEOUT=4
"$NET" blackhole 0
gone=$(wait_gone 20 "${PIDS[@]}")
"$NET" unblackhole 0
finish_job "host bh0 (the hub's) drops all input" "$log" "$gone"
expect_within 4 "$gone" "every process ended (BSPK_FAILURE_TIMEOUT=4)"; expect_fail
expect "^bspk: ending pid [1-5] \(superstep [0-9]+\): pid 0 \(os pid [0-9]+ on bh0, port [0-9]+; the job hub\) has not been heard from"
expect "^bspk: ending pid 0 \(superstep [0-9]+\): no process on another host has been heard from for [0-9.]+ s"

# Plain srun (no PMI plugin) waits for every task, and a host cut off for good
# never reports its tasks' end: Slurm would wait until it declares the host
# down (SlurmdTimeout=30 here: srun ended 50 s after the cut of the hub's
# host, 2026-12-07). A process that can still reach slurmctld cancels the
# step instead: the hub's, when another host is cut off; the first task of
# the second node, when the hub's host is. The link stays down until srun
# has ended.
for host in 2 0; do
  log=$BUILD/netns-plain-cut$host.log
  MPI=none steady_job "plain-cut$host" "$log"
  "$NET" cut $host
  t0=$(now)
  while kill -0 "$SPID" 2>/dev/null && awk -v a="$t0" -v b="$(now)" 'BEGIN{exit !(b-a < 60)}'; do sleep 0.1; done
  secs=$(elapsed "$t0")
  "$NET" uncut $host
  finish_job "plain srun: link of host bh$host down for good" "$log" "$secs"
  expect_within 30 "$secs" "srun ended (the link still down)"; expect_fail
  if [[ $host == 0 ]]; then
    expect "^bspk: ending pid [1-5] \(superstep [0-9]+\): pid 0 \(os pid [0-9]+ on bh0, port [0-9]+; the job hub\) has not been heard from"
    expect "^bspk: pid [1-5]: pid 0 \(os pid [0-9]+ on bh0, port [0-9]+; the job hub\) cannot end by itself \(stopped, or its host cut off\), and srun waits for every process: cancelling job step [0-9]+\.[0-9]+ \(scancel\)"
  else
    expect "^bspk: ending pid [0-5] \(superstep [0-9]+\): pid [1-5] \(os pid [0-9]+ on bh2\) has not been heard from"
    expect "^bspk: pid 0 \(the job hub\): pid [1-5] \(os pid [0-9]+ on bh2\).* cannot end by itself \(stopped, or its host cut off\), and srun waits for every process: cancelling job step [0-9]+\.[0-9]+ \(scancel\)"
  fi
done

# Packet loss on host bh1 (nftables random drop; tcp retransmits): results
# must stay correct; the cost is reported against the loss-free run.
# Slurm's PMIx plugin connects its step daemons to each other directly, with
# time-outs of its own; under loss a dropped packet there can fail the step
# before any BSPk process starts ("pmixp_dconn ... Cannot establish direct
# connection", seen once in about ten runs at 5%). That is Slurm's
# handshake, not what this test checks: such a run is retried once, and
# the retry is printed.
run_lossy() {
  run "$@"
  if [[ $RC != 0 ]] && has "pmixp_dconn|Cannot establish (direct )?connection"; then
    echo "--- $NAME: Slurm's PMIx servers could not connect under loss (rc=$RC); retrying once"
    run "$@"
  fi
}
declare -A T
for loss in 0 1 5; do
  [[ $loss == 0 ]] && "$NET" heal 3 || "$NET" impair-host 1 --loss "$loss%" 2>/dev/null
  run_lossy "radix_sort with ${loss}% loss on bh1" 180 "${SRUN[@]}" --mpi=pmix "$RADIX" --n 4000000
  expect_rc 0; expect "order ok, checksum ok"
  T[radix$loss]=$(sed -n 's/.*processes: \([0-9.]*\) s,.*/\1/p' <<<"$OUT")
  T[radixw$loss]=$SECS
  run_lossy "mp_template with ${loss}% loss on bh1" 180 "${SRUN[@]}" --mpi=pmix "$MPT" --steps 30 --mode counted
  expect_rc 0; expect_count 6 "^mp_template pid=[0-5]: .*: ok$"
  T[mpt$loss]=$SECS
done
"$NET" heal 3
echo "=== cost of packet loss on one of 3 hosts (one run each; ratio to the loss-free run):"
for loss in 1 5; do
  awk -v l="$loss" -v r0="${T[radix0]}" -v r="${T[radix$loss]}" -v w0="${T[radixw0]}" -v w="${T[radixw$loss]}" \
      -v m0="${T[mpt0]}" -v m="${T[mpt$loss]}" 'BEGIN{
    printf "  %d%% loss: radix_sort 4M keys %.3f s vs %.3f s (%.2fx), whole srun %.2f s vs %.2f s (%.2fx); mp_template srun %.2f s vs %.2f s (%.2fx)\n",
      l, r, r0, r/r0, w, w0, w/w0, m, m0, m/m0 }'
done

# Nothing left behind in the hosts: no BSPk process, no shm region.
NAME="clean-up" CMD="ip netns pids" OUT= RC= SECS=
left=$(for i in 0 1 2; do ip netns pids bh$i 2>/dev/null; done | while read -r p; do
  [[ $(cat /proc/$p/comm 2>/dev/null) == scenarios || $(cat /proc/$p/comm 2>/dev/null) == radix_sort ]] && echo "$p"; done | wc -l)
if [[ $left == 0 ]]; then pass "no BSPk process left on the hosts"; else bad "$left BSPk processes left on the hosts"; fi
finish
