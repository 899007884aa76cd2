/*
 * calltrace.c - weft._calltrace: every Python function call as a slice on its thread's track,
 * in the same per-thread stream (and so on the same stack and clock) as the native code's
 * function events and weft.h slices.
 *
 * CPython 3.11: a PEP 523 frame-evaluation function. The interpreter calls it for every frame
 * it evaluates - each call of a Python function, and each resumption of a generator or
 * coroutine (3.11 inlines Python-to-Python calls only while no such function is set, so with
 * it set every call comes here). It writes a BEGIN, calls the evaluator that was installed
 * before it (CPython's own, usually), and writes an END when that returns: with one extra word
 * of flags (WEFT_END_EXCEPTION) when the frame was left by an exception, so slices always
 * balance. The call of a generator, coroutine or async generator function, which only makes
 * the object, gets no slice: its resumptions do, so the slices are the calls sys.setprofile
 * and cProfile count (a generator of 10 yields: 11). Each Python call is thus a C call too:
 * a frame entered with the thread's C stack nearly used up runs on a fresh stack segment
 * (cstack.c), so that a recursion as deep as the program's recursion limit allows runs as
 * it does untraced. Each code object maps to a weft site (name co_qualname, category "python", its
 * co_filename and co_firstlineno recorded once as the site's source location), cached in a
 * code-extra slot: per event the work is a load of that slot, the site's state byte and the
 * two 16-byte records - no string work, no reference counting, no dictionary lookup. A code
 * object seen for the first time takes a slow path that makes its site; filters (weft record
 * -F/-N, i.e. filter=) decide there, once, by the site's state (OFF: skipped). The evaluator
 * is per interpreter, so threads that were running before tracing started are traced from
 * their next call on (frames already running when it started, or still running when it
 * stopped, just have no slice or keep theirs).
 *
 * Sites are never freed: the registry links them and the code objects point to them; a code
 * object seen while tracing is kept alive (one reference) until tracing stops.
 *
 * CPython 3.12 and later: sys.monitoring (PEP 669), in monitor.c, with the same slices.
 *
 * Other versions (and start(hook="profile"), to test it): a C profile function
 * (PyEval_SetProfile; on 3.12+ PyEval_SetProfileAllThreads) with the same records, slower
 * (a reference count per event) and, on 3.11, for the calling thread only.
 *
 * C calls (start(c_calls=True), weft record --python=c-calls): the C functions Python code
 * calls (builtins, extension functions, methods of built-in types) are reported by CPython
 * only to a profile function, as PyTrace_C_CALL / C_RETURN / C_EXCEPTION with the callable as
 * the argument - on 3.11 always a builtin_function_or_method (PyCFunctionObject; a method
 * descriptor is bound to its self first), never a type (`int('x')` is not a C call here). So
 * this mode adds the profile function, for the C calls only (the eval hook still records the
 * Python calls; with hook='profile' the profile function records both), and each C callable
 * maps to a weft site (csite.c: category "python-c", one per PyMethodDef, one hash probe per C
 * event, named at first sight: `len`, `math.sqrt`, `list.append`).
 * A C call is recorded only under a Python frame that is itself recorded (not one filtered
 * out or marked untraced()), so it always nests under the function that called it.
 * On 3.11 a profile function belongs to one thread: the eval hook puts it in place in each
 * thread at the thread's first frame, and chains a program's own (sys.setprofile, cProfile)
 * to it (ccalls_check, below). With hook='profile', threads started later through threading
 * get it from profile_thread(), the hook weft._record hands to threading.setprofile, which
 * puts this profile function in place of itself at the new thread's first event.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <stdint.h>
#include "weft.h"
#include "cstack.h"
#include "calltrace.h"
#include <stdlib.h>
#include <string.h>

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#define WEFT_PY_EVAL 1 /* the PEP 523 hook (needs the 3.11 frame layout) */
#ifndef Py_BUILD_CORE
#define Py_BUILD_CORE 1
#endif
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE
#else
#define WEFT_PY_EVAL 0
#endif

/* One per code object seen while tracing. */
struct pysite {
	struct weft_site site; /* kind EVENT, name co_qualname, category "python" */
	PyObject *code;        /* a strong reference while tracing, NULL after stop */
	struct pysite *next;   /* every pysite holding a reference (`held`) */
	char text[];           /* the name, then the file */
};

