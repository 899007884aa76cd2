/*
 * decorator.c - @weft.trace: a wrapper object around a callable that records a slice around
 * each call, and the proxy that traces each resumption of a generator or coroutine.
 *
 * The wrapper is a C type with vectorcall: a call goes straight from the interpreter into
 * trace_vectorcall, which checks the site's state byte (the one load of weft__on) and then
 * either calls the function at once (tracing off) or records begin, calls, records end. The
 * arguments are forwarded as they came (PY_VECTORCALL_ARGUMENTS_OFFSET included), nothing is
 * allocated and the GIL is never released. An exception leaves the call with an "exception"
 * instant inside the slice (arg exception=<type name>; weft's END records carry no arguments)
 * and then the end; the exception itself is not touched.
 *
 * Two types: PwTrace wraps a Python function and binds like one (a method gets its instance
 * through __get__; Py_TPFLAGS_METHOD_DESCRIPTOR lets obj.method() skip the bound method), and
 * PwTraceCallable wraps anything else callable and binds as that object does (a staticmethod
 * stays static, a builtin stays unbound). Both carry a __dict__ filled like functools.wraps.
 *
 * Generators and coroutines. A call of a generator or `async def` function only creates the
 * generator; its code runs at each next()/send()/throw(). When tracing is on, the wrapper
 * hands back a PwGenProxy (or PwCoroProxy) around it whose resumptions are each one slice,
 * so the slices show when the body actually ran, nested under whatever resumed it (a task
 * step, a `for` loop). The proxies are iterators (generator) or awaitables (coroutine) that
 * implement send/throw/close and am_send, so `for`, `yield from`, `await` and asyncio's tasks
 * drive them as they drive the real objects; other attributes (gi_frame, cr_code, ...) are
 * read through to the wrapped object. Async generator functions get one slice per call (the
 * creation), not per resumption.
 */
#include "pyweft.h"
#include <stddef.h>

enum { GEN_NONE = 0, GEN_GENERATOR = 1, GEN_COROUTINE = 2 };

typedef struct {
	PyObject_HEAD
	vectorcallfunc vectorcall;
	PyObject *func;
	PyObject *dict;
	PyObject *weakrefs;
	struct weft_site *site, *exc_site;
	unsigned track;
	int genkind;
	struct pw_args *args; /* NULL: none */
} PwTrace;

typedef struct {
	PyObject_HEAD
	PyObject *inner;
	PwTrace *owner; /* site, track, arguments */
} PwGenProxy;

static PyObject *str_send, *str_throw, *str_close; /* interned at first use */
static PyObject *update_wrapper;                   /* functools.update_wrapper */

/* ---- the call ------------------------------------------------------------------------- */

/* A Python function's own vectorcall, read from the object (PwTrace wraps only functions):
 * no call to find it, no result check on the way back (the function's result is sound). */
static inline PyObject *call_function(PyObject *f, PyObject *const *argv, size_t nargsf, PyObject *kwnames)
{
	vectorcallfunc vc = ((PyFunctionObject *)f)->vectorcall;
	if (__builtin_expect(vc != NULL, 1))
		return vc(f, argv, nargsf, kwnames);
	return PyObject_Vectorcall(f, argv, nargsf, kwnames);
}

static PyObject *wrap_generator(PwTrace *t, PyObject *g);

static PyObject *traced_gen_call(PwTrace *t, PyObject *const *argv, size_t nargsf, PyObject *kwnames)
{
	PyObject *r = call_function(t->func, argv, nargsf, kwnames);
	if (r && (PyGen_CheckExact(r) || PyCoro_CheckExact(r)))
		return wrap_generator(t, r);
	return r;
}

static PyObject *trace_vectorcall(PyObject *self, PyObject *const *argv, size_t nargsf, PyObject *kwnames)
{
	PwTrace *t = (PwTrace *)self;
	if (t->genkind) /* (the call makes the generator; its resumptions are the slices) */
		return weft__on(t->site) ? traced_gen_call(t, argv, nargsf, kwnames)
					 : call_function(t->func, argv, nargsf, kwnames);
	if (!weft__on_n(t->site, 2)) /* its begin and end, counted as 2 where not recorded */
		return call_function(t->func, argv, nargsf, kwnames);
	pw_begin_on(t->site, t->track, t->args);
	PyObject *r = call_function(t->func, argv, nargsf, kwnames);
	if (__builtin_expect(r == NULL, 0))
		pw_mark_exception(t->exc_site, t->track, PyErr_Occurred());
	pw_end(t->site, t->track);
	return r;
}

