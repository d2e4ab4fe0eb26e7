// triton_plate_backend.passes._affine: the affine expression nodes' kept hash and their canonical algebra
// (passes/affine.py) in C.
//
// `kept_hash(cls)`: a node's hash is the dataclass' hash, `hash((field, field, ...))` of its hashed fields,
// computed once and kept in the node's own dict under "_hash" (the same int the Python method keeps). The Python
// method ran as a Python frame at every hash, cache hit or not: the code generator's memos (materialize's, the
// prefetcher's descriptors, the access analysis' forms) hash each subtree of a deep tree, ~450 hashes a vec_add
// compile, most of them hits. Here a hit is a dict read. It reads the field names from the class attribute
// `_hash_fields` (a tuple of str, set by affine.py before).
// `eq_slot(cls)` and `field_hash_slot(cls)`: a class' == and hash slots answer as the dataclass' generated __eq__
// and __hash__ do (the fields named by `_eq_fields` / `_hash_fields`), without a Python frame each: the nodes'
// == (affine.py), the labels' and views' == and hash (records.compared_in_c).
//
// The algebra (`key`, `poly`, `poly_add`, `from_poly`, `canon`, `add`, `sub`, `mul`, `neg`, `atoms`, `min_`,
// `max_`, `ceil_div`, `floor_div`, `select`, `const_value`) and the text (`render`): what affine.py's `_key_py`, `poly_py`, `_poly_add_py`, `from_poly_py`, `canon_py`, `add_py`,
// `sub_py`, `mul_py`, `neg_py`, `atoms_py`, `min_py` ... `const_value_py` and `_render_py` do, step for step: the same trees (nodes made as their
// plain `__init__` makes them: the fields written into the instance's dict in field order), the same polynomials
// (dicts in the same insertion order), the same things kept in a node's dict (`_key`, `_poly`, `_canonical`,
// `_canon`, `_atoms`), the same text. It works on the node classes themselves (`bind` names them); any other
// object (a subclass, an int that is no node, a wrong type) goes to the Python function of the step, so every
// error is Python's (a tree too deep for Python's recursion limit is the one difference: C walks it).
// tests/test_compiled_affine.py and tests/test_compiled_affine_algebra.py compare the two.
#include <Python.h>

#include <cstring>
#include <initializer_list>

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

// the class' hash slot when its __hash__ is kept_hash: what slot_tp_hash would do (look the method up, call it, read
// the int back), without the lookup and the call
Py_hash_t kept_tp_hash(PyObject* self) {
  PyObject* r = kept_hash(self, nullptr);
  if (r == nullptr) return -1;
  Py_hash_t h = PyLong_AsSsize_t(r);  // (a tuple's hash: never -1, always an ssize_t)
  Py_DECREF(r);
  return h;
}

// hash_slot(cls): cls' hash slot calls kept_hash directly when cls.__dict__["__hash__"] is kept_hash's method (set
// by `cls.__hash__ = kept_hash(cls)`); True if so. Setting __hash__ again sets the slot again (Python's own).
PyObject* hash_slot(PyObject*, PyObject* cls) {
  if (!PyType_Check(cls) || !(((PyTypeObject*)cls)->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
    PyErr_SetString(PyExc_TypeError, "hash_slot takes a class");
    return nullptr;
  }
  static PyObject* dunder_hash = PyUnicode_InternFromString("__hash__");
  if (dunder_hash == nullptr) return nullptr;
  PyObject* d = PyDict_GetItemWithError(((PyTypeObject*)cls)->tp_dict, dunder_hash);
  if (d == nullptr && PyErr_Occurred()) return nullptr;
  if (d == nullptr || Py_TYPE(d) != &PyMethodDescr_Type || ((PyMethodDescrObject*)d)->d_method->ml_meth != kept_hash)
    Py_RETURN_FALSE;
  ((PyTypeObject*)cls)->tp_hash = kept_tp_hash;
  Py_RETURN_TRUE;
}

// `self.name` for a field of a plain record: the value in the instance's dict when the class has the generic
// getattr and no data descriptor of that name (what PyObject_GetAttr would find, without its steps), else
// PyObject_GetAttr itself; a new reference
PyObject* field_of(PyObject* self, PyObject* name) {
  PyTypeObject* tp = Py_TYPE(self);
  if (tp->tp_getattro == PyObject_GenericGetAttr) {
    PyObject* descr = _PyType_Lookup(tp, name);  // borrowed
    if (descr == nullptr || Py_TYPE(descr)->tp_descr_set == nullptr) {
      PyObject** dp = _PyObject_GetDictPtr(self);
      if (dp != nullptr && *dp != nullptr) {
        PyObject* v = PyDict_GetItemWithError(*dp, name);
        if (v != nullptr) return Py_NewRef(v);
        if (PyErr_Occurred()) return nullptr;
      }
    }
  }
  return PyObject_GetAttr(self, name);
}

// the class' rich comparison slot after `eq_slot(cls)`: ==, when both are of that very class, compares the fields
// named by cls._eq_fields as the dataclass' __eq__ does (`(self.a, self.b) == (other.a, other.b)`: each pair by
// identity first, then ==; the first unequal pair answers False), without the method lookup, the Python frame
// and the two tuples; any other operator or operand goes to the slot the class had (its __eq__ method).
richcmpfunc py_richcompare;  // that slot (object's generic slot for a class with a Python __eq__)
PyObject* s_eq_fields_key;

PyObject* kept_richcompare(PyObject* self, PyObject* other, int op) {
  if (op != Py_EQ || Py_TYPE(other) != Py_TYPE(self)) return py_richcompare(self, other, op);
  PyObject* names = _PyType_Lookup(Py_TYPE(self), s_eq_fields_key);  // borrowed
  if (names == nullptr || !PyTuple_CheckExact(names)) return py_richcompare(self, other, op);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
    PyObject* name = PyTuple_GET_ITEM(names, i);
    PyObject* a = field_of(self, name);  // as `self.name` in the dataclass' __eq__
    if (a == nullptr) return nullptr;
    PyObject* b = field_of(other, name);
    if (b == nullptr) {
      Py_DECREF(a);
      return nullptr;
    }
    int eq = PyObject_RichCompareBool(a, b, Py_EQ);  // (identity first, as a tuple's ==)
    Py_DECREF(a);
    Py_DECREF(b);
    if (eq < 0) return nullptr;
    if (!eq) Py_RETURN_FALSE;
  }
  Py_RETURN_TRUE;
}

