"""Run-time control (docs/control.md): weft record --delay MS / -1, --control=fifo:CTL[,ACK] and
fd:N[,M] with enable, disable, snapshot, stop and ping, each acked once every traced process
applied it; weft snapshot|enable|disable|stop DIR from another process; events emitted while
disabled counted as such ("not recorded: disabled N"). tests/programs/phases.c runs gated
phases the test drives through its stdin, so nothing depends on timing: a phase runs only
after the ack of the command before it.

Left running: traced processes the program leaves behind (a background job, a pool's helper)
are waited for through their control connections before weft record converts, for up to
WEFT_RECORD_LINGER seconds (1): a fork child connects before it lets its parent's connection
go, and an exec (the socket closed without `bye`) is waited for by pid. Those still running
after that are named in one warning."""
import errno
import os
import re
import stat
import subprocess
import sys
import unittest
from weftlib import TraceTest, main, run, sanitizer, WEFT, BUILD

PHASES = os.path.join(BUILD, "phases")
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
HAVE_PY = os.path.exists(os.path.join(BUILD, "python", "weft", "__init__.py"))
LSAN_NOTE = re.compile(r"^==\d+==Running thread \d+ was not suspended. False leaks are possible.\n", re.M)
N = 100  # instants per phase: a phase is N + 4 events (function entry/exit, slice begin/end)


class Recording:
    """weft record running phases (or a Python script) with stdin/stdout pipes."""

    def __init__(self, test, opts, prog=None, pass_fds=()):
        self.dir = os.path.join(test.tmp, "d")
        self.p = subprocess.Popen([WEFT, "record", "-q", "-o", self.dir, *opts, "--", *(prog or [PHASES])],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, bufsize=1, cwd=test.tmp, pass_fds=pass_fds)
        self.test = test
        self.pid = int(self.expect("ready").split()[1])

    def expect(self, word):
        line = self.p.stdout.readline()
        self.test.assertTrue(line.startswith(word), f"expected {word!r}, got {line!r}; stderr: "
                                                    f"{self.p.stderr.read() if not line else ''}")
        return line

    def do(self, cmd, answer):
        self.p.stdin.write(cmd + "\n")
        return self.expect(answer)

    def end(self):
        """quit, then weft record's exit status and stderr (less LeakSanitizer's notes on the
        parent's threads that a fork child's registry still lists, in an ASan build)."""
        self.p.stdin.write("quit\n")
        self.p.stdin.close()
        err = LSAN_NOTE.sub("", self.p.stderr.read())
        self.p.stdout.close()
        self.p.stderr.close()
        return self.p.wait(timeout=120), err


class Fifo:
    """The test's end of --control=fifo:CTL,ACK: CTL made here, ACK left for weft to make."""

    def __init__(self, tmp, make_ack=False):
        self.ctl, self.ack = os.path.join(tmp, "ctl"), os.path.join(tmp, "ack")
        os.mkfifo(self.ctl)
        if make_ack:
            os.mkfifo(self.ack)
        self.spec = f"fifo:{self.ctl},{self.ack}"
        self.w = self.r = None

    def send(self, line):
        if self.w is None:  # weft holds both open read-write: neither open waits
            self.w = os.open(self.ctl, os.O_WRONLY)
            self.r = open(self.ack)
        os.write(self.w, (line + "\n").encode())
        return self.r.readline()

    def close(self):
        if self.w is not None:
            os.close(self.w)
            self.r.close()


def info_counts(test, data):
    """Per process image: (recorded events, disabled events, after stop) from weft info, keyed
    by pid ("PID exec" for the image an exec started)."""
    out = run([WEFT, "info", data]).stdout
    res = {}
    for block in re.split(r"\nprocess (?=\d+ )", out)[1:]:
        pid = int(block.split()[0])
        m = re.search(r"recorded: (\d+) events, \d+ dropped, (\d+) after stop", block)
        test.assertIsNotNone(m, block)
        d = re.search(r"not recorded: disabled (\d+) events", block)
        key = f"{pid} exec" if "[after exec]" in block.split("\n")[0] else pid
        res[key] = (int(m.group(1)), int(d.group(1)) if d else 0, int(m.group(2)))
    return res