static PyObject *trace_callable_vectorcall(PyObject *self, PyObject *const *argv, size_t nargsf,
					   PyObject *kwnames)
{
	PwTrace *t = (PwTrace *)self;
	if (!weft__on_n(t->site, 2))
		return PyObject_Vectorcall(t->func, argv, nargsf, kwnames);
	pw_begin_on(t->site, t->track, t->args);
	PyObject *r = PyObject_Vectorcall(t->func, argv, nargsf, kwnames);
	if (__builtin_expect(r == NULL, 0))
		pw_mark_exception(t->exc_site, t->track, PyErr_Occurred());
	pw_end(t->site, t->track);
	return r;
}

/* ---- construction --------------------------------------------------------------------- */

static int genkind_of(PyObject *func)
{
	if (!PyFunction_Check(func))
		return GEN_NONE;
	int flags = ((PyCodeObject *)PyFunction_GET_CODE(func))->co_flags;
	if (flags & CO_COROUTINE)
		return GEN_COROUTINE;
	if ((flags & CO_GENERATOR) && !(flags & CO_ITERABLE_COROUTINE))
		return GEN_GENERATOR;
	return GEN_NONE; /* async generators, @types.coroutine generators: one slice per call */
}

static PwTrace *trace_alloc(PyObject *func, struct weft_site *site, struct weft_site *exc_site,
			    unsigned track, const struct pw_args *args)
{
	int is_function = PyFunction_Check(func);
	PyTypeObject *type = is_function ? &PwTrace_Type : &PwTraceCallable_Type;
	PwTrace *t = PyObject_GC_New(PwTrace, type);
	if (!t)
		return NULL;
	t->vectorcall = is_function ? trace_vectorcall : trace_callable_vectorcall;
	Py_INCREF(func);
	t->func = func;
	t->dict = NULL;
	t->weakrefs = NULL;
	t->site = site;
	t->exc_site = exc_site;
	t->track = track;
	t->genkind = genkind_of(func);
	t->args = NULL;
	if (args && args->n && !(t->args = pw_args_dup(args))) {
		PyObject_GC_Track(t);
		Py_DECREF(t);
		return NULL;
	}
	PyObject_GC_Track(t);
	return t;
}

/* a callable, or a descriptor whose binding is (classmethod is not callable itself) */
static int traceable(PyObject *func)
{
	if (PyCallable_Check(func) || Py_TYPE(func)->tp_descr_get)
		return 1;
	PyErr_Format(PyExc_TypeError, "weft.trace: %.100s object is not callable", Py_TYPE(func)->tp_name);
	return 0;
}

/* A traced `async def` function still answers True to iscoroutinefunction(): Python 3.12's
 * inspect.markcoroutinefunction, else asyncio's marker attribute (3.11). Best effort. */
static void mark_coroutine_function(PyObject *t)
{
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	PyObject *insp = PyImport_ImportModule("inspect");
	PyObject *mark = insp ? PyObject_GetAttrString(insp, "markcoroutinefunction") : NULL;
	if (mark) {
		PyObject *r = PyObject_CallOneArg(mark, t);
		Py_XDECREF(r);
	} else {
		PyErr_Clear();
		PyObject *co = PyImport_ImportModule("asyncio.coroutines");
		PyObject *flag = co ? PyObject_GetAttrString(co, "_is_coroutine") : NULL;
		if (flag)
			PyObject_SetAttrString(t, "_is_coroutine", flag);
		Py_XDECREF(flag);
		Py_XDECREF(co);
	}
	Py_XDECREF(mark);
	Py_XDECREF(insp);
	PyErr_Clear();
	PyErr_Restore(et, ev, tb);
}

PyObject *pw_trace_new(PyObject *func, struct weft_site *site, struct weft_site *exc_site,
		       unsigned track, const struct pw_args *args)
{
	if (!traceable(func))
		return NULL;
	PwTrace *t = trace_alloc(func, site, exc_site, track, args);
	if (!t)
		return NULL;
	/* __name__, __qualname__, __doc__, __module__, __dict__, __wrapped__ as functools.wraps */
	if (!update_wrapper) {
		PyObject *ft = PyImport_ImportModule("functools");
		update_wrapper = ft ? PyObject_GetAttrString(ft, "update_wrapper") : NULL;
		Py_XDECREF(ft);
		if (!update_wrapper) {
			Py_DECREF(t);
			return NULL;
		}
	}
	PyObject *r = PyObject_CallFunctionObjArgs(update_wrapper, (PyObject *)t, func, NULL);
	if (!r) {
		Py_DECREF(t);
		return NULL;
	}
	Py_DECREF(r);
	if (t->genkind == GEN_COROUTINE)
		mark_coroutine_function((PyObject *)t);
	return (PyObject *)t;
}

