#!/bin/bash
# tests/check_layering.sh SRC -- the layering rules of README "Layout and
# layering", checked on the source tree:
#   1. each folder includes only the folders listed for it below (no edge
#      points up, none skips to a layer it must not know);
#   2. libfabric (an <rdma/...> include, an fi_ / FI_ identifier in code) appears
#      only in fabric/ (comments may name the calls);
#   3. include/bspk.hpp (the C++ API) includes only <bspk.h> and the standard
#      C++ library.
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
  [bsplib]="bsplib"
  [costmodel]="costmodel"
)
bad=0
for dir in "${!allowed[@]}"; do
  for f in $(ls "$dir"/*.h "$dir"/*.cpp 2>/dev/null); do
    while IFS= read -r inc; do
      top=${inc%%/*}
      case " ${allowed[$dir]} " in
        *" $top "*) ;;
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
[ $bad = 0 ] && echo "layering ok: ${!allowed[*]} include/bspk.hpp"
exit $bad
