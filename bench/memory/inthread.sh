#!/usr/bin/env bash
# bench/memory/inthread.sh BUILD... - the in-thread CPU per malloc or free of `weft record
# --memory` for each build given (e.g. the previous commit's and the new one), interleaved:
# each round runs mem_bench untraced, then under each build; medians and minimums of the
# benchmark thread's CPU ns per event (CLOCK_THREAD_CPUTIME_ID: preemption on a busy machine is
# not counted). Env: ROUNDS (15), ITERS (300000), THREADS (1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${ROUNDS:-15} ITERS=${ITERS:-300000} THREADS=${THREADS:-1}
work=$(mktemp -d /tmp/weft-inthread.XXXXXX)
trap 'rm -rf "$work"' EXIT
gcc -O2 -pthread "$here/mem_bench.c" -o "$work/mb"
cpu() { sed -n 's/.*cpu_ns_per_event=\([0-9.]*\).*/\1/p'; }
for ((r = 1; r <= ROUNDS; r++)); do
  "$work/mb" "$THREADS" "$ITERS" | cpu >>"$work/0"
  k=0
  for b in "$@"; do
    k=$((k + 1))
    rm -rf "$work/t.data"
    "$b/weft" record -q --no-convert --memory -o "$work/t.data" -- "$work/mb" "$THREADS" "$ITERS" | cpu >>"$work/$k"
  done
done
stat() { sort -g "$1" | awk '{a[NR] = $1} END{printf "%.2f (min %.2f)", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2, a[1]}'; }
echo "mem_bench $THREADS x $ITERS, $ROUNDS interleaved rounds: cpu ns/event, median (min)"
echo "untraced: $(stat "$work/0")"
k=0
for b in "$@"; do k=$((k + 1)); echo "$b: $(stat "$work/$k")"; done