/* Everything below is written with the GIL held (module calls, the hook's slow path). */
Py_ssize_t extra_index = -1; /* the code-extra slot, requested once */
int extra_direct;              /* confirmed by check_extra_layout() */
static struct pysite *held;         /* pysites whose code object we keep alive */
static int active;                  /* 0 off, 1 the eval hook, 2 the profile hook, 3 sys.monitoring */
static int c_calls;                 /* record C calls too (the profile function) */
static int py_by_profile;           /* the profile function records the Python calls (active 2) */
struct weft_site skip = {WEFT__SITE_OFF, WEFT_KIND_EVENT, 0, 0, 0, "", "python", 0, 0};

/* The code object's site, made on first sight (errors leave `skip`: that code is not traced).
 * The caller's pending exception, if any (a generator resumed by throw()), is kept. */
struct weft_site *first_sight(PyCodeObject *co)
{
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	struct weft_site *s = &skip;
	Py_ssize_t ln, lf;
	const char *name = PyUnicode_AsUTF8AndSize(co->co_qualname, &ln);
	const char *file = name ? PyUnicode_AsUTF8AndSize(co->co_filename, &lf) : NULL;
	struct pysite *ps = file ? calloc(1, sizeof(*ps) + (size_t)ln + (size_t)lf + 2) : NULL;
	if (ps) {
		memcpy(ps->text, name, (size_t)ln + 1);
		memcpy(ps->text + ln + 1, file, (size_t)lf + 1);
		ps->site.kind = WEFT_KIND_EVENT;
		ps->site.name = ps->text;
		ps->site.category = "python";
		weft_site_source(&ps->site, ps->text + ln + 1, (unsigned)co->co_firstlineno);
		s = &ps->site;
	}
	if (extra_index >= 0 && ct_set_extra((PyObject *)co, extra_index, s) == 0 && ps) {
		Py_INCREF(co);
		ps->code = (PyObject *)co;
		ps->next = held;
		held = ps;
	} else if (ps) {
		s = &ps->site; /* not cached: this site is used for this one call and leaks; rare */
	}
	PyErr_Clear();
	PyErr_Restore(et, ev, tb);
	return s;
}

#if WEFT_PY_EVAL
static _PyFrameEvalFunction chained; /* the evaluator ours calls (set at start) */
/* C calls beside the eval hook, per thread: has ccalls_check() run in it, is one due (a
 * sys.setprofile was made in it), the program's profile function ours calls (chained). */
static __thread int ccalls_seen __attribute__((tls_model("initial-exec")));
static __thread int ccalls_due __attribute__((tls_model("initial-exec")));
static __thread Py_tracefunc ccalls_theirs __attribute__((tls_model("initial-exec")));

#define GEN_FLAGS (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)

static inline PyObject *eval_frame_here(PyThreadState *ts, _PyInterpreterFrame *f, int throwflag)
{
	PyCodeObject *co = f->f_code;
	struct weft_site *s = site_of(co);
	/* a generator, coroutine or async generator function's call only makes the object (its
	 * frame runs RETURN_GENERATOR and is copied into it): no slice, as profilers see it;
	 * the object's resumptions run frames the object owns */
	if (!weft__on(s) || ((co->co_flags & GEN_FLAGS) && f->owner != FRAME_OWNED_BY_GENERATOR))
		return chained(ts, f, throwflag);
	if (__builtin_expect(name_tries < NAME_TRIES, 0))
		name_thread();
	uint32_t id = s->id;
	weft__rec2(weft__hdr(id, WEFT_R_BEGIN, 0, 0));
	PyObject *r = chained(ts, f, throwflag);
	end_of(id, r);
	return r;
}

/* A frame run on a new C stack segment (cstack.h). */
struct moved_eval {
	PyThreadState *ts;
	_PyInterpreterFrame *f;
	int throwflag;
	PyObject *r;
};

static void eval_moved(void *p)
{
	struct moved_eval *m = p;
	m->r = eval_frame_here(m->ts, m->f, m->throwflag);
}

static void ccalls_check(PyThreadState *ts);

static PyObject *eval_frame(PyThreadState *ts, _PyInterpreterFrame *f, int throwflag)
{
	if (__builtin_expect(pw_cstack_short(), 0)) {
		/* the slow path: a thread's first frame, a frame after a sys.setprofile, or a
		 * frame near the end of the C stack */
		if (c_calls && (!ccalls_seen || ccalls_due))
			ccalls_check(ts);
		if (!pw_cstack_must_move())
			return eval_frame_here(ts, f, throwflag);
		struct moved_eval m = {ts, f, throwflag, NULL};
		pw_cstack_run(eval_moved, &m);
		return m.r;
	}
	return eval_frame_here(ts, f, throwflag);
}
#endif

