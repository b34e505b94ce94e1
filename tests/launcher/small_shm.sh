#!/bin/bash
# tests/launcher/small_shm.sh BSPKRUN SCENARIOS -- a host whose /dev/shm is
# small (a container's default is 64 MiB): libfabric's shm provider then
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
# Runs in a mount namespace of its own (unshare -m) with an 8 MiB tmpfs on
# /dev/shm; exit status 77 (ctest: skipped) where that is not permitted.
set -u
bspkrun=${1:?usage: small_shm.sh BSPKRUN SCENARIOS} prog=${2:?}
if [ "${SMALL_SHM_INSIDE:-}" != 1 ]; then
  command -v unshare >/dev/null || { echo "small_shm.sh: unshare not found (util-linux): skipped"; exit 77; }
  unshare -m true 2>/dev/null || { echo "small_shm.sh: unshare -m not permitted here: skipped"; exit 77; }
  exec unshare -m env SMALL_SHM_INSIDE=1 bash "$0" "$@"
fi
mount -t tmpfs -o size=8m tmpfs /dev/shm || { echo "small_shm.sh: cannot mount a tmpfs on /dev/shm: skipped"; exit 77; }
case_=small_shm
# shellcheck source=tests/launcher/lib.sh
. "$(dirname "$0")/lib.sh"
unset BSPK_PROVIDER FI_PROVIDER BSPK_COUNT_EXCHANGE BSPK_SHM_RINGS
run_job 60 "$bspkrun" -n 2 --provider shm "$prog" hello
[ "$rc" = 0 ] && fail "expected --provider shm to fail with an 8 MiB /dev/shm"
expect_rc "$rc"  # (not a hang)
expect_err "provider 'shm' cannot run BSPk: .*/dev/shm has too little free space for it \([0-9]+ MiB free of 8 MiB here"
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
echo "ok (small_shm)"
