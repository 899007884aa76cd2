"""Python call tracing (weft._calltrace, `weft record --python`, `python3 -m weft`): programs
under tests/python/ whose calls are known exactly, checked in the .pftrace with Perfetto's
trace_processor - slice counts, depth, parents, the file/line and exception arguments - and
the full stack with a C extension built with -finstrument-functions."""
import json
import os
import re
import sys

from weftlib import BUILD, SRC, WEFT, TraceTest, main, run, sanitizer

PY = "/usr/bin/python3"
PROGS = os.path.join(SRC, "tests", "python")
EXT = os.path.join(BUILD, "tests", "python")  # nativeext
PYDIR = os.path.join(BUILD, "python")


def prog(name):
    return os.path.join(PROGS, name)


def line_of(name, pattern):
    with open(prog(name)) as f:
        for i, line in enumerate(f, 1):
            if re.match(pattern, line):
                return i
    raise AssertionError(f"{pattern} not in {name}")


CALLS_OUT = "fib 6765\nmisc 109\ngen [0, 1, 2, 3, 4]\nasync [0, 1, 2]\nexc 4\n"
# slice name -> (count, parent names allowed); calls and resumptions per tests/python/calls_prog.py,
# counted as sys.setprofile and cProfile count them: the call of a generator or coroutine function
# only makes the object and is not one; each resumption is (gen(5): 5 values and the one that ends
# it)
EXPECTED = {
    "fib": (21891, {"fib", "run_fib"}),
    "Klass.method": (7, {"run_misc.<locals>.<genexpr>"}),
    "Klass.static": (4, {"run_misc.<locals>.<genexpr>"}),
    "Klass.klass": (3, {"run_misc.<locals>.<listcomp>"}),
    "run_misc.<locals>.<genexpr>": (8 + 5, {"run_misc"}),
    "run_misc.<locals>.<listcomp>": (1, {"run_misc"}),
    "outer.<locals>.inner": (5, {"run_misc"}),
    "run_misc.<locals>.<lambda>": (3, {"run_misc"}),  # called by map (C)
    "gen": (6, {"run_gen"}),
    "leaf": (3 * 2, {"gathered", "Handle._run"}),
    "catch_at": (4, {"run_exc.<locals>.<genexpr>"}),
    "raiser": (1 + 2 + 3 + 4, {"catch_at", "raiser"}),
}
NEXT = sys.version_info >= (3, 12)  # the sys.monitoring hook; comprehensions inlined (PEP 709)
if NEXT:  # the list comprehension runs in run_misc's frame: no call of its own
    del EXPECTED["run_misc.<locals>.<listcomp>"]
    EXPECTED["Klass.klass"] = (3, {"run_misc"})
HOOK = "monitoring" if NEXT else "eval"


def close_runs_frame():
    """Does close() of a generator suspended at a yield outside any try run its frame, as a
    profile function sees it? On 3.11 it does (GeneratorExit is thrown in); from 3.12 on
    CPython just marks the generator finished, and no tracer sees anything run."""
    def g():
        yield

    seen = []
    x = g()
    next(x)
    sys.setprofile(lambda frame, event, arg: seen.append(event) if frame.f_code is g.__code__ else None)
    try:
        x.close()
    finally:
        sys.setprofile(None)
    return "call" in seen


