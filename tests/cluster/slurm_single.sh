#!/usr/bin/env bash
# slurm_single.sh BUILD -- BSPk under a real single-node Slurm cluster
# (slurmctld + slurmd + munged, started here and torn down by PID at exit,
# also when a check fails): PMIx, PMI2 and plain-srun bootstraps running the
# radix-sort and mp_template examples, a BSPlib program, an sbatch job, core binding, and the
# failure cases (SIGKILL mid-superstep, exit without bspk_finalize, finalize
# while others sync, bspk_abort, a process of another BSPk version, a process
# stopped under plain srun), and a job suspended and resumed (scontrol suspend).
BUILD=${1:?usage: slurm_single.sh BUILD_DIR}
source "$(dirname "$0")/lib.sh"
need_slurm

cleanup() { "$HERE/stop-slurm.sh" >/dev/null 2>&1; }
trap cleanup EXIT
"$HERE/start-slurm.sh" >/dev/null || { echo "FAIL: the test cluster did not start (log above)"; exit 1; }
source "$SLURM_TEST_DIR/env.sh"
export BSPK_VERBOSE=1
SRUN=(srun --immediate=10 -n 4)   # never queue for ever

# ---- bootstraps x examples ------------------------------------------------
for mpi in pmix pmi2 none; do
  kind=$mpi; [[ $mpi == none ]] && kind=slurm
  run "radix_sort srun --mpi=$mpi" 120 "${SRUN[@]}" --mpi=$mpi "$RADIX" --n 2000000
  expect_rc 0; expect "order ok, checksum ok"; expect "bootstrap $kind,"; expect "provider=shm"
  run "mp_template srun --mpi=$mpi" 120 "${SRUN[@]}" --mpi=$mpi "$MPT" --steps 40 --mode counted
  expect_rc 0; expect_count 4 "^mp_template pid=[0-3]: .*: ok$"; expect "bootstrap $kind,"
done

# ---- a BSPlib program under srun: bsp_begin(bsp_nprocs()) takes the step's tasks
for mpi in pmix pmi2; do
  run "BSPlib samplesort srun --mpi=$mpi" 120 "${SRUN[@]}" --mpi=$mpi "$BUILD/examples/bsplib/samplesort" 20011
  expect_rc 0; expect "samplesort ok"; expect "bootstrap $mpi,"
done

# BSPK_BOOTSTRAP overrides the automatic choice: plain Slurm under --mpi=pmix.
run "BSPK_BOOTSTRAP=slurm under --mpi=pmix" 120 "${SRUN[@]}" --mpi=pmix env BSPK_BOOTSTRAP=slurm "$RADIX" --n 1000000
expect_rc 0; expect "bootstrap slurm,"; expect "order ok, checksum ok"

# Plain srun finds the hub by the first node's name, or by BSPK_HUB_HOST; a
# hub host no resolver knows is named before the start-up time-out ends the
# processes (found in a Debian 12 without /etc/hosts).
run "plain srun, BSPK_HUB_HOST=127.0.0.1" 60 "${SRUN[@]}" --mpi=none env BSPK_HUB_HOST=127.0.0.1 "$MPT" --steps 4 --mode counted
expect_rc 0; expect_count 4 "^mp_template pid=[0-3]: .*: ok$"
run "plain srun, a hub host that does not resolve" 60 "${SRUN[@]}" --mpi=none \
  env BSPK_HUB_HOST=no-such-node.invalid BSPK_START_TIMEOUT=6 "$MPT" --steps 4 --mode counted
expect_fail
expect "cannot reach the job hub: its host, the step's first node, is not known to this node's resolver \(no-such-node.invalid: "

