"""The bundled example, end to end: record, convert to .pftrace and JSON, and check the exact
tracks, slices, nesting, lanes, counters, flows, async slices and args with protoc,
trace_processor and json."""
import collections
import re
from weftlib import TraceTest, main

S, E, W = 3, 40, 2  # streams, events per stream, workers
PER_EVENT = {"unpack": 1, "decode": 1, "reconstruct": 1, "fit": 2, "write": 1}


class Pipeline(TraceTest):
    def setUp(self):
        super().setUp()
        self.data, _ = self.record("pipeline", [S, E, W])
        self.pf, _ = self.convert(self.data, "t.pftrace")

    def test_protoc_decodes_exactly(self):
        text = self.protoc_decode(self.pf)
        if text is None:
            self.skipTest("Perfetto schema absent (../shared/perfetto)")
        begins = len(re.findall(r"type: TYPE_SLICE_BEGIN", text))
        ends = len(re.findall(r"type: TYPE_SLICE_END", text))
        self.assertEqual(begins, ends)
        # per event 6 module slices + 1 async; main thread: main, setup, load geometry, submit, join
        self.assertEqual(begins, S * E * 7 + 5)
        self.assertEqual(len(re.findall(r"\bflow_ids: ", text)), S * E * 2)
        self.assertEqual(len(re.findall(r"terminating_flow_ids: ", text)), S * E * 2)
        # queue depth and work done, and at least one point of the rate (one per 100 ms run)
        self.assertGreaterEqual(len(re.findall(r"type: TYPE_COUNTER", text)), S * E * 3 * 2 + 2)
        # every sequence starts with incremental state cleared
        self.assertEqual(len(re.findall(r"first_packet_on_sequence: true", text)), 1 + W)

    def test_trace_processor(self):
        self.tp_no_errors(self.pf)
        (counts, nesting, lanes, flows, counters, asyncs, args, threads, procs) = self.tp(
            self.pf,
            "select name, count(*) n from slice group by name order by name",
            "select c.name child, p.name parent, count(*) n from slice c left join slice p "
            "on c.parent_id = p.id group by 1, 2 order by 1, 2",
            "select t.name lane, p.name stream, count(s.id) n from track t join track p "
            "on t.parent_id = p.id left join slice s on s.track_id = t.id where p.name like 'stream %' "
            "group by t.id order by 2, 1",
            "select so.name src, si.name dst, count(*) n from flow f join slice so on so.id = f.slice_out "
            "join slice si on si.id = f.slice_in group by 1, 2 order by 1",
            "select t.name, count(*) n, min(c.value) lo, max(c.value) hi from counter_track t "
            "join counter c on c.track_id = t.id group by t.name order by t.name",
            "select max(s.depth) depth, count(*) n, min(s.dur) mindur, max(t.type) type from slice s "
            "join track t on t.id = s.track_id where s.name = 'event in flight'",
            "select s.name, a.key, a.value_type, count(*) n from slice s join args a "
            "on a.arg_set_id = s.arg_set_id where a.key like 'debug.%' group by 1, 2, 3 order by 1, 2",
            "select tid, name from thread where tid != 0 order by name",
            "select name from process where pid != 0")
        n = {r["name"]: r["n"] for r in counts}
        want = {k: v * S * E for k, v in PER_EVENT.items()}
        want.update({"event in flight": S * E, "main": 1, "setup": 1, "load geometry": 1,
                     "configured": 1, "submit": 1, "join": 1})
        self.assertEqual(n, want)
        parents = {(r["child"], r["parent"]): r["n"] for r in nesting}
        self.assertEqual(parents[("decode", "unpack")], S * E)
        self.assertEqual(parents[("fit", "reconstruct")], 2 * S * E)
        self.assertEqual(parents[("load geometry", "setup")], 1)
        self.assertEqual(parents[("configured", "setup")], 1)
        for top in ("unpack", "reconstruct", "write"):
            self.assertEqual(parents[(top, None)], S * E)
        for child in ("setup", "submit", "join"):
            self.assertEqual(parents[(child, "main")], 1)
        # lanes: one per (stream, worker that ran it), named after the worker, under the stream
        per_stream = collections.Counter()
        tids = {r["name"]: r["tid"] for r in threads}
        for r in lanes:
            m = re.fullmatch(r"(worker \d) \((\d+)\)", r["lane"])
            self.assertIsNotNone(m, r["lane"])
            self.assertEqual(tids[m.group(1)], int(m.group(2)))
            per_stream[r["stream"]] += r["n"]
        self.assertEqual(dict(per_stream), {f"stream {i}": E * sum(PER_EVENT.values()) for i in range(S)})
        self.assertEqual({(r["src"], r["dst"]): r["n"] for r in flows},
                         {("unpack", "reconstruct"): S * E, ("reconstruct", "write"): S * E})
        c = {r["name"]: r for r in counters}
        self.assertEqual(c["queue depth"]["n"], S * E * 3 * 2)
        self.assertEqual(c["queue depth"]["lo"], 0)
        self.assertLessEqual(c["queue depth"]["hi"], S * E)
        self.assertEqual((c["work done"]["n"], c["work done"]["hi"]), (1, S * E))
        # async slices overlap in time, so trace_processor spreads them over merged tracks
        self.assertEqual(asyncs[0]["depth"], 0)
        self.assertEqual(asyncs[0]["type"], "process_merged_track_event")
        self.assertEqual(asyncs[0]["n"], S * E)
        self.assertGreater(asyncs[0]["mindur"], 0)
        a = {(r["name"], r["key"]): (r["value_type"], r["n"]) for r in args}
        self.assertEqual(a[("reconstruct", "debug.quality")], ("real", S * E))
        self.assertEqual(a[("write", "debug.compressed")], ("bool", S * E))
        self.assertEqual(a[("unpack", "debug.stream")], ("string", S * E))
        self.assertEqual(a[("fit", "debug.iteration")], ("int", 2 * S * E))
        self.assertEqual(a[("decode", "debug.bytes")], ("uint", S * E))
        self.assertEqual(a[("configured", "debug.streams")], ("int", 1))
        self.assertEqual(sorted(tids), ["main", "worker 0", "worker 1"])
        self.assertEqual(procs, [{"name": "pipeline"}])

    def test_json_be(self):
        path, _ = self.convert(self.data, "t.json")
        doc = self.load_json(path)
        ev = doc["traceEvents"]
        ph = collections.Counter(e["ph"] for e in ev)
        self.assertEqual(ph["B"], ph["E"])
        self.assertEqual(ph["B"], S * E * 6 + 5)
        self.assertEqual((ph["b"], ph["e"]), (S * E, S * E))
        self.assertEqual((ph["s"], ph["f"]), (2 * S * E, 2 * S * E))
        # counters by name: how many points the rate counter has depends on how long the run
        # took, so it is not counted here
        counters = collections.Counter(e["name"] for e in ev if e["ph"] == "C")
        self.assertEqual((counters["queue depth"], counters["work done"]), (S * E * 6, 1))
        self.assertEqual(set(counters) - {"module steps/s"}, {"queue depth", "work done"})
        # the rate shows in a run shorter than its 100 ms period: its count is flushed at stop
        self.assertGreaterEqual(counters["module steps/s"], 1)
        rate = [e["args"]["value"] for e in ev if e["ph"] == "C" and e["name"] == "module steps/s"]
        self.assertTrue(all(v > 0 for v in rate), rate)
        names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
        for s in range(S):
            self.assertTrue(any(n.startswith(f"stream {s} / worker ") for n in names), names)
        # per (pid, tid) the B/E events nest like a stack
        stacks = collections.defaultdict(list)
        for e in ev:
            if e["ph"] == "B":
                stacks[(e["pid"], e["tid"])].append(e["name"])
            elif e["ph"] == "E":
                self.assertTrue(stacks[(e["pid"], e["tid"])], e)
                stacks[(e["pid"], e["tid"])].pop()
        self.assertTrue(all(not s for s in stacks.values()))
        self.assertEqual(doc["metadata"]["weft-dropped-events"], 0)

    def test_json_x(self):
        path, _ = self.convert(self.data, "x.json", "--json-style=x")
        ev = self.load_json(path)["traceEvents"]
        xs = [e for e in ev if e["ph"] == "X"]
        self.assertEqual(len(xs), S * E * 6 + 5)  # + main, setup, load geometry, submit, join
        self.assertTrue(all(e["dur"] >= 0 for e in xs))
        self.assertEqual(collections.Counter(e["name"] for e in xs)["fit"], 2 * S * E)
        rec = [e for e in xs if e["name"] == "reconstruct"]
        self.assertTrue(all(0.5 <= e["args"]["quality"] <= 0.9 for e in rec))


if __name__ == "__main__":
    main()
