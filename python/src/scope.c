/*
 * scope.c - `with weft.scope("name", **args):` and named tracks.
 *
 * A scope object holds its site, track and arguments (converted once, when it is made) and
 * records begin at __enter__ and end at __exit__; an exception leaving the block is marked as
 * in a traced call (an "exception" instant inside the slice). The same object may be entered
 * again while open (recursion, or a scope kept in a variable): a bit stack remembers, per
 * open level, whether its begin was recorded, so an end is written exactly when its begin
 * was, even if tracing started or a filter changed in between. Called with a function, a
 * scope object returns the traced function (the same wrapper as @weft.trace, with the
 * scope's name, category, track and arguments).
 *
 * weft.track("name") returns a Track: the process's named track of that name (weft_track),
 * whose scope() and instant() put events on that track instead of the thread's.
 */
#include "pyweft.h"

typedef struct {
	PyObject_HEAD
	struct weft_site *site, *exc_site;
	unsigned track;
	unsigned depth;  /* open levels */
	uint64_t begun;  /* bit i: whether level depth-i recorded its begin (the last 64 levels) */
	struct pw_args args;
} PwScope;

typedef struct {
	PyObject_HEAD
	unsigned id;
	PyObject *name;
} PwTrack;

static Py_ssize_t kw_find(PyObject *kwnames, const char *name)
{
	if (!kwnames)
		return -1;
	for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++)
		if (!PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), name))
			return i;
	return -1;
}

static PyObject *scope_new_on(unsigned track, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
	if (nargs != 1) {
		PyErr_SetString(PyExc_TypeError, "scope() takes the name as its one positional argument");
		return NULL;
	}
	Py_ssize_t ci = kw_find(kwnames, "category");
	PyObject *cat = ci >= 0 ? argv[nargs + ci] : NULL;
	struct weft_site *site = pw_site(WEFT_KIND_EVENT, argv[0], cat, NULL);
	struct weft_site *exc = site ? pw_exception_site(cat) : NULL;
	if (!exc)
		return NULL;
	PwScope *s = PyObject_New(PwScope, &PwScope_Type);
	if (!s)
		return NULL;
	s->site = site;
	s->exc_site = exc;
	s->track = track;
	s->depth = 0;
	s->begun = 0;
	s->args.n = 0;
	if (pw_args_from_kw(&s->args, argv + nargs, kwnames, ci) < 0) {
		Py_DECREF(s);
		return NULL;
	}
	return (PyObject *)s;
}

PyObject *pw_scope_make(PyObject *mod, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
	(void)mod;
	return scope_new_on(0, argv, nargs, kwnames);
}

static void scope_dealloc(PyObject *self)
{
	pw_args_clear(&((PwScope *)self)->args);
	PyObject_Free(self);
}

static PyObject *scope_enter(PyObject *self, PyObject *unused)
{
	(void)unused;
	PwScope *s = (PwScope *)self;
	unsigned bit = 0;
	if (weft__on_n(s->site, 2)) { /* begin and end: counted as 2 where not recorded */
		pw_begin_on(s->site, s->track, &s->args);
		bit = 1;
	}
	s->begun = (s->begun << 1) | bit;
	s->depth++;
	Py_INCREF(self);
	return self;
}

static PyObject *scope_exit(PyObject *self, PyObject *const *argv, Py_ssize_t nargs)
{
	PwScope *s = (PwScope *)self;
	if (!s->depth) {
		PyErr_SetString(PyExc_RuntimeError, "weft.scope: __exit__ without __enter__");
		return NULL;
	}
	unsigned bit = (unsigned)(s->begun & 1);
	s->begun >>= 1;
	s->depth--;
	if (bit) {
		if (nargs > 0 && argv[0] != Py_None)
			pw_mark_exception(s->exc_site, s->track, argv[0]);
		pw_end(s->site, s->track);
	}
	Py_RETURN_FALSE;
}

static PyObject *scope_call(PyObject *self, PyObject *args, PyObject *kw)
{
	PwScope *s = (PwScope *)self;
	if (kw || PyTuple_GET_SIZE(args) != 1) {
		PyErr_SetString(PyExc_TypeError, "a weft.scope decorates one function: @weft.scope(name)");
		return NULL;
	}
	return pw_trace_new(PyTuple_GET_ITEM(args, 0), s->site, s->exc_site, s->track, &s->args);
}

static PyObject *scope_repr(PyObject *self)
{
	PwScope *s = (PwScope *)self;
	return PyUnicode_FromFormat("<weft.scope '%s'>", s->site->name);
}

static PyMethodDef scope_methods[] = {
	{"__enter__", scope_enter, METH_NOARGS, "begin the slice"},
	{"__exit__", (PyCFunction)(void (*)(void))scope_exit, METH_FASTCALL,
	 "end the slice (an exception leaving the block is marked)"},
	{NULL, NULL, 0, NULL},
};

PyTypeObject PwScope_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "weft.scope",
	.tp_basicsize = sizeof(PwScope),
	.tp_dealloc = scope_dealloc,
	.tp_repr = scope_repr,
	.tp_call = scope_call,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A slice around a `with` block, or around each call of the function it decorates.",
	.tp_methods = scope_methods,
};

/* ---- tracks --------------------------------------------------------------------------- */

PyObject *pw_track_make(PyObject *mod, PyObject *name)
{
	(void)mod;
	const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
	if (!s) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_TypeError, "track(): the name must be a str");
		return NULL;
	}
	PwTrack *t = PyObject_New(PwTrack, &PwTrack_Type);
	if (!t)
		return NULL;
	t->id = weft_track(s); /* 0 (table full): the events go to the thread's own track */
	Py_INCREF(name);
	t->name = name;
	return (PyObject *)t;
}

static void track_dealloc(PyObject *self)
{
	Py_XDECREF(((PwTrack *)self)->name);
	PyObject_Free(self);
}

static PyObject *track_scope(PyObject *self, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
	return scope_new_on(((PwTrack *)self)->id, argv, nargs, kwnames);
}

static PyObject *track_instant(PyObject *self, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
	return pw_instant_on(((PwTrack *)self)->id, argv, nargs, kwnames);
}

static PyObject *track_repr(PyObject *self)
{
	PwTrack *t = (PwTrack *)self;
	return PyUnicode_FromFormat("<weft.track %R (%u)>", t->name, t->id);
}

static PyObject *track_get_name(PyObject *self, void *c)
{
	(void)c;
	PyObject *n = ((PwTrack *)self)->name;
	Py_INCREF(n);
	return n;
}

static PyObject *track_get_id(PyObject *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLong(((PwTrack *)self)->id);
}

static PyGetSetDef track_getset[] = {
	{"name", track_get_name, NULL, "the track's name", NULL},
	{"id", track_get_id, NULL, "weft's number for it (0: the table was full; thread tracks used)", NULL},
	{NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef track_methods[] = {
	{"scope", (PyCFunction)(void (*)(void))track_scope, METH_FASTCALL | METH_KEYWORDS,
	 "scope(name, /, category=None, **args)\n--\n\nweft.scope on this track."},
	{"instant", (PyCFunction)(void (*)(void))track_instant, METH_FASTCALL | METH_KEYWORDS,
	 "instant(name, /, category=None, **args)\n--\n\nweft.instant on this track."},
	{NULL, NULL, 0, NULL},
};

PyTypeObject PwTrack_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "weft.track",
	.tp_basicsize = sizeof(PwTrack),
	.tp_dealloc = track_dealloc,
	.tp_repr = track_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A named track of the process: its scope() and instant() put events on it.",
	.tp_methods = track_methods,
	.tp_getset = track_getset,
};
