#!/usr/bin/env bash
# teardown.sh -- ctest cleanup fixture: stop both test clusters and remove the
# test namespaces, by PID and by name, whatever state a failed or timed-out
# test left behind. Safe to run when nothing is up. Exit 0 unless something
# could not be removed.
HERE=$(cd "$(dirname "$0")" && pwd)
SLURM_TEST_DIR=/tmp/bspk-ctest-slurm "$HERE/stop-slurm.sh" >/dev/null 2>&1
SLURM_TEST_DIR=/tmp/bspk-ctest-slurm-mn "$HERE/stop-slurm.sh" >/dev/null 2>&1
if command -v ip >/dev/null; then
  NETNS_PREFIX=bh NETNS_SUBNET=10.77.9 NETNS_BRIDGE=bspkbr9 "$HERE/netns-cluster.sh" down 3 >/dev/null 2>&1
  left=$(ip netns list 2>/dev/null | grep -c '^bh[0-2]\b' || true)
  if [[ $left != 0 ]]; then echo "teardown: $left test namespaces could not be removed"; exit 1; fi
fi
echo "teardown: test clusters stopped, namespaces removed"
