"""weft record and convert must not change what the user has: WEFT_OPTIONS merged, not
replaced; -o naming a file (not a trace directory) refused and left alone; directory names
with shell characters are only ever paths; setuid programs said to be untraceable with the
program's exit status; a crash reported; convert never writes over its input, reads no FIFO,
writes to stdout with -o -."""
import glob
import json
import os
import signal
import shutil
import subprocess
import unittest
from weftlib import TraceTest, main, run, WEFT, BUILD

PROG = os.path.join(BUILD, "ft_exits_O2")


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
class RecordSafety(TraceTest):
    def test_user_options_are_merged(self):
        data = os.path.join(self.tmp, "m.data")
        p = run([WEFT, "record", "-q", "-o", data, "-D", "1", "--", PROG, "_exit", "0"],
                env={"WEFT_OPTIONS": "name=userchoice:output=/nonexistent/x"}, cwd=self.tmp)
        info = run([WEFT, "info", data]).stdout
        self.assertIn('"userchoice"', info)  # the user's name= kept
        self.assertRegex(info, r"options:  name=userchoice:output=/nonexistent/x:output=\S+m.data:func_depth=1")
        rows = json.loads(run([WEFT, "report", "--format=json", data]).stdout)
        self.assertEqual([r["function"] for r in rows], ["main"])  # -D 1 from the command line

    def test_output_that_is_a_file_is_left_alone(self):
        f = os.path.join(self.tmp, "notes.txt")
        with open(f, "w") as fh:
            fh.write("mine\n")
        p = run([WEFT, "record", "-o", f, "--", "true"], check=False, cwd=self.tmp)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, f"weft: record: {f} exists and is not a weft trace directory; not touching it\n")
        with open(f) as fh:
            self.assertEqual(fh.read(), "mine\n")
        self.assertFalse(os.path.exists(f + ".old"))
        d = os.path.join(self.tmp, "project")
        os.mkdir(d)
        open(os.path.join(d, "src.c"), "w").close()
        p = run([WEFT, "record", "-o", d, "--", "true"], check=False, cwd=self.tmp)
        self.assertEqual(p.returncode, 1)
        self.assertTrue(os.path.exists(os.path.join(d, "src.c")))

    def test_a_program_that_cannot_run_leaves_the_trace_alone(self):
        # a typo, then another: before, each moved the output aside (DIR.old), and the second
        # moved the first's empty DIR over DIR.old, so the real trace was gone
        data = os.path.join(self.tmp, "keep.data")
        run([WEFT, "record", "-q", "-o", data, "--", PROG, "_exit", "0"], cwd=self.tmp)
        before = run([WEFT, "info", data]).stdout
        os.mkdir(os.path.join(self.tmp, "adir"))
        notexec = os.path.join(self.tmp, "notexec")
        with open(notexec, "w") as f:
            f.write("#!/bin/sh\n")
        for prog, why in (("/nonexistent/prog", "No such file or directory"),
                          ("weft-no-such-program", "No such file or directory"),
                          (os.path.join(self.tmp, "adir"), "Permission denied"), (notexec, "Permission denied")):
            with self.subTest(prog=prog):
                p = run([WEFT, "record", "-o", data, "--", prog], check=False, cwd=self.tmp)
                self.assertEqual(p.returncode, 127)
                self.assertEqual(p.stderr, f"weft: record: cannot run '{prog}': {why}\n")
        self.assertEqual(sorted(os.listdir(self.tmp)), ["adir", "keep.data", "notexec"])
        self.assertEqual(run([WEFT, "info", data]).stdout, before)

    def test_directory_names_are_never_shell(self):
        name = os.path.join(self.tmp, "bob's run $(touch pwned)")
        for i in range(3):
            p = run([WEFT, "record", "-q", "-o", name, "--", PROG, "_exit", "0"], check=False, cwd=self.tmp)
            self.assertEqual(p.returncode, 0, (i, p.stderr))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "pwned")))
        self.assertTrue(glob.glob(os.path.join(name, "*.wmeta")))
        self.assertTrue(glob.glob(os.path.join(name + ".old", "*.wmeta")))

    @unittest.skipUnless(os.geteuid() == 0, "needs root to make a file setuid to another user")
    def test_setuid_program(self):
        exe = os.path.join(self.tmp, "su_exit")
        shutil.copy(PROG, exe)
        os.chmod(self.tmp, 0o755)
        os.chown(exe, 65534, -1)
        os.chmod(exe, 0o4755)
        p = run([WEFT, "record", "-o", os.path.join(self.tmp, "s.data"), "--", exe, "_exit", "9"], check=False)
        self.assertEqual(p.returncode, 9, p.stderr)
        self.assertEqual(p.stderr, f"weft: record: {exe} is setuid/setgid: the loader ignores LD_PRELOAD for it, "
                                   "so nothing was traced\n")

    def test_crash_is_reported(self):
        p = run([WEFT, "record", "-o", os.path.join(self.tmp, "c.data"), "--", PROG, "raise", "11"],
                check=False, cwd=self.tmp)
        self.assertEqual(p.returncode, -signal.SIGSEGV)
        self.assertRegex(p.stderr, r"^weft: record: program killed by SIGSEGV( \(core dumped\))?\n")

    def test_no_function_events_said(self):
        p = run([WEFT, "record", "-o", os.path.join(self.tmp, "t.data"), "--", "true"], cwd=self.tmp)
        self.assertIn("weft: record: no function events were recorded: was true built with "
                      "-finstrument-functions?", p.stderr)
        # a program that recorded weft.h events (built without -finstrument-functions) is not
        # told to add function tracing, nor is anyone under -q
        for q in ((), ("-q",)):
            p = run([WEFT, "record", *q, "-o", os.path.join(self.tmp, "w.data"), "--", os.path.join(BUILD, "pipeline"),
                     "1", "2", "1"], cwd=self.tmp)
            self.assertNotIn("no function events", p.stderr)
            self.assertNotIn("-finstrument-functions", p.stderr)
        p = run([WEFT, "record", "-q", "-o", os.path.join(self.tmp, "t.data"), "--", "true"], cwd=self.tmp)
        self.assertEqual(p.stderr, "")
        # a Python interpreter: the hint is --python
        p = run([WEFT, "record", "-o", os.path.join(self.tmp, "p.data"), "--", "/usr/bin/python3", "-c", "pass"],
                cwd=self.tmp)
        self.assertIn("weft: record: no native function events: add --python to record every Python call",
                      p.stderr)


