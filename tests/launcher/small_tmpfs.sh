#!/bin/bash
# tests/launcher/small_tmpfs.sh BSPKRUN SCENARIOS -- a host whose /dev/shm is
# small (a container's default is 64 MiB), or whose temporary directory is full.
# /dev/shm (8 MiB): libfabric's shm provider then
# hides itself (it sizes its regions by the host's cores), and
#   - `--provider shm` ends with an error that says so, with the free space
#     and the ways out (fabric/caps.cpp why_unusable), not only "no endpoint";
#   - the default provider still runs the job (tcp's net, with BSPk's own
#     shared-memory rings and count board, which fit);
#   - at p = 16 the rings (10.4 MiB) do not fit either: chosen by auto they
#     are left out with a note and the job runs; asked for
#     (BSPK_SHM_RINGS=on) the job ends with an error giving /dev/shm's free
#     space -- never SIGBUS (base/shm_segment.cpp reserves every page of a
#     segment before mapping it).
# /dev/shm read-only (no usable /dev/shm): the board and rings are left out
# with a note, the job runs (counts and small messages by messages); a large
# read-only /dev/shm: the shm provider is left out too, with a note, and
# `--provider shm` says why it cannot run.
# A full temporary directory (a filled 4 KiB tmpfs as TMPDIR): bspkrun's
# status file (where each process reports its superstep) cannot be
# reserved; the job runs without it, where its processes used to die with
# SIGBUS at their first report.
# TMPDIR: bspkrun makes its directory (socket, status file) under $TMPDIR
# when set, and under /tmp when TMPDIR is too long for a Unix socket's path.
# Runs in a mount namespace of its own (unshare -m) with those tmpfs mounted
# there; exit status 77 (ctest: skipped) where that is not permitted.
set -u
bspkrun=${1:?usage: small_tmpfs.sh BSPKRUN SCENARIOS} prog=${2:?}
if [ "${SMALL_TMPFS_INSIDE:-}" != 1 ]; then
  command -v unshare >/dev/null || { echo "small_tmpfs.sh: unshare not found (util-linux): skipped"; exit 77; }
  unshare -m true 2>/dev/null || { echo "small_tmpfs.sh: unshare -m not permitted here: skipped"; exit 77; }
  exec unshare -m env SMALL_TMPFS_INSIDE=1 bash "$0" "$@"
fi
mount -t tmpfs -o size=8m tmpfs /dev/shm || { echo "small_tmpfs.sh: cannot mount a tmpfs on /dev/shm: skipped"; exit 77; }
case_=small_tmpfs
export TMPDIR=/var/tmp  # (lib.sh's files: on neither of the tmpfs mounted here)
[ -d /var/tmp ] || TMPDIR=/
# shellcheck source=tests/launcher/lib.sh
. "$(dirname "$0")/lib.sh"
unset BSPK_PROVIDER FI_PROVIDER BSPK_COUNT_EXCHANGE BSPK_SHM_RINGS
run_job 60 "$bspkrun" -n 2 --provider shm "$prog" hello
[ "$rc" = 0 ] && fail "expected --provider shm to fail with an 8 MiB /dev/shm"
expect_rc "$rc"  # (not a hang)
expect_err "provider 'shm' cannot run BSPk: .*/dev/shm has too little free space for it \([0-9.]+ MiB free of 8.0 MiB here"
expect_err "docker run --shm-size"
run_job 60 "$bspkrun" -n 2 "$prog" hello
expect_rc 0
run_job 90 "$bspkrun" -n 16 "$prog" hello
expect_rc 0
expect_err "^bspk: note: shared segment .*rings.*: reserving [0-9.]+ MiB in /dev/shm \([0-9.]+ MiB free of 8.0 MiB\): No space left on device.*; small messages go through the provider instead"
expect_out "hello from pid 15"
run_job 90 env BSPK_SHM_RINGS=on "$bspkrun" -n 16 "$prog" hello
[ "$rc" = 0 ] && fail "expected BSPK_SHM_RINGS=on to fail at p = 16 with an 8 MiB /dev/shm"
expect_rc "$rc"
expect_err "reserving [0-9.]+ MiB in /dev/shm \([0-9.]+ MiB free of 8.0 MiB\): No space left on device"
reject_err "signal 7"
mount -o remount,ro /dev/shm || { echo "small_tmpfs.sh: cannot remount /dev/shm read-only: skipped"; exit 77; }
run_job 90 "$bspkrun" -n 3 "$prog" hello
expect_rc 0
expect_err "^bspk: note: shared segment: shm_open\(.*board.*\): Read-only file system \(/dev/shm\); the count exchange goes by messages instead"
expect_err "^bspk: note: shared segment: shm_open\(.*rings.*\): Read-only file system \(/dev/shm\); small messages go through the provider instead"
expect_out "hello from pid 2"
# A large /dev/shm, read-only: libfabric 1.17 still offers shm there, and the
# default job used to fail in fi_enable ("Read-only file system"; until
# 2026-12-07). BSPk's choice leaves shm out with a note; asked for by name,
# the error says what /dev/shm is.
umount /dev/shm && mount -t tmpfs -o size=1g,ro tmpfs /dev/shm ||
  { echo "small_tmpfs.sh: cannot mount a read-only tmpfs on /dev/shm: skipped"; exit 77; }
run_job 90 "$bspkrun" -n 3 "$prog" hello
expect_rc 0
expect_err "^bspk: note: /dev/shm is mounted read-only, so the shm provider is left out: the processes of this host talk through "
expect_out "hello from pid 2"
run_job 90 env FI_PROVIDER=tcp,shm "$bspkrun" -n 2 "$prog" hello
expect_rc 0
expect_err "^bspk: note: /dev/shm is mounted read-only, so the shm provider is left out"
run_job 60 "$bspkrun" -n 2 --provider shm "$prog" hello
[ "$rc" = 0 ] && fail "expected --provider shm to fail with /dev/shm read-only"
expect_rc "$rc"
expect_err "fi_enable failed: .*provider 'shm' keeps its endpoints in /dev/shm, which is mounted read-only here"
# A full temporary directory: a filled 4 KiB tmpfs as TMPDIR (not mounted on
# /tmp itself, which may hold the build tree: a CI clone).
full=$dir/full-tmp
mkdir -p "$full"
mount -t tmpfs -o size=4k tmpfs "$full" || { echo "small_tmpfs.sh: cannot mount a tmpfs: skipped"; exit 77; }
dd if=/dev/zero of="$full/fill" bs=4k count=1 2>/dev/null
run_job 60 env TMPDIR="$full" "$bspkrun" -n 2 "$prog" hello
expect_rc 0
expect_out "hello from pid 1"
reject_err "signal 7|Bus error"
# TMPDIR honoured (the job sees where its socket is), and a long one refused.
tdir=$dir/job-tmp
mkdir -p "$tdir"
run_job 60 env TMPDIR="$tdir" "$bspkrun" -n 1 sh -c 'echo "socket $BSPK_BOOT_SOCKET"'
expect_rc 0
expect_out "^socket $tdir/bspkrun\.[A-Za-z0-9]{6}/boot\.sock$"
long=$dir/$(printf 'd%.0s' $(seq 1 100))
mkdir -p "$long"
run_job 60 env TMPDIR="$long" "$bspkrun" -n 1 sh -c 'echo "socket $BSPK_BOOT_SOCKET"'
expect_rc 0
expect_out "^socket /tmp/bspkrun\.[A-Za-z0-9]{6}/boot\.sock$"
echo "ok (small_tmpfs)"
