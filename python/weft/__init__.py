"""weft: tracing for Python programs, on the same timeline as their native code.

The package is filled in by the weft._weft extension (the explicit API) and the call tracer;
see python/README in the source tree."""
