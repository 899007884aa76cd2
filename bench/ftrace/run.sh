#!/usr/bin/env bash
# bench/ftrace/run.sh BUILD_DIR - function tracing: the same -finstrument-functions binary
# untraced, under weft record, uftrace record and LTTng-UST's cyg-profile-fast, in one run;
# every row is the best of 3 runs; then weft report/convert against uftrace report/dump --chrome on the same 40M-event data.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/weft-fbench.XXXXXX)
trap 'rm -rf "$work"; lttng destroy weftfb >/dev/null 2>&1 || true' EXIT
cd "$work"
gcc -O2 -finstrument-functions "$src/bench/ftrace/ft_bench.c" -o ft_bench
N=20000000
FIB=30   # fib(30): 2,692,537 calls
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", b - a}'; }
run_timed() { local t0; t0=$(now); "$@" >/dev/null 2>"$work/last.err"; secs "$t0" "$(now)"; }
min() { awk -v a="$1" -v b="$2" 'BEGIN{print (b<a)?b:a}'; }
best3() { local best=999999 t; for _ in 1 2 3; do t=$(run_timed "$@"); best=$(min "$best" "$t"); done; echo "$best"; }
# best3_into DIR CMD...: best of 3 runs of a recording command, DIR (its output) removed before each
best3_into() { local d=$1 best=999999 t; shift
  for _ in 1 2 3; do rm -rf "$d"; t=$(run_timed "$@"); best=$(min "$best" "$t"); done; echo "$best"; }

printf '| %-34s | %9s | %12s | %11s | %9s | %8s |\n' "leaf() x 20M (40M events)" "time s" "ns/call over" "events" "B/event" "dropped"
printf '|%s|%s|%s|%s|%s|%s|\n' "------------------------------------" "-----------" "--------------" "-------------" "-----------" "----------"
base=$(best3 ./ft_bench leaf $N)
printf '| %-34s | %9s | %12s | %11s | %9s | %8s |\n' "untraced (glibc's empty hooks)" "$base" "-" "-" "-" "-"
row() { # name time events bytes dropped
  awk -v n="$1" -v t="$2" -v b="$base" -v e="$3" -v by="$4" -v d="$5" -v c="$N" 'BEGIN{
    printf "| %-34s | %9.3f | %12.1f | %11s | %9s | %8s |\n", n, t, (t - b) * 1e9 / c, e,
      (e > 0 && by != "-") ? sprintf("%.2f", by / e) : "-", d }'
}
t=$(best3_into weft.data "$build/weft" record -q --no-convert -o weft.data -- ./ft_bench leaf $N)
ev=$("$build/weft" info weft.data | awk '/^events:/{print $2}')
dr=$("$build/weft" info weft.data | awk '/^dropped:/{print $2}')
by=$(du -sb weft.data | cut -f1)
row "weft record (defaults)" "$t" "$ev" "$by" "$dr"
if command -v uftrace >/dev/null; then
  t=$(best3_into uftrace.data uftrace record -d uftrace.data ./ft_bench leaf $N)
  by=$(du -sb uftrace.data | cut -f1)
  ev=$(uftrace info -d uftrace.data 2>/dev/null | awk -F: '/number of events|# of events/{gsub(/ /,"",$2); print $2}' | head -1)
  row "uftrace record" "$t" "${ev:-$((2 * N))}" "$by" "?"
fi
cyg=$(ls /usr/lib/*/liblttng-ust-cyg-profile-fast.so 2>/dev/null | head -1 || true)
if [ -n "$cyg" ] && command -v lttng-sessiond >/dev/null; then
  pgrep -x lttng-sessiond >/dev/null || lttng-sessiond --daemonize --no-kernel >/dev/null 2>&1 || true
  t=999999
  for _ in 1 2 3; do
    rm -rf "$work/lttng"
    lttng create weftfb --output="$work/lttng" >/dev/null
    lttng enable-event -u 'lttng_ust_cyg_profile_fast:*' >/dev/null
    lttng start >/dev/null
    t=$(min "$t" "$(LD_PRELOAD="$cyg" run_timed ./ft_bench leaf $N)")
    lttng stop >/dev/null
    lost=$(lttng list weftfb 2>/dev/null | grep -oE 'discarded[^,]*' | head -1 || true)
    lttng destroy weftfb >/dev/null
  done
  by=$(du -sb "$work/lttng" | cut -f1)
  row "LTTng-UST cyg-profile-fast" "$t" "$((2 * N))" "$by" "${lost:-see lttng}"
fi
t=$(best3_into filtered.data "$build/weft" record -q --no-convert -o filtered.data -N leaf -- ./ft_bench leaf $N)
row "weft record -N leaf (all filtered)" "$t" "$("$build/weft" info filtered.data | awk '/^events:/{print $2}')" "-" "0"
echo
fb=$(best3 ./ft_bench fib $FIB)
tw=$(best3_into fib.data "$build/weft" record -q --no-convert -o fib.data -- ./ft_bench fib $FIB)
echo "fib($FIB), 2692537 calls: untraced $fb s; weft record $tw s: $(awk -v a="$fb" -v b="$tw" 'BEGIN{printf "%.1f", (b-a)*1e9/2692537}') ns/call over untraced"
if command -v uftrace >/dev/null; then
  tu=$(best3_into ufib.data uftrace record -d ufib.data ./ft_bench fib $FIB)
  echo "fib($FIB): uftrace record $tu s: $(awk -v a="$fb" -v b="$tu" 'BEGIN{printf "%.1f", (b-a)*1e9/2692537}') ns/call over untraced"
fi
echo
echo "Reading the leaf() data (40M events; report rows best of 3, convert rows one run):"
ev=$((2 * N))
rate() { awk -v e="$ev" -v t="$1" 'BEGIN{printf "%.1f M events/s", e / t / 1e6}'; }
t=$(best3 "$build/weft" report weft.data); echo "weft report:             $t s  $(rate "$t")"
t=$(run_timed "$build/weft" convert -q weft.data -o out.pftrace); echo "weft convert .pftrace:   $t s  $(rate "$t")"
t=$(run_timed "$build/weft" convert -q weft.data -o out.json); echo "weft convert .json:      $t s  $(rate "$t")"
if command -v uftrace >/dev/null; then
  t=$(best3 uftrace report -d uftrace.data); echo "uftrace report:          $t s  $(rate "$t")"
  t=$(run_timed sh -c "uftrace dump -d uftrace.data --chrome > out-uftrace.json"); echo "uftrace dump --chrome:   $t s  $(rate "$t")"
fi
