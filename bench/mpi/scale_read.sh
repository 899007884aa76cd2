#!/usr/bin/env bash
# bench/mpi/scale_read.sh [NEW_BUILD] [BASE_BUILD] [ROUNDS]: peak RSS and wall time of every
# reading command on 4-, 64-, 1,024- and 4,096-rank traces (issue 29 item 3: memory bounded by
# a window, not by the trace; time linear in the ranks).
#
# Records tests/mpi/mpi_app.c on 4 MPICH ranks with NEW_BUILD, clones it with gen_ranks.py (4
# ranks per host), then runs each command ROUNDS times (default 3) per build, the builds
# interleaved: the median wall and the largest peak RSS (/usr/bin/time's %M). Without
# BASE_BUILD only NEW_BUILD is measured. ONLY=REGEX measures only the commands it matches (e.g.
# ONLY=json). A base build whose Chrome JSON merge is not bounded (before 2026-12-07, fourth
# session: ~2 MB a rank) is run on it up to 1,024 ranks only (BASE_JSON_MAX to change).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
new=$(cd "${1:-$src/build}" && pwd)
base=${2:+$(cd "$2" && pwd)}
rounds=${3:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
mpicc.mpich -O1 -w -o app "$src/tests/mpi/mpi_app.c"
mpirun.mpich -np 4 "$new/weft" record -q --no-convert -o G4 -- ./app
for n in 64 1024 4096; do /usr/bin/python3 "$src/bench/mpi/gen_ranks.py" G4 "$n" "G$n" --per-host 4; done

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# one run: "wall peak_kib" (a command that fails prints its reason and counts as missing)
one() {
	local w=$1 cmd=$2
	rm -rf out.db out.otf2 out.* 2>/dev/null || true
	if ! /usr/bin/time -o t -f "%e %M" bash -c "$w/$cmd" >/dev/null 2>err; then
		echo "FAILED: $w/$cmd: $(tail -1 err)" >&2
		echo "nan nan"
		return
	fi
	cat t
}

cmds=(
	"weft convert G{n} -o out.pftrace"
	"weft convert G{n} --time 0.1:0.2 -o out.pftrace"
	"weft convert G{n} --ranks 0-15 -o out.pftrace"
	"weft report G{n}"
	"weft report --threads G{n}"
	"weft report --mpi G{n}"
	"weft info G{n}"
	"weft estimate G{n}"
	"weft export G{n} -o out.db"
	"weft export --otf2 G{n} -o out.otf2"
	"weft plot mpi G{n} -o out.png"
	"weft convert G{n} -o out.json"
)
builds=("$new")
[ -n "$base" ] && builds+=("$base")
echo "new: $new ($(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo ?))${base:+, base: $base}; $rounds rounds, interleaved"
echo
echo "| command | ranks | build | wall s (median) | peak RSS MiB |"
echo "|---|---|---|---|---|"
for c in "${cmds[@]}"; do
	[[ -n ${ONLY:-} && ! $c =~ $ONLY ]] && continue
	for n in 4 64 1024 4096; do
		cmd=${c//\{n\}/$n}
		declare -A walls=() peaks=()
		for ((r = 0; r < rounds; r++)); do
			for b in "${builds[@]}"; do
				[[ $b != "$new" && $c == *json* && $n -gt ${BASE_JSON_MAX:-1024} ]] && continue
				read -r wall peak < <(one "$b" "$cmd")
				walls[$b]+="$wall "
				[[ $peak != nan && $peak -gt ${peaks[$b]:-0} ]] && peaks[$b]=$peak
			done
		done
		for b in "${builds[@]}"; do
			label=new
			[ "$b" != "$new" ] && label=base
			[ -z "${walls[$b]:-}" ] && continue
			m=$(echo "${walls[$b]}" | tr ' ' '\n' | grep -v '^$' | median)
			echo "| \`${cmd}\` | $n | $label | $m | $(( ${peaks[$b]:-0} / 1024 )) |"
		done
		unset walls peaks
	done
done
