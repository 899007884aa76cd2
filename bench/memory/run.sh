#!/usr/bin/env bash
# bench/memory/run.sh BUILD_DIR [PREV_BUILD_DIR] - malloc/free tracing, side by side: mem_bench (2 threads x
# ITERS malloc+free pairs of 16..4096 bytes) untraced, under weft (preloaded with memory off,
# record --memory, record --memory=stacks), heaptrack and LTTng-UST's libc wrapper with a session.
# Rounds are interleaved (every configuration once per round, ROUNDS rounds); the tables show
# medians. With PREV_BUILD_DIR (the previous commit's build) its weft rows run in the same rounds,
# and a table compares the writer's CPU per event and the bytes per event of both. Rows whose tool is missing are skipped with a message. Env: ROUNDS (5), ITERS (500000).
#   cpu ns/event:   CPU time of the benchmark's own threads (CLOCK_THREAD_CPUTIME_ID) / events
#   wall ns/event:  wall time creation..join / events of one thread
#   all-proc cpu:   user+sys CPU of the whole command and the processes it waited for (weft's
#                   writer threads, heaptrack_interpret; not lttng-sessiond/consumerd), start-up
#                   included, / events
set -euo pipefail
arg=${1:-build}
parg=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${ROUNDS:-5}
ITERS=${ITERS:-500000}
THREADS=2
work=$(mktemp -d /tmp/weft-membench.XXXXXX)
sessiond_pid=""   # the lttng-sessiond this script started (only that one is stopped)
session_up=0
cleanup() {
  if [ "$session_up" = 1 ]; then lttng destroy membench >/dev/null 2>&1 || true; fi
  if [ -n "$sessiond_pid" ]; then kill "$sessiond_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
notes=()

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo "machine: $(uname -m), $cpu, $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, Linux $(uname -r)"
echo "command: bench/memory/run.sh $arg   (ROUNDS=$ROUNDS ITERS=$ITERS, $(date -u +%Y-%m-%d))"
echo

# what is there
build="" weft="" preload="" have_memory=0
if [ -d "$arg" ]; then
  build=$(cd "$arg" && pwd)
  [ -x "$build/weft" ] && weft="$build/weft"
  preload=$(ls "$build"/libweft-preload.so* 2>/dev/null | head -1 || true)
fi
[ -n "$weft" ] || notes+=("(weft not built in '$arg': weft record rows skipped)")
[ -n "$preload" ] || notes+=("(libweft-preload.so not built in '$arg': preload row skipped)")
if [ -n "$weft" ] && "$weft" record --help 2>&1 | grep -q -- '--memory'; then have_memory=1; fi
pweft=""
if [ -n "$parg" ]; then
  if [ -x "$parg/weft" ] && "$parg/weft" record --help 2>&1 | grep -q -- '--memory'; then
    pweft=$(cd "$parg" && pwd)/weft
  else
    notes+=("(no weft with --memory in '$parg': previous rows skipped)")
  fi
fi
gcc -O2 -fno-omit-frame-pointer -pthread "$here/mem_bench.c" -o "$work/mem_bench"
# the floor: rdtsc + a 32-byte record into a thread-local ring (4096 records: stays in cache;
# 2M records: a stream through memory, as any tracer that keeps every record writes)
gcc -O2 -shared -fPIC "$here/floor_preload.c" -o "$work/floor.so"
gcc -O2 -shared -fPIC -DRING_BIG "$here/floor_preload.c" -o "$work/floorstream.so"
cd "$work"
have_ht=0
if command -v heaptrack >/dev/null; then have_ht=1; else notes+=("(heaptrack not installed: row skipped)"); fi
lttng_wrap=$(ls /usr/lib/*/liblttng-ust-libc-wrapper.so* 2>/dev/null | head -1 || true)
have_lttng=0
if command -v lttng >/dev/null && command -v lttng-sessiond >/dev/null && [ -n "$lttng_wrap" ]; then
  have_lttng=1
  if ! pgrep -x lttng-sessiond >/dev/null; then
    lttng-sessiond --daemonize --no-kernel >/dev/null 2>&1 || true
    sessiond_pid=$(pgrep -x -n lttng-sessiond || true)
    [ -n "$sessiond_pid" ] || { have_lttng=0; notes+=("(lttng-sessiond did not start: LTTng row skipped)"); }
  fi
else
  notes+=("(LTTng-UST libc wrapper not installed (lttng-tools + liblttng-ust-dev): row skipped)")
fi

# configurations, as ID:THREADS; the 1-thread ones feed the second table
cfgs=("untraced:$THREADS" "floor:$THREADS" "floorstream:$THREADS")
[ -n "$preload" ] && cfgs+=("off:$THREADS")
[ "$have_memory" = 1 ] && cfgs+=("memory:$THREADS" "stacks:$THREADS")
[ -n "$pweft" ] && cfgs+=("pmemory:$THREADS" "pstacks:$THREADS")
[ "$have_ht" = 1 ] && cfgs+=("heaptrack:$THREADS")
[ "$have_lttng" = 1 ] && cfgs+=("lttng:$THREADS")
cfgs+=("untraced:1")
[ "$have_memory" = 1 ] && cfgs+=("memory:1")
[ -n "$pweft" ] && cfgs+=("pmemory:1")
[ "$have_ht" = 1 ] && cfgs+=("heaptrack:1")
mkdir -p res

# run_cfg ID THREADS: one run; appends "cpu wall allproc" (ns/event) to res/ID.THREADS,
# or records the failure in res/ID.THREADS.err
run_cfg() {
  local id=$1 t=$2 cmd=() out line tm rc
  local mb=("$work/mem_bench" "$t" "$ITERS")
  case $id in
    untraced)  cmd=("${mb[@]}") ;;
    floor)     cmd=(env "LD_PRELOAD=$work/floor.so" "${mb[@]}") ;;
    floorstream) cmd=(env "LD_PRELOAD=$work/floorstream.so" "${mb[@]}") ;;
    off)       rm -rf off.data off.data.old
               cmd=(env "WEFT_OPTIONS=output=$work/off.data" "LD_PRELOAD=$preload" "${mb[@]}") ;;
    memory)    rm -rf "on$t.data" "on$t.data.old"
               cmd=("$weft" record -q -o "$work/on$t.data" --no-convert --memory -- "${mb[@]}") ;;
    stacks)    rm -rf stacks.data stacks.data.old
               cmd=("$weft" record -q -o "$work/stacks.data" --no-convert --memory=stacks -- "${mb[@]}") ;;
    pmemory)   rm -rf "pon$t.data" "pon$t.data.old"
               cmd=("$pweft" record -q -o "$work/pon$t.data" --no-convert --memory -- "${mb[@]}") ;;
    pstacks)   rm -rf pstacks.data pstacks.data.old
               cmd=("$pweft" record -q -o "$work/pstacks.data" --no-convert --memory=stacks -- "${mb[@]}") ;;
    heaptrack) rm -f "ht$t".*; cmd=(heaptrack -o "$work/ht$t" "${mb[@]}") ;;
    lttng)     rm -rf lttng
               if ! lttng create membench --output="$work/lttng" >/dev/null 2>"res/$id.$t.stderr"; then
                 echo "lttng create failed: $(head -1 "res/$id.$t.stderr");" >>"res/$id.$t.err"; return 0
               fi
               session_up=1
               lttng enable-event -u 'lttng_ust_libc:*' >/dev/null || echo "lttng enable-event failed;" >>"res/$id.$t.err"
               lttng start >/dev/null || echo "lttng start failed;" >>"res/$id.$t.err"
               cmd=(env "LD_PRELOAD=$lttng_wrap" "${mb[@]}") ;;
  esac
  rc=0
  out=$("${cmd[@]}" 2>"res/$id.$t.stderr"; rc=$?; times >times.txt; exit $rc) || rc=$?
  [ "$rc" = 0 ] || echo "exit $rc;" >>"res/$id.$t.err"
  if [ "$id" = lttng ]; then
    lttng stop >/dev/null 2>lttng-stop.txt || true
    lttng destroy membench >/dev/null 2>&1 || true
    session_up=0
  fi
  line=$(printf '%s\n' "$out" | grep -m1 '^threads=' || true)
  if [ -z "$line" ]; then
    tail -3 "res/$id.$t.stderr" >>"res/$id.$t.err" 2>/dev/null || true
    return 0
  fi
  # `times` in the subshell: second line is the user and sys time of the processes it waited for
  tm=$(awk 'NR==2{ for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } print s }' times.txt)
  printf '%s\n' "$line" | awk -v tm="$tm" -v ev="$((2 * ITERS * t))" '{
    for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    printf "%s %s %.2f\n", v["cpu_ns_per_event"], v["wall_ns_per_event"], tm * 1e9 / ev }' >>"res/$id.$t"
  # weft rows: the writer threads' CPU per event and the bytes per event (`weft info`)
  local dir="" w="$weft"
  case $id in
    memory) dir="on$t.data" ;; stacks) dir=stacks.data ;;
    pmemory) dir="pon$t.data"; w=$pweft ;; pstacks) dir=pstacks.data; w=$pweft ;;
  esac
  if [ -n "$dir" ] && [ -d "$dir" ]; then
    "$w" info "$dir" 2>/dev/null | awk '/^events:/{e=$2} /^bytes disk:/{b=$3}
      /overhead: writer threads/{c=$4} END{ if (e > 0) printf "%.2f %.3f\n", c * 1e6 / e, b / e }' >>"res/$id.$t.w"
  fi
}

for ((r = 1; r <= ROUNDS; r++)); do
  for c in "${cfgs[@]}"; do run_cfg "${c%%:*}" "${c##*:}"; done
done

# median FILE COLUMN
median() {
  [ -s "$1" ] || { echo "-"; return; }
  awk -v c="$2" '{print $c}' "$1" | sort -g | awk '{a[NR]=$1} END{
    if (NR % 2) printf "%.2f", a[(NR + 1) / 2]; else printf "%.2f", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
base=$(median "res/untraced.$THREADS" 1)
fmt='| %-40s | %12s | %13s | %15s | %10s | %13s |\n'
row() { # row ID LABEL
  local id=$1 label=$2 f="res/$1.$THREADS" c w a
  if [ ! -s "$f" ]; then
    printf "$fmt" "$label" "failed" "-" "-" "-" "-"
    notes+=("($label failed: $(tr '\n' ' ' <"res/$id.$THREADS.err" 2>/dev/null))")
    return
  fi
  c=$(median "$f" 1); w=$(median "$f" 2); a=$(median "$f" 3)
  if [ "$id" = untraced ]; then
    printf "$fmt" "$label" "$c" "$w" "-" "1.00x" "$a"
  else
    printf "$fmt" "$label" "$c" "$w" "$(awk -v c="$c" -v b="$base" 'BEGIN{printf "%+.2f", c - b}')" \
      "$(awk -v c="$c" -v b="$base" 'BEGIN{printf "%.2fx", c / b}')" "$a"
  fi
}
na() { printf "$fmt" "$1" "n/a ($2)" "" "" "" ""; }

echo "## malloc+free, $THREADS threads x $ITERS iterations ($((2 * THREADS * ITERS)) events), median of $ROUNDS interleaved rounds"
echo
printf "$fmt" "configuration" "cpu ns/event" "wall ns/event" "added cpu ns/ev" "x untraced" "all-proc cpu"
printf '|%s|%s|%s|%s|%s|%s|\n' "------------------------------------------" "--------------" "---------------" \
  "-----------------" "------------" "---------------"
row untraced "untraced"
row floor "floor: rdtsc + 32 B record, cached ring"
row floorstream "floor: the same, streaming (64 MB ring)"
if [ -n "$preload" ]; then row off "weft preloaded, memory off"; fi
if [ "$have_memory" = 1 ]; then
  row memory "weft record --memory"
  row stacks "weft record --memory=stacks"
elif [ -n "$weft" ]; then
  na "weft record --memory" "--memory not built yet"
  na "weft record --memory=stacks" "--memory not built yet"
fi
if [ "$have_ht" = 1 ]; then row heaptrack "heaptrack"; fi
if [ -n "$pweft" ]; then
  row pmemory "previous: weft record --memory"
  row pstacks "previous: weft record --memory=stacks"
fi
if [ "$have_lttng" = 1 ]; then row lttng "LTTng-UST libc wrapper, session"; fi
echo
echo "cpu: the benchmark threads' own CPU time; all-proc cpu: user+sys of the command and the processes it"
echo "waited for (weft's writer threads, heaptrack_interpret; not LTTng's daemons), start-up included."

echo
echo "## 1 vs $THREADS threads: cpu ns/event in the threads, and wall ns/event per thread (medians)"
echo
fmt2='| %-40s | %10s | %10s | %10s | %10s | %8s |\n'
printf "$fmt2" "configuration" "cpu 1 th" "cpu $THREADS th" "wall 1 th" "wall $THREADS th" "wall x"
printf '|%s|%s|%s|%s|%s|%s|\n' "------------------------------------------" "------------" "------------" \
  "------------" "------------" "----------"
row2() {
  local c1 c2 one two
  c1=$(median "res/$1.1" 1); c2=$(median "res/$1.$THREADS" 1)
  one=$(median "res/$1.1" 2); two=$(median "res/$1.$THREADS" 2)
  printf "$fmt2" "$2" "$c1" "$c2" "$one" "$two" "$(awk -v a="$one" -v b="$two" 'BEGIN{ if (a + 0 > 0 && b + 0 > 0) printf "%.2fx", b / a; else print "-" }')"
}
row2 untraced "untraced"
if [ "$have_memory" = 1 ]; then row2 memory "weft record --memory"
elif [ -n "$weft" ]; then printf "$fmt2" "weft record --memory" "n/a" "n/a" "n/a" "n/a" "-"; fi
[ -n "$pweft" ] && row2 pmemory "previous: weft record --memory"
if [ "$have_ht" = 1 ]; then row2 heaptrack "heaptrack"; fi

if [ "$have_memory" = 1 ]; then
  echo
  echo "## the writer: CPU per event of weft's writer threads and bytes per event on disk (medians, $THREADS threads)"
  echo
  fmt4='| %-40s | %14s | %14s | %10s |\n'
  printf "$fmt4" "configuration" "in-thread ns/ev" "writer ns/ev" "B/event"
  printf '|%s|%s|%s|%s|\n' "------------------------------------------" "----------------" "----------------" "------------"
  row4() { # ID LABEL
    local f="res/$1.$THREADS"
    [ -s "$f.w" ] || return 0
    printf "$fmt4" "$2" "$(awk -v c="$(median "$f" 1)" -v b="$base" 'BEGIN{printf "%+.2f", c - b}')" \
      "$(median "$f.w" 1)" "$(median "$f.w" 2)"
  }
  [ -n "$pweft" ] && row4 pmemory "previous: weft record --memory"
  row4 memory "weft record --memory"
  [ -n "$pweft" ] && row4 pstacks "previous: weft record --memory=stacks"
  row4 stacks "weft record --memory=stacks"
  echo
  echo "in-thread: cpu ns/event over untraced; writer: the writer threads' CPU (\`weft info\` overhead) / events."
fi

echo
echo "## trace size of the last round ($((2 * THREADS * ITERS)) malloc+free events; B/event: per event the trace holds, B/mem event: per malloc or free)"
echo
fmt3='| %-40s | %11s | %9s | %12s | %9s | %13s |\n'
printf "$fmt3" "configuration" "events" "dropped" "bytes disk" "B/event" "B/mem event"
printf '|%s|%s|%s|%s|%s|%s|\n' "------------------------------------------" "-------------" "-----------" "--------------" \
  "-----------" "---------------"
nev=$((2 * THREADS * ITERS))
size_row() { # label events dropped bytes
  printf "$fmt3" "$1" "$2" "$3" "$4" \
    "$(awk -v b="$4" -v e="$2" 'BEGIN{ if (b + 0 > 0 && e + 0 > 0) printf "%.2f", b / e; else print "-" }')" "$(awk -v b="$4" -v e="$nev" 'BEGIN{ if (b + 0 > 0) printf "%.2f", b / e; else print "-" }')"
}
info_row() { # label dir
  local inf
  if [ -d "$2" ] && inf=$("$weft" info "$2" 2>&1); then
    size_row "$1" "$(awk '/^events:/{print $2}' <<<"$inf")" "$(awk '/^dropped:/{print $2}' <<<"$inf")" \
      "$(awk '/^bytes disk:/{print $3}' <<<"$inf")"
  else
    printf "$fmt3" "$1" "n/a" "" "" "" ""
  fi
}
if [ "$have_memory" = 1 ]; then
  info_row "weft record --memory" "on$THREADS.data"
  info_row "weft record --memory=stacks" "stacks.data"
  if [ -n "$pweft" ]; then
    info_row "previous: weft record --memory" "pon$THREADS.data"
    info_row "previous: weft record --memory=stacks" "pstacks.data"
  fi
elif [ -n "$weft" ]; then
  printf "$fmt3" "weft record --memory" "n/a" "" "" "" ""
  printf "$fmt3" "weft record --memory=stacks" "n/a" "" "" "" ""
fi
htf=$(ls "ht$THREADS".* 2>/dev/null | head -1 || true)
if [ "$have_ht" = 1 ] && [ -n "$htf" ]; then
  size_row "heaptrack (${htf#ht$THREADS} file)" "-" "-" "$(stat -c %s "$htf")"
fi
if [ "$have_lttng" = 1 ] && [ -d lttng ]; then
  lost=$(grep -oE '[0-9]+ events? (were |was )?discarded' lttng-stop.txt 2>/dev/null | awk '{print $1}' | head -1 || true)
  size_row "LTTng-UST libc wrapper" "-" "${lost:-0}" "$(du -sb lttng | cut -f1)"
fi
# page-fault access sampling: CPU per first touch, dry / preloaded / sampled, interleaved
gcc -O2 -D_DEFAULT_SOURCE "$here/pagefault_bench.c" -o "$work/pagefault_bench"
if [ -n "$preload" ]; then
  for ((r = 1; r <= ROUNDS; r++)); do
    "$work/pagefault_bench" >>res/pf.dry
    WEFT_OPTIONS="output=$work/pf0.data" LD_PRELOAD="$preload" "$work/pagefault_bench" >>res/pf.off
    rm -rf "$work/pf1.data"
    WEFT_OPTIONS="output=$work/pf1.data:mem_access=pagefault" LD_PRELOAD="$preload" "$work/pagefault_bench" >>res/pf.on
  done
  echo
  echo "## page-fault access sampling: process CPU ns per first touch (512 MiB, 131072 pages; medians of $ROUNDS)"
  echo
  d=$(median res/pf.dry 1); f=$(median res/pf.off 1); o=$(median res/pf.on 1)
  printf '| %-40s | %10s | %10s |\n' "configuration" "ns/touch" "vs dry"
  printf '|%s|%s|%s|\n' "------------------------------------------" "------------" "------------"
  printf '| %-40s | %10s | %10s |\n' "untraced" "$d" "-"
  printf '| %-40s | %10s | %10s |\n' "weft preloaded, no sampling" "$f" "$(awk -v a="$f" -v b="$d" 'BEGIN{printf "%+.1f%%", (a / b - 1) * 100}')"
  printf '| %-40s | %10s | %10s |\n' "weft mem_access=pagefault" "$o" "$(awk -v a="$o" -v b="$d" 'BEGIN{printf "%+.1f%%", (a / b - 1) * 100}')"
  "$weft" info "$work/pf1.data" 2>/dev/null | grep -m1 'accesses:' || true
fi

if [ ${#notes[@]} -gt 0 ]; then
  echo
  printf '%s\n' "${notes[@]}"
fi