/* The code object a profile event's frame runs, borrowed. */
static inline PyCodeObject *code_of(PyFrameObject *frame)
{
#if WEFT_PY_EVAL
	return frame->f_frame->f_code; /* 3.11: PyFrame_GetCode without the reference count */
#else
	PyCodeObject *co = PyFrame_GetCode(frame);
	Py_DECREF(co); /* the frame holds it */
	return co;
#endif
}

/* The profile function. PyTrace_CALL comes per call and per resumption, RETURN per exit and
 * per yield (arg NULL: by an exception). A frame that was running when it was set returns
 * without a begin: the converters skip such an END (counted as unmatched). With c_calls, the
 * C events of a recorded frame too: C_CALL (arg: the callable) begins the C site's slice,
 * C_RETURN ends it and C_EXCEPTION ends it with the exception flag. */
static int profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	(void)obj;
	if (!py_by_profile && (what == PyTrace_CALL || what == PyTrace_RETURN))
		return 0; /* the eval hook records them */
	struct weft_site *s = site_of(code_of(frame));
	if (!weft__on(s))
		return 0;
	if (__builtin_expect(name_tries < NAME_TRIES, 0))
		name_thread();
	switch (what) {
	case PyTrace_CALL:
		weft__rec2(weft__hdr(s->id, WEFT_R_BEGIN, 0, 0));
		break;
	case PyTrace_RETURN:
		end_of(s->id, arg);
		break;
	case PyTrace_C_CALL:
	case PyTrace_C_RETURN:
	case PyTrace_C_EXCEPTION: {
		if (!c_calls || !arg || !PyCFunction_Check(arg))
			break;
		const PyMethodDef *ml = ((PyCFunctionObject *)arg)->m_ml;
		struct weft_site *c = csite_find(ml);
		if (!c && what == PyTrace_C_CALL)
			c = csite_first_sight((PyCFunctionObject *)arg);
		if (!c || !weft__on(c))
			break;
		if (what == PyTrace_C_CALL)
			weft__rec2(weft__hdr(c->id, WEFT_R_BEGIN, 0, 0));
		else if (what == PyTrace_C_RETURN)
			weft__rec2(weft__hdr(c->id, WEFT_R_END, 0, 0));
		else
			weft__rec3(weft__hdr(c->id, WEFT_R_END, 1, 0), WEFT_END_EXCEPTION);
		break;
	}
	default:
		break;
	}
	return 0;
}

static int installing; /* weft's own PyEval_SetProfile is running (the audit hook lets it be) */

static void set_profile(Py_tracefunc f)
{
	installing = 1;
#if PY_VERSION_HEX >= 0x030C0000
	PyEval_SetProfileAllThreads(f, NULL);
#else
	PyEval_SetProfile(f, NULL);
#endif
	installing = 0;
}

#if WEFT_PY_EVAL
/* C calls beside the eval hook (c_calls with active == 1, CPython 3.11). The eval hook records
 * the Python calls, the profile function only the C calls, in every thread: each thread gets
 * it at its first frame (ccalls_check from the eval hook's slow path; the main thread at
 * start). A program that sets a profile function of its own (sys.setprofile, cProfile,
 * threading.setprofile in a new thread) replaces weft's in that thread: an audit hook
 * (PySys_AddAuditHook: CPython raises "sys.setprofile" for each, before the change) marks the
 * thread, whose next frame (in the main thread, the pending call run right after the call
 * that set it) finds the program's function and chains it: weft's profile function goes
 * back in its place and calls it after itself for every event, the program's object kept,
 * so sys.getprofile() and what the program's profiler sees are as without weft. A thread
 * whose program's function was removed gets weft's alone again. ccalls_chained counts the
 * chainings; stop() says them in a note (weft_note: weft record prints it, weft info lists
 * it). Threads that were running before start() get no profile function (as before 3.12 with
 * the profile hook). */
static unsigned long ccalls_chained;

