"""asyncio tasks as async slices (`weft record --python=tasks`, `python3 -m weft --tasks`).

Each Task an event loop creates is one async slice, from its creation to its completion (the
task's done callbacks), named after its coroutine's __qualname__ (category "asyncio"): in
Perfetto each task is an async track of the process, and the slices the call tracer records
on the thread's track for each resumption of the coroutine show when it ran, the gaps between
them where it awaited.

How: asyncio.BaseEventLoop.create_task - which asyncio.create_task, ensure_future, gather,
wait_for, TaskGroup and asyncio.run all go through, and which calls the loop's task factory
if the program set one - is wrapped once, at start-up, by a function that calls the original
with the same arguments, returns its task unchanged (or lets its exception through unchanged)
and then, in a try block that swallows its own errors, records the begin and adds a done
callback that records the end. The id of each slice is a process-wide counter. Not seen:
loops that do not derive from BaseEventLoop (uvloop) and tasks made by calling asyncio.Task
directly. The wrapper and the callback are marked untraced, so they add no slices of their own.
"""
import functools
import itertools

_ids = itertools.count(1)
_installed = False
_async_end = None  # weft._weft.async_end, set by install()


def _name_of(coro):
    name = getattr(coro, "__qualname__", None)
    return name if isinstance(name, str) else type(coro).__qualname__


def _ended(name, aid, task):
    try:
        _async_end(name, aid, category="asyncio")
    except Exception:
        pass


def install():
    """Wraps BaseEventLoop.create_task (idempotent). Returns the functions to mark untraced."""
    global _installed, _async_end
    if _installed:
        return []
    import asyncio.base_events
    from weft import _weft
    loop_cls = asyncio.base_events.BaseEventLoop
    _async_end = _weft.async_end
    original = loop_cls.create_task

    @functools.wraps(original)
    def create_task(self, coro, *args, **kwargs):
        task = original(self, coro, *args, **kwargs)
        try:
            name, aid = _name_of(coro), next(_ids)
            _weft.async_begin(name, aid, category="asyncio")
            task.add_done_callback(functools.partial(_ended, name, aid))
        except Exception:
            pass
        return task

    loop_cls.create_task = create_task
    _installed = True
    return [create_task, _ended, _name_of]
