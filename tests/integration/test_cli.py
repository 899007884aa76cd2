"""The weft CLI: exact messages and exit codes for bad command lines."""
import os
import re
import shutil
import unittest
from weftlib import TraceTest, main, run, WEFT, BUILD

CASES = [
    ([], 2, None, "usage: weft COMMAND"),
    (["bogus"], 2, None, "weft: unknown command 'bogus' (try 'weft --help')\n"),
    (["convert"], 2, None, "weft: convert: missing -o FILE (.pftrace or .json; - for stdout)\n"),
    (["convert", "d"], 2, None, "weft: convert: missing -o FILE (.pftrace or .json; - for stdout)\n"),
    (["convert", "d", "e", "-o", "x"], 1, None, "weft: convert: d: No such file or directory\n"),
    (["convert", "-o", "x.pftrace"], 1, None, "weft: convert: weft.data: No such file or directory\n"),
    (["convert", "--frobnicate", "d"], 2, None,
     "weft: convert: unknown option '--frobnicate' (see 'weft convert --help')\n"),
    (["convert", "--json-style=zz", "d", "-o", "x.json"], 2, None,
     "weft: convert: unknown --json-style 'zz' (valid: be, x)\n"),
    (["convert", "-f", "svg", "d", "-o", "x"], 2, None,
     "weft: convert: unknown format 'svg' (valid: pftrace, json)\n"),
    (["convert", "/nonexistent", "-o", "x.pftrace"], 1, None,
     "weft: convert: /nonexistent: No such file or directory\n"),
    (["info"], 1, None, "weft: info: weft.data: No such file or directory\n"),
    (["info", "a", "b"], 1, None, "weft: info: a: No such file or directory\n"),
    (["report"], 1, None, "weft: report: weft.data: No such file or directory\n"),
    (["help", "record"], 0, "usage: weft record [OPTIONS] -- PROGRAM [ARGS...]", ""),
    (["help", "report"], 0, "usage: weft report", ""),
    (["help", "nope"], 2, None, "weft: help: unknown command 'nope' (try 'weft --help')\n"),
    (["record", "-D", "x", "--", "true"], 2, None,
     "weft: record: bad value 'x' for -D/--depth: expected a call depth, 0 = unlimited\n"),
    (["record", "-t", "soon", "--", "true"], 2, None,
     "weft: record: bad value 'soon' for -t/--time-filter: expected a duration such as 500ns, 5us, 1ms\n"),
    (["record", "-b", "1", "--", "true"], 2, None,
     "weft: record: bad value '1' for -b/--buffer-size: expected a size from 8K to 64G (k/M/G suffix)\n"),
    (["record", "--writers", "99", "--", "true"], 2, None,
     "weft: record: bad value '99' for --writers: expected 1 to 16\n"),
    (["record", "-z", "x", "--", "true"], 2, None,
     "weft: record: bad value 'x' for -z/--compression: expected a zstd level from -100 to 19, 0 = none\n"),
    (["info", "-z", "d"], 2, None, "weft: info: unknown option '-z' (see 'weft info --help')\n"),
    # 0 is the runtime's "off": on the command line it would leave DIR with no trace and no part
    (["record", "--switch-output=0", "--", "true"], 2, None,
     "weft: record: bad --switch-output '0': expected a size from 256K to 16G (K/M/G) or a time from "
     "1ms (s, m, h), the length of each part\n"),
    # strtod reads hexadecimal: 0x10 was 16 s; the times are decimal
    (["convert", "d", "--time", "0x10:0x20", "-o", "x.pftrace"], 2, None,
     "weft: convert: --time 0x10:0x20: '0x10' is not a time: decimal seconds, or a number and a unit "
     "(ns, us, ms, s, m, h), such as 2.5:3.5, 2500ms:3500ms, :5s or 10s:\n"),
    (["report", "d", "--time", "1:inf"], 2, None,
     "weft: report: --time 1:inf: 'inf' is not a time: decimal seconds, or a number and a unit "
     "(ns, us, ms, s, m, h), such as 2.5:3.5, 2500ms:3500ms, :5s or 10s:\n"),
    # weft plot --time: the parser and messages of convert (it had its own, which took a 20-digit
    # or wrapping 64-bit start as the whole trace, hexadecimal and ':', and refused 2h unsaid)
    (["plot", "memory", "d", "--time", "99999999999999999999:", "-o", "p.png"], 2, None,
     "weft: plot: --time 99999999999999999999:: '99999999999999999999' is not a time: decimal seconds, "
     "or a number and a unit (ns, us, ms, s, m, h), such as 2.5:3.5, 2500ms:3500ms, :5s or 10s:\n"),
    (["plot", "memory", "d", "--time", "18446744073709551615ns:", "-o", "p.png"], 2, None,
     "weft: plot: --time 18446744073709551615ns:: '18446744073709551615ns' is not a time: decimal "
     "seconds, or a number and a unit (ns, us, ms, s, m, h), such as 2.5:3.5, 2500ms:3500ms, :5s or 10s:\n"),
    (["plot", "heap", "d", "--time", "0x10:0x20", "-o", "p.png"], 2, None,
     "weft: plot: --time 0x10:0x20: '0x10' is not a time: decimal seconds, or a number and a unit "
     "(ns, us, ms, s, m, h), such as 2.5:3.5, 2500ms:3500ms, :5s or 10s:\n"),
    (["plot", "memory", "d", "--time", ":", "-o", "p.png"], 2, None,
     "weft: plot: --time takes FROM:TO in seconds from the process's first memory event, such as "
     "2.5:3.5, 2500ms:3500ms, :5s or 10s:, not ':'\n"),
    (["plot", "memory", "d", "--time", ":0", "-o", "p.png"], 2, None,
     "weft: plot: --time :0: the window's end must come after its start\n"),
    (["plot", "memory", "d", "--time", "1s:2h", "-o", "p.png"], 1, None,
     "weft: plot: d: No such file or directory\n"),
    # integer options: the whole value, a number, in range (atoi/strtol took 1.5, 2x, '', and a
    # pid of 99999999999 wrapped to 1215752191; sscanf took more than 64 bits of an address)
    (["convert", "d", "-j", "1.5", "-o", "x.pftrace"], 2, None, "weft: convert: --jobs takes 1 to 16, not '1.5'\n"),
    (["convert", "d", "-j", "2x", "-o", "x.pftrace"], 2, None, "weft: convert: --jobs takes 1 to 16, not '2x'\n"),
    (["report", "d", "-n", "1.5"], 2, None, "weft: report: --limit takes a positive number, not '1.5'\n"),
    (["report", "d", "-n", "2x"], 2, None, "weft: report: --limit takes a positive number, not '2x'\n"),
    (["report", "d", "-j", "+2"], 2, None, "weft: report: --jobs takes 1 to 16, not '+2'\n"),
    (["estimate", "d", "-n", " 3"], 2, None,
     "weft: estimate: --limit takes a number of rows (0: all), not ' 3'\n"),
    (["plot", "memory", "d", "-p", "x", "-o", "p.png"], 2, None,
     "weft: plot: --pid takes a process id (a number from 1), not 'x'\n"),
    (["plot", "memory", "d", "-p", "", "-o", "p.png"], 2, None,
     "weft: plot: --pid takes a process id (a number from 1), not ''\n"),
    (["plot", "memory", "d", "-p", "0", "-o", "p.png"], 2, None,
     "weft: plot: --pid takes a process id (a number from 1), not '0'\n"),
    (["plot", "memory", "d", "-p", "99999999999", "-o", "p.png"], 2, None,
     "weft: plot: --pid takes a process id (a number from 1), not '99999999999'\n"),
    (["plot", "memory", "d", "--addr", "0:ffffffffffffffffff", "-o", "p.png"], 2, None,
     "weft: plot: --addr takes LO:HI in hex (64 bits at most) with LO < HI, not '0:ffffffffffffffffff'\n"),
    (["plot", "memory", "d", "--size", "800x600junk", "-o", "p.png"], 2, None,
     "weft: plot: --size takes WxH from 400x300 to 10000x10000, not '800x600junk'\n"),
    (["plot", "memory", "d", "--addr", "0x1000:ffffffffffffffff", "--size", "800x600", "-o", "p.png"], 1, None,
     "weft: plot: d: No such file or directory\n"),
    (["top", "-n", "1x"], 2, None, "weft: top: bad -n '1x': expected a number of frames, 1 or more\n"),
    (["open", "--port", "9001x"], 2, None, "weft: open: --port takes a port number from 1 to 65535, not '9001x'\n"),
    (["overhead", "--seed", "+4", "--", "true"], 2, None,
     "weft: overhead: --seed takes a non-negative integer, not '+4'\n"),
    (["record", "--delay", "5x", "--", "true"], 2, None,
     "weft: record: bad --delay '5x': expected milliseconds (0 to 86400000), or -1: disabled until an "
     "enable command\n"),
    (["record", "--control=fd:1x", "--", "true"], 2, None,
     "weft: record: bad --control 'fd:1x': expected fifo:CTL[,ACK] or fd:N[,M]\n"),
    (["record", "--writers", "+2", "--", "true"], 2, None,
     "weft: record: bad value '+2' for --writers: expected 1 to 16\n"),
    # --options: one line saying what is wrong (it printed the runtime's "...; using the default"
    # or "... ignored", then "bad --options ... (see above)", and exited 2 all the same)
    (["record", "--options", "chunk_size=0", "--", "true"], 2, None,
     "weft: record: bad --options 'chunk_size=0': bad value '0' for option chunk_size: expected a size "
     "from 4K to 64M\n"),
    (["record", "--options", "writers=2:garbage", "--", "true"], 2, None,
     "weft: record: bad --options 'writers=2:garbage': 'garbage' is not key=value\n"),
    (["record", "--options", "bogus=1", "--", "true"], 2, None,
     "weft: record: bad --options 'bogus=1': unknown option 'bogus'; valid keys: enable, output, "),
    # an empty --flight-recorder size was taken as the default, silently
    (["record", "--flight-recorder=", "--", "true"], 2, None,
     "weft: record: bad --flight-recorder '': an empty SIZE or field; expected SIZE[,AGE][,noexit] "
     "(SIZE 1M to 64G; --flight-recorder alone: 64M)\n"),
    (["record", "--flight-recorder=,", "--", "true"], 2, None,
     "weft: record: bad --flight-recorder ',': an empty SIZE or field; expected SIZE[,AGE][,noexit] "
     "(SIZE 1M to 64G; --flight-recorder alone: 64M)\n"),
    (["--help"], 0, "convert", ""),
    (["convert", "--help"], 0, "usage: weft convert [OPTIONS] DIR... -o FILE", ""),
    (["info", "--help"], 0, "usage: weft info [OPTIONS] DIR", ""),
]


