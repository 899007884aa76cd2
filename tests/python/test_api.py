"""The weft Python module's explicit API (weft._weft): each test runs a small script under
/usr/bin/python3 with WEFT_OPTIONS=output=DIR, converts the trace with `weft convert` and checks
it with Perfetto's trace_processor (tests/integration/weftlib.py). The scripts check return
values and exceptions themselves and print what the test compares. No timing assertions.

Run: PYTHONPATH=BUILD/python WEFT_BUILD=BUILD /usr/bin/python3 -m pytest tests/python"""
import collections
import json
import os
import subprocess
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import weftlib  # noqa: E402

PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
PYPATH = os.path.join(weftlib.BUILD, "python")

# A TSan-built extension cannot load into Debian's (uninstrumented) python3: libtsan needs to
# come first in the process, with its static TLS. The plain and ASan runs cover the module.
if "thread" in weftlib.sanitizer():
    pytest.skip("the TSan build's extension cannot be loaded by an uninstrumented python3",
                allow_module_level=True)


class Traced:
    """A script's run: its stdout, and SQL over its converted trace."""

    def __init__(self, tmp, script, options="", env=None, check=True):
        self.tmp = str(tmp)
        self.data = os.path.join(self.tmp, "trace.data")
        path = os.path.join(self.tmp, "prog.py")
        with open(path, "w") as f:
            f.write(textwrap.dedent(script))
        e = {"WEFT_OPTIONS": f"output={self.data}" + (":" + options if options else ""),
             "PYTHONPATH": PYPATH}
        e.update(env or {})
        self.proc = weftlib.run([PY, path], env=e, cwd=self.tmp, check=check)
        self.out = self.proc.stdout
        self._pf = None

    def pftrace(self):
        if not self._pf:
            self._pf = os.path.join(self.tmp, "x.pftrace")
            weftlib.run([weftlib.WEFT, "convert", self.data, "-o", self._pf])
        return self._pf

    def q(self, *sql):
        res = weftlib.tp_query(self.pftrace(), *sql)
        for r in res:
            assert "error" not in r, r
        return [r["rows"] for r in res]


# slices with their parent's name and their thread's
SLICES = ("select s.name, s.depth, p.name parent, th.name thread from slice s "
          "left join slice p on p.id = s.parent_id left join thread_track tt on tt.id = s.track_id "
          "left join thread th using(utid) order by s.ts, s.depth")
ARGS = ("select s.name, a.key, a.value_type, a.int_value, a.string_value, a.real_value from slice s "
        "join args a on a.arg_set_id = s.arg_set_id where a.key like 'debug.%' order by s.ts, a.key")


def counts(rows):
    return collections.Counter(r["name"] for r in rows)


def test_recursion_exact_count(tmp_path):
    t = Traced(tmp_path, """
        import weft
        @weft.trace
        def fib(n):
            return n if n < 2 else fib(n - 1) + fib(n - 2)
        assert fib(15) == 610
        print("ok")
    """)
    assert t.out.strip() == "ok"
    stats, = t.q("select count(*) n, max(depth) d, min(depth) d0, "
                 "sum(parent_id is null) roots, "
                 "sum(parent_id is not null and (select name from slice p where p.id = slice.parent_id) = 'fib') "
                 "nested from slice where name = 'fib'")
    assert stats == [{"n": 1973, "d": 14, "d0": 0, "roots": 1, "nested": 1972}]


def test_methods_closures_lambdas(tmp_path):
    t = Traced(tmp_path, """
        import weft

        class Shape:
            def __init__(self, k):
                self.k = k
            @weft.trace
            def area(self, x):
                return self.k * x
            @staticmethod
            @weft.trace
            def unit():
                return 1
            @weft.trace
            @staticmethod
            def unit2():
                return 2
            @classmethod
            @weft.trace
            def make(cls, k):
                return cls(k)
            @weft.trace
            @classmethod
            def kind(cls):
                return cls.__name__

        def outer(n):
            @weft.trace
            def inner(i):
                return i + n
            return [inner(i) for i in range(3)]

        sq = weft.trace(lambda x: x * x)
        named = weft.trace(name="square", category="math")(lambda x: x * x)

        @weft.trace
        def top():
            s = Shape.make(3)
            return s.area(2), Shape.unit(), s.unit2(), outer(10), sq(4), named(5), Shape.area(s, 1)

        assert top() == (6, 1, 2, [10, 11, 12], 16, 25, 3)
        assert Shape.kind() == "Shape" and Shape(1).kind() == "Shape"
        import pickle
        assert pickle.loads(pickle.dumps(top)) is top
        # the wrapper looks like the function
        assert Shape.area.__name__ == "area" and Shape.area.__qualname__ == "Shape.area"
        assert Shape.__dict__["area"].__wrapped__.__code__.co_name == "area"
        assert top.__module__ == "__main__"
        print("ok")
    """)
    assert t.out.strip() == "ok"
    rows, = t.q(SLICES)
    n = counts(rows)
    assert n == {"top": 1, "Shape.make": 1, "Shape.area": 2, "Shape.unit": 1, "Shape.unit2": 1,
                 "outer.<locals>.inner": 3, "<lambda>": 1, "square": 1, "Shape.kind": 2}
    for r in rows:
        if r["name"] not in ("top", "Shape.kind"):
            assert (r["parent"], r["depth"]) == ("top", 1), r
    assert {r["thread"] for r in rows} == {"MainThread"}
    cats, = t.q("select distinct category from slice where name = 'square'")
    assert cats == [{"category": "math"}]