def snapshot_refused(tmp):
    """Does this build refuse snapshots (src/lib/snapshot.c before its policy was built)?
    Asked of weft_snapshot() itself, through the Python module, in a plain recording."""
    code = ("import weft, errno\ntry:\n    print(weft.snapshot('probe'))\n"
            "except OSError as e:\n    print('refused' if e.errno == errno.ENOTSUP else e)\n")
    p = run([PY, "-c", code], env={"PYTHONPATH": os.path.join(BUILD, "python"),
                                   "WEFT_OPTIONS": "output=" + os.path.join(tmp, "probe.data")})
    return p.stdout.strip() == "refused"


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
class Control(TraceTest):
    def tp_names(self, data, pid=None):
        """name -> count of every slice and instant in DIR's trace (of process pid only)."""
        where = f"where p.pid = {pid}" if pid else ""
        rows, = self.tp(os.path.join(data, "trace.pftrace"),
                        "select s.name as name, count(*) as n from slice s join thread_track tt on s.track_id = tt.id "
                        "join thread t using(utid) left join process p using(upid) "
                        f"{where} group by s.name")
        return {r["name"]: r["n"] for r in rows}

    def test_gated_phases_fifo(self):
        """--delay -1: nothing before enable; exactly phase B between enable and disable; the
        rest counted as disabled, exactly; ping and an unknown command answered."""
        f = Fifo(self.tmp)
        r = Recording(self, ["--delay", "-1", "--control", f.spec])
        r.do(f"run A {N}", "done A")
        self.assertEqual(f.send("enable"), "ack\n")
        self.assertEqual(stat.S_IMODE(os.stat(f.ack).st_mode), 0o600)  # made by weft
        r.do(f"run B {N}", "done B")
        self.assertEqual(f.send("disable"), "ack\n")
        r.do(f"run C {N}", "done C")
        self.assertEqual(f.send("ping"), "ack\n")
        self.assertEqual(f.send("bogus 1"), "error: unknown command 'bogus 1' (expected enable, disable, "
                                             "snapshot [REASON], stop or ping)\n")
        self.assertEqual(f.send("ping"), "ack\n")  # and it goes on
        rc, err = r.end()
        f.close()
        self.assertEqual(rc, 0, err)
        self.assertEqual(err, "weft: record: error: unknown command 'bogus 1' (expected enable, disable, "
                              "snapshot [REASON], stop or ping)\n")
        # the ACK weft made is gone with the run; the CTL the test made stays
        self.assertFalse(os.path.exists(f.ack))
        self.assertTrue(stat.S_ISFIFO(os.stat(f.ctl).st_mode))
        names = self.tp_names(r.dir)
        self.assertEqual(names, {"phase_b": 1, "phase B": 1, "tick B": N})
        self.tp_no_errors(os.path.join(r.dir, "trace.pftrace"))
        self.assertEqual(info_counts(self, r.dir), {r.pid: (N + 4, 2 * (N + 4), 0)})
        self.assertIn(f"not recorded: disabled {2 * (N + 4)} events", run([WEFT, "info", r.dir]).stdout)
        self.assertEqual(os.listdir(r.dir).count(".control." + str(r.p.pid)), 0)  # removed at the end

    def test_call_open_at_disable_ends_where_it_returns(self):
        """A function entered while recording and returning while disabled: its exit is recorded,
        so its slice ends there (before, none was: the slice was drawn until the stop, over
        everything recorded after the enable). The calls made while disabled stay out."""
        f = Fifo(self.tmp)
        r = Recording(self, ["--control", f.spec])
        r.do("hold", "holding")
        self.assertEqual(f.send("disable"), "ack\n")
        r.do(f"run C {N}", "done C")  # inside phase_hold: none of it recorded
        r.do("release", "released")
        self.assertEqual(f.send("enable"), "ack\n")
        r.do(f"run B {N}", "done B")
        rc, err = r.end()
        f.close()
        self.assertEqual((rc, err), (0, ""))
        pf = os.path.join(r.dir, "trace.pftrace")
        self.tp_no_errors(pf)
        rows, = self.tp(pf, "select name, ts, dur, depth from slice where name in ('phase_hold', 'phase_b') order by ts")
        self.assertEqual([(x["name"], x["depth"]) for x in rows], [("phase_hold", 0), ("phase_b", 0)])
        hold, b = rows
        self.assertGreater(hold["dur"], 0)
        self.assertLess(hold["ts"] + hold["dur"], b["ts"])  # ended before phase B began
        self.assertEqual(self.tp_names(r.dir), {"phase_hold": 1, "phase_b": 1, "phase B": 1, "tick B": N})
        # disabled: phase C's N + 4 events; phase_hold's exit was recorded
        self.assertEqual(info_counts(self, r.dir), {r.pid: (2 + N + 4, N + 4, 0)})

    def test_fifos_made_in_the_trace_directory_go(self):
        """FIFOs weft made for --control inside DIR are removed at the end: DIR stays a trace
        directory, which the next run to it moves aside (it refused before: 'not a weft trace
        directory'); a FIFO the user made there is the user's, and stays."""
        d = os.path.join(self.tmp, "fd.data")
        for ack in ("ack", "ack2"):
            p = run([WEFT, "record", "-q", "-o", d, "--control", f"fifo:{d}/ctl,{d}/{ack}", "--", "true"],
                    check=False)
            self.assertEqual((p.returncode, p.stderr), (0, ""))
            self.assertEqual(sorted(n for n in os.listdir(d) if not n.endswith((".wmeta", ".wevents"))),
                             ["trace.pftrace"])
        os.mkfifo(os.path.join(self.tmp, "mine"))
        p = run([WEFT, "record", "-q", "-o", d, "--control", f"fifo:{self.tmp}/mine,{self.tmp}/ack", "--",
                 "true"])
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "mine")))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "ack")))

    def test_disabled_throughout_is_no_build_question(self):
        """--delay -1 and never enabled: the program's function events were all emitted while
        disabled, so record says that, not 'was it built with -finstrument-functions?'; a
        program that emitted nothing at all still gets that question."""
        d = os.path.join(self.tmp, "off.data")
        p = run([WEFT, "record", "-o", d, "--delay", "-1", "--", os.path.join(BUILD, "reenter"), "2", "3"])
        emitted = 2 + 2 * (1 + 2 * 5 + 3 * 6)  # main; per round execute, 5 sortlike, 3 x (callback, execute, leaf)
        self.assertEqual(p.stderr.splitlines()[0],
                         f"weft: record: nothing was recorded: all {emitted} events came while recording was "
                         "disabled (--delay, the disable command; weft enable DIR turns it on)")
        self.assertNotIn("-finstrument-functions", p.stderr)
        p = run([WEFT, "record", "-o", d, "--delay", "-1", "--", "true"])
        self.assertIn("was true built with -finstrument-functions?", p.stderr)

    def test_fd_control(self):
        """--control=fd:N,M: the same through descriptors weft record inherits; no --delay:
        recording starts enabled."""
        ctl_r, ctl_w = os.pipe()
        ack_r, ack_w = os.pipe()
        r = Recording(self, ["--control", f"fd:{ctl_r},{ack_w}"], pass_fds=(ctl_r, ack_w))
        os.close(ctl_r)
        os.close(ack_w)
        ack = os.fdopen(ack_r)
        r.do(f"run A {N}", "done A")
        os.write(ctl_w, b"disable\n")
        self.assertEqual(ack.readline(), "ack\n")
        r.do(f"run B {N}", "done B")
        os.write(ctl_w, b"enable\nping\n")  # two lines at once: two acks
        self.assertEqual(ack.readline(), "ack\n")
        self.assertEqual(ack.readline(), "ack\n")
        r.do(f"run C {N}", "done C")
        os.close(ctl_w)  # EOF: no more commands; the recording goes on
        rc, err = r.end()
        ack.close()
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(self.tp_names(r.dir), {"phase_a": 1, "phase A": 1, "tick A": N,
                                                "phase_c": 1, "phase C": 1, "tick C": N})
        self.assertEqual(info_counts(self, r.dir), {r.pid: (2 * (N + 4), N + 4, 0)})

    def test_bad_options(self):
        for opts, why in ((["--delay", "x"], "bad --delay 'x'"), (["--delay", "-2"], "bad --delay '-2'"),
                          (["--control", "pipe:x"], "bad --control 'pipe:x'"),
                          (["--control", "fd:99"], "--control=fd:99: descriptor 99 is not open")):
            p = run([WEFT, "record", *opts, "--", "true"], check=False, cwd=self.tmp)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertTrue(p.stderr.startswith("weft: record: " + why), p.stderr)

    def test_weft_snapshot_enable_disable_dir(self):
        """weft disable/enable/snapshot DIR from another process: exit 0 once applied; when
        nothing records DIR, exit 1 with one line."""
        r = Recording(self, [])
        p = run([WEFT, "disable", r.dir], check=False)
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "", ""))
        r.do(f"run A {N}", "done A")
        p = run([WEFT, "enable", r.dir], check=False)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        r.do(f"run B {N}", "done B")
        p = run([WEFT, "snapshot", r.dir, "because\nof this"], check=False)
        refused = snapshot_refused(self.tmp)
        if refused:  # every process refused: said in one line, exit 1
            self.assertEqual((p.returncode, p.stderr), (1, "weft: snapshot: snapshot: Operation not supported "
                                                           "(in 1 of 1 processes)\n"))
        else:
            self.assertEqual((p.returncode, p.stderr), (0, ""))
        rc, err = r.end()
        self.assertEqual((rc, err), (0, ""))
        if not refused:  # the request reached the process: its marker, origin and reason (one line)
            self.assertRegex(run([WEFT, "info", r.dir]).stdout, r"\n +\+[0-9.]+ s +command +taken +"
                                                                r"\"because of this\"\n")
        self.assertEqual(self.tp_names(r.dir), {"phase_b": 1, "phase B": 1, "tick B": N})
        self.assertEqual(info_counts(self, r.dir)[r.pid][:2], (N + 4, N + 4))
        for cmd in (["snapshot", r.dir], ["enable", r.dir], ["snapshot", r.dir, "why"]):
            p = run([WEFT, *cmd], check=False)
            self.assertEqual((p.returncode, p.stderr), (1, f"weft: {cmd[0]}: nothing records {r.dir}\n"))
        p = run([WEFT, "snapshot"], check=False)
        self.assertEqual(p.returncode, 2)
        self.assertTrue(p.stderr.startswith("usage: weft snapshot DIR [REASON]"), p.stderr)

    @unittest.skipIf(os.geteuid() != 0, "needs root to run a command as another user")
    def test_other_user_refused(self):
        """The control socket takes only the recording user: even with its mode opened up,
        another user's command is refused (SO_PEERCRED) and changes nothing."""
        r = Recording(self, [])
        sock = [n for n in os.listdir(r.dir) if n.startswith(".control.")]
        self.assertEqual(len(sock), 1)
        path = os.path.join(r.dir, sock[0])
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        os.chmod(path, 0o777)
        os.chmod(self.tmp, 0o755)
        os.chmod(r.dir, 0o755)
        p = run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", WEFT, "disable", r.dir],
                check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"weft: disable: {path}: ", p.stderr)
        r.do(f"run A {N}", "done A")  # still recorded
        rc, err = r.end()
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(info_counts(self, r.dir)[r.pid][:2], (N + 4, 0))

    def test_fork_and_exec_children(self):
        """A command is acked once every process applied it: a fork child and a program exec'd
        after the FIFO was opened (it says hello and takes the state of the moment); each
        process records exactly what ran while enabled."""
        f = Fifo(self.tmp, make_ack=True)
        r = Recording(self, ["--delay", "-1", "--control", f.spec])
        child = int(r.do("fork", "child").split()[1])
        gchild = int(r.do("exec", "ready").split()[1])  # the child forks, its child execs phases
        self.assertEqual(f.send("ping"), "ack\n")
        r.do(f"run A {N}", "done A")  # the exec'd one: disabled
        self.assertEqual(f.send("enable"), "ack\n")
        r.do(f"run B {N}", "done B")
        self.assertEqual(f.send("disable"), "ack\n")
        r.do(f"run C {N}", "done C")
        r.do("quit", "reaped")  # the exec'd one ends; its parent (the fork child) goes on
        self.assertEqual(f.send("enable"), "ack\n")
        r.do("run A 10", "done A")
        r.do("quit", "reaped")  # the fork child ends
        self.assertEqual(f.send("disable"), "ack\n")
        r.do("run C 10", "done C")  # the first process
        rc, err = r.end()
        f.close()
        self.assertEqual((rc, err), (0, ""))
        counts = info_counts(self, r.dir)
        # the fork child's child before its exec recorded nothing; after it, what was enabled
        self.assertEqual(counts, {gchild: (0, 0, 0), f"{gchild} exec": (N + 4, 2 * (N + 4), 0),
                                  child: (14, 0, 0), r.pid: (0, 14, 0)})
        self.assertEqual(self.tp_names(r.dir, gchild), {"phase_b": 1, "phase B": 1, "tick B": N})
        self.assertEqual(self.tp_names(r.dir, child), {"phase_a": 1, "phase A": 1, "tick A": 10})

    def test_delay_ms(self):
        """--delay MS: recording starts by itself; what was emitted before is counted as
        disabled, so recorded + disabled is every event emitted."""
        r = Recording(self, ["--delay", "1000"])  # (long enough for phases to start spinning)
        emitted = int(r.do("spin 10", "emitted").split()[1])
        r.do(f"run B {N}", "done B")
        rc, err = r.end()
        self.assertEqual((rc, err), (0, ""))
        recorded, disabled, after = info_counts(self, r.dir)[r.pid]
        self.assertGreater(disabled, 0)
        self.assertEqual((recorded + disabled, after), (emitted + N + 4, 0))
        names = self.tp_names(r.dir)
        self.assertEqual((names["phase B"], names["tick B"]), (1, N))
        self.assertGreater(names.get("tick A", 0), 0)

    def test_stop(self):
        """stop finishes the trace everywhere; the program runs on untraced (its events counted
        after stop); a program exec'd afterwards records nothing; enable is refused."""
        f = Fifo(self.tmp)
        r = Recording(self, ["--control", f.spec])
        r.do("run A 10", "done A")
        self.assertEqual(f.send("stop"), "ack\n")
        r.do("run B 10", "done B")
        self.assertEqual(f.send("enable"), "error: enable: the trace is stopped (a stop command ended it)\n")
        self.assertEqual(f.send("ping"), "ack\n")
        r.do("exec", "ready")
        r.do("run C 10", "done C")
        r.do("quit", "reaped")
        p = run([WEFT, "disable", r.dir], check=False)
        self.assertEqual((p.returncode, p.stderr), (1, "weft: disable: disable: the trace is stopped (a stop "
                                                       "command ended it)\n"))
        rc, err = r.end()
        f.close()
        self.assertEqual(rc, 0)
        self.assertEqual(err, "weft: record: error: enable: the trace is stopped (a stop command ended it)\n")
        # (the events after the stop are counted in the process only: its trace was finished)
        self.assertEqual(info_counts(self, r.dir), {r.pid: (14, 0, 0)})
        self.assertEqual(self.tp_names(r.dir), {"phase_a": 1, "phase A": 1, "tick A": 10})

    def test_races(self):
        """Many short runs under load: a fork child and the parent toggled through the FIFO;
        every run's counts exact (weft info, no conversion)."""
        load = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(2)]
        try:
            for i in range(20):
                d = os.path.join(self.tmp, f"r{i}")
                os.mkdir(d)
                f = Fifo(d)
                r = Recording(self, ["--delay", "-1", "--control", f.spec, "--no-convert"])
                r.dir = os.path.join(self.tmp, "d")
                child = int(r.do("fork", "child").split()[1])
                r.do("run A 5", "done A")
                self.assertEqual(f.send("enable"), "ack\n")
                r.do("run B 5", "done B")
                self.assertEqual(f.send("disable"), "ack\n")
                r.do("run C 5", "done C")
                r.do("quit", "reaped")
                self.assertEqual(f.send("enable"), "ack\n")
                r.do("run A 5", "done A")
                rc, err = r.end()
                f.close()
                self.assertEqual((rc, err), (0, ""))
                self.assertEqual(info_counts(self, r.dir), {child: (9, 18, 0), r.pid: (9, 0, 0)})
                run(["rm", "-rf", r.dir])
        finally:
            for p in load:
                p.kill()
                p.wait()


