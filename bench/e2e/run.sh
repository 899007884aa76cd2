#!/usr/bin/env bash
# bench/e2e/run.sh [BUILD_DIR] - end to end on real programs built with -finstrument-functions
# (bench/e2e/build.sh builds them into $WEFT_E2E_CACHE, default /var/cache/weft-e2e):
# Lua 5.4 (bench/e2e/work.lua), zstd -T2 compress and zstd -d of a 100 MB file, LevelDB's
# db_bench. For each program, ROUNDS (default 5) interleaved rounds of: untraced,
# `weft record --no-convert`, `weft record` (default: converts to trace.pftrace),
# `uftrace record`, `uftrace dump --chrome` of that record (timed on its own), and with
# WEFT_BASE=/path/to/other/build the same two weft runs with that build. Prints medians
# (wall seconds) and ratios as a markdown table.
# Env: ROUNDS, PROGRAMS (subset of "lua zstd zstd-d leveldb"), WEFT_BASE, WEFT_E2E_CACHE,
# LUA_ARGS (default "22 11"), DB_NUM (default 5000), ZSTD_MB (the first MB of build.sh's 100 MB
# input that zstd -T2 -B512KiB compresses, default 1), ZSTD_D_MB (what zstd -d decompresses,
# default 3). The defaults give 20-25 M events per program: every function of these programs,
# inline ones included, is instrumented (the whole 100 MB compress is 1.7 G events).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
base=${WEFT_BASE:+$(cd "$WEFT_BASE" && pwd)}
cache=${WEFT_E2E_CACHE:-/var/cache/weft-e2e}
rounds=${ROUNDS:-5}
programs=${PROGRAMS:-lua zstd zstd-d leveldb}
lua_args=${LUA_ARGS:-22 11}
db_num=${DB_NUM:-5000}
zstd_mb=${ZSTD_MB:-1}
zstd_d_mb=${ZSTD_D_MB:-3}
for f in bin/lua bin/zstd bin/db_bench data/input.bin data/input.bin.zst; do
  [ -e "$cache/$f" ] || { echo "run.sh: $cache/$f missing: run bench/e2e/build.sh" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "run.sh: /usr/bin/time missing (apt-get install time)" >&2; exit 1; }
command -v uftrace >/dev/null || { echo "run.sh: uftrace missing (apt-get install uftrace)" >&2; exit 1; }
rev=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?')  # of run.sh's checkout, at the start
work=$(mktemp -d /tmp/weft-e2e.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
head -c $((zstd_mb * 1000000)) "$cache/data/input.bin" >"$work/in.bin"
head -c $((zstd_d_mb * 1000000)) "$cache/data/input.bin" | "$cache/bin/zstd" -q -T2 -o "$work/in.zst"

# the program's command line, by name
prog() {
  case $1 in
    lua)     echo "$cache/bin/lua $src/bench/e2e/work.lua $lua_args" ;;
    zstd)    echo "$cache/bin/zstd -q -f -T2 -B512KiB $work/in.bin -o $work/out.zst" ;;
    zstd-d)  echo "$cache/bin/zstd -q -f -d $work/in.zst -o $work/out.bin" ;;
    leveldb) echo "$cache/bin/db_bench --benchmarks=fillseq,readrandom --num=$db_num --db=$work/db" ;;
  esac
}

# time_it FILE CMD...: run CMD (output discarded), append its wall seconds to FILE and its CPU
# seconds (user + system, its children's included) to FILE.cpu
time_it() {
  local out=$1; shift
  local t0=$EPOCHREALTIME
  /usr/bin/time -f "%U %S" -o "$work/cpu" "$@" >/dev/null 2>"$work/err" ||
    { echo "run.sh: failed: $*" >&2; cat "$work/err" >&2; exit 1; }
  local t1=$EPOCHREALTIME
  echo "$t0 $t1" | awk '{printf "%.3f\n", $2 - $1}' >>"$out"
  awk '{printf "%.3f\n", $1 + $2}' "$work/cpu" >>"$out.cpu"
}

median() { sort -g "$1" | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2}'; }

variants="untraced noconv default uftrace uftrace-dump"
[ -n "$base" ] && variants="$variants base-noconv base-default"

