"""weft record on unmodified programs built with -finstrument-functions (at -O0 and -O2):
exact call counts, nesting, threads, fork + exec, dlopen, longjmp, C++ exceptions, crashes,
exit codes, filters and bad command lines. Every converted trace is checked with protoc and
trace_processor."""
import csv
import io
import json
import os
import re
import signal
import unittest
import weftlib
from weftlib import TraceTest, main, run, WEFT, BUILD

OPTS = ("O0", "O2")


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
class Record(TraceTest):
    def rec(self, prog, *args, flags=(), code=0, drops=r"0"):
        out = os.path.join(self.tmp, prog + ".data")
        p = run([WEFT, "record", "-o", out, *flags, "--", os.path.join(BUILD, prog), *args],
                check=False, cwd=BUILD)
        self.last_stdout = p.stdout
        self.assertEqual(p.returncode, code, p.stderr)
        self.assertRegex(p.stderr, r"weft: record: \d+ events, " + drops + r" dropped, \d+ process(es)?, [\d.]+ MB on disk \([\d.]+ MB trace.pftrace\); "
                                   r"open .*trace.pftrace in https://ui.perfetto.dev\n$")
        return out

    def report(self, data, *flags):
        p = run([WEFT, "report", "--format=json", *flags, data])
        return json.loads(p.stdout)

    def counts(self, data):
        return {r["function"]: r["calls"] for r in self.report(data)}

    def check_trace(self, data):
        pf = os.path.join(data, "trace.pftrace")
        self.protoc_decode(pf)
        self.tp_no_errors(pf)
        return pf

    def test_recursion(self):
        for o in OPTS:
            with self.subTest(opt=o):
                data = self.rec(f"ft_recurse_{o}")
                c = self.counts(data)
                self.assertEqual({k: c.get(k) for k in ("main", "fib", "is_even", "is_odd", "slow", "quick")},
                                 {"main": 1, "fib": 465, "is_even": 6, "is_odd": 5, "slow": 1, "quick": 10})
                rows = {r["function"]: r for r in self.report(data)}
                self.assertLessEqual(rows["fib"]["self_ns"], rows["fib"]["total_ns"])
                self.assertGreaterEqual(rows["slow"]["total_ns"], 20_000_000)
                pf = self.check_trace(data)
                depth, neg, parents = self.tp(
                    pf, "select max(depth) d from slice where name = 'fib'",
                    "select count(*) n from slice where dur < 0",
                    "select p.name parent, count(*) n from slice s join slice p on s.parent_id = p.id "
                    "where s.name = 'quick' group by 1")
                self.assertEqual(depth, [{"d": 12}])
                self.assertEqual(neg, [{"n": 0}])
                self.assertEqual(parents, [{"parent": "slow", "n": 10}])

    def test_deeper_than_the_ui_warned(self):
        """is_even(600) nests 602 levels (main, then is_even and is_odd by turns): the Perfetto
        UI nests 512, so weft record and weft convert say so in one line, and weft report still
        counts every call. fib(12)'s 13 levels (test_recursion) draw no warning."""
        warn = ("warning: slices nested more than 512 deep on 1 track: the Perfetto UI nests 512 levels "
                "and leaves the deeper slices unfinished, at depth 0; weft report and weft export --sqlite "
                "have every level\n")
        data = os.path.join(self.tmp, "deep.data")
        p = run([WEFT, "record", "-o", data, "--", os.path.join(BUILD, "ft_recurse_O0"), "600"], cwd=BUILD)
        self.assertIn("weft: record: " + warn, p.stderr)
        c = self.counts(data)
        self.assertEqual((c["is_even"], c["is_odd"]), (301, 300))
        p = run([WEFT, "convert", data, "-o", os.path.join(self.tmp, "deep.pftrace")])
        self.assertIn("weft: convert: " + warn, p.stderr)
        p = run([WEFT, "record", "-o", data, "--", os.path.join(BUILD, "ft_recurse_O0")], cwd=BUILD)
        self.assertNotIn("nested more than", p.stderr)

    def test_tree(self):
        data = self.rec("ft_recurse_O2")
        tree = self.report(data, "--tree")
        top = [(n["depth"], n["name"], n["calls"]) for n in tree if n["depth"] <= 1]
        self.assertIn((0, "main", 1), top)
        self.assertIn((1, "fib", 1), top)
        self.assertIn((1, "slow", 1), top)
        self.assertEqual(sum(n["calls"] for n in tree if n["name"] == "fib"), 465)
        rows = list(csv.DictReader(io.StringIO(run([WEFT, "report", "--tree", "-f", "csv", data]).stdout)))
        self.assertEqual([(int(r["depth"]), r["name"], int(r["calls"])) for r in rows],
                         [(n["depth"], n["name"], n["calls"]) for n in tree])
        text = run([WEFT, "report", "--tree", data]).stdout
        self.assertRegex(text, r"\n.*\s1\s+slow\n.*\s10\s+quick\n")

    def test_threads(self):
        for o in OPTS:
            with self.subTest(opt=o):
                data = self.rec(f"ft_threads_{o}")
                per = self.report(data, "--threads")
                by_tid = {}
                for r in per:
                    by_tid.setdefault(r["tid"], {})[r["function"]] = r["calls"]
                workers = [v for v in by_tid.values() if "work" in v]
                self.assertEqual(len(workers), 3)
                for w in workers:
                    self.assertEqual((w["worker"], w["work"], w["leaf"]), (1, 500, 1000))
                self.check_trace(data)

    def test_fork_exec(self):
        for o in OPTS:
            with self.subTest(opt=o):
                data = self.rec(f"ft_forkexec_{o}")
                c = self.counts(data)
                self.assertEqual((c["parent_part"], c["child_part"], c["exec_part"]), (1, 1, 1))
                info = run([WEFT, "info", data]).stdout
                self.assertIn("processes:  3", info)
                tree = info.split("process tree:\n")[1].split("\n\n")[0].splitlines()
                self.assertEqual(len(tree), 3, info)
                self.assertRegex(tree[0], r"^  \d+ ft_forkexec_%s: \S+ft_forkexec_%s$" % (o, o))
                self.assertRegex(tree[1], r"^    \d+ ft_forkexec_%s: " % o)
                self.assertRegex(tree[2], r"^    \d+ ft_forkexec_%s \(after exec #1\): \S+ exec$" % o)
                by_pid = {}
                for r in self.report(data, "--processes"):
                    self.assertNotIn("tid", r)
                    by_pid.setdefault(r["pid"], {})[r["function"]] = r["calls"]
                parts = sorted(tuple(v.get(f, 0) for f in ("parent_part", "child_part", "exec_part"))
                               for v in by_pid.values())
                self.assertEqual(parts, [(0, 1, 1), (1, 0, 0)])  # the exec'd image counts as its process
                pf = self.check_trace(data)
                procs, = self.tp(pf, "select count(distinct pid) n from process where pid != 0")
                self.assertEqual(procs, [{"n": 2}])

    def test_dlopen_plugin(self):
        for o in OPTS:
            with self.subTest(opt=o):
                data = self.rec(f"ft_plugin_{o}", os.path.join(BUILD, "libft_plugin.so"))
                c = self.counts(data)
                self.assertEqual((c.get("plugin_work"), c.get("plugin_helper")), (10, 10))
                self.check_trace(data)
                # MAPS records (type 43, compressed; 11 plain): the map at start whole, then after
                # the dlopen only the lines it added (the plugin's among them); no line written twice
                types = [t for name in os.listdir(data) if name.endswith(".wmeta")
                         for t, _ in weftlib.meta_records(os.path.join(data, name)) if t in (11, 43)]
                self.assertEqual(set(types), {43})
                maps = [m.splitlines() for name in os.listdir(data) if name.endswith(".wmeta")
                        for m in weftlib.maps_records(os.path.join(data, name))]
                self.assertGreaterEqual(len(maps), 2)
                self.assertTrue(any(f"ft_plugin_{o}" in line for line in maps[0]), maps[0])
                self.assertFalse(any("libft_plugin.so" in line for line in maps[0]))
                self.assertTrue(any("libft_plugin.so" in line for m in maps[1:] for line in m))
                every = [line for m in maps for line in m]
                self.assertEqual(len(every), len(set(every)))
                self.assertLess(sum(map(len, maps[1:])), len(maps[0]))
                self.damaged_maps(data, o)

    def damaged_maps(self, data, o):
        # the map's first block damaged: its lines and the stream's later ones are lost, said
        # in one warning; everything else converts (the functions stay, unnamed)
        bad = os.path.join(self.tmp, f"badmaps_{o}")
        os.makedirs(bad)
        for name in os.listdir(data):
            if not name.endswith((".wmeta", ".wevents")):
                continue
            with open(os.path.join(data, name), "rb") as f:
                b = bytearray(f.read())
            if name.endswith(".wmeta"):
                i = 32
                while i + 8 <= len(b):
                    t, n = int.from_bytes(b[i:i + 2], "little"), int.from_bytes(b[i + 4:i + 8], "little")
                    if t == 43:
                        for k in range(i + 8 + 24 + 8, i + 8 + n, 7):
                            b[k] ^= 0x5a
                        break
                    i += 8 + n
            with open(os.path.join(bad, name), "wb") as f:
                f.write(b)
        p = run([WEFT, "convert", bad, "-o", os.path.join(self.tmp, f"bad_{o}.pftrace")])
        self.assertEqual(p.stderr.count("a compressed MAPS record does not decode"), 1, p.stderr)
        self.assertIn("its lines and those after it in its stream are lost", p.stderr)
        names = [r["function"] for r in self.report(bad)]
        self.assertNotIn("plugin_work", names)
        self.assertNotIn("main", names)

    def test_longjmp(self):
        for o in OPTS:
            with self.subTest(opt=o):
                data = self.rec(f"ft_longjmp_{o}")
                pf = self.check_trace(data)
                parents, longest = self.tp(
                    pf, "select s.name, p.name parent, count(*) n from slice s join slice p on "
                        "s.parent_id = p.id group by 1, 2 order by 1",
                    "select s.name, max(s.dur) d from slice s group by 1")
                self.assertEqual([(r["name"], r["parent"], r["n"]) for r in parents],
                                 [("after", "outer", 2), ("inner", "middle", 2), ("middle", "outer", 2),
                                  ("outer", "main", 2)])
                d = {r["name"]: r["d"] for r in longest}
                self.assertLess(d["middle"], d["outer"])  # closed at the longjmp, not later

    def test_cxx_exceptions_and_demangling(self):
        for o in OPTS:
            with self.subTest(opt=o):
                data = self.rec(f"ft_except_{o}")
                c = self.counts(data)
                self.assertEqual((c["outer()"], c["middle()"], c["thrower()"]), (1, 1, 1))
                self.assertEqual(c["int ns::twice<int>(int)"], 1)
                self.assertEqual(c["ns::Widget::size() const"], 1)
                pf = self.check_trace(data)
                rows, = self.tp(pf, "select p.name parent from slice s join slice p on s.parent_id = p.id "
                                    "where s.name = 'thrower()'")
                self.assertEqual(rows, [{"parent": "middle()"}])

    def test_signal_handler(self):
        for o in OPTS:
            with self.subTest(opt=o):
                # handler events refused inside the runtime's slow path are counted as drops
                data = self.rec(f"ft_signal_{o}", drops=r"\d+")
                c = self.counts(data)
                _, rounds, alarms = map(int, self.last_stdout.split())
                exact = rounds * 8361  # calls of fib(18), once per round
                # the interrupted thread's own events are all kept; a handler's event that lands
                # inside another event is dropped and counted, not written over it
                self.assertEqual(c["fib"], exact)
                self.assertGreater(c["on_alarm"], 0)
                self.assertLessEqual(abs(c["tick"] - c["on_alarm"]), max(2, c["on_alarm"] // 4))
                m = re.search(r"recorded: \d+ events, (\d+) dropped", run([WEFT, "info", data]).stdout)
                # every alarm either left its on_alarm slice or was counted (its events dropped)
                self.assertGreaterEqual(c["on_alarm"] + int(m.group(1)), alarms)
                pf = self.check_trace(data)
                rows, = self.tp(pf, "select count(*) n from slice s join slice p on s.parent_id = p.id "
                                    "where s.name = 'tick' and p.name != 'on_alarm'")
                self.assertEqual(rows, [{"n": 0}])

    def test_crashes_and_exit_codes(self):
        data = self.rec("ft_crash_O2", "segv", code=-11)  # weft dies of the program's signal
        c = self.counts(data)
        self.assertEqual((c["a"], c["b"], c["c"]), (2, 2, 2))  # the crashing c() closed at the end
        self.check_trace(data)
        data = self.rec("ft_crash_O2", "exit", "7", code=7)
        self.assertEqual(self.counts(data)["a"], 1)
        data = self.rec("ft_crash_O2", "kill", "100000", flags=("--options", "chunk_size=8K"), code=-9)
        info = run([WEFT, "info", data]).stdout
        events = int(re.search(r"^events:\s+(\d+)", info, re.M).group(1))
        # everything handed to the writers survives: all but the last, partial 8K chunk
        self.assertGreaterEqual(events, 2 * 100000 - 512)
        self.assertIn("not finished", info)
        self.check_trace(data)

    def on_tty(self, out, mode, interrupt):
        """weft record of ft_crash on a new pseudo-terminal; once the program prints 'ready',
        interrupt(pid of weft, terminal fd). Returns (exit code, terminal output)."""
        sent, code, text = weftlib.on_tty([WEFT, "record", "-o", out, "--", os.path.join(BUILD, "ft_crash_O2"), mode],
                                          BUILD, b"ready", interrupt)
        self.assertTrue(sent, text)
        return code, text

    def test_ctrl_c(self):
        ctrl_c = lambda pid, fd: os.write(fd, b"\x03")  # the terminal signals the whole job
        kill_weft = lambda pid, fd: os.kill(pid, signal.SIGINT)  # only weft: it passes it on
        for how, interrupt in (("ctrl-c", ctrl_c), ("kill", kill_weft)):
            with self.subTest(how=how, program="handles SIGINT"):
                data = os.path.join(self.tmp, f"int-{how}.data")
                code, out = self.on_tty(data, "loop-handled", interrupt)
                self.assertEqual(code, 0, out)
                m = re.search(r"steps=(\d+) signals=(\d+)\n", out)  # the terminal echoes ^C before it
                self.assertTrue(m, out)
                self.assertEqual(m.group(2), "1", out)  # delivered once, not twice
                self.assertGreaterEqual(int(m.group(1)), 1000)
                self.assertRegex(out, r"weft: record: \d+ events, 0 dropped, 1 process, ")
                self.assertEqual(self.counts(data)["step"], int(m.group(1)))  # every call is there
                self.assertNotIn("not finished", run([WEFT, "info", data]).stdout)
                self.check_trace(data)
            with self.subTest(how=how, program="dies of SIGINT"):
                data = os.path.join(self.tmp, f"die-{how}.data")
                code, out = self.on_tty(data, "loop", interrupt)
                self.assertEqual(code, -signal.SIGINT, out)  # so a shell script stops too
                self.assertRegex(out, r"weft: record: \d+ events, 0 dropped, 1 process, .*trace.pftrace")
                c = self.counts(data)
                self.assertEqual(c["main"], 1)
                self.assertGreaterEqual(c["step"], 1000)
                self.assertNotIn("not finished", run([WEFT, "info", data]).stdout)  # finished in the handler
                pf = self.check_trace(data)
                rows, = self.tp(pf, "select count(*) n from slice where name = 'step' and (dur < 0 or depth != 1)")
                self.assertEqual(rows, [{"n": 0}])

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
    def test_long_cpp_name_whole(self):
        """A C++ function whose demangled name is 5,814 characters is named whole in the trace and
        in the report (the converter once cut every name at 1,023 bytes: a name not in the
        binary), as binutils' nm and c++filt spell it."""
        exe = os.path.join(BUILD, "longsym")
        syms = run(["nm", "-C", exe]).stdout
        want = [l.split(" ", 2)[2] for l in syms.splitlines() if " work<" in l]
        self.assertEqual(len(want), 1, want)
        want = want[0]
        self.assertEqual(len(want), 5814)
        data = os.path.join(self.tmp, "l.data")
        run([WEFT, "record", "-q", "-o", data, "--", exe])
        rows, = self.tp(os.path.join(data, "trace.pftrace"), "select name, count(*) n from slice group by name")
        self.assertEqual(sorted((r["name"], r["n"]) for r in rows), sorted([("main", 1), (want, 3)]))
        rep = run([WEFT, "report", data]).stdout
        short = want[want.index("work<"):want.rindex("(")]  # no return type, no parameters
        self.assertIn("  " + short + "\n", rep)
        rep = run([WEFT, "report", "--full-names", data]).stdout
        self.assertIn("  " + want + "\n", rep)

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
    def test_drops_say_what_keeps_them(self):
        """Events dropped because the writer did not keep up (3 M instants in some 70 ms through
        512 KiB of buffers): weft record and weft info say so, with the writer's share of the
        run and the options that keep them; the first of them, overflow=block, keeps them all."""
        prog = [os.path.join(BUILD, "flightsteps"), "steps", "30000", "100", "20000", "1"]
        data = os.path.join(self.tmp, "d.data")
        p = run([WEFT, "record", "-o", data, "--no-convert", "--options", "buffer_size=512K:chunk_size=64K", "--", *prog])
        m = re.search(r"weft: record: (\d+) flightsteps: (\d+) events dropped: the writer, busy \d+% of the run, did "
                      r"not keep up; kept by --options overflow=block \(the program waits\), a larger buffer_size "
                      r"\(bursts; now 512K\), compression=0 \(less work per event; larger files\), writers=2 \(where "
                      r"a core is free\)\n", p.stderr)
        if "0 dropped" in p.stderr and not m:
            self.skipTest("the writer kept up with 3 M events here: nothing dropped to explain")
        self.assertTrue(m, p.stderr)
        info = run([WEFT, "info", data]).stdout
        self.assertRegex(info, r"\n  recorded: \d+ events, %s dropped, .*\n  drops:    the writer, busy \d+%% of the "
                               r"run, did not keep up; kept by --options overflow=block" % m.group(2))
        p = run([WEFT, "record", "-o", data, "--no-convert", "--options",
                 "buffer_size=512K:chunk_size=64K:overflow=block", "--", *prog])
        self.assertRegex(p.stderr, r"weft: record: 3060004 events, 0 dropped, ")
        self.assertNotIn("drops:", run([WEFT, "info", data]).stdout)

    def test_nesting_kept_across_drops(self):
        """Three threads calling work() -> leaf() 200,000 times through 8 KiB of buffers: most
        events are dropped, but the begins and ends a drop leaves open or closes are kept
        (written after its DROPPED record), so every leaf is under work, every work directly
        under its thread's worker, and each worker whole. (Before: a lost exit left a work open
        around thousands of others, a lost entry's exit closed the wrong level: 800,000 works
        nested in work, two of the three workers gone.)"""
        for o in OPTS:
            with self.subTest(opt=o):
                data = os.path.join(self.tmp, f"drops_{o}.data")
                p = run([WEFT, "record", "-o", data, "--options", "buffer_size=8K:chunk_size=4K", "--",
                         os.path.join(BUILD, f"ft_threads_{o}"), "200000"], cwd=BUILD)
                dropped = int(re.search(r"(\d+) dropped", p.stderr).group(1))
                if not dropped:
                    self.skipTest("the writer kept up through 8 KiB of buffers: nothing dropped")
                pf = self.check_trace(data)
                (row,), = self.tp(
                    pf,
                    "select (select count(*) from slice s join slice p on s.parent_id = p.id "
                    "        where s.name = 'leaf' and p.name != 'work') as leaf_elsewhere, "
                    "(select count(*) from slice s left join slice p on s.parent_id = p.id "
                    "        where s.name = 'work' and (p.name is null or p.name != 'worker')) as work_elsewhere, "
                    "(select count(*) from slice where name = 'work' and depth != 1) as work_deep, "
                    "(select count(*) from slice where name = 'worker' and depth = 0 and dur > 0) as workers, "
                    "(select count(*) from slice where name = 'work') as works")
                self.assertEqual((row["leaf_elsewhere"], row["work_elsewhere"], row["work_deep"], row["workers"]),
                                 (0, 0, 0, 3), row)
                self.assertGreater(row["works"], 100)

    def test_filters(self):
        data = self.rec("ft_recurse_O2", flags=("-D", "3"))
        c = self.counts(data)
        self.assertEqual((c["main"], c["fib"], c["is_even"], c["is_odd"], c["slow"], c["quick"]),
                         (1, 3, 1, 1, 1, 10))
        self.assertIn("filtered:", run([WEFT, "info", data]).stdout)
        data = self.rec("ft_recurse_O2", flags=("-t", "1ms"))
        c = self.counts(data)
        self.assertEqual(c, {"main": 1, "slow": 1})  # all else was shorter, with no recorded children

    def test_name_and_library_filters(self):
        for flags, want in ((("-F", "fib"), {"fib": 465}),
                            (("-N", "fib"), {"main": 1, "slow": 1, "is_even": 6, "is_odd": 5, "quick": 10}),
                            (("-F", "is_*", "-F", "main"), {"main": 1, "is_even": 6, "is_odd": 5}),
                            (("-F", "/^(is_(even|odd)|main)$/",), {"main": 1, "is_even": 6, "is_odd": 5}),
                            (("-N", "/^(fib|is_)/",), {"main": 1, "slow": 1, "quick": 10}),
                            (("-F", "/^[fs]/", "-N", "fib"), {"slow": 1}),
                            (("-L", "-ft_recurse*"), {}),
                            (("-L", "ft_recurse*,-libc*"), {"main": 1, "fib": 465, "is_even": 6, "is_odd": 5,
                                                            "slow": 1, "quick": 10})):
            with self.subTest(flags=flags):
                data = self.rec("ft_recurse_O2", flags=flags)
                self.assertEqual(self.counts(data), want)
        info = run([WEFT, "info", data]).stdout
        self.assertNotIn("filtered:", info)  # the last run kept everything
        data = self.rec("ft_recurse_O2", flags=("-N", "fib"))
        self.assertIn("filtered: 930 function events", run([WEFT, "info", data]).stdout)
        for args, err in ((("-F", "a,b"), "-F takes one pattern without ',' or ':', not 'a,b'"),
                          (("-N", "/(fib/"), "-N: bad regex /(fib/: Unmatched ( or \\("),
                          (("-L", "/lib[/"), "-L takes a comma list of globs or /regex/, not '/lib[/'")):
            p = run([WEFT, "record", *args, "--", "true"], check=False, cwd=self.tmp)
            self.assertEqual((p.returncode, p.stderr), (2, f"weft: record: {err}\n"))

    def test_bad_command_lines(self):
        cases = [
            (["record"], 2, "weft: record: no program given (usage: weft record [OPTIONS] -- PROGRAM [ARGS])\n"),
            (["record", "--bogus", "x"], 2, "weft: record: unknown option '--bogus' (see 'weft record --help')\n"),
            (["record", "-o", os.path.join(self.tmp, "t"), "--", "/nonexistent/prog"], 127,
             "weft: record: cannot run '/nonexistent/prog': No such file or directory\n"),
            (["record", "-o", "/proc/nope/t", "--", "true"], 1,
             "weft: record: cannot create /proc/nope/t: No such file or directory\n"),
            (["report", "a", "b"], 1, "weft: report: a: No such file or directory\n"),
            (["report", "-s", "size", "d"], 2,
             "weft: report: unknown sort key 'size' (valid: total, self, calls, avg, max, name)\n"),
        ]
        for args, code, err in cases:
            with self.subTest(args=args):
                p = run([WEFT, *args], check=False, cwd=self.tmp)
                self.assertEqual((p.returncode, p.stderr), (code, err))


if __name__ == "__main__":
    main()
