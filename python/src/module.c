/*
 * module.c - weft._weft, the explicit Python API over libweft: the module's functions (events,
 * counters, async slices, flows, control of the runtime) and what the other files share.
 *
 * Call sites. libweft identifies an event by a `struct weft_site` that must live as long as
 * the process (its registry links them and rewrites their state when filters change). Python
 * names arrive as strings, so each (kind, category, name) gets one site, created on first use
 * and kept forever in `sites`: a dict per kind, category -> {name -> address}. A lookup is two
 * dict probes on strings whose hashes Python caches, and allocates nothing. The number of
 * sites is bounded by the number of distinct names the program uses.
 *
 * Errors. The library reports bad options through its log callback; configure() and start()
 * install a callback that captures the line on the calling thread and turn it into the
 * ValueError/OSError they raise. Outside a capture it writes what libweft's default callback
 * writes (one "weft: ..." line on stderr for warnings and errors), so nothing else changes.
 *
 * Threads. Every call runs with the GIL held and never releases it: the module's globals are
 * written under the GIL only. The per-thread state is pw_thread_named (TLS, initial-exec like
 * libweft's own window) and the capture buffer of the thread inside configure()/start().
 * One interpreter per process: libweft is a process-wide runtime, so the module keeps its
 * state in C globals (single-phase initialisation).
 */
#include <errno.h>
#include "pyweft.h"
#include <string.h>
#include <unistd.h>

/* kind (WEFT_KIND_EVENT, _COUNTER, _ARG) -> {category -> {name -> int address}}; created at
 * module init, written under the GIL, never cleared (its sites must outlive every event). */
static PyObject *sites[3];
static PyObject *empty_str;     /* "" : the default category; set at init */
static PyObject *str_exception; /* "exception": the name of the exception instant */
static PyObject *threading_mod; /* for current_thread().name; set at init */

/* the key of the exception instant's argument */
static struct weft_site exc_key = WEFT__SITE_INIT(WEFT_KIND_ARG, "", "exception");
/* probed by enabled(): an argument-key site is ON exactly when events are recorded */
static struct weft_site probe_key = WEFT__SITE_INIT(WEFT_KIND_ARG, "", "python");

__thread int pw_thread_named __attribute__((tls_model("initial-exec")));

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

/* index of the keyword `name` in kwnames, or -1 */
static Py_ssize_t kw_index(PyObject *kwnames, const char *name)
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

/* ---- log capture ---------------------------------------------------------------------- */

/* The thread inside configure()/start() points this at its buffer: written and read by that
 * thread only (the writers' log lines go to stderr as before). */
static __thread char *cap_buf;
static __thread size_t cap_len;
#define CAP_SIZE 1024
static int log_installed; /* under the GIL */

static void py_log(int level, const char *msg, void *ud)
{
	(void)ud;
	if (cap_buf) {
		size_t l = strlen(msg);
		if (cap_len && cap_len + 2 < CAP_SIZE) {
			memcpy(cap_buf + cap_len, "; ", 2);
			cap_len += 2;
		}
		if (cap_len + l >= CAP_SIZE)
			l = CAP_SIZE - 1 - cap_len;
		memcpy(cap_buf + cap_len, msg, l);
		cap_len += l;
		cap_buf[cap_len] = 0;
		return;
	}
	if (level > WEFT_LOG_WARN)
		return;
	char line[CAP_SIZE + 8];
	int n = snprintf(line, sizeof(line), "weft: %s\n", msg);
	if (n > 0) {
		ssize_t r = write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
		(void)r;
	}
}

static void capture_begin(char *buf)
{
	if (!log_installed) {
		weft_set_log(py_log, NULL);
		log_installed = 1;
	}
	buf[0] = 0;
	cap_len = 0;
	cap_buf = buf;
}

static void capture_end(void)
{
	cap_buf = NULL;
}

/* ---- module functions ----------------------------------------------------------------- */

static PyObject *option_value(PyObject *v)
{
	if (PyBool_Check(v))
		return PyUnicode_FromString(v == Py_True ? "1" : "0");
	if (PyUnicode_Check(v)) {
		Py_INCREF(v);
		return v;
	}
	return PyObject_Str(v);
}

