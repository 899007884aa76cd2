/*
 * events.c - weft._weft's events that are not a traced call: instant(), complete(),
 * counter(), async_begin()/async_end() and flow_out()/flow_in(). Each looks its site up by
 * name (site.c), asks whether it is recorded, and writes one record on the calling thread
 * (with its arguments, if any). Every function runs with the GIL held.
 */
#include "pyweft.h"

static PyObject *py_instant(PyObject *mod, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
	(void)mod;
	return pw_instant_on(0, argv, nargs, kwnames);
}

PyObject *pw_instant_on(unsigned track, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
	if (nargs != 1) {
		PyErr_SetString(PyExc_TypeError, "instant() takes the name as its one positional argument");
		return NULL;
	}
	Py_ssize_t ci = pw_kw_index(kwnames, "category");
	struct weft_site *s = pw_site(WEFT_KIND_EVENT, argv[0], ci >= 0 ? argv[nargs + ci] : NULL, NULL);
	if (!s)
		return NULL;
	if (!weft__on(s))
		Py_RETURN_NONE;
	pw_thread_check();
	Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
	if (nk - (ci >= 0) == 0) {
		weft__rec2(weft__hdr(s->id, WEFT_R_INSTANT, 0, track));
		Py_RETURN_NONE;
	}
	struct pw_args a;
	if (pw_args_from_kw(&a, argv + nargs, kwnames, ci) < 0)
		return NULL;
	weft_event_args(s, WEFT_R_INSTANT, track, a.a, a.n);
	pw_args_clear(&a);
	Py_RETURN_NONE;
}

/* complete(name, start_ns, end_ns, /, category=None, **args): a slice whose times are given
 * (now_ns() values) and whose arguments may be known only once it is over. */
static PyObject *py_complete(PyObject *mod, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
	(void)mod;
	if (nargs != 3) {
		PyErr_SetString(PyExc_TypeError, "complete(name, start_ns, end_ns, /, category=None, **args)");
		return NULL;
	}
	uint64_t t[2];
	for (int i = 0; i < 2; i++) {
		if (!PyLong_Check(argv[1 + i])) {
			PyErr_SetString(PyExc_TypeError, "complete(): start_ns and end_ns must be ints (weft.now_ns())");
			return NULL;
		}
		t[i] = PyLong_AsUnsignedLongLong(argv[1 + i]);
		if (t[i] == (uint64_t)-1 && PyErr_Occurred())
			return NULL;
	}
	if (t[1] < t[0]) {
		PyErr_SetString(PyExc_ValueError, "complete(): end_ns is before start_ns");
		return NULL;
	}
	Py_ssize_t ci = pw_kw_index(kwnames, "category");
	struct weft_site *s = pw_site(WEFT_KIND_EVENT, argv[0], ci >= 0 ? argv[nargs + ci] : NULL, NULL);
	if (!s)
		return NULL;
	if (!weft__on(s))
		Py_RETURN_NONE;
	pw_thread_check();
	struct pw_args a;
	if (pw_args_from_kw(&a, argv + nargs, kwnames, ci) < 0)
		return NULL;
	weft_complete_args(s, t[0], t[1], 0, a.a, a.n);
	pw_args_clear(&a);
	Py_RETURN_NONE;
}

static PyObject *py_counter(PyObject *mod, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
	(void)mod;
	static const char *const kw[] = {"name", "value", "unit", NULL};
	PyObject *name = NULL, *value = NULL, *unit = NULL;
	Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
	if (nargs > 3)
		goto usage;
	PyObject *got[3] = {NULL, NULL, NULL};
	for (Py_ssize_t i = 0; i < nargs; i++)
		got[i] = argv[i];
	for (Py_ssize_t i = 0; i < nk; i++) {
		int j = 0;
		while (kw[j] && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), kw[j]))
			j++;
		if (!kw[j] || got[j])
			goto usage;
		got[j] = argv[nargs + i];
	}
	name = got[0], value = got[1], unit = got[2];
	if (!name || !value)
		goto usage;
	struct weft_site *s = pw_site(WEFT_KIND_COUNTER, name, NULL, unit);
	if (!s)
		return NULL;
	unsigned type;
	uint64_t word;
	if (PyLong_Check(value) || (!PyFloat_Check(value) && PyIndex_Check(value))) {
		PyObject *iv = PyNumber_Index(value);
		if (!iv)
			return NULL;
		int overflow;
		long long x = PyLong_AsLongLongAndOverflow(iv, &overflow);
		if (overflow) {
			double d = PyLong_AsDouble(iv);
			Py_DECREF(iv);
			if (d == -1.0 && PyErr_Occurred())
				return NULL;
			type = WEFT_R_COUNTER_F64, word = weft__d2w(d);
		} else {
			Py_DECREF(iv);
			if (x == -1 && PyErr_Occurred())
				return NULL;
			type = WEFT_R_COUNTER_I64, word = weft__i2w(x);
		}
	} else {
		double d = PyFloat_AsDouble(value);
		if (d == -1.0 && PyErr_Occurred())
			return NULL;
		type = WEFT_R_COUNTER_F64, word = weft__d2w(d);
	}
	if (!s->id) /* before registration, which writes the flag into the metadata */
		s->counter_is_double = type == WEFT_R_COUNTER_F64; /* the first value's kind names the track's */
	if (weft__on(s)) {
		pw_thread_check();
		weft__rec3(weft__hdr(s->id, type, 1, 0), word);
	}
	Py_RETURN_NONE;
