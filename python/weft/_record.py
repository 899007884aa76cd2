"""Starting and stopping Python call tracing for a whole program: used by `python3 -m weft`
and by the start-up hook of `weft record --python` (weft_bootstrap/sitecustomize.py).

start() installs weft._calltrace's hook once and stops it at interpreter exit (Python's atexit
handlers run last-registered first, so one registered at start-up runs after the program's
own): the code objects it kept are given back before the interpreter goes away."""
import atexit
import sys

_started = False


def start(hook="auto"):
    """Records every Python call from now on, in every thread. Idempotent."""
    global _started
    from weft import _calltrace
    if _calltrace.active():
        return
    _calltrace.start(hook)
    if not _started:
        _started = True
        atexit.register(stop)


def stop():
    from weft import _calltrace
    _calltrace.stop()


def start_from_environment():
    """The bootstrap's entry: WEFT_PYTHON (set by weft record --python) says what to record.
    A failure is one line on stderr, never an error of the program."""
    import os
    mode = os.environ.get("WEFT_PYTHON", "")
    if not mode:
        return
    try:
        if mode != "calls":
            raise ValueError(f"unknown WEFT_PYTHON mode '{mode}' (expected calls)")
        start()
    except Exception as e:  # the program runs anyway, untraced
        print(f"weft: python: call tracing not started: {e}", file=sys.stderr)