def test_exceptions_marked_and_unchanged(tmp_path):
    t = Traced(tmp_path, """
        import traceback, weft

        class Oops(Exception):
            pass

        @weft.trace
        def fail(obj):
            raise obj

        @weft.trace
        def outer():
            try:
                fail(KeyError("k"))
            except KeyError:
                pass
            return fail

        e = Oops("boom")
        try:
            fail(e)
        except Oops as got:
            assert got is e
            names = [f.name for f in traceback.extract_tb(got.__traceback__)]
            assert names[-1] == "fail", names
        assert outer() is fail
        with_scope = weft.scope("guarded")
        try:
            with with_scope:
                {}["missing"]
        except KeyError:
            pass
        print("ok")
    """)
    assert t.out.strip() == "ok"
    rows, args = t.q(SLICES, ARGS)
    n = counts(rows)
    assert n == {"fail": 2, "outer": 1, "exception": 3, "guarded": 1}
    parents = collections.Counter((r["name"], r["parent"]) for r in rows)
    assert parents[("exception", "fail")] == 2
    assert parents[("exception", "guarded")] == 1
    assert parents[("fail", "outer")] == 1
    marks = [(r["key"], r["string_value"]) for r in args if r["name"] == "exception"]
    assert marks == [("debug.exception", "Oops"), ("debug.exception", "KeyError"),
                     ("debug.exception", "KeyError")]
    # every slice was closed: none is left open (dur -1) at the end of the trace
    open_, = t.q("select count(*) n from slice where dur < 0")
    assert open_ == [{"n": 0}]


def test_scope_args_nesting_and_decorator(tmp_path):
    t = Traced(tmp_path, """
        import weft
        with weft.scope("outer", category="phase", n=3, ratio=0.25, ok=True, who="weft", big=2**70,
                        neg=-7, obj=[1, 2]):
            with weft.scope("inner"):
                weft.instant("mark", step=2)
            weft.instant("bare")

        s = weft.scope("again")
        def rec(k):
            with s:
                if k:
                    rec(k - 1)
        rec(3)

        @weft.scope("as decorator", tag="d")
        def deco(x):
            return x + 1
        assert deco(1) == 2 and deco.__name__ == "deco"
        print("ok")
    """)
    assert t.out.strip() == "ok"
    rows, args = t.q(SLICES, ARGS)
    n = counts(rows)
    assert n == {"outer": 1, "inner": 1, "mark": 1, "bare": 1, "again": 4, "as decorator": 1}
    depth = {(r["name"], r["parent"]): r["depth"] for r in rows}
    assert depth[("inner", "outer")] == 1 and depth[("mark", "inner")] == 2 and depth[("bare", "outer")] == 1
    assert sorted(r["depth"] for r in rows if r["name"] == "again") == [0, 1, 2, 3]
    a = {(r["name"], r["key"]): r for r in args}
    assert a[("outer", "debug.n")]["int_value"] == 3
    assert a[("outer", "debug.ratio")]["real_value"] == 0.25
    assert a[("outer", "debug.ok")]["value_type"] == "bool" and a[("outer", "debug.ok")]["int_value"] == 1
    assert a[("outer", "debug.who")]["string_value"] == "weft"
    assert a[("outer", "debug.neg")]["int_value"] == -7
    assert a[("outer", "debug.big")]["string_value"] == str(2**70)
    assert a[("outer", "debug.obj")]["string_value"] == "[1, 2]"
    assert a[("mark", "debug.step")]["int_value"] == 2
    assert a[("as decorator", "debug.tag")]["string_value"] == "d"
    cats, = t.q("select distinct category from slice where name = 'outer'")
    assert cats == [{"category": "phase"}]


