#!/bin/bash
# bench/flight/overhead.sh [NEW_BUILD] [BASE_BUILD] [ROUNDS]: the flight recorder's wall time and
# drops against a normal recording with equal buffers, on three programs:
#   steps  BUILD/flightsteps steps 30000 100 20000 1 (3 M instants in 30000 `step` slices; a
#          30 ms `slow` step 20000 and weft_snapshot() after it; each build runs its own)
#   fib    fib(27) compiled here with gcc -O2 -finstrument-functions (1.27 M function events;
#          30-50 ms traced, so mostly start-up and exit)
#   fib32  the same program, fib(32) (14.1 M function events)
# and, per round, interleaved, for each build (NEW_BUILD, default build; BASE_BUILD, default
# /work/wt-base/build; leave it empty for none), four configurations:
#   untraced  the program alone (flightsteps with WEFT_OPTIONS=enable=0)
#   normal    weft record -q --no-convert -o D --options buffer_size=4M (4 MiB of buffers: the
#             flight recorder's cap on chunks waiting for the writers)
#   nblock    the normal recording with --options buffer_size=4M:overflow=block: no drops
#             (the program waits for its writer), as the flight recorder has none
#   flight    weft record -q --no-convert -o D --flight-recorder=16M
#   fblock    weft record -q --no-convert -o D --flight-recorder=16M --options overflow=block
# ROUNDS (default 5) rounds; medians of the wall seconds, their ratio to the normal recording's,
# the median of the per-round ratios (a configuration's wall / the normal recording's in the
# same round: what a load that changes between rounds leaves alone best) (the whole weft record, snapshots at
# exit included) and of the counts from weft info: the normal recording's "events:" and
# "dropped:", the flight recorder's last snapshot's "flight recorder: N events taken, M evicted"
# and the "events:" and "dropped:" of each snapshot (summed over the run's snapshots).
set -u
NEW=$(cd "${1:-build}" && pwd)
BASE=${2-/work/wt-base/build}
[ -n "$BASE" ] && BASE=$(cd "$BASE" && pwd)
ROUNDS=${3:-5}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat > "$T/fib.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(int argc, char **argv) { printf("%d\n", fib(argc > 1 ? atoi(argv[1]) : 27)); return 0; }
C
gcc -O2 -finstrument-functions -o "$T/fib" "$T/fib.c" || exit 1
builds=(new); [ -n "$BASE" ] && builds+=(base)
declare -A dir=([new]=$NEW [base]=$BASE)
confs=(untraced normal nblock flight fblock)
progs=(steps fib fib32)
med() { sort -g | awk '{a[NR]=$1} END {if (!NR) print "-"; else print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "machine: $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "new: $NEW ($(git -C "$NEW/.." rev-parse --short HEAD 2>/dev/null))"
[ -n "$BASE" ] && echo "base: $BASE ($(git -C "$BASE/.." rev-parse --short HEAD 2>/dev/null))"
echo "$ROUNDS interleaved rounds, medians"
run() { # run BUILD PROG CONF: prints "wall events dropped taken evicted in-snapshots"
	local B=$1 p=$2 c=$3 D=$T/d cmd wrap=() s e
	rm -rf "$D"
	if [ "$p" = steps ]; then cmd=("$B/flightsteps" steps 30000 100 20000 1); else cmd=("$T/fib" ${p#fib}); fi
	[ "$p" = fib ] && cmd=("$T/fib" 27)
	case $c in
	normal) wrap=("$B/weft" record -q --no-convert -o "$D" --options buffer_size=4M --) ;;
	nblock) wrap=("$B/weft" record -q --no-convert -o "$D" --options buffer_size=4M:overflow=block --) ;;
	flight) wrap=("$B/weft" record -q --no-convert -o "$D" --flight-recorder=16M --) ;;
	fblock) wrap=("$B/weft" record -q --no-convert -o "$D" --flight-recorder=16M --options overflow=block --) ;;
	esac
	s=$(date +%s%N)
	if [ $c = untraced ]; then
		WEFT_OPTIONS=enable=0 "${cmd[@]}" > /dev/null 2>&1
	else
		"${wrap[@]}" "${cmd[@]}" > /dev/null 2> "$T/err"
	fi
	e=$(date +%s%N)
	local wall ev=- dr=- tk=- evi=- sev=-
	wall=$(awk -v s="$s" -v e="$e" 'BEGIN {printf "%.3f", (e - s) / 1e9}')
	case $c in
	normal | nblock)
		"$B/weft" info "$D" > "$T/info" 2>&1
		ev=$(awk '/^events:/ {print $2; exit}' "$T/info")
		dr=$(awk '/^dropped:/ {print $2; exit}' "$T/info") ;;
	flight | fblock)
		dr=0 sev=0
		for sn in $(ls -d "$D"/snapshot-* 2>/dev/null | sort -t- -k2 -n); do
			"$B/weft" info "$sn" > "$T/info" 2>&1
			dr=$((dr + $(awk '/^dropped:/ {print $2; exit}' "$T/info")))
			sev=$((sev + $(awk '/^events:/ {print $2; exit}' "$T/info")))
			tk=$(awk '/flight recorder:/ {print $3; exit}' "$T/info")
			evi=$(awk '/flight recorder:/ {print $6; exit}' "$T/info")
		done
		ev=$tk ;;
	esac
	echo "$wall $ev $dr $tk $evi $sev"
}
for r in $(seq "$ROUNDS"); do
	for p in "${progs[@]}"; do
		for c in "${confs[@]}"; do
			for b in "${builds[@]}"; do
				[ $c = untraced ] && [ ${p:0:3} = fib ] && [ $b = base ] && continue # the same binary
				run "${dir[$b]}" "$p" "$c" >> "$T/$b.$p.$c"
			done
		done
	done
