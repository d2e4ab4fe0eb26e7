// triton_plate_backend.passes._affine: the kept hash of the affine expression nodes (passes/affine.py `_keep_hash`)
// in C. A node's hash is the dataclass' hash, `hash((field, field, ...))` of its hashed fields, computed once and
// kept in the node's own dict under "_hash" (the same int the Python method keeps). The Python method ran as a
// Python frame at every hash, cache hit or not: the code generator's memos (materialize's, the prefetcher's
// descriptors, the access analysis' forms) hash each subtree of a deep tree, ~450 hashes a vec_add compile, most of
// them hits. Here a hit is a dict read.
//
// `kept_hash(cls)` is the method descriptor to set as `cls.__hash__` (the type's hash slot then calls it as it
// called the Python method); it reads the field names from the class attribute `_hash_fields` (a tuple of str,
// set by affine.py before). tests/test_compiled_affine.py compares it with the Python method on every node kind.
#include <Python.h>

namespace {

PyObject *s_hash_key, *s_fields_key;

PyObject* kept_hash(PyObject* self, PyObject*) {
  PyObject* dict = PyObject_GenericGetDict(self, nullptr);
  if (dict == nullptr) return nullptr;
  PyObject* got = PyDict_GetItemWithError(dict, s_hash_key);
  if (got != nullptr) {
    Py_INCREF(got);
    Py_DECREF(dict);
    return got;
  }
  if (PyErr_Occurred()) {
    Py_DECREF(dict);
    return nullptr;
  }
  PyObject* names = _PyType_Lookup(Py_TYPE(self), s_fields_key);  // borrowed
  if (names == nullptr || !PyTuple_CheckExact(names)) {
    Py_DECREF(dict);
    PyErr_Format(PyExc_TypeError, "%s has no _hash_fields tuple", Py_TYPE(self)->tp_name);
    return nullptr;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(names);
  PyObject* values = PyTuple_New(n);
  if (values == nullptr) {
    Py_DECREF(dict);
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* v = PyObject_GetAttr(self, PyTuple_GET_ITEM(names, i));  // as `self.name` in the dataclass' hash
    if (v == nullptr) {
      Py_DECREF(values);
      Py_DECREF(dict);
      return nullptr;
    }
    PyTuple_SET_ITEM(values, i, v);
  }
  Py_hash_t h = PyObject_Hash(values);
  Py_DECREF(values);
  if (h == -1 && PyErr_Occurred()) {
    Py_DECREF(dict);
    return nullptr;
  }
  PyObject* result = PyLong_FromSsize_t(h);
  if (result == nullptr || PyDict_SetItem(dict, s_hash_key, result) < 0) {
    Py_XDECREF(result);
    Py_DECREF(dict);
    return nullptr;
  }
  Py_DECREF(dict);
  return result;
}

PyMethodDef kept_hash_def = {"__hash__", kept_hash, METH_NOARGS,
                             "the dataclass' hash of the node, kept in its dict (passes/affine.py _keep_hash)"};

PyObject* make_kept_hash(PyObject*, PyObject* cls) {
  if (!PyType_Check(cls)) {
    PyErr_SetString(PyExc_TypeError, "kept_hash takes a class");
    return nullptr;
  }
  return PyDescr_NewMethod((PyTypeObject*)cls, &kept_hash_def);
}

PyMethodDef methods[] = {
    {"kept_hash", make_kept_hash, METH_O,
     "kept_hash(cls): the method to set as cls.__hash__: hash of the fields named by cls._hash_fields, kept in the "
     "node's dict as '_hash'"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_affine", "the affine nodes' kept hash in C (passes/affine.py)", -1,
                      methods};

}  // namespace

PyMODINIT_FUNC PyInit__affine(void) {
  s_hash_key = PyUnicode_InternFromString("_hash");
  s_fields_key = PyUnicode_InternFromString("_hash_fields");
  if (s_hash_key == nullptr || s_fields_key == nullptr) return nullptr;
  return PyModule_Create(&module);
}
