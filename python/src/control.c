/*
 * control.c - weft._weft's control of the runtime: configure(), start(), stop(), snapshot(),
 * flush(), and what it says about itself (enabled(), output_dir(), now_ns()), and the names of
 * the thread's and the process's tracks.
 *
 * Errors. The library reports bad options through its log callback; configure() and start()
 * install a callback that captures the line on the calling thread and turn it into the
 * ValueError/OSError they raise. Outside a capture it writes what libweft's default callback
 * writes (one "weft: ..." line on stderr for warnings and errors), so nothing else changes.
 * Every function runs with the GIL held (snapshot() lets it go around the snapshot itself).
 */
#include <errno.h>
#include "pyweft.h"
#include <string.h>
#include <unistd.h>

/* probed by enabled(): an argument-key site is ON exactly when events are recorded */
static struct weft_site probe_key = WEFT__SITE_INIT(WEFT_KIND_ARG, "", "python");

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

/* ---- functions ------------------------------------------------------------------------ */

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

#define FASTKW (METH_FASTCALL | METH_KEYWORDS)
const PyMethodDef pw_control_methods[] = {
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
	{"thread_name", py_thread_name, METH_O,
	 "thread_name(name, /)\n--\n\n"
	 "Name the calling thread's track (else its first event names it after\n"
	 "threading.current_thread().name)."},
	{"process_name", py_process_name, METH_O,
	 "process_name(name, /)\n--\n\nName the process's track."},
	{NULL, NULL, 0, NULL},
};
