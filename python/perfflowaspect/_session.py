"""The process's side of PerfFlowAspect-on-weft: reads PERFFLOW_OPTIONS once, starts weft
into the trace directory, makes the processes this one starts record into the same directory,
and writes this process's .pfw file at its end.

Trace directory: WEFT_OPTIONS's output= when given, else LOG-DIR/weft.data; the first
process moves an old one aside (weft's rule), every process it starts (fork, multiprocessing
spawn/forkserver, subprocess) writes its own files into it: they inherit WEFT_SESSION (which
tells weft not to move the directory), WEFT_OPTIONS with the absolute output, PYTHONPATH
with this package's directory, and PERFFLOW_OPTIONS / PERFFLOW_INSTANCE_PATH. Under `weft
record` (WEFT_SESSION already set) all of that is already so and is left alone.

Ends: the interpreter's exit (atexit), and the end of a multiprocessing child made by fork,
which leaves through os._exit: there a multiprocessing finalizer, registered after the fork,
does the same. The end stops weft (flushing this process's events) and writes the .pfw."""
import atexit
import os
import signal
import sys
import threading
import time

import weft

from . import _options, _pfw

opts = _options.Options(os.environ.get("PERFFLOW_OPTIONS"))
inst_path = _options.instance_path()
os.environ["PERFFLOW_INSTANCE_PATH"] = inst_path

scopes = {}  # async slice name -> PerfFlowAspect scope (for the .pfw's "scope")
_finished_pid = None
_lock = threading.RLock()  # RLock: finish() may run again from the SIGTERM handler
_mp_ready_pid = None
_in_finish = False  # finish() is running (SIGTERM waits for it)
_term_pending = 0  # the SIGTERM that came meanwhile


def pfw_path(pid=None):
    return os.path.join(opts.log_dir, _options.pfw_name(opts, inst_path, pid or os.getpid()))


def _weft_output_option():
    """output= of WEFT_OPTIONS (the last one), or None."""
    out = None
    for item in os.environ.get("WEFT_OPTIONS", "").split(":"):
        k, eq, v = item.partition("=")
        if eq and k == "output":
            out = v
    return out


def _setup():
    in_session = bool(os.environ.get("WEFT_SESSION"))
    started = weft.output_dir() is not None
    if not started and not in_session and _weft_output_option() is None:
        weft.configure(output=os.path.abspath(os.path.join(opts.log_dir, "weft.data")))
    elif not started and not in_session:
        out = _weft_output_option()
        if "{" not in out:
            weft.configure(output=os.path.abspath(out))
    if "name" in opts.given:
        if started:
            weft.process_name(opts.name)
        else:
            weft.configure(name=opts.name)
    try:
        if not weft.start():
            return False  # enable=0 in WEFT_OPTIONS
    except OSError as e:
        print(f"perfflowaspect: weft: {e}", file=sys.stderr)
        return False
    d = weft.output_dir()
    if not in_session and d:
        d = os.path.abspath(d)
        os.environ["WEFT_SESSION"] = d
        os.environ["WEFT_OPTIONS"] = os.environ.get("WEFT_OPTIONS", "") + ":output=" + d
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.environ.get("PYTHONPATH", "")
    if here not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = here + (os.pathsep + path if path else "")
    atexit.register(finish)
    os.register_at_fork(after_in_child=_after_fork_child)
    mpp = sys.modules.get("multiprocessing.process")
    if mpp is not None and getattr(mpp.current_process(), "_inheriting", False):
        _mp_child(None)  # a spawn child, importing the program's main module before its target
    return True


def _after_fork_child():
    global _lock
    _lock = threading.RLock()
    if "name" in opts.given:
        weft.process_name(opts.name)
    mp = sys.modules.get("multiprocessing.util")
    if mp is not None:
        # run after multiprocessing clears its finalizers in the new process
        mp.register_after_fork(_state, _mp_child)


class _State:
    pass


_state = _State()  # a live object for multiprocessing's weak registry


def _mp_child(_obj):
    """In a multiprocessing child (fork: once multiprocessing has reset itself there; spawn:
    while it imports the main module, as spawn resets nothing later): finish at
    its end (a fork child leaves through os._exit, past atexit), and on SIGTERM, which
    Pool.terminate() (the end of `with Pool()`) sends to its workers, when the program has not
    set a handler of its own: the handler finishes, then dies of the signal as before."""
    global _mp_ready_pid
    if _mp_ready_pid == os.getpid():
        return
    _mp_ready_pid = os.getpid()
    import multiprocessing.util as mp
    mp.Finalize(None, finish, exitpriority=-(1 << 30))  # after the program's own finalizers
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


def _on_sigterm(signum, _frame):
    global _term_pending
    if _in_finish:  # finishing already (a worker's normal end): die once that is done
        _term_pending = signum
        return
    finish()
    _die(signum)


def _die(signum):
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def finish():
    """This process's end: weft stopped, the .pfw written. Once per process; never raises."""
    global _finished_pid, _in_finish
    with _lock:
        pid = os.getpid()
        if _finished_pid == pid:
            return
        _finished_pid = pid
        _in_finish = True
        try:
            _finish(pid)
        finally:
            _in_finish = False
    if _term_pending:
        _die(_term_pending)


def _finish(pid):
    d = weft.output_dir()
    weft.stop()
    if not d or not opts.weft_pfw:
        return
    path = pfw_path(pid)
    try:
        off = (time.time_ns() - weft.now_ns()) / 1000.0
        _pfw.write(d, pid, path, opts.log_event == "compact", opts.log_format == "array", off,
                   scopes)
    except Exception as e:  # the program's exit is not ours to change
        print(f"perfflowaspect: {path} not written: {e}", file=sys.stderr)


active = opts.log_enable and _setup()
