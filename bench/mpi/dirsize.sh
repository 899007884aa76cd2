#!/bin/bash
# bench/mpi/dirsize.sh [NEW_BUILD] [BASE_BUILD]: the trace directory of one job per MPI and
# build, `mpirun -np 4 weft record -q -o D -- ./mpi_app` (tests/mpi/mpi_app.c) under Open MPI
# and MPICH: its bytes, the metadata files' bytes and the MAPS and MAPS_Z records' share of them (Open MPI
# dlopens ~120 components at MPI_Init; each dlopen wrote a whole copy of /proc/self/maps).
set -u
NEW=$(cd "${1:-build}" && pwd)
BASE=${2-}
[ -n "$BASE" ] && BASE=$(cd "$BASE" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mpicc.openmpi -O1 -Wno-stringop-overflow -o "$T/app_ompi" "$SRC/tests/mpi/mpi_app.c" || exit 1
mpicc.mpich -O1 -Wno-stringop-overflow -o "$T/app_mpich" "$SRC/tests/mpi/mpi_app.c" || exit 1
maps() { /usr/bin/python3 - "$1" <<'PY'
import glob, struct, sys
tot = 0
for f in glob.glob(sys.argv[1] + "/*.wmeta"):
    b = open(f, "rb").read(); i = 32
    while i + 8 <= len(b):
        t, _, n = struct.unpack_from("<HHI", b, i)
        if t == 0 and n == 0:
            break
        tot += n + 8 if t in (11, 43) else 0  # MAPS, MAPS_Z (1.11)
        i += 8 + n
print(tot)
PY
}
echo "new: $NEW ($(git -C "$NEW/.." rev-parse --short HEAD 2>/dev/null))"
[ -n "$BASE" ] && echo "base: $BASE ($(git -C "$BASE/.." rev-parse --short HEAD 2>/dev/null))"
echo "| build | MPI | directory (bytes) | .wmeta (bytes) | MAPS records (bytes) |"
echo "|---|---|---|---|---|"
for b in new base; do
	[ $b = base ] && [ -z "$BASE" ] && continue
	W=$NEW; [ $b = base ] && W=$BASE
	for m in openmpi mpich; do
		rm -rf "$T/D"
		if [ $m = openmpi ]; then
			mpirun.openmpi --oversubscribe --allow-run-as-root -np 4 "$W/weft" record -q -o "$T/D" -- "$T/app_ompi" > /dev/null 2>&1
		else
			mpirun.mpich -np 4 "$W/weft" record -q -o "$T/D" -- "$T/app_mpich" > /dev/null 2>&1
		fi
		echo "| $b | $m | $(du -sb "$T/D" | cut -f1) | $(cat "$T"/D/*.wmeta | wc -c) | $(maps "$T/D") |"
	done
done
