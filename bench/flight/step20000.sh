#!/bin/bash
# bench/flight/step20000.sh [N] [BUILD]: does the snapshot taken right after step 20,000 hold it
# when the program outruns its writer? N (default 20) runs of BUILD/flightsteps steps 30000 100
# 20000 1 (weft_snapshot() right after the slow step 20,000) under flight=16M,noexit, without
# overflow=block, beside two busy loops; each snapshot converted and read with Perfetto's
# trace_processor (tests/tp): the last step, whether the window's steps are whole (count = last -
# first + 1) and all under `run`, and weft info's "dropped:".
N=${1:-20}; B=${2:-build}; B=$(cd "$B" && pwd)
tp="node $(dirname "$0")/../../tests/tp/tp_query.mjs"
tmp=$(mktemp -d); trap 'kill $b1 $b2 2>/dev/null; rm -rf "$tmp"' EXIT
sh -c 'while :; do :; done' & b1=$!; sh -c 'while :; do :; done' & b2=$!
echo "machine: $(uname -m), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); build $B ($(git -C "$(dirname "$0")" rev-parse --short HEAD))"
held=0
for i in $(seq 1 "$N"); do
  d=$tmp/r$i.data
  WEFT_OPTIONS="output=$d:flight=16M,noexit" "$B/flightsteps" steps 30000 100 20000 1 >/dev/null
  "$B/weft" convert -q "$d/snapshot-1" -o "$tmp/r.pftrace"
  row=$($tp "$tmp/r.pftrace" "select min(a.int_value) || ' ' || max(a.int_value) || ' ' || count(*) as r from slice s join args a using (arg_set_id) where s.name = 'step' and a.key = 'debug.i'" \
        "select count(*) as bad from slice s join slice p on s.parent_id = p.id where s.name = 'step' and p.name != 'run'" 2>/dev/null | tail -1)
  r=$(echo "$row" | sed 's/.*"r":"\([^"]*\)".*/\1/'); bad=$(echo "$row" | sed 's/.*"bad":\([0-9]*\).*/\1/')
  read first last n <<<"$r"
  dropped=$("$B/weft" info "$d/snapshot-1" | awk '/^dropped:/ {print $2}')
  whole=$([ "$n" = $((last - first + 1)) ] && echo whole || echo GAPS)
  [ "$last" = 20000 ] && [ "$whole" = whole ] && [ "$bad" = 0 ] && held=$((held + 1))
  echo "run $i: steps $first..$last ($n, $whole), $bad not under run, dropped $dropped"
  rm -rf "$d"
done
echo "step 20000 held, whole, under run: $held of $N"
