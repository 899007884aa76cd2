#!/bin/bash
# bench/flight/crash.sh [N] [WEFT_BUILD_DIR]: is the crash window written? N (default 100) kills
# of `weft record -q --no-convert --flight-recorder=4M -o DIR -- BUILD/flightsteps spin 1` (main
# thread and one worker, each far faster than the writer), round-robin over: the signal (SEGV,
# BUS, ABRT, TERM; run i: i % 4), the thread it is sent to (main: kill PID; worker: tgkill, via
# python3 ctypes syscall 234 on x86-64; (i / 4) % 2) and the load beside it (none, or two busy
# loops `sh -c 'while :; do :; done'`; (i / 8) % 2). The kill comes 0.2-1.0 s after the
# program's "ready" line (0.2 s x (1 + i % 5)). A run counts as written when weft record's exit
# status is the signal's (128 + signo), DIR/snapshot-1 exists, `weft info DIR/snapshot-1`
# says "killed by SIG<the signal>" and both threads have events in it; otherwise the line says what DIR holds (the content of
# window-not-written-*.txt where there is one); a written one says the snapshot's events and its
# window's length, and each run the seconds from the kill to weft record's exit (0.1 s polls).
# BUILD needs weft and flightsteps (its spin mode;
# for an older build, build tests/programs/flightsteps.c of this checkout there).
set -u
N=${1:-100}
B=$(cd "${2:-build}" && pwd)
T=$(mktemp -d)
loads=()
cleanup() { for p in "${loads[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT
sigs=(SEGV BUS ABRT TERM)
declare -A signo=([SEGV]=11 [BUS]=7 [ABRT]=6 [TERM]=15)
declare -A ok tot
echo "machine: $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "build: $B ($(git -C "$B/.." rev-parse --short HEAD 2>/dev/null))"
echo "runs: $N"
for ((i = 0; i < N; i++)); do
	sig=${sigs[i % 4]}
	thr=$([ $(((i / 4) % 2)) = 0 ] && echo main || echo worker)
	load=$([ $(((i / 8) % 2)) = 0 ] && echo idle || echo 2busy)
	delay=$(awk -v k=$((i % 5)) 'BEGIN {printf "%.1f", 0.2 * (1 + k)}')
	loads=()
	if [ "$load" = 2busy ]; then
		sh -c 'while :; do :; done' & loads+=($!)
		sh -c 'while :; do :; done' & loads+=($!)
	fi
	D=$T/d$i
	: > "$T/out"
	rm -f "$T/rc"
	( "$B/weft" record -q --no-convert --flight-recorder=4M -o "$D" -- "$B/flightsteps" spin 1 \
		> "$T/out" 2> "$T/err"; echo $? > "$T/rc" ) 2>/dev/null &
	wp=$!
	for ((w = 0; w < 300; w++)); do
		grep -q '^ready' "$T/out" && break
		sleep 0.05
	done
	pid=; tid=
	read -r _ pid tid < "$T/out"
	sleep "$delay"
	if [ "$thr" = main ]; then
		kill -"$sig" "$pid"
	else
		/usr/bin/python3 -c 'import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
sys.exit(0 if libc.syscall(234, int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])) == 0 else 1)' \
			"$pid" "$tid" "${signo[$sig]}"
	fi
	k0=$(date +%s%N)
	# the handler may wait up to 5 s for other lock holders; 20 s means hung
	for ((w = 0; w < 200; w++)); do
		kill -0 "$wp" 2>/dev/null || break
		sleep 0.1
	done
	hung=
	if kill -0 "$wp" 2>/dev/null; then
		hung=" HUNG (killed after 20 s)"
		[ -n "${pid:-}" ] && kill -KILL "$pid" 2>/dev/null
		for c in $(pgrep -P "$wp"); do kill -KILL "$c" 2>/dev/null; done
	fi
	wait "$wp"
	took=$(awk -v s="$k0" -v e="$(date +%s%N)" 'BEGIN {printf "%.1f", (e - s) / 1e9}')
	rc=$(cat "$T/rc" 2>/dev/null || echo none)
	for p in "${loads[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	want=$((128 + ${signo[$sig]}))
	why=
	[ "$rc" = "$want" ] || why="exit $rc, not $want; "
	win=
	if [ -d "$D/snapshot-1" ]; then
		info=$("$B/weft" info "$D/snapshot-1" 2>&1)
		win=$(echo "$info" | awk '/^events:/ {e = $2} /^ *window:/ {w = "?"; if (match($0, /\([0-9.]+ [a-z]*s\)/)) w = substr($0, RSTART + 1, RLENGTH - 2); else if (/from the start/) w = "from the start"} END {print e " events, window " w}')
		if echo "$info" | grep -q "killed by SIG$sig"; then
			:
		else
			why="${why}snapshot-1 without \"killed by SIG$sig\": $(echo "$info" | grep -m1 'window:' | cut -c1-100); "
		fi
		nth=$(echo "$info" | grep -cE '^  thread [0-9]+ ".*": [1-9][0-9]* events')
		[ "$nth" = 2 ] || why="${why}events of $nth of the 2 threads in it; "
	else
		f=$(ls "$D"/window-not-written-*.txt 2>/dev/null | head -1)
		if [ -n "$f" ]; then
			why="${why}no snapshot-1; $(basename "$f"): $(tr '\n' ' ' < "$f" | cut -c1-200); "
		else
			why="${why}no snapshot-1; DIR holds: [$(ls -A "$D" 2>/dev/null | tr '\n' ' ')]; stderr: $(tr '\n' ' ' < "$T/err" | cut -c1-150); "
		fi
	fi
	key="$sig $thr $load"
	tot[$key]=$((${tot[$key]:-0} + 1))
	if [ -z "$why" ] && [ -z "$hung" ]; then
		ok[$key]=$((${ok[$key]:-0} + 1))
		res="written ($win)"
	else
		res="NOT WRITTEN: $why$hung"
	fi
	printf 'run %3d  SIG%-4s %-6s %-5s kill after %s s  exit %3s after %4s s  %s\n' "$i" "$sig" "$thr" "$load" "$delay" "$rc" "$took" "$res" | sed 's/ *$//'
	rm -rf "$D"
done
echo
echo "| signal | thread | load | written / runs |"
echo "|---|---|---|---|"
all=0; allok=0
for sig in "${sigs[@]}"; do for thr in main worker; do for load in idle 2busy; do
	key="$sig $thr $load"
	[ -n "${tot[$key]:-}" ] || continue
	echo "| SIG$sig | $thr | $load | ${ok[$key]:-0} / ${tot[$key]} |"
	all=$((all + tot[$key])); allok=$((allok + ${ok[$key]:-0}))
done; done; done
echo "total: $allok / $all crash windows written"
