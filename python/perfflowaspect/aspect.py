"""perfflowaspect.aspect: PerfFlowAspect's annotations, recorded by weft.

    import perfflowaspect.aspect

    @perfflowaspect.aspect.critical_path()                     # pointcut="around": a slice
    def step(n): ...

    @perfflowaspect.aspect.critical_path(pointcut="before_async", scope="req")
    def submit(): ...

    perfflowaspect.aspect.sync_event("before", "phase", "app")  # explicit begin ...
    perfflowaspect.aspect.sync_event("after", "phase", "app")   # ... and end

Pointcuts: around, before, after, around_async, before_async, after_async (see
advice_chrome.py). With PERFFLOW_OPTIONS log-enable=False, critical_path returns the
function itself (it runs and returns as without the decorator) and the explicit events do
nothing. An unknown pointcut is one line on stderr and leaves the function as it is."""
import sys

from .advice_chrome import ChromeTracingAdvice
from .advice_dispatch import AdviceDispatcher
from . import _session

advice_kind = "ChromeTracing"


def _unchanged(func):
    return func


def critical_path(pointcut="around", scope=""):
    """A decorator recording each call of the function as the pointcut says."""
    if not _session.opts.log_enable:
        return _unchanged
    try:
        return AdviceDispatcher.get(advice_kind, pointcut, scope)
    except KeyError as e:
        print(f"perfflow error: unknown pointcut {pointcut!r} (valid: around, before, after, "
              f"around_async, before_async, after_async); not recording: {e}", file=sys.stderr)
        return _unchanged


def sync_event(pointcut, name, category):
    """pointcut "before" begins a slice name on the calling thread, "after" ends it."""
    if _session.opts.log_enable:
        AdviceDispatcher.get_advice(advice_kind).sync_event(pointcut, name, category)


def async_event(pointcut, name, category, scope=None, id=None):
    """pointcut "before" / "after" begins / ends the async slice (name, id) (id 123 when not
    given, as in PerfFlowAspect), "instant" records an instant with the id."""
    if _session.opts.log_enable:
        AdviceDispatcher.get_advice(advice_kind).async_event(pointcut, name, category,
                                                             scope=scope, id=id)


__all__ = ["critical_path", "sync_event", "async_event", "ChromeTracingAdvice"]
