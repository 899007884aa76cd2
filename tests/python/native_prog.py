"""Traced Python calling a C extension built with -finstrument-functions (nativeext.c), which
calls back into Python: one stack per thread across both."""
import nativeext


def leafpy(v):
    return v


def callback(v):
    return leafpy(v) + 1


def use_native():
    a = nativeext.sum_squares(5)  # 0+1+4+9+16 = 30
    b = nativeext.call(callback, 3)  # callback(9) = 10
    return a + b


print("native", use_native())
