"""Recording a parallel job: `LAUNCHER weft record -o D -- ./app` under Open MPI's mpirun,
MPICH's mpiexec (hydra) and Slurm's srun (a one-node Slurm on 127.0.0.1, tests/mpi/
slurm-local.sh): every rank's files in the shared D named HOST-rRANK-PID with the launcher's
rank in the JOB record, an earlier D moved to D.old exactly once, the job's trace.pftrace
written once (by the last recorder, which says so), `weft record -o D -- mpirun ...` still
recording every rank, and separate directories loaded as one trace (`weft convert D1 D2`,
`--ranks`). Each launcher's tests skip, saying why, where it is not installed."""
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import weftlib  # noqa: E402
from weftlib import WEFT, SRC, run, slurm_local, tp_query  # noqa: E402

TMP = tempfile.mkdtemp(prefix="weft-job-")
PLAIN_C = r"""
#include <stdio.h>
#include <stdlib.h>
int job_work(int n) { volatile int s = 0; for (int i = 0; i < n; i++) s += i; return s; }
int main(void) { const char *r = getenv("WEFT_TEST_RANK"); printf("%d\n", job_work(1000)); (void)r; return 0; }
"""
CONVERTED = "converting the job's trace"
OMPI = ["mpirun.openmpi", "--oversubscribe", "--allow-run-as-root"]
MPICH_RUN = ["mpirun.mpich"]
NO_SAN = "built with a sanitizer: the MPI programs and launchers are not" if weftlib.sanitizer() else None


def have(*progs):
    return all(shutil.which(p) for p in progs)


_built = {}


def build(kind):
    """plain (cc), ompi (mpicc.openmpi) or mpich (mpicc.mpich): a program whose job_work /
    main functions are recorded (-finstrument-functions)."""
    if kind in _built:
        return _built[kind]
    exe = os.path.join(TMP, "app_" + kind)
    if kind == "plain":
        src = os.path.join(TMP, "plain.c")
        with open(src, "w") as f:
            f.write(PLAIN_C)
        cc = ["cc"]
    else:
        src = os.path.join(SRC, "tests", "mpi", "job_mpi.c")
        cc = ["mpicc.openmpi" if kind == "ompi" else "mpicc.mpich"]
    run(cc + ["-O0", "-g", "-finstrument-functions", "-o", exe, src])
    _built[kind] = exe
    return exe


class JobCase(unittest.TestCase):
    def fresh(self, name):
        d = os.path.join(TMP, self.id().rsplit(".", 2)[-2] + "_" + name)
        for p in (d, d + ".old"):
            shutil.rmtree(p, ignore_errors=True)
        return d

    def record(self, launcher, d, app, n=4, extra=(), check=True):
        return run(launcher + ["-np", str(n), WEFT, "record", *extra, "-o", d, "--", app],
                   cwd=TMP, timeout=120, check=check)

    def ranks_of(self, d):
        """{rank: pid} from D's file names, asserting every .wmeta is named HOST-rRANK-PID"""
        out = {}
        for m in sorted(glob.glob(os.path.join(d, "*.wmeta"))):
            base = os.path.basename(m)
            mm = re.fullmatch(r"(.+)-r(\d+)-(\d+)\.wmeta", base)
            self.assertTrue(mm, f"{base} is not named HOST-rRANK-PID.wmeta")
            self.assertNotIn(int(mm.group(2)), out, f"rank {mm.group(2)} twice in {d}")
            out[int(mm.group(2))] = int(mm.group(3))
        return out

    def check_job(self, d, stderr, n=4, launcher=None, funcs=("job_work",)):
        """every rank in D (files, JOB records through weft info, processes and slices in
        trace.pftrace through trace_processor), and the trace converted exactly once"""
        ranks = self.ranks_of(d)
        self.assertEqual(sorted(ranks), list(range(n)), f"ranks in {d}: {os.listdir(d)}\n{stderr}")
        self.assertEqual(stderr.count(CONVERTED), 1, f"trace.pftrace not converted exactly once:\n{stderr}")
        info = run([WEFT, "info", d]).stdout
        jobs = re.findall(r"job:\s+rank (\d+) of (\d+) \(local (-?\d+) of (\d+)\), (\w+) job (\S+)", info)
        self.assertEqual(sorted(int(j[0]) for j in jobs), list(range(n)), info)
        self.assertTrue(all(int(j[1]) == n for j in jobs), jobs)
        self.assertEqual(len({j[5] for j in jobs}), 1, f"one job id expected: {jobs}")
        if launcher:
            self.assertEqual({j[4] for j in jobs}, {launcher})
        # (processes counted, not pids: other hosts' pids are made unique in the trace)
        q = tp_query(os.path.join(d, "trace.pftrace"),
                     "select count(distinct upid) as n from process where pid > 0 and upid in "
                     "(select upid from thread join thread_track tt using(utid) join slice s on s.track_id = tt.id)",
                     "select count(distinct upid) as n from slice s join thread_track tt on s.track_id = tt.id "
                     f"join thread t using(utid) where s.name in ({','.join(repr(f) for f in funcs)})")
        self.assertEqual(q[0]["rows"][0]["n"], n, q)
        self.assertEqual(q[1]["rows"][0]["n"], n, q)
        return ranks


