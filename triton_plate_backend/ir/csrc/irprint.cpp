// triton_plate_backend.ir._irprint: the printer's walk over generic-form ops in C (ir/printer.py, `_Printer.op`
// and `_Printer.region`, with `_Names.bind_results`, `bind`, `ref`, `push` and `pop`): the same lines, names and
// state, written into the same Python objects (the printer's `lines`, `block_labels` and `loc_text`, the names'
// `of`, `used`, `scopes` and `counter`).
//
// A plain CPython module (no torch). printer.py keeps the walk in Python as the reference, used when this module
// is not built; tests/test_compiled_printer.py checks that both print the same text for every corpus kernel,
// before and after the IR passes. What stays Python is called from here: the custom forms (`module_op`, `func`),
// an attribute value other than IntAttr, StrAttr, UnitAttr and an EnumAttr's kept text (`format_attr`), a dictionary with a key that needs
// quoting (`format_dict`), a string that needs escapes (`format_string`), a location other than a `Loc` of strings
// (`_loc`), a type's text (`str`, once per type object per print; `format` where an f-string formats it) and the
// SSA-name pattern for a name that is not ASCII (`\w` is Unicode).
#include <Python.h>

#include <string>

namespace {

struct Ref {
  PyObject* p;
  explicit Ref(PyObject* o = nullptr) : p(o) {}
  ~Ref() { Py_XDECREF(p); }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
};

// set by init(): printer.format_dict, ir.core.FunctionType, ir.core.TypeAttr, printer._SSA_ID.match
PyObject* g_format_dict = nullptr;
PyObject* g_function_type = nullptr;
PyObject* g_type_attr = nullptr;
PyObject* g_ssa_match = nullptr;
// and printer.format_attr, printer.format_string, srcloc.Loc, ir.core.IntAttr, StrAttr, UnitAttr
PyObject* g_format_attr = nullptr;
PyObject* g_format_string = nullptr;
PyObject* g_loc = nullptr;
PyObject* g_int_attr = nullptr;
PyObject* g_str_attr = nullptr;
PyObject* g_unit_attr = nullptr;
PyObject* g_enum_attr = nullptr;  // ir.core.EnumAttr

// interned attribute names
PyObject *s_name, *s_operands, *s_results, *s_attrs, *s_regions, *s_loc, *s_successors, *s_type, *s_blocks, *s_args,
    *s_ops, *s_names, *s_lines, *s_block_labels, *s_loc_text, *s_locs, *s_of, *s_used, *s_scopes, *s_counter,
    *s_module_op, *s_func, *s__loc, *s_function_type, *s_builtin_module, *s_tt_func, *s_get, *s_hash, *s_value, *s_file, *s_line, *s_col, *s_empty, *s_text;

bool ascii_word(Py_UCS1 c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

// _SSA_ID.match(s): (?:[A-Za-z_$.-][\w$.-]*|\d+)\Z ; -1 on error
int ssa_id(PyObject* s) {
  if (!PyUnicode_IS_ASCII(s)) {
    Ref m(PyObject_CallOneArg(g_ssa_match, s));
    if (m.p == nullptr) return -1;
    return m.p != Py_None;
  }
  Py_ssize_t n = PyUnicode_GET_LENGTH(s);
  const Py_UCS1* c = PyUnicode_1BYTE_DATA(s);
  if (n == 0) return 0;
  bool digits = true;
  for (Py_ssize_t k = 0; k < n; ++k) digits = digits && c[k] >= '0' && c[k] <= '9';
  if (digits) return 1;
  Py_UCS1 h = c[0];
  if (!((h >= 'A' && h <= 'Z') || (h >= 'a' && h <= 'z') || h == '_' || h == '$' || h == '.' || h == '-')) return 0;
  for (Py_ssize_t k = 1; k < n; ++k)
    if (!(ascii_word(c[k]) || c[k] == '$' || c[k] == '.' || c[k] == '-')) return 0;
  return 1;
}

// str.isdigit() of a string that matched the SSA pattern (a non-ASCII one asks Python)
int is_digit(PyObject* s) {
  Ref r(PyObject_CallMethod(s, "isdigit", nullptr));
  if (r.p == nullptr) return -1;
  return r.p == Py_True;
}

PyObject* id_key(PyObject* o) { return PyLong_FromVoidPtr(o); }

// format_string(s) written to w: a printable-ASCII string without " or \\ is quoted as it is, any other asks Python
bool write_string(PyObject* s, _PyUnicodeWriter* w) {
  bool plain = PyUnicode_CheckExact(s) && PyUnicode_IS_ASCII(s);
  if (plain) {
    const Py_UCS1* c = PyUnicode_1BYTE_DATA(s);
    for (Py_ssize_t k = 0, n = PyUnicode_GET_LENGTH(s); plain && k < n; ++k)
      plain = c[k] >= 0x20 && c[k] < 0x7F && c[k] != '"' && c[k] != '\\';
  }
  if (plain)
    return _PyUnicodeWriter_WriteChar(w, '"') == 0 && _PyUnicodeWriter_WriteStr(w, s) == 0 &&
           _PyUnicodeWriter_WriteChar(w, '"') == 0;
  Ref text(PyObject_CallOneArg(g_format_string, s));
  return text.p != nullptr && _PyUnicodeWriter_WriteStr(w, text.p) == 0;
}

// _BARE_ID.match(k) of an ASCII string: [A-Za-z_][\w$.]*\Z
bool bare_id(PyObject* k) {
  Py_ssize_t n = PyUnicode_GET_LENGTH(k);
  const Py_UCS1* c = PyUnicode_1BYTE_DATA(k);
  if (n == 0 || !((c[0] >= 'A' && c[0] <= 'Z') || (c[0] >= 'a' && c[0] <= 'z') || c[0] == '_')) return false;
  for (Py_ssize_t j = 1; j < n; ++j)
    if (!(ascii_word(c[j]) || c[j] == '$' || c[j] == '.')) return false;
  return true;
}

// the text of format_loc(loc) for a srcloc.Loc whose file and name are str; nullptr with no error: ask Python
PyObject* loc_text_of(PyObject* loc) {
  if (Py_TYPE(loc) != (PyTypeObject*)g_loc) return nullptr;
  Ref file(PyObject_GetAttr(loc, s_file)), name(PyObject_GetAttr(loc, s_name));
  if (!file.p || !name.p) return nullptr;
  if (!PyUnicode_CheckExact(file.p) || !PyUnicode_CheckExact(name.p)) return nullptr;
  _PyUnicodeWriter w;
  _PyUnicodeWriter_Init(&w);
  w.overallocate = 1;
  bool ok = _PyUnicodeWriter_WriteASCIIString(&w, " loc(", 5) == 0;
  bool has_name = PyUnicode_GET_LENGTH(name.p) > 0;
  if (PyUnicode_GET_LENGTH(file.p) > 0) {
    Ref line(PyObject_GetAttr(loc, s_line)), col(PyObject_GetAttr(loc, s_col));
    Ref ls(line.p ? PyObject_Format(line.p, s_empty) : nullptr), cs(col.p ? PyObject_Format(col.p, s_empty) : nullptr);
    ok = ok && ls.p && cs.p;
    if (ok && has_name) ok = write_string(name.p, &w) && _PyUnicodeWriter_WriteChar(&w, '(') == 0;
    ok = ok && write_string(file.p, &w) && _PyUnicodeWriter_WriteChar(&w, ':') == 0 &&
         _PyUnicodeWriter_WriteStr(&w, ls.p) == 0 && _PyUnicodeWriter_WriteChar(&w, ':') == 0 &&
         _PyUnicodeWriter_WriteStr(&w, cs.p) == 0;
    if (ok && has_name) ok = _PyUnicodeWriter_WriteChar(&w, ')') == 0;
  } else if (has_name) {
    ok = ok && write_string(name.p, &w);
  } else {
    ok = ok && _PyUnicodeWriter_WriteASCIIString(&w, "unknown", 7) == 0;
  }
  ok = ok && _PyUnicodeWriter_WriteChar(&w, ')') == 0;
  if (!ok) {
    _PyUnicodeWriter_Dealloc(&w);
    return nullptr;
  }
  return _PyUnicodeWriter_Finish(&w);
}

// One print's names (`_Names`), its fields borrowed for the walk of one op
struct Names {
  PyObject* obj;
  PyObject* of;      // dict id(value) -> name
  PyObject* used;    // set of names
  PyObject* scopes;  // list of lists

  bool load(PyObject* names) {
    obj = names;
    Ref a(PyObject_GetAttr(names, s_of)), b(PyObject_GetAttr(names, s_used)), c(PyObject_GetAttr(names, s_scopes));
    if (!a.p || !b.p || !c.p) return false;
    if (!PyDict_Check(a.p) || !PySet_Check(b.p) || !PyList_Check(c.p)) {
      PyErr_SetString(PyExc_TypeError, "_irprint: unexpected _Names fields");
      return false;
    }
    of = a.p, used = b.p, scopes = c.p;  // owned by the _Names object, alive during the walk
    return true;
  }

  int in_used(PyObject* name) { return PySet_Contains(used, name); }

  bool take(PyObject* name) {
    if (PySet_Add(used, name) < 0) return false;
    Py_ssize_t n = PyList_GET_SIZE(scopes);
    if (n == 0) {
      PyErr_SetString(PyExc_IndexError, "list index out of range");
      return false;
    }
    return PyList_Append(PyList_GET_ITEM(scopes, n - 1), name) == 0;
  }

  // _fresh(hint): a new reference
  PyObject* fresh(PyObject* hint) {
    int ok = 0;
    if (PyUnicode_GET_LENGTH(hint) > 0) {
      ok = ssa_id(hint);
      if (ok < 0) return nullptr;
      if (ok) {
        int d = is_digit(hint);
        if (d < 0) return nullptr;
        ok = !d;
      }
    }
    if (ok) {
      int u = in_used(hint);
      if (u < 0) return nullptr;
      if (!u) return Py_NewRef(hint);
      for (long k = 0;; ++k) {
        PyObject* cand = PyUnicode_FromFormat("%U_%ld", hint, k);
        if (cand == nullptr) return nullptr;
        u = in_used(cand);
        if (u == 0) return cand;
        Py_DECREF(cand);
        if (u < 0) return nullptr;
      }
    }
    Ref counter(PyObject_GetAttr(obj, s_counter));
    if (counter.p == nullptr) return nullptr;
    long c = PyLong_AsLong(counter.p);
    if (c == -1 && PyErr_Occurred()) return nullptr;
    long start = c;
    for (;; ++c) {
      PyObject* cand = PyUnicode_FromFormat("%ld", c);
      if (cand == nullptr) return nullptr;
      int u = in_used(cand);
      if (u == 0) {
        if (c != start) {
          Ref v(PyLong_FromLong(c));
          if (v.p == nullptr || PyObject_SetAttr(obj, s_counter, v.p) < 0) {
            Py_DECREF(cand);
            return nullptr;
          }
        }
        return cand;
      }
      Py_DECREF(cand);
      if (u < 0) return nullptr;
    }
  }

  // bind(v): a new reference to the name
  PyObject* bind(PyObject* v) {
    Ref vname(PyObject_GetAttr(v, s_name));
    if (vname.p == nullptr) return nullptr;
    if (!PyUnicode_CheckExact(vname.p)) return PyObject_CallMethod(obj, "bind", "O", v);  // Python's behaviour
    PyObject* name = nullptr;
    if (PyUnicode_GET_LENGTH(vname.p) > 0) {
      int ok = ssa_id(vname.p);
      if (ok < 0) return nullptr;
      if (ok) {
        int u = in_used(vname.p);
        if (u < 0) return nullptr;
        if (!u) name = Py_NewRef(vname.p);
      }
    }
    if (name == nullptr) name = fresh(vname.p);
    if (name == nullptr) return nullptr;
    Ref key(id_key(v));
    if (key.p == nullptr || !take(name) || PyDict_SetItem(of, key.p, name) < 0) {
      Py_DECREF(name);
      return nullptr;
    }
    return name;
  }

  bool ref(PyObject* v, _PyUnicodeWriter* w) {
    Ref key(id_key(v));
    if (key.p == nullptr) return false;
    PyObject* name = PyDict_GetItemWithError(of, key.p);
    Ref owned;
    if (name == nullptr) {
      if (PyErr_Occurred()) return false;
      owned.p = bind(v);
      if (owned.p == nullptr) return false;
      name = owned.p;
    }
    return _PyUnicodeWriter_WriteChar(w, '%') == 0 && _PyUnicodeWriter_WriteStr(w, name) == 0;
  }

  // bind_results(op) written to w
  bool bind_results(PyObject* op, PyObject* rs, _PyUnicodeWriter* w) {
    Py_ssize_t n = PyList_GET_SIZE(rs);
    if (n == 0) return true;
    if (n > 1) {
      Ref first(PyObject_GetAttr(PyList_GET_ITEM(rs, 0), s_name));
      if (first.p == nullptr) return false;
      if (!PyUnicode_CheckExact(first.p)) {  // Python's behaviour, whatever it is
        Ref text(PyObject_CallMethod(obj, "bind_results", "O", op));
        return text.p != nullptr && _PyUnicodeWriter_WriteStr(w, text.p) == 0;
      }
      {
        Ref parts(PyUnicode_Partition(first.p, s_hash));
        if (parts.p == nullptr) return false;
        PyObject* base = PyTuple_GET_ITEM(parts.p, 0);
        int ok = PyUnicode_GET_LENGTH(base) > 0;
        if (ok) ok = ssa_id(base);
        if (ok < 0) return false;
        if (ok) {
          int u = in_used(base);
          if (u < 0) return false;
          ok = !u;
        }
        for (Py_ssize_t k = 0; ok && k < n; ++k) {
          Ref vn(PyObject_GetAttr(PyList_GET_ITEM(rs, k), s_name));
          Ref want(PyUnicode_FromFormat("%U#%zd", base, k));
          if (vn.p == nullptr || want.p == nullptr) return false;
          int eq = PyObject_RichCompareBool(vn.p, want.p, Py_EQ);
          if (eq < 0) return false;
          ok = eq;
        }
        if (ok) {
          if (!take(base)) return false;
          for (Py_ssize_t k = 0; k < n; ++k) {
            Ref nm(PyUnicode_FromFormat("%U#%zd", base, k));
            Ref key(id_key(PyList_GET_ITEM(rs, k)));
            if (nm.p == nullptr || key.p == nullptr || !take(nm.p) || PyDict_SetItem(of, key.p, nm.p) < 0)
              return false;
          }
          Ref text(PyUnicode_FromFormat("%%%U:%zd = ", base, n));
          return text.p != nullptr && _PyUnicodeWriter_WriteStr(w, text.p) == 0;
        }
      }
    }
    for (Py_ssize_t k = 0; k < n; ++k) {
      if (k > 0 && _PyUnicodeWriter_WriteASCIIString(w, ", ", 2) < 0) return false;
      Ref nm(bind(PyList_GET_ITEM(rs, k)));
      if (nm.p == nullptr || _PyUnicodeWriter_WriteChar(w, '%') < 0 || _PyUnicodeWriter_WriteStr(w, nm.p) < 0)
        return false;
    }
    return _PyUnicodeWriter_WriteASCIIString(w, " = ", 3) == 0;
  }

  bool push() {
    Ref l(PyList_New(0));
    return l.p != nullptr && PyList_Append(scopes, l.p) == 0;
  }

  bool pop() {
    Py_ssize_t n = PyList_GET_SIZE(scopes);
    if (n == 0) {
      PyErr_SetString(PyExc_IndexError, "pop from empty list");
      return false;
    }
    Ref last(Py_NewRef(PyList_GET_ITEM(scopes, n - 1)));
    if (PyList_SetSlice(scopes, n - 1, n, nullptr) < 0) return false;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(last.p); ++k)
      if (PySet_Discard(used, PyList_GET_ITEM(last.p, k)) < 0) return false;
    return true;
  }
};

struct Printer {
  PyObject* self;
  PyObject* lines;         // list of str
  PyObject* block_labels;  // dict id(block) -> label
  PyObject* loc_text;      // dict id(loc) -> text
  PyObject* type_text;     // dict id(type) -> (type, str(type)), one print's
  int locs;

