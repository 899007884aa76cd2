/*
 * csite.c - the sites of the C functions Python code calls (start(c_calls=True), weft record
 * --python=c-calls): one per PyMethodDef, named at its first sight (`len`, `math.sqrt`,
 * `list.append`: for a method, the class that defines it, found in the MRO of self's type, so
 * a subclass's call is still `list.append`), category "python-c". The hooks (calltrace.c's
 * profile function, monitor.c's CALL callback) find a C call's site with one probe of a
 * pointer-keyed table.
 */
#include "calltrace.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One site per PyMethodDef, in an open-addressing table keyed by the pointer (linear
 * probing, at most half full, grown by doubling; entries are never removed). The PyMethodDef
 * tables of built-in and extension modules are static, so a key stays valid; a def freed and
 * reused at the same address would keep the first name. Written and read with the GIL held. */
struct csite {
	struct weft_site site; /* kind EVENT, category "python-c" */
	char name[];
};
struct centry {
	const PyMethodDef *key;
	struct weft_site *site;
};
static struct centry *csites; /* the table; NULL until the first C call */
static size_t csites_cap, csites_len;

static inline size_t chash(const PyMethodDef *ml, size_t cap)
{
	return (size_t)(((uintptr_t)ml >> 4) * 0x9E3779B97F4A7C15ull >> 7) & (cap - 1);
}

struct weft_site *csite_find(const PyMethodDef *ml)
{
	if (!csites)
		return NULL;
	for (size_t i = chash(ml, csites_cap);; i = (i + 1) & (csites_cap - 1)) {
		if (csites[i].key == ml)
			return csites[i].site;
		if (!csites[i].key)
			return NULL;
	}
}

static int csite_put(const PyMethodDef *ml, struct weft_site *site)
{
	if (2 * (csites_len + 1) > csites_cap) {
		size_t cap = csites_cap ? 2 * csites_cap : 256;
		struct centry *t = calloc(cap, sizeof(*t));
		if (!t)
			return -1;
		for (size_t k = 0; k < csites_cap; k++) {
			if (!csites[k].key)
				continue;
			size_t i = chash(csites[k].key, cap);
			while (t[i].key)
				i = (i + 1) & (cap - 1);
			t[i] = csites[k];
		}
		free(csites);
		csites = t;
		csites_cap = cap;
	}
	size_t i = chash(ml, csites_cap);
	while (csites[i].key)
		i = (i + 1) & (csites_cap - 1);
	csites[i].key = ml;
	csites[i].site = site;
	csites_len++;
	return 0;
}

/* The class in type's MRO whose dict defines the method `ml` (a method or class-method
 * descriptor holding it), else type itself. Borrowed. */
static PyTypeObject *defining_type(PyTypeObject *type, const PyMethodDef *ml)
{
	PyObject *mro = type->tp_mro;
	if (!mro || !PyTuple_Check(mro))
		return type;
	for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
		PyObject *base = PyTuple_GET_ITEM(mro, i);
		if (!PyType_Check(base))
			continue;
#if PY_VERSION_HEX >= 0x030C0000
		/* a static built-in type's dict is the interpreter's there: tp_dict is NULL */
		PyObject *dict = PyType_GetDict((PyTypeObject *)base); /* new */
#else
		PyObject *dict = ((PyTypeObject *)base)->tp_dict;
		Py_XINCREF(dict);
#endif
		PyObject *d = dict ? PyDict_GetItemString(dict, ml->ml_name) : NULL; /* borrowed */
		int found = d && (Py_IS_TYPE(d, &PyMethodDescr_Type) || Py_IS_TYPE(d, &PyClassMethodDescr_Type)) &&
			    ((PyMethodDescrObject *)d)->d_method == ml;
		Py_XDECREF(dict);
		if (found)
			return (PyTypeObject *)base;
	}
	return type;
}

/* The site of a C callable seen for the first time: `len`, `math.sqrt`, `list.append`. NULL
 * (not recorded) when it cannot be made. Called at PyTrace_C_CALL, with no exception pending;
 * leaves none. */
struct weft_site *csite_first_sight(PyCFunctionObject *fn)
{
	const PyMethodDef *ml = fn->m_ml;
	PyObject *self = fn->m_self, *owner = NULL;
	const char *prefix = NULL;
	if (!self || PyModule_Check(self)) {
		prefix = self ? PyModule_GetName(self) : NULL;
		if (prefix && !strcmp(prefix, "builtins"))
			prefix = NULL;
	} else {
		PyTypeObject *t = defining_type(PyType_Check(self) ? (PyTypeObject *)self : Py_TYPE(self), ml);
		owner = PyObject_GetAttrString((PyObject *)t, "__qualname__");
		prefix = owner && PyUnicode_Check(owner) ? PyUnicode_AsUTF8(owner) : NULL;
		if (!prefix)
			prefix = t->tp_name;
	}
	PyErr_Clear();
	const char *mname = ml->ml_name ? ml->ml_name : "?";
	size_t n = (prefix ? strlen(prefix) + 1 : 0) + strlen(mname) + 1;
	struct csite *cs = calloc(1, sizeof(*cs) + n);
	if (cs) {
		snprintf(cs->name, n, "%s%s%s", prefix ? prefix : "", prefix ? "." : "", mname);
		cs->site.kind = WEFT_KIND_EVENT;
		cs->site.name = cs->name;
		cs->site.category = "python-c";
		if (csite_put(ml, &cs->site) < 0) {
			free(cs);
			cs = NULL;
		}
	}
	Py_XDECREF(owner);
	return cs ? &cs->site : NULL;
}
