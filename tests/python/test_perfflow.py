"""perfflowaspect on weft (python/perfflowaspect/): programs annotated as PerfFlowAspect's own
smoke tests are, run under /usr/bin/python3 with PERFFLOW_OPTIONS variants. Each test checks
the program's own output, the .pfw files (PerfFlowAspect's Chrome trace layout: phases, names,
pairing) and the weft trace directory, converted and queried with Perfetto's trace_processor.
No timing assertions but lower bounds of CPU time a region spins for.

Run: WEFT_BUILD=BUILD /usr/bin/python3 -m pytest tests/python/test_perfflow.py"""
import collections
import glob
import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import weftlib  # noqa: E402

# A TSan-built extension cannot load into Debian's (uninstrumented) python3: libtsan needs to
# come first in the process, with its static TLS. The plain and ASan runs cover the package.
if "thread" in weftlib.sanitizer():
    pytest.skip("the TSan build's extension cannot be loaded by an uninstrumented python3",
                allow_module_level=True)

PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
PYPATH = os.path.join(weftlib.BUILD, "python")


def load_pfw(path):
    """A .pfw's events, read as PerfFlowAspect's users read them: the open array (or the
    object's open traceEvents) closed by appending an empty event."""
    with open(path) as f:
        text = f.read()
    if text.startswith("["):
        evs = json.loads(text + " {}]")
    else:
        evs = json.loads(text + " {}]}")["traceEvents"]
    assert evs[-1] == {}
    return evs[:-1]


class Run:
    """A program run with PERFFLOW_OPTIONS in a scratch directory (no WEFT_* inherited)."""

    def __init__(self, tmp, script, options=None, check=True, log_dir=None):
        self.tmp = str(tmp)
        with open(os.path.join(self.tmp, "prog.py"), "w") as f:
            f.write(textwrap.dedent(script))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("WEFT_", "PERFFLOW_"))}
        env["PYTHONPATH"] = PYPATH
        env["WEFT_CLI"] = weftlib.WEFT
        if options is not None:
            env["PERFFLOW_OPTIONS"] = options
        self.proc = subprocess.run([PY, "prog.py"], cwd=self.tmp, env=env, capture_output=True,
                                   text=True, timeout=240)
        if check:
            assert self.proc.returncode == 0, self.proc.stderr
            assert self.proc.stderr == "", self.proc.stderr
        self.out = self.proc.stdout
        self.log_dir = os.path.join(self.tmp, log_dir or "")
        self.data = os.path.join(self.log_dir, "weft.data")
        self._pf = None

    def pfws(self):
        return sorted(glob.glob(os.path.join(self.log_dir, "perfflow.*.pfw")))

    def q(self, *sql):
        if not self._pf:
            self._pf = os.path.join(self.tmp, "x.pftrace")
            weftlib.run([weftlib.WEFT, "convert", "-q", self.data, "-o", self._pf])
        res = weftlib.tp_query(self._pf, *sql)
        for r in res:
            assert "error" not in r, r
        return [r["rows"] for r in res]


def check_pairs(evs):
    """Every B has its E (same thread, same name, properly nested); X events have a dur."""
    stacks = collections.defaultdict(list)
    for e in evs:
        assert {"name", "cat", "pid", "tid", "ts", "ph"} <= set(e), e
        if e["ph"] == "B":
            stacks[(e["pid"], e["tid"])].append(e["name"])
        elif e["ph"] == "E":
            st = stacks[(e["pid"], e["tid"])]
            assert st and st.pop() == e["name"], e
        elif e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
    assert all(not s for s in stacks.values()), stacks