  // str(t), once per type object in this walk
  bool type(PyObject* t, _PyUnicodeWriter* w) {
    Ref key(id_key(t));
    if (key.p == nullptr) return false;
    PyObject* got = PyDict_GetItemWithError(type_text, key.p);  // (type, text): the type kept alive, its id unique
    if (got == nullptr) {
      if (PyErr_Occurred()) return false;
      Ref made(PyObject_Str(t));
      if (made.p == nullptr) return false;
      Ref pair(PyTuple_Pack(2, t, made.p));
      if (pair.p == nullptr || PyDict_SetItem(type_text, key.p, pair.p) < 0) return false;
      return _PyUnicodeWriter_WriteStr(w, made.p) == 0;
    }
    return _PyUnicodeWriter_WriteStr(w, PyTuple_GET_ITEM(got, 1)) == 0;
  }

  // format_dict(d) written to w: str keys that are bare ids, IntAttr, StrAttr, UnitAttr and kept-text EnumAttr values
  // here, other values
  // through format_attr; any other key (or a dict subclass) through Python's format_dict
  bool attr_dict(PyObject* d, _PyUnicodeWriter* w) {
    bool simple = PyDict_CheckExact(d);
    PyObject *k, *v;
    for (Py_ssize_t pos = 0; simple && PyDict_Next(d, &pos, &k, &v);)
      simple = PyUnicode_CheckExact(k) && PyUnicode_IS_ASCII(k) && bare_id(k);
    if (!simple) {
      Ref text(PyObject_CallOneArg(g_format_dict, d));
      return text.p != nullptr && _PyUnicodeWriter_WriteStr(w, text.p) == 0;
    }
    if (_PyUnicodeWriter_WriteChar(w, '{') < 0) return false;
    Ref items(PyDict_Items(d));  // a snapshot, as the Python loop's items() sees an unchanged dict
    if (items.p == nullptr) return false;
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(items.p); ++j) {
      PyObject* item = PyList_GET_ITEM(items.p, j);
      k = PyTuple_GET_ITEM(item, 0), v = PyTuple_GET_ITEM(item, 1);
      if (j > 0 && _PyUnicodeWriter_WriteASCIIString(w, ", ", 2) < 0) return false;
      if (_PyUnicodeWriter_WriteStr(w, k) < 0) return false;
      int unit = PyObject_IsInstance(v, g_unit_attr);
      if (unit < 0) return false;
      if (unit) continue;
      if (_PyUnicodeWriter_WriteASCIIString(w, " = ", 3) < 0) return false;
      if (Py_TYPE(v) == (PyTypeObject*)g_int_attr) {
        Ref value(PyObject_GetAttr(v, s_value)), t(PyObject_GetAttr(v, s_type));
        if (!value.p || !t.p) return false;
        if (t.p == Py_None) {
          Ref text(PyObject_Str(value.p));
          if (text.p == nullptr || _PyUnicodeWriter_WriteStr(w, text.p) < 0) return false;
        } else {
          Ref text(PyObject_Format(value.p, s_empty));
          if (text.p == nullptr || _PyUnicodeWriter_WriteStr(w, text.p) < 0 ||
              _PyUnicodeWriter_WriteASCIIString(w, " : ", 3) < 0 || !type_format(t.p, w))
            return false;
        }
      } else if (Py_TYPE(v) == (PyTypeObject*)g_str_attr) {
        Ref value(PyObject_GetAttr(v, s_value));
        if (value.p == nullptr || !write_string(value.p, w)) return false;
      } else if (Py_TYPE(v) == (PyTypeObject*)g_enum_attr) {  // format_enum: its text when it kept one
        Ref text(PyObject_GetAttr(v, s_text));
        if (text.p == nullptr) return false;
        if (PyUnicode_CheckExact(text.p) && PyUnicode_GET_LENGTH(text.p) > 0) {
          if (_PyUnicodeWriter_WriteStr(w, text.p) < 0) return false;
        } else {
          Ref made(PyObject_CallOneArg(g_format_attr, v));
          if (made.p == nullptr || _PyUnicodeWriter_WriteStr(w, made.p) < 0) return false;
        }
      } else {
        Ref text(PyObject_CallOneArg(g_format_attr, v));
        if (text.p == nullptr || _PyUnicodeWriter_WriteStr(w, text.p) < 0) return false;
      }
    }
    return _PyUnicodeWriter_WriteChar(w, '}') == 0;
  }

