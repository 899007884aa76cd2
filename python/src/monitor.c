/*
 * monitor.c - the call tracer's hook on CPython 3.12 and later: sys.monitoring (PEP 669).
 *
 * weft takes a tool id of its own (4, else 3, 5, 1, 0: never 2, the profiler's, so that
 * cProfile still runs beside it, nor 6 and 7, sys.setprofile's and sys.settrace's) and
 * registers C callbacks (objects with a vectorcall slot), for every thread of the interpreter:
 *
 *   PY_START, PY_RESUME, PY_THROW    a BEGIN: a call, or a resumption of a generator or
 *                                    coroutine (by next()/send(), or by throw()/close())
 *   PY_RETURN, PY_YIELD              an END
 *   PY_UNWIND                        an END with WEFT_END_EXCEPTION (left by an exception)
 *   CALL, C_RETURN, C_RAISE          with c_calls: the same for the C function called (a
 *                                    builtin_function_or_method, or a method descriptor with
 *                                    its self, as the profile function sees it bound)
 *
 * These are the slices the frame-evaluation hook gives on 3.11 (calltrace.c): the call of a
 * generator or coroutine function only makes the object and starts nothing (its PY_START comes
 * with the first resumption), every resumption is a slice, a frame left by an exception ends
 * flagged. A C call is recorded only under a Python frame that is itself recorded.
 *
 * Each thread keeps a stack of one bit per frame (and C call) begun and not yet ended: 1 where
 * its BEGIN was written. An end writes its END when the bit says so, as the 3.11 hook, which
 * decides at the begin and pairs the END with it: a filter changed (weft.configure) or
 * recording enabled or disabled (--control) while a call runs does not split its slice. Frames
 * that were running when tracing started report their ends too, with nothing on the stack:
 * no END (the 3.11 hook never sees them). stop() turns every event off: a frame still running
 * keeps an open slice, which the converters end at the thread's end. Frames run inside
 * another tool's callback (a Python profile function of the program's, say) report no events
 * to any tool: they are not recorded (the 3.11 hook records them).
 *
 * Per event: the callback call (CPython boxes the instruction offset and calls through
 * vectorcall), one load of the code's site (the code-extra slot), its state, the stack bit
 * and the 16-byte record.
 */
#include "calltrace.h"
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#if PY_VERSION_HEX >= 0x030C0000

static int tool = -1;               /* the tool id weft holds, -1: none */
static PyObject *missing;           /* sys.monitoring.MISSING (CALL's arg0 when there is none) */
static int mon_c_calls;             /* CALL, C_RETURN, C_RAISE are on */
static unsigned gen = 1;            /* bumped at each start: older stacks are void */
static pthread_key_t stack_key;     /* frees a thread's stack when it ends */
static int stack_key_made;

/* Per thread: one bit per frame (and C call) begun since the start and not yet ended, 1 where
 * its BEGIN was written: the END follows the begin's decision, as on 3.11 (a filter or an
 * enable/disable changed in between does not split a slice). `over`: frames beyond what
 * could be allocated, whose ends are not written. */
static __thread struct {
	unsigned gen;
	uint32_t depth, cap, over;
	uint64_t *bits;
} here __attribute__((tls_model("initial-exec")));

static void stack_free(void *bits)
{
	free(bits);
}

/* The slow path of push(): a new start, or a full stack (grown by doubling). */
static int stack_room(void)
{
	if (here.gen != gen) {
		here.gen = gen;
		here.depth = here.over = 0;
	}
	if (here.depth < here.cap)
		return 1;
	uint32_t cap = here.cap ? 2 * here.cap : 1024;
	uint64_t *b = cap > here.cap ? realloc(here.bits, cap / 8) : NULL;
	if (!b)
		return 0;
	if (stack_key_made)
		pthread_setspecific(stack_key, b);
	here.bits = b;
	here.cap = cap;
	return 1;
}

