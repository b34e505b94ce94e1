#!/bin/sh
# Install BSPk into a fresh prefix and use it the ways the README says:
# pkg-config with cc, and find_package(bspk) from CMake (shared and static);
# the C++ API (bspk.hpp) both ways too.
# Usage: check_install.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1
src=$2
prefix=$(mktemp -d /tmp/bspk-install.XXXXXX)
work=$(mktemp -d /tmp/bspk-user.XXXXXX)
trap 'rm -rf "$prefix" "$work"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/include/bspk.h"
test -x "$prefix/bin/bspkrun"
pcdir=$(dirname "$(find "$prefix" -name bspk.pc | head -1)")
export PKG_CONFIG_PATH="$pcdir"
cc -Wall -Wextra -o "$work/app" "$src/tests/install/app.c" $(pkg-config --cflags --libs bspk)
out=$("$prefix/bin/bspkrun" -n 4 "$work/app")
echo "$out"
test "$(echo "$out" | grep -c ': ok$')" -eq 4
cmake -S "$src/tests/install" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake" >/dev/null
"$prefix/bin/bspkrun" -n 2 "$work/cmake/app" | grep -c ': ok$' | grep -qx 2
"$prefix/bin/bspkrun" -n 2 "$work/cmake/app_static" | grep -c ': ok$' | grep -qx 2
# BSPlib: bsp.h in include/bspk, bspcc, bsprun, pkg-config bspk-bsplib, bspk::bsplib
test -f "$prefix/include/bspk/bsp.h"
test -x "$prefix/bin/bspcc" && test -x "$prefix/bin/bspcxx" && test -x "$prefix/bin/bsprun"
"$prefix/bin/bspcc" -O2 -Wall -o "$work/bsp_app" "$src/tests/install/bsp_app.c" -lm
# -show prints the command (as BSPonMPI's and MPI's wrappers), running nothing
"$prefix/bin/bspcc" -show -O2 prog.c | grep -q -- "-lbspk-bsplib" || { echo "bspcc -show: no link line"; exit 1; }
"$prefix/bin/bspcc" --show -O2 prog.c | grep -q -- "-lbspk-bsplib" || { echo "bspcc --show: no link line"; exit 1; }
# ... wherever it stands, the other arguments in their order
"$prefix/bin/bspcc" -O2 -show 'my prog.c' -o out | grep -q -- "-O2 my prog.c -o out .*-lbspk-bsplib" ||
  { echo "bspcc -O2 -show: not the command"; exit 1; }
# ... naming the installed library directory once (both libraries live there)
"$prefix/bin/bspcc" -show prog.c | grep -o -- "-Wl,-rpath," | wc -l | grep -qx 1 ||
  { echo "bspcc -show: the library directory more than once"; exit 1; }
"$prefix/bin/bsprun" -n 3 "$work/bsp_app" | grep -c ': bsp ok$' | grep -qx 3
# -static cannot link (BSPk and libfabric are shared libraries): a clear
# refusal with status 2, not the linker's "cannot find -lbspk-bsplib"
if "$prefix/bin/bspcc" -O2 -static -o "$work/bsp_static" "$src/tests/install/bsp_app.c" 2>"$work/static.err"; then
  echo "bspcc -static: linked, or did not refuse"; exit 1
fi
grep -q -- "^bspcc: -static is not supported: .*link without -static" "$work/static.err" ||
  { echo "bspcc -static: not the refusal:"; cat "$work/static.err"; exit 1; }
# ... the program's own -I directories before BSPk's: its own bsp.hpp (a
# wrapper of its own, as public C++ BSPlib programs carry) is the one found,
# and it includes bsp.h inside extern "C" { }, as such programs do
mkdir -p "$work/own/include"
cat >"$work/own/include/bsp.hpp" <<'HPP'
#pragma once
extern "C" {
#include <bsp.h>
}
namespace own { inline int nprocs() { return bsp_nprocs(); } }
HPP
cat >"$work/own/main.cpp" <<'CPP'
#include <bsp.hpp>
#include <cstdio>
struct Item { int pid; double x; };
int main() {
  bsp_begin(bsp_nprocs());
  Item out = {bsp_pid(), 0.5}, in = {-1, 0};
  bsp_send((bsp_pid() + 1) % own::nprocs(), NULL, &out, sizeof out);
  bsp_sync();
  const void *tag, *payload;
  if (bsp_hpmove(&tag, &payload) != (int)sizeof in) return 1;
  in = *static_cast<const Item *>(payload);
  if (in.pid == (bsp_pid() + own::nprocs() - 1) % own::nprocs() && in.x == 0.5) std::printf("%d: own ok\n", bsp_pid());
  bsp_end();
}
CPP
(cd "$work/own" && "$prefix/bin/bspcxx" -O2 -Wall -Iinclude main.cpp -o own_app) ||
  { echo "bspcxx -Iinclude: the program's own bsp.hpp was not the one found"; exit 1; }