  // f"{t}" (format(t, ""), which is str(t) for every IR type): not cached, the f-string calls it each time
  bool type_format(PyObject* t, _PyUnicodeWriter* w) {
    Ref text(PyObject_Format(t, s_empty));
    return text.p != nullptr && _PyUnicodeWriter_WriteStr(w, text.p) == 0;
  }

  // append text to lines[-1]
  bool extend_last(PyObject* text) {
    Py_ssize_t n = PyList_GET_SIZE(lines);
    if (n == 0) {
      PyErr_SetString(PyExc_IndexError, "list index out of range");
      return false;
    }
    PyObject* last = PyList_GET_ITEM(lines, n - 1);
    PyObject* joined = PyUnicode_Concat(last, text);
    if (joined == nullptr) return false;
    return PyList_SetItem(lines, n - 1, joined) == 0;  // steals joined
  }

  bool extend_last(const char* text) {
    Ref t(PyUnicode_FromString(text));
    return t.p != nullptr && extend_last(t.p);
  }

  bool append_line(_PyUnicodeWriter* w) {
    PyObject* line = _PyUnicodeWriter_Finish(w);
    if (line == nullptr) return false;
    Ref l(line);
    return PyList_Append(lines, l.p) == 0;
  }

  bool load_names(Names& names) {
    Ref obj(PyObject_GetAttr(self, s_names));
    if (obj.p == nullptr) return false;
    // the printer keeps it (module() and func() put the outer one back before returning)
    return names.load(obj.p);
  }