static int profile_chained(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	Py_tracefunc theirs = ccalls_theirs;
	if (what == PyTrace_CALL || what == PyTrace_C_CALL) { /* theirs around weft's slice */
		int r = theirs ? theirs(obj, frame, what, arg) : 0;
		profile(NULL, frame, what, arg);
		return r;
	}
	profile(NULL, frame, what, arg);
	return theirs ? theirs(obj, frame, what, arg) : 0;
}

static void ccalls_check(PyThreadState *ts)
{
	ccalls_seen = 1;
	ccalls_due = 0;
	Py_tracefunc f = ts->c_profilefunc;
	if (f == profile || f == profile_chained)
		return;
	if (!f) { /* keeping an exception the frame is resumed with (throw()) */
		PyObject *et, *ev, *tb;
		PyErr_Fetch(&et, &ev, &tb);
		set_profile(profile);
		PyErr_Clear();
		PyErr_Restore(et, ev, tb);
		return;
	}
	ccalls_theirs = f;
	ts->c_profilefunc = profile_chained;
	ccalls_chained++;
}

static int ccalls_pending(void *unused)
{
	(void)unused;
	if (active == 1 && c_calls && ccalls_due)
		ccalls_check(PyThreadState_Get());
	return 0;
}

static void ccalls_release(PyThreadState *ts);
#endif

/* With the profile hook (active == 2) a profile function the program sets in a thread ends
 * weft's recording there (nothing can call weft's then): the threads where it happened are
 * counted (profile_lost, said at stop; lost_here per thread). */
static unsigned long profile_lost;
static __thread int lost_here;
static int audit_added;

/* The audit hook: CPython raises "sys.setprofile" before each change of a thread's profile
 * function (sys.setprofile, cProfile, threading's for a new thread; weft's own are let be). */
static int setprofile_audit(const char *event, PyObject *args, void *unused)
{
	(void)args;
	(void)unused;
	if (!active || installing || event[0] != 's' || strcmp(event, "sys.setprofile"))
		return 0;
#if WEFT_PY_EVAL
	if (active == 1 && c_calls) {
		ccalls_due = 1;
		pw_cstack_poke();
		if (PyThread_get_thread_ident() == main_ident)
			Py_AddPendingCall(ccalls_pending, NULL);
	}
#endif
	if (active == 2 && !lost_here) {
		lost_here = 1;
		profile_lost++;
	}
	return 0;
}

#if WEFT_PY_EVAL
/* The thread's profile function back to what the program would have without weft. */
static void ccalls_release(PyThreadState *ts)
{
	if (ts->c_profilefunc == profile_chained)
		ts->c_profilefunc = ccalls_theirs;
	else if (ts->c_profilefunc == profile)
		set_profile(NULL);
}
#endif

/* Confirms the code-extra layout this file assumes, on a code object of its own. */
static void check_extra_layout(void)
{
	extra_direct = 0;
	PyCodeObject *co = PyCode_NewEmpty("weft", "probe", 1);
	if (!co) {
		PyErr_Clear();
		return;
	}
	void *probe = &extra_direct;
	if (ct_set_extra((PyObject *)co, extra_index, probe) == 0) {
		const code_extra_block *x = co->co_extra;
		extra_direct = x && extra_index < x->size && x->extras[extra_index] == probe;
		ct_set_extra((PyObject *)co, extra_index, NULL);
	}
	PyErr_Clear();
	Py_DECREF(co);
}

static void release_held(void)
{
	while (held) {
		struct pysite *ps = held;
		held = ps->next;
		ps->next = NULL;
		PyObject *co = ps->code;
		ps->code = NULL;
		Py_XDECREF(co);
	}
}

/* The code-extra slot, requested once per process. 0 or -1 with RuntimeError set. */
static int ensure_extra(void)
{
	if (extra_index >= 0)
		return 0;
	extra_index = ct_request_extra(NULL);
	if (extra_index < 0) {
		PyErr_SetString(PyExc_RuntimeError, "weft: no code-extra slot left for the call tracer");
		return -1;
	}
	check_extra_layout();
	return 0;
}

