"""Starting and stopping Python call tracing for a whole program: used by `python3 -m weft`
and by the start-up hook of `weft record --python[=MODES]` (weft_bootstrap/sitecustomize.py).

start() installs weft._calltrace's hook once and stops it at interpreter exit (Python's atexit
handlers run last-registered first, so one registered at start-up runs after the program's
own): the code objects it kept are given back before the interpreter goes away.

Modes (WEFT_PYTHON, a comma-separated list): `calls` (every Python call; always on),
`c-calls` (also the C functions Python code calls: on 3.11 a C profile function beside the
frame-evaluation hook, which puts it in place in every thread; on 3.12+ sys.monitoring's CALL
events; with hook="profile" before 3.12 threading.setprofile too, so that threads started
later get it: that imports threading)
and `tasks` (each asyncio Task as an async slice, weft._tasks; this imports asyncio)."""
import atexit
import sys

MODES = ("calls", "c-calls", "tasks")
_started = False


def start(hook="auto", c_calls=False, tasks=False):
    """Records every Python call from now on, in every thread (with c_calls, the C calls
    too; with tasks, asyncio tasks as async slices). Idempotent."""
    global _started
    from weft import _calltrace
    if _calltrace.active():
        return
    # weft's own functions that run while tracing add no slices (stop() would otherwise leave
    # an open one under the profile hook, which is gone before stop() returns)
    own = [start, stop, start_from_environment]
    if tasks:
        from weft import _tasks
        own += _tasks.install()
    for f in own:
        _calltrace.untraced(f)
    if c_calls and (hook == "profile" or sys.version_info < (3, 11)) and sys.version_info < (3, 12):
        import threading
        threading.setprofile(_calltrace.profile_thread)
    _calltrace.start(hook, c_calls=c_calls)
    if not _started:
        _started = True
        atexit.register(stop)


def stop():
    from weft import _calltrace
    _calltrace.stop()
    threading = sys.modules.get("threading")
    if threading is not None and getattr(threading, "_profile_hook", None) is _calltrace.profile_thread:
        threading.setprofile(None)


def parse_modes(text):
    """'calls,c-calls,tasks' -> dict(c_calls=..., tasks=...); ValueError for an unknown word."""
    words = [w for w in text.split(",") if w]
    bad = [w for w in words if w not in MODES]
    if bad or not words:
        raise ValueError(f"unknown WEFT_PYTHON mode '{text}' (expected a list of {', '.join(MODES)})")
    return {"c_calls": "c-calls" in words, "tasks": "tasks" in words}


def start_from_environment():
    """The bootstrap's entry: WEFT_PYTHON (set by weft record --python) says what to record.
    A failure is one line on stderr, never an error of the program."""
    import os
    mode = os.environ.get("WEFT_PYTHON", "")
    if not mode:
        return
    try:
        start(**parse_modes(mode))
    except Exception as e:  # the program runs anyway, untraced
        print(f"weft: python: call tracing not started: {e}", file=sys.stderr)
