#!/usr/bin/env bash
# bench/convert/cpu.sh NEW_BUILD BASE_BUILD DIR [ROUNDS]: `weft convert DIR` to a deflated .pftrace
# with both builds, interleaved (ROUNDS rounds, default 5), with -j1 and -j2; medians of wall and
# CPU (user+sys). CPU is what compares on a shared machine; bytes per event of the last output.
set -euo pipefail
new=$(cd "$1" && pwd); base=$(cd "$2" && pwd); d=$3; rounds=${4:-5}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
for r in $(seq "$rounds"); do
  for v in base new; do
    b=$base; [ $v = new ] && b=$new
    for j in 1 2; do
      /usr/bin/time -f "%e %U %S" -o "$t/x" "$b/weft" convert -q -j$j "$d" -o "$t/$v.pftrace"
      read -r w u s < "$t/x"
      echo "$w" >> "$t/$v-$j.w"
      awk -v u="$u" -v s="$s" 'BEGIN {print u + s}' >> "$t/$v-$j.c"
    done
  done
done
med() { sort -g "$1" | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ev=$("$new/weft" info "$d" | awk '/^events:/ {print $2}')
echo "$d: $ev events, $rounds interleaved rounds, medians; load $(cut -d' ' -f1 /proc/loadavg)"
for v in base new; do
  for j in 1 2; do
    echo "$v -j$j: wall $(med "$t/$v-$j.w") s, CPU $(med "$t/$v-$j.c") s"
  done
  echo "$v: $(awk "BEGIN {printf \"%.2f\", $(stat -c %s "$t/$v.pftrace") / $ev}") B/event"
done