PyDoc_STRVAR(start_doc, "start(hook='auto', c_calls=False)\n--\n\n"
	     "Record every Python call from now on, in every thread, as a slice (category 'python',\n"
	     "args file and line). hook: 'auto' (the frame-evaluation hook on CPython 3.11,\n"
	     "sys.monitoring on 3.12 and later, else the profile hook), 'eval', 'monitoring' or\n"
	     "'profile'. c_calls=True records the C functions Python code calls too (category\n"
	     "'python-c'; with 'eval' through a profile function in every thread from its first call\n"
	     "on, chained to a profile function the program sets; with 'monitoring' through its\n"
	     "CALL events, beside any profile function; with 'profile' before 3.12 the calling thread\n"
	     "and, through profile_thread, threads started later).\n"
	     "Starts weft's runtime if it is not running. Calling it again while tracing is a no-op;\n"
	     "ValueError for a bad combination, RuntimeError if the hook cannot be installed.");
static PyObject *ct_start(PyObject *mod, PyObject *args, PyObject *kw)
{
	(void)mod;
	static char *kwlist[] = {"hook", "c_calls", NULL};
	const char *hook = "auto";
	int want_c = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|sp:start", kwlist, &hook, &want_c))
		return NULL;
	int want;
	if (!strcmp(hook, "auto"))
		want = WEFT_PY_EVAL ? 1 : PY_VERSION_HEX >= 0x030C0000 ? 3 : 2;
	else if (!strcmp(hook, "eval"))
		want = 1;
	else if (!strcmp(hook, "profile"))
		want = 2;
	else if (!strcmp(hook, "monitoring"))
		want = 3;
	else
		return PyErr_Format(PyExc_ValueError, "hook must be 'auto', 'eval', 'profile' or 'monitoring', not '%s'",
				    hook);
	if (active)
		Py_RETURN_NONE;
	main_ident = PyThread_get_thread_ident(); /* start() runs on the main thread (sitecustomize) */
	if (ensure_extra() < 0)
		return NULL;
	if (want == 1) {
#if WEFT_PY_EVAL
		PyInterpreterState *in = PyThreadState_GetInterpreter(PyThreadState_Get());
		chained = _PyInterpreterState_GetEvalFrameFunc(in);
		if (chained == eval_frame)
			return PyErr_Format(PyExc_RuntimeError, "weft: the call tracer's hook is installed already");
		if (want_c && !audit_added) {
			if (PySys_AddAuditHook(setprofile_audit, NULL) < 0)
				return NULL;
			audit_added = 1;
		}
		_PyInterpreterState_SetEvalFrameFunc(in, eval_frame);
		c_calls = want_c;
		if (c_calls)
			ccalls_check(PyThreadState_Get());
#else
		return PyErr_Format(PyExc_RuntimeError, "weft: the frame-evaluation hook needs CPython 3.11 "
				    "(this is %s); use hook='profile'", PY_VERSION);
#endif
	} else if (want == 3) {
		if (ct_monitor_start(want_c) < 0)
			return NULL;
		c_calls = want_c;
	} else {
		if (!audit_added) {
			if (PySys_AddAuditHook(setprofile_audit, NULL) < 0)
				return NULL;
			audit_added = 1;
		}
		c_calls = want_c;
		py_by_profile = 1;
		set_profile(profile);
	}
	active = want;
	Py_RETURN_NONE;
}

PyDoc_STRVAR(stop_doc, "stop()\n--\n\n"
	     "Stop recording Python calls (the calls still running keep their slices and end them;\n"
	     "with the profile hook, in other threads, from their next event). Gives back the code\n"
	     "objects kept since start(). A no-op when not tracing.");
static PyObject *ct_stop(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	if (active == 1) {
#if WEFT_PY_EVAL
		PyInterpreterState *in = PyThreadState_GetInterpreter(PyThreadState_Get());
		/* another tool that chained to ours after we started keeps its own: leave it */
		if (_PyInterpreterState_GetEvalFrameFunc(in) == eval_frame)
			_PyInterpreterState_SetEvalFrameFunc(in, chained);
		if (c_calls)
			ccalls_release(PyThreadState_Get());
		if (c_calls && ccalls_chained) {
			char note[200];
			snprintf(note, sizeof(note), "python: the program set its own profile function (sys.setprofile, "
				 "cProfile) %lu time%s: weft called it from its own and went on recording C calls",
				 ccalls_chained, ccalls_chained == 1 ? "" : "s");
			weft_note(note);
			ccalls_chained = 0;
		}
#endif
	} else if (active == 3) {
		ct_monitor_stop();
	} else if (active == 2) {
		set_profile(NULL);
		if (profile_lost) {
			char note[240];
			snprintf(note, sizeof(note), "python: the program set its own profile function (sys.setprofile, "
				 "cProfile) in %lu thread%s: weft's, which it replaced there, recorded no more calls "
				 "(the default hook on CPython 3.11 keeps recording)", profile_lost,
				 profile_lost == 1 ? "" : "s");
			weft_note(note);
			profile_lost = 0;
		}
	}
	active = 0;
	c_calls = 0;
	py_by_profile = 0;
	release_held();
	Py_RETURN_NONE;
}

