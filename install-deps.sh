#!/bin/sh
# Install every Debian 12 package BSPk needs to build, test and benchmark.
# Idempotent: skips apt entirely when everything is already present.
set -eu
# Build and unit tests: compiler, libfabric, hwloc, PMIx/PMI2 client libraries,
# GoogleTest, CLI11, OpenSSL's libcrypto (the job hub's handshake), clang with
# libFuzzer (tests/fuzz). Cluster tests (tests/cluster/): a private Slurm cluster
# (slurmctld, slurmd, srun, munge), network namespaces and fault injection
# (iproute2, nftables, ping, nsenter/unshare from util-linux). Benchmarks
# (bench/suite.sh): Open MPI as the baseline, gnuplot and python3 for the tables and plots.
# Cost model (costmodel/): Eigen for bspk-probe's least-squares fits, matplotlib
# for bspk-predict --plot.
PKGS="build-essential cmake pkg-config libfabric-dev libfabric-bin libhwloc-dev hwloc \
      libgtest-dev googletest libcli11-dev libpmix-dev libpmi2-0-dev libssl-dev clang libclang-rt-14-dev \
      slurmctld slurmd slurm-client munge iproute2 nftables iputils-ping util-linux procps \
      openmpi-bin libopenmpi-dev gnuplot-nox python3 \
      libeigen3-dev python3-matplotlib"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "install-deps: installing:$missing"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
fi
