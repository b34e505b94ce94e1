#!/bin/bash
# tests/spawn/run.sh TEST_SPAWN CASE P -- runs test_spawn as a user would
# (./prog, no launcher: it starts its own job with bsplib_spawn_self, which
# forks the other processes) and checks the outcome of CASE:
#   ok             exit 0, one line per process, nothing left running; what
#                  pid 0 did before the spawn is done once (its line before the
#                  job printed once, its global seen by all); stdin: pid 0
#                  reads its second line after the spawn, the forks find
#                  stdin empty (not what pid 0's stdio had read ahead)
#   output_pipe    every process prints 200 lines, stdout a pipe: all 200*P
#                  lines there, whole
#   output_file    the same with stdout a file
#   bsplib         (TEST_SPAWN is test_spawn_bsplib) a BSPlib program reads P
#                  from stdin before bsp_init/bsp_begin: its first line and
#                  its last (after the SPMD function) once, one line per pid
#                  with pid 0's global, exit 0, nothing left
#   abort          the last pid calls bspk_abort: the job ends within 20 s with
#                  status 1 (bspkrun's), the message printed once, nothing left
#   bsplib_abort_lines (TEST_SPAWN is test_spawn_bsplib) a line printed
#                  before bsp_begin, every pid's line after it (no fflush),
#                  then the last pid calls bsp_abort one superstep later:
#                  every line is in the file (line-buffered from bsp_begin
#                  on), status 1
#   child_killed   the last pid is killed by SIGKILL: bspkrun says so, the job
#                  ends with status 137 (128 + 9, as under bspkrun), nothing left
#   child_crash    the last pid writes through a null pointer: bspkrun says it
#                  was killed by signal 11 (not "exited with status 1" after
#                  libinfinipath's "terminated with signal" backtrace;
#                  fabric/signals.h), the job ends with status 139, nothing left
#   child_exit     the last pid calls exit(0) before bspk_finalize: bspkrun
#                  says so, the job ends with status 1, nothing left
#                  (In these four pid 0 exits with bspkrun's status: bspkrun's
#                  SIGTERM carries it; bsplib/spawn.cpp.)
#   parent_exit    pid 0 calls exit(3) before bspk_finalize: exit status 3,
#                  bspkrun says pid 0 exited, nothing left
#   parent_exit0   pid 0 calls exit(0) before bspk_finalize: exit status 1
#                  (bspkrun's, as under bspkrun: the job failed), bspkrun says
#                  pid 0 exited without calling bspk_finalize, nothing left
#   bsplib_no_end  (TEST_SPAWN is test_spawn_bsplib) its SPMD function returns
#                  without bsp_end after a sync that follows every pid's line
#                  (before it, the job could end before a late pid printed):
#                  exit status 1, one report naming BSPlib's end (P = 1: the
#                  process's own, no launcher; else bspkrun's), nothing left
#   parent_killed  pid 0 is killed with SIGKILL mid-run: bspkrun says pid 0
#                  died and every other process of the job is gone within 5 s
#   parent_term    the same with a user's SIGTERM: pid 0 is terminated by it
#                  (status 143; bspkrun's status-carrying SIGTERM is not faked)
#   no_bspkrun     BSPK_BSPKRUN names no file: a clear error, no child left
#   bspkrun_fails  BSPK_BSPKRUN is a program that exits at once: a clear
#                  error, no child left
# "Left running": a process whose command line holds this run's tag and that
# is not a zombie (a zombie is reaped by its parent, or by init).
set -u
bin=${1:?usage: run.sh TEST_SPAWN CASE P}
case_=${2:?} np=${3:?}
tag="spawn-tag-$$-$RANDOM"
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
# No launcher around this program (ctest might run under one).
unset BSPK_BOOT_SOCKET BSPK_JOBID BSPK_RANK BSPK_NPROCS BSPK_STATUS_FILE BSPK_BOOTSTRAP BSPK_BSPKRUN