  bool region(PyObject* region, long indent);

  bool op(PyObject* op, long indent) {
    Ref name(PyObject_GetAttr(op, s_name));
    if (name.p == nullptr) return false;
    if (PyUnicode_Check(name.p)) {
      if (PyUnicode_Compare(name.p, s_builtin_module) == 0) {
        Ref ind(PyLong_FromLong(indent));
        if (ind.p == nullptr) return false;
        Ref r(PyObject_CallMethodObjArgs(self, s_module_op, op, ind.p, nullptr));
        return r.p != nullptr;
      }
      if (PyUnicode_Compare(name.p, s_tt_func) == 0) {
        Ref attrs(PyObject_GetAttr(op, s_attrs));
        if (attrs.p == nullptr) return false;
        Ref ft(PyObject_CallMethodOneArg(attrs.p, s_get, s_function_type));
        if (ft.p == nullptr) return false;
        int is = PyObject_IsInstance(ft.p, g_type_attr);
        if (is < 0) return false;
        if (is) {
          Ref ind(PyLong_FromLong(indent));
          if (ind.p == nullptr) return false;
          Ref r(PyObject_CallMethodObjArgs(self, s_func, op, ind.p, nullptr));
          return r.p != nullptr;
        }
      }
    }
    Names names;
    if (!load_names(names)) return false;
    Ref results(PyObject_GetAttr(op, s_results)), operands(PyObject_GetAttr(op, s_operands));
    Ref successors(PyObject_GetAttr(op, s_successors)), regions(PyObject_GetAttr(op, s_regions));
    Ref attrs(PyObject_GetAttr(op, s_attrs));
    if (!results.p || !operands.p || !successors.p || !regions.p || !attrs.p) return false;
    if (!PyList_Check(results.p) || !PyList_Check(operands.p) || !PyList_Check(successors.p) ||
        !PyList_Check(regions.p)) {
      PyErr_SetString(PyExc_TypeError, "_irprint: an op's operands, results, successors and regions are lists");
      return false;
    }
    Ref nm_str(PyObject_Str(name.p));  // an f-string's {op.name}
    if (nm_str.p == nullptr) return false;

    _PyUnicodeWriter w;
    _PyUnicodeWriter_Init(&w);
    w.overallocate = 1;
    bool ok = true;
    for (long k = 0; ok && k < indent; ++k) ok = _PyUnicodeWriter_WriteChar(&w, ' ') == 0;
    ok = ok && names.bind_results(op, results.p, &w);
    ok = ok && _PyUnicodeWriter_WriteChar(&w, '"') == 0 && _PyUnicodeWriter_WriteStr(&w, nm_str.p) == 0 &&
         _PyUnicodeWriter_WriteASCIIString(&w, "\"(", 2) == 0;
    for (Py_ssize_t k = 0; ok && k < PyList_GET_SIZE(operands.p); ++k) {
      if (k > 0) ok = _PyUnicodeWriter_WriteASCIIString(&w, ", ", 2) == 0;
      ok = ok && names.ref(PyList_GET_ITEM(operands.p, k), &w);
    }
    ok = ok && _PyUnicodeWriter_WriteChar(&w, ')') == 0;
    Py_ssize_t nsucc = ok ? PyList_GET_SIZE(successors.p) : 0;
    if (nsucc > 0) {
      ok = _PyUnicodeWriter_WriteChar(&w, '[') == 0;
      for (Py_ssize_t k = 0; ok && k < nsucc; ++k) {
        if (k > 0) ok = _PyUnicodeWriter_WriteASCIIString(&w, ", ", 2) == 0;
        Ref key(id_key(PyList_GET_ITEM(successors.p, k)));
        ok = ok && key.p != nullptr;
        PyObject* label = ok ? PyDict_GetItemWithError(block_labels, key.p) : nullptr;
        if (ok && label == nullptr) {
          ok = !PyErr_Occurred() && _PyUnicodeWriter_WriteASCIIString(&w, "^bb_unknown", 11) == 0;
        } else if (ok) {
          ok = _PyUnicodeWriter_WriteStr(&w, label) == 0;
        }
      }
      ok = ok && _PyUnicodeWriter_WriteChar(&w, ']') == 0;
    }
    if (!ok) {
      _PyUnicodeWriter_Dealloc(&w);
      return false;
    }
    if (!append_line(&w)) return false;

    Py_ssize_t nreg = PyList_GET_SIZE(regions.p);
    if (nreg > 0) {
      if (!extend_last(" (")) return false;
      for (Py_ssize_t k = 0; k < nreg; ++k) {
        if (!region(PyList_GET_ITEM(regions.p, k), indent)) return false;
        if (k + 1 < nreg && !extend_last(", ")) return false;
      }
    }
    // the tail: `) {attrs} : (ins) -> outs loc(...)`
    _PyUnicodeWriter_Init(&w);
    w.overallocate = 1;
    ok = nreg == 0 || _PyUnicodeWriter_WriteChar(&w, ')') == 0;
    int has_attrs = ok ? PyObject_IsTrue(attrs.p) : 0;
    ok = ok && has_attrs >= 0;
    if (ok && has_attrs) ok = _PyUnicodeWriter_WriteChar(&w, ' ') == 0 && attr_dict(attrs.p, &w);
    ok = ok && _PyUnicodeWriter_WriteASCIIString(&w, " : (", 4) == 0;
    // operands' and results' types, read again after the regions were printed, as Python does
    Py_ssize_t nin = ok ? PyList_GET_SIZE(operands.p) : 0;
    for (Py_ssize_t k = 0; ok && k < nin; ++k) {
      if (k > 0) ok = _PyUnicodeWriter_WriteASCIIString(&w, ", ", 2) == 0;
      Ref t(PyObject_GetAttr(PyList_GET_ITEM(operands.p, k), s_type));
      ok = ok && t.p != nullptr && type(t.p, &w);
    }
    ok = ok && _PyUnicodeWriter_WriteASCIIString(&w, ") -> ", 5) == 0;
    Py_ssize_t nout = ok ? PyList_GET_SIZE(results.p) : 0;
    bool paren = nout != 1;
    if (ok && nout == 1) {
      Ref t(PyObject_GetAttr(PyList_GET_ITEM(results.p, 0), s_type));
      int is = t.p != nullptr ? PyObject_IsInstance(t.p, g_function_type) : -1;
      ok = is >= 0;
      paren = is > 0;
    }
    if (ok && paren) ok = _PyUnicodeWriter_WriteChar(&w, '(') == 0;
    for (Py_ssize_t k = 0; ok && k < nout; ++k) {
      if (k > 0) ok = _PyUnicodeWriter_WriteASCIIString(&w, ", ", 2) == 0;
      Ref t(PyObject_GetAttr(PyList_GET_ITEM(results.p, k), s_type));
      ok = ok && t.p != nullptr && type(t.p, &w);
    }
    if (ok && paren) ok = _PyUnicodeWriter_WriteChar(&w, ')') == 0;
    if (ok && locs) {
      Ref loc(PyObject_GetAttr(op, s_loc));
      ok = loc.p != nullptr;
      if (ok && loc.p != Py_None) {
        Ref key(id_key(loc.p));
        PyObject* text = key.p ? PyDict_GetItemWithError(loc_text, key.p) : nullptr;
        if (text != nullptr) {
          ok = _PyUnicodeWriter_WriteStr(&w, text) == 0;
        } else {
          ok = key.p != nullptr && !PyErr_Occurred();
          Ref made(ok ? loc_text_of(loc.p) : nullptr);  // the text _loc keeps (" loc(...)")
          if (ok && made.p == nullptr) {
            ok = !PyErr_Occurred();
            made.p = ok ? PyObject_CallMethodOneArg(self, s__loc, op) : nullptr;
          } else if (ok) {
            ok = PyDict_SetItem(loc_text, key.p, made.p) == 0;
          }
          ok = ok && made.p != nullptr && _PyUnicodeWriter_WriteStr(&w, made.p) == 0;
        }
      }
    }
    if (!ok) {
      _PyUnicodeWriter_Dealloc(&w);
      return false;
    }
    Ref tail(_PyUnicodeWriter_Finish(&w));
    return tail.p != nullptr && extend_last(tail.p);
  }
};

