#!/bin/sh
# tests/bsplib/run_check.sh -- run one job the scenario table cannot express
# (stdin fed to it) and check its exit status and output.
#   run_check.sh STATUS INPUT LIMIT [N REGEX]... -- COMMAND...
# STATUS: 0, or "fail" (non-zero, and not the time limit's 124); INPUT: text
# piped into the job's stdin; LIMIT: seconds before the job is killed; each
# N REGEX: the extended regex matches exactly N times in stdout + stderr.
set -u
want_status=$1 input=$2 limit=$3
shift 3
n_checks=0
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  n_checks=$((n_checks + 1))
  eval "count_$n_checks=\$1; regex_$n_checks=\$2"
  shift 2
done
[ "$#" -gt 0 ] && shift
out=$(printf '%s\n' "$input" | timeout -k 5 "$limit" "$@" 2>&1)
status=$?
ok=1
case "$want_status" in
  0) [ "$status" -eq 0 ] || { echo "FAIL: exit status $status, expected 0"; ok=0; } ;;
  fail) if [ "$status" -eq 0 ] || [ "$status" -eq 124 ]; then echo "FAIL: exit status $status, expected a failure"; ok=0; fi ;;
esac
i=1
while [ "$i" -le "$n_checks" ]; do
  eval "n=\$count_$i; re=\$regex_$i"
  got=$(printf '%s\n' "$out" | grep -oE -- "$re" | wc -l)
  if [ "$got" -ne "$n" ]; then
    echo "FAIL: $got match(es) of /$re/, expected $n"
    ok=0
  fi
  i=$((i + 1))
done
if [ "$ok" -ne 1 ]; then
  echo "command: $*"
  echo "input: $input"
  echo "exit status $status, output:"
  printf '%s\n' "$out"
  exit 1
fi
echo "ok: $*"
