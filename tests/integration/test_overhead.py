"""weft overhead: runs a program untraced and traced, interleaved, and compares them. The
checks are on behaviour (what ran, how often, in what order, the output's shape, exit codes),
and on times only with margins that a busy two-core machine keeps."""
import csv
import io
import json
import os
import signal
import sqlite3
import subprocess
import time
import unittest
from weftlib import TraceTest, main, run, BUILD, WEFT

SPIN = os.path.join(BUILD, "spin")
MODES = ["dry", "functions", "memory"]
METRICS = ["user_s", "sys_s", "wall_s", "maxrss_kib"]


class Overhead(TraceTest):
    def overhead(self, *args, check=True):
        # trace directories go under the test's own TMPDIR, so the test can see them removed
        tmpdir = os.path.join(self.tmp, "tmpdir")
        os.makedirs(tmpdir, exist_ok=True)
        p = run([WEFT, "overhead", *map(str, args)], env={"TMPDIR": tmpdir}, cwd=self.tmp, check=check)
        self.assertEqual(os.listdir(tmpdir), [], "a temporary trace directory was left behind")
        return p

    def json_of(self, *args):
        doc = json.loads(self.overhead("-f", "json", *args).stdout)
        return {m["mode"]: m for m in doc}

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build")
    def test_cpu_time(self):
        res = self.json_of("-n", 3, "--", SPIN, 100)
        self.assertEqual(sorted(res), sorted(MODES))
        for mode, r in res.items():
            with self.subTest(mode=mode):
                self.assertEqual(r["runs"], 3)
                m = r["metrics"]
                # user+sys is the thread's exact CPU time; the split between them is sampled
                self.assertGreaterEqual(m["user_s"]["median"] + m["sys_s"]["median"], 0.095)
                # (how much of it is user time is the kernel's tick sampling: under load and
                # ASan 0.057 s of 0.1 was seen; that it is there is what is checked)
                self.assertGreater(m["user_s"]["median"], 0)
                self.assertLessEqual(m["user_s"]["median"], 0.5)
                self.assertGreaterEqual(m["wall_s"]["median"], m["user_s"]["median"])
                for k in METRICS:
                    s = m[k]
                    self.assertLessEqual(s["min"], s["median"])
                    self.assertLessEqual(s["median"], s["max"])
                    self.assertLessEqual(s["min"], s["mean"])
                    self.assertLessEqual(s["mean"], s["max"])
                    self.assertGreaterEqual(s["stdev"], 0)
                self.assertGreater(m["maxrss_kib"]["median"], 0)
        dry = res["dry"]["metrics"]
        for mode in MODES:
            m = res[mode]["metrics"]
            for k in METRICS:
                self.assertAlmostEqual(m[k]["overhead_abs"], m[k]["median"] - dry[k]["median"], places=5)

    def test_sleep_is_wall_not_cpu(self):
        m = self.json_of("-n", 2, "--modes", "dry", "--", SPIN, 0, 100)["dry"]["metrics"]
        self.assertGreaterEqual(m["wall_s"]["median"], 0.1)
        self.assertLess(m["user_s"]["median"], 0.05)

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build")
    def test_runs_kept_in_sqlite(self):
        db = os.path.join(self.tmp, "runs.db")
        self.overhead("-n", 3, "--modes", "dry,functions", "--db", db, "--", SPIN, 0, 20)
        self.overhead("-n", 1, "--modes", "dry", "--db", db, "--", SPIN, 0, 20)  # appends
        con = sqlite3.connect(db)
        rows = con.execute("select prog, mode, run, wtime_ns, max_rss from runs order by id").fetchall()
        con.close()
        self.assertEqual(len(rows), 7)
        self.assertEqual(sorted((m, r) for _, m, r, _, _ in rows[:6]),
                         [("dry", 0), ("dry", 1), ("dry", 2), ("functions", 0), ("functions", 1), ("functions", 2)])
        self.assertEqual(rows[6][1:3], ("dry", 0))
        self.assertTrue(all(p == SPIN and w >= 20_000_000 and rss > 0 for p, _, _, w, rss in rows), rows)

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build")
    def test_csv(self):
        p = self.overhead("-n", 2, "--format=csv", "--", SPIN, 1)
        rows = list(csv.reader(io.StringIO(p.stdout)))
        self.assertEqual(rows[0], ["mode", "runs", "metric", "median", "min", "max", "mean", "stdev",
                                   "overhead_abs", "overhead_pct"])
        self.assertEqual(len(rows), 1 + len(MODES) * len(METRICS))
        self.assertEqual([(r[0], r[2]) for r in rows[1:]], [(m, k) for m in MODES for k in METRICS])
        for r in rows[1:]:
            self.assertEqual(r[1], "2")
            for v in r[3:9]:
                float(v)

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build")
    def test_text(self):
        p = self.overhead("-n", 1, "--modes", "functions,dry", "--", SPIN, 1)
        lines = p.stdout.splitlines()
        self.assertEqual(len(lines), 4, p.stdout)
        self.assertIn("wall s", lines[1])
        self.assertIn("max RSS MiB", lines[1])
        self.assertEqual([line.split()[0] for line in lines[2:]], ["functions", "dry"])
        self.assertRegex(lines[2], r"^functions +1 +\d+\.\d{3} ± \d+\.\d{3} ")
        self.assertEqual(p.stderr, "")

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build")
    def test_interleaved(self):
        log = os.path.join(self.tmp, "log")
        self.overhead("-n", 4, "--modes", "dry,functions", "--", SPIN, 0, 0, log)
        with open(log) as f:
            seq = f.read().split()
        self.assertEqual(sorted(seq), ["dry"] * 4 + ["functions"] * 4)
        self.assertNotEqual(seq, ["dry"] * 4 + ["functions"] * 4)
        # the same seed, the same order; another seed, another order (for these two seeds)
        os.unlink(log)
        self.overhead("-n", 4, "--modes", "dry,functions", "--seed", 1, "--", SPIN, 0, 0, log)
        with open(log) as f:
            self.assertEqual(f.read().split(), seq)
        os.unlink(log)
        self.overhead("-n", 4, "--modes", "dry,functions", "--seed", 2, "--", SPIN, 0, 0, log)
        with open(log) as f:
            self.assertNotEqual(f.read().split(), seq)

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build")
    def test_every_mode_traced_as_named(self):
        log = os.path.join(self.tmp, "log")
        self.overhead("-n", 3, "--", SPIN, 0, 0, log)
        with open(log) as f:
            seq = f.read().split()
        self.assertEqual(sorted(seq), sorted(MODES * 3))

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build")
    def test_program_output_discarded(self):
        p = self.overhead("-n", 1, "-f", "csv", "--", "sh", "-c", "echo out; echo err >&2")
        self.assertNotIn("out", p.stdout.splitlines()[1:])
        self.assertEqual(p.stderr, "")

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build")
    def test_failing_run(self):
        p = self.overhead("-n", 2, "--modes", "dry", "--", "sh", "-c", "exit 3", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, "weft: overhead: run 1 of 2 (dry, run 1 of 2) exited with status 3; "
                                   "stopped there\n")
        self.assertIn("dry", p.stdout)
        p = self.overhead("-n", 1, "--modes", "functions", "--", "sh", "-c", "kill -SEGV $$", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("(functions, run 1 of 1) killed by SIGSEGV", p.stderr)

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build")
    def test_sigterm_leaves_nothing_behind(self):
        tmpdir = os.path.join(self.tmp, "tmpdir")
        os.makedirs(tmpdir)
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(sig=sig.name):
                marker = f"{37 + sig}.25"  # a sleep of its own, to find it among the processes
                p = subprocess.Popen([WEFT, "overhead", "-n", "3", "--modes", "functions", "--", "sleep", marker],
                                     env=dict(os.environ, TMPDIR=tmpdir), stderr=subprocess.PIPE, text=True)
                for _ in range(300):  # the run has started: its trace directory is there
                    if os.listdir(tmpdir) and self.sleeps(marker):
                        break
                    time.sleep(0.05)
                self.assertTrue(os.listdir(tmpdir))
                p.send_signal(sig)
                try:
                    _, err = p.communicate(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.communicate()
                    self.fail(f"weft overhead did not end on {sig.name}")
                self.assertEqual(p.returncode, -sig, err)  # weft dies of it, after cleaning up
                self.assertEqual(err, f"weft: overhead: stopped by {sig.name} at run 1 of 3; nothing left behind\n")
                self.assertEqual(os.listdir(tmpdir), [], "the run's trace directory was left behind")
                self.assertEqual(self.sleeps(marker), [], "the run was left running")

    def sleeps(self, marker):
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if f.read().split(b"\0")[:2] == [b"sleep", marker.encode()]:
                        with open(f"/proc/{pid}/stat") as st:
                            if st.read().rsplit(")", 1)[1].split()[0] != "Z":
                                found.append(pid)
            except OSError:
                pass
        return found

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build")
    def test_timeout(self):
        p = self.overhead("-n", 2, "--modes", "dry,functions", "--timeout", "0.3", "--", "sleep", "30", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertRegex(p.stderr, r"^weft: overhead: run 1 of 4 \((dry|functions), run 1 of 2\) timed out after "
                                   r"0.3 s \(killed\); stopped there\n$")
        p = self.overhead("-n", 1, "--timeout", "0", "--", "true", check=False)
        self.assertEqual((p.returncode, p.stderr), (2, "weft: overhead: --timeout takes seconds (more than 0), "
                                                       "not '0'\n"))
        p = self.overhead("-n", 1, "--modes", "dry,functions", "--timeout", "60", "-f", "json", "--", "true")
        self.assertEqual(len(json.loads(p.stdout)), 2)

    def test_usage(self):
        cases = [
            (["-n", 2, "--modes", "bogus", "--", "true"],
             "weft: overhead: unknown mode 'bogus' (valid: dry, functions, memory, access)\n"),
            (["-n", 0, "--", "true"], "weft: overhead: -n takes a number of runs from 1 to 1000000, not '0'\n"),
            (["--", "true"],
             "weft: overhead: missing -n N (usage: weft overhead -n N [OPTIONS] -- PROGRAM [ARGS])\n"),
            (["-n", 1], "weft: overhead: no program given (usage: weft overhead -n N [OPTIONS] -- PROGRAM [ARGS])\n"),
            (["-n", 1, "-f", "xml", "--", "true"], "weft: overhead: unknown format 'xml' (valid: text, csv, json)\n"),
            (["-n", 1, "--modes", "dry,dry", "--", "true"], "weft: overhead: mode 'dry' given twice\n"),
            (["-n", 1, "--seed", "x", "--", "true"],
             "weft: overhead: --seed takes a non-negative integer, not 'x'\n"),
        ]
        for args, err in cases:
            with self.subTest(args=args):
                p = self.overhead(*args, check=False)
                self.assertEqual((p.returncode, p.stdout, p.stderr), (2, "", err))
        p = self.overhead("-n", 1, "--", "/nonexistent/prog", check=False)
        self.assertEqual(p.returncode, 127)
        self.assertEqual(p.stderr, "weft: overhead: cannot run '/nonexistent/prog': No such file or directory\n")
        p = run([WEFT, "overhead", "--help"])
        self.assertIn("usage: weft overhead -n N", p.stdout)
        self.assertIn("/dev/null", p.stdout)


if __name__ == "__main__":
    main()
