/*
 * site.c - what every part of weft._weft shares: the process-lifetime call sites of Python
 * names, typed arguments from Python values, the exception instant, and the naming of a
 * thread's track after threading's name for it.
 *
 * Call sites. libweft identifies an event by a `struct weft_site` that must live as long as
 * the process (its registry links them and rewrites their state when filters change). Python
 * names arrive as strings, so each (kind, category, name) gets one site, created on first use
 * and kept forever in `sites`: a dict per kind, category -> {name -> address}. A lookup is two
 * dict probes on strings whose hashes Python caches, and allocates nothing. The number of
 * sites is bounded by the number of distinct names the program uses.
 *
 * Threads. Every call runs with the GIL held and never releases it: the globals here are
 * written under the GIL only (by pw_shared_init, at the module's init). The per-thread state
 * is pw_thread_named (TLS, initial-exec like libweft's own window).
 */
#include "pyweft.h"
#include <string.h>

/* kind (WEFT_KIND_EVENT, _COUNTER, _ARG) -> {category -> {name -> int address}}; created at
 * module init, written under the GIL, never cleared (its sites must outlive every event). */
static PyObject *sites[3];
static PyObject *empty_str;     /* "" : the default category; set at init */
static PyObject *str_exception; /* "exception": the name of the exception instant */
static PyObject *threading_mod; /* for current_thread().name; set at init */

/* the key of the exception instant's argument */
static struct weft_site exc_key = WEFT__SITE_INIT(WEFT_KIND_ARG, "", "exception");

__thread int pw_thread_named __attribute__((tls_model("initial-exec")));

int pw_shared_init(void)
{
	if (empty_str)
		return 0;
	if (!(empty_str = PyUnicode_InternFromString("")) ||
	    !(str_exception = PyUnicode_InternFromString("exception")))
		return -1;
	for (int i = 0; i < 3; i++)
		if (!(sites[i] = PyDict_New()))
			return -1;
	if (!(threading_mod = PyImport_ImportModule("threading")))
		return -1;
	return 0;
}

/* ---- sites ---------------------------------------------------------------------------- */

struct pw_site {
	struct weft_site site;
	char text[]; /* name, category, unit, each NUL-terminated */
};

static int kind_slot(int kind)
{
	return kind == WEFT_KIND_COUNTER ? 1 : kind == WEFT_KIND_ARG ? 2 : 0;
}

static struct weft_site *site_create(int kind, PyObject *name, PyObject *cat, PyObject *unit)
{
	Py_ssize_t ln, lc, lu = 0;
	const char *n = PyUnicode_AsUTF8AndSize(name, &ln);
	if (!n)
		return NULL;
	const char *c = PyUnicode_AsUTF8AndSize(cat, &lc);
	if (!c)
		return NULL;
	const char *u = "";
	if (unit && !(u = PyUnicode_AsUTF8AndSize(unit, &lu)))
		return NULL;
	struct pw_site *p = PyMem_RawCalloc(1, sizeof(*p) + (size_t)ln + (size_t)lc + (size_t)lu + 3);
	if (!p) {
		PyErr_NoMemory();
		return NULL;
	}
	char *t = p->text;
	memcpy(t, n, (size_t)ln + 1);
	memcpy(t + ln + 1, c, (size_t)lc + 1);
	memcpy(t + ln + 1 + lc + 1, u, (size_t)lu + 1);
	p->site.kind = (uint8_t)kind;
	p->site.name = t;
	p->site.category = t + ln + 1;
	p->site.unit = kind == WEFT_KIND_COUNTER ? t + ln + 1 + lc + 1 : NULL;
	return &p->site;
}

struct weft_site *pw_site(int kind, PyObject *name, PyObject *category, PyObject *unit)
{
	if (!PyUnicode_Check(name)) {
		PyErr_Format(PyExc_TypeError, "weft: a name must be a str, not %.100s", Py_TYPE(name)->tp_name);
		return NULL;
	}
	if (!category || category == Py_None)
		category = empty_str;
	else if (!PyUnicode_Check(category)) {
		PyErr_Format(PyExc_TypeError, "weft: a category must be a str or None, not %.100s",
			     Py_TYPE(category)->tp_name);
		return NULL;
	}
	if (unit == Py_None)
		unit = NULL;
	if (unit && !PyUnicode_Check(unit)) {
		PyErr_Format(PyExc_TypeError, "weft: a unit must be a str or None, not %.100s",
			     Py_TYPE(unit)->tp_name);
		return NULL;
	}
	PyObject *bycat = sites[kind_slot(kind)];
	PyObject *names = PyDict_GetItemWithError(bycat, category); /* borrowed */
	if (names) {
		PyObject *addr = PyDict_GetItemWithError(names, name);
		if (addr)
			return PyLong_AsVoidPtr(addr);
	}
	if (PyErr_Occurred())
		return NULL;
	if (!names) {
		names = PyDict_New();
		if (!names || PyDict_SetItem(bycat, category, names) < 0) {
			Py_XDECREF(names);
			return NULL;
		}
		Py_DECREF(names); /* bycat holds it */
	}
	struct weft_site *s = site_create(kind, name, category, unit);
	if (!s)
		return NULL;
	PyObject *addr = PyLong_FromVoidPtr(s);
	if (!addr || PyDict_SetItem(names, name, addr) < 0) {
		Py_XDECREF(addr);
		PyMem_RawFree(s); /* never seen by libweft */
		return NULL;
	}
	Py_DECREF(addr);
	return s;
}