run_variant() {  # run_variant NAME VARIANT
  local p=$1 v=$2 cmd
  cmd=$(prog "$p")
  rm -rf "$work/db" "$work/out.zst" "$work/out.bin"
  case $v in
    untraced)     time_it "$work/$p.$v" $cmd ;;
    noconv)       rm -rf w.data w.data.old; time_it "$work/$p.$v" "$build/weft" record -q --no-convert -o w.data -- $cmd ;;
    default)      rm -rf w.data w.data.old; time_it "$work/$p.$v" "$build/weft" record -q -o w.data -- $cmd
                  stat -c %s w.data/trace.pftrace >"$work/$p.pftrace-bytes" ;;
    base-noconv)  rm -rf w.data w.data.old; time_it "$work/$p.$v" "$base/weft" record -q --no-convert -o w.data -- $cmd ;;
    base-default) rm -rf w.data w.data.old; time_it "$work/$p.$v" "$base/weft" record -q -o w.data -- $cmd ;;
    uftrace)      rm -rf u.data; time_it "$work/$p.$v" uftrace record -d u.data $cmd ;;
    uftrace-dump) time_it "$work/$p.$v" sh -c "uftrace dump --chrome -d u.data > u.json" ;;
  esac
}

# events of one weft record, for the table
for p in $programs; do
  rm -rf w.data w.data.old
  rm -rf "$work/db"
  "$build/weft" record -q --no-convert -o w.data -- $(prog "$p") >/dev/null 2>&1
  "$build/weft" info w.data | awk '/^events:/{print $2}' >"$work/$p.events"
done

for r in $(seq "$rounds"); do
  for p in $programs; do
    for v in $variants; do run_variant "$p" "$v"; done
  done
  echo "round $r/$rounds done" >&2
done
rm -rf w.data w.data.old u.data u.json "$work/db"

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo "machine: $cpu, $(nproc) cores; checkout $rev, weft $build; $(uftrace --version | head -1)"
echo "median of $rounds interleaved rounds, wall seconds; noconv = weft record --no-convert, default = weft record (writes trace.pftrace),"
echo "uftrace = uftrace record, dump = uftrace dump --chrome of that record${base:+, base = $base}"
echo
hdr="| program | events | untraced | noconv | default | uftrace | dump | default/noconv | default/uftrace | noconv/uftrace | pftrace B/event |"
sep="|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
[ -n "$base" ] && { hdr="$hdr base noconv | base default | base default/noconv |"; sep="$sep---:|---:|---:|"; }
echo "$hdr"; echo "$sep"
for p in $programs; do
  u=$(median "$work/$p.untraced"); n=$(median "$work/$p.noconv"); d=$(median "$work/$p.default")
  f=$(median "$work/$p.uftrace"); fd=$(median "$work/$p.uftrace-dump")
  ev=$(cat "$work/$p.events"); pb=$(cat "$work/$p.pftrace-bytes")
  line=$(awk -v p="$p" -v ev="$ev" -v u="$u" -v n="$n" -v d="$d" -v f="$f" -v fd="$fd" -v pb="$pb" 'BEGIN {
    printf "| %s | %.1f M | %.2f | %.2f | %.2f | %.2f | %.2f | %.2fx | %.2fx | %.2fx | %.2f |", p, ev / 1e6, u, n, d, f, fd, d / n, d / f, n / f, pb / ev }')
  if [ -n "$base" ]; then
    bn=$(median "$work/$p.base-noconv"); bd=$(median "$work/$p.base-default")
    line="$line$(awk -v bn="$bn" -v bd="$bd" 'BEGIN { printf " %.2f | %.2f | %.2fx |", bn, bd, bd / bn }')"
  fi
  echo "$line"
done

# What converting during the run could hide at best: the core-seconds the recording left idle
# (cores x noconv wall - noconv CPU) against the conversion's CPU (default CPU - noconv CPU)
echo
echo "| program | noconv wall | noconv CPU | idle core-s during noconv | default CPU | conversion CPU | idle / conversion |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for p in $programs; do
  n=$(median "$work/$p.noconv"); nc=$(median "$work/$p.noconv.cpu"); dc=$(median "$work/$p.default.cpu")
  awk -v p="$p" -v n="$n" -v nc="$nc" -v dc="$dc" -v cores="$(nproc)" 'BEGIN {
    idle = cores * n - nc; if (idle < 0) idle = 0; conv = dc - nc
    printf "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.0f%% |\n", p, n, nc, idle, dc, conv, (conv > 0 ? 100 * idle / conv : 0) }'
done
