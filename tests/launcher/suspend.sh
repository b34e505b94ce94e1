#!/bin/bash
# tests/launcher/suspend.sh BSPKRUN SCENARIOS CASE [PROVIDER] -- a job
# suspended for longer than its time-out (BSPK_SYNC_TIMEOUT=1, 3 s stopped)
# resumes and completes (`scenarios run_for 6`: ring messages, counted and
# declared supersteps, all-gathers; exit 0, "run_for ok"):
#   tstp      SIGTSTP to bspkrun (^Z at a terminal): bspkrun stops every
#             process of the job and itself; SIGCONT to bspkrun (fg)
#             continues them
#   stop_all  SIGSTOP to bspkrun and every process at once (a batch system's
#             suspend), then SIGCONT to all
# (Until 2026-12-04 ^Z stopped bspkrun only, and a job resumed after a pause
# longer than its time-out could fail at once with "no progress for 1 s".)
set -u
bspkrun=${1:?usage: suspend.sh BSPKRUN SCENARIOS CASE [PROVIDER]} prog=${2:?} case_=${3:?} prov=${4:-shm}
# shellcheck source=tests/launcher/lib.sh
. "$(dirname "$0")/lib.sh"
job=
trap '[ -n "$job" ] && kill -9 $job $(pgrep -P $job) 2>/dev/null; rm -rf "$dir"' EXIT
state() { sed -n 's/^State:\t\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null; }
t0=$SECONDS
BSPK_SYNC_TIMEOUT=1 "$bspkrun" -n 3 --provider "$prov" "$prog" run_for 6 >"$out" 2>"$err" &
job=$!
kids=
for ((i = 0; i < 100; ++i)); do
  kids=$(pgrep -P $job | tr '\n' ' ')
  [ "$(echo $kids | wc -w)" = 3 ] && break
  sleep 0.1
done
[ "$(echo $kids | wc -w)" = 3 ] || fail "bspkrun did not start 3 processes"
sleep 1.5
case $case_ in
  tstp) kill -TSTP $job ;;
  stop_all) kill -STOP $job $kids ;;
  *) echo "unknown case $case_"; exit 2 ;;
esac
for ((i = 0; i < 20; ++i)); do
  stopped=0
  for k in $job $kids; do [ "$(state $k)" = T ] && stopped=$((stopped + 1)); done
  [ $stopped = 4 ] && break
  sleep 0.1
done
[ $stopped = 4 ] || fail "$stopped of bspkrun and its 3 processes stopped"
sleep 3
for k in $job $kids; do [ "$(state $k)" = T ] || fail "os pid $k ran on while the job was suspended"; done
case $case_ in
  tstp) kill -CONT $job ;;
  stop_all) kill -CONT $kids $job ;;
esac
for ((i = 0; i < 300; ++i)); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
kill -0 $job 2>/dev/null && fail "the job did not end within 30 s of its resumption"
wait $job
rc=$? job= secs=$((SECONDS - t0))
expect_rc 0
expect_out "^run_for ok after [0-9]+ supersteps$"
reject_err "no progress"
echo "ok: $case_ $prov (${secs} s)"