def test_counters(tmp_path):
    t = Traced(tmp_path, """
        import weft
        for i in range(5):
            weft.counter("queue depth", i * 10)
        weft.counter("latency", 1.5, unit="ns")
        weft.counter("latency", 2.25, unit="ns")
        weft.counter("flag", True)
    """)
    values, units = t.q("select t.name, c.value from counter c join counter_track t on t.id = c.track_id "
                        "order by c.ts",
                        "select name, unit from counter_track order by name")
    got = collections.defaultdict(list)
    for r in values:
        got[r["name"]].append(r["value"])
    assert got == {"queue depth": [0, 10, 20, 30, 40], "latency": [1.5, 2.25], "flag": [1]}
    assert {r["name"]: r["unit"] for r in units}["latency"] in ("ns", "unit_time_ns")


def test_named_tracks(tmp_path):
    t = Traced(tmp_path, """
        import threading, weft
        gpu = weft.track("gpu stream")
        assert weft.track("gpu stream").id == gpu.id and gpu.name == "gpu stream"
        def work():
            with gpu.scope("kernel", grid=64):
                gpu.instant("launch")
        work()
        th = threading.Thread(target=work, name="helper")
        th.start(); th.join()
        with weft.scope("host"):
            pass
    """)
    lanes, = t.q("select s.name, s.depth, p.name stream from slice s join track t on t.id = s.track_id "
                 "left join track p on p.id = t.parent_id order by s.ts")
    on_gpu = [(r["name"], r["depth"]) for r in lanes if r["stream"] == "gpu stream"]
    assert on_gpu == [("kernel", 0), ("launch", 1), ("kernel", 0), ("launch", 1)]
    assert [r["stream"] for r in lanes if r["name"] == "host"] != ["gpu stream"]
    names, = t.q("select t.name from track t join track p on p.id = t.parent_id "
                 "where p.name = 'gpu stream' order by t.name")
    assert [r["name"].split(" (")[0] for r in names] == ["MainThread", "helper"]


def test_async_slices_and_flows(tmp_path):
    t = Traced(tmp_path, """
        import threading, weft
        weft.async_begin("request", 42)
        with weft.scope("send"):
            weft.flow_out(7)
        def worker():
            with weft.scope("receive"):
                weft.flow_in(7)
            weft.async_end("request", 42)
        th = threading.Thread(target=worker, name="worker")
        th.start(); th.join()
    """)
    flows, asyncs = t.q("select so.name src, si.name dst from flow f join slice so on so.id = f.slice_out "
                        "join slice si on si.id = f.slice_in",
                        "select s.name, s.dur > 0 closed, t.type from slice s join track t on t.id = s.track_id "
                        "where s.name = 'request'")
    assert flows == [{"src": "send", "dst": "receive"}]
    assert len(asyncs) == 1 and asyncs[0]["closed"] == 1
    assert asyncs[0]["type"] != "thread_track"


def test_generators_and_coroutines(tmp_path):
    t = Traced(tmp_path, """
        import asyncio, weft

        @weft.trace
        def count(n):
            for i in range(n):
                yield i
            return "done"

        @weft.trace
        def delegate():
            r = yield from count(2)
            return r

        @weft.trace
        async def step(name, k):
            for _ in range(k):
                await asyncio.sleep(0)
            return name

        @weft.trace
        async def main():
            return await asyncio.gather(step("a", 2), step("b", 3))

        assert list(count(3)) == [0, 1, 2]
        g = delegate()
        assert next(g) == 0 and next(g) == 1
        try:
            next(g)
        except StopIteration as e:
            assert e.value == "done"
        assert asyncio.run(main()) == ["a", "b"]
        assert asyncio.iscoroutinefunction(step)
        print("ok")
    """)
    assert t.out.strip() == "ok"
    rows, = t.q(SLICES)
    n = counts(rows)
    # count(3): 3 yields + the finishing resumption; delegate: 3 resumptions, each resuming
    # count(2) inside it; step("a", 2): 3 resumptions, step("b", 3): 4; main: 2 (start, and
    # after gather's results)
    assert n["count"] == 4 + 3
    assert n["delegate"] == 3
    assert n["step"] == 3 + 4
    assert n["main"] == 2
    parents = collections.Counter((r["name"], r["parent"]) for r in rows)
    assert parents[("count", "delegate")] == 3
    assert all(r["depth"] == 0 for r in rows if r["name"] in ("step", "main"))


