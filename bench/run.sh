#!/usr/bin/env bash
# bench/run.sh BUILD_DIR - every weft benchmark in one run, printed as one markdown table
# (copy it into bench/RESULTS.md). Peers measured in the same run where Debian packages them:
# LTTng-UST tracepoints (needs lttng-tools + liblttng-ust-dev; lttng-sessiond is started).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/weft-bench.XXXXXX)
trap 'rm -rf "$work"; lttng destroy weftbench >/dev/null 2>&1 || true' EXIT
cd "$work"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo "machine: $(uname -m), $cpu, $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, Linux $(uname -r)"
echo "command: make bench   ($(date -u +%Y-%m-%d))"
echo
echo "## Hot path (best of 7 blocks of 2M operations, same for floor and weft; the writer drains between blocks)"
echo
"$build/weft-bench" micro
if command -v lttng-sessiond >/dev/null && pkg-config --exists lttng-ust; then
  gcc -O2 -I"$src/bench/lttng" "$src/bench/lttng/lttng_bench.c" -o lttng_bench -llttng-ust -ldl -lpthread
  pgrep -x lttng-sessiond >/dev/null || lttng-sessiond --daemonize --no-kernel >/dev/null 2>&1 || true
  off=$(./lttng_bench)
  lttng create weftbench --output="$work/lttng" >/dev/null
  lttng enable-event -u 'weftbench:*' >/dev/null
  lttng start >/dev/null
  on=$(./lttng_bench)
  lttng stop >/dev/null
  lttng destroy weftbench >/dev/null
  echo
  printf '| %-44s | %8s |\n' "peer (same method)" "ns/op"
  printf '|%s|%s|\n' "----------------------------------------------" "----------"
  printf '| %-44s | %8s |\n' "LTTng-UST begin+end tracepoint pair, session" "$on"
  printf '| %-44s | %8s |\n' "LTTng-UST pair, no session (disabled)" "$off"
else
  echo "(LTTng-UST not installed: peer row skipped)"
fi
echo
echo "## Sustained rate, 1 thread, default options (10 s each)"
echo
"$build/weft-bench" sustain 10 || true
best=0
for rate in 20000000 40000000 60000000; do
  rm -rf weft.data weft.data.old
  if "$build/weft-bench" sustain 10 $rate; then best=$rate; else break; fi
done
echo "highest paced rate with 0 drops: $((best / 1000000)) M events/s"
echo
echo "## Bytes per event on the example (pipeline 8 streams x 2000 events, 2 workers)"
echo
rm -rf weft.data weft.data.old
WEFT_OPTIONS=output=ex.data "$build/pipeline" 8 2000 2
"$build/weft" info ex.data | grep -E '^(events|dropped|bytes)'
echo
echo "## weft convert (10M begin/end pairs on 2 threads = 20M+ events, both cores)"
echo
WEFT_OPTIONS=output=conv.data "$build/weft-bench" gen 10000000 2
ev=$("$build/weft" info conv.data | awk '/^events:/{print $2}')
for fmt in pftrace json; do
  for dest in /dev/null "out.$fmt"; do
    t0=$(date +%s.%N)
    "$build/weft" convert conv.data -f $fmt -o "$dest" -q
    t1=$(date +%s.%N)
    size=$([ "$dest" = /dev/null ] && echo "-" || stat -c %s "$dest")
    awk -v e="$ev" -v a="$t0" -v b="$t1" -v f="$fmt" -v d="$dest" -v s="$size" \
      'BEGIN { printf "convert to %-7s -> %-11s %6.2f s  %6.1f M events/s  output %s bytes\n", f, d, b - a, e / (b - a) / 1e6, s }'
  done
done
dd if=/dev/zero of=ddtest bs=1M count=1000 conv=fsync 2>&1 | awk '/copied/{print "disk write ceiling (dd 1 GB, fsync): " $(NF-1), $NF}'
echo
echo "## Function tracing (-finstrument-functions), side by side"
echo
"$src/bench/ftrace/run.sh" "$build"
echo
echo "## Memory: malloc/free tracing, side by side (bench/memory/run.sh)"
echo
"$src/bench/memory/run.sh" "$build" | tail -n +3
echo
echo "## weft overhead against a known slowdown (bench/overhead/run.sh)"
echo
"$src/bench/overhead/run.sh" "$build" | tail -n +4
echo
echo "## Python: call tracing, side by side (bench/python/calls_bench.py)"
echo
/usr/bin/python3 "$src/bench/python/calls_bench.py" "$build"
echo
echo "## Python: decorators (bench/python/api_bench.py)"
echo
PYTHONPATH="$build/python" /usr/bin/python3 "$src/bench/python/api_bench.py"
echo
echo "## Python: PerfFlowAspect's decorator on weft (bench/python/pfa_bench.py; PerfFlowAspect's own with --pfa-src DIR)"
echo
PYTHONPATH="$build/python" /usr/bin/python3 "$src/bench/python/pfa_bench.py"
echo
echo "## Scheduling: weft record --sched vs perf sched record (bench/sched/run.sh; needs root)"
echo
"$src/bench/sched/run.sh" "$build" 9 || echo "(skipped: $(id -un) cannot open the sched tracepoints)"
echo
echo "## GPU: the collector's cost per CUDA launch, on the fake CUPTI (bench/gpu/launch_bench.py)"
echo
/usr/bin/python3 "$src/bench/gpu/launch_bench.py" "$build" 100000 5