PYPROG = """import sys, weft
def pa():
    with weft.scope("phase A"):
        weft.instant("tick A")
def pb():
    with weft.scope("phase B"):
        weft.instant("tick B")
print("ready 0", flush=True)
for line in sys.stdin:
    w = line.split()
    if w[0] == "quit":
        break
    if w[0] == "snapshot":
        try:
            print("snap", weft.snapshot(reason="from python"), flush=True)
        except OSError as e:
            print("snap", "ENOTSUP" if e.errno == __import__("errno").ENOTSUP else e, flush=True)
        continue
    for _ in range(int(w[2])):
        (pa if w[1] == "A" else pb)()
    print("done", w[1], flush=True)
"""


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD") or os.environ.get("WEFT_TEST_NO_FORK") or sanitizer(),
                 "needs weft record's runtime and fork")
class LeftRunning(TraceTest):
    FEATURES = os.path.join(BUILD, "features")

    def test_what_the_program_left_running_is_in_the_trace(self):
        """a background subshell runs features, sleeps, execs features again (dash execs the
        last command): both runs are in the .pftrace weft record wrote"""
        data = os.path.join(self.tmp, "d")
        p = run([WEFT, "record", "-o", data, "--", "sh", "-c",
                 f"({self.FEATURES}; sleep 0.2; {self.FEATURES}) >/dev/null &"],
                env={"WEFT_RECORD_LINGER": "120"}, cwd=self.tmp)
        self.assertNotIn("still running", p.stderr)
        rows, = self.tp(os.path.join(data, "trace.pftrace"),
                        "select count(*) as n from slice where name = 'outer'")
        self.assertEqual(rows[0]["n"], 2, p.stderr)  # one "outer" a run of features

    def test_an_exec_into_a_static_image_is_not_waited_for(self):
        """its trace ended at the exec (finished before it): a static image never says hello"""
        src, exe = os.path.join(self.tmp, "s.c"), os.path.join(self.tmp, "static_sleep")
        with open(src, "w") as f:
            f.write("#include <unistd.h>\nint main(void) { sleep(60); return 0; }\n")
        if subprocess.run(["cc", "-static", "-O1", "-o", exe, src], capture_output=True).returncode:
            self.skipTest("no static C library to link a static program with")
        data = os.path.join(self.tmp, "d")
        p = subprocess.Popen([WEFT, "record", "-q", "-o", data, "--", "sh", "-c", f"{exe} >/dev/null 2>&1 &"],
                             env=dict(os.environ, WEFT_RECORD_LINGER="120"), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(subprocess.run, ["pkill", "-f", exe])
        _, err = p.communicate(timeout=100)  # (waited for, it would take 120 s)
        self.assertEqual((p.returncode, err), (0, ""))

    def test_a_posix_spawned_child_is_waited_for(self):
        """its parent ends the moment posix_spawn returns, before the child's image connects:
        the parent said `spawn PID` first"""
        data = os.path.join(self.tmp, "d")
        code = f"import os; os.posix_spawn({self.FEATURES!r}, [{self.FEATURES!r}], dict(os.environ))"
        p = run([WEFT, "record", "-o", data, "--", PY, "-c", code], env={"WEFT_RECORD_LINGER": "120"}, cwd=self.tmp)
        self.assertNotIn("still running", p.stderr)
        rows, = self.tp(os.path.join(data, "trace.pftrace"),
                        "select count(*) as n from slice where name = 'outer'")
        self.assertEqual(rows[0]["n"], 1, p.stderr)

    def test_what_still_runs_is_named(self):
        data = os.path.join(self.tmp, "d")
        p = run([WEFT, "record", "-o", data, "--", "sh", "-c", "sleep 60 >/dev/null 2>&1 &"],
                env={"WEFT_RECORD_LINGER": "0.2"}, cwd=self.tmp)
        m = re.search(r"^weft: record: warning: 1 traced process still running after the program ended "
                      r"\(pid (\d+)\): converted with what they recorded so far; `weft convert " + re.escape(data) +
                      r"` again once they end$", p.stderr, re.M)
        self.assertTrue(m, p.stderr)
        pid = int(m.group(1))
        self.addCleanup(os.kill, pid, 9)
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            self.assertEqual(f.read().split(b"\0")[0], b"sleep")


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
@unittest.skipUnless(HAVE_PY, "built without the Python module")
class PythonControl(TraceTest):
    def test_python_disabled(self):
        """--python under --delay -1: Python calls and weft.scope/instant follow enable and
        disable too; weft.snapshot() answers as weft_snapshot() does."""
        prog = os.path.join(self.tmp, "prog.py")
        with open(prog, "w") as fh:
            fh.write(PYPROG)
        f = Fifo(self.tmp)
        r = Recording(self, ["--python", "--delay", "-1", "--control", f.spec], prog=[PY, prog])
        r.do("run A 20", "done A")
        self.assertEqual(f.send("enable"), "ack\n")
        r.do("run B 20", "done B")
        self.assertEqual(f.send("disable"), "ack\n")
        r.do("run A 20", "done A")
        snap = r.do("snapshot", "snap").split()[1]
        self.assertEqual(snap, "ENOTSUP" if snapshot_refused(self.tmp) else "True")
        rc, err = r.end()
        f.close()
        self.assertEqual(rc, 0, err)
        rows, = self.tp(os.path.join(r.dir, "trace.pftrace"),
                        "select name, count(*) as n from slice where name in ('pa', 'pb', 'phase A', 'phase B', "
                        "'tick A', 'tick B') group by name")
        self.assertEqual({r["name"]: r["n"] for r in rows}, {"pb": 20, "phase B": 20, "tick B": 20})
        _, disabled, _ = list(info_counts(self, r.dir).values())[0]
        self.assertGreaterEqual(disabled, 40 * 4)  # pa's call (1 or 2), its scope (2), instant (1)

    def test_snapshot_argument(self):
        p = run([PY, "-c", "import weft\ntry:\n    weft.snapshot(5)\nexcept TypeError as e:\n    print(e)\n"
                 "try:\n    weft.snapshot('a', 'b')\nexcept TypeError as e:\n    print(e)\n"],
                env={"PYTHONPATH": os.path.join(BUILD, "python"), "WEFT_OPTIONS": "enable=0"})
        self.assertEqual(p.stdout, "snapshot(): reason must be a str or None\n"
                                   "snapshot() takes one argument, reason\n")


if __name__ == "__main__":
    main()
