#!/bin/sh
# bench/rss/run.sh - peak RSS of the analyses against the number of memory records (issue 21:
# bounded analysis). Records bench/rss/allocloop.c (a malloc/free loop, 4096 blocks live) with
# `weft record --memory --no-convert` for each size, then runs report --memory, convert
# (.pftrace with memory tracks and heap profile) and plot heap (plot memory up to PLOT_MEMORY_MAX
# records: it draws every block) with each build, interleaved (OLD NEW per step), printing
# "records command build seconds maxrss_kb" lines. Traces live under TMP and are deleted.
#   bench/rss/run.sh OLD_WEFT NEW_WEFT [SIZES...]     (default sizes 1000000 10000000 100000000)
# OLD runs under `ulimit -v` OLD_LIMIT_KB (default 14 GB) so that a build that holds every record
# fails instead of pushing the machine out of memory; a run it stops prints "limit". BUILDS="new"
# runs only NEW (default "old new").
set -eu
OLD=$1 NEW=$2
shift 2
SIZES=${*:-1000000 10000000 100000000}
TMP=${TMP:-/tmp}/weft-rss.$$
OLD_LIMIT_KB=${OLD_LIMIT_KB:-14000000}
PLOT_MEMORY_MAX=${PLOT_MEMORY_MAX:-10000000}
BUILDS=${BUILDS:-old new}
mkdir -p "$TMP"
trap 'rm -rf "$TMP"' EXIT
cc -O2 -o "$TMP/allocloop" "$(dirname "$0")/allocloop.c"

measure() { # records label build weft args...
	n=$1 label=$2 which=$3 weft=$4
	shift 4
	limit=unlimited
	[ "$which" = old ] && limit=$OLD_LIMIT_KB
	if (ulimit -v "$limit"; /usr/bin/time -v "$weft" "$@" >/dev/null 2>"$TMP/time"); then
		s=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); t = 0;
			for (i = 1; i <= n; i++) t = t * 60 + p[i]; print t}' "$TMP/time")
		kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$TMP/time")
		echo "$n $label $which $s $kb"
	else
		echo "$n $label $which limit -"
	fi
}

for n in $SIZES; do
	"$NEW" record -q --memory --no-convert -o "$TMP/t" -- "$TMP/allocloop" "$n" >/dev/null
	echo "# $n records: $(du -sm "$TMP/t" | cut -f1) MB on disk"
	for which in $BUILDS; do
		[ "$which" = old ] && w=$OLD || w=$NEW
		measure "$n" report "$which" "$w" report --memory "$TMP/t"
	done
	for which in $BUILDS; do
		[ "$which" = old ] && w=$OLD || w=$NEW
		measure "$n" convert "$which" "$w" convert "$TMP/t" -o "$TMP/t.pftrace"
		rm -f "$TMP/t.pftrace"
	done
	for which in $BUILDS; do
		[ "$which" = old ] && w=$OLD || w=$NEW
		measure "$n" plot-heap "$which" "$w" plot heap "$TMP/t" -o "$TMP/t.png"
	done
	if [ "$n" -le "$PLOT_MEMORY_MAX" ]; then
		for which in $BUILDS; do
			[ "$which" = old ] && w=$OLD || w=$NEW
			measure "$n" plot-memory "$which" "$w" plot memory "$TMP/t" -o "$TMP/t.png"
		done
	fi
	rm -rf "$TMP/t" "$TMP/t.png"
done
