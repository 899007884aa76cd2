#!/usr/bin/env bash
# bench/convert/run.sh NEW_BUILD BASE_BUILD [PROGRAM ARGS...] - issue 21, record + convert, end to
# end as a user times it: `weft record` (default: converts to DIR/trace.pftrace), `weft record
# --no-convert` and `uftrace record`, for this build and the previous commit's, interleaved
# (ROUNDS rounds, default 5), medians of wall and CPU (user+sys, children included); then
# `weft convert` to .pftrace and to JSON of the same directory (both builds) and `uftrace dump
# --chrome` of uftrace's data. PROGRAM defaults to fib(30) built with -finstrument-functions.
set -euo pipefail
new=$(cd "$1" && pwd); base=$(cd "$2" && pwd); shift 2
rounds=${ROUNDS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ $# -eq 0 ]; then
  cat > "$tmp/fib.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(int argc, char **argv) { printf("%ld\n", fib(argc > 1 ? atoi(argv[1]) : 30)); return 0; }
C
  cc -O2 -g -finstrument-functions "$tmp/fib.c" -o "$tmp/fib"
  set -- "$tmp/fib" 30
fi
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
t() { # NAME CMD...: appends wall and cpu
  local name=$1; shift
  /usr/bin/time -f "%e %U %S" -o "$tmp/t" "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  read -r wall user sys < "$tmp/t"
  echo "$wall" >> "$tmp/$name.wall"
  awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}' >> "$tmp/$name.cpu"
}
modes="base_default new_default base_noconv new_noconv uftrace"
for r in $(seq "$rounds"); do
  for m in $modes; do
    rm -rf "$tmp/d" "$tmp/u"
    case $m in
      base_default) t $m "$base/weft" record -q -o "$tmp/d" -- "$@" ;;
      new_default) t $m "$new/weft" record -q -o "$tmp/d" -- "$@" ;;
      base_noconv) t $m "$base/weft" record -q --no-convert -o "$tmp/d" -- "$@" ;;
      new_noconv) t $m "$new/weft" record -q --no-convert -o "$tmp/d" -- "$@" ;;
      uftrace) t $m uftrace record -d "$tmp/u" "$@" ;;
    esac
  done
done
# each build converts its own recording (a base build may not read a newer format)
"$new/weft" record -q --no-convert -o "$tmp/d" -- "$@" >/dev/null
"$base/weft" record -q --no-convert -o "$tmp/d-base" -- "$@" >/dev/null
uftrace record -d "$tmp/u" "$@" >/dev/null
events=$("$new/weft" info "$tmp/d" | awk '/^events:/ {print $2}')
for r in $(seq "$rounds"); do
  for b in base new; do
    w=$base d="$tmp/d-base"; [ $b = new ] && w=$new d="$tmp/d"
    t ${b}_pf "$w/weft" convert -q "$d" -o "$tmp/$b.pftrace"
    t ${b}_json "$w/weft" convert -q "$d" -o "$tmp/$b.json"
  done
  t uf_chrome sh -c "uftrace dump --chrome -d '$tmp/u' > '$tmp/uf.json'"
done
echo "machine: $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
echo "program: $*; $events events; $rounds interleaved rounds, medians"
echo
echo "| what | wall s | CPU s |"
echo "|---|---|---|"
for m in $modes base_pf new_pf base_json new_json uf_chrome; do
  printf "| %s | %s | %s |\n" "$m" "$(median < "$tmp/$m.wall")" "$(median < "$tmp/$m.cpu")"
done
nd=$(median < "$tmp/new_default.wall"); nn=$(median < "$tmp/new_noconv.wall"); bd=$(median < "$tmp/base_default.wall")
bn=$(median < "$tmp/base_noconv.wall"); uf=$(median < "$tmp/uftrace.wall")
npf=$(median < "$tmp/new_pf.wall"); bpf=$(median < "$tmp/base_pf.wall")
echo
echo "default / --no-convert, wall: base $(awk "BEGIN {printf \"%.2f\", $bd / $bn}")x, new $(awk "BEGIN {printf \"%.2f\", $nd / $nn}")x"
echo "uftrace record / weft record (default), wall: base $(awk "BEGIN {printf \"%.2f\", $uf / $bd}")x, new $(awk "BEGIN {printf \"%.2f\", $uf / $nd}")x"
echo "convert to .pftrace: base $(awk "BEGIN {printf \"%.1f\", $events / $bpf / 1e6}"), new $(awk "BEGIN {printf \"%.1f\", $events / $npf / 1e6}") M events/s (wall)"
echo "JSON: uftrace dump --chrome / weft convert -o x.json, wall: base $(awk "BEGIN {printf \"%.2f\", $(median < "$tmp/uf_chrome.wall") / $(median < "$tmp/base_json.wall")}")x, new $(awk "BEGIN {printf \"%.2f\", $(median < "$tmp/uf_chrome.wall") / $(median < "$tmp/new_json.wall")}")x"
echo "trace.pftrace: $(awk "BEGIN {printf \"%.2f\", $(stat -c %s "$tmp/new.pftrace") / $events}") B/event (base: $(awk "BEGIN {printf \"%.2f\", $(stat -c %s "$tmp/base.pftrace") / $events}") of its own recording)"