PyDoc_STRVAR(active_doc, "active()\n--\n\nThe hook recording Python calls: 'eval', 'profile', 'monitoring' or None.");
static PyObject *ct_active(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	if (!active)
		Py_RETURN_NONE;
	return PyUnicode_FromString(active == 1 ? "eval" : active == 2 ? "profile" : "monitoring");
}

PyDoc_STRVAR(c_calls_doc, "c_calls()\n--\n\nWhether C calls are being recorded (start(c_calls=True)).");
static PyObject *ct_c_calls(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	return PyBool_FromLong(active && c_calls);
}

/* threading.setprofile's hook, called as a Python-level profile function (frame, event, arg)
 * at the first event of each thread threading starts: it puts the C profile function in its
 * own place for that thread and hands it this first event. After stop() it removes itself. */
PyDoc_STRVAR(profile_thread_doc, "profile_thread(frame, event, arg)\n--\n\n"
	     "For threading.setprofile: installs the call tracer's profile function in each new\n"
	     "thread at its first event (CPython before 3.12, where a profile function is per thread).");
static PyObject *ct_profile_thread(PyObject *mod, PyObject *args)
{
	(void)mod;
	PyObject *frame, *event, *arg;
	if (!PyArg_UnpackTuple(args, "profile_thread", 3, 3, &frame, &event, &arg))
		return NULL;
	if (active != 2) { /* (the eval hook puts the profile function in place itself) */
		PyEval_SetProfile(NULL, NULL);
		Py_RETURN_NONE;
	}
	/* threading's sys.setprofile of this hook, counted by the audit hook, was weft's own */
	if (lost_here) {
		lost_here = 0;
		profile_lost--;
	}
	installing = 1;
	PyEval_SetProfile(profile, NULL);
	installing = 0;
	/* never an error from here: the interpreter would take it as the profile function's and
	 * raise it in the program */
	const char *ev = PyUnicode_Check(event) ? PyUnicode_AsUTF8(event) : NULL;
	if (!ev)
		PyErr_Clear();
	else if (PyFrame_Check(frame) && !strcmp(ev, "call"))
		profile(NULL, (PyFrameObject *)frame, PyTrace_CALL, NULL);
	else if (PyFrame_Check(frame) && !strcmp(ev, "c_call"))
		profile(NULL, (PyFrameObject *)frame, PyTrace_C_CALL, arg);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(untraced_doc, "untraced(func_or_code)\n--\n\n"
	     "Never record calls of this Python function (nor the C calls it makes): for weft's own\n"
	     "helpers that run inside the traced program. Returns its argument.");
static PyObject *ct_untraced(PyObject *mod, PyObject *obj)
{
	(void)mod;
	PyObject *code = PyFunction_Check(obj) ? PyFunction_GET_CODE(obj) : obj;
	if (!PyCode_Check(code))
		return PyErr_Format(PyExc_TypeError, "untraced() takes a Python function or code object, not %.100s",
				    Py_TYPE(obj)->tp_name);
	if (ensure_extra() < 0)
		return NULL;
	/* a site made already stays held (and given back) as usual; the slot now says skip */
	if (ct_set_extra(code, extra_index, &skip) < 0)
		return NULL;
	Py_INCREF(obj);
	return obj;
}

static PyMethodDef methods[] = {
	{"start", (PyCFunction)(void (*)(void))ct_start, METH_VARARGS | METH_KEYWORDS, start_doc},
	{"stop", ct_stop, METH_NOARGS, stop_doc},
	{"active", ct_active, METH_NOARGS, active_doc},
	{"c_calls", ct_c_calls, METH_NOARGS, c_calls_doc},
	{"profile_thread", ct_profile_thread, METH_VARARGS, profile_thread_doc},
	{"untraced", ct_untraced, METH_O, untraced_doc},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "weft._calltrace",
	"Python call tracing into weft's trace (see weft record --python, python3 -m weft).", -1, methods,
	NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__calltrace(void)
{
	return PyModule_Create(&module);
}
