#!/bin/bash
# tests/launcher/stale.sh BSPKRUN SCENARIOS -- what a job whose bspkrun was
# killed with SIGKILL leaves behind (its directory under TMPDIR, its
# processes' libfabric shm regions in /dev/shm: they die with bspkrun by
# PR_SET_PDEATHSIG, before they can remove them) is removed by the next
# bspkrun of the same user and TMPDIR, and nothing of a job that still runs:
#   1. job A (`scenarios sleep`, shm, p = 3) is killed with bspkrun: its
#      directory and what its processes did not remove themselves are left
#      (with one more region file named as theirs, so that some is);
#   2. job B runs while A's directory is younger than 10 s: A's leftovers stay
#      (a bspkrun between bind and listen looks the same);
#   3. job C (running, `sleep`) and A's directory aged past 10 s: job D
#      removes A's directory and regions (BSPK_VERBOSE=1 says so), C's stay and
#      C still ends normally when its processes are done.
set -u
bspkrun=${1:?usage: stale.sh BSPKRUN SCENARIOS} prog=${2:?}
case_=stale
# shellcheck source=tests/launcher/lib.sh
. "$(dirname "$0")/lib.sh"
unset BSPK_VERBOSE FI_PROVIDER BSPK_PROVIDER
a= c= asuf= csuf=
cleanup() {  # whatever a failed run leaves: job C, both jobs' regions
  [ -n "$c" ] && kill -9 $c 2>/dev/null
  for s in $asuf $csuf; do rm -f /dev/shm/bspk.[0-9]*-"$s".*; done
  rm -rf "$dir"
}
trap cleanup EXIT
export TMPDIR=$dir/tmp
mkdir -p "$TMPDIR"
[ -d /dev/shm ] && [ -w /dev/shm ] || { echo "stale.sh: /dev/shm not writable: skipped"; exit 77; }
# The /dev/shm files of the job whose directory ends in $1: libfabric's shm
# regions (one per process) and, killed early enough, BSPk's own board and rings.
regions() { ls /dev/shm 2>/dev/null | grep -c "^bspk\.[0-9]*-$1\." ; }
# ... libfabric's only (not the board or rings, which a running job unlinks
# once every process has mapped them).
fi_regions() { ls /dev/shm 2>/dev/null | grep "^bspk\.[0-9]*-$1\." | grep -cv "^bspk\.[^.]*\.0\.\(board\|rings\)\." ; }
jobdir() { ls -d "$TMPDIR"/bspkrun.* 2>/dev/null | grep -v -F "${1:-//}"; }
wait_regions() {  # $1 suffix, $2 count: up to 20 s
  for ((i = 0; i < 200; ++i)); do [ "$(fi_regions "$1")" -ge "$2" ] && return 0; sleep 0.1; done
  return 1
}

# 1. Job A, killed with bspkrun.
"$bspkrun" -n 3 --provider shm "$prog" sleep >"$out" 2>"$err" &
a=$!
for ((i = 0; i < 200; ++i)); do [ -n "$(jobdir)" ] && break; sleep 0.1; done
adir=$(jobdir); [ -n "$adir" ] || fail "job A made no directory under TMPDIR"
asuf=${adir##*.}
wait_regions "$asuf" 3 || fail "job A's 3 shm regions did not appear ($(regions "$asuf"))"
kill -9 $a; wait $a 2>/dev/null
sleep 1
# (Its processes may have removed their own regions: between bspkrun's files
# closing and their SIGKILL, the watchdog sees the socket's end. One more file
# named as theirs stands for a process that did not get to.)
touch "/dev/shm/bspk.$a-$asuf.7.0123456789abcdef:0:0"
aleft=$(regions "$asuf")
[ -d "$adir" ] && [ "$aleft" -ge 1 ] || fail "killing job A's bspkrun left nothing to clean (test premise)"

# 2. A young directory is left alone.
run_job 30 "$bspkrun" -n 1 /bin/true
expect_rc 0
[ -d "$adir" ] && [ "$(regions "$asuf")" = "$aleft" ] || fail "job B removed the leftovers of a job dead for less than 10 s"

# 3. A running job C next to A's aged leftovers.
"$bspkrun" -n 2 --provider shm "$prog" sleep >"$dir/c.out" 2>"$dir/c.err" &
c=$!
for ((i = 0; i < 200; ++i)); do [ -n "$(jobdir "$adir")" ] && break; sleep 0.1; done
cdir=$(jobdir "$adir"); [ -n "$cdir" ] || fail "job C made no directory"
csuf=${cdir##*.}
wait_regions "$csuf" 2 || fail "job C's 2 shm regions did not appear"
touch -d '1 minute ago' "$adir" "$cdir"
run_job 30 env BSPK_VERBOSE=1 "$bspkrun" -n 1 /bin/true
expect_rc 0
expect_err "^bspkrun: removed $adir and $aleft shared-memory region\(s\) of a job whose bspkrun was killed$"
reject_err "removed $cdir"
[ -e "$adir" ] && fail "job D left job A's directory"
[ "$(regions "$asuf")" = 0 ] || fail "job D left $(regions "$asuf") of job A's regions"
[ -d "$cdir" ] || fail "job D removed the directory of job C, which runs"
[ "$(fi_regions "$csuf")" = 2 ] || fail "job D removed regions of job C, which runs"
kill -TERM $c; wait $c 2>/dev/null
c=
echo "ok: stale"