SMOKE = """
    import asyncio
    import time
    import perfflowaspect
    import perfflowaspect.aspect


    @perfflowaspect.aspect.critical_path(pointcut="around")
    def bas():
        print("bas")


    @perfflowaspect.aspect.critical_path(pointcut="around")
    def bar():
        print("bar")
        time.sleep(0.001)
        bas()


    @perfflowaspect.aspect.critical_path()
    def foo(msg):
        print("foo")
        time.sleep(0.001)
        bar()
        if msg == "hello":
            return 1
        return 0


    @perfflowaspect.aspect.critical_path(pointcut="before")
    def early(x):
        return x + 1


    @perfflowaspect.aspect.critical_path(pointcut="after")
    def late(x):
        return x * 2


    @perfflowaspect.aspect.critical_path(pointcut="around_async")
    def job(m):
        return m


    @perfflowaspect.aspect.critical_path(pointcut="before_async", scope="req")
    def submit():
        pass


    @perfflowaspect.aspect.critical_path(pointcut="after_async", scope="req")
    def finish(m):
        return m


    class K:
        @perfflowaspect.aspect.critical_path()
        def meth(self, v):
            return v + 1

        @staticmethod
        @perfflowaspect.aspect.critical_path()
        def st():
            return 5


    @perfflowaspect.aspect.critical_path()
    def gen(n):
        for i in range(n):
            yield i


    @perfflowaspect.aspect.critical_path()
    async def coro(v):
        await asyncio.sleep(0)
        return v


    @perfflowaspect.aspect.critical_path()
    def boom():
        raise KeyError("k")


    def main():
        print("Inside main")
        for i in range(4):
            assert foo("hello") == 1
        assert early(1) == 2 and late(3) == 6 and job("m") == "m"
        submit()
        assert finish("c") == "c"
        assert K().meth(1) == 2 and K.st() == 5
        assert list(gen(3)) == [0, 1, 2]
        assert asyncio.run(coro(7)) == 7
        try:
            boom()
        except KeyError as e:
            assert e.args == ("k",)
        else:
            raise AssertionError("no exception")
        print("ok")
        return 0


    if __name__ == "__main__":
        main()
"""
SMOKE_OUT = "Inside main\n" + "foo\nbar\nbas\n" * 4 + "ok\n"


def test_smoke_verbose_array(tmp_path):
    r = Run(tmp_path, SMOKE, options="")
    assert r.out == SMOKE_OUT
    pfws = r.pfws()
    assert len(pfws) == 1
    name = os.path.basename(pfws[0])
    assert name.startswith(f"perfflow.array.{os.uname().nodename}.") and name.endswith(".pfw")
    pid = int(name.split(".")[-2])
    evs = load_pfw(pfws[0])
    check_pairs(evs)
    assert {e["pid"] for e in evs} == {pid}
    by = collections.Counter((e["name"], e["ph"]) for e in evs)
    for f in ("foo", "bar", "bas"):
        assert by[(f, "B")] == 4 and by[(f, "E")] == 4
    assert by[("early", "i")] == 1 and by[("late", "i")] == 1
    assert by[("K.meth", "B")] == 1 and by[("K.st", "B")] == 1
    assert by[("gen", "B")] == 4  # one slice per resumption: 3 values, then the end
    assert by[("coro", "B")] >= 2
    assert by[("boom", "B")] == 1 and by[("exception", "i")] == 1
    assert {e["cat"] for e in evs if e["name"] == "foo"} == {"__main__"}
    asy = [e for e in evs if e["ph"] in ("b", "e")]
    assert sorted((e["name"], e["ph"], e["id"], e["scope"]) for e in asy) == [
        ("job", "b", pid, None), ("job", "e", pid, None),
        ("req", "b", pid, "req"), ("req", "e", pid, "req")]
    assert all(e["ts"] > 1e15 for e in evs)  # wall-clock microseconds, as PerfFlowAspect's

    sl, asl, exc = r.q(
        "select s.name, s.depth, p.name parent, s.dur from slice s join thread_track tt on tt.id = s.track_id "
        "left join slice p on p.id = s.parent_id order by s.ts",
        "select s.name, count(*) n from slice s where s.track_id not in (select id from thread_track) "
        "group by 1 order by 1",
        "select p.name parent from slice s join slice p on p.id = s.parent_id where s.name = 'exception'")
    rel = collections.Counter((x["name"], x["parent"]) for x in sl)
    assert rel[("foo", None)] == 4 and rel[("bar", "foo")] == 4 and rel[("bas", "bar")] == 4
    assert {x["dur"] for x in sl if x["name"] in ("early", "late")} == {0}
    assert asl == [{"name": "job", "n": 1}, {"name": "req", "n": 1}]
    assert exc == [{"parent": "boom"}]


