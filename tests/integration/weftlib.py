"""Helpers for the integration tests: run a traced program, convert its trace, and check the
result with independent readers - protoc against Perfetto's own schema, Perfetto's
trace_processor (wasm, under Node) queried with SQL, and Python's json module."""
import atexit
import json
import os
import pty
import re
import select
import shutil
import signal
import ctypes
import ctypes.util
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import zlib

BUILD = os.path.abspath(os.environ.get("WEFT_BUILD", os.path.join(os.path.dirname(__file__), "..", "..", "build")))
SRC = os.path.abspath(os.environ.get("WEFT_SRC", os.path.join(os.path.dirname(__file__), "..", "..")))
WEFT = os.path.join(BUILD, "weft")
PROTO = os.path.abspath(os.path.join(SRC, "..", "shared", "perfetto", "perfetto_trace.proto"))
TP = os.path.join(SRC, "tests", "tp", "tp_query.mjs")
UNKNOWN_FIELD = re.compile(r"^\s*\d+: ", re.M)


def sanitizer():
    """The sanitizers this build was made with (WEFT_SANITIZE), or ''."""
    try:
        with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("WEFT_SANITIZE:"):
                    return line.strip().split("=", 1)[1]
    except OSError:
        pass
    return ""


HYDRA = ("mpirun.mpich", "mpiexec.mpich", "mpiexec.hydra")


class HeldStdin:
    """A child's stdin that has no data and no end: a pipe whose write end this process holds
    until the block ends. For MPICH's Hydra (any command that has it in its arguments, as
    `weft record -- mpirun.mpich ...`): Hydra forwards its stdin to rank 0, and when that stdin
    ends (/dev/null) while a short job is already ending, mpiexec itself can die of SIGPIPE
    (MPICH 4.0.2: 3-4 of 300 two-rank `/bin/echo` jobs beside two busy loops; 0 of 400 with
    this). Other commands get /dev/null. `with HeldStdin(cmd) as fd: subprocess.run(..., stdin=fd)`."""
    def __init__(self, cmd):
        self.hydra = any(os.path.basename(str(a)) in HYDRA for a in cmd)
        self.fds = ()

    def __enter__(self):
        if not self.hydra:
            return subprocess.DEVNULL
        self.fds = os.pipe()
        return self.fds[0]

    def __exit__(self, *exc):
        for fd in self.fds:
            os.close(fd)
        return False


def run(cmd, env=None, cwd=None, check=True, timeout=240):
    e = dict(os.environ)
    e.update(env or {})
    # stdin: not whatever the test harness left (a launcher forwards its stdin); see HeldStdin
    with HeldStdin(cmd) as stdin:
        p = subprocess.run(cmd, env=e, cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=stdin)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd} exited {p.returncode}\nstdout:{p.stdout}\nstderr:{p.stderr}")
    return p