done
for p in "${progs[@]}"; do
	echo
	case $p in
	steps) echo "# steps: flightsteps steps 30000 100 20000 1" ;;
	fib) echo "# fib: fib 27 (gcc -O2 -finstrument-functions)" ;;
	fib32) echo "# fib32: fib 32 (gcc -O2 -finstrument-functions)" ;;
	esac
	echo "| build | configuration | wall s | / normal | per-round / normal | events recorded (flight: taken) | evicted | dropped | in snapshots |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
	for b in "${builds[@]}"; do
		nw=$(awk '{print $1}' "$T/$b.$p.normal" | med)
		for c in "${confs[@]}"; do
			f=$T/$b.$p.$c
			[ -s "$f" ] || f=$T/new.$p.$c
			w=$(awk '{print $1}' "$f" | med)
			ev=$(awk '{print $2}' "$f" | grep -v '^-$' | med)
			ei=$(awk '{print $5}' "$f" | grep -v '^-$' | med)
			dr=$(awk '{print $3}' "$f" | grep -v '^-$' | med)
			se=$(awk '{print $6}' "$f" | grep -v '^-$' | med)
			rt=$(awk -v w="$w" -v n="$nw" 'BEGIN {printf "%.3f", w / n}')
			pr=$(paste -d' ' "$f" "$T/$b.$p.normal" | awk '{print $1 / $7}' | med)
			pr=$(awk -v r="$pr" 'BEGIN {printf "%.3f", r}')
			echo "| $b | $c | $w | ${rt}x | ${pr}x | $ev | $ei | $dr | $se |"
		done
	done
	echo "per run (wall/events or taken/dropped/evicted), in round order:"
	for b in "${builds[@]}"; do for c in normal nblock flight fblock; do
		echo "  $b $c: $(awk '{printf "%s%s/%s/%s/%s", (NR > 1 ? "  " : ""), $1, $2, $3, $5}' "$T/$b.$p.$c")"
	done; done
done