class ConvertSafety(TraceTest):
    def test_never_overwrites_input(self):
        data, _ = self.record("pipeline", [1, 2, 1])
        meta = glob.glob(data + "/*.wmeta")[0]
        before = open(meta, "rb").read()
        for out in (meta, os.path.join(data, "new.wmeta"), glob.glob(data + "/*.wevents")[0]):
            p = run([WEFT, "convert", data, "-o", out], check=False)
            self.assertEqual(p.returncode, 2, out)
            self.assertEqual(p.stderr, f"weft: convert: refusing to write {out}: it is a file of the trace being read\n")
        self.assertEqual(open(meta, "rb").read(), before)
        self.assertFalse(os.path.exists(os.path.join(data, "new.wmeta")))
        run([WEFT, "convert", data, "-o", os.path.join(data, "trace.pftrace")])  # the output file is fine

    def test_fifo_is_skipped(self):
        data, _ = self.record("pipeline", [1, 2, 1])
        os.mkfifo(os.path.join(data, "99999.wmeta"))
        p = run([WEFT, "info", data], timeout=30)
        self.assertIn("  99999.wmeta: not a regular file; skipped\n", p.stdout)
        p = run([WEFT, "convert", data, "-o", os.path.join(self.tmp, "f.pftrace")], timeout=30)
        self.assertIn("weft: convert: warning: 99999.wmeta: not a regular file; skipped\n", p.stderr)

    def test_stdout(self):
        data, _ = self.record("pipeline", [1, 2, 1])
        p = subprocess.run([WEFT, "convert", data, "-o", "-", "-f", "json"], capture_output=True)
        self.assertEqual(p.returncode, 0)
        doc = json.loads(p.stdout)
        self.assertTrue(doc["traceEvents"])
        self.assertFalse(os.path.exists("-"))
        self.assertRegex(p.stderr.decode(), r"^weft: convert: wrote stdout: \d+ events, 0 dropped\n$")

    def test_default_directory(self):
        data, _ = self.record("pipeline", [1, 2, 1])
        os.rename(data, os.path.join(self.tmp, "weft.data"))
        self.assertIn("events:", run([WEFT, "info"], cwd=self.tmp).stdout)
        run([WEFT, "report"], cwd=self.tmp)
        run([WEFT, "convert", "-o", "d.pftrace"], cwd=self.tmp)
        self.assertTrue(os.path.getsize(os.path.join(self.tmp, "d.pftrace")) > 0)


if __name__ == "__main__":
    main()