@unittest.skipIf(NO_SAN, NO_SAN)
@unittest.skipUnless(have("mpirun.openmpi", "mpicc.openmpi"), "Open MPI not installed (openmpi-bin, libopenmpi-dev)")
class OpenMPI(JobCase):
    def test_plain_app_every_rank_once_converted(self):
        d = self.fresh("D")
        p = self.record(OMPI, d, build("plain"))
        self.check_job(d, p.stderr, launcher="openmpi")

    def test_mpi_app_rerun_moves_d_once(self):
        d = self.fresh("D")
        p1 = self.record(OMPI, d, build("ompi"))
        first = self.check_job(d, p1.stderr, launcher="openmpi", funcs=("main",))
        with open(os.path.join(d, ".weft-job")) as f:
            job1 = f.read()
        p2 = self.record(OMPI, d, build("ompi"))
        second = self.check_job(d, p2.stderr, launcher="openmpi", funcs=("main",))
        # the earlier run is in D.old, whole and once; D holds only the new job
        self.assertEqual(self.ranks_of(d + ".old"), first)
        self.assertFalse(os.path.exists(d + ".old.old"))
        self.assertEqual(set(first.values()) & set(second.values()), set())
        with open(os.path.join(d, ".weft-job")) as f:
            self.assertNotEqual(f.read(), job1)
        self.assertTrue(os.path.exists(os.path.join(d + ".old", "trace.pftrace")))

    def test_host_option_names_files_and_process(self):
        d = self.fresh("D")
        p = self.record(OMPI, d, build("plain"), n=2, extra=["--host", "node-b.x"])
        self.check_job(d, p.stderr, n=2)
        self.assertTrue(all(f.startswith("node-b.x-r") for f in os.listdir(d) if f.endswith(".wmeta")),
                        os.listdir(d))
        self.assertEqual(re.findall(r"host:\s+(\S+)", run([WEFT, "info", d]).stdout), ["node-b.x"] * 2)

    def test_two_host_names_share_d(self):
        """ranks 2-3 recorded as host nodeB (an MPMD part): one D, converted once, when the
        job's last rank ended, though no host has all four"""
        d, app = self.fresh("D"), build("plain")
        rec = [WEFT, "record", "-o", d]
        p = run(OMPI + ["-np", "2"] + rec + ["--", app, ":", "-np", "2"] + rec[:2] + ["--host", "nodeB"] +
                rec[2:] + ["--", app], cwd=TMP, timeout=120)
        self.check_job(d, p.stderr)
        names = sorted(f.split("-r")[0] + "-r" + f.split("-r")[1].split("-")[0]
                       for f in os.listdir(d) if f.endswith(".wmeta"))
        self.assertEqual(names, ["nodeB-r2", "nodeB-r3", f"{os.uname().nodename}-r0", f"{os.uname().nodename}-r1"]
                         if "nodeB" < os.uname().nodename else
                         [f"{os.uname().nodename}-r0", f"{os.uname().nodename}-r1", "nodeB-r2", "nodeB-r3"])

    def test_record_around_mpirun(self):
        d = self.fresh("D")
        p = run([WEFT, "record", "-o", d, "--"] + OMPI + ["-np", "4", build("ompi")], cwd=TMP, timeout=120)
        # mpirun's own files are named by its pid only, the ranks' by host and rank
        metas = [os.path.basename(m) for m in glob.glob(os.path.join(d, "*.wmeta"))]
        ranked = sorted(int(re.fullmatch(r".+-r(\d+)-\d+\.wmeta", m).group(1)) for m in metas if "-r" in m)
        self.assertEqual(ranked, [0, 1, 2, 3], metas)
        self.assertNotIn(CONVERTED, p.stderr)  # one recorder: the ordinary conversion
        self.assertTrue(os.path.exists(os.path.join(d, "trace.pftrace")), p.stderr)

    def test_runtime_alone_ranks_share_directory(self):
        """without weft record (the preload library and WEFT_OPTIONS set by hand) no rank moves
        the directory the others write into"""
        d = self.fresh("D")
        os.makedirs(d)
        open(os.path.join(d, "1.wmeta"), "w").close()  # an earlier run's file, left in place
        run(OMPI + ["-np", "4", "-x", "LD_PRELOAD=" + os.path.join(weftlib.BUILD, "libweft-preload.so"),
                    "-x", f"WEFT_OPTIONS=output={d}", build("plain")], cwd=TMP, timeout=120)
        self.assertEqual(sorted(self.ranks_of_named(d)), [0, 1, 2, 3], os.listdir(d))
        self.assertFalse(os.path.exists(d + ".old"))

    def ranks_of_named(self, d):
        return [int(re.fullmatch(r".+-r(\d+)-\d+\.wmeta", m).group(1))
                for m in map(os.path.basename, glob.glob(os.path.join(d, "*-r*.wmeta")))]

    def test_convert_ranks_subset(self):
        d = self.fresh("D")
        p = self.record(OMPI, d, build("plain"))
        ranks = self.check_job(d, p.stderr)
        out = os.path.join(TMP, "sub.pftrace")
        run([WEFT, "convert", d, "--ranks", "1-2", "-o", out])
        q = tp_query(out, "select pid from process where pid > 0 order by pid")
        got = sorted(r["pid"] for r in q[0]["rows"] if r["pid"] in ranks.values())
        self.assertEqual(got, sorted([ranks[1], ranks[2]]))
        self.assertNotIn(ranks[0], [r["pid"] for r in q[0]["rows"]])
        bad = run([WEFT, "convert", d, "--ranks", "2-1", "-o", out], check=False)
        self.assertEqual(bad.returncode, 2, bad.stderr)