def test_smoke_compact_object_named(tmp_path):
    r = Run(tmp_path, SMOKE, log_dir="logs",
            options="name=mycomponent:log-filename-include=name,instance-path,hostname,pid:"
                    "log-event=compact:log-format=object:log-dir=logs")
    assert r.out == SMOKE_OUT
    pfws = r.pfws()
    assert len(pfws) == 1
    parts = os.path.basename(pfws[0]).split(".")
    assert parts[:3] == ["perfflow", "object", "mycomponent"]
    assert parts[3].startswith("{") and parts[3].endswith("}") and len(parts[3]) == 10
    assert parts[-1] == "pfw" and parts[-2].isdigit()
    with open(pfws[0]) as f:
        head = f.read(80)
    assert head.startswith('{\n  "displayTimeUnit": "us"')
    evs = load_pfw(pfws[0])
    check_pairs(evs)
    phases = collections.Counter(e["ph"] for e in evs)
    assert phases["B"] == phases["E"] == 0 and phases["X"] >= 12 + 6
    assert collections.Counter(e["name"] for e in evs if e["ph"] == "X")["foo"] == 4
    procs, = r.q("select distinct p.name from slice s join thread_track tt on tt.id = s.track_id "
                 "join thread using(utid) join process p using(upid)")
    assert procs == [{"name": "mycomponent"}]


def test_log_enable_false(tmp_path):
    r = Run(tmp_path, """
        import perfflowaspect.aspect as aspect

        def plain(x):
            return x * 3

        traced = aspect.critical_path()(plain)
        assert traced is plain  # the function itself: nothing in between

        @aspect.critical_path(pointcut="after_async", scope="s")
        def f(a, *, b=2):
            return (a, b)

        @aspect.critical_path(pointcut="before")
        def g():
            yield 1

        assert f(1) == (1, 2) and f(1, b=5) == (1, 5) and list(g()) == [1]
        aspect.sync_event("before", "x", "y")
        aspect.sync_event("after", "x", "y")
        print("ok")
    """, options="log-enable=False")
    assert r.out == "ok\n"
    assert sorted(os.listdir(r.tmp)) == ["prog.py"]


def test_bad_options(tmp_path):
    r = Run(tmp_path, "import perfflowaspect.aspect\nprint('ran')\n", options="log-enable=maybe",
            check=False)
    assert r.proc.returncode == 1 and r.out == ""
    last = r.proc.stderr.strip().splitlines()[-1]
    assert last == ("ValueError: perfflowaspect: PERFFLOW_OPTIONS: bad value 'maybe' for "
                    "log-enable: expected True or False")
    r = Run(tmp_path, """
        import perfflowaspect.aspect as aspect
        @aspect.critical_path(pointcut="sideways")
        def f():
            return 4
        assert f() == 4
        print('ran')
    """, options="colour=red:log-dir", check=False)
    assert r.proc.returncode == 0 and r.out == "ran\n"
    err = r.proc.stderr.splitlines()
    assert len(err) == 3, err
    assert err[0].startswith("perfflowaspect: PERFFLOW_OPTIONS: unknown key 'colour' ignored; valid keys: name,")
    assert err[1] == "perfflowaspect: PERFFLOW_OPTIONS: ill-formed option 'log-dir' ignored (expected key=value)"
    assert err[2].startswith("perfflow error: unknown pointcut 'sideways'")


