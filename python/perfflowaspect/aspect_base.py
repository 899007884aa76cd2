"""perfflowaspect: the class decorator PerfFlowAspect marks its advice classes with. Here it
only tags the class (weft's advice needs no set-up)."""


def perfflowaspect(target):
    target.__perfflowaspect_advice__ = True
    return target
