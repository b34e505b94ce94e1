#!/bin/bash
# tests/launcher/signals.sh BSPKRUN CASE -- signals bspkrun passes on, and
# the dispositions its processes start with:
#   usr1     SIGUSR1 and SIGUSR2 sent to bspkrun reach every process of the job
#            (as mpirun and srun pass them on: a batch system's warning of a
#            coming time limit), which handle them and end normally; bspkrun
#            itself goes on (their default action would have ended it);
#   sigpipe  the job's processes start with SIGPIPE's default action (bspkrun
#            ignores it for itself): `yes | head -1` ends quietly, without
#            "Broken pipe" from yes;
#   nohup    a bspkrun started with SIGHUP ignored (nohup) keeps it ignored,
#            and so do its processes: a hangup does not end the job.
set -u
bspkrun=${1:?usage: signals.sh BSPKRUN CASE} case_=${2:?}
# shellcheck source=tests/launcher/lib.sh
. "$(dirname "$0")/lib.sh"
unset BSPK_VERBOSE

# wait_lines N PATTERN: up to 20 s for N lines matching PATTERN in the job's stdout.
wait_lines() {
  for ((i = 0; i < 200; ++i)); do
    [ "$(grep -c -- "$2" "$out" 2>/dev/null)" -ge "$1" ] && return 0
    sleep 0.1
  done
  return 1
}

# wait_job PID: rc = the background job's exit status (killed after 20 s: 137).
wait_job() {
  ( sleep 20; kill -9 "$1" 2>/dev/null ) &
  local guard=$!
  wait "$1"
  rc=$?
  kill $guard 2>/dev/null
}

case "$case_" in
  usr1)
    # Each process: handlers for both, "ready", then waits (sleep in small
    # steps so that the trap runs soon) until it has seen both.
    "$bspkrun" -n 3 sh -c 'got=0
      trap "echo pid \$BSPK_RANK got USR1; got=\$((got + 1))" USR1
      trap "echo pid \$BSPK_RANK got USR2; got=\$((got + 1))" USR2
      echo ready; while [ $got -lt 2 ]; do sleep 0.05; done' >"$out" 2>"$err" &
    job=$!
    wait_lines 3 '^ready$' || { kill -9 $job; fail "the processes did not start"; }
    kill -USR1 $job
    wait_lines 3 'got USR1$' || { kill -9 $job; fail "SIGUSR1 did not reach every process"; }
    kill -USR2 $job
    wait_job $job
    expect_rc 0
    for r in 0 1 2; do
      expect_out "^pid $r got USR1$"
      expect_out "^pid $r got USR2$"
    done
    ;;
  sigpipe)
    run_job 30 "$bspkrun" -n 2 sh -c 'yes | head -1'
    expect_rc 0
    [ "$(grep -c '^y$' "$out")" = 2 ] || fail "expected one line 'y' per process"
    reject_err "Broken pipe"
    ;;
  nohup)
    # (trap '' HUP, as nohup does, without nohup's redirection of output.)
    sh -c 'trap "" HUP; exec "$0" -n 2 sh -c "sleep 1.5; echo done \$BSPK_RANK"' "$bspkrun" >"$out" 2>"$err" &
    job=$!
    sleep 0.7
    kill -HUP $job
    wait_job $job
    expect_rc 0
    expect_out "^done 0$"
    expect_out "^done 1$"
    reject_err "received signal"
    ;;
  *)
    echo "signals.sh: unknown case $case_" >&2
    exit 2
    ;;
esac
echo "ok: $case_"
