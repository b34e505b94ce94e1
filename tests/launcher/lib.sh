# tests/launcher/lib.sh -- sourced by run.sh and affinity.sh: run one job
# under a hard limit and check how it ended. The caller sets case_ (the case
# name); this file sets dir (removed on exit), out and err (the job's stdout
# and stderr) and clears the launcher variables (ctest might run under one).
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out=$dir/out err=$dir/err
unset BSPK_BOOT_SOCKET BSPK_JOBID BSPK_RANK BSPK_NPROCS BSPK_STATUS_FILE BSPK_BOOTSTRAP

rc=0 secs=0
# run_job LIMIT COMMAND...: rc = its exit status (137: still running after
# LIMIT seconds, killed), secs = how long it took.
run_job() {
  local limit=$1 t0=$SECONDS
  shift
  timeout --preserve-status -s KILL "$limit" "$@" >"$out" 2>"$err"
  rc=$? secs=$((SECONDS - t0))
}
fail() {
  echo "FAIL ($case_): $*; exit status $rc after ~${secs} s"
  echo "--- stdout"; cat "$out"
  echo "--- stderr"; cat "$err"
  exit 1
}
expect_rc() { [ "$rc" = 137 ] && fail "the job hung (killed at the test's limit)"; [ "$rc" = "$1" ] || fail "expected exit status $1"; }
expect_out() { grep -Eq -- "$1" "$out" || fail "stdout lacks /$1/"; }
expect_err() { grep -Eq -- "$1" "$err" || fail "stderr lacks /$1/"; }
reject_err() { ! grep -Eq -- "$1" "$err" || fail "stderr has /$1/"; }
