#!/usr/bin/env bash
# bench/memory/record_ab.sh OLD_BUILD NEW_BUILD - whole `weft record -q --no-convert --memory` runs
# of mem_bench (THREADS x ITERS malloc+free of 16..4096 bytes) under two builds, interleaved:
# each round runs mem_bench untraced, then under each build. Medians over ROUNDS of the
# benchmark threads' CPU ns per event (CLOCK_THREAD_CPUTIME_ID, `added` = minus untraced), the
# writer threads' CPU ns per event (`weft info`'s overhead line: all the writers did, chunk
# index included) and the bytes per event on disk. Env: ROUNDS (7), ITERS (500000), THREADS (2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${ROUNDS:-7} ITERS=${ITERS:-500000} THREADS=${THREADS:-2}
work=$(mktemp -d /tmp/weft-record-ab.XXXXXX)
trap 'rm -rf "$work"' EXIT
gcc -O2 -pthread "$here/mem_bench.c" -o "$work/mb"
for ((r = 1; r <= ROUNDS; r++)); do
  "$work/mb" "$THREADS" "$ITERS" | sed -n 's/.*cpu_ns_per_event=\([0-9.]*\).*/\1/p' >>"$work/untraced"
  for k in 1 2; do
    b=$(eval echo "\${$k}")
    rm -rf "$work/t.data"
    c=$("$b/weft" record -q --no-convert --memory -o "$work/t.data" -- "$work/mb" "$THREADS" "$ITERS" | sed -n 's/.*cpu_ns_per_event=\([0-9.]*\).*/\1/p')
    "$b/weft" info "$work/t.data" >"$work/info"
    ev=$(awk '/^events:/{print $2}' "$work/info")
    wms=$(sed -n 's/.*writer threads \([0-9.]*\) ms CPU.*/\1/p' "$work/info" | awk '{s += $1} END{print s}')
    bpe=$(sed -n 's/^bytes disk: *[0-9]* (\([0-9.]*\) B\/event).*/\1/p' "$work/info")
    echo "$c $(awk -v w="$wms" -v e="$ev" 'BEGIN{printf "%.2f", w * 1e6 / e}') $bpe" >>"$work/b$k"
  done
done
med() { sort -g | awk '{a[NR] = $1} END{printf "%.2f", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
u=$(med <"$work/untraced")
echo "mem_bench $THREADS x $ITERS, $ROUNDS interleaved rounds, medians; untraced cpu ns/event $u"
echo "build | in-thread cpu ns/event (added) | writer cpu ns/event | B/event"
for k in 1 2; do
  b=$(eval echo "\${$k}")
  c=$(cut -d' ' -f1 "$work/b$k" | med)
  echo "$b | $c (+$(awk -v c="$c" -v u="$u" 'BEGIN{printf "%.2f", c - u}')) | $(cut -d' ' -f2 "$work/b$k" | med) | $(cut -d' ' -f3 "$work/b$k" | med)"
done