/* the slice's default name: the function's __qualname__, else __name__, else its repr */
static PyObject *default_name(PyObject *func)
{
	static const char *const attrs[] = {"__qualname__", "__name__"};
	for (int i = 0; i < 2; i++) {
		PyObject *n = PyObject_GetAttrString(func, attrs[i]);
		if (n && PyUnicode_Check(n))
			return n;
		Py_XDECREF(n);
		if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_AttributeError))
			return NULL;
		PyErr_Clear();
	}
	return PyObject_Repr(func);
}

/* trace(func, /, name=None, category=None) */
PyObject *pw_trace_make(PyObject *mod, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
	(void)mod;
	PyObject *name = Py_None, *cat = Py_None;
	Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
	if (nargs != 1)
		goto usage;
	for (Py_ssize_t i = 0; i < nk; i++) {
		PyObject *k = PyTuple_GET_ITEM(kwnames, i);
		if (!PyUnicode_CompareWithASCIIString(k, "name"))
			name = argv[nargs + i];
		else if (!PyUnicode_CompareWithASCIIString(k, "category"))
			cat = argv[nargs + i];
		else
			goto usage;
	}
	PyObject *func = argv[0];
	if (!traceable(func))
		return NULL;
	if (name == Py_None) {
		if (!(name = default_name(func)))
			return NULL;
	} else {
		Py_INCREF(name);
	}
	struct weft_site *site = pw_site(WEFT_KIND_EVENT, name, cat, NULL);
	Py_DECREF(name);
	struct weft_site *exc = site ? pw_exception_site(cat) : NULL;
	if (!exc)
		return NULL;
	return pw_trace_new(func, site, exc, 0, NULL);
usage:
	PyErr_SetString(PyExc_TypeError, "trace(func, /, name=None, category=None)");
	return NULL;
}

/* ---- the type ------------------------------------------------------------------------- */

static int trace_traverse(PyObject *self, visitproc visit, void *arg)
{
	PwTrace *t = (PwTrace *)self;
	Py_VISIT(t->func);
	Py_VISIT(t->dict);
	return 0;
}

static int trace_clear(PyObject *self)
{
	PwTrace *t = (PwTrace *)self;
	Py_CLEAR(t->func);
	Py_CLEAR(t->dict);
	return 0;
}

static void trace_dealloc(PyObject *self)
{
	PwTrace *t = (PwTrace *)self;
	PyObject_GC_UnTrack(self);
	if (t->weakrefs)
		PyObject_ClearWeakRefs(self);
	trace_clear(self);
	if (t->args) {
		pw_args_clear(t->args);
		PyMem_Free(t->args);
	}
	PyObject_GC_Del(self);
}

/* a function binds to the instance it is read from */
static PyObject *trace_get(PyObject *self, PyObject *obj, PyObject *type)
{
	(void)type;
	if (obj == NULL || obj == Py_None) {
		Py_INCREF(self);
		return self;
	}
	return PyMethod_New(self, obj);
}

/* any other callable binds as it would unwrapped (staticmethod, classmethod, builtins) */
static PyObject *trace_callable_get(PyObject *self, PyObject *obj, PyObject *type)
{
	PwTrace *t = (PwTrace *)self;
	descrgetfunc get = Py_TYPE(t->func)->tp_descr_get;
	if (!get) {
		Py_INCREF(self);
		return self;
	}
	PyObject *b = get(t->func, obj, type);
	if (!b || b == t->func) {
		Py_XDECREF(b);
		if (!b)
			return NULL;
		Py_INCREF(self);
		return self;
	}
	PwTrace *n = trace_alloc(b, t->site, t->exc_site, t->track, t->args);
	Py_DECREF(b);
	if (n && t->dict) {
		Py_INCREF(t->dict);
		n->dict = t->dict; /* the same __wrapped__, __name__, ... */
	}
	return (PyObject *)n;
}

static PyObject *trace_repr(PyObject *self)
{
	PwTrace *t = (PwTrace *)self;
	return PyUnicode_FromFormat("<weft.trace '%s' of %R>", t->site->name, t->func);
}

static PyObject *trace_get_name(PyObject *self, void *c)
{
	(void)c;
	return PyUnicode_FromString(((PwTrace *)self)->site->name);
}

static PyObject *trace_get_category(PyObject *self, void *c)
{
	(void)c;
	const char *cat = ((PwTrace *)self)->site->category;
	if (!*cat)
		Py_RETURN_NONE;
	return PyUnicode_FromString(cat);
}

/* pickled by reference, as the function it replaces: module.qualname (multiprocessing,
 * copy.copy) */