bool Printer::region(PyObject* region, long indent) {
  Names names;
  if (!load_names(names) || !names.push()) return false;
  Ref blocks(PyObject_GetAttr(region, s_blocks));
  if (blocks.p == nullptr) return false;
  if (!PyList_Check(blocks.p)) {
    PyErr_SetString(PyExc_TypeError, "_irprint: a region's blocks are a list");
    return false;
  }
  Ref list(PyList_GetSlice(blocks.p, 0, PyList_GET_SIZE(blocks.p)));  // as Python's enumerate sees it
  if (list.p == nullptr) return false;
  Py_ssize_t nb = PyList_GET_SIZE(list.p);
  Ref labels(PyList_New(nb));
  if (labels.p == nullptr) return false;
  for (Py_ssize_t k = 0; k < nb; ++k) {
    PyObject* label = PyUnicode_FromFormat("^bb%zd", k);
    if (label == nullptr) return false;
    PyList_SET_ITEM(labels.p, k, label);
    Ref key(id_key(PyList_GET_ITEM(list.p, k)));
    if (key.p == nullptr || PyDict_SetItem(block_labels, key.p, label) < 0) return false;
  }
  if (!extend_last("{")) return false;
  for (Py_ssize_t k = 0; k < nb; ++k) {
    PyObject* block = PyList_GET_ITEM(list.p, k);
    Ref args(PyObject_GetAttr(block, s_args));
    if (args.p == nullptr) return false;
    int has_args = PyObject_IsTrue(args.p);
    if (has_args < 0) return false;
    if (k > 0 || has_args) {
      // _block_header: `^bbK(%a: T, ...):` or `^bbK:`
      if (!load_names(names)) return false;
      _PyUnicodeWriter w;
      _PyUnicodeWriter_Init(&w);
      w.overallocate = 1;
      bool ok = true;
      for (long j = 0; ok && j < indent; ++j) ok = _PyUnicodeWriter_WriteChar(&w, ' ') == 0;
      ok = ok && _PyUnicodeWriter_WriteStr(&w, PyList_GET_ITEM(labels.p, k)) == 0;
      if (ok && has_args) {
        Ref seq(PySequence_Fast(args.p, "block args"));
        ok = seq.p != nullptr && _PyUnicodeWriter_WriteChar(&w, '(') == 0;
        for (Py_ssize_t j = 0; ok && j < PySequence_Fast_GET_SIZE(seq.p); ++j) {
          PyObject* a = PySequence_Fast_GET_ITEM(seq.p, j);
          if (j > 0) ok = _PyUnicodeWriter_WriteASCIIString(&w, ", ", 2) == 0;
          Ref nm(ok ? names.bind(a) : nullptr);
          Ref t(nm.p ? PyObject_GetAttr(a, s_type) : nullptr);
          Ref ts(t.p ? PyObject_Format(t.p, nullptr) : nullptr);
          ok = ts.p != nullptr && _PyUnicodeWriter_WriteChar(&w, '%') == 0 &&
               _PyUnicodeWriter_WriteStr(&w, nm.p) == 0 && _PyUnicodeWriter_WriteASCIIString(&w, ": ", 2) == 0 &&
               _PyUnicodeWriter_WriteStr(&w, ts.p) == 0;
        }
        ok = ok && _PyUnicodeWriter_WriteChar(&w, ')') == 0;
      }
      ok = ok && _PyUnicodeWriter_WriteChar(&w, ':') == 0;
      if (!ok) {
        _PyUnicodeWriter_Dealloc(&w);
        return false;
      }
      if (!append_line(&w)) return false;
    }
    Ref ops(PyObject_GetAttr(block, s_ops));
    if (ops.p == nullptr) return false;
    Ref it(PyObject_GetIter(ops.p));
    if (it.p == nullptr) return false;
    while (PyObject* inner = PyIter_Next(it.p)) {
      Ref hold(inner);
      if (!op(inner, indent + 2)) return false;
    }
    if (PyErr_Occurred()) return false;
  }
  _PyUnicodeWriter w;
  _PyUnicodeWriter_Init(&w);
  bool ok = true;
  for (long j = 0; ok && j < indent; ++j) ok = _PyUnicodeWriter_WriteChar(&w, ' ') == 0;
  ok = ok && _PyUnicodeWriter_WriteChar(&w, '}') == 0;
  if (!ok) {
    _PyUnicodeWriter_Dealloc(&w);
    return false;
  }
  if (!append_line(&w)) return false;
  return load_names(names) && names.pop();
}