static PyObject *py_configure(PyObject *mod, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
	(void)mod;
	if (nargs > 1) {
		PyErr_SetString(PyExc_TypeError, "configure() takes at most one positional argument (an options string)");
		return NULL;
	}
	char buf[CAP_SIZE];
	int bad = 0;
	capture_begin(buf);
	if (nargs == 1 && argv[0] != Py_None) {
		const char *s = PyUnicode_Check(argv[0]) ? PyUnicode_AsUTF8(argv[0]) : NULL;
		if (!s) {
			capture_end();
			if (!PyErr_Occurred())
				PyErr_SetString(PyExc_TypeError, "configure(): the options must be a str such as 'key=value:key=value'");
			return NULL;
		}
		int rc = weft_configure(s);
		if (rc)
			bad = 1;
	}
	Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
	for (Py_ssize_t i = 0; i < nk; i++) {
		const char *k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i));
		PyObject *v = k ? option_value(argv[nargs + i]) : NULL;
		const char *vs = v ? PyUnicode_AsUTF8(v) : NULL;
		if (!vs) {
			Py_XDECREF(v);
			capture_end();
			return NULL;
		}
		if (weft_option_set(k, vs))
			bad = 1;
		Py_DECREF(v);
	}
	capture_end();
	if (bad) {
		PyErr_SetString(PyExc_ValueError, buf[0] ? buf : "weft: an option was rejected");
		return NULL;
	}
	Py_RETURN_NONE;
}

static PyObject *py_start(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	char buf[CAP_SIZE];
	capture_begin(buf);
	int rc = weft_start();
	capture_end();
	if (rc == 0)
		Py_RETURN_TRUE;
	if (buf[0]) { /* tracing was wanted and could not start: the library said why */
		PyErr_SetString(PyExc_OSError, buf); /* rc is -ECANCELED whatever the cause */
		return NULL;
	}
	Py_RETURN_FALSE; /* enable=0, or stopped already */
}

static PyObject *py_stop(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	int rc = weft_stop();
	if (rc < 0) {
		PyErr_Format(PyExc_OSError, "weft: stop: %s", weft_strerror(rc));
		return NULL;
	}
	Py_RETURN_NONE;
}

/* snapshot(reason=None): True when taken, False when refused by the throttles (EBUSY),
 * OSError otherwise (ENOTSUP: tracing is off). */
static PyObject *py_snapshot(PyObject *mod, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	(void)mod;
	Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
	PyObject *reason = nargs ? args[0] : Py_None;
	if (nargs + nk > 1 || (nk && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "reason"))) {
		PyErr_SetString(PyExc_TypeError, "snapshot() takes one argument, reason");
		return NULL;
	}
	if (nk)
		reason = args[0];
	const char *r = NULL;
	if (reason != Py_None) {
		if (!PyUnicode_Check(reason)) {
			PyErr_SetString(PyExc_TypeError, "snapshot(): reason must be a str or None");
			return NULL;
		}
		if (!(r = PyUnicode_AsUTF8(reason)))
			return NULL;
	}
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = weft_snapshot(r);
	Py_END_ALLOW_THREADS
	if (rc == -EBUSY)
		Py_RETURN_FALSE;
	if (rc < 0) { /* OSError(errno, message): e.errno is the reason */
		PyObject *e = Py_BuildValue("(is)", -rc, weft_strerror(rc));
		if (e) {
			PyErr_SetObject(PyExc_OSError, e);
			Py_DECREF(e);
		}
		return NULL;
	}
	Py_RETURN_TRUE;
}

static PyObject *py_flush(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	weft_flush();
	Py_RETURN_NONE;
}

static PyObject *py_now_ns(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	return PyLong_FromUnsignedLongLong(weft_now_ns());
}

static PyObject *py_enabled(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	/* before the first event nothing is recorded yet; asking must not start tracing */
	if (!weft_output_dir())
		Py_RETURN_FALSE;
	return PyBool_FromLong(weft__on(&probe_key));
}

static PyObject *py_output_dir(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	const char *d = weft_output_dir();
	if (!d || !*d) /* before start, or enable=0 */
		Py_RETURN_NONE;
	return PyUnicode_DecodeFSDefault(d);
}

static PyObject *py_thread_name(PyObject *mod, PyObject *name)
{
	(void)mod;
	const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
	if (!s) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_TypeError, "thread_name(): the name must be a str");
		return NULL;
	}
	pw_thread_named = 1; /* the program's name wins over threading's */
	weft_thread_name(s);
	Py_RETURN_NONE;
}