class Cli(TraceTest):
    def test_cases(self):
        for args, code, out, err in CASES:
            with self.subTest(args=args):
                p = run([WEFT, *args], check=False, cwd=self.tmp)
                self.assertEqual(p.returncode, code)
                if out:
                    self.assertIn(out, p.stdout)
                if code != 0 and err.endswith("\n"):
                    self.assertEqual(p.stderr, err)
                elif err:
                    self.assertIn(err, p.stderr)
                if code == 2 and err.startswith("weft: "):  # a usage error: one line
                    self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)

    def test_unwritable_output(self):
        data, _ = self.record("pipeline", [1, 2, 1])
        p = run([WEFT, "convert", data, "-o", "/nonexistent/dir/x.pftrace"], check=False)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, "weft: convert: cannot write /nonexistent/dir/x.pftrace: "
                                   "No such file or directory\n")
        # /proc makes no new files: it said "No such file or directory" of a file that is there
        p = run([WEFT, "convert", data, "-o", "/proc/version"], check=False)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, "weft: convert: cannot write /proc/version: /proc takes no new files (the "
                                   "output is written as a new file there, then renamed)\n")
        p = run([WEFT, "convert", data, "-o", os.path.join(self.tmp, "ok.pftrace")])
        self.assertRegex(p.stderr, r"^weft: convert: wrote .*ok.pftrace: \d+ events, 0 dropped\n$")

    def test_one_directory_named_twice(self):
        # read twice, every count was doubled, silently
        data, _ = self.record("pipeline", [1, 2, 1])
        same = os.path.join(data, ".", "")
        for cmd in (["info", data, same], ["report", data, same], ["convert", data, same, "-o", "x.pftrace"]):
            with self.subTest(cmd=cmd[0]):
                p = run([WEFT, *cmd], check=False, cwd=self.tmp)
                self.assertEqual((p.returncode, p.stderr), (1, f"weft: {cmd[0]}: {data} and {same} are the same "
                                                               "directory: name each trace once\n"))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "x.pftrace")))

    def test_empty_directory(self):
        # an empty directory is "no weft trace files", alone or after a trace directory
        data, _ = self.record("pipeline", [1, 2, 1])
        empty = os.path.join(self.tmp, "emptydir")
        os.mkdir(empty)
        for dirs in ([empty], [data, empty], [empty, data]):
            with self.subTest(dirs=dirs):
                p = run([WEFT, "info", *dirs], check=False)
                self.assertEqual(p.returncode, 1)
                self.assertEqual(p.stderr, f"weft: info: {empty}: no weft trace files (*.wmeta, *.wevents) found\n")

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
    def test_info_exec_into_a_rank(self):
        """A process that becomes a job's rank by exec (an mpirun-launched shell's `exec` with the
        rank in its environment) names its later files HOST-rRANK-PID: both images were numbered
        0, and weft info listed the process twice in the hosts line and each image twice in
        the tree. Now: each image once, the second "after exec #1", the process once with its
        rank."""
        data = os.path.join(self.tmp, "z.data")
        run([WEFT, "record", "-q", "-o", data, "--", "sh", "-c",
             'sh -c "OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 exec /bin/sleep 0.01"'])
        out = run([WEFT, "info", data]).stdout
        m = re.search(r"\n  host \S+: processes (\d+), (\d+) \(rank 0\)\n", out)
        self.assertTrue(m, out)
        outer, inner = m.groups()
        tree = out[out.index("process tree:\n"):].split("\n\n")[0].splitlines()[1:]
        self.assertEqual([l.split(":")[0] for l in tree],
                         [f"  {outer} sh", f"    {inner} sh", f"    {inner} sleep rank 0 (after exec #1)"])

    def test_info_on_a_flight_directory(self):
        # DIR holds only snapshot-N (or part-N), each a trace directory: info points at them
        # instead of "no weft trace files found"
        data = os.path.join(self.tmp, "f.data")
        run([os.path.join(BUILD, "flightsteps"), "steps", "5000", "10", "1000", "3"],
            env={"WEFT_OPTIONS": f"output={data}:overflow=block:flight=1M,noexit"})
        self.assertEqual(sorted(os.listdir(data)), ["snapshot-1", "snapshot-2", "snapshot-3"])
        p = run([WEFT, "info", data])
        self.assertEqual(p.stdout, f"trace:      {data}: a flight recorder directory, no trace of its own\n"
                                   f"snapshots:  3 (snapshot-1 .. snapshot-3), each a trace directory: "
                                   f"weft info {data}/snapshot-N\n")
        self.assertEqual(p.stderr, "")
        # the commands that read a trace: an error that names the snapshots (exit 1)
        for cmd in (["convert", data, "-o", os.path.join(self.tmp, "x.pftrace")], ["report", data],
                    ["export", data, "-o", os.path.join(self.tmp, "x.db")]):
            p = run([WEFT, *cmd], check=False)
            self.assertEqual((p.returncode, p.stderr),
                             (1, f"weft: {cmd[0]}: {data}: a flight recorder directory, no trace of its own: read one "
                                 f"of its snapshots, {data}/snapshot-N (N = 1 .. 3), each a trace directory\n"))
        os.rename(os.path.join(data, "snapshot-1"), os.path.join(data, "part-4"))
        shutil.rmtree(os.path.join(data, "snapshot-2"))
        shutil.rmtree(os.path.join(data, "snapshot-3"))
        p = run([WEFT, "info", data])
        self.assertEqual(p.stdout, f"trace:      {data}: a --switch-output directory, no trace of its own\n"
                                   f"parts:      1 (part-4), a trace directory: weft info {data}/part-4\n")
        p = run([WEFT, "report", data], check=False)
        self.assertEqual((p.returncode, p.stderr),
                         (1, f"weft: report: {data}: a --switch-output directory, no trace of its own: read one "
                             f"of its parts, {data}/part-N (N = 4 .. 4), each a trace directory\n"))
        shutil.rmtree(os.path.join(data, "part-4"))
        p = run([WEFT, "info", data], check=False)
        self.assertEqual((p.returncode, p.stderr),
                         (1, f"weft: info: {data}: no weft trace files (*.wmeta, *.wevents) found\n"))


if __name__ == "__main__":
    main()
