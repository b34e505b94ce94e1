#!/bin/sh
# tests/install/fresh_debian.sh [--dir DIR] [--keep] [--tests] [--rev REV]
#
# The README's Quick start on a machine that has nothing installed: a minimal
# Debian 12 (debootstrap --variant=minbase: no compiler, no cmake, no
# libfabric) in a chroot, a clone of this repository at REV (default HEAD) in
# it, and then, verbatim, the README's command
#   ./install-deps.sh && cmake -S . -B build && cmake --build build -j2 && build/bspkrun -n 4 build/examples/radix_sort
# which must exit 0. So install-deps.sh is proved to list every package the
# build and the quick start need (the machine this project is developed on
# has many preinstalled; CI's clean clone runs on such a machine too).
# --tests also runs the README's test command in the chroot (about 15 more
# minutes; the Slurm cluster tests run there too: they start their own
# daemons and network namespaces, no systemd needed).
#
# Needs root, the Debian mirror (apt) and about 3 GB in DIR (default
# /tmp/bspk-fresh-debian, made again from scratch unless --keep and it
# exists). Not part of the README test command: it downloads a system.
# Exit status: that of the first command that failed.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
dir=/tmp/bspk-fresh-debian
keep=0
tests=0
rev=HEAD
while [ $# -gt 0 ]; do
  case $1 in
    --dir) dir=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --tests) tests=1; shift ;;
    --rev) rev=$2; shift 2 ;;
    *) echo "fresh_debian.sh: unknown option $1 (see the comment at its top)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "fresh_debian.sh: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }
command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap

# Every mount is made inside the tree's bind onto itself (below): one
# recursive unmount takes them all.
umount_all() {
  if mountpoint -q "$dir" 2>/dev/null; then umount -R -l "$dir"; fi
}
trap umount_all EXIT

if [ $keep = 0 ] || [ ! -x "$dir/bin/sh" ]; then
  umount_all
  # Never remove a tree with the host's /dev or /sys still mounted in it.
  if grep -q " $dir/" /proc/mounts; then
    echo "fresh_debian.sh: mounts remain under $dir; not removing it" >&2
    exit 1
  fi
  rm -rf "$dir"
  mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  echo "fresh_debian.sh: debootstrap bookworm (minbase) into $dir from ${mirror:-http://deb.debian.org/debian}"
  debootstrap --variant=minbase bookworm "$dir" "${mirror:-http://deb.debian.org/debian}" >"$dir.debootstrap.log" 2>&1 ||
    { tail -20 "$dir.debootstrap.log"; exit 1; }
fi
# The tree bound onto itself, so that / in the chroot is a mount point (`ip
# netns`, which the 3-host cluster test uses, remounts it); recursive binds of
# /sys with its cgroup filesystem (the cluster tests' slurmd needs it) and of
# /dev with /dev/pts.
if ! mountpoint -q "$dir"; then
  mount --bind "$dir" "$dir"
  mount --make-rprivate "$dir"
fi
mountpoint -q "$dir/proc" || mount -t proc proc "$dir/proc"
for d in sys dev; do mountpoint -q "$dir/$d" || mount --rbind "/$d" "$dir/$d"; done
mkdir -p "$dir/dev/shm"
mountpoint -q "$dir/dev/shm" || mount -t tmpfs tmpfs "$dir/dev/shm"
cp /etc/resolv.conf "$dir/etc/resolv.conf"
# An installed Debian has /etc/hosts naming the machine (the installer writes
# it; debootstrap does not): the Slurm tests reach the node by its name.
[ -f "$dir/etc/hosts" ] || cp /etc/hosts "$dir/etc/hosts"
rm -rf "$dir/root/bspk"
git clone -q "$src" "$dir/root/bspk"
git -C "$dir/root/bspk" checkout -q "$(git -C "$src" rev-parse "$rev")"
echo "fresh_debian.sh: $(git -C "$dir/root/bspk" log --oneline -1)"

quick='./install-deps.sh && cmake -S . -B build && cmake --build build -j2 && build/bspkrun -n 4 build/examples/radix_sort'
grep -qF "$quick" "$src/README.md" || { echo "fresh_debian.sh: the README's Quick start command is no longer: $quick" >&2; exit 1; }
run() {
  chroot "$dir" /usr/bin/env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/sh -c "cd /root/bspk && $1"
}
echo "fresh_debian.sh: $quick"
run "$quick"
echo "fresh_debian.sh: Quick start passed"
if [ $tests = 1 ]; then
  cmd="ctest --test-dir build -LE 'providers|wide' -j2 --output-on-failure"
  grep -qF "$cmd" "$src/README.md" || { echo "fresh_debian.sh: the README's test command changed" >&2; exit 1; }
  echo "fresh_debian.sh: $cmd"
  run "$cmd"
  echo "fresh_debian.sh: README test command passed"
fi
