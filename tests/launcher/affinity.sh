#!/bin/bash
# tests/launcher/affinity.sh BSPKRUN SCENARIOS CASE -- a job started with its
# CPUs restricted from outside (`taskset -c C bspkrun ...`, as `numactl`, a
# job script or an affinity-only Slurm step do) stays on them, and its
# processes know how many CPUs they share (tests/scenarios.cpp `hello` runs).
#   bind_within   taskset -c C bspkrun -n 2 --bind core: both processes bound
#                 to C (round-robin over the cores bspkrun may use), none
#                 moved to another CPU
#   auto_binds    taskset -c C bspkrun -n 2 (--bind auto, the default): more
#                 processes than cores are bound round-robin (both to C);
#                 -n 1 fits and is left unbound
#   wait_policy   taskset -c C bspkrun -n 2 --bind none, BSPK_VERBOSE=1: "2
#                 processes on 1 CPU here (oversubscribed): spin 0 us" (they
#                 yield at once instead of spinning for a peer that needs the
#                 same CPU); without taskset on a machine of >= 2 CPUs, not
#                 oversubscribed; confined to C, each names the other as
#                 sharing its CPU (no yields to it in a barrier both wait
#                 in), unbound and oversubscribed, none does
# C is the last CPU this script may use (so the test also holds when ctest
# itself runs under a restricted mask).
set -u
bspkrun=${1:?usage: affinity.sh BSPKRUN SCENARIOS CASE} prog=${2:?} case_=${3:?}
# shellcheck source=tests/launcher/lib.sh
. "$(dirname "$0")/lib.sh"
unset BSPK_VERBOSE
command -v taskset >/dev/null || { echo "affinity.sh: taskset not found (util-linux)"; exit 1; }
cpu=$(taskset -cp $$ | sed 's/.*: //' | tr ',' '\n' | tail -1 | sed 's/.*-//')
ncpu=$(nproc)
run() { run_job 60 env "$@"; }  # [VAR=value...] command...

case $case_ in
  bind_within)
    run taskset -c "$cpu" "$bspkrun" -n 2 --bind core --report-bindings "$prog" hello
    expect_rc 0
    expect_err "^bspkrun: pid 0 bound to cpu $cpu$"
    expect_err "^bspkrun: pid 1 bound to cpu $cpu$"
    ;;
  auto_binds)
    run taskset -c "$cpu" "$bspkrun" -n 2 --report-bindings "$prog" hello
    expect_rc 0
    expect_err "^bspkrun: pid 0 bound to cpu $cpu$"
    expect_err "^bspkrun: pid 1 bound to cpu $cpu$"
    run taskset -c "$cpu" "$bspkrun" -n 1 --report-bindings "$prog" hello
    expect_rc 0
    expect_err "^bspkrun: pid 0 not bound \(--bind auto\)$"
    ;;
  wait_policy)
    run BSPK_VERBOSE=1 taskset -c "$cpu" "$bspkrun" -n 2 --bind none "$prog" hello
    expect_rc 0
    expect_err "^bspk: waiting: 2 processes on 1 CPU here \(oversubscribed\): spin 0 us"
    # Confined to C by the mask they inherit, each knows the other shares its
    # CPU, and polls on while both wait in a barrier (sync/wait.cpp backoff;
    # pid 0 prints the verbose lines).
    expect_err "^bspk: waiting: 2 processes on 1 CPU here \(oversubscribed\): .*; pid 0 shares its CPU with pid\(s\) 1 "
    if [ "$ncpu" -ge 2 ]; then
      # Oversubscribed but unbound (each mask has every CPU): nobody knows
      # where the others run, so nobody holds on to its CPU.
      run BSPK_VERBOSE=1 "$bspkrun" -n $((ncpu + 1)) --bind none "$prog" hello
      expect_rc 0
      expect_err "^bspk: waiting: $((ncpu + 1)) processes on $ncpu CPUs here \(oversubscribed\)"
      reject_err "shares its CPU"
    fi
    if [ "$ncpu" -ge 2 ]; then
      run BSPK_VERBOSE=1 "$bspkrun" -n 2 --bind none "$prog" hello
      expect_rc 0
      expect_err "^bspk: waiting: 2 processes on [0-9]+ CPUs here: spin [1-9]"
      reject_err "oversubscribed"
    fi
    ;;
  *) echo "affinity.sh: unknown case $case_"; exit 2 ;;
esac
echo "ok ($case_)"
