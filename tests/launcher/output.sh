#!/bin/bash
# tests/launcher/output.sh BSPKRUN CASE -- bspkrun forwards its processes'
# output whole, line by line, in bounded memory:
#   many_lines  4 processes print 100,000 short lines each on stdout and on
#               stderr (--tag-output): every line arrives once, whole, with its
#               process's prefix, in each process's order;
#   long_line   pid 0 writes 64 MiB without a newline, the others lines on
#               stderr, with bspkrun's heap limited to 48 MiB (RLIMIT_DATA):
#               the line arrives whole (one prefix, ended with a newline at
#               its end) -- bspkrun forwards a line longer than 1 MiB in
#               pieces instead of holding it for its newline (until
#               2026-12-04 it held it all: 400 MB for two 100 MB lines).
#   long_line_mixed  pid 0 writes a 3 MiB line in pieces over about a
#               second while the others print short lines on the same stdout,
#               with and without --tag-output: every line out is wholly pid
#               0's or wholly another's (another's line is never glued onto a
#               piece: until 2026-12-07 it was), and every byte arrives.
#   background  3 processes each start `sleep 20 &` (holding their stdout and
#               stderr) and exit: bspkrun ends within a few seconds with
#               status 0 and every line they wrote, the last one without its
#               newline included (until 2026-12-05 it waited for the sleeps).
set -u
bspkrun=${1:?usage: output.sh BSPKRUN CASE} case_=${2:?}
# shellcheck source=tests/launcher/lib.sh
. "$(dirname "$0")/lib.sh"
unset BSPK_VERBOSE

case "$case_" in
  many_lines)
    n=100000
    run_job 120 "$bspkrun" --tag-output -n 4 sh -c \
      "seq -f \"pid \$BSPK_RANK line %.0f\" $n; seq -f \"pid \$BSPK_RANK err %.0f\" $n >&2"
    expect_rc 0
    for r in 0 1 2 3; do
      # This process's lines, prefix removed, must be exactly seq's.
      diff -q <(grep "^\[$r\] " "$out" | sed "s/^\[$r\] //") <(seq -f "pid $r line %.0f" $n) >/dev/null ||
        fail "pid $r's stdout lines are not its $n lines, whole and in order"
      diff -q <(grep "^\[$r\] " "$err" | sed "s/^\[$r\] //") <(seq -f "pid $r err %.0f" $n) >/dev/null ||
        fail "pid $r's stderr lines are not its $n lines, whole and in order"
    done
    [ "$(wc -l <"$out")" = $((4 * n)) ] || fail "stdout has $(wc -l <"$out") lines, not $((4 * n))"
    ;;
  long_line)
    bytes=$((64 << 20))
    run_job 120 prlimit --data=$((48 << 20)) "$bspkrun" --tag-output -n 3 sh -c \
      "if [ \$BSPK_RANK = 0 ]; then head -c $bytes /dev/zero | tr '\\0' x; else seq -f \"pid \$BSPK_RANK err %.0f\" 1000 >&2; fi"
    expect_rc 0
    [ "$(wc -c <"$out")" = $((bytes + 5)) ] || fail "stdout has $(wc -c <"$out") bytes, not '[0] ', $bytes x and a newline"
    [ "$(head -c 4 "$out")" = "[0] " ] || fail "stdout does not start with '[0] '"
    [ "$(tr -d x <"$out" | od -An -c | tr -d ' ')" = '[0]\n' ] || fail "stdout has more than one prefix or bytes other than x"
    [ "$(grep -c '^\[[12]\] pid [12] err ' "$err")" = 2000 ] || fail "the others' 2000 stderr lines are not all whole"
    ;;
  long_line_mixed)
    # shellcheck disable=SC2016
    prog='if [ $BSPK_RANK = 0 ]; then
            for i in 1 2 3 4 5 6; do head -c 524288 /dev/zero | tr "\0" x; sleep 0.15; done; echo
          else
            for b in $(seq 20); do seq -f "pid $BSPK_RANK line %.0f" $((b * 100 - 99)) $((b * 100)); sleep 0.05; done
          fi'
    for opt in "" --tag-output; do
      # shellcheck disable=SC2086
      run_job 60 "$bspkrun" $opt -n 3 sh -c "$prog"
      expect_rc 0
      pre='' && [ -n "$opt" ] && pre='\[0\] '
      pre12='' && [ -n "$opt" ] && pre12='\[[12]\] '
      bad=$(grep -Evc "^${pre}x+$|^${pre12}pid [12] line [0-9]+$" "$out")
      [ "$bad" = 0 ] || fail "${opt:-plain}: $bad line(s) mix two processes' output: $(grep -Ev "^${pre}x+$|^${pre12}pid [12] line [0-9]+$" "$out" | head -2 | cut -c1-60; echo; grep -Ev "^${pre}x+$|^${pre12}pid [12] line [0-9]+$" "$out" | head -2 | rev | cut -c1-60 | rev)"
      [ "$(tr -cd x <"$out" | wc -c)" = $((6 * 524288)) ] || fail "${opt:-plain}: $(tr -cd x <"$out" | wc -c) x's out, not $((6 * 524288))"
      [ "$(grep -Ec "pid [12] line" "$out")" = 4000 ] || fail "${opt:-plain}: the others' 4000 lines are not all there"
      [ "$(grep -c x "$out")" -gt 1 ] || echo "note: ${opt:-plain}: pid 0's line came out in one piece this time (no interleaving to check)"
    done
    ;;
  background)
    # shellcheck disable=SC2016
    run_job 60 "$bspkrun" --tag-output -n 3 sh -c \
      'echo "pid $BSPK_RANK start"; echo "pid $BSPK_RANK err" >&2; sleep 20 & printf "pid %s end" "$BSPK_RANK"'
    expect_rc 0
    [ "$secs" -lt 10 ] || fail "bspkrun waited ${secs} s for the processes' background children"
    for r in 0 1 2; do
      expect_out "^\[$r\] pid $r start$"
      expect_out "^\[$r\] pid $r end$"
      expect_err "^\[$r\] pid $r err$"
    done
    ;;
  *)
    echo "output.sh: unknown case $case_" >&2
    exit 2
    ;;
esac
echo "ok: $case_"
