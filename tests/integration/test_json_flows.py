"""Arrows with an async end (tests/programs/asyncflow.c): the .pftrace and both Chrome JSON
styles give trace_processor the same flows, slice to slice and async to slice and back."""
import collections
from weftlib import TraceTest, main

N = 50


class JsonFlows(TraceTest):
    def test_same_flows_everywhere(self):
        data, _ = self.record("asyncflow", [N])
        q = ("select so.name src, si.name dst, count(*) n from flow f join slice so on f.slice_out = so.id "
             "join slice si on f.slice_in = si.id group by 1, 2 order by 1, 2")
        pf, _ = self.convert(data, "t.pftrace")
        want = [{"src": "handle", "dst": "receive", "n": N}, {"src": "request", "dst": "handle", "n": N},
                {"src": "send", "dst": "receive", "n": N}]
        self.assertEqual(self.tp(pf, q)[0], want)
        for style in ("be", "x"):
            with self.subTest(style=style):
                js, _ = self.convert(data, f"t-{style}.json", f"--json-style={style}")
                self.load_json(js)
                self.assertEqual(self.tp(js, q)[0], want)


if __name__ == "__main__":
    main()
