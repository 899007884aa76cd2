#!/usr/bin/env bash
# bench/convert/json.sh NEW_BUILD BASE_BUILD WEFT_DIR UFTRACE_DIR - issue 21, JSON conversion:
# `weft convert DIR -o x.json` of this build and the previous commit's against `uftrace dump
# --chrome` of uftrace's recording of the same program, interleaved (ROUNDS rounds, default 5),
# medians of wall and CPU (user+sys); then whether the two builds wrote the same bytes.
# JOBS (default: weft's default, one per core) goes to --jobs.
set -euo pipefail
new=$(cd "$1" && pwd); base=$(cd "$2" && pwd); wd=$3; ud=$4
rounds=${ROUNDS:-5}
jobs=${JOBS:+-j $JOBS}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
t() { # NAME CMD...: appends wall and cpu
  local name=$1; shift
  /usr/bin/time -f "%e %U %S" -o "$tmp/t" "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  read -r wall user sys < "$tmp/t"
  echo "$wall" >> "$tmp/$name.wall"
  awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}' >> "$tmp/$name.cpu"
}
events=$("$new/weft" info "$wd" | awk '/^events:/ {print $2}')
for r in $(seq "$rounds"); do
  t base_json "$base/weft" convert -q $jobs "$wd" -o "$tmp/base.json"
  rm -f "$tmp/base.json.keep"; [ "$r" = 1 ] && mv "$tmp/base.json" "$tmp/base.json.keep"; rm -f "$tmp/base.json"
  t new_json "$new/weft" convert -q $jobs "$wd" -o "$tmp/new.json"
  [ "$r" = 1 ] && { cmp -s "$tmp/new.json" "$tmp/base.json.keep" && echo yes > "$tmp/same" || echo no > "$tmp/same"; rm -f "$tmp/base.json.keep"; }
  rm -f "$tmp/new.json"
  t uf_chrome sh -c "uftrace dump --chrome -d '$ud' > '$tmp/uf.json'"
  rm -f "$tmp/uf.json"
done
echo "machine: $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
echo "trace: $wd; $events events; $rounds interleaved rounds, medians"
echo
echo "| what | wall s | CPU s |"
echo "|---|---|---|"
for m in base_json new_json uf_chrome; do
  printf "| %s | %s | %s |\n" "$m" "$(median < "$tmp/$m.wall")" "$(median < "$tmp/$m.cpu")"
done
r() { awk "BEGIN {printf \"%.2f\", $(median < "$tmp/$1.$3") / $(median < "$tmp/$2.$3")}"; }
echo
echo "uftrace dump --chrome / weft convert -o x.json: wall base $(r uf_chrome base_json wall)x, new $(r uf_chrome new_json wall)x; CPU base $(r uf_chrome base_json cpu)x, new $(r uf_chrome new_json cpu)x"
echo "same bytes as the base build's: $(cat "$tmp/same")"