usage:
	PyErr_SetString(PyExc_TypeError, "counter(name, value, unit=None)");
	return NULL;
}

static PyObject *async_event(unsigned type, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
	Py_ssize_t ci = pw_kw_index(kwnames, "category");
	Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
	if (nargs != 2 || nk != (ci >= 0)) {
		PyErr_SetString(PyExc_TypeError, type == WEFT_R_ASYNC_BEGIN ? "async_begin(name, id, category=None)"
									    : "async_end(name, id, category=None)");
		return NULL;
	}
	struct weft_site *s = pw_site(WEFT_KIND_EVENT, argv[0], ci >= 0 ? argv[nargs + ci] : NULL, NULL);
	if (!s)
		return NULL;
	if (!PyLong_Check(argv[1])) {
		PyErr_SetString(PyExc_TypeError, "weft: an async id must be an int");
		return NULL;
	}
	uint64_t id = PyLong_AsUnsignedLongLongMask(argv[1]);
	if (id == (uint64_t)-1 && PyErr_Occurred())
		return NULL;
	if (weft__on(s)) {
		pw_thread_check();
		weft__rec3(weft__hdr(s->id, type, 1, 0), id);
	}
	Py_RETURN_NONE;
}

static PyObject *py_async_begin(PyObject *mod, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
	(void)mod;
	return async_event(WEFT_R_ASYNC_BEGIN, argv, nargs, kwnames);
}

static PyObject *py_async_end(PyObject *mod, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
	(void)mod;
	return async_event(WEFT_R_ASYNC_END, argv, nargs, kwnames);
}

static int flow_id(PyObject *o, uint64_t *id)
{
	if (!PyLong_Check(o)) {
		PyErr_SetString(PyExc_TypeError, "weft: a flow id must be an int");
		return -1;
	}
	*id = PyLong_AsUnsignedLongLongMask(o);
	return *id == (uint64_t)-1 && PyErr_Occurred() ? -1 : 0;
}

static PyObject *py_flow_out(PyObject *mod, PyObject *o)
{
	(void)mod;
	uint64_t id;
	if (flow_id(o, &id) < 0)
		return NULL;
	weft_flow_out(id);
	Py_RETURN_NONE;
}

static PyObject *py_flow_in(PyObject *mod, PyObject *o)
{
	(void)mod;
	uint64_t id;
	if (flow_id(o, &id) < 0)
		return NULL;
	weft_flow_in(id);
	Py_RETURN_NONE;
}

#define FASTKW (METH_FASTCALL | METH_KEYWORDS)
const PyMethodDef pw_event_methods[] = {
	{"instant", (PyCFunction)(void (*)(void))py_instant, FASTKW,
	 "instant(name, /, category=None, **args)\n--\n\n"
	 "A zero-duration event on the calling thread, with arguments."},
	{"complete", (PyCFunction)(void (*)(void))py_complete, FASTKW,
	 "complete(name, start_ns, end_ns, /, category=None, **args)\n--\n\n"
	 "A slice from start_ns to end_ns (weft.now_ns() values) on the calling thread, with\n"
	 "arguments: for values known only once the range is over. Record it after the range."},
	{"counter", (PyCFunction)(void (*)(void))py_counter, FASTKW,
	 "counter(name, value, unit=None)\n--\n\n"
	 "A point on the process-wide counter track name: an int (int64) or a float. The unit\n"
	 "(\"bytes\", \"ns\", \"count\" or any text) is the one given at the counter's first point."},
	{"async_begin", (PyCFunction)(void (*)(void))py_async_begin, FASTKW,
	 "async_begin(name, id, /, category=None)\n--\n\n"
	 "Begin an async slice, matched by (name, id) with the async_end that ends it on any thread."},
	{"async_end", (PyCFunction)(void (*)(void))py_async_end, FASTKW,
	 "async_end(name, id, /, category=None)\n--\n\nEnd the async slice (name, id)."},
	{"flow_out", py_flow_out, METH_O,
	 "flow_out(id, /)\n--\n\n"
	 "Start an arrow at the calling thread's most recent event (call it right after the scope\n"
	 "or instant it leaves from); flow_in(id) with the same id ends it."},
	{"flow_in", py_flow_in, METH_O,
	 "flow_in(id, /)\n--\n\nEnd the arrow id at the calling thread's most recent event."},
	{NULL, NULL, 0, NULL},
};
