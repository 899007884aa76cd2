#!/bin/bash
# bench/flight/run.sh [BUILD] [PAIRS] [ROUNDS]: the flight recorder's costs, printed as a table
# for bench/RESULTS.md. The hot path: PAIRS begin/end pairs per run, normal recording and
# --flight-recorder (flight=64M) alternating for ROUNDS rounds, medians (the same code runs on
# the hot path; the ring lives in the writer), both with 4M of buffers and overflow=block, so
# a writer slower than the program shows as a slower program, not as drops. Writer CPU per event (its thread's schedstat) in
# both modes. Snapshot latency: weft_snapshot() on a full 64M and 512M ring (compression=0, ~85
# bytes per event), trigger to files written, median of 3.
set -e
B=${1:-build}
PAIRS=${2:-5000000}
ROUNDS=${3:-7}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
med() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
: > "$T/normal"; : > "$T/flight"; : > "$T/wn"; : > "$T/wf"
for r in $(seq "$ROUNDS"); do
	for m in normal flight; do
		# the same buffers in both (the flight recorder's pool is at most 4M), a program
		# that waits for a free buffer rather than drop: the same work in both modes
		opts="output=$T/d:buffer_size=4M"
		[ $m = flight ] && opts="$opts:flight=64M,noexit"
		rm -rf "$T/d"
		out=$(WEFT_OPTIONS="$opts:overflow=block" "$B/flight_bench" hot "$PAIRS")
		echo "$out" | awk '{print $2}' >> "$T/$m"
		echo "$out" | awk '{print $4}' >> "$T/w${m:0:1}"
	done
done
n=$(med < "$T/normal"); f=$(med < "$T/flight")
wn=$(med < "$T/wn"); wf=$(med < "$T/wf")
echo "# hot path: $PAIRS begin/end pairs per run, $ROUNDS interleaved rounds, medians"
echo "| mode | ns/event (program) | writer CPU ns/event |"
echo "|---|---|---|"
echo "| recording | $n | $wn |"
echo "| --flight-recorder=64M | $f | $wf |"
awk -v n="$n" -v f="$f" 'BEGIN {printf "flight / normal hot path: %.3f\n", f / n}'
echo
echo "# snapshot latency (weft_snapshot() on a full ring, trigger to files written), median of 3"
echo "| ring | events in window | ms |"
echo "|---|---|---|"
for cfg in "64M 1000000" "512M 7000000"; do
	set -- $cfg
	: > "$T/s"
	for r in 1 2 3; do
		rm -rf "$T/d"
		WEFT_OPTIONS="output=$T/d:flight=$1,noexit:overflow=block:compression=0" "$B/flight_bench" snap "$2" |
			awk '{print $2}' >> "$T/s"
		ev=$("$B/weft" info "$T/d/snapshot-1" | awk '/not in window/ {print $(NF-6)}')
	done
	echo "| $1 | $ev | $(med < "$T/s") |"
done
