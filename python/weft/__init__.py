"""weft: tracing for Python programs, on the same timeline as their native code.

The explicit API (this module, implemented by the C extension weft._weft over libweft):

    import weft

    @weft.trace                       # one slice per call, named after __qualname__
    def step(n): ...

    @weft.trace(name="load", category="io")
    def load(path): ...

    with weft.scope("phase", n=3):    # a slice around a block, with arguments
        weft.instant("checkpoint", ok=True)
        weft.counter("queue depth", 12)

Events go to ./weft.data/ (WEFT_OPTIONS="output=DIR", or weft.configure(output=DIR) before
the first event); `weft convert DIR -o trace.pftrace` makes a file for ui.perfetto.dev. As in
C, the first event starts tracing unless enable=0; weft.stop() (or the end of the process)
finishes the trace. See python/README.md in the source tree.
"""
from ._weft import (async_begin, async_end, complete, configure, counter, enabled, flow_in, flow_out,
                    flush, instant, now_ns, output_dir, process_name, scope, snapshot, start, stop,
                    thread_name, track)
from . import _weft

__all__ = ["trace", "scope", "instant", "complete", "counter", "track", "async_begin", "async_end",
           "flow_out", "flow_in", "configure", "start", "stop", "flush", "now_ns", "enabled",
           "output_dir", "thread_name", "process_name", "snapshot"]


def trace(func=None, *, name=None, category=None):
    """Trace each call of a function as one slice on the calling thread.

    Use as ``@weft.trace`` or ``@weft.trace(name=None, category=None)``. The slice is named
    after the function's ``__qualname__`` unless ``name`` is given; ``category`` is matched
    by the ``categories=`` option. The wrapper binds like the function (methods work), calls
    it with the same arguments and returns its result unchanged, and carries ``__name__``,
    ``__qualname__``, ``__doc__``, ``__module__``, ``__wrapped__`` as functools.wraps does.

    An exception that leaves the call propagates unchanged; inside the slice, just before its
    end, an instant named ``exception`` records ``exception=<type name>``.

    Generators and ``async def`` functions: each resumption (``next``, ``send``, ``throw``,
    each step of an awaiting task) is one slice, so the slices show when the body ran; the
    call that creates the generator is not recorded. Async generator functions get one slice
    per call (the creation) only.

    When tracing is off (``enable=0``, a filtered name or category, after ``stop()``) a call
    costs one load and a branch more than the plain call.
    """
    if func is None:
        return lambda f: _weft.trace(f, name=name, category=category)
    return _weft.trace(func, name=name, category=category)