# ---- binding: 2 processes on this 2-core node get a core each ------------
run "bindings" 60 srun --immediate=10 -n 2 --mpi=pmix env BSPK_REPORT_BINDINGS=1 "$SCEN" hello
expect_rc 0
pus=$(sed -n 's/^bspk: pid [01] .*: bound to PUs \([0-9,-]*\),.*/\1/p' <<<"$OUT" | sort -u | wc -l)
if [[ $pus == 2 ]]; then pass "bindings: two processes, two different cores"; else bad "bindings: expected 2 distinct core sets, got $pus"; fi
run "bindings oversubscribed" 60 srun --immediate=10 -n 4 --mpi=pmix env BSPK_REPORT_BINDINGS=1 "$SCEN" hello
# (more processes than cores: bound round-robin, two per core)
expect_rc 0; expect_count 4 "bound to PUs [0-9]+, .*4 processes share 2 cores here, round-robin"
pus=$(sed -n 's/^bspk: pid [0-3] .*: bound to PUs \([0-9,-]*\),.*/\1/p' <<<"$OUT" | sort | uniq -c | awk '{print $1}' | sort -u | tr '\n' ' ')
if [[ $pus == "2 " ]]; then pass "bindings oversubscribed: two processes per core"; else bad "bindings oversubscribed: processes per core set: $pus"; fi

# ---- sbatch: the deployment example, as a user submits it -----------------
out=$BUILD/slurm-radix-test.out
rm -f "$out"
job=$(cd "$SRC" && BSPK_APP=$RADIX timeout 30 sbatch --parsable --time=2 -N 1 -n 4 -o "$out" \
        examples/slurm/radix_sort.sbatch --n 1000000)
NAME="sbatch radix_sort.sbatch"
t0=$(now); state=
for ((k = 0; k < 600; k++)); do
  state=$(scontrol show job "$job" 2>/dev/null | sed -n 's/.*JobState=\([A-Z]*\).*/\1/p')
  [[ $state == COMPLETED || $state == FAILED || $state == CANCELLED || $state == TIMEOUT ]] && break
  sleep 0.1
done
step "$NAME" "sbatch ... examples/slurm/radix_sort.sbatch (job $job, ended $state)" "$state" "$(elapsed "$t0")" \
  "$(cat "$out" 2>/dev/null)"
[[ $state == COMPLETED ]] && pass "$NAME: job $job COMPLETED" || bad "$NAME: job $job ended $state"
expect "order ok, checksum ok"; expect "1000000 keys on 4 processes"

# ---- the sync time-out runs only while nobody computes ----------------------
# (the job hub's heartbeats name the processes computing in the earliest
# supersteps: Bootstrap::computing_peer). A process slower than
# BSPK_SYNC_TIMEOUT is not a fault; a too large bspk_expect still is.
for mpi in pmix none; do
  run "slow process srun --mpi=$mpi" 60 "${SRUN[@]}" --mpi=$mpi env BSPK_SYNC_TIMEOUT=1 "$SCEN" slow_peer
  expect_rc 0; expect_count 4 "^slow_peer ok$"; expect_not "no progress for"
done
run "too large bspk_expect srun --mpi=pmix" 60 "${SRUN[@]}" --mpi=pmix env BSPK_SYNC_TIMEOUT=2 "$SCEN" err_expect_fewer
[[ $RC != 0 ]] && pass "$NAME: exit status $RC" || bad "$NAME: exit status 0, expected a failure"
expect "no progress for 2 s in superstep 0"
# pid 0 over-declares, times out at 3 s, its bspk_finalize returns that error
# and it takes 2 s more before exiting (a program writing its results, a
# sanitizer's leak check). The hub's heartbeats name it as failed, so the
# others' waits (3 s + 1 s grace) hold for its exit: its error is the job's
# only one. (Before 2026-12-06 the hub did not relay it and the others' "count
# exchange has not completed" came too: 3 errors, the check on line 1226.)
for mpi in pmix none; do
  run "failed process lingers (--mpi=$mpi)" 60 srun --immediate=10 -n 3 --mpi=$mpi env BSPK_SYNC_TIMEOUT=3 "$SCEN" err_over_finalize alike
  expect_fail; expect_count 1 "bspk: error"; expect "bspk_expect\(4\) declared, 3 message\(s\) arrived"
  expect "exited after its bspk_finalize failed"; expect_not "count exchange has not completed"
