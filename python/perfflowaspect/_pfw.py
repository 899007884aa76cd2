"""The .pfw file: one process's part of the weft trace, as the Chrome trace events
PerfFlowAspect writes, for the tools that read its files.

At the end of a process, its own files of the trace directory (named by its pid) are linked
into a scratch directory and converted by the weft CLI (`weft convert -f json`, B/E pairs or
X events); each event line of that output becomes one line here with PerfFlowAspect's keys:
name, cat (the function's module for decorated functions), pid, tid, ts (microseconds of
wall-clock time, as PerfFlowAspect's time.time() stamps), ph, and args, dur, id, scope where
they apply. Layout as PerfFlowAspect's: "array" is '[' and then one event per line, each
followed by ','; "object" is a {"displayTimeUnit": "us", "otherData": {}, "traceEvents": [
header and then the same lines, indented. Like PerfFlowAspect's files they are left open:
Chrome's JSON array format allows that, and the tools that append ' {}]' keep working.

Phases: B/E (log-event=verbose) or X (compact) for slices; i for instants (before/after
pointcuts, exception marks); b/e for async slices, with PerfFlowAspect's integer ids and
"scope"; C for counters (cpu-mem-usage)."""
import json
import os
import re
import shutil
import subprocess
import tempfile


def find_cli():
    """The `weft` executable: $WEFT_CLI, next to the package (BUILD/weft for BUILD/python,
    PREFIX/bin/weft for PREFIX/lib/python3*/dist-packages), or on PATH."""
    exe = os.environ.get("WEFT_CLI")
    if exe:
        return exe
    import weft
    top = os.path.dirname(os.path.dirname(os.path.abspath(weft.__file__)))
    for cand in (os.path.join(top, "..", "weft"), os.path.join(top, "..", "..", "..", "bin", "weft")):
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return os.path.normpath(cand)
    return shutil.which("weft")


# PID[.G].wmeta, PID[.G]-N.wevents; in a parallel job HOST-rRANK-PID[.G]...
_TRACE_FILE = re.compile(r"(?:.+-r\d+-)?(\d+)(?:\.\d+)?(?:\.wmeta|-\d+\.wevents)")


def _own_files(trace_dir, pid):
    """This process's files of the trace directory: PID.wmeta, PID-N.wevents, and those of its
    later images after exec (PID.G.*); in a job named HOST-rRANK-PID..."""
    out = []
    for n in os.listdir(trace_dir):
        m = _TRACE_FILE.fullmatch(n)
        if m and int(m.group(1)) == pid:
            out.append(n)
    return out


def _clean_env():
    """The environment for the converter: not itself traced. The variables are set rather
    than left out, as weft's preload (under `weft record`) adds those an exec lacks."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WEFT_") or k == "WEFT_CLI"}
    pre = env.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = " ".join(x for x in pre.replace(":", " ").split()
                                 if "weft" not in os.path.basename(x))
    env["WEFT_OPTIONS"] = "enable=0"
    env["WEFT_SESSION"] = ""
    return env


def _events(lines, wall_offset_us, scopes):
    """PerfFlowAspect-style event dicts from the lines of weft's Chrome JSON output."""
    stacks = {}  # (pid, tid) -> [(name, cat)] of open B events, for the E events' names
    for line in lines:
        line = line.strip()
        if not line.startswith("{") or line.startswith('{"displayTimeUnit"'):
            continue
        if line.endswith(","):
            line = line[:-1]
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        ph = ev.get("ph")
        if ph not in ("B", "E", "X", "i", "I", "b", "e", "n", "C"):
            continue  # metadata (M), flows
        key = (ev.get("pid"), ev.get("tid"))
        if ph == "E":
            st = stacks.get(key)
            name, cat = st.pop() if st else ("", "")
        else:
            name, cat = ev.get("name", ""), ev.get("cat", "")
            if ph == "B":
                stacks.setdefault(key, []).append((name, cat))
        out = {"name": name, "cat": cat, "pid": ev.get("pid"), "tid": ev.get("tid", ev.get("pid")),
               "ts": round(ev.get("ts", 0) + wall_offset_us, 3), "ph": ph}
        if ph in ("b", "e", "n"):
            aid = ev.get("id", 0)
            try:
                aid = int(aid, 16) if isinstance(aid, str) else aid
            except ValueError:
                pass
            out["id"] = aid
            out["scope"] = scopes.get(name)
        elif ph in ("i", "I"):
            out["s"] = ev.get("s", "t")
        if ph == "C":
            args = ev.get("args") or {}
            out["args"] = {name: args.get("value", 0)} if "value" in args else args
        elif ev.get("args"):
            out["args"] = ev["args"]
        if "dur" in ev:
            out["dur"] = ev["dur"]
        yield out


def write(trace_dir, pid, path, compact, array_format, wall_offset_us, scopes, cli=None):
    """Writes the .pfw of process pid to path. Returns the number of events written (0: no
    file written, as PerfFlowAspect writes none for a process that logged nothing). Raises
    OSError / RuntimeError with a one-line reason."""
    cli = cli or find_cli()
    if not cli:
        raise RuntimeError("the weft CLI was not found (set WEFT_CLI, or put weft on PATH)")
    files = _own_files(trace_dir, pid)
    if not files:
        return 0
    with tempfile.TemporaryDirectory(prefix="weft-pfw-") as tmp:
        for n in files:
            os.symlink(os.path.join(os.path.abspath(trace_dir), n), os.path.join(tmp, n))
        cmd = [cli, "convert", tmp, "-q", "-f", "json", "--json-style", "x" if compact else "be",
               "-o", "-"]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=_clean_env(), stdin=subprocess.DEVNULL)
        if p.returncode != 0:
            why = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
            raise RuntimeError(f"weft convert failed: {why}")
    evs = list(_events(p.stdout.splitlines(), wall_offset_us, scopes))
    if not evs:
        return 0
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, "w") as f:
        if array_format:
            f.write("[\n")
            pre = ""
        else:
            f.write('{\n  "displayTimeUnit": "us",\n  "otherData": {\n\n  },\n  "traceEvents": [\n')
            pre = "    "
        for ev in evs:
            f.write(pre + json.dumps(ev) + ",\n")
    return len(evs)
