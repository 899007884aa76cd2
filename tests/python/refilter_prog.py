"""For tests/integration/test_python_calls.py: a filter changed while a recorded call runs
(weft.configure(filter=...) from inside it). The hook decides at a call's begin: the call
that was recorded keeps its end, the calls after the change follow the new filter."""
import weft


def inner():
    pass


def outer(change):
    inner()
    if change:
        weft.configure(filter="-outer")  # outer is filtered out from here on
    inner()


outer(True)
outer(False)
print("refilter done")