alive() {  # pids of this run's processes that are not zombies
  local d c st
  for d in /proc/[0-9]*; do
    c=$( { tr '\0' ' ' <"$d/cmdline"; } 2>/dev/null) || continue
    case $c in *"$tag"*) ;; *) continue ;; esac
    st=$( { sed 's/.*) //' "$d/stat" | cut -d' ' -f1; } 2>/dev/null)
    [ -n "$st" ] && [ "$st" != Z ] && echo "${d#/proc/}"
  done
}
fail() {
  echo "FAIL: $*"
  echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"
  local left; left=$(alive)
  if [ -n "$left" ]; then
    ps -o pid,ppid,stat,args -p "$(echo $left | tr ' ' ,)"
    kill -9 $left 2>/dev/null  # only this run's processes, by pid
  fi
  exit 1
}
count() { grep -cE -- "$1" "$2"; }
expect_count() {  # N REGEX FILE
  local n; n=$(count "$2" "$3")
  [ "$n" = "$1" ] || fail "$n line(s) match /$2/ in $(basename "$3"), expected $1"
}
gone_within() {  # S: every process of the run has ended within S seconds
  local i
  for ((i = 0; i <= $1 * 10; ++i)); do
    [ -z "$(alive)" ] && return 0
    sleep 0.1
  done
  fail "processes still running $1 s after the job ended: $(alive)"
}
run_input() {  # INPUT ARGS...: run the program with INPUT on stdin, status in $status, time in $secs
  local t0=$SECONDS input=$1
  shift
  printf '%s' "$input" | timeout -k 5 100 "$bin" "$@" >"$out" 2>"$err"
  status=$?
  secs=$((SECONDS - t0))
  [ $status = 124 ] && fail "time limit reached"
}
run() { run_input $'42\nsecret\n' "$@"; }  # test_spawn: two lines for pid 0
run_pipe() {  # run, stdout a pipe (to cat)
  local t0=$SECONDS
  printf '42\nsecret\n' | timeout -k 5 100 "$bin" "$@" 2>"$err" | cat >"$out"
  status=${PIPESTATUS[1]}
  secs=$((SECONDS - t0))
  [ $status = 124 ] && fail "time limit reached"
}
check_output() {  # the lines of the output cases: 200 per process, whole
  local r
  expect_count 1 "^test_spawn: before the job$" "$out"
  expect_count $((200 * np)) "^test_spawn: out pid [0-9]+ line [0-9]{3} abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz$" "$out"
  for ((r = 0; r < np; ++r)); do expect_count 200 "^test_spawn: out pid $r line" "$out"; done
  local lines; lines=$(wc -l <"$out")
  [ "$lines" = $((201 * np + 1)) ] || fail "$lines lines in stdout, expected $((201 * np + 1))"
  [ -s "$err" ] && fail "unexpected output on stderr"
}
last=$((np - 1))

