"""weft record --python puts this directory first on PYTHONPATH, so that Python's site module
imports this file at start-up, before the program runs. It starts weft's Python call tracing
(weft._record, when WEFT_PYTHON is set), then imports the sitecustomize module this one hides
(Debian's /etc/python3.11/sitecustomize.py, or the user's), so that still runs as usual.

Not run by `python3 -S` (no site module) or `-I` / `-E` (PYTHONPATH ignored): such a program
runs untraced."""
import os
import sys


def _chain():
    """Imports the next sitecustomize on sys.path, this directory left out of it (the
    interpreter found this one first only because weft put it there)."""
    here = os.path.dirname(os.path.abspath(__file__))
    me = sys.modules.pop("sitecustomize", None)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    try:
        import sitecustomize  # noqa: F401  (the hidden one)
    except ImportError as e:
        if e.name != "sitecustomize":
            raise
        if me is not None:
            sys.modules["sitecustomize"] = me


_chain()
try:
    from weft import _record
except ImportError as e:
    print(f"weft: python: the weft package is not importable ({e}); not tracing Python calls",
          file=sys.stderr)
else:
    _record.start_from_environment()