class PythonCallsTest(TraceTest):
    def setUp(self):
        super().setUp()
        if "thread" in sanitizer():  # libtsan cannot be loaded into an uninstrumented python3
            self.skipTest("the TSan build's extension cannot be loaded by an uninstrumented python3")

    def record(self, script, *args, opts=(), env=None, check=True):
        out = os.path.join(self.tmp, "trace.data")
        p = run([WEFT, "record", "-q", "-o", out, *opts, "--", PY, prog(script), *map(str, args)],
                env=env, cwd=self.tmp, check=check)
        return os.path.join(out, "trace.pftrace"), p

    def rows(self, pftrace, *queries):
        return self.tp(pftrace, *queries)

    def counts(self, pf, names):
        q = ",".join("'" + n + "'" for n in names)
        rows, = self.tp(pf, f"select name, count(*) c from slice where name in ({q}) group by name")
        return {r["name"]: r["c"] for r in rows}

    def check_calls(self, pf, c_parents=()):
        """c_parents: C functions (c-calls mode) that may stand between a function and its
        Python caller."""
        expected = EXPECTED
        names = ",".join("'" + n + "'" for n in EXPECTED)
        counts, parents, fib, exc, unbalanced, loc = self.tp(
            pf,
            f"select name, count(*) c from slice where name in ({names}) group by name",
            f"select s.name, p.name parent, count(*) c from slice s left join slice p on s.parent_id = p.id "
            f"where s.name in ({names}) group by s.name, p.name",
            "select min(depth) lo, max(depth) hi, sum(category = 'python') py from slice where name = 'fib'",
            f"select name, sum(coalesce(extract_arg(arg_set_id, 'debug.exception'), 0)) e from slice "
            f"where name in ({names}) group by name",
            "select count(*) n from slice where extract_arg(arg_set_id, 'debug.weft_unterminated') "
            "or extract_arg(arg_set_id, 'debug.weft_unwound')",
            "select extract_arg(arg_set_id, 'debug.file') file, extract_arg(arg_set_id, 'debug.line') line "
            "from slice where name = 'fib' limit 1")
        self.assertEqual({r["name"]: r["c"] for r in counts}, {n: c for n, (c, _) in expected.items()})
        for r in parents:
            self.assertIn(r["parent"], EXPECTED[r["name"]][1] | set(c_parents), r)
        self.assertEqual([r["c"] for r in parents if r["name"] == "fib" and r["parent"] == "run_fib"], [1])
        # fib(20) calls fib(19) ... fib(1): 20 frames, the deepest 19 below the first
        self.assertEqual(fib[0]["hi"] - fib[0]["lo"], 19)
        self.assertEqual(fib[0]["py"], 21891)
        # raiser(0) raises, every raiser above it is left by the exception; catch_at catches it
        exc = {r["name"]: r["e"] for r in exc}
        self.assertEqual(exc["raiser"], 10)
        self.assertEqual({n: e for n, e in exc.items() if n != "raiser" and e}, {})
        self.assertEqual(unbalanced[0]["n"], 0)
        self.assertTrue(loc[0]["file"].endswith("tests/python/calls_prog.py"), loc)
        self.assertEqual(loc[0]["line"], line_of("calls_prog.py", r"def fib\("))

    def test_record_python_calls(self):
        pf, p = self.record("calls_prog.py", opts=["--python"])
        self.assertEqual(p.stdout, CALLS_OUT)
        self.check_calls(pf)
        self.tp_no_errors(pf)

    def test_leaf_calls(self):
        """A call with nothing recorded inside it is written as one LEAF record (format 1.12)
        and read as its slice: its end where the callee returned (a 3 ms sleep, a C call, is
        inside it), the next call after it, nested under its caller; an exception's END keeps
        its flag; a leaf among recorded children is not one."""
        script = os.path.join(self.tmp, "leaves.py")
        with open(script, "w") as f:
            f.write("import time\n"
                    "def leaf(n):\n    time.sleep(0.003) if n == 3 else None\n    return n\n"
                    "def boom():\n    raise ValueError\n"
                    "def parent():\n    s = 0\n    for i in range(5):\n        s += leaf(i)\n"
                    "    try:\n        boom()\n    except ValueError:\n        pass\n    return s\n"
                    "print(parent())\n")
        out = os.path.join(self.tmp, "l.data")
        p = run([WEFT, "record", "-q", "-o", out, "--python", "--", PY, script], cwd=self.tmp)
        self.assertEqual(p.stdout, "10\n")
        pf = os.path.join(out, "trace.pftrace")
        leaves, boom, parent = self.tp(
            pf,
            "select s.ts, s.dur, p.name parent, s.depth - p.depth d from slice s join slice p on s.parent_id = p.id "
            "where s.name = 'leaf' order by s.ts",
            "select s.dur, extract_arg(s.arg_set_id, 'debug.exception') e, p.name parent from slice s "
            "join slice p on s.parent_id = p.id where s.name = 'boom'",
            "select ts, dur from slice where name = 'parent'")
        self.assertEqual([(r["parent"], r["d"]) for r in leaves], [("parent", 1)] * 5)
        self.assertGreaterEqual(leaves[3]["dur"], 3000000)  # the sleep is inside the leaf's slice
        for a, b in zip(leaves, leaves[1:]):
            self.assertLessEqual(a["ts"] + a["dur"], b["ts"])  # each ends before the next begins
        self.assertEqual((boom[0]["e"], boom[0]["parent"]), (1, "parent"))
        self.assertLessEqual(leaves[-1]["ts"] + leaves[-1]["dur"], parent[0]["ts"] + parent[0]["dur"])
        # a loop of 20000 leaf calls: 24 bytes a call as the thread writes them (a LEAF), not 32
        loop = os.path.join(self.tmp, "loop.py")
        with open(loop, "w") as f:
            f.write("def leaf():\n    pass\nfor _ in range(20000):\n    leaf()\n")
        out = os.path.join(self.tmp, "loop.data")
        run([WEFT, "record", "-q", "--no-convert", "-o", out, "--python", "--", PY, loop], cwd=self.tmp)
        info = run([WEFT, "info", out]).stdout
        events, raw = (int(re.search(rf"^{k}:\s+(\d+)", info, re.M).group(1)) for k in ("events", "bytes raw"))
        self.assertGreaterEqual(events, 40000)
        self.assertLess(raw / events, 13.0, info)  # 12 for leaves (16 for BEGIN + END)

    def test_python_m_weft(self):
        """python3 -m weft SCRIPT: the same calls, weft's runtime started by the module."""
        out = os.path.join(self.tmp, "m.data")
        p = run([PY, "-m", "weft", prog("calls_prog.py")], cwd=self.tmp,
                env={"PYTHONPATH": PYDIR, "WEFT_OPTIONS": f"output={out}"})
        self.assertEqual(p.stdout, CALLS_OUT)
        pf, c = self.convert(out, "m.pftrace")
        self.check_calls(pf)
        # the frames running when the hook was installed (runpy's, weft.__main__'s) end with no
        # END in the trace: the hook wrote no BEGIN for them
        self.assertNotIn("without a begin", c.stderr)
        self.assertRegex(c.stderr, r"wrote .*: \d+ events")

    def test_profile_hook(self):
        """The fallback hook (a C profile function; the only one before 3.11) records the same
        calls."""
        out = os.path.join(self.tmp, "p.data")
        code = ("import runpy, sys; from weft import _calltrace; _calltrace.start('profile'); "
                f"sys.argv = [{prog('calls_prog.py')!r}]; runpy.run_path(sys.argv[0], run_name='__main__')")
        p = run([PY, "-c", code], cwd=self.tmp, env={"PYTHONPATH": PYDIR, "WEFT_OPTIONS": f"output={out}"})
        self.assertEqual(p.stdout, CALLS_OUT)
        pf, _ = self.convert(out, "p.pftrace")
        self.check_calls(pf)

    def test_deep_recursion(self):
        """A recursion 20,000 calls deep (the recursion limit raised) runs under --python as
        it runs untraced, in the main thread and in a thread with a 256 KiB stack: CPython
        3.11 makes such calls without C recursion, the frame-evaluation hook with it, on
        stack segments of its own where the thread's stack runs out. Every call is a slice,
        the deepest 20,000 below the first (counted in the B/E events of the JSON output:
        trace_processor puts slices deeper than 512 at depth 0)."""
        n = 20000
        plain = run([PY, prog("deep_prog.py"), str(n)])
        for mode in ("--python", "--python=c-calls"):
            pf, p = self.record("deep_prog.py", n, opts=[mode], check=False)
            self.assertEqual((p.returncode, p.stdout), (0, plain.stdout), (mode, p.stderr))
            rows, = self.tp(pf, "select name, count(*) c from slice where name in ('down', 'thread_down', "
                                "'nested') group by name")
            # nested: each level resumed by next() and once more when it is closed (the innermost,
            # at a plain yield, not on 3.12+: see close_runs_frame)
            closes = n // 4 + 1 if close_runs_frame() else n // 4
            self.assertEqual({r["name"]: r["c"] for r in rows},
                             {"down": n + 1, "thread_down": n + 1, "nested": n // 4 + 1 + closes}, mode)
            js, _ = self.convert(os.path.dirname(pf), "deep.json")
            stacks, depth, deepest = {}, {}, {}
            for e in self.load_json(js)["traceEvents"]:
                if e["ph"] == "B":
                    stacks.setdefault(e["tid"], []).append(e["name"])
                    key = (e["tid"], e["name"])
                    depth[key] = depth.get(key, 0) + 1
                    deepest[e["name"]] = max(deepest.get(e["name"], 0), depth[key])
                elif e["ph"] == "E":
                    depth[(e["tid"], stacks[e["tid"]].pop())] -= 1
            self.assertEqual({k: deepest[k] for k in ("down", "thread_down", "nested")},
                             {"down": n + 1, "thread_down": n + 1, "nested": n // 4 + 1}, mode)
            self.assertEqual([s for s in stacks.values() if s], [], mode)

    def test_generators_count_as_profilers_do(self):
        """A generator of 10 yields is 11 slices (10 resumptions and the one that ends it), as
        sys.setprofile and cProfile count it; coroutines under asyncio and an async generator
        as many as the same code's profile function counts, untraced (the call that only
        makes the object is no slice), with either hook."""
        n = 7
        plain = run([PY, prog("gens_prog.py"), str(n), "profile"])
        out, counted = plain.stdout.splitlines()
        want = json.loads(counted)
        self.assertEqual((want["ten"], want["waits"]), (11, n + 1))
        for mode in ("--python", "--python=c-calls"):
            pf, p = self.record("gens_prog.py", n, opts=[mode])
            self.assertEqual(p.stdout, out + "\n")
            rows, = self.tp(pf, "select name, count(*) c from slice where category = 'python' and "
                                "extract_arg(arg_set_id, 'debug.file') like '%/gens_prog.py' group by name")
            got = {r["name"]: r["c"] for r in rows}
            got.pop("<module>", None)  # the script itself: the profile function starts inside it
            self.assertEqual(got, want, mode)

    def test_threads_started_before_tracing(self):
        """Two threads run before the hook is installed, two start after: every step() call
        after the start is recorded on its own thread; the early threads' frames that were
        running have no slice, so their step() calls are roots."""
        n = 300
        pf, p = self.record("threads_prog.py", n)  # no --python: the program starts the hook
        self.assertEqual(p.stdout, f"threads {4 * n}\n")
        per_thread, = self.tp(
            pf, "select t.tid, t.name, count(*) c, min(s.depth) d from slice s join thread_track tt on "
                "s.track_id = tt.id join thread t using (utid) where s.name = 'step' group by t.utid")
        self.assertEqual(sorted(r["c"] for r in per_thread), [n] * 4)
        self.assertEqual(sorted(r["d"] > 0 for r in per_thread), [False, False, True, True])
        # each stream named after its threading.Thread (the early ones too: named at their next call)
        self.assertEqual(sorted(r["name"] for r in per_thread), ["early0", "early1", "late0", "late1"])

    def test_native_extension_nests(self):
        """Python -> C (-finstrument-functions) -> Python on one thread's stack."""
        pf, p = self.record("native_prog.py", opts=["--python"], env={"PYTHONPATH": EXT})
        self.assertEqual(p.stdout, "native 40\n")
        rows, threads = self.tp(
            pf,
            "select s.name, p.name parent, count(*) c from slice s left join slice p on s.parent_id = p.id "
            "where s.name in ('use_native', 'nx_py_sum_squares', 'nx_sum_squares', 'nx_square', 'nx_py_call', "
            "'nx_call_back', 'callback', 'leafpy') group by s.name, p.name",
            "select count(distinct track_id) n from slice where name in ('use_native', 'nx_square', 'leafpy')")
        got = {(r["name"], r["parent"]): r["c"] for r in rows}
        self.assertEqual(got, {
            ("use_native", "<module>"): 1,
            ("nx_py_sum_squares", "use_native"): 1,
            ("nx_sum_squares", "nx_py_sum_squares"): 1,
            ("nx_square", "nx_sum_squares"): 5,
            ("nx_py_call", "use_native"): 1,
            ("nx_call_back", "nx_py_call"): 1,
            ("nx_square", "nx_call_back"): 1,
            ("callback", "nx_call_back"): 1,
            ("leafpy", "callback"): 1,
        })
        self.assertEqual(threads[0]["n"], 1)

    def test_exit_status_and_output(self):
        plain = run([PY, prog("exit_prog.py")], check=False)
        pf, p = self.record("exit_prog.py", opts=["--python"], check=False)
        self.assertEqual((p.returncode, p.stdout), (3, "hello from python\n"))
        self.assertEqual((plain.returncode, plain.stdout), (p.returncode, p.stdout))
        self.assertEqual(self.counts(pf, ["say"]), {"say": 1})

    def test_fork_from_a_thread(self):
        """A thread other than main forks: the child's only thread is that one, and when it
        returns (here through SystemExit, which ends a thread) the child ends, status 0, as
        untraced; weft's threads in the child must not keep it alive (before: the parent
        waited for ever on children whose main thread was a zombie)"""
        script = os.path.join(self.tmp, "thread_fork.py")
        with open(script, "w") as f:
            f.write("import os, sys, threading\n"
                    "def in_child():\n    return 1\n"
                    "def forker(out):\n"
                    "    pids = []\n"
                    "    for i in range(3):\n"
                    "        pid = os.fork()\n"
                    "        if pid == 0:\n"
                    "            in_child()\n"
                    "            sys.exit(5)\n"
                    "        pids.append(pid)\n"
                    "    out.extend(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids)\n"
                    "out = []\n"
                    "t = threading.Thread(target=forker, args=(out,))\nt.start()\nt.join()\nprint(out)\n")
        plain = run([PY, script], timeout=60)
        self.assertEqual(plain.stdout, "[0, 0, 0]\n")
        out = os.path.join(self.tmp, "tf.data")
        p = run([WEFT, "record", "-q", "-o", out, "--python", "--", PY, script], cwd=self.tmp, timeout=60)
        self.assertEqual(p.stdout, plain.stdout)
        pf = os.path.join(out, "trace.pftrace")
        self.assertEqual(self.counts(pf, ["in_child", "forker"]), {"in_child": 3, "forker": 1})
        self.assertNotIn("warnings:", run([WEFT, "info", out]).stdout)

    def test_filters(self):
        pf, _ = self.record("calls_prog.py", opts=["--python", "-F", "fib", "-F", "/^Klass\\./"])
        names, = self.tp(pf, "select name, count(*) c from slice group by name")
        self.assertEqual({r["name"]: r["c"] for r in names},
                         {"fib": 21891, "Klass.method": 7, "Klass.static": 4, "Klass.klass": 3})
        pf, _ = self.record("calls_prog.py", opts=["--python", "-N", "fib", "-N", "raiser"])
        got = self.counts(pf, ["fib", "raiser", "run_fib", "catch_at"])
        self.assertEqual(got, {"run_fib": 1, "catch_at": 4})

    def test_depth_and_time_filters_say_they_do_not_apply(self):
        # -D and -t filter native function events only: every Python call is still recorded,
        # and record says so (before, it said nothing, and weft info listed func_depth=3)
        for opt, name in ((("-D", "3"), "-D/--depth"), (("-t", "50us"), "-t/--time-filter")):
            with self.subTest(opt=opt):
                pf, p = self.record("calls_prog.py", opts=["--python", *opt])
                self.assertEqual(p.stderr, f"weft: record: {name} applies to native function events "
                                           "(-finstrument-functions), not to Python calls: --python records "
                                           "every call\n")
                self.assertEqual(self.counts(pf, ["fib"]), {"fib": 21891})

    def test_import_weft_and_sitecustomize_chain(self):
        """weft record puts the weft package on PYTHONPATH (with or without --python); with
        --python a sitecustomize of the user's still runs after weft's."""
        user = os.path.join(self.tmp, "user")
        os.mkdir(user)
        with open(os.path.join(user, "sitecustomize.py"), "w") as f:
            f.write("import sys\nsys.stderr.write('user sitecustomize ran\\n')\n")
        out = os.path.join(self.tmp, "s.data")
        code = "import weft, weft._calltrace as c; print(weft.__name__, c.active())"
        p = run([WEFT, "record", "-q", "-o", out, "--no-convert", "--", PY, "-c", code], env={"PYTHONPATH": user})
        self.assertEqual(p.stdout, "weft None\n")
        self.assertIn("user sitecustomize ran", p.stderr)
        p = run([WEFT, "record", "-q", "-o", out, "--no-convert", "--python", "--", PY, "-c", code],
                env={"PYTHONPATH": user})
        self.assertEqual(p.stdout, f"weft {HOOK}\n")
        self.assertIn("user sitecustomize ran", p.stderr)

    def test_filter_changed_inside_a_call(self):
        """A call recorded when it began keeps its end when a filter changed inside it leaves it
        out (the hook decides at the begin); the calls after the change follow the new
        filter."""
        pf, p = self.record("refilter_prog.py", opts=["--python"])
        self.assertEqual(p.stdout, "refilter done\n")
        rows, unbalanced = self.tp(
            pf, "select s.name, p.name parent, count(*) c from slice s left join slice p on s.parent_id = p.id "
                "where s.name in ('outer', 'inner') group by s.name, p.name",
            "select count(*) n from slice where extract_arg(arg_set_id, 'debug.weft_unterminated') "
            "or extract_arg(arg_set_id, 'debug.weft_unwound')")
        self.assertEqual({(r["name"], r["parent"]): r["c"] for r in rows},
                         {("outer", "<module>"): 1, ("inner", "outer"): 2, ("inner", "<module>"): 2})
        self.assertEqual(unbalanced[0]["n"], 0)

    def test_json_args(self):
        """The JSON converter shows file/line on a Python slice and exception on one that
        raised."""
        pf, _ = self.record("calls_prog.py", opts=["--python", "-F", "raiser", "-F", "fib"])
        js, _ = self.convert(os.path.dirname(pf), "t.json")
        ev = [e for e in self.load_json(js)["traceEvents"] if e.get("ph") in ("B", "E", "X")]
        fib = next(e for e in ev if e.get("name") == "fib")
        self.assertEqual(fib["args"]["line"], line_of("calls_prog.py", r"def fib\("))
        self.assertTrue(fib["args"]["file"].endswith("calls_prog.py"))
        self.assertEqual(sum(1 for e in ev if e.get("args", {}).get("exception") is True), 10)

    def test_without_the_python_module(self):
        """A weft built without its Python module (make demo used to build none): --python
        fails saying so and what builds it, before running anything."""
        import shutil
        bare = os.path.join(self.tmp, "bare")
        os.mkdir(bare)
        for f in ("weft", "libweft-preload.so"):
            shutil.copy2(os.path.join(BUILD, f), bare)
        p = run([os.path.join(bare, "weft"), "record", "-o", os.path.join(self.tmp, "b.data"), "--python", "--",
                 PY, "-c", "print('ran')"], check=False)
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertEqual(p.stderr, f"weft: record: --python: this weft was built without its Python module (no "
                                   f"weft package in {bare}/python, none installed): install python3-dev, then "
                                   f"run `make build` (or `make demo`, `make install`)\n")

    def test_bad_mode(self):
        p = run([WEFT, "record", "--python=c-calls,bogus", "--", PY, "-c", "pass"], check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("bad --python mode 'c-calls,bogus'", p.stderr)

    def check_c_calls(self, pf, n, m, k):
        """ccalls_prog.py's C calls: per thread (main and "late", started after tracing
        began), exactly the calls each function makes, nested under it, with the failing
        math.sqrt(-1) ended by its exception."""
        rows, exc, unbalanced, cat = self.tp(
            pf,
            "select t.name thread, s.name, p.name parent, count(*) c from slice s join slice p on "
            "s.parent_id = p.id join thread_track tt on s.track_id = tt.id join thread t using (utid) "
            "where p.name in ('use_len', 'use_append', 'use_sqrt', 'raises') group by t.name, s.name, p.name",
            "select p.name parent, coalesce(extract_arg(s.arg_set_id, 'debug.exception'), 0) e, count(*) c "
            "from slice s join slice p on s.parent_id = p.id where s.name = 'math.sqrt' group by p.name, e",
            "select count(*) n from slice where extract_arg(arg_set_id, 'debug.weft_unterminated') "
            "or extract_arg(arg_set_id, 'debug.weft_unwound')",
            "select distinct category from slice where name in ('len', 'list.append', 'math.sqrt')")
        got = {(r["thread"], r["name"], r["parent"]): r["c"] for r in rows}
        want = {}
        for th in (os.path.basename(PY), "late"):
            want.update({(th, "len", "use_len"): n, (th, "list.append", "use_append"): m,
                         (th, "len", "use_append"): 1, (th, "math.sqrt", "use_sqrt"): k,
                         (th, "math.sqrt", "raises"): 1})
        self.assertEqual(got, want)
        self.assertEqual({(r["parent"], r["e"]): r["c"] for r in exc},
                         {("use_sqrt", 0): 2 * k, ("raises", 1): 2})
        self.assertEqual(unbalanced[0]["n"], 0)
        self.assertEqual([r["category"] for r in cat], ["python-c"])

    def test_c_calls(self):
        n, m, k = 37, 23, 11
        plain = run([PY, prog("ccalls_prog.py"), str(n), str(m), str(k)])
        pf, p = self.record("ccalls_prog.py", n, m, k, opts=["--python=c-calls"])
        self.assertEqual(p.stdout, plain.stdout)
        self.assertEqual(p.stdout, f"ccalls True ({2 * n}, {m}, {round(sum(i ** 0.5 for i in range(k)), 3)}, 1)\n")
        self.check_c_calls(pf, n, m, k)
        # the Python calls are still all there, the same as with the frame-evaluation hook
        pf, p = self.record("calls_prog.py", opts=["--python=calls,c-calls"])
        self.assertEqual(p.stdout, CALLS_OUT)
        self.check_calls(pf, c_parents=("sum", "Context.run"))
        self.tp_no_errors(pf)

    def test_program_sets_its_own_profile_function(self):
        """--python=c-calls and a program that sets profile functions of its own (sys.setprofile
        in two threads, cProfile): weft's C-call recording goes on in every thread, the
        program's profilers see what they see untraced, and the end says it in one line (and
        weft info as a note). With the profile hook alone the program's function replaces
        weft's: said too."""
        n = 50
        plain = run([PY, prog("setprofile_prog.py"), str(n)])
        self.assertEqual(plain.stdout, f"setprofile {2 * n} {n + 1} True None\n")
        pf, p = self.record("setprofile_prog.py", n, opts=["--python=c-calls"])
        self.assertEqual(p.stdout, plain.stdout)
        rows, = self.tp(pf, "select t.name thread, count(*) c from slice s join slice p on s.parent_id = p.id "
                            "join thread_track tt on s.track_id = tt.id join thread t using (utid) "
                            "where s.name = 'len' and p.name = 'use_len' group by t.name")
        self.assertEqual({r["thread"]: r["c"] for r in rows}, {os.path.basename(PY): 4 * n, "other": n})
        note = ("python: the program set its own profile function (sys.setprofile, cProfile) 3 times: weft "
                "called it from its own and went on recording C calls")
        info = run([WEFT, "info", os.path.dirname(pf)])
        if NEXT:  # sys.monitoring: weft's tool and the program's profilers are independent
            self.assertNotIn("profile function", p.stderr + info.stdout)
        else:
            self.assertRegex(p.stderr, r"(?m)^weft: record: \d+ python3: " + re.escape(note) + "$")
            self.assertIn(f"\n  note:     {note}\n", info.stdout)
        # the profile hook alone (start('profile'); 3.12+): the program's replaces weft's in
        # the main thread and in "other"; said, with the calls recorded until then
        out = os.path.join(self.tmp, "p.data")
        code = ("import runpy, sys; from weft import _record; _record.start('profile', c_calls=True); "
                f"sys.argv = [{prog('setprofile_prog.py')!r}, '{n}']; "
                "runpy.run_path(sys.argv[0], run_name='__main__')")
        p = run([PY, "-c", code], cwd=self.tmp, env={"PYTHONPATH": PYDIR, "WEFT_OPTIONS": f"output={out}"})
        self.assertEqual(p.stdout, plain.stdout)
        pf, _ = self.convert(out, "p.pftrace")
        rows, = self.tp(pf, "select count(*) c from slice s join slice p on s.parent_id = p.id "
                            "where s.name = 'len' and p.name = 'use_len'")
        self.assertEqual(rows[0]["c"], n)
        info = run([WEFT, "info", out])
        self.assertIn("\n  note:     python: the program set its own profile function (sys.setprofile, cProfile) in "
                      "2 threads: weft's, which it replaced there, recorded no more calls (the default hook on "
                      "CPython 3.11 keeps recording)\n", info.stdout)

    def test_c_calls_python_m_weft(self):
        n, m, k = 5, 6, 7
        out = os.path.join(self.tmp, "c.data")
        p = run([PY, "-m", "weft", "--c-calls", prog("ccalls_prog.py"), *map(str, (n, m, k))], cwd=self.tmp,
                env={"PYTHONPATH": PYDIR, "WEFT_OPTIONS": f"output={out}"})
        self.assertTrue(p.stdout.startswith("ccalls True"), p.stdout)
        pf, _ = self.convert(out, "c.pftrace")
        self.check_c_calls(pf, n, m, k)

    def test_c_calls_filtered(self):
        """-F selects C functions by name as it selects Python ones; a C call of a Python
        function that is filtered out is not recorded."""
        pf, _ = self.record("ccalls_prog.py", 3, 4, 5, opts=["--python=c-calls", "-F", "use_len", "-F", "len",
                                                             "-F", "math.sqrt"])
        names, = self.tp(pf, "select s.name, p.name parent, count(*) c from slice s left join slice p "
                             "on s.parent_id = p.id group by s.name, p.name")
        self.assertEqual({(r["name"], r["parent"]): r["c"] for r in names},
                         {("use_len", None): 2, ("len", "use_len"): 6})

    def test_tasks(self):
        """--python=tasks: one async slice per asyncio Task from its creation to its end,
        spanning the slices of the coroutine's steps on the thread's track; with c-calls too."""
        plain = run([PY, prog("tasks_prog.py")])
        for mode in ("tasks", "c-calls,tasks"):
            pf, p = self.record("tasks_prog.py", opts=[f"--python={mode}"])
            self.assertEqual(p.stdout, plain.stdout)
            self.assertEqual(p.stdout, "gather ['a', 'b', 'c']\ncaught KeyError('k')\nname named Task\n")
            tasks, steps, tracks = self.tp(
                pf,
                "select name, ts, ts + dur e, dur from slice where category = 'asyncio' and "
                "name in ('alpha', 'beta', 'gamma', 'delta', 'fails', 'main')",
                "select s.name, p.name parent, s.ts, s.ts + s.dur e from slice s left join slice p "
                "on s.parent_id = p.id where s.category = 'python' and s.name in ('alpha', 'beta', 'gamma')",
                "select count(distinct track_id) n from slice where category = 'asyncio'")
            by = {}
            for r in tasks:
                by.setdefault(r["name"], []).append(r)
            self.assertEqual({n: len(v) for n, v in by.items()},
                             {"alpha": 1, "beta": 1, "gamma": 1, "delta": 1, "fails": 1, "main": 1}, mode)
            self.assertGreaterEqual(tracks[0]["n"], 6)
            for name in ("alpha", "beta", "gamma"):
                made = [r for r in steps if r["name"] == name and r["parent"] == "main"]
                run_ = [r for r in steps if r["name"] == name and r["parent"] != "main"]
                self.assertEqual((len(made), len(run_)), (0, 3), (mode, name, steps))
                t, = by[name]
                self.assertLessEqual(t["ts"], min(r["ts"] for r in run_), (mode, name))
                self.assertGreaterEqual(t["e"], max(r["e"] for r in run_), (mode, name))
                # the main task spans the three
                self.assertLessEqual(by["main"][0]["ts"], t["ts"])
                self.assertGreaterEqual(by["main"][0]["e"], t["e"])
            self.tp_no_errors(pf)


if __name__ == "__main__":
    main()
