#!/usr/bin/env bash
# bench/mpi/scale.sh [BUILD]: convert time and peak memory of 4, 64 and 1024 ranks (docs/scale.md).
# Records tests/mpi/mpi_app.c on 4 MPICH ranks, clones it with gen_ranks.py, converts each.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
mpicc.mpich -O1 -w -o app "$src/tests/mpi/mpi_app.c"
mpirun.mpich -np 4 "$build/weft" record -q --no-convert -o G4 -- ./app
for n in 64 1024; do /usr/bin/python3 "$src/bench/mpi/gen_ranks.py" G4 "$n" "G$n" --per-host 4; done
echo "| ranks | directory KiB | convert wall s | user s | sys s | peak KiB | .pftrace bytes |"
for n in 4 64 1024; do
  /usr/bin/time -o t -f "%e %U %S %M" "$build/weft" convert "G$n" -o "G$n.pftrace" >/dev/null
  read -r wall user sys peak < t
  echo "| $n | $(du -sk "G$n" | cut -f1) | $wall | $user | $sys | $peak | $(stat -c %s "G$n.pftrace") |"
done