// eq_slot(cls): cls' rich comparison slot becomes kept_richcompare when cls has a Python __eq__ in its own dict and
// the tuple cls._eq_fields; True if so. Setting __eq__ again sets Python's slot again; a subclass gets Python's.
PyObject* eq_slot(PyObject*, PyObject* cls) {
  if (!PyType_Check(cls) || !(((PyTypeObject*)cls)->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
    PyErr_SetString(PyExc_TypeError, "eq_slot takes a class");
    return nullptr;
  }
  PyTypeObject* t = (PyTypeObject*)cls;
  static PyObject* dunder_eq = PyUnicode_InternFromString("__eq__");
  if (dunder_eq == nullptr) return nullptr;
  if (s_eq_fields_key == nullptr && (s_eq_fields_key = PyUnicode_InternFromString("_eq_fields")) == nullptr)
    return nullptr;
  PyObject* eq = PyDict_GetItemWithError(t->tp_dict, dunder_eq);
  if (eq == nullptr && PyErr_Occurred()) return nullptr;
  PyObject* names = PyDict_GetItemWithError(t->tp_dict, s_eq_fields_key);
  if (names == nullptr && PyErr_Occurred()) return nullptr;
  if (eq == nullptr || !PyFunction_Check(eq) || names == nullptr || !PyTuple_CheckExact(names)) Py_RETURN_FALSE;
  if (t->tp_richcompare == kept_richcompare) Py_RETURN_TRUE;
  if (t->tp_richcompare == nullptr || (py_richcompare != nullptr && t->tp_richcompare != py_richcompare))
    Py_RETURN_FALSE;
  py_richcompare = t->tp_richcompare;
  t->tp_richcompare = kept_richcompare;
  Py_RETURN_TRUE;
}

// the class' hash slot after `field_hash_slot(cls)`: the dataclass' generated __hash__, `hash((self.a, self.b))` of
// the fields named by cls._hash_fields, without the method lookup and the Python frame (not kept: for records
// other than the nodes, which a copy or a pickle must not carry)
Py_hash_t field_tp_hash(PyObject* self) {
  PyObject* names = _PyType_Lookup(Py_TYPE(self), s_fields_key);  // borrowed
  if (names == nullptr || !PyTuple_CheckExact(names)) {
    PyErr_Format(PyExc_TypeError, "%s has no _hash_fields tuple", Py_TYPE(self)->tp_name);
    return -1;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(names);
  PyObject* values = PyTuple_New(n);
  if (values == nullptr) return -1;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* v = field_of(self, PyTuple_GET_ITEM(names, i));
    if (v == nullptr) {
      Py_DECREF(values);
      return -1;
    }
    PyTuple_SET_ITEM(values, i, v);
  }
  Py_hash_t h = PyObject_Hash(values);
  Py_DECREF(values);
  return h;
}

// field_hash_slot(cls): cls' hash slot becomes field_tp_hash when cls has a Python __hash__ in its own dict and the
// tuple cls._hash_fields; True if so. Setting __hash__ again sets Python's slot again; a subclass gets Python's.
PyObject* field_hash_slot(PyObject*, PyObject* cls) {
  if (!PyType_Check(cls) || !(((PyTypeObject*)cls)->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
    PyErr_SetString(PyExc_TypeError, "field_hash_slot takes a class");
    return nullptr;
  }
  PyTypeObject* t = (PyTypeObject*)cls;
  static PyObject* dunder_hash = PyUnicode_InternFromString("__hash__");
  if (dunder_hash == nullptr) return nullptr;
  PyObject* fn = PyDict_GetItemWithError(t->tp_dict, dunder_hash);
  if (fn == nullptr && PyErr_Occurred()) return nullptr;
  PyObject* names = PyDict_GetItemWithError(t->tp_dict, s_fields_key);
  if (names == nullptr && PyErr_Occurred()) return nullptr;
  if (fn == nullptr || !PyFunction_Check(fn) || names == nullptr || !PyTuple_CheckExact(names)) Py_RETURN_FALSE;
  t->tp_hash = field_tp_hash;
  Py_RETURN_TRUE;
}

PyObject* make_kept_hash(PyObject*, PyObject* cls) {
  if (!PyType_Check(cls)) {
    PyErr_SetString(PyExc_TypeError, "kept_hash takes a class");
    return nullptr;
  }
  return PyDescr_NewMethod((PyTypeObject*)cls, &kept_hash_def);
}

// ---- the canonical algebra (affine.py's `_key_py` ... `atoms_py`) ------------------------------------------

enum Kind { K_CONST, K_VAL, K_CARRIED, K_CEILDIV, K_FLOORDIV, K_MIN, K_MAX, K_SELECT, K_ADD, K_SUB, K_MUL, K_N };

PyTypeObject* node_type[K_N];  // bound by `bind`, in Kind order
PyObject* expr_cls;            // affine.Expr
PyObject* zero_node;           // affine.ZERO
// the Python steps, for what is not a node class: _key_py, poly_py, _e, atoms_py, from_poly_py, _poly_add_py
PyObject *py_key, *py_poly, *py_e, *py_atoms, *py_from_poly, *py_poly_add;
PyObject* key_callable;        // this module's `key`, for list.sort
PyObject *s_key, *s_poly, *s_canonical, *s_canon, *s_atoms, *s_value, *s_a, *s_b, *s_c, *s_arg, *s_k, *s_cond, *s_id;
PyObject *s_sort, *s_Add, *s_Sub, *s_Mul, *s_name, *s_empty;
PyObject *i0, *i1, *i2, *i3, *i4, *i5, *i6, *i7, *i8, *i_m1;
PyObject* empty_tuple;

bool init_strings() {
  struct {
    PyObject** at;
    const char* text;
  } names[] = {{&s_key, "_key"},     {&s_poly, "_poly"}, {&s_canonical, "_canonical"}, {&s_canon, "_canon"},
               {&s_atoms, "_atoms"}, {&s_value, "value"}, {&s_a, "a"},                 {&s_b, "b"},
               {&s_c, "c"},          {&s_arg, "arg"},     {&s_k, "k"},                 {&s_cond, "cond"},
               {&s_id, "id"},        {&s_sort, "sort"},   {&s_Add, "Add"},             {&s_Sub, "Sub"},
               {&s_Mul, "Mul"},     {&s_name, "name"},   {&s_empty, ""}};
  for (auto& n : names)
    if ((*n.at = PyUnicode_InternFromString(n.text)) == nullptr) return false;
  PyObject** ints[] = {&i0, &i1, &i2, &i3, &i4, &i5, &i6, &i7, &i8};
  for (int v = 0; v < 9; v++)
    if ((*ints[v] = PyLong_FromLong(v)) == nullptr) return false;
  if ((i_m1 = PyLong_FromLong(-1)) == nullptr) return false;
  return (empty_tuple = PyTuple_New(0)) != nullptr;
}

int kind_of(PyObject* e) {  // the node class e is exactly, or -1
  PyTypeObject* t = Py_TYPE(e);
  if (node_type[K_CONST] == nullptr) return -1;
  for (int k = 0; k < K_N; k++)
    if (node_type[k] == t) return k;
  return -1;
}

PyObject* bind(PyObject*, PyObject* args) {
  PyObject *classes, *expr, *zero, *key_py, *poly_py, *e_py, *atoms_py, *from_poly_py, *poly_add_py;
  if (!PyArg_ParseTuple(args, "O!OOOOOOOO", &PyTuple_Type, &classes, &expr, &zero, &key_py, &poly_py, &e_py, &atoms_py,
                        &from_poly_py, &poly_add_py))
    return nullptr;
  if (PyTuple_GET_SIZE(classes) != K_N) {
    PyErr_SetString(PyExc_TypeError, "bind takes the 11 node classes in Kind order");
    return nullptr;
  }
  for (int k = 0; k < K_N; k++) {
    PyObject* c = PyTuple_GET_ITEM(classes, k);
    if (!PyType_Check(c)) {
      PyErr_SetString(PyExc_TypeError, "bind: a node class is not a class");
      return nullptr;
    }
    Py_INCREF(c);
    node_type[k] = (PyTypeObject*)c;
  }
  PyObject* objs[] = {expr, zero, key_py, poly_py, e_py, atoms_py, from_poly_py, poly_add_py};
  for (PyObject* o : objs) Py_INCREF(o);
  expr_cls = expr, zero_node = zero, py_key = key_py, py_poly = poly_py, py_e = e_py, py_atoms = atoms_py;
  py_from_poly = from_poly_py, py_poly_add = poly_add_py;
  Py_RETURN_NONE;
}

// a node's own dict (new reference)
inline PyObject* dict_of(PyObject* e) { return PyObject_GenericGetDict(e, nullptr); }

// field `name` of a node of a node class (new reference): in its dict, as its plain __init__ wrote it
PyObject* field(PyObject* e, PyObject* name) {
  PyObject* d = dict_of(e);
  if (d == nullptr) return nullptr;
  PyObject* v = PyDict_GetItemWithError(d, name);
  Py_XINCREF(v);
  Py_DECREF(d);
  if (v == nullptr && !PyErr_Occurred()) return PyObject_GetAttr(e, name);
  return v;
}

// a node made as its class' plain __init__ makes it: the fields written into its dict in order (steals values)
PyObject* make2(int kind, PyObject* n1, PyObject* v1, PyObject* n2, PyObject* v2) {
  if (v1 == nullptr || (n2 != nullptr && v2 == nullptr)) {
    Py_XDECREF(v1);
    Py_XDECREF(v2);
    return nullptr;
  }
  PyTypeObject* t = node_type[kind];
  PyObject* o = t->tp_new(t, empty_tuple, nullptr);
  PyObject* d = o != nullptr ? dict_of(o) : nullptr;
  bool ok = d != nullptr && PyDict_SetItem(d, n1, v1) == 0 && (n2 == nullptr || PyDict_SetItem(d, n2, v2) == 0);
  Py_XDECREF(d);
  Py_DECREF(v1);
  Py_XDECREF(v2);
  if (!ok) {
    Py_XDECREF(o);
    return nullptr;
  }
  return o;
}

inline PyObject* make_const(PyObject* v) {  // borrows v
  Py_INCREF(v);
  return make2(K_CONST, s_value, v, nullptr, nullptr);
}

inline PyObject* make_bin(int kind, PyObject* a, PyObject* b) { return make2(kind, s_a, a, s_b, b); }  // steals

PyObject* key(PyObject* e);

PyObject* id_of(PyObject* node, PyObject* name) {  // node.<name>.id
  PyObject* v = field(node, name);
  if (v == nullptr) return nullptr;
  PyObject* id = PyObject_GetAttr(v, s_id);
  Py_DECREF(v);
  return id;
}

PyObject* key_field(PyObject* node, PyObject* name) {  // _key(node.<name>)
  PyObject* v = field(node, name);
  if (v == nullptr) return nullptr;
  PyObject* k = key(v);
  Py_DECREF(v);
  return k;
}

PyObject* tuple_steal(std::initializer_list<PyObject*> items, bool own_first = false) {
  // a tuple of items, each a new reference (the first borrowed unless own_first): NULL items free the rest
  bool bad = false;
  for (PyObject* x : items) bad = bad || x == nullptr;
  PyObject* t = bad ? nullptr : PyTuple_New((Py_ssize_t)items.size());
  Py_ssize_t i = 0;
  for (PyObject* x : items) {
    if (i == 0 && !own_first) Py_XINCREF(x);
    if (t != nullptr)
      PyTuple_SET_ITEM(t, i, x);
    else
      Py_XDECREF(x);
    i++;
  }
  return t;
}

PyObject* key_of(PyObject* e, int kind) {
  static PyObject* const* kind_code[] = {&i0, &i1, &i2, &i3, &i4, &i5, &i6, &i7};
  switch (kind) {
    case K_CONST:
      return tuple_steal({i0, field(e, s_value)});
    case K_VAL:
      return tuple_steal({i1, id_of(e, s_value)});
    case K_CARRIED:
      return tuple_steal({i2, id_of(e, s_arg), field(e, s_k)});
    case K_CEILDIV:
    case K_FLOORDIV:
      return tuple_steal({*kind_code[kind], key_field(e, s_a), field(e, s_c)});
    case K_MIN:
    case K_MAX:
      return tuple_steal({*kind_code[kind], key_field(e, s_a), key_field(e, s_b)});
    case K_SELECT:
      return tuple_steal({i7, id_of(e, s_cond), key_field(e, s_a), key_field(e, s_b)});
    default: {
      PyObject* name = kind == K_ADD ? s_Add : kind == K_SUB ? s_Sub : s_Mul;
      Py_INCREF(name);
      return tuple_steal({i8, name, key_field(e, s_a), key_field(e, s_b)});
    }
  }
}

PyObject* key(PyObject* e) {  // affine._key_py
  int kind = kind_of(e);
  if (kind < 0) return PyObject_CallOneArg(py_key, e);
  PyObject* d = dict_of(e);
  if (d == nullptr) return nullptr;
  PyObject* k = PyDict_GetItemWithError(d, s_key);
  if (k != nullptr || PyErr_Occurred()) {
    Py_XINCREF(k);
    Py_DECREF(d);
    return k;
  }
  k = key_of(e, kind);
  if (k != nullptr && PyDict_SetItem(d, s_key, k) < 0) Py_CLEAR(k);
  Py_DECREF(d);
  return k;
}

// ---- polynomials: dict monomial (tuple of atoms) -> int coefficient, no zero coefficient ----

PyObject* poly(PyObject* e);

PyObject* poly_add(PyObject* p, PyObject* q, PyObject* sign) {  // affine._poly_add_py: p + sign * q
  PyObject* out = PyDict_Copy(p);
  if (out == nullptr) return nullptr;
  Py_ssize_t pos = 0;
  PyObject *m, *c;
  while (PyDict_Next(q, &pos, &m, &c)) {
    PyObject* had = PyDict_GetItemWithError(out, m);
    if (had == nullptr && PyErr_Occurred()) goto fail;
    {
      PyObject* sc = PyNumber_Multiply(sign, c);
      if (sc == nullptr) goto fail;
      PyObject* k = PyNumber_Add(had != nullptr ? had : i0, sc);
      Py_DECREF(sc);
      if (k == nullptr) goto fail;
      int truth = PyObject_IsTrue(k);
      int r = truth < 0 ? -1 : truth ? PyDict_SetItem(out, m, k) : PyDict_DelItem(out, m);
      Py_DECREF(k);
      if (r < 0) goto fail;
    }
  }
  return out;
fail:
  Py_DECREF(out);
  return nullptr;
}

PyObject* sorted_by_key(PyObject* seq) {  // tuple(sorted(seq, key=_key))
  PyObject* list = PySequence_List(seq);
  if (list == nullptr) return nullptr;
  PyObject* kw = Py_BuildValue("{s:O}", "key", key_callable);
  PyObject* sort = kw != nullptr ? PyObject_GetAttr(list, s_sort) : nullptr;
  PyObject* r = sort != nullptr ? PyObject_Call(sort, empty_tuple, kw) : nullptr;
  Py_XDECREF(sort);
  Py_XDECREF(kw);
  if (r == nullptr) {
    Py_DECREF(list);
    return nullptr;
  }
  Py_DECREF(r);
  PyObject* t = PyList_AsTuple(list);
  Py_DECREF(list);
  return t;
}

PyObject* poly_mul(PyObject* pa, PyObject* pb) {  // the Mul case of affine._poly_of_py
  if (PyDict_GET_SIZE(pb) == 1) {
    PyObject* c = PyDict_GetItemWithError(pb, empty_tuple);
    if (c == nullptr && PyErr_Occurred()) return nullptr;
    if (c != nullptr) {  // times a constant: the monomials stay as they are
      PyObject* out = PyDict_New();
      Py_ssize_t pos = 0;
      PyObject *m, *k;
      while (out != nullptr && PyDict_Next(pa, &pos, &m, &k)) {
        PyObject* kc = PyNumber_Multiply(k, c);
        if (kc == nullptr || PyDict_SetItem(out, m, kc) < 0) Py_CLEAR(out);
        Py_XDECREF(kc);
      }
      return out;
    }
  }
  PyObject* out = PyDict_New();
  if (out == nullptr) return nullptr;
  Py_ssize_t pa_pos = 0;
  PyObject *ma, *ca;
  while (PyDict_Next(pa, &pa_pos, &ma, &ca)) {
    Py_ssize_t pb_pos = 0;
    PyObject *mb, *cb;
    while (PyDict_Next(pb, &pb_pos, &mb, &cb)) {
      PyObject* both = PySequence_Concat(ma, mb);
      PyObject* m = both != nullptr ? sorted_by_key(both) : nullptr;
      Py_XDECREF(both);
      if (m == nullptr) goto fail;
      PyObject* had = PyDict_GetItemWithError(out, m);
      PyObject* prod = (had != nullptr || !PyErr_Occurred()) ? PyNumber_Multiply(ca, cb) : nullptr;
      PyObject* k = prod != nullptr ? PyNumber_Add(had != nullptr ? had : i0, prod) : nullptr;
      Py_XDECREF(prod);
      int r = k != nullptr ? PyDict_SetItem(out, m, k) : -1;
      Py_XDECREF(k);
      Py_DECREF(m);
      if (r < 0) goto fail;
    }
  }
  {  // {m: c for m, c in out.items() if c}
    PyObject* kept = PyDict_New();
    Py_ssize_t pos = 0;
    PyObject *m, *c;
    while (kept != nullptr && PyDict_Next(out, &pos, &m, &c)) {
      int truth = PyObject_IsTrue(c);
      if (truth < 0 || (truth && PyDict_SetItem(kept, m, c) < 0)) Py_CLEAR(kept);
    }
    Py_DECREF(out);
    return kept;
  }
fail:
  Py_DECREF(out);
  return nullptr;
}

PyObject* poly_field(PyObject* e, PyObject* name) {  // poly(e.<name>)
  PyObject* v = field(e, name);
  if (v == nullptr) return nullptr;
  PyObject* p = poly(v);
  Py_DECREF(v);
  return p;
}

PyObject* poly_of(PyObject* e, int kind) {  // affine._poly_of_py on a node class
  switch (kind) {
    case K_CONST: {
      PyObject* v = field(e, s_value);
      if (v == nullptr) return nullptr;
      int truth = PyObject_IsTrue(v);
      PyObject* p = truth < 0 ? nullptr : PyDict_New();
      if (p != nullptr && truth && PyDict_SetItem(p, empty_tuple, v) < 0) Py_CLEAR(p);
      Py_DECREF(v);
      return p;
    }
    case K_ADD:
    case K_SUB: {
      PyObject* pa = poly_field(e, s_a);
      PyObject* pb = pa != nullptr ? poly_field(e, s_b) : nullptr;
      PyObject* p = pb != nullptr ? poly_add(pa, pb, kind == K_ADD ? i1 : i_m1) : nullptr;
      Py_XDECREF(pa);
      Py_XDECREF(pb);
      return p;
    }
    case K_MUL: {
      PyObject* pa = poly_field(e, s_a);
      PyObject* pb = pa != nullptr ? poly_field(e, s_b) : nullptr;
      PyObject* p = pb != nullptr ? poly_mul(pa, pb) : nullptr;
      Py_XDECREF(pa);
      Py_XDECREF(pb);
      return p;
    }
    default: {  // an atom: {(e,): 1}
      PyObject* m = PyTuple_Pack(1, e);
      PyObject* p = m != nullptr ? PyDict_New() : nullptr;
      if (p != nullptr && PyDict_SetItem(p, m, i1) < 0) Py_CLEAR(p);
      Py_XDECREF(m);
      return p;
    }
  }
}

PyObject* poly(PyObject* e) {  // affine.poly_py: a sum's or product's kept on the node
  int kind = kind_of(e);
  if (kind < 0) return PyObject_CallOneArg(py_poly, e);
  if (kind != K_ADD && kind != K_SUB && kind != K_MUL) return poly_of(e, kind);
  PyObject* d = dict_of(e);
  if (d == nullptr) return nullptr;
  PyObject* p = PyDict_GetItemWithError(d, s_poly);
  if (p != nullptr || PyErr_Occurred()) {
    Py_XINCREF(p);
    Py_DECREF(d);
    return p;
  }
  p = poly_of(e, kind);
  if (p != nullptr && PyDict_SetItem(d, s_poly, p) < 0) Py_CLEAR(p);
  Py_DECREF(d);
  return p;
}

// ---- the canonical tree ----

PyObject* product(PyObject* m) {  // affine._product: atoms[0] * atoms[1] * ...
  PyObject* acc = PyTuple_GET_ITEM(m, 0);
  Py_INCREF(acc);
  for (Py_ssize_t i = 1; i < PyTuple_GET_SIZE(m) && acc != nullptr; i++) {
    PyObject* a = PyTuple_GET_ITEM(m, i);
    Py_INCREF(a);
    acc = make_bin(K_MUL, acc, a);
  }
  return acc;
}

PyObject* term(PyObject* m, PyObject* c) {  // affine._term (m not empty)
  if (PyTuple_GET_SIZE(m) == 0) return make_const(c);
  int one = PyObject_RichCompareBool(c, i1, Py_EQ);
  if (one < 0) return nullptr;
  if (one) return product(m);
  return make_bin(K_MUL, product(m), make_const(c));
}

PyObject* item_key(PyObject* m) {  // affine._item_key: (len(m), tuple(_key(a) for a in m))
  Py_ssize_t n = PyTuple_GET_SIZE(m);
  PyObject* keys = PyTuple_New(n);
  if (keys == nullptr) return nullptr;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* k = key(PyTuple_GET_ITEM(m, i));
    if (k == nullptr) {
      Py_DECREF(keys);
      return nullptr;
    }
    PyTuple_SET_ITEM(keys, i, k);
  }
  return tuple_steal({PyLong_FromSsize_t(n), keys}, true);
}

PyObject* from_poly(PyObject* p) {  // affine.from_poly_py: positive terms, then negative ones, constant last
  if (!PyDict_CheckExact(p)) return PyObject_CallOneArg(py_from_poly, p);
  PyObject* cnst = i0;  // borrowed
  struct Term {
    PyObject *m, *c, *k;  // borrowed, borrowed, owned (the sort key, when sorted)
  };
  Term small[16];
  Term* terms = small;
  Py_ssize_t cap = 16, n = 0;
  PyObject* acc = nullptr;
  Py_ssize_t pos = 0;
  PyObject *m, *c;
  bool ok = true;
  while (PyDict_Next(p, &pos, &m, &c)) {
    int truth = PyObject_IsTrue(m);
    if (truth < 0) return nullptr;
    if (!truth) {
      cnst = c;
      continue;
    }
    if (n == cap) {
      Term* more = (Term*)PyMem_Malloc(sizeof(Term) * cap * 2);
      if (more == nullptr) {
        if (terms != small) PyMem_Free(terms);
        return PyErr_NoMemory();
      }
      memcpy(more, terms, sizeof(Term) * n);
      if (terms != small) PyMem_Free(terms);
      terms = more, cap *= 2;
    }
    terms[n++] = {m, c, nullptr};
  }
  if (n > 1) {  // a stable sort by _item_key (insertion: a handful of terms)
    for (Py_ssize_t i = 0; i < n && ok; i++) ok = (terms[i].k = item_key(terms[i].m)) != nullptr;
    for (Py_ssize_t i = 1; i < n && ok; i++) {
      Term t = terms[i];
      Py_ssize_t j = i;
      while (j > 0) {
        int lt = PyObject_RichCompareBool(t.k, terms[j - 1].k, Py_LT);
        if (lt < 0) ok = false;
        if (lt <= 0) break;
        terms[j] = terms[j - 1];
        j--;
      }
      terms[j] = t;
    }
  }
  for (int sign = 1; sign >= -1 && ok; sign -= 2) {  // the positive terms and constant, then the negative ones
    for (Py_ssize_t i = 0; i < n && ok; i++) {
      int pick = PyObject_RichCompareBool(terms[i].c, i0, sign > 0 ? Py_GT : Py_LT);
      if (pick <= 0) {
        ok = pick == 0;
        continue;
      }
      PyObject* t;
      if (sign > 0) {
        t = term(terms[i].m, terms[i].c);
        acc = acc == nullptr ? t : make_bin(K_ADD, acc, t);
      } else if (acc == nullptr) {
        acc = term(terms[i].m, terms[i].c);
      } else {
        PyObject* minus = PyNumber_Negative(terms[i].c);
        t = minus != nullptr ? term(terms[i].m, minus) : nullptr;
        Py_XDECREF(minus);
        acc = t == nullptr ? (Py_DECREF(acc), nullptr) : make_bin(K_SUB, acc, t);
      }
      ok = acc != nullptr;
    }
    if (!ok) break;
    int pick = PyObject_RichCompareBool(cnst, i0, sign > 0 ? Py_GT : Py_LT);
    if (pick < 0) {
      ok = false;
    } else if (pick) {
      if (acc == nullptr) {
        acc = make_const(cnst);
      } else if (sign > 0) {
        acc = make_bin(K_ADD, acc, make_const(cnst));
      } else {
        PyObject* minus = PyNumber_Negative(cnst);
        PyObject* t = minus != nullptr ? make_const(minus) : nullptr;
        Py_XDECREF(minus);
        acc = t == nullptr ? (Py_DECREF(acc), nullptr) : make_bin(K_SUB, acc, t);
      }
      ok = acc != nullptr;
    }
  }
  for (Py_ssize_t i = 0; i < n; i++) Py_XDECREF(terms[i].k);
  if (terms != small) PyMem_Free(terms);
  if (!ok) {
    Py_XDECREF(acc);
    return nullptr;
  }
  if (acc == nullptr) {
    Py_INCREF(zero_node);
    return zero_node;
  }
  int kind = kind_of(acc);
  if (kind == K_ADD || kind == K_SUB || kind == K_MUL) {  // a tree built here: its polynomial is p, canonical
    PyObject* d = dict_of(acc);
    if (d == nullptr || PyDict_SetItem(d, s_poly, p) < 0 || PyDict_SetItem(d, s_canonical, Py_True) < 0) {
      Py_XDECREF(d);
      Py_DECREF(acc);
      return nullptr;
    }
    Py_DECREF(d);
  }
  return acc;
}

PyObject* as_expr(PyObject* x) {  // affine._e (new reference)
  if (kind_of(x) >= 0) {
    Py_INCREF(x);
    return x;
  }
  if (PyLong_CheckExact(x)) return make_const(x);
  return PyObject_CallOneArg(py_e, x);
}

PyObject* canon(PyObject* e) {  // affine.canon_py
  if (PyLong_CheckExact(e)) {
    int truth = PyObject_IsTrue(e);
    if (truth < 0) return nullptr;
    if (!truth) {
      Py_INCREF(zero_node);
      return zero_node;
    }
    return make_const(e);
  }
  int kind = kind_of(e);
  if (kind != K_ADD && kind != K_SUB && kind != K_MUL) return as_expr(e);
  PyObject* d = dict_of(e);
  if (d == nullptr) return nullptr;
  PyObject* flag = PyDict_GetItemWithError(d, s_canonical);
  int truth = flag != nullptr ? PyObject_IsTrue(flag) : PyErr_Occurred() ? -1 : 0;
  if (truth != 0) {
    Py_DECREF(d);
    if (truth < 0) return nullptr;
    Py_INCREF(e);
    return e;
  }
  PyObject* c = PyDict_GetItemWithError(d, s_canon);
  if (c != nullptr || PyErr_Occurred()) {
    Py_XINCREF(c);
    Py_DECREF(d);
    return c;
  }
  PyObject* p = poly(e);  // (_e(e) is e: a node class)
  c = p != nullptr ? from_poly(p) : nullptr;
  Py_XDECREF(p);
  if (c != nullptr && c != e && PyDict_SetItem(d, s_canon, c) < 0) Py_CLEAR(c);
  Py_DECREF(d);
  return c;
}

PyObject* add_or_sub(PyObject* a, PyObject* b, PyObject* sign) {  // from_poly(_poly_add(poly(_e(a)), poly(_e(b)), sign))
  PyObject* ea = as_expr(a);
  PyObject* pa = ea != nullptr ? poly(ea) : nullptr;
  PyObject* eb = pa != nullptr ? as_expr(b) : nullptr;
  PyObject* pb = eb != nullptr ? poly(eb) : nullptr;
  PyObject* p = pb != nullptr ? poly_add(pa, pb, sign) : nullptr;
  PyObject* r = p != nullptr ? from_poly(p) : nullptr;
  Py_XDECREF(ea);
  Py_XDECREF(pa);
  Py_XDECREF(eb);
  Py_XDECREF(pb);
  Py_XDECREF(p);
  return r;
}

PyObject* mul(PyObject* a, PyObject* b) {  // canon(Mul(_e(a), _e(b))): the product's polynomial, its tree
  PyObject* ea = as_expr(a);
  PyObject* eb = ea != nullptr ? as_expr(b) : nullptr;
  PyObject* pa = eb != nullptr ? poly(ea) : nullptr;
  PyObject* pb = pa != nullptr ? poly(eb) : nullptr;
  PyObject* p = pb != nullptr ? poly_mul(pa, pb) : nullptr;
  PyObject* r = p != nullptr ? from_poly(p) : nullptr;
  Py_XDECREF(ea);
  Py_XDECREF(eb);
  Py_XDECREF(pa);
  Py_XDECREF(pb);
  Py_XDECREF(p);
  return r;
}

PyObject* atoms(PyObject* e) {  // affine.atoms_py
  int kind = kind_of(e);
  if (kind < 0) return PyObject_CallOneArg(py_atoms, e);
  PyObject* d = dict_of(e);
  if (d == nullptr) return nullptr;
  PyObject* got = PyDict_GetItemWithError(d, s_atoms);
  if (got != nullptr || PyErr_Occurred()) {
    Py_XINCREF(got);
    Py_DECREF(d);
    return got;
  }
  got = (kind == K_VAL || kind == K_SELECT || kind == K_CARRIED) ? PyTuple_Pack(1, e) : (Py_INCREF(empty_tuple), empty_tuple);
  PyObject* names[] = {s_a, s_b};
  for (PyObject* name : names) {
    if (got == nullptr) break;
    PyObject* child = PyDict_GetItemWithError(d, name);  // getattr(e, name, None): a node class' field or nothing
    if (child == nullptr) {
      if (PyErr_Occurred()) Py_CLEAR(got);
      continue;
    }
    int is = PyObject_IsInstance(child, expr_cls);
    if (is <= 0) {
      if (is < 0) Py_CLEAR(got);
      continue;
    }
    Py_INCREF(child);
    PyObject* more = atoms(child);
    Py_DECREF(child);
    PyObject* both = more != nullptr ? PySequence_Concat(got, more) : nullptr;
    Py_XDECREF(more);
    Py_DECREF(got);
    got = both;
  }
  if (got != nullptr && (PyTuple_GET_SIZE(got) == 0 || PyTuple_GET_ITEM(got, 0) != e) &&
      PyDict_SetItem(d, s_atoms, got) < 0)
    Py_CLEAR(got);
  Py_DECREF(d);
  return got;
}

bool bound() {
  if (node_type[K_CONST] != nullptr) return true;
  PyErr_SetString(PyExc_RuntimeError, "passes._affine: bind() was not called (affine.py calls it)");
  return false;
}

PyObject* key_fn(PyObject*, PyObject* e) { return bound() ? key(e) : nullptr; }
PyObject* poly_fn(PyObject*, PyObject* e) { return bound() ? poly(e) : nullptr; }
PyObject* from_poly_fn(PyObject*, PyObject* p) { return bound() ? from_poly(p) : nullptr; }
PyObject* canon_fn(PyObject*, PyObject* e) { return bound() ? canon(e) : nullptr; }
PyObject* atoms_fn(PyObject*, PyObject* e) { return bound() ? atoms(e) : nullptr; }
PyObject* neg_fn(PyObject*, PyObject* a) { return bound() ? add_or_sub(i0, a, i_m1) : nullptr; }

PyObject* poly_add_fn(PyObject*, PyObject* args) {
  PyObject *p, *q, *sign;
  if (!bound() || !PyArg_UnpackTuple(args, "poly_add", 3, 3, &p, &q, &sign)) return nullptr;
  if (!PyDict_CheckExact(p) || !PyDict_CheckExact(q)) return PyObject_Call(py_poly_add, args, nullptr);
  return poly_add(p, q, sign);
}

PyObject* add_fn(PyObject*, PyObject* args) {
  PyObject *a, *b;
  if (!bound() || !PyArg_UnpackTuple(args, "add", 2, 2, &a, &b)) return nullptr;
  return add_or_sub(a, b, i1);
}

PyObject* sub_fn(PyObject*, PyObject* args) {
  PyObject *a, *b;
  if (!bound() || !PyArg_UnpackTuple(args, "sub", 2, 2, &a, &b)) return nullptr;
  return add_or_sub(a, b, i_m1);
}

PyObject* mul_fn(PyObject*, PyObject* args) {
  PyObject *a, *b;
  if (!bound() || !PyArg_UnpackTuple(args, "mul", 2, 2, &a, &b)) return nullptr;
  return mul(a, b);
}

// ---- min, max, floor and ceiling division, select, const_value (affine.py's `min_py` ... `const_value_py`) ----

PyObject *py_min, *py_max, *py_ceil_div, *py_floor_div;  // the Python steps, for a divisor that is not an int

PyObject* const_of(PyObject* p) {  // affine._const_of: the int a polynomial folds to, or None (new reference)
  Py_ssize_t n = PyDict_GET_SIZE(p);
  if (n == 0) return (Py_INCREF(i0), i0);
  if (n == 1) {
    PyObject* c = PyDict_GetItemWithError(p, empty_tuple);
    if (c != nullptr) return (Py_INCREF(c), c);
    if (PyErr_Occurred()) return nullptr;
  }
  Py_RETURN_NONE;
}

PyObject* minmax(PyObject* a, PyObject* b, int kind, bool pick_a_when_a_le_b) {  // affine._minmax
  if (a == Py_None || b == Py_None) {
    if (a == Py_None && b == Py_None) Py_RETURN_NONE;
    return canon(b == Py_None ? a : b);
  }
  PyObject* ca = canon(a);
  PyObject* cb = ca != nullptr ? canon(b) : nullptr;
  PyObject* pa = cb != nullptr ? poly(ca) : nullptr;
  PyObject* pb = pa != nullptr ? poly(cb) : nullptr;
  PyObject* diff = pb != nullptr ? poly_add(pa, pb, i_m1) : nullptr;
  PyObject* d = diff != nullptr ? const_of(diff) : nullptr;
  Py_XDECREF(pa);
  Py_XDECREF(pb);
  Py_XDECREF(diff);
  PyObject* r = nullptr;
  if (d == nullptr) {
    Py_XDECREF(ca);
    Py_XDECREF(cb);
    return nullptr;
  }
  if (d != Py_None) {  // a if (d <= 0) == pick_a_when_a_le_b else b
    int le = PyObject_RichCompareBool(d, i0, Py_LE);
    if (le >= 0) {
      r = (le != 0) == pick_a_when_a_le_b ? ca : cb;
      Py_INCREF(r);
    }
    Py_DECREF(ca);
    Py_DECREF(cb);
  } else {  // node(*sorted((a, b), key=_key))
    PyObject* ka = key(ca);
    PyObject* kb = ka != nullptr ? key(cb) : nullptr;
    int lt = kb != nullptr ? PyObject_RichCompareBool(kb, ka, Py_LT) : -1;
    Py_XDECREF(ka);
    Py_XDECREF(kb);
    if (lt < 0) {
      Py_DECREF(ca);
      Py_DECREF(cb);
    } else {
      r = lt ? make_bin(kind, cb, ca) : make_bin(kind, ca, cb);
    }
  }
  Py_DECREF(d);
  return r;
}

PyObject* divide(PyObject* a, PyObject* c, bool ceiling) {  // affine._div with its rounding (c an int > 0)
  PyObject* ea = as_expr(a);
  PyObject* p = ea != nullptr ? poly(ea) : nullptr;
  Py_XDECREF(ea);
  if (p == nullptr) return nullptr;
  int one = PyObject_RichCompareBool(c, i1, Py_EQ);
  if (one != 0) {
    PyObject* r = one > 0 ? from_poly(p) : nullptr;
    Py_DECREF(p);
    return r;
  }
  PyObject* cnst = PyDict_GetItemWithError(p, empty_tuple);  // p.get((), 0)
  if (cnst == nullptr && PyErr_Occurred()) {
    Py_DECREF(p);
    return nullptr;
  }
  cnst = cnst != nullptr ? cnst : i0;
  Py_INCREF(cnst);
  PyObject* quotient = PyDict_New();  // {m: k // c for m, k in rest.items()}, when every k % c == 0
  bool error = quotient == nullptr, exact = !error;
  Py_ssize_t pos = 0;
  PyObject *m, *k;
  while (exact && !error && PyDict_Next(p, &pos, &m, &k)) {
    if (PyTuple_GET_SIZE(m) == 0) continue;
    PyObject* rem = PyNumber_Remainder(k, c);
    int zero = rem != nullptr ? PyObject_RichCompareBool(rem, i0, Py_EQ) : -1;
    Py_XDECREF(rem);
    if (zero <= 0) {
      error = zero < 0, exact = false;
      break;
    }
    PyObject* q = PyNumber_FloorDivide(k, c);
    error = q == nullptr || PyDict_SetItem(quotient, m, q) < 0;
    Py_XDECREF(q);
  }
  PyObject* r = nullptr;
  if (error) {
    // (r stays NULL: the error is set)
  } else if (exact) {  // add(from_poly(quotient), round(const / c))
    PyObject* rounded = nullptr;
    if (ceiling) {  // -(-x // d)
      PyObject* minus = PyNumber_Negative(cnst);
      PyObject* q = minus != nullptr ? PyNumber_FloorDivide(minus, c) : nullptr;
      rounded = q != nullptr ? PyNumber_Negative(q) : nullptr;
      Py_XDECREF(minus);
      Py_XDECREF(q);
    } else {
      rounded = PyNumber_FloorDivide(cnst, c);
    }
    PyObject* t = rounded != nullptr ? from_poly(quotient) : nullptr;
    r = t != nullptr ? add_or_sub(t, rounded, i1) : nullptr;
    Py_XDECREF(t);
    Py_XDECREF(rounded);
  } else {  // node(from_poly(p), c)
    PyObject* t = from_poly(p);
    Py_INCREF(c);
    r = make2(ceiling ? K_CEILDIV : K_FLOORDIV, s_a, t, s_c, c);  // (steals both: NULL t frees c)
  }
  Py_XDECREF(quotient);
  Py_DECREF(cnst);
  Py_DECREF(p);
  return r;
}

PyObject* div_fn(PyObject* args, bool ceiling) {
  PyObject *a, *c;
  if (!bound() || py_ceil_div == nullptr || !PyArg_UnpackTuple(args, ceiling ? "ceil_div" : "floor_div", 2, 2, &a, &c))
    return nullptr;
  int positive = PyLong_CheckExact(c) ? PyObject_RichCompareBool(c, i0, Py_GT) : 0;
  if (positive < 0) return nullptr;
  if (!positive) return PyObject_Call(ceiling ? py_ceil_div : py_floor_div, args, nullptr);  // (its ValueError)
  return divide(a, c, ceiling);
}

PyObject* ceil_div_fn(PyObject*, PyObject* args) { return div_fn(args, true); }
PyObject* floor_div_fn(PyObject*, PyObject* args) { return div_fn(args, false); }

PyObject* minmax_fn(PyObject* args, bool is_min) {
  PyObject *a, *b;
  if (!bound() || !PyArg_UnpackTuple(args, is_min ? "min_" : "max_", 2, 2, &a, &b)) return nullptr;
  return minmax(a, b, is_min ? K_MIN : K_MAX, is_min);
}

PyObject* min_fn(PyObject*, PyObject* args) { return minmax_fn(args, true); }
PyObject* max_fn(PyObject*, PyObject* args) { return minmax_fn(args, false); }

PyObject* select_fn(PyObject*, PyObject* args) {  // affine.select_py: a if a == b else Select(cond, a, b)
  PyObject *cond, *a, *b;
  if (!bound() || !PyArg_UnpackTuple(args, "select", 3, 3, &cond, &a, &b)) return nullptr;
  PyObject* ca = canon(a);
  PyObject* cb = ca != nullptr ? canon(b) : nullptr;
  if (cb == nullptr) {
    Py_XDECREF(ca);
    return nullptr;
  }
  PyObject* eq = PyObject_RichCompare(ca, cb, Py_EQ);  // (== itself: no identity shortcut)
  int same = eq != nullptr ? PyObject_IsTrue(eq) : -1;
  Py_XDECREF(eq);
  if (same != 0) {
    Py_DECREF(cb);
    if (same < 0) Py_CLEAR(ca);
    return ca;
  }
  PyTypeObject* t = node_type[K_SELECT];
  PyObject* o = t->tp_new(t, empty_tuple, nullptr);
  PyObject* d = o != nullptr ? dict_of(o) : nullptr;
  bool ok = d != nullptr && PyDict_SetItem(d, s_cond, cond) == 0 && PyDict_SetItem(d, s_a, ca) == 0 &&
            PyDict_SetItem(d, s_b, cb) == 0;
  Py_XDECREF(d);
  Py_DECREF(ca);
  Py_DECREF(cb);
  if (!ok) Py_CLEAR(o);
  return o;
}

PyObject* const_value_fn(PyObject*, PyObject* e) {  // affine.const_value_py: _const_of(poly(e))
  if (!bound()) return nullptr;
  PyObject* p = poly(e);
  if (p == nullptr) return nullptr;
  PyObject* r = PyDict_Check(p) ? const_of(p) : nullptr;
  if (r == nullptr && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "poly did not return a dict");
  Py_DECREF(p);
  return r;
}

PyObject* bind_minmax(PyObject*, PyObject* args) {
  PyObject *mn, *mx, *cd, *fd;
  if (!PyArg_UnpackTuple(args, "bind_minmax", 4, 4, &mn, &mx, &cd, &fd)) return nullptr;
  PyObject* objs[] = {mn, mx, cd, fd};
  for (PyObject* o : objs) Py_INCREF(o);
  py_min = mn, py_max = mx, py_ceil_div = cd, py_floor_div = fd;
  Py_RETURN_NONE;
}

// ---- an expression's text (affine.py's `_render_py`: `str(e)`) ----

PyObject* py_render_matched;  // affine._render_matched: the text of what is not a node class

PyObject* render(PyObject* e);

PyObject* fmt(PyObject* x) { return PyErr_Occurred() ? nullptr : PyObject_Format(x, s_empty); }  // f"{x}" (new reference)

PyObject* value_name(PyObject* v) {  // affine.value_name: f"%{v.name}" if v.name else f"%{v.id}"
  if (PyErr_Occurred()) return nullptr;
  PyObject* name = PyObject_GetAttr(v, s_name);
  if (name == nullptr) return nullptr;
  int truth = PyObject_IsTrue(name);
  PyObject* shown = truth < 0 ? nullptr : truth ? fmt(name) : nullptr;
  Py_DECREF(name);
  if (truth == 0) {
    PyObject* id = PyObject_GetAttr(v, s_id);
    shown = id != nullptr ? fmt(id) : nullptr;
    Py_XDECREF(id);
  }
  if (shown == nullptr) return nullptr;
  PyObject* r = PyUnicode_FromFormat("%%%U", shown);
  Py_DECREF(shown);
  return r;
}

PyObject* render_field(PyObject* e, PyObject* name) {  // _render(e.<name>)
  PyObject* v = field(e, name);
  if (v == nullptr) return nullptr;
  PyObject* r = render(v);
  Py_DECREF(v);
  return r;
}

int is_sum(PyObject* x) {  // isinstance(x, Add | Sub)
  int r = PyObject_IsInstance(x, (PyObject*)node_type[K_ADD]);
  return r != 0 ? r : PyObject_IsInstance(x, (PyObject*)node_type[K_SUB]);
}

PyObject* in_parens(PyObject* x) {  // affine._in_parens
  int sum = is_sum(x);
  if (sum < 0) return nullptr;
  PyObject* r = render(x);
  if (r == nullptr || !sum) return r;
  PyObject* p = PyUnicode_FromFormat("(%U)", r);
  Py_DECREF(r);
  return p;
}

// the format with the texts in order (each a new reference or NULL: all are released)
PyObject* format_texts(const char* format, std::initializer_list<PyObject*> texts) {
  PyObject* t[4] = {nullptr, nullptr, nullptr, nullptr};
  int n = 0;
  bool bad = false;
  for (PyObject* x : texts) {
    t[n++] = x;
    bad = bad || x == nullptr;
  }
  PyObject* r = bad ? nullptr : PyUnicode_FromFormat(format, t[0], t[1], t[2], t[3]);
  for (int i = 0; i < n; i++) Py_XDECREF(t[i]);
  return r;
}

PyObject* render_mul(PyObject* e) {  // affine._render_mul
  PyObject* a = field(e, s_a);
  PyObject* b = a != nullptr ? field(e, s_b) : nullptr;
  PyObject* r = nullptr;
  if (b == nullptr) goto done;
  {
    int is_const = PyObject_IsInstance(b, (PyObject*)node_type[K_CONST]);
    if (is_const < 0) goto done;
    if (is_const) {
      PyObject* c = PyObject_GetAttr(b, s_value);
      int negative = c != nullptr ? PyObject_RichCompareBool(c, i0, Py_LT) : -1;
      if (negative > 0) {  // -(a * -c), or -a when c is -1
        int minus_one = PyObject_RichCompareBool(c, i_m1, Py_NE);
        if (minus_one < 0) {
          Py_DECREF(c);
          goto done;
        }
        if (minus_one) {  // _render(Mul(a, Const(-c))): -c > 0
          PyObject* nc = PyNumber_Negative(c);
          PyObject* text = nc != nullptr ? PyObject_Str(nc) : nullptr;
          Py_XDECREF(nc);
          r = format_texts("-%U*%U", {in_parens(a), text});
        } else {
          r = format_texts("-%U", {render(a)});
        }
      }
      Py_XDECREF(c);
      if (negative != 0) goto done;
    }
    r = format_texts("%U*%U", {in_parens(a), in_parens(b)});
  }
done:
  Py_XDECREF(a);
  Py_XDECREF(b);
  return r;
}

PyObject* render(PyObject* e) {  // affine._render_py
  if (PyErr_Occurred()) return nullptr;  // (a text before this one failed: the format gets nothing)
  int kind = kind_of(e);
  switch (kind) {
    case K_CONST: {
      PyObject* v = field(e, s_value);
      PyObject* r = v != nullptr ? PyObject_Str(v) : nullptr;
      Py_XDECREF(v);
      return r;
    }
    case K_VAL: {
      PyObject* v = field(e, s_value);
      PyObject* name = v != nullptr ? value_name(v) : nullptr;
      Py_XDECREF(v);
      return name;
    }
    case K_CARRIED: {
      PyObject* v = field(e, s_arg);
      PyObject* name = v != nullptr ? value_name(v) : nullptr;
      Py_XDECREF(v);
      PyObject* k = name != nullptr ? field(e, s_k) : nullptr;
      PyObject* kt = k != nullptr ? fmt(k) : nullptr;
      Py_XDECREF(k);
      return format_texts("carried(%U, %U)", {name, kt});
    }
    case K_ADD:
      return format_texts("%U + %U", {render_field(e, s_a), render_field(e, s_b)});
    case K_SUB: {
      PyObject* b = field(e, s_b);
      if (b == nullptr) return nullptr;
      PyObject* rb = render(b);
      int sum = rb != nullptr ? is_sum(b) : -1;
      Py_DECREF(b);
      if (sum < 0) {
        Py_XDECREF(rb);
        return nullptr;
      }
      return format_texts(sum ? "%U - (%U)" : "%U - %U", {render_field(e, s_a), rb});
    }
    case K_MUL:
      return render_mul(e);
    case K_CEILDIV:
    case K_FLOORDIV: {
      PyObject* ra = render_field(e, s_a);
      PyObject* c = ra != nullptr ? field(e, s_c) : nullptr;
      PyObject* ct = c != nullptr ? fmt(c) : nullptr;
      Py_XDECREF(c);
      return format_texts(kind == K_CEILDIV ? "cdiv(%U, %U)" : "fdiv(%U, %U)", {ra, ct});
    }
    case K_MIN:
      return format_texts("min(%U, %U)", {render_field(e, s_a), render_field(e, s_b)});
    case K_MAX:
      return format_texts("max(%U, %U)", {render_field(e, s_a), render_field(e, s_b)});
    case K_SELECT: {
      PyObject* cond = field(e, s_cond);
      PyObject* name = cond != nullptr ? value_name(cond) : nullptr;
      Py_XDECREF(cond);
      return format_texts("select(%U, %U, %U)", {name, render_field(e, s_a), render_field(e, s_b)});
    }
    default:
      return PyObject_CallOneArg(py_render_matched, e);
  }
}

PyObject* render_fn(PyObject*, PyObject* e) { return bound() && py_render_matched != nullptr ? render(e) : nullptr; }

PyObject* bind_render(PyObject*, PyObject* fallback) {
  Py_INCREF(fallback);
  Py_XSETREF(py_render_matched, fallback);
  Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"kept_hash", make_kept_hash, METH_O,
     "kept_hash(cls): the method to set as cls.__hash__: hash of the fields named by cls._hash_fields, kept in the "
     "node's dict as '_hash'"},
    {"hash_slot", hash_slot, METH_O,
     "hash_slot(cls): cls' hash slot calls kept_hash directly (no method lookup and call) when cls.__hash__ is it"},
    {"field_hash_slot", field_hash_slot, METH_O,
     "field_hash_slot(cls): cls' hash is the hash of the fields named by cls._hash_fields, in C, when cls.__hash__ is "
     "a Python function"},
    {"eq_slot", eq_slot, METH_O,
     "eq_slot(cls): cls' == compares the fields named by cls._eq_fields in C when cls.__eq__ is a Python function"},
    {"bind", bind, METH_VARARGS,
     "bind(classes, Expr, ZERO, _key_py, poly_py, _e, atoms_py, from_poly_py, _poly_add_py): the node classes "
     "(Const, Val, Carried, CeilDiv, FloorDiv, Min, Max, Select, Add, Sub, Mul) and the Python steps (affine.py)"},
    {"key", key_fn, METH_O, "affine._key_py"},
    {"poly", poly_fn, METH_O, "affine.poly_py"},
    {"poly_add", poly_add_fn, METH_VARARGS, "affine._poly_add_py"},
    {"from_poly", from_poly_fn, METH_O, "affine.from_poly_py"},
    {"canon", canon_fn, METH_O, "affine.canon_py"},
    {"add", add_fn, METH_VARARGS, "affine.add_py"},
    {"sub", sub_fn, METH_VARARGS, "affine.sub_py"},
    {"mul", mul_fn, METH_VARARGS, "affine.mul_py"},
    {"neg", neg_fn, METH_O, "affine.neg_py"},
    {"atoms", atoms_fn, METH_O, "affine.atoms_py"},
    {"render", render_fn, METH_O, "affine._render_py"},
    {"const_value", const_value_fn, METH_O, "affine.const_value_py"},
    {"ceil_div", ceil_div_fn, METH_VARARGS, "affine.ceil_div_py"},
    {"floor_div", floor_div_fn, METH_VARARGS, "affine.floor_div_py"},
    {"min_", min_fn, METH_VARARGS, "affine.min_py"},
    {"max_", max_fn, METH_VARARGS, "affine.max_py"},
    {"select", select_fn, METH_VARARGS, "affine.select_py"},
    {"bind_minmax", bind_minmax, METH_VARARGS, "bind_minmax(min_py, max_py, ceil_div_py, floor_div_py)"},
    {"bind_render", bind_render, METH_O, "bind_render(_render_matched): the text of what is not a node class"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_affine", "the affine nodes' kept hash and algebra in C (passes/affine.py)", -1,
                      methods};

}  // namespace

PyMODINIT_FUNC PyInit__affine(void) {
  s_hash_key = PyUnicode_InternFromString("_hash");
  s_fields_key = PyUnicode_InternFromString("_hash_fields");
  if (s_hash_key == nullptr || s_fields_key == nullptr || !init_strings()) return nullptr;
  PyObject* m = PyModule_Create(&module);
  if (m == nullptr) return nullptr;
  key_callable = PyObject_GetAttrString(m, "key");
  if (key_callable == nullptr) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