done

# ---- a suspended job resumes ---------------------------------------------------
# scontrol suspend / resume (SIGSTOP, later SIGCONT, to every process) for 6 s
# against a failure time-out of 3 s and a sync time-out of 2 s: neither the
# hub nor a process counts its own pause as the others' silence
# (base/clock.h kPauseGap). (Until 2026-12-04 every process ended with "has
# not been heard from for 6.1 s" right after the resume.)
log=$BUILD/slurm-suspend.log
: >"$log"
timeout -k 5 90 "${SRUN[@]}" --mpi=pmix env BSPK_FAILURE_TIMEOUT=3 BSPK_SYNC_TIMEOUT=2 "$SCEN" run_for 8 >"$log" 2>&1 &
spid=$!
NAME="scontrol suspend and resume (pmix)"
jobid=
for ((k = 0; k < 100; k++)); do
  jobid=$(squeue -h -o %i -t R 2>/dev/null | head -1)
  [[ -n $jobid ]] && break
  sleep 0.1
done
sleep 2
t0=$(now)
if [[ -n $jobid ]] && scontrol suspend "$jobid"; then
  sleep 6
  scontrol resume "$jobid"
  wait $spid; rc=$?
  step "$NAME" "srun ... run_for 8; scontrol suspend $jobid; 6 s; scontrol resume $jobid" "$rc" "$(elapsed "$t0")" \
    "$(cat "$log")"
  expect_rc 0; expect "^run_for ok after [0-9]+ supersteps"; expect_not "has not been heard from|no progress for"
else
  kill "$spid" 2>/dev/null; wait $spid; rc=$?
  step "$NAME" "srun ... run_for 8 (job '$jobid' to be suspended)" "$rc" 0 "$(cat "$log")"
  bad "$NAME: could not suspend the job ('$jobid')"
fi

# ---- failures ---------------------------------------------------------------
# SIGKILL in the middle of superstep 3 (pid 3 kills itself while the others
# wait in bspk_sync): everyone else ends within 10 s naming pid 3 and the
# superstep; srun exits non-zero. Each process names its own superstep: 3, or
# 2 for one that had not yet seen superstep 2's counted barrier complete when
# the news came (pid 3 left superstep 2 before it died, which needs only that
# the others entered its barrier; seen under load).
run "SIGKILL mid-superstep (pmix)" 60 "${SRUN[@]}" --mpi=pmix "$SCEN" killed
expect_fail; expect_within 10 "$SECS" "the whole job ended"
expect_count 3 "^bspk: ending pid [0-2] \(superstep [23]\): pid 3 \(os pid [0-9]+ on [^)]*\) died \(killed or crashed"
run "SIGKILL mid-superstep (plain srun)" 60 "${SRUN[@]}" --mpi=none "$SCEN" killed
expect_fail; expect_within 10 "$SECS" "the whole job ended"; expect "ending pid [0-2] \(superstep [23]\): pid 3 \(os pid [0-9]+ on [^)]*\) died"

