/*
 * nativeext.c - a C extension built with -finstrument-functions, for the full-stack test
 * (tests/integration/test_python_calls.py): traced Python calls its functions, which call C
 * helpers, and one of them calls back into Python. Under `weft record --python` every native
 * function is a slice nested under the Python frame that called it, and the Python callback
 * nests under the native function that called it: one thread, one stack, one clock.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* noinline: every helper keeps its own entry and exit at -O2 */
__attribute__((noinline)) static long nx_square(long x)
{
	return x * x;
}

__attribute__((noinline)) static long nx_sum_squares(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += nx_square(i);
	return s;
}

__attribute__((noinline)) static PyObject *nx_call_back(PyObject *fn, long x)
{
	PyObject *arg = PyLong_FromLong(nx_square(x));
	if (!arg)
		return NULL;
	PyObject *r = PyObject_CallOneArg(fn, arg);
	Py_DECREF(arg);
	return r;
}

/* sum_squares(n): sum of i*i for i < n, through n calls of nx_square */
static PyObject *nx_py_sum_squares(PyObject *self, PyObject *arg)
{
	(void)self;
	long n = PyLong_AsLong(arg);
	if (n == -1 && PyErr_Occurred())
		return NULL;
	return PyLong_FromLong(nx_sum_squares(n));
}

/* call(fn, x): fn(x*x), called from C */
static PyObject *nx_py_call(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *fn;
	long x;
	if (!PyArg_ParseTuple(args, "Ol:call", &fn, &x))
		return NULL;
	return nx_call_back(fn, x);
}

static PyMethodDef methods[] = {
	{"sum_squares", nx_py_sum_squares, METH_O, "sum of i*i for i < n"},
	{"call", nx_py_call, METH_VARARGS, "fn(x*x), called from C"},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "nativeext", NULL, -1, methods,
				    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_nativeext(void)
{
	return PyModule_Create(&module);
}
