#!/bin/sh
# bench/sched/run.sh BUILD [ROUNDS]: pingpong (200k round trips through pipes) untraced, under
# `weft record --sched` and under `perf sched record`, interleaved ROUNDS times (default 5);
# prints each run's wall seconds (as pingpong measures them) and the medians.
set -e
B=${1:?usage: run.sh BUILD [ROUNDS]}
R=${2:-5}
D=$(mktemp -d)
cc -O2 -pthread -o "$D/pingpong" "$(dirname "$0")/pingpong.c"
for i in $(seq "$R"); do
	echo "none $("$D/pingpong")"
	echo "weft $("$B/weft" record -q --no-convert -o "$D/w.data" --sched -- "$D/pingpong")"
	if command -v perf >/dev/null; then
		echo "perf $(perf sched record -q -o "$D/perf.data" -- "$D/pingpong" 2>/dev/null | tail -1)"
	fi
done | tee "$D/runs"
for m in none weft perf; do
	grep "^$m " "$D/runs" | sort -k2 -n | awk -v m=$m '{v[NR]=$2} END {if (NR) print m, "median", v[int((NR+1)/2)]}'
done
"$B/weft" info "$D/w.data" | grep "sched:"
ls -l "$D/w.data" | tail -n +2
rm -rf "$D"