static inline void push(int on)
{
	if (__builtin_expect(here.gen != gen || here.depth == here.cap, 0) && !stack_room()) {
		here.over++;
		return;
	}
	uint32_t d = here.depth++;
	uint64_t m = 1ull << (d & 63);
	if (on)
		here.bits[d >> 6] |= m;
	else
		here.bits[d >> 6] &= ~m;
}

/* The end of the thread's innermost frame: was its BEGIN written? 0 for a frame that began
 * before the start (nothing on the stack). */
static inline int pop(void)
{
	if (__builtin_expect(here.gen != gen, 0))
		return 0;
	if (__builtin_expect(here.over != 0, 0)) {
		here.over--;
		return 0;
	}
	if (__builtin_expect(here.depth == 0, 0))
		return 0;
	uint32_t d = --here.depth;
	return (here.bits[d >> 6] >> (d & 63)) & 1;
}

static inline __attribute__((always_inline)) void begin(struct weft_site *s)
{
	int on = weft__on(s);
	push(on);
	if (on) {
		if (__builtin_expect(name_tries < NAME_TRIES, 0))
			name_thread();
		weft__rec2(weft__hdr(s->id, WEFT_R_BEGIN, 0, 0));
	}
}

/* The END of the innermost frame, of site s, when its BEGIN was written (pop() first: the
 * site is looked up only for an END that is written). */
static inline __attribute__((always_inline)) void end_on(struct weft_site *s, int exc)
{
	if (__builtin_expect(!exc, 1))
		weft__end_leaf(s->id);
	else
		weft__rec3(weft__hdr(s->id, WEFT_R_END, 1, 0), WEFT_END_EXCEPTION);
}

/* PY_START, PY_RESUME, PY_THROW: (code, offset[, exception]) */
static PyObject *on_begin(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
	(void)self;
	(void)kw;
	Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
	if (__builtin_expect(nargs >= 1 && PyCode_Check(args[0]), 1))
		begin(site_of((PyCodeObject *)args[0]));
	Py_RETURN_NONE;
}

/* PY_RETURN, PY_YIELD: (code, offset, value); PY_UNWIND: (code, offset, exception) */
static inline __attribute__((always_inline)) PyObject *py_end(PyObject *const *args, Py_ssize_t nargs,
								int exc)
{
	if (__builtin_expect(nargs >= 1 && PyCode_Check(args[0]), 1) && pop())
		end_on(site_of((PyCodeObject *)args[0]), exc);
	Py_RETURN_NONE;
}

static PyObject *on_end(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
	(void)self;
	(void)kw;
	return py_end(args, PyVectorcall_NARGS(nargsf), 0);
}

static PyObject *on_unwind(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
	(void)self;
	(void)kw;
	return py_end(args, PyVectorcall_NARGS(nargsf), 1);
}

/* The PyMethodDef a CALL's callable runs, where the profile function would see a C call: a
 * builtin_function_or_method, or a method descriptor called with its self (which the profile
 * function gets bound). NULL for anything else (Python functions, types, ...). */
static inline const PyMethodDef *c_method(PyObject *callable, PyObject *arg0)
{
	if (PyCFunction_Check(callable))
		return ((PyCFunctionObject *)callable)->m_ml;
	if (Py_IS_TYPE(callable, &PyMethodDescr_Type) && arg0 != missing)
		return ((PyMethodDescrObject *)callable)->d_method;
	return NULL;
}

/* The site of a C call (made at its first sight: a descriptor is bound to its self for that,
 * as the profile function would get it); `skip` when not recorded (a caller not recorded, a
 * site that cannot be made). */
