#!/bin/sh
# Install every Debian 12 package BSPk needs to build, test and benchmark.
# Idempotent: skips apt entirely when everything is already present.
set -eu
PKGS="build-essential cmake pkg-config libfabric-dev libfabric-bin libhwloc-dev hwloc \
      libgtest-dev googletest libcli11-dev"
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
