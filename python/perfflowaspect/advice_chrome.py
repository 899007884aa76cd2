"""ChromeTracingAdvice: PerfFlowAspect's six pointcuts, recorded by weft.

Each advice takes the function and returns its replacement; events are named after the
function's __qualname__ in the category of its __module__, as PerfFlowAspect names them.

    around        a slice per call: weft.trace's C wrapper (generators and async def: a slice
                  per resumption). With cpu-mem-usage=True a Python wrapper records the slice
                  once it is over (weft.complete) with the arguments cpu.user_ns, cpu.sys_ns
                  (the process's CPU time during the call, getrusage) and mem.rss_bytes (RSS at
                  its end, /proc/self/statm), and the counters cpu.user_ns, cpu.sys_ns (process
                  totals) and mem.rss_bytes at its begin and end.
    before        an instant at entry
    after         an instant at exit (on return or exception)
    around_async  an async slice around the call, keyed as PerfFlowAspect keys it: the calling
                  thread's native id. Generator and async def functions: from the first resumption
                  to the end, with an id per call (PerfFlowAspect would only time the creation)
    before_async  the begin of the async slice (SCOPE or the function's name, native thread id)
    after_async   its end, after the call; SCOPE pairs the two across functions of one thread

An exception leaving the function still ends what was begun, then propagates unchanged."""
import functools
import inspect
import itertools
import os
import resource
import threading

import weft

from . import _session

_native_id = threading.get_native_id
_call_ids = itertools.count(1 << 32)
_PAGE = os.sysconf("SC_PAGESIZE")


def _names(func):
    return func.__qualname__, getattr(func, "__module__", None) or ""


def _cpu_ns():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return int(r.ru_utime * 1e9), int(r.ru_stime * 1e9)


def _rss_bytes():
    try:
        fd = os.open("/proc/self/statm", os.O_RDONLY)
        try:
            return int(os.read(fd, 128).split()[1]) * _PAGE
        finally:
            os.close(fd)
    except (OSError, ValueError, IndexError):
        return 0


def _usage_counters(user, sys_, rss):
    weft.counter("cpu.user_ns", user, "ns")
    weft.counter("cpu.sys_ns", sys_, "ns")
    weft.counter("mem.rss_bytes", rss, "bytes")


def _methodlike(advice):
    """Lets an advice take a staticmethod or classmethod object too (advising its function)."""
    @functools.wraps(advice)
    def apply(func):
        if isinstance(func, (staticmethod, classmethod)):
            return type(func)(advice(func.__func__))
        return advice(func)
    return apply


class ChromeTracingAdvice:
    """PerfFlowAspect's advice class (its name kept for code that reads its flags)."""

    enable_logging = _session.opts.log_enable
    enable_cpu_mem_usage = _session.opts.cpu_mem_usage
    enable_compact_log_event = _session.opts.log_event == "compact"
    array_format = _session.opts.log_format == "array"
    enable_caliper = False
    fn = _session.pfw_path()

    @staticmethod
    @_methodlike
    def around(func):
        name, cat = _names(func)
        if not _session.opts.cpu_mem_usage or inspect.isgeneratorfunction(func) or \
                inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func):
            return weft.trace(func, name=name, category=cat)
        now, complete, instant = weft.now_ns, weft.complete, weft.instant

        @functools.wraps(func)
        def around_usage(*args, **kwargs):
            u0, s0 = _cpu_ns()
            _usage_counters(u0, s0, _rss_bytes())
            t0 = now()
            try:
                return func(*args, **kwargs)
            except BaseException as e:
                instant("exception", exception=type(e).__name__)
                raise
            finally:
                t1 = now()
                u1, s1 = _cpu_ns()
                rss = _rss_bytes()
                complete(name, t0, t1, category=cat,
                         **{"cpu.user_ns": u1 - u0, "cpu.sys_ns": s1 - s0, "mem.rss_bytes": rss})
                _usage_counters(u1, s1, rss)
        return around_usage

    @staticmethod
    @_methodlike
    def before(func):
        name, cat = _names(func)
        instant = weft.instant

        @functools.wraps(func)
        def before(*args, **kwargs):
            instant(name, category=cat)
            return func(*args, **kwargs)
        return before

    @staticmethod
    @_methodlike
    def after(func):
        name, cat = _names(func)
        instant = weft.instant

        @functools.wraps(func)
        def after(*args, **kwargs):
            try:
                return func(*args, **kwargs)
            finally:
                instant(name, category=cat)
        return after

    @staticmethod
    @_methodlike
    def around_async(func):
        name, cat = _names(func)
        _session.scopes.setdefault(name, None)
        begin, end = weft.async_begin, weft.async_end
        if inspect.iscoroutinefunction(func):
            @functools.wraps(func)
            async def around_async_coro(*args, **kwargs):
                key = next(_call_ids)
                begin(name, key, category=cat)
                try:
                    return await func(*args, **kwargs)
                finally:
                    end(name, key, category=cat)
            return around_async_coro
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def around_async_gen(*args, **kwargs):
                key = next(_call_ids)
                begin(name, key, category=cat)
                try:
                    return (yield from func(*args, **kwargs))
                finally:
                    end(name, key, category=cat)
            return around_async_gen

        @functools.wraps(func)
        def around_async(*args, **kwargs):
            key = _native_id()
            begin(name, key, category=cat)
            try:
                return func(*args, **kwargs)
            finally:
                end(name, key, category=cat)
        return around_async

    @staticmethod
    def before_async(scope):
        @_methodlike
        def advice(func):
            name, cat = _names(func)
            aname = scope or name
            _session.scopes[aname] = scope or None
            begin = weft.async_begin

            @functools.wraps(func)
            def before_async(*args, **kwargs):
                begin(aname, _native_id(), category=cat)
                return func(*args, **kwargs)
            return before_async
        return advice

    @staticmethod
    def after_async(scope):
        @_methodlike
        def advice(func):
            name, cat = _names(func)
            aname = scope or name
            _session.scopes[aname] = scope or None
            end = weft.async_end

            @functools.wraps(func)
            def after_async(*args, **kwargs):
                try:
                    return func(*args, **kwargs)
                finally:
                    end(aname, _native_id(), category=cat)
            return after_async
        return advice

    # explicit events (aspect.sync_event, aspect.async_event)
    _open = threading.local()

    @classmethod
    def sync_event(cls, pointcut, name, category):
        if pointcut == "before":
            sc = weft.scope(name, category=category)
            sc.__enter__()
            st = getattr(cls._open, "stack", None)
            if st is None:
                st = cls._open.stack = []
            st.append((name, category, sc))
        elif pointcut == "after":
            st = getattr(cls._open, "stack", None) or []
            for i in range(len(st) - 1, -1, -1):
                if st[i][:2] == (name, category):
                    for _, _, sc in reversed(st[i:]):  # inner ones left open end here too
                        sc.__exit__(None, None, None)
                    del st[i:]
                    break
        else:
            raise ValueError(f"Invalid pointcut: {pointcut}")

    @classmethod
    def async_event(cls, pointcut, name, category, scope=None, id=None):
        if pointcut not in ("before", "instant", "after"):
            raise ValueError(f"Invalid pointcut: {pointcut}")
        key = 123 if id is None else id  # PerfFlowAspect's default id
        if not isinstance(key, int):
            import zlib
            key = zlib.crc32(str(key).encode())
        _session.scopes[name] = scope
        if pointcut == "before":
            weft.async_begin(name, key, category=category)
        elif pointcut == "after":
            weft.async_end(name, key, category=category)
        else:
            weft.instant(name, category=category, id=key)
