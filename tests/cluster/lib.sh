# tests/cluster/lib.sh -- shared helpers of the Slurm / multi-host tests.
# Sourced by slurm_single.sh and slurm_netns.sh with BUILD set to the build dir.
# Each check counts as passed or failed; the script's status is 0 when all
# passed, 1 when any failed, or 77 = skipped (ctest SKIP_RETURN_CODE) with a
# "skipped: <reason>" line when the machine lacks what the tests need.
# Output is short on purpose (CI shows only the start of a failing test's
# output): one line per step, and for a failed check a FAIL line followed by
# the step's command and the end of its output. Every step's full output goes
# to $BUILD/cluster-<script>.log; CLUSTER_TEST_VERBOSE=1 also prints PASS lines.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
: "${BUILD:?BUILD (the build directory) must be set}"
SCEN=$BUILD/tests/scenarios
RADIX=$BUILD/examples/radix_sort
MPT=$BUILD/examples/mp_template
# A private cluster: own state dir and ports, so a system Slurm is never touched.
export SLURM_TEST_DIR=${SLURM_TEST_DIR:-/tmp/bspk-ctest-slurm}
export SLURM_TEST_PORT=${SLURM_TEST_PORT:-16917}
FAILS=0
PASSES=0
LOG=$BUILD/cluster-$(basename "$0" .sh).log
: >"$LOG"
VERBOSE=${CLUSTER_TEST_VERBOSE:-0}
NAME= CMD= OUT= RC= SECS=

skip() { echo "skipped: $*"; exit 77; }
pass() { PASSES=$((PASSES + 1)); [[ $VERBOSE == 1 ]] && echo "PASS: $*"; return 0; }
# A failed check: the FAIL line, then what the step ran and how it ended.
bad() {
  echo "FAIL: $*"
  FAILS=$((FAILS + 1))
  echo "    step \"$NAME\": rc=$RC after $SECS s: $CMD"
  sed 's/^/    | /' <<<"$OUT" | tail -n 25
}
# step NAME CMDLINE RC SECS OUT: record a step run outside run() (a background job).
step() {
  NAME=$1 CMD=$2 RC=$3 SECS=$4 OUT=$5
  echo "--- $NAME: rc=$RC in $SECS s"
  { echo "=== $NAME: rc=$RC in $SECS s: $CMD"; echo "$OUT"; } >>"$LOG"
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.2f", b-a}'; }

# Prerequisites every cluster test needs; skip (never pass) without them.
need_slurm() {
  [[ $(id -u) == 0 ]] || skip "not root (slurmd and network namespaces need root)"
  local c
  for c in slurmctld slurmd srun sbatch scontrol munged nsenter unshare timeout; do
    command -v "$c" >/dev/null || skip "$c not installed (run ./install-deps.sh)"
  done
  [[ -d /sys/fs/cgroup && -n $(ls -A /sys/fs/cgroup 2>/dev/null) ]] ||
    skip "no cgroup filesystem mounted on /sys/fs/cgroup (slurmd 22.05 cannot start without one)"
  [[ -x $SCEN && -x $RADIX && -x $MPT ]] || skip "test binaries missing under $BUILD"
}

# run NAME LIMIT CMD...: runs CMD under `timeout` (every srun in the tests is
# time-limited), sets OUT (stdout+stderr), RC and SECS, and logs the output.
run() {
  local name=$1 limit=$2 t0 out rc
  shift 2
  t0=$(now)
  out=$(timeout -k 5 "$limit" "$@" 2>&1)
  rc=$?
  step "$name" "$*" "$rc" "$(elapsed "$t0")" "$out"
  # 124: timeout sent TERM; 137 is also a task killed by SIGKILL, so only a
  # 137 at the limit counts as timeout's KILL.
  if [[ $RC == 124 ]] || { [[ $RC == 137 ]] && awk -v a="$SECS" -v l="$limit" 'BEGIN{exit !(a >= l)}'; }; then
    bad "$NAME: hit its time limit of $limit s"
  fi
}

has() { grep -qE -- "$1" <<<"$OUT"; }
expect() { if has "$1"; then pass "$NAME: output has /$1/"; else bad "$NAME: output lacks /$1/"; fi; }
expect_not() { if has "$1"; then bad "$NAME: output has /$1/"; else pass "$NAME: output lacks /$1/"; fi; }
expect_count() {  # expect_count N REGEX
  local n
  n=$(grep -cE -- "$2" <<<"$OUT")
  if [[ $n == "$1" ]]; then pass "$NAME: $n lines match /$2/"; else bad "$NAME: $n lines match /$2/, expected $1"; fi
}
expect_rc() { if [[ $RC == "$1" ]]; then pass "$NAME: exit status $RC"; else bad "$NAME: exit status $RC, expected $1"; fi; }
expect_fail() { if [[ $RC != 0 && $RC != 124 ]]; then pass "$NAME: exit status $RC (non-zero)"; else bad "$NAME: exit status $RC, expected a failure"; fi; }
expect_within() {  # expect_within SECONDS VALUE WHAT
  if awk -v a="$2" -v b="$1" 'BEGIN{exit !(a <= b)}'; then pass "$NAME: $3 in $2 s (limit $1 s)"
  else bad "$NAME: $3 took $2 s (limit $1 s)"; fi
}

# OS pids of this job's processes, from the "steady pid P os pid X running" lines
# of a log file; waits until N are there.
job_pids() {  # job_pids LOG N TIMEOUT
  local k
  for ((k = 0; k < $3 * 10; k++)); do
    local n
    n=$(grep -c "^steady pid .* running" "$1" 2>/dev/null || true)
    ((n >= $2)) && break
    sleep 0.1
  done
  sed -n 's/^steady pid [0-9]* os pid \([0-9]*\) on .* running/\1/p' "$1"
}

# Seconds until every pid in the list is gone (polls every 0.05 s), or LIMIT.
wait_gone() {  # wait_gone LIMIT PID...
  local limit=$1 t0 p alive
  shift
  t0=$(now)
  while :; do
    alive=0
    for p in "$@"; do
      # a zombie waiting for init to reap it has ended
      if [[ -e /proc/$p && $(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) != Z ]]; then alive=1; fi
    done
    ((alive == 0)) && break
    awk -v a="$t0" -v b="$(now)" -v l="$limit" 'BEGIN{exit !(b-a > l)}' && break
    sleep 0.05
  done
  elapsed "$t0"
}

finish() {
  echo "=== $(basename "$0"): $PASSES checks passed, $FAILS failed (full output: $LOG)"
  exit $((FAILS > 0 ? 1 : 0))
}