PyObject* py_op(PyObject*, PyObject* args) {
  PyObject *self, *op, *type_text;
  long indent;
  if (!PyArg_ParseTuple(args, "OOlO!", &self, &op, &indent, &PyDict_Type, &type_text)) return nullptr;
  Printer p;
  p.self = self;
  p.type_text = type_text;
  Ref lines(PyObject_GetAttr(self, s_lines)), labels(PyObject_GetAttr(self, s_block_labels));
  Ref loc_text(PyObject_GetAttr(self, s_loc_text)), locs(PyObject_GetAttr(self, s_locs));
  if (!lines.p || !labels.p || !loc_text.p || !locs.p) return nullptr;
  if (!PyList_Check(lines.p) || !PyDict_Check(labels.p) || !PyDict_Check(loc_text.p)) {
    PyErr_SetString(PyExc_TypeError, "_irprint: unexpected _Printer fields");
    return nullptr;
  }
  p.lines = lines.p, p.block_labels = labels.p, p.loc_text = loc_text.p;
  p.locs = PyObject_IsTrue(locs.p);
  if (p.locs < 0) return nullptr;
  if (!p.op(op, indent)) return nullptr;
  Py_RETURN_NONE;
}

PyObject* py_init(PyObject*, PyObject* args) {
  PyObject *fd, *ft, *ta, *sm, *fa, *fs, *loc, *ia, *sa, *ua, *ea;
  if (!PyArg_ParseTuple(args, "OOOOOOO!O!O!O!O!", &fd, &ft, &ta, &sm, &fa, &fs, &PyType_Type, &loc, &PyType_Type, &ia,
                        &PyType_Type, &sa, &PyType_Type, &ua, &PyType_Type, &ea))
    return nullptr;
  Py_XSETREF(g_enum_attr, Py_NewRef(ea));
  Py_XSETREF(g_format_attr, Py_NewRef(fa));
  Py_XSETREF(g_format_string, Py_NewRef(fs));
  Py_XSETREF(g_loc, Py_NewRef(loc));
  Py_XSETREF(g_int_attr, Py_NewRef(ia));
  Py_XSETREF(g_str_attr, Py_NewRef(sa));
  Py_XSETREF(g_unit_attr, Py_NewRef(ua));
  Py_XSETREF(g_format_dict, Py_NewRef(fd));
  Py_XSETREF(g_function_type, Py_NewRef(ft));
  Py_XSETREF(g_type_attr, Py_NewRef(ta));
  Py_XSETREF(g_ssa_match, Py_NewRef(sm));
  Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"init", py_init, METH_VARARGS, "init(format_dict, FunctionType, TypeAttr, ssa_match, format_attr, format_string, Loc, IntAttr, StrAttr, "
     "UnitAttr, EnumAttr): the Python helpers"},
    {"op", py_op, METH_VARARGS,
     "op(printer, op, indent, type_text): _Printer.op (type_text: a dict id(type) -> text for this print)"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_irprint", "The printer's walk over generic-form ops in C.", -1,
                      methods};

}  // namespace

