#!/usr/bin/env bash
# bench/convert/cpu.sh NEW_BUILD BASE_BUILD DIR [ROUNDS]: `weft convert DIR` to a deflated .pftrace
# with both builds, interleaved (ROUNDS rounds, default 5), with -j1 and -j2; medians of wall and
# CPU (user+sys). CPU is what compares on a shared machine; bytes per event of the last output.
# Environment: JOBS (default "1 2": the -j values), COMPRESS (e.g. none: --compress=none, to see
# the converter's own CPU without deflate's). Each round's two outputs are compared (a faster
# converter writes what the base build writes): the rounds where they differ are counted.
set -euo pipefail
new=$(cd "$1" && pwd); base=$(cd "$2" && pwd); d=$3; rounds=${4:-5}
jobs=${JOBS:-1 2}
extra=()
[ -n "${COMPRESS:-}" ] && extra=(--compress="$COMPRESS")
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
for r in $(seq "$rounds"); do
  for j in $jobs; do
    for v in base new; do
      b=$base; [ $v = new ] && b=$new
      /usr/bin/time -f "%e %U %S" -o "$t/x" "$b/weft" convert -q -j$j "${extra[@]}" "$d" -o "$t/$v.pftrace"
      read -r w u s < "$t/x"
      echo "$w" >> "$t/$v-$j.w"
      awk -v u="$u" -v s="$s" 'BEGIN {print u + s}' >> "$t/$v-$j.c"
    done
    cmp -s "$t/base.pftrace" "$t/new.pftrace" || echo "round $r -j$j: $(stat -c %s "$t/base.pftrace" "$t/new.pftrace" | tr '\n' ' ')" >> "$t/differ"
  done
done
med() { sort -g "$1" | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ev=$("$new/weft" info "$d" | awk '/^events:/ {print $2}')
echo "$d: $ev events, $rounds interleaved rounds, medians; ${COMPRESS:+--compress=$COMPRESS; }load $(cut -d' ' -f1 /proc/loadavg)"
if [ -s "$t/differ" ]; then
  echo "outputs: differ in $(wc -l < "$t/differ") of $((rounds * $(echo $jobs | wc -w))) rounds (base's and new's sizes):"
  cat "$t/differ"
else
  echo "outputs: the same bytes in every round"
fi
for j in $jobs; do
  for v in base new; do
    echo "$v -j$j: wall $(med "$t/$v-$j.w") s, CPU $(med "$t/$v-$j.c") s"
  done
  awk -v b="$(med "$t/base-$j.c")" -v n="$(med "$t/new-$j.c")" -v e="$ev" \
    'BEGIN {printf "-j%s CPU per event: base %.1f ns, new %.1f ns (%.2fx)\n", "'"$j"'", b * 1e9 / e, n * 1e9 / e, n / b}'
done
echo "$(awk "BEGIN {printf \"%.2f\", $(stat -c %s "$t/new.pftrace") / $ev}") B/event"