static struct weft_site *c_site(PyObject *const *args, const PyMethodDef *ml)
{
	if (!weft__on(site_of((PyCodeObject *)args[0])))
		return &skip;
	struct weft_site *c = csite_find(ml);
	if (!c) {
		PyObject *fn = args[2];
		if (PyCFunction_Check(fn)) {
			c = csite_first_sight((PyCFunctionObject *)fn);
		} else {
			PyObject *self = args[3];
			PyObject *bound = Py_TYPE(fn)->tp_descr_get(fn, self, (PyObject *)Py_TYPE(self));
			if (bound && PyCFunction_Check(bound))
				c = csite_first_sight((PyCFunctionObject *)bound);
			Py_XDECREF(bound);
			PyErr_Clear();
		}
	}
	return c ? c : &skip;
}

/* CALL: (code, offset, callable, arg0). Only the C callables get a place on the stack: they
 * are the ones C_RETURN or C_RAISE end. */
static PyObject *on_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
	(void)self;
	(void)kw;
	Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
	const PyMethodDef *ml = nargs >= 4 && PyCode_Check(args[0]) ? c_method(args[2], args[3]) : NULL;
	if (ml)
		begin(c_site(args, ml));
	Py_RETURN_NONE;
}

/* C_RETURN, C_RAISE: (code, offset, callable, arg0) */
static inline PyObject *c_end(PyObject *const *args, Py_ssize_t nargs, int exc)
{
	const PyMethodDef *ml = nargs >= 4 && PyCode_Check(args[0]) ? c_method(args[2], args[3]) : NULL;
	if (ml) {
		if (pop()) {
			struct weft_site *c = csite_find(ml); /* made at the CALL that wrote its BEGIN */
			if (c)
				end_on(c, exc);
		}
	}
	Py_RETURN_NONE;
}

static PyObject *on_c_return(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
	(void)self;
	(void)kw;
	return c_end(args, PyVectorcall_NARGS(nargsf), 0);
}

static PyObject *on_c_raise(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
	(void)self;
	(void)kw;
	return c_end(args, PyVectorcall_NARGS(nargsf), 1);
}

/* The callbacks: objects of a small type of weft's, called by CPython through their own
 * vectorcall slot (no builtin-function layer in between). */
typedef struct {
	PyObject_HEAD
	vectorcallfunc vectorcall;
} hook_object;

static PyTypeObject hook_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "weft._calltrace.hook",
	.tp_basicsize = sizeof(hook_object),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
	.tp_vectorcall_offset = offsetof(hook_object, vectorcall),
	.tp_call = PyVectorcall_Call,
};

static const vectorcallfunc callbacks[] = {on_begin, on_end, on_unwind, on_call, on_c_return, on_c_raise};

static PyObject *hook_new(vectorcallfunc f)
{
	if (!(hook_type.tp_flags & Py_TPFLAGS_READY) && PyType_Ready(&hook_type) < 0)
		return NULL;
	hook_object *h = PyObject_New(hook_object, &hook_type);
	if (h)
		h->vectorcall = f;
	return (PyObject *)h;
}

/* sys.monitoring's events, each with its callback (an index into callbacks[]). */
static const struct {
	const char *event;
	int cb;
	int c_call; /* only with c_calls */
} wiring[] = {
	{"PY_START", 0, 0}, {"PY_RESUME", 0, 0}, {"PY_THROW", 0, 0}, {"PY_RETURN", 1, 0},
	{"PY_YIELD", 1, 0}, {"PY_UNWIND", 2, 0}, {"CALL", 3, 1}, {"C_RETURN", 4, 1},
	{"C_RAISE", 5, 1},
};
#define NWIRING (sizeof(wiring) / sizeof(wiring[0]))

static PyObject *monitoring(void)
{
	PyObject *m = PySys_GetObject("monitoring"); /* borrowed */
	if (!m && !PyErr_Occurred())
		PyErr_SetString(PyExc_RuntimeError, "weft: sys.monitoring is missing");
	return m;
}

/* Calls sys.monitoring.NAME(args): 0, or -1 with the exception set. */
static int call(PyObject *mon, const char *name, const char *fmt, ...)
{
	va_list va;
	va_start(va, fmt);
	PyObject *f = PyObject_GetAttrString(mon, name);
	PyObject *a = f ? Py_VaBuildValue(fmt, va) : NULL;
	va_end(va);
	PyObject *r = a ? PyObject_CallObject(f, a) : NULL;
	Py_XDECREF(a);
	Py_XDECREF(f);
	Py_XDECREF(r);
	return r ? 0 : -1;
}