@unittest.skipIf(NO_SAN, NO_SAN)
@unittest.skipUnless(have("mpirun.mpich", "mpicc.mpich"), "MPICH not installed (mpich, libmpich-dev)")
class MPICH(JobCase):
    def test_mpi_app_every_rank_once_converted(self):
        d = self.fresh("D")
        p = self.record(MPICH_RUN, d, build("mpich"))
        self.check_job(d, p.stderr, launcher="hydra", funcs=("main",))

    def test_missing_rank_said(self):
        """a job directory without one rank's files (deleted): every reading command says in
        one warning which ranks of how many are not in the trace; convert --ranks, which leaves
        ranks out on purpose, does not; nor does any command on the whole directory"""
        d = self.fresh("D")
        p = self.record(MPICH_RUN, d, build("mpich"), n=3)
        self.check_job(d, p.stderr, n=3, launcher="hydra", funcs=("main",))
        out = os.path.join(TMP, "missing.pftrace")
        self.assertNotIn("of 3 not in the trace", run([WEFT, "info", d]).stdout + p.stderr)
        self.assertNotIn("of 3 not in the trace", run([WEFT, "convert", d, "-o", out]).stderr)
        for f in glob.glob(os.path.join(d, "*-r1-*")):
            os.unlink(f)
        said = re.compile(r"job \S+: rank 1 of 3 not in the trace \(no readable file of it: deleted, damaged, "
                          r"or run without weft\)")
        info = run([WEFT, "info", d]).stdout
        self.assertRegex(info, r"\nwarnings:\n  " + said.pattern, info)
        for cmd in (["convert", d, "-o", out], ["report", "--mpi", d],
                    ["export", "--otf2", d, "-o", os.path.join(TMP, "missing.otf2")]):
            r = run([WEFT] + cmd, check=cmd[0] != "export")
            err = r.stderr
            if cmd[0] == "export" and "OTF2 unavailable" in err:
                continue  # (a build without libotf2)
            self.assertEqual(r.returncode, 0, err)
            self.assertEqual(len(re.findall(rf"^weft: {cmd[0]}: warning: " + said.pattern + "$", err, re.M)), 1,
                             (cmd, err))
        err = run([WEFT, "convert", d, "--ranks", "0,2", "-o", out]).stderr
        self.assertNotIn("of 3 not in the trace", err)

    def test_mpi_events_lost_said(self):
        """ranks whose MPI wrappers counted calls but whose events are not in the trace (never
        written: killed with SIGKILL; here the events files deleted): report --mpi says so,
        not that the program made no MPI calls"""
        d = self.fresh("D")
        p = self.record(MPICH_RUN, d, build("mpich"), n=2)
        self.check_job(d, p.stderr, n=2, launcher="hydra", funcs=("main",))
        for f in glob.glob(os.path.join(d, "*.wevents")):
            os.unlink(f)
        r = run([WEFT, "report", "--mpi", d], check=False)
        self.assertEqual((r.returncode, r.stdout), (1, ""), r.stderr)
        self.assertRegex(r.stderr, r"(?m)^weft: report: --mpi: none of the \d+ MPI calls that 2 ranks recorded is in "
                                   r"the trace \(their events were never written, or their files are gone: killed "
                                   r"with SIGKILL\?\)$")

    def test_through_a_shell(self):
        """hydra names no job: the proxy every rank descends from does, also through a shell"""
        d = self.fresh("D")
        p = run(MPICH_RUN + ["-np", "2", "sh", "-c", f'"$0" record -o {d} -- {build("plain")}; exit $?', WEFT],
                cwd=TMP, timeout=120)
        self.check_job(d, p.stderr, n=2, launcher="hydra")
        # the id every proxy of the mpiexec shares (one per host): its control port
        ids = set(re.findall(r"hydra job (\S+)", run([WEFT, "info", d]).stdout))
        self.assertEqual(len(ids), 1, ids)
        self.assertRegex(ids.pop(), r"^hydra\.[^:]+:\d+\.\d+$")


