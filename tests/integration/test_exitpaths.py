"""What weft record must neither change nor lose: programs that end with _exit/_Exit, shells,
raised and sent fatal signals (the program must die of them as it would untraced, and the trace
keeps a marker), fork + execl, and programs that close every descriptor and open their own
files (weft must never write into them). tests/ftrace/ft_exits.c is the program."""
import json
import os
import signal
import re
import subprocess
import unittest
from weftlib import TraceTest, main, run, WEFT, BUILD

PROG = os.path.join(BUILD, "ft_exits_O2")


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
class ExitPaths(TraceTest):
    def rec(self, *cmd, opts=()):
        data = os.path.join(self.tmp, "e.data")
        p = run([WEFT, "record", "-o", data, *opts, "--", *cmd], check=False, cwd=self.tmp)
        self.assertNotIn("calibration", p.stderr)
        return data, p

    def calls(self, data):
        rows = json.loads(run([WEFT, "report", "--format=json", data]).stdout)
        return {r["function"]: r["calls"] for r in rows}

    def test_exit_without_atexit_keeps_everything(self):
        for how, code in (("_exit", 7), ("_Exit", 5)):
            with self.subTest(how=how):
                data, p = self.rec(PROG, how, str(code))
                self.assertEqual(p.returncode, code, p.stderr)
                self.assertEqual(self.calls(data).get("step"), 20)
                info = run([WEFT, "info", data]).stdout
                self.assertNotIn("not finished", info)
                self.assertRegex(info, r"recorded: \d+ events, 0 dropped")

    def test_last_thread_ending_ends_the_process(self):
        """main ends with pthread_exit, its thread later returns: untraced the process then
        ends (glibc's exit(0): stdout flushed, status 0); weft's own threads, still running,
        must not keep it alive (before: a zombie main thread, the writers waiting for ever)"""
        plain = run([PROG, "lastthread"], check=False, timeout=20)
        self.assertEqual((plain.returncode, plain.stdout), (0, "done"))
        data = os.path.join(self.tmp, "e.data")
        p = run([WEFT, "record", "-o", data, "--", PROG, "lastthread"], check=False, cwd=self.tmp, timeout=20)
        self.assertEqual((p.returncode, p.stdout), (0, "done"), p.stderr)
        self.assertEqual(self.calls(data).get("step"), 20)
        info = run([WEFT, "info", data]).stdout
        self.assertNotIn("not finished", info)
        self.assertNotIn("warnings:", info)

    def test_exit_from_a_signal_handler(self):
        for _ in range(5):  # the signal lands at a different place each time
            data, p = self.rec(PROG, "sigexit")
            self.assertEqual(p.returncode, 3, p.stderr)
            # (when the signal lands inside the runtime the stop is skipped, not deadlocked:
            # then the chunks already handed off are what is there)
            self.assertGreater(self.calls(data).get("step", 0), 0)

    def test_main_thread_pthread_exit_ends_with_the_last_thread(self):
        # glibc ends the process with exit(0) when its last thread ends; weft's own threads
        # (writers, control) must not keep it alive: it hung before, main a zombie, forever
        data = os.path.join(self.tmp, "e.data")
        p = subprocess.Popen([WEFT, "record", "-o", data, "--", PROG, "mainexit"], cwd=self.tmp,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            self.fail("weft record did not end: the process outlived its last thread")
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out, "last\n")
        self.assertEqual(self.calls(data).get("step"), 40)
        self.assertNotIn("not finished", run([WEFT, "info", data]).stdout)

    def test_shell_exit(self):
        data, p = self.rec("sh", "-c", "exit 7")
        self.assertEqual(p.returncode, 7)
        info = run([WEFT, "info", data]).stdout
        self.assertNotIn("not finished", info)

    def test_raised_and_sent_fatal_signals_still_kill(self):
        for how, sig in (("raise", 11), ("kill", 11), ("raise", 7), ("raise", 4), ("kill", 8)):
            with self.subTest(how=how, sig=sig):
                untraced = run([PROG, how, str(sig)], check=False)
                data, p = self.rec(PROG, how, str(sig))
                self.assertEqual(untraced.returncode, -sig)
                self.assertEqual(p.returncode, -sig, p.stderr)  # weft dies of it too
                self.assertNotIn("survived", p.stdout)
                self.assertEqual(self.calls(data).get("step"), 20)
                name = {11: "SIGSEGV", 7: "SIGBUS", 4: "SIGILL", 8: "SIGFPE"}[sig]
                rows, = self.tp(os.path.join(data, "trace.pftrace"),
                                "select s.name, t.tid from slice s join thread_track tt on s.track_id = tt.id "
                                "join thread t using(utid) where s.name like 'weft: killed%'")
                self.assertEqual([r["name"] for r in rows], [f"weft: killed by {name}"])
                self.assertRegex(run([WEFT, "info", data]).stdout, r"ended by: .+ \(thread \d+\)")

    def test_shell_killing_itself(self):
        data, p = self.rec("sh", "-c", "kill -SEGV $$")
        self.assertEqual(p.returncode, -signal.SIGSEGV)

    def test_fork_execl_keeps_the_child(self):
        data, p = self.rec(PROG, "forkexec")
        self.assertEqual(p.returncode, 0, p.stderr)
        c = self.calls(data)
        self.assertEqual((c.get("step"), c.get("exec_step")), (20, 5))
        info = run([WEFT, "info", data]).stdout
        self.assertIn("processes:  3", info)
        self.assertNotIn("not finished", info)

    def test_closed_descriptors_are_never_written(self):
        log = os.path.join(self.tmp, "own.log")
        data, p = self.rec(PROG, "closefds", log, opts=("--options", "chunk_size=4K"))
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(log) as f:
            self.assertEqual(f.read(), "".join(f"line {k}\n" for k in range(20)))
        self.assertEqual(self.calls(data).get("step"), int(p.stdout))
        self.assertRegex(p.stderr, r"weft: record: \d+ events, 0 dropped")
        self.assertNotIn("failed", p.stderr)

    def test_descriptor_closed_while_the_writer_writes(self):
        # the program closes weft's descriptors 200 times while the writer writes 4K chunks:
        # one close between the writer's check and its write lost the rest of the trace
        # ("writing the trace failed (Bad file descriptor)"); 7 runs of 10 did under load
        load = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
        try:
            for i in range(5):
                log = os.path.join(self.tmp, "loop.log")
                if os.path.exists(log):
                    os.unlink(log)
                data, p = self.rec(PROG, "closeloop", log, "200", opts=("--options", "chunk_size=4K"))
                self.assertEqual(p.returncode, 0, p.stderr)
                with open(log) as f:
                    self.assertEqual(f.read(), "".join(f"line {k}\n" for k in range(200)))
                self.assertRegex(p.stderr, r"weft: record: \d+ events, 0 dropped", f"run {i}")
                self.assertNotIn("failed", p.stderr)
                self.assertEqual(self.calls(data).get("step"), int(p.stdout), f"run {i}")
        finally:
            for q in load:
                q.kill()
                q.wait()


if __name__ == "__main__":
    main()
