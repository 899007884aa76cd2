"""Every kind of event, exactly: tests/programs/features.c says what it emits."""
import collections
import os
from weftlib import TraceTest, main, run, WEFT

FORK = not os.environ.get("WEFT_TEST_NO_FORK")


class Features(TraceTest):
    def setUp(self):
        super().setUp()
        self.data, _ = self.record("features")
        self.pf, _ = self.convert(self.data, "f.pftrace")

    def test_slices_args_counters_flows(self):
        self.protoc_decode(self.pf)
        self.tp_no_errors(self.pf)
        slices, args, counters, units, flows, procs, given = self.tp(
            self.pf,
            "select s.name, p.name parent, t.name track, th.name thread, s.depth from slice s "
            "left join slice p on p.id = s.parent_id join track t on t.id = s.track_id "
            "left join thread_track tt on tt.id = s.track_id left join thread th using(utid) "
            "order by s.ts, s.depth",
            "select s.name, a.key, a.value_type, a.int_value, a.string_value, a.real_value "
            "from slice s join args a on a.arg_set_id = s.arg_set_id where a.key like 'debug.%' "
            "order by s.name, a.key",
            "select t.name, c.value from counter c join counter_track t on t.id = c.track_id order by c.ts",
            "select name, unit from counter_track order by name",
            "select so.name src, si.name dst from flow f join slice so on so.id = f.slice_out "
            "join slice si on si.id = f.slice_in",
            "select p.name, count(s.id) n from process p left join thread t using(upid) "
            "left join thread_track tt using(utid) left join slice s on s.track_id = tt.id "
            "where p.pid != 0 group by p.upid order by p.name",
            "select dur from slice where name = 'given'")
        by_name = collections.defaultdict(list)
        for r in slices:
            by_name[r["name"]].append(r)
        self.assertNotIn("orphan", by_name)  # an end without a begin is dropped
        self.assertEqual(by_name["inner"][0]["parent"], "outer")
        self.assertEqual(by_name["mark"][0]["parent"], "outer")
        self.assertEqual(by_name["skipped"][0]["parent"], "unwind")
        if FORK:
            self.assertEqual(by_name["child work"][0]["depth"], 0)
        self.assertEqual(given, [{"dur": 1000000}])
        self.assertEqual({r["thread"] for r in by_name["lane work"]}, {None})
        self.assertEqual(len(by_name["lane work"]), 2)
        self.assertEqual({r["thread"] for r in by_name["consumer"]}, {"second"})
        self.assertEqual(len(by_name["job"]), 1)
        for n in ("in alpha", "in beta", "in debug", "explicit", "producer", "left open"):
            self.assertEqual(len(by_name[n]), 1, n)
        a = {(r["name"], r["key"]): r for r in args}
        self.assertEqual(a[("inner", "debug.i")]["int_value"], -5)
        self.assertEqual(a[("inner", "debug.u")]["int_value"], 7)
        self.assertEqual(a[("inner", "debug.d")]["real_value"], 2.5)
        self.assertEqual(a[("inner", "debug.b")]["value_type"], "bool")
        self.assertEqual(a[("inner", "debug.b")]["int_value"], 1)
        self.assertEqual(a[("inner", "debug.s")]["string_value"], 'hello "weft"')
        self.assertEqual(a[("inner", "debug.p")]["value_type"], "pointer")
        self.assertEqual(a[("inner", "debug.p")]["int_value"], 0x1234)
        self.assertEqual(a[("left open", "debug.weft_unterminated")]["int_value"], 1)
        self.assertEqual(a[("skipped", "debug.weft_unwound")]["int_value"], 1)
        self.assertEqual(a[("lane work", "debug.who")]["int_value"] in (1, 2), True)
        self.assertEqual([(r["name"], r["value"]) for r in counters],
                         [("items", 3), ("items", -4), ("load", 0.25)])
        self.assertEqual({r["name"]: r["unit"] for r in units}["load"], "ns")
        self.assertEqual(flows, [{"src": "producer", "dst": "consumer"}])
        # the forked child is a process of its own with its one slice
        if FORK:
            self.assertEqual(len(procs), 2)
            self.assertIn({"name": "features", "n": 1}, procs)

    def test_info_and_convert_summary(self):
        p = run([WEFT, "info", self.data])
        self.assertIn(f"processes:  {2 if FORK else 1}", p.stdout)
        self.assertIn("dropped:    0", p.stdout)
        self.assertIn('"second"', p.stdout)
        _, c = self.convert(self.data, "again.pftrace")
        self.assertIn("1 slices unterminated (closed at trace end)", c.stderr)
        self.assertIn("1 ends without a begin skipped", c.stderr)

    def test_json_flags_unterminated(self):
        for style, ph in (("be", "E"), ("x", "X")):
            path, _ = self.convert(self.data, f"{style}.json", f"--json-style={style}")
            ev = self.load_json(path)["traceEvents"]
            flagged = [e for e in ev if e["ph"] == ph and e.get("args", {}).get("weft_unterminated")]
            self.assertEqual(len(flagged), 1, style)
            names = {e["name"] for e in ev if e["ph"] in ("B", "X", "i")}
            self.assertNotIn("orphan", names)
            if FORK:
                self.assertIn("child work", names)

    def test_categories_and_filter(self):
        data, _ = self.record("features", options="categories=-debug")
        pf, _ = self.convert(data, "c.pftrace")
        rows, = self.tp(pf, "select name from slice where name like 'in %' order by name")
        self.assertEqual([r["name"] for r in rows], ["in alpha", "in beta"])
        data, _ = self.record("features", options="categories=alpha")
        pf, _ = self.convert(data, "c2.pftrace")
        rows, = self.tp(pf, "select name from slice where name like 'in %' order by name")
        self.assertEqual([r["name"] for r in rows], ["in alpha"])
        data, _ = self.record("features", options="filter=out*,inner")
        pf, _ = self.convert(data, "f2.pftrace")
        rows, counters = self.tp(pf, "select distinct name from slice order by name",
                                 "select count(*) n from counter")
        self.assertEqual([r["name"] for r in rows], ["inner", "outer"])
        self.assertEqual(counters, [{"n": 3}])  # the filter is for slices; counters stay


if __name__ == "__main__":
    main()