# A process killed from outside while it computes (not in a sync).
# start_steady NAME MPI LOG: a 4-process `steady 30` job in the background,
# to be killed: sets NAME, spid and pids (its os pids). Returns 1, with the
# step recorded as failed, when the job did not report 4 running processes
# within 20 s (srun --immediate gives up when the previous step's resources
# are still being released: say so instead of failing on an unset pid).
start_steady() {
  NAME=$1 log=$3
  : >"$log"   # emptied here: the background job opens it later, and a stale log names old pids
  timeout -k 5 60 "${SRUN[@]}" --mpi="$2" "$SCEN" steady 30 >"$log" 2>&1 &
  spid=$!
  mapfile -t pids < <(job_pids "$log" 4 20)
  ((${#pids[@]} >= 4)) && return 0
  kill "$spid" 2>/dev/null; wait $spid; rc=$?
  step "$NAME" "srun ... steady 30 (to be killed)" "$rc" 20 "$(cat "$log")"
  bad "$NAME: the job did not report 4 running processes within 20 s"
  return 1
}
if start_steady "kill -9 from outside (pmi2)" pmi2 "$BUILD/slurm-kill.log"; then
  sleep 1
  t0=$(now); kill -9 "${pids[1]}"
  gone=$(wait_gone 15 "${pids[@]}")
  wait $spid; rc=$?
  step "$NAME" "kill -9 ${pids[1]} of srun ... steady 30 (all gone after $gone s)" "$rc" "$gone" "$(cat "$log")"
  expect_within 10 "$gone" "every process ended"; expect_fail
  expect "^bspk: ending pid [0-3] \(superstep [0-9]+\): pid [0-3] \(os pid ${pids[1]} on [^)]*\) died .*its last report: superstep [0-9]+"
fi

# A process stopped (kill -STOP) under plain srun, which waits for every task
# (without -K): the others end after BSPK_FAILURE_TIMEOUT naming it, and the
# job hub's process cancels the step, so that srun does not wait for ever
# (before 2026-12-06 it did; srun --mpi=pmix ends the step by itself). Then
# the hub's own process stopped: the second task cancels (on a step of
# several nodes, the first task of the second node: slurm_netns.sh).
for victim in 2 0; do
  if start_steady "stopped pid $victim (plain srun)" none "$BUILD/slurm-stop.log"; then
    vpid=$(sed -n "s/^steady pid $victim os pid \([0-9]*\) on .* running/\1/p" "$BUILD/slurm-stop.log")
    sleep 1
    t0=$(now); kill -STOP "$vpid"
    wait $spid; rc=$?
    secs=$(elapsed "$t0")
    gone=$(wait_gone 10 "${pids[@]}")
    step "$NAME" "kill -STOP $vpid (pid $victim) of srun --mpi=none ... steady 30 (srun ended after $secs s)" \
      "$rc" "$secs" "$(cat "$BUILD/slurm-stop.log")"
    expect_within 20 "$secs" "srun ended"; expect_fail
    expect_within 5 "$gone" "every process, the stopped one too, ended"
    expect "^bspk: ending pid [0-3] \(superstep [0-9]+\): pid $victim \(os pid $vpid on [^)]*\) has not been heard from for"
    expect "^bspk: pid [01]( \(the job hub\))?: pid $victim \(os pid $vpid on [^)]*\) cannot end by itself \(stopped, or its host cut off\), and srun waits for every process: cancelling job step [0-9]+\.[0-9]+ \(scancel\)"
    kill -9 "$vpid" 2>/dev/null  # (if the step was not cancelled)
  fi
done

# The whole step killed at once (kill -9 of every process, as `scancel -s
# KILL` or a cgroup's OOM killer does): no process survives to remove the
# shm regions (16 MiB each), so the next BSPk process of this user on the
# host removes them (fabric/shm_names.h), once they are 10 s old. Regions of
# earlier steps may still be there (a stopped process killed by scancel above
# leaves its own, younger than 10 s if this step starts soon after): this
# step's are the names that were not there before it started, and the next
# job removes those earlier ones too.
shm_slurm_names() { ls /dev/shm 2>/dev/null | grep '^bspk\.slurm\.' | sort || true; }
before_names=$(shm_slurm_names)
if start_steady "whole step killed, regions removed by the next job" pmix "$BUILD/slurm-killall.log"; then
  # (stopped first: killed one by one, the later ones would still see the
  # first die and clean up, as they should)
  kill -STOP "${pids[@]}"
  kill -9 "${pids[@]}"
  wait_gone 15 "${pids[@]}" >/dev/null
  wait $spid
  after_names=$(shm_slurm_names)
  left=$(comm -13 <(printf '%s\n' "$before_names") <(printf '%s\n' "$after_names") | grep -c . || true)
  all_left=$(printf '%s\n' "$after_names" | grep -c . || true)
  sleep 10.5
  run "$NAME" 60 srun --immediate=10 -n 2 --mpi=pmix env BSPK_VERBOSE=1 "$SCEN" hello
  expect_rc 0
  if [[ $left == 4 ]]; then pass "the killed step left its 4 regions"; else bad "$NAME: the killed step left $left regions, not 4"; fi
  # (both processes scan at start: they may share the removals)
  removed=$(sed -n 's|^bspk: pid [01] removed \([0-9]*\) shared-memory region(s) of killed processes from /dev/shm$|\1|p' <<<"$OUT" |
            awk '{n += $1} END {print n + 0}')
  if [[ $removed == "$all_left" ]]; then pass "the next job removed $all_left (4 of the killed step)"
  else bad "$NAME: the next job said it removed $removed regions, not $all_left (4 of the killed step, $((all_left - left)) older)"; fi
  now_left=$(ls /dev/shm 2>/dev/null | grep -c '^bspk\.slurm\.' || true)
  if [[ $now_left == 0 ]]; then pass "no regions left"; else bad "$NAME: $now_left regions left after the next job"; fi
fi

# exit() without bspk_finalize in superstep 2.
run "exit without bspk_finalize" 60 "${SRUN[@]}" --mpi=pmix "$SCEN" no_finalize
expect_fail; expect_within 10 "$SECS" "the whole job ended"
expect "pid 3 \(os pid [0-9]+ on [^)]*\) exited without calling bspk_finalize in superstep 2"

# A BSPlib program's failures name BSPlib's superstep first (the job hub's
# reports; bspk_set_layer_superstep): pid 3 dies in BSPlib superstep 4, whose
# BSPk superstep is later (a get's reply superstep per bsp_sync).
BSCEN=$BUILD/tests/bsplib/bsplib_scenarios
run "BSPlib: exit without bsp_end" 60 "${SRUN[@]}" --mpi=pmix "$BSCEN" err_crash exit
expect_fail; expect_within 10 "$SECS" "the whole job ended"
expect "pid 3 \(os pid [0-9]+ on [^)]*\) exited without calling bspk_finalize \(BSPlib's end\) in BSPlib superstep 4 \(BSPk superstep [0-9]+\)"
run "BSPlib: segmentation fault" 60 "${SRUN[@]}" --mpi=pmix "$BSCEN" err_crash segv
expect_fail; expect_within 10 "$SECS" "the whole job ended"
expect_count 3 "^bspk: ending pid [0-2] \(BSPlib superstep 4 \(BSPk superstep [0-9]+\)\): pid 3 \(os pid [0-9]+ on [^)]*\) died .*its last report: BSPlib superstep 4 \(computing; BSPk superstep [0-9]+\)"

# BSPlib's Err_SYNC: pid 3 calls bspk_finalize while the others call bspk_sync.
run "bspk_finalize while others sync" 60 "${SRUN[@]}" --mpi=pmix "$SCEN" early_finalize
expect_fail; expect "called bspk_finalize while others called bspk_sync"

# bspk_abort ends everyone with the caller's message.
run "bspk_abort" 60 "${SRUN[@]}" --mpi=pmix "$SCEN" abort
expect_fail; expect_within 10 "$SECS" "the whole job ended"; expect "bspk_abort \(pid 3, superstep 1\): boom 42"
expect_count 3 "^bspk: ending pid [0-2] .*boom 42"
run "bspk_abort by the hub's process" 60 "${SRUN[@]}" --mpi=pmix "$SCEN" abort 0
expect_fail; expect_within 10 "$SECS" "the whole job ended"; expect_count 3 "^bspk: ending pid [1-3] .*bspk_abort \(pid 0, superstep 1\): boom 42"

# bspk_init failing on one process after the bootstrap (a bad setting there).
run "bspk_init fails on pid 2" 60 "${SRUN[@]}" --mpi=pmix sh -c \
  '[ "$SLURM_PROCID" = 2 ] && export BSPK_FRAME_SIZE=3000; exec "$0" hello' "$SCEN"
expect_fail; expect_within 10 "$SECS" "the whole job ended"
expect_count 3 "^bspk: ending pid [013] \(superstep 0\): bspk_init failed on pid 2: frame size 3000"

# A process built against another wire protocol is refused at start-up.
for mpi in pmix none; do
  run "version mismatch (--mpi=$mpi)" 60 "${SRUN[@]}" --mpi=$mpi sh -c \
    '[ "$SLURM_PROCID" = 2 ] && export BSPK_TEST_WIRE_VERSION=99; exec "$0" hello' "$SCEN"
  expect_fail; expect_within 10 "$SECS" "the job was refused"
  expect "pid 2 \(os pid [0-9]+\) was built against another BSPk version \(bootstrap protocol [0-9]+, wire protocol 99"
  expect_not "hello from pid"
done

# Issue 13: a stranger who knows the job's tag (squeue) and finds its hub's
# port cannot join or end the job: forged hellos, a forged proof, a message
# before any hello, an oversize frame and 100 silent connections while the job
# runs; the job finishes as if nothing happened. Under PMIx the key goes
# through the job's key-value store; under plain srun it is BSPK_JOB_KEY.
for mpi in pmix none; do
  log=$BUILD/slurm-stranger-$mpi.log
  : >"$log"   # before the background job opens it: a stale log names the previous run's port
  key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
  t0=$(now)
  BSPK_VERBOSE=1 BSPK_JOB_KEY=$key timeout -k 5 90 "${SRUN[@]}" --mpi=$mpi "$SCEN" steady 8 >"$log" 2>&1 &
  spid=$!
  port=""
  for ((k = 0; k < 200; k++)); do
    [[ -n $port ]] && break
    port=$(sed -n 's/^bspk: job hub of .* listening on TCP port \([0-9]*\).*/\1/p' "$log" | head -1)
    sleep 0.1
  done
  tag=$(sed -n 's/^bspk: job hub of \(.*\) listening on TCP port.*/\1/p' "$log" | head -1)
  NAME="stranger at the job hub (--mpi=$mpi)"
  if [[ -z $port ]]; then
    kill "$spid" 2>/dev/null; wait $spid; rc=$?
    step "$NAME" "srun ... steady 8" "$rc" "$(elapsed "$t0")" "$(cat "$log")"
    bad "$NAME: the job hub did not say where it listens within 20 s"
    continue
  fi
  stranger=$(python3 "$HERE/stranger.py" "$port" "$tag" 100 2>&1)
  wait $spid; rc=$?
  step "$NAME" "srun --mpi=$mpi ... steady 8 with tests/cluster/stranger.py $port $tag" "$rc" "$(elapsed "$t0")" \
    "$(cat "$log"; echo "$stranger")"
  expect_rc 0
  expect_count 4 "^steady pid [0-3]: [0-9]+ supersteps ok"
  expect "stranger: unproven hello claiming pid 1: closed after 37 bytes"
  expect "stranger: hello with a forged proof: closed after 0 bytes"
  expect "stranger: abort before any hello: closed after 37 bytes"
  expect "stranger: 1 GiB frame header: (closed|error)"
  expect "stranger: 100 silent connections: opened 100"
  expect_not "refused a process|ending pid|without BSPK_JOB_KEY"
done

# Nothing left behind: no shm regions of these jobs, no processes.
NAME="clean-up" CMD="ls /dev/shm" OUT= RC= SECS=
left=$(ls /dev/shm 2>/dev/null | grep -c '^bspk\.slurm\.' || true)
if [[ $left == 0 ]]; then pass "no /dev/shm regions left"; else bad "$left /dev/shm regions left: $(ls /dev/shm | grep '^bspk\.slurm\.' | head -3)"; fi
finish