PyMODINIT_FUNC PyInit__irprint(void) {
  struct {
    PyObject** slot;
    const char* text;
  } names[] = {{&s_name, "name"},
               {&s_operands, "operands"},
               {&s_results, "results"},
               {&s_attrs, "attrs"},
               {&s_regions, "regions"},
               {&s_loc, "loc"},
               {&s_successors, "successors"},
               {&s_type, "type"},
               {&s_blocks, "blocks"},
               {&s_args, "args"},
               {&s_ops, "ops"},
               {&s_names, "names"},
               {&s_lines, "lines"},
               {&s_block_labels, "block_labels"},
               {&s_loc_text, "loc_text"},
               {&s_locs, "locs"},
               {&s_of, "of"},
               {&s_used, "used"},
               {&s_scopes, "scopes"},
               {&s_counter, "counter"},
               {&s_module_op, "module_op"},
               {&s_func, "func"},
               {&s__loc, "_loc"},
               {&s_function_type, "function_type"},
               {&s_builtin_module, "builtin.module"},
               {&s_tt_func, "tt.func"},
               {&s_get, "get"},
               {&s_hash, "#"},
               {&s_value, "value"},
               {&s_file, "file"},
               {&s_line, "line"},
               {&s_col, "col"},
               {&s_empty, ""},
               {&s_text, "text"}};
  for (auto& n : names)
    if ((*n.slot = PyUnicode_InternFromString(n.text)) == nullptr) return nullptr;
  return PyModule_Create(&module);
}
