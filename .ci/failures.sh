#!/bin/sh
# .ci/failures.sh BUILD -- after a failed ctest run, print each failed test's
# FAIL lines (and a few lines of context) last, where CI's excerpt of the
# output (its end) shows them; ctest's own output puts them far up.
BUILD=${1:-build}
T=$BUILD/Testing/Temporary
[ -f "$T/LastTestsFailed.log" ] || exit 0
echo "==== why the failed tests failed (from $T/LastTest.log) ===="
cut -d: -f2- "$T/LastTestsFailed.log" | while read -r name; do
  echo "---- $name"
  awk -v t="$name" '
    $0 ~ "^[0-9]+/[0-9]+ Test: " t "$" { on = 1; next }
    on && /^<end of output>/ { exit }
    on && /FAIL|[Ff]ailed|error|Error|hit its time limit|Timeout/ { print; n = 8; next }
    on && n > 0 { print; n-- }
  ' "$T/LastTest.log" | head -n 40
done
