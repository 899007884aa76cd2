#!/bin/bash
# bench/mpi/convert_job.sh [BUILD] [ROUNDS]: `weft convert` of a 64-rank trace by one process
# and as an MPI job of 2 (issue 29 item 4), interleaved, medians. The trace: a 4-rank MPICH job
# (each rank fib(24 or 25), compiled with -finstrument-functions, and an MPI_Allreduce),
# cloned to 64 ranks with bench/mpi/gen_ranks.py (25 M events). Configurations:
#   1 rank, -j1 / 2 ranks, -j1 each   the split alone (each process one encoding thread)
#   1 rank, default / 2 ranks, default   as a user runs it (one process uses every core; two
#                                     ranks on one host share them: -j cores/ranks each)
# Wall seconds of mpirun.mpich -np N weft convert -q D -o F, and the largest RSS of a rank
# (GNU time's maximum resident set of the job's processes). Then `weft report --mpi` of the
# same trace by 1 and 2 ranks (the walk of its 25 M events split; the outputs compared).
set -u
B=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-5}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat > "$T/mpifib.c" <<'C'
#include <mpi.h>
static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(int argc, char **argv)
{
	int r, v, s;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	v = fib(24 + r % 2);
	MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Finalize();
	return s == 0;
}
C
mpicc.mpich -O2 -finstrument-functions -o "$T/mpifib" "$T/mpifib.c" || exit 1
(cd "$T" && mpirun.mpich -np 4 "$B/weft" record -q --no-convert -o "$T/j4" -- "$T/mpifib") || exit 1
/usr/bin/python3 "$(dirname "$0")/gen_ranks.py" "$T/j4" 64 "$T/j64" > /dev/null || exit 1
echo "machine: $(uname -m), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); build $(git -C "$B/.." rev-parse --short HEAD)"
echo "trace: $("$B/weft" info "$T/j64" | awk '/^events:/ {print $2}') events, 64 ranks, $(du -sh "$T/j64" | cut -f1); $ROUNDS rounds, medians"
med() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
declare -A W M
confs=("1 -j1" "2 -j1" "1 default" "2 default")
for ((r = 1; r <= ROUNDS; r++)); do
	for c in "${confs[@]}"; do
		set -- $c
		opt=(); [ "$2" = -j1 ] && opt=(-j 1)
		out=$( { /usr/bin/time -f "%e %M" mpirun.mpich -np "$1" "$B/weft" convert -q "${opt[@]}" "$T/j64" -o "$T/out.pftrace"; } 2>&1 | tail -1)
		W[$c]+="${out% *} "; M[$c]+="${out#* } "
		cmp -s "$T/out.pftrace" "$T/ref.pftrace" 2>/dev/null || { [ -f "$T/ref.pftrace" ] && echo "DIFFERENT OUTPUT: $c"; cp "$T/out.pftrace" "$T/ref.pftrace"; }
	done
done
echo "| ranks converting | threads each | wall s | speedup | largest rank's RSS MB |"
echo "|---:|---|---:|---:|---:|"
for c in "${confs[@]}"; do
	set -- $c
	w=$(echo ${W[$c]} | tr ' ' '\n' | med); m=$(echo ${M[$c]} | tr ' ' '\n' | med)
	b=$(echo ${W["1 $2"]} | tr ' ' '\n' | med)
	awk -v n=$1 -v j=$2 -v w=$w -v b=$b -v m=$m 'BEGIN {printf "| %d | %s | %.2f | %.2fx | %.1f |\n", n, j, w, b / w, m / 1024}'
done
for c in "${confs[@]}"; do echo "  $c: ${W[$c]}"; done
declare -A R
for ((r = 1; r <= ROUNDS; r++)); do
	for n in 1 2; do
		out=$( { /usr/bin/time -f "%e" mpirun.mpich -np $n "$B/weft" report --mpi "$T/j64" > "$T/report.$n"; } 2>&1 | tail -1)
		R[$n]+="$out "
	done
	cmp -s "$T/report.1" "$T/report.2" || echo "DIFFERENT REPORT"
done
echo
echo "| weft report --mpi, ranks | wall s | speedup |"
echo "|---:|---:|---:|"
b=$(echo ${R[1]} | tr ' ' '\n' | med)
for n in 1 2; do
	w=$(echo ${R[$n]} | tr ' ' '\n' | med)
	awk -v n=$n -v w=$w -v b=$b 'BEGIN {printf "| %d | %.2f | %.2fx |\n", n, w, b / w}'
done
for n in 1 2; do echo "  report $n: ${R[$n]}"; done