def test_cpu_mem_usage(tmp_path):
    r = Run(tmp_path, """
        import time
        import perfflowaspect.aspect as aspect

        @aspect.critical_path()
        def inner():
            return 1

        @aspect.critical_path()
        def spin():
            end = time.process_time_ns() + 20_000_000
            x = 0
            while time.process_time_ns() < end:  # 20 ms of CPU, nearly all of it user time
                for i in range(20000):
                    x += i
            return inner() + 1

        @aspect.critical_path()
        def fails():
            raise OSError("no")

        assert spin() == 2
        try:
            fails()
        except OSError as e:
            assert str(e) == "no"
        print("ok")
    """, options="cpu-mem-usage=True")
    assert r.out == "ok\n"
    args, nest, counters, exc = r.q(
        "select s.name, a.key, a.int_value v from slice s join args a using(arg_set_id) "
        "where a.key like 'debug.%' order by s.name, a.key",
        "select s.name, p.name parent from slice s left join slice p on p.id = s.parent_id "
        "where s.name in ('spin', 'inner', 'fails', 'exception') order by s.ts, s.depth",
        "select distinct t.name from counter_track t join counter c on c.track_id = t.id order by 1",
        "select count(*) n from slice where name = 'exception'")
    a = {(x["name"], x["key"]): x["v"] for x in args}
    assert a[("spin", "debug.cpu_user_ns")] >= 10_000_000
    assert a[("spin", "debug.cpu_sys_ns")] >= 0
    assert a[("spin", "debug.mem_rss_bytes")] > 1 << 20
    assert ("fails", "debug.cpu_user_ns") in a
    assert nest == [{"name": "spin", "parent": None}, {"name": "inner", "parent": "spin"},
                    {"name": "fails", "parent": None}, {"name": "exception", "parent": "fails"}]
    assert {"cpu.user_ns", "cpu.sys_ns", "mem.rss_bytes"} <= {x["name"] for x in counters}
    evs = load_pfw(r.pfws()[0])
    check_pairs(evs)
    spin = [e for e in evs if e["name"] == "spin" and e["ph"] == "B"]
    assert spin[0]["args"]["cpu.user_ns"] >= 10_000_000
    assert {e["name"] for e in evs if e["ph"] == "C"} >= {"cpu.user_ns", "mem.rss_bytes"}


MP = """
    import multiprocessing
    import os
    import subprocess
    import sys
    import perfflowaspect.aspect


    @perfflowaspect.aspect.critical_path()
    def bar(message):
        return len(message)


    @perfflowaspect.aspect.critical_path()
    def prcs_fn(name):
        return bar("Hello from Process ID: " + str(name))


    CHILD = '''
    import perfflowaspect.aspect
    @perfflowaspect.aspect.critical_path()
    def child_fn():
        return 3
    print(child_fn())
    '''


    def main(method):
        ctx = multiprocessing.get_context(method)
        procs = [ctx.Process(target=prcs_fn, args=(i,)) for i in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
            assert p.exitcode == 0
        env = dict(os.environ, PERFFLOW_OPTIONS="name=child")
        c = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True)
        assert c.stdout == "3\\n" and c.stderr == "", c
        print(os.getpid(), *[p.pid for p in procs])


    if __name__ == "__main__":
        main("METHOD")
"""


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_multiprocess(tmp_path, method):
    r = Run(tmp_path, MP.replace("METHOD", method), options="name=top")
    top, *kids = map(int, r.out.split())
    rows, = r.q("select p.pid, p.name pname, s.name, pa.name parent from slice s "
                "join thread_track tt on tt.id = s.track_id join thread using(utid) "
                "join process p using(upid) left join slice pa on pa.id = s.parent_id order by p.pid, s.ts")
    byp = collections.defaultdict(list)
    for x in rows:
        byp[(x["pid"], x["pname"])].append((x["name"], x["parent"]))
    for k in kids:
        assert byp.pop((k, "top")) == [("prcs_fn", None), ("bar", "prcs_fn")]
    (cpid, cname), = byp  # the subprocess, under its own component name
    assert cname == "child" and byp[(cpid, cname)] == [("child_fn", None)]
    assert top not in (cpid, *kids)
    pfws = {int(os.path.basename(p).split(".")[-2]): load_pfw(p) for p in r.pfws()}
    assert sorted(pfws) == sorted(kids + [cpid])  # the top process recorded nothing
    for k in kids:
        check_pairs(pfws[k])
        assert [(e["name"], e["ph"]) for e in pfws[k]] == [
            ("prcs_fn", "B"), ("bar", "B"), ("bar", "E"), ("prcs_fn", "E")]
