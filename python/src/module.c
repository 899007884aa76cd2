/*
 * module.c - weft._weft, the explicit Python API over libweft: the module itself, its types
 * and its function table, gathered from the files that hold them:
 *
 *   site.c       the call sites of Python names, typed arguments, thread naming (shared)
 *   events.c     instant(), complete(), counter(), async_begin/end(), flow_out/in()
 *   control.c    configure(), start(), stop(), snapshot(), flush(), enabled(), ...
 *   decorator.c  trace() (@weft.trace) and its generator and coroutine proxies
 *   scope.c      scope() and track()
 *
 * One interpreter per process: libweft is a process-wide runtime, so the module keeps its
 * state in C globals (single-phase initialisation), written under the GIL.
 */
#include "pyweft.h"

static PyObject *py_scope(PyObject *mod, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
	return pw_scope_make(mod, argv, nargs, kwnames);
}

static PyObject *py_trace(PyObject *mod, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
	return pw_trace_make(mod, argv, nargs, kwnames);
}

#define FASTKW (METH_FASTCALL | METH_KEYWORDS)
static const PyMethodDef own_methods[] = {
	{"trace", (PyCFunction)(void (*)(void))py_trace, FASTKW,
	 "trace(func, /, name=None, category=None)\n--\n\n"
	 "The traced wrapper of func (see weft.trace, which also works as @weft.trace(...))."},
	{"scope", (PyCFunction)(void (*)(void))py_scope, FASTKW,
	 "scope(name, /, category=None, **args)\n--\n\n"
	 "A context manager (and decorator) recording a slice named name around its block; args\n"
	 "(int, float, bool, str; others as str()) become the slice's arguments."},
	{"track", pw_track_make, METH_O,
	 "track(name, /)\n--\n\n"
	 "The process's named track `name` (the same name gives the same track): its scope() and\n"
	 "instant() put events on that track, one lane per thread under it."},
	{NULL, NULL, 0, NULL},
};

/* The module's functions: this file's, then events.c's, then control.c's (filled at init). */
static PyMethodDef methods[40];

static int methods_gather(void)
{
	const PyMethodDef *const tables[] = {own_methods, pw_event_methods, pw_control_methods};
	size_t n = 0;
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
		for (const PyMethodDef *m = tables[t]; m->ml_name; m++) {
			if (n + 1 >= sizeof(methods) / sizeof(methods[0])) {
				PyErr_SetString(PyExc_SystemError, "weft: methods[] of module.c is too small");
				return -1;
			}
			methods[n++] = *m;
		}
	methods[n] = (PyMethodDef){NULL, NULL, 0, NULL};
	return 0;
}

static struct PyModuleDef moddef = {
	PyModuleDef_HEAD_INIT, "weft._weft",
	"The C half of the weft package: the explicit tracing API over libweft.", -1, methods,
	NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__weft(void)
{
	if (PyType_Ready(&PwTrace_Type) < 0 || PyType_Ready(&PwTraceCallable_Type) < 0 ||
	    PyType_Ready(&PwGenProxy_Type) < 0 || PyType_Ready(&PwCoroProxy_Type) < 0 || PyType_Ready(&PwScope_Type) < 0 ||
	    PyType_Ready(&PwTrack_Type) < 0)
		return NULL;
	if (pw_shared_init() < 0 || (!methods[0].ml_name && methods_gather() < 0))
		return NULL;
	PyObject *m = PyModule_Create(&moddef);
	if (!m)
		return NULL;
	if (PyModule_AddObjectRef(m, "Trace", (PyObject *)&PwTrace_Type) < 0 ||
	    PyModule_AddObjectRef(m, "TraceCallable", (PyObject *)&PwTraceCallable_Type) < 0 ||
	    PyModule_AddObjectRef(m, "TracedGenerator", (PyObject *)&PwGenProxy_Type) < 0 ||
	    PyModule_AddObjectRef(m, "TracedCoroutine", (PyObject *)&PwCoroProxy_Type) < 0 ||
	    PyModule_AddObjectRef(m, "Scope", (PyObject *)&PwScope_Type) < 0 ||
	    PyModule_AddObjectRef(m, "Track", (PyObject *)&PwTrack_Type) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