struct weft_site *pw_exception_site(PyObject *category)
{
	return pw_site(WEFT_KIND_EVENT, str_exception, category, NULL);
}

/* ---- arguments ------------------------------------------------------------------------ */

void pw_args_clear(struct pw_args *a)
{
	for (unsigned i = 0; i < a->n; i++)
		Py_CLEAR(a->keep[i]);
	a->n = 0;
}

struct pw_args *pw_args_dup(const struct pw_args *a)
{
	struct pw_args *d = PyMem_Malloc(sizeof(*d));
	if (!d) {
		PyErr_NoMemory();
		return NULL;
	}
	*d = *a;
	for (unsigned i = 0; i < d->n; i++)
		Py_XINCREF(d->keep[i]);
	return d;
}

/* one value: bool, int (int64, else uint64, else its decimal string), float, str; anything
 * else as its str() */
static int arg_set(struct weft_arg *a, PyObject **keep, PyObject *v)
{
	*keep = NULL;
	if (PyBool_Check(v)) {
		a->type = WEFT_R_ARG_BOOL;
		a->v.u = v == Py_True;
		return 0;
	}
	if (PyLong_Check(v)) {
		int overflow;
		long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
		if (!overflow) {
			if (x == -1 && PyErr_Occurred())
				return -1;
			a->type = WEFT_R_ARG_I64;
			a->v.i = x;
			return 0;
		}
		if (overflow > 0) {
			unsigned long long u = PyLong_AsUnsignedLongLong(v);
			if (!(u == (unsigned long long)-1 && PyErr_Occurred())) {
				a->type = WEFT_R_ARG_U64;
				a->v.u = u;
				return 0;
			}
			PyErr_Clear();
		}
		/* beyond 64 bits: its decimal string, below */
	} else if (PyFloat_Check(v)) {
		a->type = WEFT_R_ARG_F64;
		a->v.d = PyFloat_AS_DOUBLE(v);
		return 0;
	}
	PyObject *s;
	if (PyUnicode_Check(v)) {
		s = v;
		Py_INCREF(s);
	} else if (!(s = PyObject_Str(v))) {
		return -1;
	}
	const char *u = PyUnicode_AsUTF8(s); /* cached in the str object: lives as long as s */
	if (!u) {
		Py_DECREF(s);
		return -1;
	}
	a->type = WEFT_R_ARG_STR;
	a->v.s = u;
	*keep = s;
	return 0;
}

int pw_args_from_kw(struct pw_args *out, PyObject *const *kwvalues, PyObject *kwnames, Py_ssize_t skip)
{
	out->n = 0;
	if (!kwnames)
		return 0;
	Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
	for (Py_ssize_t i = 0; i < nk; i++) {
		if (i == skip)
			continue;
		if (out->n == PW_MAX_ARGS) {
			PyErr_SetString(PyExc_TypeError, "weft: at most 16 arguments on one event");
			goto fail;
		}
		struct weft_arg *a = &out->a[out->n];
		a->key = pw_site(WEFT_KIND_ARG, PyTuple_GET_ITEM(kwnames, i), NULL, NULL);
		if (!a->key || arg_set(a, &out->keep[out->n], kwvalues[i]) < 0)
			goto fail;
		out->n++;
	}
	return 0;
fail:
	pw_args_clear(out);
	return -1;
}

Py_ssize_t pw_kw_index(PyObject *kwnames, const char *name)
{
	if (!kwnames)
		return -1;
	for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++)
		if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), name) == 0)
			return i;
	return -1;
}

void pw_mark_exception(struct weft_site *exc_site, unsigned track, PyObject *type)
{
	if (!exc_site || !weft__on(exc_site))
		return;
	struct weft_arg a;
	a.key = &exc_key;
	a.type = WEFT_R_ARG_STR;
	a.v.s = type && PyType_Check(type) ? ((PyTypeObject *)type)->tp_name : "?";
	weft_event_args(exc_site, WEFT_R_INSTANT, track, &a, 1);
}

/* ---- threads -------------------------------------------------------------------------- */

void pw_name_thread_slow(void)
{
	pw_thread_named = 1;
	if (!threading_mod)
		return;
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb); /* nothing of the caller's may be lost or added */
	PyObject *t = PyObject_CallMethod(threading_mod, "current_thread", NULL);
	PyObject *n = t ? PyObject_GetAttrString(t, "name") : NULL;
	const char *s = n && PyUnicode_Check(n) ? PyUnicode_AsUTF8(n) : NULL;
	if (s)
		weft_thread_name(s);
	Py_XDECREF(n);
	Py_XDECREF(t);
	PyErr_Clear();
	PyErr_Restore(et, ev, tb);
}
