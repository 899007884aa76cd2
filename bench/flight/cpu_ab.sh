#!/bin/bash
# bench/flight/cpu_ab.sh ROUNDS BUILD... : the flight recorder's CPU and wall time against a
# normal recording with equal buffers, per build, interleaved: `weft record -q --no-convert -o D
# {--options buffer_size=4M | --flight-recorder=16M} -- fib 30` (fib.c built here with -O2
# -finstrument-functions, 2.69 M calls), each timed by `perf stat -e task-clock` (the whole
# process tree's CPU, ms) and its wall clock (ms); medians over ROUNDS.
set -euo pipefail
rounds=$1; shift
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cat > "$t/fib.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(int argc, char **argv) { printf("%ld\n", fib(argc > 1 ? atoi(argv[1]) : 30)); return 0; }
C
cc -O2 -g -finstrument-functions "$t/fib.c" -o "$t/fib"
for ((i = 0; i < rounds; i++)); do
	for b in "$@"; do
		for m in normal flight; do
			rm -rf "$t/d"
			if [ $m = normal ]; then a="--options buffer_size=4M"; else a="--flight-recorder=16M"; fi
			s=$(date +%s%N)
			perf stat -x, -e task-clock "$b/weft" record -q --no-convert -o "$t/d" $a -- "$t/fib" 30 2>&1 >/dev/null |
				awk -F, -v k="$b $m" '/task-clock/ {print k, $1}' >> "$t/r"
			e=$(date +%s%N)
			echo "$b $m-wall $(((e - s) / 1000000))" >> "$t/r"
		done
	done
done
med() { sort -g | awk '{a[NR]=$1} END {printf "%.1f", (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "| build | normal, CPU ms | flight, CPU ms | flight / normal CPU | normal, wall ms | flight, wall ms |"
echo "|---|---|---|---|---|---|"
for b in "$@"; do
	v=()
	for k in normal flight normal-wall flight-wall; do v+=("$(grep "^$b $k " "$t/r" | awk '{print $3}' | med)"); done
	echo "| $b | ${v[0]} | ${v[1]} | $(awk -v a="${v[1]}" -v b="${v[0]}" 'BEGIN {printf "%.2fx", a / b}') | ${v[2]} | ${v[3]} |"
done
