#!/bin/bash
# bench/mpi/initfin.sh [NEW_BUILD] [BASE_BUILD] [ROUNDS]: MPI_Init, the first collective
# (MPI_Allreduce) and MPI_Finalize as the program times them (bench/mpi/initfin.c), 4 MPICH
# ranks on this machine (oversubscribed on 2 cores), untraced and under
# `weft record -q --no-convert -o D -- mpirun.mpich -np 4 ./initfin` of each build, interleaved;
# per configuration the median over rounds of the slowest rank's time of each call (ms).
set -u
NEW=$(cd "${1:-build}" && pwd)
BASE=${2-}
[ -n "$BASE" ] && BASE=$(cd "$BASE" && pwd)
ROUNDS=${3:-5}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mpicc.mpich -O1 -o "$T/initfin" "$(dirname "$0")/initfin.c" || exit 1
confs=(untraced new); [ -n "$BASE" ] && confs+=(base)
med() { sort -g | awk '{a[NR]=$1} END {if (!NR) print "-"; else print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "machine: $(uname -m), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "new: $NEW ($(git -C "$NEW/.." rev-parse --short HEAD 2>/dev/null))"
[ -n "$BASE" ] && echo "base: $BASE ($(git -C "$BASE/.." rev-parse --short HEAD 2>/dev/null))"
for r in $(seq "$ROUNDS"); do
	for c in "${confs[@]}"; do
		case $c in
		untraced) mpirun.mpich -np 4 "$T/initfin" > "$T/out" 2>&1 ;;
		new) rm -rf "$T/d"; "$NEW/weft" record -q --no-convert -o "$T/d" -- mpirun.mpich -np 4 "$T/initfin" > "$T/out" 2>&1 ;;
		base) rm -rf "$T/d"; "$BASE/weft" record -q --no-convert -o "$T/d" -- mpirun.mpich -np 4 "$T/initfin" > "$T/out" 2>&1 ;;
		esac
		awk '/^rank/ {if ($4 > i) i = $4; if ($6 > f) f = $6; if ($8 > z) z = $8} END {print i, f, z}' "$T/out" >> "$T/$c"
	done
done
echo "| configuration | MPI_Init (ms) | first MPI_Allreduce (ms) | MPI_Finalize (ms) |"
echo "|---|---:|---:|---:|"
for c in "${confs[@]}"; do
	echo "| $c | $(awk '{print $1}' "$T/$c" | med) | $(awk '{print $2}' "$T/$c" | med) | $(awk '{print $3}' "$T/$c" | med) |"
done
echo "per round (init/first/fin of the slowest rank):"
for c in "${confs[@]}"; do echo "  $c: $(awk '{printf "%s%s/%s/%s", (NR > 1 ? "  " : ""), $1, $2, $3}' "$T/$c")"; done
