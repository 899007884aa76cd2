/*
 * calltrace.h - what the call tracer's hooks share (internal to the weft._calltrace
 * extension): the code object -> weft site map (a code-extra slot, calltrace.c), the threads'
 * names, the C functions' sites. calltrace.c has the frame-evaluation hook (CPython 3.11) and
 * the profile hook, monitor.c the sys.monitoring hook (3.12 and later). All of it runs with
 * the GIL held.
 */
#ifndef PW_CALLTRACE_H
#define PW_CALLTRACE_H

#include <Python.h>
#include "weft.h"

/* The code-extra API under its 3.12 names (the underscored ones are deprecated there) */
#if PY_VERSION_HEX >= 0x030C0000
#define ct_get_extra PyUnstable_Code_GetExtra
#define ct_set_extra PyUnstable_Code_SetExtra
#define ct_request_extra PyUnstable_Eval_RequestCodeExtraIndex
#else
#define ct_get_extra _PyCode_GetExtra
#define ct_set_extra _PyCode_SetExtra
#define ct_request_extra _PyEval_RequestCodeExtraIndex
#endif

extern Py_ssize_t extra_index;  /* the code-extra slot (-1: none yet) */
extern int extra_direct;        /* the slot may be read in place (layout confirmed at start) */
extern struct weft_site skip;   /* the site of code that is never recorded (OFF) */

/* The site of a code object seen for the first time (made, cached in its slot, or `skip`). */
struct weft_site *first_sight(PyCodeObject *co);

/* Reads the code-extra slot directly when the layout of CPython's code-extra block (a size,
 * then the pointers) was confirmed at start (extra_direct), else through _PyCode_GetExtra. */
typedef struct {
	Py_ssize_t size;
	void *extras[1];
} code_extra_block;

static inline struct weft_site *site_of(PyCodeObject *co)
{
	void *v = NULL;
	if (__builtin_expect(extra_direct, 1)) {
		const code_extra_block *x = co->co_extra;
		if (x && extra_index < x->size)
			v = x->extras[extra_index];
	} else {
		ct_get_extra((PyObject *)co, extra_index, &v);
	}
	return __builtin_expect(v != NULL, 1) ? (struct weft_site *)v : first_sight(co);
}

static inline void end_of(uint32_t id, PyObject *result)
{
	if (__builtin_expect(result != NULL, 1))
		weft__end_leaf(id);
	else
		weft__rec3(weft__hdr(id, WEFT_R_END, 1, 0), WEFT_END_EXCEPTION);
}

/* Threads' names (threadname.c): name_thread() looks the calling thread up in threading's
 * registry and names its stream; the hooks call it while name_tries < NAME_TRIES. main_ident:
 * the main thread's ident (set by start(); the main thread keeps the process's name). */
#define NAME_TRIES 64
extern __thread unsigned name_tries __attribute__((tls_model("initial-exec")));
extern unsigned long main_ident;
void name_thread(void);

/* C functions (csite.c): the site of a PyMethodDef (NULL: none yet), and the one made at a
 * callable's first sight (NULL: not recorded). */
struct weft_site *csite_find(const PyMethodDef *ml);
struct weft_site *csite_first_sight(PyCFunctionObject *fn);

/* The sys.monitoring hook (monitor.c; CPython 3.12 and later). start: 0, or -1 with an
 * exception set (no tool id free, sys.monitoring refused). stop: undoes it (errors cleared). */
int ct_monitor_start(int c_calls);
void ct_monitor_stop(void);

#endif