class _TraceProcessor:
    """One trace_processor (tp_query.mjs --serve) for every query of this test process: its wasm
    engine costs ~2 s of CPU to start, once instead of once per call. A new trace is read by a
    fresh instance inside it (see tp_query.mjs). Restarted after a failure or every 40 traces
    (wasm memory does not shrink)."""
    LIMIT = 40

    def __init__(self):
        self.proc = None
        self.used = 0

    def _start(self):
        self.err = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(["node", TP, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, text=True)
        self.used = 0

    def close(self):
        if self.proc:
            self.proc.kill()
            self.proc.wait()
            self.err.close()
            self.proc = None

    def query(self, trace, queries, timeout=300):
        """Returns tp_query.mjs's document for TRACE and QUERIES; raises AssertionError with
        trace_processor's stderr if it cannot answer. Where its wasm heap could not grow ("Out
        of memory": a large trace read while the tests beside it hold much of the machine's
        memory; once in a pristine-root CI stage, on a fresh instance), it is asked once more,
        by a fresh instance, saying so on stderr: the reader's memory, not the trace's content."""
        try:
            return self._query(trace, queries, timeout)
        except AssertionError as e:
            if "Out of memory" not in str(e):
                raise
            print(f"trace_processor ran out of memory on {trace}: asked again, once", file=sys.stderr)
            return self._query(trace, queries, timeout)

    def _query(self, trace, queries, timeout):
        if self.proc is None or self.proc.poll() is not None or self.used >= self.LIMIT:
            self.close()
            self._start()
        self.used += 1
        try:
            self.proc.stdin.write(json.dumps({"trace": os.path.abspath(trace), "queries": list(queries)}) + "\n")
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
            line = self.proc.stdout.readline() if ready else ""
        except OSError as e:
            line = ""
            why = str(e)
        else:
            why = "no answer" if ready else f"no answer within {timeout} s"
        if not line:
            self.err.seek(0)
            err = self.err.read()[-4000:]
            self.close()
            raise AssertionError(f"trace_processor: {why} for {trace}\nstderr: {err}")
        doc = json.loads(line)
        if isinstance(doc, dict):
            self.close()
            raise AssertionError(f"trace_processor failed on {trace}: {doc.get('fatal')}")
        return doc


_TP = _TraceProcessor()
atexit.register(_TP.close)

# Open MPI keeps its session directories under TMPDIR/ompi.HOST.UID, one tree shared by every
# mpirun of the user: two tests starting or ending jobs at once raced on it in a CI run ("A call
# to mkdir was unable to create the desired directory: /tmp/ompi.vm.0, File exists"). Each test
# process gets a tree of its own (orte_ for Open MPI 4, prte_ for 5), removed when it ends.
_OMPI_TMP = tempfile.mkdtemp(prefix="weft-ompi-")
os.environ.setdefault("OMPI_MCA_orte_tmpdir_base", _OMPI_TMP)
os.environ.setdefault("PRTE_MCA_prte_tmpdir_base", _OMPI_TMP)
atexit.register(shutil.rmtree, _OMPI_TMP, True)


def slurm_local(cls, sdir):
    """Starts the one-node Slurm of tests/mpi/slurm-local.sh for test class cls. Its stop (by the
    daemons' pids) is a class cleanup, registered first: it runs even when the start fails, times
    out or setUpClass raises later, so no daemon outlives the tests. SkipTest when it does not
    start."""
    script = os.path.join(SRC, "tests", "mpi", "slurm-local.sh")
    cls.addClassCleanup(subprocess.run, ["bash", script, "stop", sdir], capture_output=True, timeout=60)
    try:
        p = subprocess.run(["bash", script, "start", sdir], capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        raise unittest.SkipTest("the local Slurm did not start in 90 s")
    if p.returncode:
        raise unittest.SkipTest(f"the local Slurm did not start: {p.stderr.strip()[-500:]}")


def tp_query(trace, *queries):
    """Runs SQL against TRACE in Perfetto's trace_processor: [{"sql", "rows" or "error"}]."""
    return _TP.query(trace, queries)


def on_tty(cmd, cwd, ready, interrupt, timeout=120):
    """cmd on a new pseudo-terminal, as a user runs it; once its output holds READY (bytes),
    interrupt(pid, terminal fd) once (os.write(fd, b"\\x03") is Ctrl-C: the terminal signals
    the whole job). Returns (interrupted, exit code, terminal output with \\n line ends); past
    TIMEOUT seconds the command is killed."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.chdir(cwd)
            os.execv(cmd[0], cmd)
        finally:
            os._exit(127)
    buf, sent, deadline, status = b"", False, time.time() + timeout, None
    try:
        while time.time() < deadline:
            # the command may end while the terminal stays open (in some chroots a read of the
            # master never says EIO): its end is checked too, then what it wrote is read
            if status is None:
                done, st = os.waitpid(pid, os.WNOHANG)
                if done:
                    status = st
            if select.select([fd], [], [], 0 if status is not None else 0.5)[0]:
                try:
                    data = os.read(fd, 4096)
                except OSError:  # EIO: every process of the terminal is gone
                    break
                if not data:
                    break
                buf += data
            elif status is not None:
                break
            if not sent and ready in buf:
                interrupt(pid, fd)
                sent = True
        else:
            if status is None:
                os.kill(pid, signal.SIGKILL)
        if status is None:
            _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
    return sent, os.waitstatus_to_exitcode(status), buf.decode(errors="replace").replace("\r\n", "\n")


def _varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def inflate_packets(raw):
    """A Trace (repeated field 1 packets) with every packet that holds compressed_packets
    (field 50, zlib) replaced by the packets it holds: a plain trace with the same content."""
    out, i = bytearray(), 0
    while i < len(raw):
        start = i
        tag, i = _varint(raw, i)
        assert tag == (1 << 3) | 2, f"unexpected top-level tag {tag} at {start}"
        n, i = _varint(raw, i)
        body, i = raw[i:i + n], i + n
        j, inner = 0, None
        if body:
            t, j2 = _varint(body, 0)
            if t == (50 << 3) | 2:
                m, j3 = _varint(body, j2)
                if j3 + m == len(body):
                    inner = zlib.decompress(body[j3:j3 + m])
        out += inflate_packets(inner) if inner is not None else raw[start:i]
    return bytes(out)


class TraceTest(unittest.TestCase):
    """Gives each test a scratch directory and the converters/readers as methods."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="weft-test-")
        # a cleanup, not tearDown: it runs also where a subclass's setUp skips or fails after this
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def record(self, prog, args=(), options="", env=None):
        out = os.path.join(self.tmp, "trace.data")
        opts = f"output={out}" + (":" + options if options else "")
        e = {"WEFT_OPTIONS": opts}
        e.update(env or {})
        p = run([os.path.join(BUILD, prog), *map(str, args)], env=e, cwd=self.tmp)
        return out, p

    def convert(self, data, name, *extra, check=True):
        out = os.path.join(self.tmp, name)
        p = run([WEFT, "convert", data, "-o", out, *extra], check=check)
        return out, p

    def protoc_decode(self, pftrace, inflate=True):
        """Decodes with Perfetto's schema; fails on any field the schema does not know.
        Packets in TracePacket.compressed_packets batches are decoded too: the file as it is,
        then (inflate=True) with every batch inflated in place, whose text is returned.
        Returns None (saying so) where the schema is absent."""
        if not os.path.exists(PROTO):
            print(f"SKIP protoc check: {PROTO} absent", file=sys.stderr)
            return None
        with open(pftrace, "rb") as f:
            raw = f.read()
        text = self._protoc(raw)
        return self._protoc(inflate_packets(raw)) if inflate and "compressed_packets:" in text else text

    def _protoc(self, data):
        p = subprocess.run(["protoc", "--decode=perfetto.protos.Trace", "-I", os.path.dirname(PROTO),
                            PROTO], input=data, capture_output=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout.decode("utf-8", "replace")
        unknown = UNKNOWN_FIELD.findall(out)
        self.assertEqual(unknown, [], "fields unknown to the Perfetto schema")
        return out

    def tp(self, pftrace, *queries):
        """Runs SQL in Perfetto's trace_processor; returns a list of row lists."""
        res = tp_query(pftrace, *queries)
        for r in res:
            self.assertNotIn("error", r, r.get("sql"))
        return [r["rows"] for r in res]

    def tp_no_errors(self, pftrace):
        rows, = self.tp(pftrace, "select name, idx, severity, value from stats where value > 0 "
                                 "and severity in ('error', 'data_loss')")
        self.assertEqual(rows, [], "trace_processor reported errors or data loss")

    def load_json(self, path):
        with open(path) as f:
            doc = json.load(f)
        ev = doc["traceEvents"]
        ts = [e["ts"] for e in ev if e["ph"] != "M"]
        self.assertEqual(ts, sorted(ts), "JSON events are not sorted by ts")
        return doc


def _flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _flatten(t)
        else:
            yield t


def main():
    """Runs the calling module's tests. WEFT_TEST_SHARD=I/N (set by CTest, see
    tests/CMakeLists.txt) runs only every Nth test method starting at the Ith, so one slow file
    spreads over several test processes; names given on the command line run just those."""
    shard = os.environ.get("WEFT_TEST_SHARD")
    if not shard or len(sys.argv) > 1:
        unittest.main(verbosity=2)
        return
    i, n = map(int, shard.split("/"))
    tests = sorted(_flatten(unittest.defaultTestLoader.loadTestsFromModule(sys.modules["__main__"])),
                   key=lambda t: t.id())
    mine = unittest.TestSuite(t for k, t in enumerate(tests) if k % n == i)
    print(f"shard {i}/{n}: {mine.countTestCases()} of {len(tests)} tests", file=sys.stderr)
    ok = unittest.TextTestRunner(verbosity=2).run(mine).wasSuccessful()
    sys.exit(0 if ok else 1)


def meta_records(path):
    """(type, payload) of each record of a .wmeta file (docs/format.md)."""
    with open(path, "rb") as f:
        b = f.read()
    i = 32
    while i + 8 <= len(b):
        t, _, n = struct.unpack_from("<HHI", b, i)
        if t == 0 and n == 0:
            break
        yield t, b[i + 8:i + 8 + n]
        i += 8 + n


class _ZIn(ctypes.Structure):
    _fields_ = [("src", ctypes.c_void_p), ("size", ctypes.c_size_t), ("pos", ctypes.c_size_t)]


class _ZOut(ctypes.Structure):
    _fields_ = [("dst", ctypes.c_void_p), ("size", ctypes.c_size_t), ("pos", ctypes.c_size_t)]


class ZstdStream:
    """A zstd decoding stream through libzstd (the library weft uses; Python 3.11 has no zstd
    module): feed(block, size) returns the SIZE bytes the block decodes to."""
    _c, _In, _Out = ctypes, _ZIn, _ZOut

    def __init__(self):
        c = self._c
        self.lib = c.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
        self.lib.ZSTD_createDCtx.restype = c.c_void_p
        self.lib.ZSTD_freeDCtx.argtypes = [c.c_void_p]
        self.lib.ZSTD_decompressStream.restype = c.c_size_t
        self.lib.ZSTD_decompressStream.argtypes = [c.c_void_p, c.POINTER(self._Out), c.POINTER(self._In)]
        self.lib.ZSTD_isError.argtypes = [c.c_size_t]
        self.dctx = self.lib.ZSTD_createDCtx()

    def feed(self, block, size):
        c = self._c
        src = c.create_string_buffer(block, len(block))
        dst = c.create_string_buffer(max(size, 1))
        i, o = self._In(c.cast(src, c.c_void_p), len(block), 0), self._Out(c.cast(dst, c.c_void_p), size, 0)
        while i.pos < i.size and o.pos < o.size:
            rc = self.lib.ZSTD_decompressStream(self.dctx, c.byref(o), c.byref(i))
            if self.lib.ZSTD_isError(rc):
                raise ValueError("zstd stream: does not decode")
        if o.pos != size or i.pos != i.size:
            raise ValueError(f"zstd stream: {o.pos} bytes, not {size}")
        return dst.raw[:size]

    def __del__(self):
        self.lib.ZSTD_freeDCtx(self.dctx)


def maps_records(path):
    """The text of each MAPS record of a .wmeta file, in order: type 11 plain, type 43 (1.11)
    u64 ticks, u64 length, u32 flags (1: continues the previous one's stream), u32 checksum, a
    block of the file's zstd stream."""
    stream = None
    for t, p in meta_records(path):
        if t == 11:
            yield p[8:].decode()
        elif t == 43:
            size, flags = struct.unpack_from("<QI", p, 8)
            if not flags & 1:
                stream = ZstdStream()
            yield stream.feed(p[24:], size).decode()


def mpich_app_job(cls, prefix, name="D", np=4):
    """For a test class's setUpClass: skips under a sanitizer (the MPI launchers and libraries
    are not built with it); in a new temporary cls.dir (removed after the class), compiles
    tests/mpi/mpi_app.c with MPICH and records it on NP ranks (--no-convert) into cls.dir/NAME;
    returns that directory."""
    if sanitizer():
        raise unittest.SkipTest("built with a sanitizer: the MPI launchers and libraries are not")
    cls.dir = tempfile.mkdtemp(prefix=prefix)
    cls.addClassCleanup(shutil.rmtree, cls.dir, ignore_errors=True)
    exe = os.path.join(cls.dir, "mpi_app")
    run(["mpicc.mpich", "-O1", "-Wno-stringop-overflow", "-o", exe, os.path.join(SRC, "tests", "mpi", "mpi_app.c")])
    data = os.path.join(cls.dir, name)
    run(["mpirun.mpich", "-np", str(np), WEFT, "record", "-q", "--no-convert", "-o", data, "--", exe], cwd=cls.dir)
    return data

