#!/usr/bin/env bash
# bench/overhead/run.sh BUILD_DIR - does `weft overhead` measure a slowdown that is known?
# tests/programs/spin burns 300 ms of CPU, and PCT % more when it finds weft's preload library
# loaded (SPIN_TRACED_EXTRA=PCT; spin has no -finstrument-functions, so tracing itself costs it
# only weft's start-up). Each repetition is one `weft overhead -n 8 --modes dry,functions`; the
# table gives, per known slowdown, what it reported for CPU (user+sys) and wall time: the median
# over REPEAT repetitions, and the worst repetition's error. Env: REPEAT (5).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
REPEAT=${REPEAT:-5}
for t in weft spin; do
  [ -x "$build/$t" ] || { echo "bench/overhead: $build/$t missing (make build, with tests)"; exit 1; }
done
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo "machine: $(uname -m), $cpu, $(nproc) cores, Linux $(uname -r)"
echo "command: bench/overhead/run.sh $1   (REPEAT=$REPEAT, $(date -u +%Y-%m-%d))"
echo
printf '| %-14s | %-22s | %-22s |\n' "known slowdown" "CPU: median (worst err)" "wall: median (worst err)"
printf '|%s|%s|%s|\n' "----------------" "------------------------" "------------------------"
for pct in 0 10 20; do
  cpus=() walls=()
  for r in $(seq "$REPEAT"); do
    out=$(SPIN_TRACED_EXTRA=$pct "$build/weft" overhead -n 8 --seed "$r" --modes dry,functions -f json -- \
          "$build/spin" 300)
    read -r c w < <(/usr/bin/python3 -c '
import json, sys
m = {x["mode"]: x["metrics"] for x in json.load(sys.stdin)}
d, f = m["dry"], m["functions"]
cpu = lambda x: x["user_s"]["median"] + x["sys_s"]["median"]
print("%.2f %.2f" % (100 * (cpu(f) / cpu(d) - 1), f["wall_s"]["overhead_pct"]))' <<<"$out")
    cpus+=("$c") walls+=("$w")
  done
  /usr/bin/python3 - "$pct" "${cpus[*]}" "${walls[*]}" <<'PY'
import statistics, sys
pct = float(sys.argv[1])
row = []
for xs in (sys.argv[2].split(), sys.argv[3].split()):
    v = [float(x) for x in xs]
    worst = max(v, key=lambda x: abs(x - pct))
    row.append("%+.2f %% (%+.2f pp)" % (statistics.median(v), worst - pct))
print("| %-14s | %-22s | %-22s |" % ("%d %%" % pct, row[0], row[1]))
PY
done