def test_disabled_same_results_no_events(tmp_path):
    script = """
        import weft
        @weft.trace
        def fib(n):
            return n if n < 2 else fib(n - 1) + fib(n - 2)
        @weft.trace
        def gen(n):
            yield from range(n)
        @weft.trace
        def bad():
            raise ValueError("v")
        with weft.scope("s", a=1):
            weft.instant("i")
            weft.counter("c", 1)
        try:
            bad()
        except ValueError as e:
            err = repr(e)
        print(fib(12), list(gen(3)), err, type(gen(1)).__name__, weft.enabled())
    """
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    on = Traced(tmp_path / "on", script)
    off = Traced(tmp_path / "off", script, options="enable=0")
    assert on.out.split()[:-2] == off.out.split()[:-2]
    assert on.out.split()[-2:] == ["traced_generator", "True"]
    assert off.out.split()[-2:] == ["generator", "False"]
    assert not os.path.exists(off.data)  # nothing recorded, not even a directory
    rows, = on.q("select count(*) n from slice where name = 'fib'")
    assert rows == [{"n": 465}]


def test_filter_and_stop(tmp_path):
    t = Traced(tmp_path, """
        import weft
        weft.configure(filter="-noisy")
        @weft.trace
        def noisy(): return 1
        @weft.trace
        def kept(): return 2
        assert noisy() + kept() == 3
        weft.stop()
        assert not weft.enabled()
        assert kept() == 2
        with weft.scope("late"):
            pass
        print("ok")
    """)
    assert t.out.strip() == "ok"
    rows, = t.q(SLICES)
    assert counts(rows) == {"kept": 1}


def test_after_stop_counts_both_ends(tmp_path):
    # a traced call or a scope is two events (its begin and its end) when recorded, and two
    # when counted after weft.stop(): written + dropped + after_stop is what was emitted
    t = Traced(tmp_path, """
        import ctypes, weft
        class Stats(ctypes.Structure):
            _fields_ = [("sz", ctypes.c_size_t)] + [(n, ctypes.c_uint64) for n in
                        ("events", "dropped", "after_stop", "bytes_raw", "bytes_written", "chunks")]
        lib = ctypes.CDLL("libweft.so.0")  # the one the extension uses
        @weft.trace
        def kept(): return 2
        kept()
        with weft.scope("s"):
            pass
        weft.stop()
        for _ in range(3):
            kept()
            with weft.scope("s"):
                pass
        st = Stats(ctypes.sizeof(Stats))
        assert lib.weft_stats_get(ctypes.byref(st)) == 0
        print(st.events, st.dropped, st.after_stop)
    """)
    events, dropped, after = map(int, t.out.split())
    assert after == 3 * 4
    rows, = t.q(SLICES)
    assert counts(rows) == {"kept": 1, "s": 1}


def test_threads_named_from_threading(tmp_path):
    t = Traced(tmp_path, """
        import threading, weft
        @weft.trace
        def job(): pass
        ts = [threading.Thread(target=job, name=f"pool-{i}") for i in range(3)]
        for th in ts: th.start()
        for th in ts: th.join()
        def renamed():
            weft.thread_name("custom")
            job()
        th = threading.Thread(target=renamed, name="ignored"); th.start(); th.join()
        job()
    """)
    rows, = t.q(SLICES)
    assert sorted(r["thread"] for r in rows) == ["MainThread", "custom", "pool-0", "pool-1", "pool-2"]


def test_configure_errors(tmp_path):
    t = Traced(tmp_path, """
        import weft
        for kw in ({"bogus": 1}, {"writers": 99}):
            try:
                weft.configure(**kw)
            except ValueError as e:
                print(e)
            else:
                print("no error")
        try:
            weft.configure("enable=1:nokey=2")
        except ValueError as e:
            print(e)
        weft.configure(enable=True, compression=0)
        print(weft.start(), weft.enabled())
    """)
    lines = t.out.splitlines()
    assert lines[0].startswith("unknown option 'bogus' ignored; valid keys: enable, output,"), lines
    assert lines[1] == "bad value '99' for option writers: expected 1 to 16; using the default"
    assert lines[2].startswith("unknown option 'nokey' ignored; valid keys:")
    assert lines[3] == "True True"
    assert t.proc.stderr == ""


def test_api_errors_are_exceptions(tmp_path):
    t = Traced(tmp_path, """
        import weft
        def expect(exc, f, *a, **k):
            try:
                f(*a, **k)
            except exc:
                return
            raise AssertionError(f"{f} did not raise {exc}")
        expect(TypeError, weft.trace, 3)
        expect(TypeError, weft.scope, 3)
        expect(TypeError, weft.instant, "x", category=5)
        expect(TypeError, weft.counter, "x", "y")
        expect(TypeError, weft.async_begin, "x", "id")
        expect(TypeError, weft.flow_out, 1.5)
        expect(TypeError, weft.instant, "x", **{f"k{i}": i for i in range(17)})
        expect(RuntimeError, weft.scope("x").__exit__, None, None, None)
        print("ok")
    """)
    assert t.out.strip() == "ok"
