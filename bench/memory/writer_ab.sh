#!/usr/bin/env bash
# bench/memory/writer_ab.sh OLD_SRC NEW_SRC TRACE... - the writer's cost per event of two source
# trees' packing and zstd (bench/memory/writer_bench.c built against each), interleaved: each
# round runs both on each trace; medians over ROUNDS (env, 7) of ns/event per step and the
# total (pack + zstd + checksum), and the bytes per event on disk (zstd output + chunk headers).
# Env: LEVEL (1), CHUNKS (8: the first chunks of each trace), REPS (9: best of, per run).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
old=$1 new=$2
shift 2
ROUNDS=${ROUNDS:-7}
export LEVEL=${LEVEL:-1}
export CHUNKS=${CHUNKS:-8} REPS=${REPS:-9}
work=$(mktemp -d /tmp/weft-writer-ab.XXXXXX)
trap 'rm -rf "$work"' EXIT
for t in old new; do
  src=${!t}
  gcc -O2 -DZSTD_STATIC_LINKING_ONLY -I "$src/src" -I "$src/include" "$here/writer_bench.c" -lzstd -o "$work/wb-$t"
done
for ((r = 1; r <= ROUNDS; r++)); do
  for tr in "$@"; do
    for t in old new; do
      "$work/wb-$t" "$tr" "$LEVEL" | awk -v t="$t" -v tr="$tr" '
        {split($2, a, "="); ns[$1] = a[2]; if ($3 != "") {split($3, b, "="); by[$1] = b[2]}}
        END {z = "step=zstd" ENVIRON["LEVEL"]; printf "%s %s %s %s %s %s %s\n", tr, t, ns["step=pack"], ns[z], ns["step=checksum"], ns["step=pack"] + ns[z] + ns["step=checksum"], by[z]}' >>"$work/rows"
    done
  done
done
med() { sort -g | awk '{a[NR] = $1} END{printf "%.2f", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
echo "writer ns per event, median of $ROUNDS interleaved rounds (best of $REPS passes over $CHUNKS chunks each), level $LEVEL"
echo "trace tree pack zstd checksum total B/event"
for tr in "$@"; do
  for t in old new; do
    row="$tr $t"
    for c in 3 4 5 6 7; do row="$row $(awk -v tr="$tr" -v t="$t" -v c="$c" '$1 == tr && $2 == t {print $c}' "$work/rows" | med)"; done
    echo "$row"
  done
done