/* A free tool id: 4, 3, 5, 1, 0 in that order (2 is the profiler's: cProfile). */
static int take_tool(PyObject *mon)
{
	static const int order[] = {4, 3, 5, 1, 0};
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		PyObject *f = PyObject_GetAttrString(mon, "get_tool");
		PyObject *r = f ? PyObject_CallFunction(f, "i", order[i]) : NULL;
		Py_XDECREF(f);
		if (!r)
			return -1;
		int free_ = r == Py_None;
		Py_DECREF(r);
		if (free_ && call(mon, "use_tool_id", "(is)", order[i], "weft") == 0)
			return order[i];
		PyErr_Clear();
	}
	PyErr_SetString(PyExc_RuntimeError, "weft: every sys.monitoring tool id is in use");
	return -1;
}

static long event_bit(PyObject *mon, const char *name)
{
	PyObject *events = PyObject_GetAttrString(mon, "events");
	PyObject *v = events ? PyObject_GetAttrString(events, name) : NULL;
	long bit = v ? PyLong_AsLong(v) : -1;
	Py_XDECREF(v);
	Py_XDECREF(events);
	return bit;
}

static void release(PyObject *mon)
{
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	if (tool >= 0) {
		call(mon, "set_events", "(ii)", tool, 0);
		PyErr_Clear();
		for (size_t i = 0; i < NWIRING; i++) {
			long bit = event_bit(mon, wiring[i].event);
			if (bit > 0)
				call(mon, "register_callback", "(ilO)", tool, bit, Py_None);
			PyErr_Clear();
		}
		call(mon, "free_tool_id", "(i)", tool);
		PyErr_Clear();
		tool = -1;
	}
	Py_CLEAR(missing);
	PyErr_Restore(et, ev, tb);
}

int ct_monitor_start(int c_calls)
{
	PyObject *mon = monitoring();
	if (!mon || tool >= 0)
		return mon ? 0 : -1;
	if (!stack_key_made && pthread_key_create(&stack_key, stack_free) == 0)
		stack_key_made = 1;
	missing = PyObject_GetAttrString(mon, "MISSING");
	if (!missing || (tool = take_tool(mon)) < 0)
		goto fail;
	long mask = 0;
	for (size_t i = 0; i < NWIRING; i++) {
		if (wiring[i].c_call && !c_calls)
			continue;
		long bit = event_bit(mon, wiring[i].event);
		if (bit <= 0)
			goto fail;
		PyObject *cb = hook_new(callbacks[wiring[i].cb]);
		int r = cb ? call(mon, "register_callback", "(ilO)", tool, bit, cb) : -1;
		Py_XDECREF(cb);
		if (r < 0)
			goto fail;
		/* C_RETURN and C_RAISE come with CALL: set_events refuses them alone */
		if (strcmp(wiring[i].event, "C_RETURN") && strcmp(wiring[i].event, "C_RAISE"))
			mask |= bit;
	}
	gen++;
	if (call(mon, "set_events", "(il)", tool, mask) < 0)
		goto fail;
	mon_c_calls = c_calls;
	return 0;
fail:
	release(mon);
	return -1;
}

void ct_monitor_stop(void)
{
	PyObject *mon = monitoring();
	if (mon)
		release(mon);
	PyErr_Clear();
	mon_c_calls = 0;
}

#else /* before 3.12: no sys.monitoring (calltrace.c never calls these) */

int ct_monitor_start(int c_calls)
{
	(void)c_calls;
	PyErr_SetString(PyExc_RuntimeError, "weft: sys.monitoring needs CPython 3.12 or later");
	return -1;
}

void ct_monitor_stop(void)
{
}

#endif