static PyObject *trace_reduce(PyObject *self, PyObject *unused)
{
	(void)unused;
	return PyObject_GetAttrString(self, "__qualname__");
}

static PyMethodDef trace_methods[] = {
	{"__reduce__", trace_reduce, METH_NOARGS, "pickled by reference (module and __qualname__)"},
	{NULL, NULL, 0, NULL},
};

static PyGetSetDef trace_getset[] = {
	{"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
	{"slice_name", trace_get_name, NULL, "the name of the slices this wrapper records", NULL},
	{"slice_category", trace_get_category, NULL, "their category (None: the default)", NULL},
	{NULL, NULL, NULL, NULL, NULL},
};

#define TRACE_TYPE(cname, pyname, get, flags) \
	PyTypeObject cname = { \
		PyVarObject_HEAD_INIT(NULL, 0) \
		.tp_name = pyname, \
		.tp_basicsize = sizeof(PwTrace), \
		.tp_dealloc = trace_dealloc, \
		.tp_vectorcall_offset = offsetof(PwTrace, vectorcall), \
		.tp_repr = trace_repr, \
		.tp_call = PyVectorcall_Call, \
		.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | (flags), \
		.tp_doc = "A callable traced by weft: each call is one slice (see weft.trace).", \
		.tp_traverse = trace_traverse, \
		.tp_clear = trace_clear, \
		.tp_weaklistoffset = offsetof(PwTrace, weakrefs), \
		.tp_methods = trace_methods, \
		.tp_getset = trace_getset, \
		.tp_descr_get = get, \
		.tp_dictoffset = offsetof(PwTrace, dict), \
	}

TRACE_TYPE(PwTrace_Type, "weft.trace", trace_get, Py_TPFLAGS_METHOD_DESCRIPTOR);
TRACE_TYPE(PwTraceCallable_Type, "weft.trace_callable", trace_callable_get, 0);

/* ---- generators and coroutines -------------------------------------------------------- */

static PyObject *wrap_generator(PwTrace *t, PyObject *g)
{
	PyTypeObject *type = PyCoro_CheckExact(g) ? &PwCoroProxy_Type : &PwGenProxy_Type;
	PwGenProxy *p = PyObject_GC_New(PwGenProxy, type);
	if (!p) {
		Py_DECREF(g);
		return NULL;
	}
	p->inner = g; /* the reference the call returned */
	Py_INCREF(t);
	p->owner = t;
	PyObject_GC_Track(p);
	return (PyObject *)p;
}

/* around each resumption: a slice, if the site records now */
static inline int resume_begin(PwGenProxy *p)
{
	PwTrace *t = p->owner;
	if (!weft__on_n(t->site, 2))
		return 0;
	pw_begin_on(t->site, t->track, t->args);
	return 1;
}

/* `failed`: the resumption raised; finishing (StopIteration) is no exception to mark */
static inline void resume_end(PwGenProxy *p, int on, int failed)
{
	if (!on)
		return;
	PwTrace *t = p->owner;
	if (failed) {
		PyObject *et = PyErr_Occurred();
		if (et && !PyErr_GivenExceptionMatches(et, PyExc_StopIteration))
			pw_mark_exception(t->exc_site, t->track, et);
	}
	pw_end(t->site, t->track);
}

static PySendResult proxy_am_send(PyObject *self, PyObject *arg, PyObject **result)
{
	PwGenProxy *p = (PwGenProxy *)self;
	int on = resume_begin(p);
	PySendResult r = PyIter_Send(p->inner, arg, result);
	resume_end(p, on, r == PYGEN_ERROR);
	return r;
}

static PyObject *proxy_iternext(PyObject *self)
{
	PwGenProxy *p = (PwGenProxy *)self;
	PyObject *res;
	int on = resume_begin(p);
	PySendResult r = PyIter_Send(p->inner, Py_None, &res);
	resume_end(p, on, r == PYGEN_ERROR);
	if (r == PYGEN_NEXT)
		return res;
	if (r == PYGEN_RETURN) {
		/* finished: a generator's value rides on StopIteration, which may itself be a tuple
		 * or an exception, so it is wrapped in the instance */
		if (res != Py_None) {
			PyObject *e = PyObject_CallOneArg(PyExc_StopIteration, res);
			if (e) {
				PyErr_SetObject(PyExc_StopIteration, e);
				Py_DECREF(e);
			}
		}
		Py_DECREF(res);
	}
	return NULL;
}

static int intern_names(void)
{
	if (str_send)
		return 0;
	str_send = PyUnicode_InternFromString("send");
	str_throw = PyUnicode_InternFromString("throw");
	str_close = PyUnicode_InternFromString("close");
	return str_send && str_throw && str_close ? 0 : -1;
}

static PyObject *proxy_send(PyObject *self, PyObject *arg)
{
	PwGenProxy *p = (PwGenProxy *)self;
	if (intern_names() < 0)
		return NULL;
	int on = resume_begin(p);
	PyObject *r = PyObject_CallMethodOneArg(p->inner, str_send, arg);
	resume_end(p, on, r == NULL);
	return r;
}

static PyObject *proxy_throw(PyObject *self, PyObject *const *argv, Py_ssize_t nargs)
{
	PwGenProxy *p = (PwGenProxy *)self;
	if (nargs < 1 || nargs > 3) {
		PyErr_SetString(PyExc_TypeError, "throw expected 1 to 3 arguments");
		return NULL;
	}
	if (intern_names() < 0)
		return NULL;
	PyObject *a[4] = {p->inner, argv[0], nargs > 1 ? argv[1] : NULL, nargs > 2 ? argv[2] : NULL};
	int on = resume_begin(p);
	PyObject *r = PyObject_VectorcallMethod(str_throw, a, (size_t)nargs + 1, NULL);
	resume_end(p, on, r == NULL);
	return r;
}

static PyObject *proxy_close(PyObject *self, PyObject *unused)
{
	(void)unused;
	if (intern_names() < 0)
		return NULL;
	return PyObject_CallMethodNoArgs(((PwGenProxy *)self)->inner, str_close);
}

static PyObject *proxy_self(PyObject *self)
{
	Py_INCREF(self);
	return self;
}

/* gi_frame, cr_code, __name__, ...: the wrapped object's */
static PyObject *proxy_getattro(PyObject *self, PyObject *name)
{
	PyObject *r = PyObject_GenericGetAttr(self, name);
	if (r || !PyErr_ExceptionMatches(PyExc_AttributeError))
		return r;
	PyErr_Clear();
	return PyObject_GetAttr(((PwGenProxy *)self)->inner, name);
}

static PyObject *proxy_repr(PyObject *self)
{
	PwGenProxy *p = (PwGenProxy *)self;
	return PyUnicode_FromFormat("<weft.trace of %R>", p->inner);
}

static int proxy_traverse(PyObject *self, visitproc visit, void *arg)
{
	PwGenProxy *p = (PwGenProxy *)self;
	Py_VISIT(p->inner);
	Py_VISIT(p->owner);
	return 0;
}

static int proxy_clear(PyObject *self)
{
	PwGenProxy *p = (PwGenProxy *)self;
	Py_CLEAR(p->inner);
	Py_CLEAR(p->owner);
	return 0;
}

static void proxy_dealloc(PyObject *self)
{
	PyObject_GC_UnTrack(self);
	proxy_clear(self);
	PyObject_GC_Del(self);
}

static PyMethodDef proxy_methods[] = {
	{"send", proxy_send, METH_O, "send(value): resume with value (one slice)"},
	{"throw", (PyCFunction)(void (*)(void))proxy_throw, METH_FASTCALL,
	 "throw(exc): raise exc inside (one slice)"},
	{"close", proxy_close, METH_NOARGS, "close(): as the wrapped object's close()"},
	{NULL, NULL, 0, NULL},
};

static PyAsyncMethods gen_async = {.am_send = proxy_am_send};
static PyAsyncMethods coro_async = {.am_await = proxy_self, .am_send = proxy_am_send};

PyTypeObject PwGenProxy_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "weft.traced_generator",
	.tp_basicsize = sizeof(PwGenProxy),
	.tp_dealloc = proxy_dealloc,
	.tp_as_async = &gen_async,
	.tp_repr = proxy_repr,
	.tp_getattro = proxy_getattro,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_doc = "A generator traced by weft: each resumption is one slice.",
	.tp_traverse = proxy_traverse,
	.tp_clear = proxy_clear,
	.tp_iter = proxy_self,
	.tp_iternext = proxy_iternext,
	.tp_methods = proxy_methods,
};

PyTypeObject PwCoroProxy_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "weft.traced_coroutine",
	.tp_basicsize = sizeof(PwGenProxy),
	.tp_dealloc = proxy_dealloc,
	.tp_as_async = &coro_async,
	.tp_repr = proxy_repr,
	.tp_getattro = proxy_getattro,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_doc = "A coroutine traced by weft: each resumption is one slice.",
	.tp_traverse = proxy_traverse,
	.tp_clear = proxy_clear,
	.tp_iternext = proxy_iternext, /* __await__ returns the proxy itself: an iterator */
	.tp_methods = proxy_methods,
};