case $case_ in
  ok)
    run "$np" ok "$tag" "a b"
    [ $status = 0 ] || fail "exit status $status, expected 0"
    expect_count 1 "^test_spawn: before the job$" "$out"
    expect_count "$np" "^test_spawn: pid [0-9]+ of $np: $np messages, sum ok, token 42, global 1042, stdin (read <secret>|empty), args <$tag> <a b>$" "$out"
    for ((r = 0; r < np; ++r)); do expect_count 1 "^test_spawn: pid $r of " "$out"; done
    expect_count 1 "^test_spawn: pid 0 of .* stdin read <secret>," "$out"
    expect_count $((np - 1)) "^test_spawn: pid [1-9][0-9]* of .* stdin empty," "$out"
    [ "$(wc -l <"$out")" = $((np + 1)) ] || fail "$(wc -l <"$out") lines in stdout, expected $((np + 1))"
    [ -s "$err" ] && fail "unexpected output on stderr"
    gone_within 0
    ;;
  output_pipe)
    run_pipe "$np" output "$tag"
    [ $status = 0 ] || fail "exit status $status, expected 0"
    check_output
    gone_within 0
    ;;
  output_file)
    run "$np" output "$tag"
    [ $status = 0 ] || fail "exit status $status, expected 0"
    check_output
    gone_within 0
    ;;
  bsplib)
    run_input "$np"$'\n' "$tag"
    [ $status = 0 ] || fail "exit status $status, expected 0"
    expect_count 1 "^test_spawn_bsplib: how many processes\? \([0-9]+ cores\)$" "$out"
    expect_count "$np" "^test_spawn_bsplib: pid [0-9]+ of $np, global $((100 + np)), from left [0-9]+$" "$out"
    for ((r = 0; r < np; ++r)); do
      expect_count 1 "^test_spawn_bsplib: pid $r of $np, global $((100 + np)), from left $(((r + np - 1) % np))$" "$out"
    done
    expect_count 1 "^test_spawn_bsplib: done$" "$out"
    [ "$(wc -l <"$out")" = $((np + 2)) ] || fail "$(wc -l <"$out") lines in stdout, expected $((np + 2))"
    [ -s "$err" ] && fail "unexpected output on stderr"
    gone_within 0
    ;;
  abort)
    run "$np" abort "$tag"
    [ $status = 1 ] || fail "exit status $status, expected 1 (bspkrun's after bspk_abort)"
    [ $secs -lt 20 ] || fail "the job took $secs s"
    expect_count 1 "bspk_abort \(pid $last, superstep 1\): boom 42" "$err"
    expect_count 1 "^bspkrun: pid $last called bspk_abort in superstep 1 \(computing\); ending the job" "$err"
    expect_count 1 "boom" "$err"
    gone_within 5
    ;;
  bsplib_abort_lines)
    run_input "" "$tag" abort_lines "$np"
    [ $status = 1 ] || fail "exit status $status, expected 1 (as after bsp_abort under bsprun)"
    [ $secs -lt 20 ] || fail "the job took $secs s"
    expect_count 1 "^test_spawn_bsplib: before bsp_begin$" "$out"
    for ((r = 0; r < np; ++r)); do expect_count 1 "^test_spawn_bsplib: pid $r line$" "$out"; done
    expect_count 1 "boom after the lines" "$err"
    gone_within 5
    ;;
  child_killed | child_crash)
    run "$np" "$case_" "$tag"
    signal="9 \(Killed\)" want=137
    [ "$case_" = child_crash ] && signal="11 \(Segmentation fault\)" want=139
    [ $status = $want ] || fail "exit status $status, expected $want (bspkrun's: 128 + the signal)"
    [ $secs -lt 20 ] || fail "the job took $secs s"
    expect_count 1 "^bspkrun: pid $last \(os pid [0-9]+\) was killed by signal $signal in superstep 2.*; ending the job" "$err"
    expect_count 0 "terminated with signal" "$err"
    gone_within 5
    ;;
  child_exit)
    run "$np" child_exit "$tag"
    [ $status = 1 ] || fail "exit status $status, expected 1 (bspkrun's)"
    [ $secs -lt 20 ] || fail "the job took $secs s"
    expect_count 1 "^bspkrun: pid $last \(os pid [0-9]+\) exited without calling bspk_finalize in superstep 2.*; ending the job" "$err"
    gone_within 5
    ;;
  parent_exit | parent_exit0)
    run "$np" "$case_" "$tag"
    if [ "$case_" = parent_exit ]; then
      [ $status = 3 ] || fail "exit status $status, expected 3 (pid 0's own)"
    else
      [ $status = 1 ] || fail "exit status $status, expected 1 (bspkrun's: the job failed)"
    fi
    [ $secs -lt 20 ] || fail "the job took $secs s"
    expect_count 1 "^bspkrun: pid 0 \(os pid [0-9]+, the process that started this job\) exited without calling bspk_finalize in superstep 2 .*; ending the job" "$err"
    gone_within 5
    ;;
  bsplib_no_end)
    run_input "$np"$'\n' "$tag" no_end
    [ $status = 1 ] || fail "exit status $status, expected 1 (as under bsprun)"
    [ $secs -lt 20 ] || fail "the job took $secs s"
    expect_count "$np" "^test_spawn_bsplib: pid [0-9]+ of $np, global" "$out"
    if [ "$np" = 1 ]; then
      expect_count 1 "^bspk: pid 0 \(os pid [0-9]+, the only process, started without a launcher\) exited without calling bspk_finalize \(BSPlib's end\) in BSPlib superstep 3 \(BSPk superstep [0-9]+\)$" "$err"
    else
      expect_count 1 "^bspkrun: pid [0-9]+ \(os pid [0-9]+.*\) exited without calling bspk_finalize \(BSPlib's end\) in BSPlib superstep 3 .*; ending the job" "$err"
    fi
    expect_count 1 "exited without calling" "$err"
    gone_within 5
    ;;
  bsplib_init_twice)
    run_input "$np"$'\n' "$tag" init_twice
    [ $status = 1 ] || fail "exit status $status, expected 1 (as under bsprun)"
    expect_count 1 "bsp_init: called twice or after bsp_begin" "$err"
    expect_count 0 "^test_spawn_bsplib: pid" "$out"
    gone_within 5
    ;;
  parent_killed | parent_term)
    "$bin" "$np" hang "$tag" </dev/null >"$out" 2>"$err" &
    parent=$!
    for ((i = 0; i < 600; ++i)); do
      [ "$(count '^test_spawn: pid' "$out")" = "$np" ] && break
      kill -0 $parent 2>/dev/null || break
      sleep 0.1
    done
    [ "$(count '^test_spawn: pid' "$out")" = "$np" ] || fail "the job did not start"
    if [ "$case_" = parent_term ]; then
      kill -TERM $parent
      wait $parent 2>/dev/null
      status=$?
      [ $status = 143 ] || fail "exit status $status, expected 143 (terminated by SIGTERM)"
    else
      kill -9 $parent
      wait $parent 2>/dev/null
    fi
    gone_within 5
    expect_count 1 "^bspkrun: pid 0 \(os pid $parent, the process that started this job\) died before calling bspk_finalize" "$err"
    ;;
  no_bspkrun)
    export BSPK_BSPKRUN=/nonexistent/bspkrun
    run "$np" spawn_error "$tag"
    [ $status = 2 ] || fail "exit status $status, expected 2 (a clean failure)"
    expect_count 1 "^test_spawn: BSPK_BSPKRUN=/nonexistent/bspkrun: not found or not executable" "$err"
    expect_count 1 "^test_spawn: no child left" "$err"
    expect_count 1 "^test_spawn: before the job$" "$out"
    gone_within 5
    ;;
  bspkrun_fails)
    export BSPK_BSPKRUN=false
    run "$np" spawn_error "$tag"
    [ $status = 2 ] || fail "exit status $status, expected 2 (a clean failure)"
    expect_count 1 "^test_spawn: bspkrun \(/.*false\) exited with status 1 before the job started" "$err"
    expect_count 1 "^test_spawn: no child left" "$err"
    expect_count 1 "^test_spawn: before the job$" "$out"
    gone_within 5
    ;;
  *) echo "unknown case $case_"; exit 2 ;;
esac
echo "ok: $case_ p=$np (${secs:-?} s)"
