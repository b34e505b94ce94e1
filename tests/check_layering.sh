#!/bin/bash
# tests/check_layering.sh SRC -- the layering rules of README "Layout and
# layering", checked on the source tree:
#   1. each folder includes only the folders listed for it below (no edge
#      points up, none skips to a layer it must not know);
#   2. libfabric (an <rdma/...> include, an fi_ / FI_ identifier in code) appears
#      only in fabric/ (comments may name the calls);
#   3. include/bspk.hpp (the C++ API) includes only <bspk.h> and the standard
#      C++ library (and, at its end, "bspk_coll.hpp");
#   4. coll/ (the collectives, a layer over the C API inside libbspk) and
#      include/bspk_coll.h / bspk_coll.hpp include only <bspk.h>,
#      <bspk_coll.h>, <bspk.hpp> (the .hpp) and the standard library.
# Four headers of base/ are open to every layer, bsplib/ and coll/ too:
# base/copy.h (copy_bytes, memcpy without the slow offsets of rep movsb on
# AMD Zen) and base/exec_path.h (a program found as execvp would; bspkrun
# and bsplib/spawn.cpp) and base/end_of_job.h (the value of bspkrun's
# job-ending SIGTERM to a program that spawned it) and base/exit_status.h
# (an exit handler told the exit status; api/init.cpp and
# bsplib/spawn.cpp); header-only, no runtime state.
set -u
src=${1:?usage: check_layering.sh SRC}
cd "$src" || exit 2
declare -A allowed=(
  [base]="base"
  [fabric]="base fabric"
  [comem]="base fabric comem"
  [boot]="base boot"
  [sync]="base boot comem fabric sync"
  [mp]="base comem sync mp"
  [dsm]="base comem sync dsm"
  [api]="base boot comem fabric sync mp dsm api"
  [bspkrun]="base boot"
  [bsplib]="bsplib base/copy.h base/end_of_job.h base/exec_path.h base/exit_status.h"
  [costmodel]="costmodel"
  [coll]="coll base/copy.h"
)
bad=0
for dir in "${!allowed[@]}"; do
  for f in $(ls "$dir"/*.h "$dir"/*.cpp 2>/dev/null); do
    while IFS= read -r inc; do
      top=${inc%%/*}
      case " ${allowed[$dir]} " in
        *" $top "* | *" $inc "*) ;;
        *) echo "FAIL: $f includes \"$inc\": $dir/ may include only: ${allowed[$dir]}"; bad=1 ;;
      esac
    done < <(sed -n 's/^#include "\([a-z_]*\/[^"]*\)".*/\1/p' "$f")
    if [ "$dir" != fabric ]; then
      # code only: drop // comments and string literals (messages may name the calls)
      if sed 's|//.*||; s|"[^"]*"||g' "$f" | grep -nE '#include <rdma/|\bfi_[a-z_]+\b|\bFI_[A-Z_]+\b|\bfid_[a-z_]+\b' \
           | grep -vE 'FI_PROVIDER|FI_TCP_IFACE|FI_UNIVERSE_SIZE|FI_OFI_RXM' >/tmp/layering.$$; then
        sed "s|^|FAIL: $f: libfabric above fabric/: |" /tmp/layering.$$
        bad=1
      fi
      rm -f /tmp/layering.$$
    fi
  done
done
# 3. include/bspk.hpp, the C++ API, stands on the public C API alone: it
#    includes <bspk.h> and standard C++ headers (no '.', no '/': no runtime
#    folder, no libfabric), never a quoted header.
hpp=include/bspk.hpp
if [ -f "$hpp" ]; then
  while IFS= read -r line; do
    inc=$(printf '%s\n' "$line" | sed -n 's/^#include [<"]\([^>"]*\)[>"].*/\1/p')
    case "$line" in
      '#include "bspk_coll.hpp"'*) ;;  # the collectives' C++ forms, over the same API
      '#include "'*) echo "FAIL: $hpp: $line: the C++ API includes no quoted header"; bad=1 ;;
      *) if [ "$inc" != bspk.h ] && printf '%s' "$inc" | grep -q '[./]'; then
           echo "FAIL: $hpp: $line: the C++ API may include only <bspk.h> and standard C++ headers"; bad=1
         fi ;;
    esac
  done < <(grep -E '^#include' "$hpp")
  if sed 's|//.*||; s|"[^"]*"||g' "$hpp" | grep -nE '\bfi_[a-z_]+\b|\bFI_[A-Z_]+\b|\bfid_[a-z_]+\b' >/tmp/layering.$$; then
    sed "s|^|FAIL: $hpp: libfabric in the C++ API: |" /tmp/layering.$$
    bad=1
  fi
  rm -f /tmp/layering.$$
fi
# 4. the collectives: coll/ sees the public C API alone (no runtime folder,
#    no libfabric: rules 1 and 2 above), and so do their headers.
for f in $(ls coll/*.h coll/*.cpp include/bspk_coll.h include/bspk_coll.hpp 2>/dev/null); do
  while IFS= read -r line; do
    inc=$(printf '%s\n' "$line" | sed -n 's/^#include [<"]\([^>"]*\)[>"].*/\1/p')
    case "$f:$inc" in
      *:bspk.h|*:bspk_coll.h|include/bspk_coll.hpp:bspk.hpp|coll/*:coll/*|coll/*:base/copy.h) ;;
      *) if printf '%s' "$inc" | grep -q '[./]'; then
           echo "FAIL: $f: $line: the collectives may include only <bspk.h>, <bspk_coll.h> (<bspk.hpp>) and the standard library"
           bad=1
         fi ;;
    esac
  done < <(grep -E '^#include' "$f")
  if sed 's|//.*||; s|"[^"]*"||g' "$f" | grep -nE '\bfi_[a-z_]+\b|\bFI_[A-Z_]+\b|\bfid_[a-z_]+\b' >/tmp/layering.$$; then
    sed "s|^|FAIL: $f: libfabric in the collectives: |" /tmp/layering.$$
    bad=1
  fi
  rm -f /tmp/layering.$$
done
[ $bad = 0 ] && echo "layering ok: ${!allowed[*]} include/bspk.hpp include/bspk_coll.h include/bspk_coll.hpp"
exit $bad
