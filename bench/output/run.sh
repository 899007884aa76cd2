#!/usr/bin/env bash
# bench/output/run.sh BUILD - the default output of `weft record`: size of trace.pftrace
# (plain packets vs zlib-compressed batches, bytes per event) and the time `weft record` takes
# with its default conversion against --no-convert, on a function trace (fib(N) built with
# -finstrument-functions: nothing but calls, the worst case for the conversion's share).
# Rounds interleave the two modes; medians of user+sys CPU and wall time.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
n=${FIB_N:-29}
rounds=${ROUNDS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/fib.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(int argc, char **argv) { printf("%ld\n", fib(argc > 1 ? atoi(argv[1]) : 29)); return 0; }
C
cc -O2 -g -finstrument-functions "$tmp/fib.c" -o "$tmp/fib"
W=$build/weft
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
for r in $(seq "$rounds"); do
  for mode in noconv default; do
    rm -rf "$tmp/d.data"
    flag=; [ "$mode" = noconv ] && flag=--no-convert
    /usr/bin/time -f "%e %U %S" -o "$tmp/t" "$W" record -q $flag -o "$tmp/d.data" -- "$tmp/fib" "$n" >/dev/null
    read -r wall user sys < "$tmp/t"
    echo "$wall" >> "$tmp/$mode.wall"
    echo "$user $sys" | awk '{print $1+$2}' >> "$tmp/$mode.cpu"
  done
done
events=$("$W" info "$tmp/d.data" | awk '/^events:/ {print $2}')
weftbytes=$(cat "$tmp"/d.data/*.wmeta "$tmp"/d.data/*.wevents | wc -c)
"$W" convert -q "$tmp/d.data" -o "$tmp/plain.pftrace" --compress=none
"$W" convert -q "$tmp/d.data" -o "$tmp/deflate.pftrace"
plain=$(stat -c %s "$tmp/plain.pftrace"); defl=$(stat -c %s "$tmp/deflate.pftrace")
nw=$(median < "$tmp/noconv.wall"); dw=$(median < "$tmp/default.wall")
nc=$(median < "$tmp/noconv.cpu"); dc=$(median < "$tmp/default.cpu")
echo "machine: $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
echo "command: bench/output/run.sh $1   (fib($n), $rounds interleaved rounds, medians)"
echo
echo "| weft record output                       | value |"
echo "|------------------------------------------|-------|"
printf "| function events                          | %s |\n" "$events"
printf "| weft data (.wmeta + .wevents), B/event   | %.2f |\n" "$(awk "BEGIN {print $weftbytes / $events}")"
printf "| trace.pftrace plain packets, B/event     | %.2f |\n" "$(awk "BEGIN {print $plain / $events}")"
printf "| trace.pftrace compressed (default), B/ev | %.2f |\n" "$(awk "BEGIN {print $defl / $events}")"
printf "| record --no-convert, wall s / CPU s      | %s / %s |\n" "$nw" "$nc"
printf "| record (default conversion), wall / CPU  | %s / %s |\n" "$dw" "$dc"
printf "| ratio default / --no-convert, wall (CPU) | %.2fx (%.2fx) |\n" "$(awk "BEGIN {print $dw / $nw}")" "$(awk "BEGIN {print $dc / $nc}")"
