#!/bin/sh
# The README's "Using BSPk from your program" holds a complete C program (the
# superstep of the paper's Figure 4) and a table of the examples' line counts;
# a user copies the one and reads the other. This builds the program as the
# README does (cc + libbspk), runs it at p = 1, 2, 3, checks that a failing
# bspk_init ends it with a non-zero status at once (no loop over a null
# region), and compares the table with `wc -l` of the examples.
#   check_readme_program.sh CC BUILD_DIR SOURCE_DIR
set -u
cc=$1
build=$2
src=$3
readme=$src/README.md
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The first ```c block after the line that introduces it.
awk '/^A superstep in the style of the paper.s Figure 4:$/ { seen = 1; next }
     seen && /^```c$/ { on = 1; next }
     on && /^```$/ { exit }
     on { print }' "$readme" >"$tmp/app.c"
[ -s "$tmp/app.c" ] || fail "README: no C program after 'A superstep in the style of the paper's Figure 4:'"
grep -q 'bspk_finalize' "$tmp/app.c" || fail "README: the Figure 4 program is cut short"
"$cc" -std=c99 -Wall -Wextra -Werror -I"$src/include" "$tmp/app.c" -o "$tmp/app" \
  -L"$build" -Wl,-rpath,"$build" -lbspk || fail "the README's Figure 4 program does not compile"
for p in 1 2 3; do
  timeout --foreground 60 "$build/bspkrun" -n $p "$tmp/app" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "the README's program at p = $p"; }
done
# A bspk_init that fails (an invalid frame size): the program stops, non-zero.
rc=0
BSPK_FRAME_SIZE=100 timeout --foreground 30 "$build/bspkrun" -n 2 "$tmp/app" >"$tmp/out" 2>&1 || rc=$?
[ $rc = 124 ] && fail "the README's program did not stop after bspk_init failed (timed out)"
[ $rc != 0 ] || fail "the README's program exited 0 although bspk_init failed"
grep -q 'frame size 100' "$tmp/out" || { cat "$tmp/out"; fail "no bspk_init error printed"; }

# | name | C lines | C++ lines |
rows=$(awk '/^\| example \| C lines \| C\+\+ lines \|$/ { on = 1; next }
            on && /^\|---/ { next }
            on && /^\|/ { print; next }
            on { exit }' "$readme")
[ -n "$rows" ] || fail "README: no table of the examples' line counts"
echo "$rows" | while IFS='|' read -r _ name c cxx _; do
  name=$(echo $name) c=$(echo $c) cxx=$(echo $cxx)
  have_c=$(wc -l <"$src/examples/$name.c") have_cxx=$(wc -l <"$src/examples/cpp/$name.cpp")
  [ "$have_c" = "$c" ] || fail "README: examples/$name.c has $have_c lines, the table says $c"
  [ "$have_cxx" = "$cxx" ] || fail "README: examples/cpp/$name.cpp has $have_cxx lines, the table says $cxx"
done || exit 1
echo "README program: builds, runs at p = 1, 2, 3, stops on a failed bspk_init; line-count table matches"
