#!/bin/bash
# bench/top/cost.sh [NEW_BUILD] [BASE_BUILD] [ROUNDS]: what weft top's live view costs a
# recording (issue 31). The program: fib(N) compiled here with gcc -O2 -finstrument-functions
# (N=34: 36.9 M function events). Per round, interleaved, `weft record -q --no-convert -o D
# --options overflow=block` (every event kept: no drop count to tell apart) with:
#   base     BASE_BUILD (default /work/wt-base/build): before weft top
#   new      NEW_BUILD (default build), nobody watching: the writer keeps each thread's stack
#   live     NEW_BUILD with live=1: calls and self times counted from the start (what a watch
#            costs the writer, without the queries)
#   watched  NEW_BUILD with `weft top -d 0.2 -f json D` asking 5 times a second from the start
# Medians of: the wall seconds of weft record, the writer threads' CPU per event (weft info's
# "overhead: writer threads"), the program's user+system CPU per event minus the writer's (the
# program's threads: weft info's "usage" less the writer), each one's ratio to base.
set -u
NEW=$(cd "${1:-build}" && pwd)
BASE=$(cd "${2:-/work/wt-base/build}" && pwd)
ROUNDS=${3:-5}
N=${FIB:-34}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat > "$T/fib.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(int argc, char **argv) { printf("%d\n", fib(argc > 1 ? atoi(argv[1]) : 27)); return 0; }
C
gcc -O2 -finstrument-functions -o "$T/fib" "$T/fib.c" || exit 1
med() { sort -g | awk '{a[NR]=$1} END {if (!NR) print "-"; else print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "machine: $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "new: $NEW ($(git -C "$NEW/.." rev-parse --short HEAD 2>/dev/null)); base: $BASE ($(git -C "$BASE/.." rev-parse --short HEAD 2>/dev/null))"
echo "fib($N), $ROUNDS interleaved rounds, medians"
confs=(base new live watched)
run() { # run CONF: prints "wall writer_ns_per_event program_ns_per_event events"
	local c=$1 B=$NEW D=$T/d opts=overflow=block s e w=""
	rm -rf "$D"
	[ $c = base ] && B=$BASE
	[ $c = live ] && opts=$opts:live=1
	s=$(date +%s%N)
	"$B/weft" record -q --no-convert -o "$D" --options "$opts" -- "$T/fib" "$N" > /dev/null &
	local rec=$!
	if [ $c = watched ]; then
		while [ ! -S "$D/.control.$rec" ] && kill -0 $rec 2>/dev/null; do sleep 0.005; done
		"$B/weft" top -d 0.2 -f json "$D" > "$T/top.json" 2>/dev/null &
		w=$!
	fi
	wait $rec
	e=$(date +%s%N)
	[ -n "$w" ] && { kill $w 2>/dev/null; wait $w 2>/dev/null; }
	"$NEW/weft" info "$D" | awk -v wall=$(( (e - s) / 1000 )) '
		/^events:/ {ev = $2}
		/overhead: writer threads/ {wr = $4}
		/usage:/ {for (i = 1; i <= NF; i++) {if ($(i) == "user,") u = $(i-2); if ($(i) == "system") sy = $(i-2)}}
		END {printf "%.4f %.2f %.2f %d\n", wall / 1e6, wr * 1e6 / ev, ((u + sy) * 1e9 - wr * 1e6) / ev, ev}'
	[ $c = watched ] && [ ! -s "$T/top.json" ] && echo "watched: weft top wrote nothing" >&2
}
declare -A W P E
for ((r = 1; r <= ROUNDS; r++)); do
	for c in "${confs[@]}"; do
		read -r wall wr pr ev < <(run $c)
		W[$c]+="$wall "; P[$c]+="$pr "; E[$c]+="$wr "
	done
done
bw=$(echo ${W[base]} | tr ' ' '\n' | med); be=$(echo ${E[base]} | tr ' ' '\n' | med); bp=$(echo ${P[base]} | tr ' ' '\n' | med)
echo "| configuration | wall s | / base | writer ns/event | / base | program ns/event | / base |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for c in "${confs[@]}"; do
	w=$(echo ${W[$c]} | tr ' ' '\n' | med); e=$(echo ${E[$c]} | tr ' ' '\n' | med); p=$(echo ${P[$c]} | tr ' ' '\n' | med)
	awk -v c=$c -v w=$w -v e=$e -v p=$p -v bw=$bw -v be=$be -v bp=$bp \
		'BEGIN {printf "| %s | %.3f | %.3fx | %.2f | %.3fx | %.2f | %.3fx |\n", c, w, w / bw, e, e / be, p, p / bp}'
done
for c in "${confs[@]}"; do echo "  $c wall: ${W[$c]}; writer: ${E[$c]}; program: ${P[$c]}"; done
