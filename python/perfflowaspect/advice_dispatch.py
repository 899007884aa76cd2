"""AdviceDispatcher: picks the advice of a pointcut (PerfFlowAspect's dispatch interface).

    AdviceDispatcher.get("ChromeTracing", "around", "")(func) -> the advised function

An unknown pointcut raises KeyError, an unknown advice kind KeyError, as in PerfFlowAspect."""
from .advice_chrome import ChromeTracingAdvice

_SIMPLE = ("around", "before", "after", "around_async")
_SCOPED = ("before_async", "after_async")


class AdviceDispatcher:
    advice_dict = {"ChromeTracing": ChromeTracingAdvice}

    @staticmethod
    def _dispatch(clobj, pointcut, scope):
        if pointcut in _SIMPLE:
            return getattr(clobj, pointcut)
        if pointcut in _SCOPED:
            return getattr(clobj, pointcut)(scope)
        raise KeyError("unknown pointcut", pointcut)

    @staticmethod
    def get(key, pointcut, scope):
        return AdviceDispatcher._dispatch(AdviceDispatcher.advice_dict[key], pointcut, scope)

    @staticmethod
    def get_advice(key):
        return AdviceDispatcher.advice_dict[key]