@unittest.skipIf(NO_SAN, NO_SAN)
@unittest.skipUnless(have("srun", "sinfo", "slurmctld", "slurmd") or
                     (have("srun", "sinfo") and os.path.exists("/usr/sbin/slurmd")),
                     "Slurm not installed (slurmctld, slurmd, slurm-client)")
@unittest.skipUnless(os.geteuid() == 0, "the local Slurm runs as root")
class Slurm(JobCase):
    @classmethod
    def setUpClass(cls):
        cls.sdir = os.path.join(TMP, "slurm")
        slurm_local(cls, cls.sdir)
        os.environ["SLURM_CONF"] = os.path.join(cls.sdir, "slurm.conf")

    def srun(self, mpi, d, app):
        return run(["srun", "-n", "4", "--overcommit", f"--mpi={mpi}", WEFT, "record", "-o", d, "--", app],
                   cwd=TMP, timeout=120)

    @unittest.skipUnless(have("mpicc.openmpi"), "Open MPI not installed")
    def test_srun_pmix_openmpi(self):
        d = self.fresh("D")
        self.srun("none", d, build("plain"))  # an earlier run: moved aside once
        p = self.srun("pmix", d, build("ompi"))
        self.check_job(d, p.stderr, launcher="slurm", funcs=("main",))
        self.assertEqual(sorted(self.ranks_of(d + ".old")), [0, 1, 2, 3])

    @unittest.skipUnless(have("mpicc.mpich"), "MPICH not installed")
    def test_srun_pmi2_mpich(self):
        d = self.fresh("D")
        p = self.srun("pmi2", d, build("mpich"))
        self.check_job(d, p.stderr, launcher="slurm", funcs=("main",))
        # the readers as a Slurm job step (issue 29 item 4): the same output as one process
        alone = run([WEFT, "report", "--mpi", d]).stdout
        p = run(["srun", "-n", "2", "--overcommit", WEFT, "report", "--mpi", d], cwd=TMP, timeout=120)
        self.assertEqual(p.stdout, alone)
        self.assertIn("(the ranks of the trace analysed by 2 ranks)", p.stderr)
        one, two = os.path.join(TMP, "one.pftrace"), os.path.join(TMP, "two.pftrace")
        run([WEFT, "convert", "-q", d, "-o", one])
        p = run(["srun", "-n", "2", "--overcommit", WEFT, "convert", d, "-o", two], cwd=TMP, timeout=120)
        self.assertIn("(converted by 2 ranks)", p.stderr)
        with open(one, "rb") as a, open(two, "rb") as b:
            self.assertTrue(a.read() == b.read(), "srun -n 2 weft convert: not the one-process bytes")
        self.assertEqual([n for n in os.listdir(d) if n.startswith(".weft-report")], [])


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
class Race(JobCase):
    def test_recorders_started_together_share_d(self):
        """Recorders of one job started at once (a launcher's environment set by hand, so no
        MPI is needed), job after job, under load: each job's D holds exactly its ranks, the
        one before is in D.old whole, and exactly one recorder converted."""
        d, app, n = self.fresh("D"), build("plain"), 6
        load = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
        try:
            prev = None
            for it in range(25):
                env = dict(os.environ, OMPI_COMM_WORLD_SIZE=str(n), OMPI_COMM_WORLD_LOCAL_SIZE=str(n),
                           OMPI_MCA_ess_base_jobid=f"race{it}")
                procs = [subprocess.Popen([WEFT, "record", "-o", d, "--", app], cwd=TMP, text=True,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                          env=dict(env, OMPI_COMM_WORLD_RANK=str(r), OMPI_COMM_WORLD_LOCAL_RANK=str(r)))
                         for r in range(n)]
                errs = "".join(p.communicate(timeout=60)[1] for p in procs)
                self.assertEqual([p.returncode for p in procs], [0] * n, errs)
                self.assertEqual(errs.count(CONVERTED), 1, f"iteration {it}:\n{errs}")
                now = self.ranks_of(d)
                self.assertEqual(sorted(now), list(range(n)), f"iteration {it}: {sorted(os.listdir(d))}\n{errs}")
                with open(os.path.join(d, ".weft-job")) as f:
                    self.assertEqual(f.read().strip(), f"race{it}")
                self.assertTrue(os.path.exists(os.path.join(d, "trace.pftrace")))
                if prev is not None:
                    self.assertEqual(self.ranks_of(d + ".old"), prev, f"iteration {it}")
                prev = now
        finally:
            for p in load:
                p.kill()
                p.wait()


    def test_killed_recorder_not_waited_for(self):
        """a recorder killed with SIGKILL (its registration stays) does not keep the job's last
        recorder from converting. (WEFT_NO_DETACH: the recorder stays the program's parent, as
        under Slurm; under mpirun the supervisor, in a session of its own, survives the kill and
        says how the rank ended: test_mpi_failing.py)"""
        d, app = self.fresh("D"), build("plain")
        env = dict(os.environ, OMPI_COMM_WORLD_SIZE="2", OMPI_COMM_WORLD_LOCAL_SIZE="2",
                   OMPI_MCA_ess_base_jobid="killed", WEFT_NO_DETACH="1")
        victim = subprocess.Popen([WEFT, "record", "-o", d, "--", "sleep", "30"], cwd=TMP,
                                  env=dict(env, OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_LOCAL_RANK="0"),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        for _ in range(100):
            if glob.glob(os.path.join(d, ".weft-run-*")):
                break
            time.sleep(0.05)
        os.killpg(victim.pid, signal.SIGKILL)  # the recorder and its program
        victim.wait()
        p = run([WEFT, "record", "-o", d, "--", app], cwd=TMP,
                env=dict(env, OMPI_COMM_WORLD_RANK="1", OMPI_COMM_WORLD_LOCAL_RANK="1"))
        self.assertIn(CONVERTED, p.stderr)
        self.assertTrue(os.path.exists(os.path.join(d, "trace.pftrace")))


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
class Merge(JobCase):
    def test_two_directories_one_trace(self):
        app = build("plain")
        a, b = self.fresh("A"), self.fresh("B")
        run([WEFT, "record", "--host", "nodeA", "-o", a, "--", app], cwd=TMP)
        run([WEFT, "record", "--host", "nodeB", "-o", b, "--", app], cwd=TMP)
        out = os.path.join(TMP, "all.pftrace")
        run([WEFT, "convert", a, b, "-o", out])
        # (a second host's pids are made unique in the trace: processes counted, not pids)
        q = tp_query(out, "select count(distinct upid) as n from slice s join thread_track tt on s.track_id = tt.id "
                          "join thread using(utid) where s.name = 'job_work'")
        self.assertEqual(q[0]["rows"][0]["n"], 2, q)
        info = run([WEFT, "info", a, b]).stdout
        self.assertEqual(sorted(re.findall(r"host:\s+(\S+)", info)), ["nodeA", "nodeB"])
        rep = run([WEFT, "report", a, b])
        self.assertIn("job_work", rep.stdout)
        missing = run([WEFT, "convert", a, os.path.join(TMP, "nothere"), "-o", out], check=False)
        self.assertEqual(missing.returncode, 1, missing.stderr)


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    weftlib.main()
