/*
 * threadname.c - the names of the threads' tracks under weft._calltrace: a thread's stream is
 * named after its threading.Thread, looked up without running Python code. The hooks call
 * name_thread() at a recorded frame's begin while name_tries < NAME_TRIES (calltrace.h).
 * Runs with the GIL held; name_tries is the calling thread's own.
 */
#include "calltrace.h"

/* Threads: each stream is named after its threading.Thread. The thread is looked up in
 * threading's registry (threading._active, by ident) and its name read from the instance's
 * __dict__ (_name) - no Python code runs, nothing is created (current_thread() would make a
 * dummy Thread for an unregistered one). A new thread is registered a few calls into
 * Thread._bootstrap, so the lookup is repeated on its calls until it succeeds, at most
 * NAME_TRIES times (a thread threading never registers keeps its OS name). threading is never
 * imported for this: a program that has not imported it has no names to give. The main thread
 * keeps the process's name. */
__thread unsigned name_tries __attribute__((tls_model("initial-exec")));
unsigned long main_ident; /* written by start() (on the main thread), under the GIL */

void name_thread(void)
{
	name_tries++;
	unsigned long ident = PyThread_get_thread_ident();
	if (ident == main_ident) {
		name_tries = NAME_TRIES;
		return;
	}
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	PyObject *mods = PySys_GetObject("modules"); /* borrowed */
	PyObject *mod = mods ? PyDict_GetItemString(mods, "threading") : NULL;
	PyObject *reg = mod ? PyObject_GetAttrString(mod, "_active") : NULL;
	PyObject *key = reg && PyDict_Check(reg) ? PyLong_FromUnsignedLong(ident) : NULL;
	PyObject *th = key ? PyDict_GetItemWithError(reg, key) : NULL; /* borrowed */
	PyObject *dict = th ? PyObject_GenericGetDict(th, NULL) : NULL;
	PyObject *name = dict && PyDict_Check(dict) ? PyDict_GetItemString(dict, "_name") : NULL;
	const char *n = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
	if (n) {
		weft_thread_name(n);
		name_tries = NAME_TRIES;
	}
	Py_XDECREF(dict);
	Py_XDECREF(key);
	Py_XDECREF(reg);
	PyErr_Clear();
	PyErr_Restore(et, ev, tb);
}
