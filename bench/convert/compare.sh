#!/usr/bin/env bash
# bench/convert/compare.sh NEW_BUILD BASE_BUILD DIR [convert options]: does trace_processor read
# the same from both builds' .pftrace of DIR? Slices (ts, dur, name, depth, category, thread
# times, thread, track), counters, threads, processes, flows, args, sched and error stats;
# prints SAME or the first difference of each query. For changes that must not change what a
# trace says (the .pftrace encoding).
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
new=$(cd "$1" && pwd); base=$(cd "$2" && pwd); d=$3; shift 3
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
"$base/weft" convert -q "$d" -o "$t/base.pftrace" "$@" || exit 1
"$new/weft" convert -q "$d" -o "$t/new.pftrace" "$@" || exit 1
q=("select s.ts, s.dur, s.name, s.depth, s.category, s.thread_ts, s.thread_dur, t.tid, tr.name tname from slice s left join thread_track tt on s.track_id = tt.id left join thread t using(utid) left join track tr on tr.id = s.track_id order by s.ts, t.tid, tr.name, s.depth, s.name, s.dur"
   "select c.ts, c.value, t.name from counter c join counter_track t on c.track_id = t.id order by 3, 1, 2"
   "select tid, start_ts, end_ts, name from thread order by tid, start_ts"
   "select pid, start_ts, name from process order by pid"
   "select so.ts t0, si.ts t1, so.name a, si.name b from flow f join slice so on so.id = f.slice_out join slice si on si.id = f.slice_in order by 1, 2, 3, 4"
   "select name, idx, severity, source, value from stats where value > 0 and severity in ('error', 'data_loss') order by name, idx"
   "select s.ts, s.name, a.key, a.display_value from slice s join args a using(arg_set_id) order by 1, 2, 3, 4"
   "select ts, dur, cpu, utid from sched order by ts, cpu")
for v in base new; do node "$src/tests/tp/tp_query.mjs" "$t/$v.pftrace" "${q[@]}" > "$t/$v.json" 2>/dev/null; done
/usr/bin/python3 - "$t" "$d" <<'PY'
import json, os, sys
t, d = sys.argv[1:]
a, b = (json.load(open(f"{t}/{v}.json")) for v in ("base", "new"))
bad = 0
for x, y in zip(a, b):
    if x.get("rows") != y.get("rows") or "error" in x or "error" in y:
        bad += 1
        print("DIFF:", x["sql"][:80], x.get("error"), y.get("error"))
        for i, (r, s) in enumerate(zip(x.get("rows") or [], y.get("rows") or [])):
            if r != s:
                print("  first difference, row", i, r, s)
                break
rows = sum(len(x.get("rows", [])) for x in a)
sizes = [os.path.getsize(f"{t}/{v}.pftrace") for v in ("base", "new")]
print(f"{d}: {'SAME' if not bad else 'DIFFERENT'} ({rows} rows); bytes base {sizes[0]}, new {sizes[1]}")
sys.exit(1 if bad else 0)
PY
