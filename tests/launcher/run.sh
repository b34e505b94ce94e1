#!/bin/bash
# tests/launcher/run.sh BSPKRUN PEER CASE -- runs `bspkrun -n 2 PEER CASE DIR`
# (tests/launcher/peer.cpp) under a hard limit and checks how the job ended.
# bspkrun must never wait on one process: a process (or a stranger on its
# socket) that sends half a message, or is stopped, must leave the job's
# completion, output forwarding, failure handling and --timeout working.
#   strangers        three local processes connect and stop mid-message: the
#                    job still completes (exit 0, both exchanges), the one that
#                    announced an oversize hello is dropped with a warning
#   stop             --timeout 3, pid 1 stopped: exit 124 with the time-limit
#                    message; pid 0's output keeps coming; pid 1 ends by
#                    SIGTERM (it was continued), not only by the SIGKILL
#   stop_reader      the same, pid 1 stopped before reading an all-gather
#                    result that does not fit its socket buffer
#   half_stop_exit   pid 1 stopped after half a message; pid 0 exits 3: the job
#                    ends at once with status 3 naming pid 0; pid 1 got SIGTERM
#   half_stop_abort  the same, pid 0 aborts: its message, "called bspk_abort"
#   held_output      pid 0 exits 3 while a process it started holds its output
#                    pipes open: the job ends at once, status 3, naming pid 0
#   bad_frame        pid 1 sends a frame of length 0: the job fails (status 1)
#                    naming pid 1 and its os pid
#   too_many_files   `ulimit -n 24` (soft and hard), -n 16: bspkrun could not
#                    hold every process's pipes and connection; the job is
#                    refused at once (status 1) naming the need and the limit,
#                    starts nothing, and leaves nothing in its directory (under
#                    TMPDIR); the same at -n 8 under `ulimit -n 30`, about 3
#                    per process (until 2026-12-07 every process started and
#                    the job waited 60 s for connections it could not accept)
#   soft_files       `ulimit -Sn 24` (the hard limit higher), -n 16: bspkrun
#                    raises its own soft limit, the job runs, and each process
#                    has the 24 it was given; with --bind core every process
#                    is bound (until 2026-12-08 the limit went back before the
#                    binding, whose /proc reads then failed from pid 5 up)
# A job still running after LIMIT seconds is killed (status 137): a hang fails.
set -u
bspkrun=${1:?usage: run.sh BSPKRUN PEER CASE} peer=${2:?} case_=${3:?}
# shellcheck source=tests/launcher/lib.sh
. "$(dirname "$0")/lib.sh"
run() { run_job "$1" "$bspkrun" "${@:2}"; }  # LIMIT bspkrun-args...

case $case_ in
  too_many_files)
    mkdir -p "$dir/tmp"
    # shellcheck disable=SC2016
    run_job 30 bash -c 'ulimit -n 24 && exec env TMPDIR="$1" "$2" -n 16 sleep 30' _ "$dir/tmp" "$bspkrun"
    expect_rc 1
    expect_err "^bspkrun: -n 16 needs [0-9]+ open files \(3 per process: .*\), but \`ulimit -n\` allows 24 \(hard limit 24\): raise it, e\.g\. \`ulimit -n [0-9]+\`, or run fewer processes; nothing was started$"
    [ "$secs" -lt 10 ] || fail "the job took ${secs} s to end"
    [ -z "$(ls -A "$dir/tmp")" ] || fail "bspkrun left $(ls "$dir/tmp") behind"
    run_job 30 bash -c 'ulimit -n 30 && exec env TMPDIR="$1" "$2" -n 8 sleep 30' _ "$dir/tmp" "$bspkrun"
    expect_rc 1
    expect_err "^bspkrun: -n 8 needs [0-9]+ open files .* allows 30 \(hard limit 30\)"
    [ "$secs" -lt 10 ] || fail "the job (-n 8, ulimit -n 30) took ${secs} s to end"
    ;;
  soft_files)
    # shellcheck disable=SC2016
    run_job 30 bash -c 'ulimit -Sn 24 && exec "$1" -n 16 sh -c "ulimit -Sn"' _ "$bspkrun"
    expect_rc 0
    [ "$(grep -cx 24 "$out")" = 16 ] || fail "not every process had the 24 files it was given: $(sort "$out" | uniq -c)"
    # shellcheck disable=SC2016
    run_job 30 bash -c 'ulimit -Sn 20 && exec "$1" --bind core --report-bindings -n 16 sh -c "ulimit -Sn"' _ "$bspkrun"
    expect_rc 0
    [ "$(grep -cx 20 "$out")" = 16 ] || fail "not every process had the 20 files it was given: $(sort "$out" | uniq -c)"
    ! grep -q "could not bind" "$err" || fail "a process was left unbound: $(grep "could not bind" "$err" | head -3)"
    [ "$(grep -c '^bspkrun: pid [0-9]* bound to cpu ' "$err")" = 16 ] || fail "not every process was bound: $(cat "$err")"
    ;;
  strangers)
    run 20 -n 2 "$peer" strangers "$dir"
    expect_rc 0
    expect_out "^pid 0: exchange ok$"
    expect_out "^pid 1: exchange ok$"
    expect_err "bspkrun: warning: dropped a connection to the bootstrap socket"
    ;;
  stop | stop_reader)
    run 20 --timeout 3 -n 2 "$peer" "$case_" "$dir"
    expect_rc 124
    expect_err "^bspkrun: time limit of 3 s reached; ending the job$"
    [ "$case_" = stop_reader ] && expect_out "^pid 0: exchange ok$"
    expect_out "^pid 0: tick 5$"  # output forwarded while pid 1 is stopped
    expect_err "^pid 1: got SIGTERM$"
    ;;
  half_stop_exit)
    run 20 -n 2 "$peer" "$case_" "$dir"
    expect_rc 3
    expect_err "^bspkrun: pid 0 \(os pid [0-9]+\) exited with status 3.*; ending the job$"
    expect_err "^pid 1: got SIGTERM$"
    ;;
  half_stop_abort)
    run 20 -n 2 "$peer" "$case_" "$dir"
    expect_rc 3
    expect_err "^pid 0: test abort$"
    expect_err "^bspkrun: pid 0 called bspk_abort in superstep 0 \(starting\); ending the job$"
    expect_err "^pid 1: got SIGTERM$"
    ;;
  held_output)
    run 15 -n 2 "$peer" "$case_" "$dir"
    expect_rc 3
    expect_err "^bspkrun: pid 0 \(os pid [0-9]+\) exited with status 3"
    ;;
  bad_frame)
    run 20 -n 2 "$peer" "$case_" "$dir"
    expect_rc 1
    expect_err "^bspkrun: pid 1 \(os pid [0-9]+\) sent a malformed bootstrap message"
    ;;
  *) echo "run.sh: unknown case $case_"; exit 2 ;;
esac
echo "ok ($case_): exit status $rc after ~${secs} s"
