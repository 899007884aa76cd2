/*
 * pyweft.h - what the files of the weft._weft extension share: interned call sites, typed
 * arguments from Python values, the per-thread naming check, and the begin/end helpers that
 * are the whole fast path of a traced call. Internal to the extension.
 *
 * Every event is recorded with the GIL held and nothing here releases it, so the module's
 * globals need no lock; the per-thread state is one TLS flag.
 */
#ifndef PYWEFT_H
#define PYWEFT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <weft.h>

/* at most this many arguments on one event (weft_event_args keeps 16) */
#define PW_MAX_ARGS 16

/* Typed arguments converted from Python keyword arguments. `keep` holds a reference to every
 * string whose UTF-8 bytes an argument points at (the value itself, or its str()), so the
 * array stays valid as long as the struct does. */
struct pw_args {
	unsigned n;
	struct weft_arg a[PW_MAX_ARGS];
	PyObject *keep[PW_MAX_ARGS];
};

/* site.c */
/* The shared state (the site dicts, threading): 0, or -1 with an exception. Called by the
 * module's init; once. */
int pw_shared_init(void);
/* The process-lifetime site of (kind, category, name): created on first use, never freed
 * (libweft's registry keeps a pointer to it). category may be NULL or None (default
 * category); unit is for counters (may be NULL). Returns NULL with an exception set. */
struct weft_site *pw_site(int kind, PyObject *name, PyObject *category, PyObject *unit);
/* Fills `out` from keyword values (kwvalues[i] named by kwnames[i], skipping the indices in
 * `skip` (-1 = none)). Returns 0, or -1 with an exception (out is then empty). */
int pw_args_from_kw(struct pw_args *out, PyObject *const *kwvalues, PyObject *kwnames,
		    Py_ssize_t skip);
void pw_args_clear(struct pw_args *a);
/* A heap copy of `a` (its strings' references taken again), or NULL with MemoryError. */
struct pw_args *pw_args_dup(const struct pw_args *a);
/* Records the exception instant (name "exception", arg exception=<type name>) inside the
 * open slice. `type` is the exception's type (borrowed). Leaves any pending exception as it
 * is: it reads, never fetches. */
void pw_mark_exception(struct weft_site *exc_site, unsigned track, PyObject *type);
/* The site of the "exception" instant in `category` (NULL: default). */
struct weft_site *pw_exception_site(PyObject *category);

/* Python threads: the first event of each thread names its stream after
 * threading.current_thread().name. Written and read only by the owning thread. */
extern __thread int pw_thread_named __attribute__((tls_model("initial-exec")));
void pw_name_thread_slow(void);
/* The index of the keyword `name` in kwnames (may be NULL), or -1. */
Py_ssize_t pw_kw_index(PyObject *kwnames, const char *name);

static inline __attribute__((always_inline)) void pw_thread_check(void)
{
	if (__builtin_expect(!pw_thread_named, 0))
		pw_name_thread_slow();
}

/* Begin a slice (with its arguments, if any): the caller has seen weft__on(site). */
static inline __attribute__((always_inline)) void pw_begin_on(struct weft_site *s, unsigned track,
							      const struct pw_args *args)
{
	pw_thread_check();
	if (args && args->n)
		weft_event_args(s, WEFT_R_BEGIN, track, args->a, args->n);
	else
		weft__rec2(weft__hdr(s->id, WEFT_R_BEGIN, 0, track));
}

static inline __attribute__((always_inline)) void pw_end(struct weft_site *s, unsigned track)
{
	weft__rec2(weft__hdr(s->id, WEFT_R_END, 0, track));
}

/* events.c and control.c: their functions of the module (NULL-terminated; module.c gathers
 * them into the module's table) */
extern const PyMethodDef pw_event_methods[];
extern const PyMethodDef pw_control_methods[];
/* events.c: instant(name, category=None, **args) on `track` (0: the thread's own) */
PyObject *pw_instant_on(unsigned track, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames);

/* decorator.c */
extern PyTypeObject PwTrace_Type;         /* @weft.trace on a function: binds as a method */
extern PyTypeObject PwTraceCallable_Type; /* on any other callable: binds as that callable */
extern PyTypeObject PwGenProxy_Type;      /* a traced generator */
extern PyTypeObject PwCoroProxy_Type;     /* a traced coroutine */
/* A new trace wrapper of `func` on (site, exc_site, track) with a copy of `args` (may be
 * NULL). name/category: the site's, for __repr__. */
PyObject *pw_trace_new(PyObject *func, struct weft_site *site, struct weft_site *exc_site,
		       unsigned track, const struct pw_args *args);
PyObject *pw_trace_make(PyObject *mod, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames);

/* scope.c */
extern PyTypeObject PwScope_Type;
extern PyTypeObject PwTrack_Type;
PyObject *pw_scope_make(PyObject *mod, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames);
PyObject *pw_track_make(PyObject *mod, PyObject *arg);

#endif