static PyObject *py_process_name(PyObject *mod, PyObject *name)
{
	(void)mod;
	const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
	if (!s) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_TypeError, "process_name(): the name must be a str");
		return NULL;
	}
	weft_process_name(s);
	Py_RETURN_NONE;
}

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
	Py_ssize_t ci = kw_index(kwnames, "category");
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
	Py_ssize_t ci = kw_index(kwnames, "category");
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
	Py_ssize_t ci = kw_index(kwnames, "category");
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

static PyObject *py_scope(PyObject *mod, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
	return pw_scope_make(mod, argv, nargs, kwnames);
}

static PyObject *py_trace(PyObject *mod, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
	return pw_trace_make(mod, argv, nargs, kwnames);
}

#define FASTKW (METH_FASTCALL | METH_KEYWORDS)
static PyMethodDef methods[] = {
	{"trace", (PyCFunction)(void (*)(void))py_trace, FASTKW,
	 "trace(func, /, name=None, category=None)\n--\n\n"
	 "The traced wrapper of func (see weft.trace, which also works as @weft.trace(...))."},
	{"scope", (PyCFunction)(void (*)(void))py_scope, FASTKW,
	 "scope(name, /, category=None, **args)\n--\n\n"
	 "A context manager (and decorator) recording a slice named name around its block; args\n"
	 "(int, float, bool, str; others as str()) become the slice's arguments."},
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
	{"configure", (PyCFunction)(void (*)(void))py_configure, FASTKW,
	 "configure(options=None, /, **options)\n--\n\n"
	 "Set options as in WEFT_OPTIONS: configure('output=d:enable=1') or configure(output='d').\n"
	 "Raises ValueError with weft's message for an unknown key or a bad value (the others are\n"
	 "applied). Once tracing started only categories= and filter= take effect."},
	{"start", py_start, METH_NOARGS,
	 "start()\n--\n\n"
	 "Start tracing now (else the first event starts it). True when recording; False when\n"
	 "enable=0 or after stop(); OSError when the trace directory cannot be made."},
	{"stop", py_stop, METH_NOARGS,
	 "stop()\n--\n\nFinish the trace (also done at exit). Later events are not recorded."},
	{"snapshot", (PyCFunction)(void (*)(void))py_snapshot, FASTKW,
	 "snapshot(reason=None)\n--\n\n"
	 "Take a snapshot now (weft_snapshot(): the marker, and with weft record --flight-recorder\n"
	 "the ring's window as DIR/snapshot-N), with reason on its marker. True when taken, False\n"
	 "when refused by the throttles; OSError otherwise (errno ENOTSUP: tracing is off)."},
	{"flush", py_flush, METH_NOARGS,
	 "flush()\n--\n\nHand the calling thread's buffered events to the writers now."},
	{"now_ns", py_now_ns, METH_NOARGS,
	 "now_ns()\n--\n\nNanoseconds on CLOCK_BOOTTIME, the trace's time base."},
	{"enabled", py_enabled, METH_NOARGS,
	 "enabled()\n--\n\n"
	 "True while events are recorded: tracing started (by start() or a first event), not\n"
	 "stopped, enable=1. Asking does not start tracing."},
	{"output_dir", py_output_dir, METH_NOARGS,
	 "output_dir()\n--\n\nThe trace directory this process writes to, or None before start."},
	{"track", pw_track_make, METH_O,
	 "track(name, /)\n--\n\n"
	 "The process's named track `name` (the same name gives the same track): its scope() and\n"
	 "instant() put events on that track, one lane per thread under it."},
	{"thread_name", py_thread_name, METH_O,
	 "thread_name(name, /)\n--\n\n"
	 "Name the calling thread's track (else its first event names it after\n"
	 "threading.current_thread().name)."},
	{"process_name", py_process_name, METH_O,
	 "process_name(name, /)\n--\n\nName the process's track."},
	{NULL, NULL, 0, NULL},
};

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
	if (!empty_str) {
		if (!(empty_str = PyUnicode_InternFromString("")) ||
		    !(str_exception = PyUnicode_InternFromString("exception")))
			return NULL;
		for (int i = 0; i < 3; i++)
			if (!(sites[i] = PyDict_New()))
				return NULL;
		if (!(threading_mod = PyImport_ImportModule("threading")))
			return NULL;
	}
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