"$prefix/bin/bsprun" -n 3 "$work/own/own_app" | grep -c ': own ok$' | grep -qx 3
cp "$src/tests/install/bsp_app.c" "$work/bsp_app.cpp"
"$prefix/bin/bspcxx" -O2 -o "$work/bsp_app_cxx" "$work/bsp_app.cpp"
"$prefix/bin/bsprun" -n 2 "$work/bsp_app_cxx" | grep -c ': bsp ok$' | grep -qx 2
# MulticoreBSP's C++ wrapper from the installed headers (bsp.hpp, mcbsp.hpp)
test -f "$prefix/include/bspk/bsp.hpp" && test -f "$prefix/include/bspk/mcbsp.hpp" && test -f "$prefix/include/bspk/mcbsp.h"
"$prefix/bin/bspcxx" -O2 -o "$work/mcbsp_program" "$src/tests/bsplib/mcbsp_program.cpp"
"$prefix/bin/bsprun" -n 2 "$work/mcbsp_program" | grep -c '^after begin total=1001 destroyed=0$' | grep -qx 1
# ... its C++ templates (element counts) and affinity interface, as its programs include them
test -f "$prefix/include/bspk/mcbsp-templates.hpp" && test -f "$prefix/include/bspk/mcbsp-affinity.h"
"$prefix/bin/bspcxx" -O2 -o "$work/mcbsp_templates" "$src/tests/bsplib/mcbsp_templates.cpp"
"$prefix/bin/bsprun" -n 2 "$work/mcbsp_templates" | grep -c '^templates pid=[01] ok$' | grep -qx 2
"$prefix/bin/bspcc" -O2 -o "$work/mcbsp_affinity" "$src/tests/bsplib/mcbsp_affinity.c"
"$work/mcbsp_affinity" none 2 | grep -c '^affinity pid=[01] cpus=all$' | grep -qx 2
cc -std=c99 -o "$work/bsp_app_pc" "$src/tests/install/bsp_app.c" $(pkg-config --cflags --libs bspk-bsplib)
"$prefix/bin/bsprun" -n 2 "$work/bsp_app_pc" | grep -c ': bsp ok$' | grep -qx 2
"$prefix/bin/bsprun" -n 2 "$work/cmake/bsp_app" | grep -c ': bsp ok$' | grep -qx 2
"$prefix/bin/bsprun" -n 2 "$work/cmake/bsp_app_cxx98" | grep -c ': c++98 ok$' | grep -qx 2
# A user's AddressSanitizer build of a correct program passes on tcp too:
# libbspk's default LeakSanitizer suppressions name libfabric's own leaks
# (fabric/lsan.cpp), and a leak of the program's is still reported.
if echo 'int main(void){return 0;}' | cc -fsanitize=address -x c - -o "$work/asan_probe" 2>/dev/null; then
  "$prefix/bin/bspcc" -fsanitize=address -g -o "$work/bsp_app_asan" "$src/tests/install/bsp_app.c" -lm
  BSPK_PROVIDER=tcp "$prefix/bin/bsprun" -n 2 "$work/bsp_app_asan" | grep -c ': bsp ok$' | grep -qx 2 ||
    { echo "an ASan build of bsp_app failed on tcp"; exit 1; }
fi
# The C++ API: bspk.hpp next to bspk.h; C++17 with pkg-config (and C++20),
# find_package(bspk) with CXX_STANDARD 17 (shared, static).
test -f "$prefix/include/bspk.hpp"
c++ -std=c++17 -Wall -Wextra -Werror -o "$work/app_cpp" "$src/tests/install/app_cpp.cpp" $(pkg-config --cflags --libs bspk)
"$prefix/bin/bspkrun" -n 3 "$work/app_cpp" | grep -c ': cpp ok$' | grep -qx 3
c++ -std=c++20 -Wall -Wextra -Werror -o "$work/app_cpp20" "$src/tests/install/app_cpp.cpp" $(pkg-config --cflags --libs bspk)
"$prefix/bin/bspkrun" -n 2 "$work/app_cpp20" | grep -c ': cpp ok$' | grep -qx 2
"$prefix/bin/bspkrun" -n 3 "$work/cmake/app_cpp" | grep -c ': cpp ok$' | grep -qx 3
"$prefix/bin/bspkrun" -n 2 "$work/cmake/app_cpp_static" | grep -c ': cpp ok$' | grep -qx 2
# The installed tools start without LD_LIBRARY_PATH (bspk-probe links libbspk).
if [ -x "$prefix/bin/bspk-probe" ]; then
  env -u LD_LIBRARY_PATH "$prefix/bin/bspk-probe" --help | grep -q '^bspk-probe: ' ||
    { echo "installed bspk-probe does not start without LD_LIBRARY_PATH"; exit 1; }
fi
echo "install check: pkg-config and find_package (shared, static) ok; BSPlib: bspcc, bspcxx, pkg-config, bspk::bsplib ok; C++ (bspk.hpp): pkg-config (C++17, C++20) and find_package (shared, static) ok"
