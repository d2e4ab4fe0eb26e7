// triton_plate_backend.ttir._ttirparse: the parser's loop over the ops of a block (ttir/parser.py's
// `Parser._ops_into`) with the commonest custom op forms read here: the same IR objects, made by the same classes
// in the same order.
//
// An op is read here only when it is one of the forms below written the plain way (one result name or none,
// operands already defined, types the text gives equal to the operands' own, no `fastmath<...>` / enum clauses).
// Anything else, and any text these forms do not accept, declines: nothing has been changed yet (the op's
// objects are dropped, no name is defined), the token index goes back to the op's first token and
// `Parser.parse_op` reads it, so it raises every error the Python parser raises, at the same token. The
// primitives a form shares with the others (a type the memo does not hold yet, `{attrs}`, an attribute value,
// a location of a form not read here) are the Python functions, called with the parser's index set; an error
// they raise declines too. The module's loop (`module_items`) reads `#name = loc(...)` definitions the same
// way, `opt_loc` is Parser.opt_loc, and `resolve_locs` resolves the locations once the text is read (False
// where one does not resolve: then the Python resolver raises). ttir/parser.py keeps the Python methods as the
// reference; tests/test_compiled_parser.py parses every fixture, hand-written and fuzzed text both ways.
#include <Python.h>

#include <cstring>
#include <vector>

namespace {

enum Form { SAME, CMP, ARROW, CAST, CONSTANT, ATTRS_TYPE, TERMINATOR, LOAD, STORE, ADDPTR, AXIS, NFORMS };
const char* const FORM_NAMES[NFORMS] = {"same_type", "cmp",   "arrow", "cast",   "constant",    "attrs_colon_type",
                                        "operands_colon_types", "load", "store", "addptr", "program_axis"};

// what setup() was given (strong references, kept for the process)
struct Config {
  PyObject* forms = nullptr;  // op name -> int(Form)
  PyObject* op_class = nullptr;
  PyObject* value_class = nullptr;
  PyObject* enum_attr = nullptr;
  PyObject* type_class = nullptr;
  PyObject* bool_attr = nullptr;
  PyObject* i1 = nullptr;
  PyObject* type_cache = nullptr;
  PyObject* parse_type = nullptr;
  PyObject* parse_attr = nullptr;
  PyObject* parse_attr_dict = nullptr;
  PyObject* parse_opt_loc = nullptr;
  PyObject* i1_like = nullptr;
  PyObject* pointee = nullptr;
  PyObject* unknown_loc = nullptr;
  PyObject* loc_class = nullptr;
  PyObject* int_attr = nullptr;
  PyObject* scalar_type = nullptr;
} cfg;

// interned attribute names and strings
PyObject *s_toks, *s_i, *s_values, *s_forward, *s_scopes, *s_pending_locs, *s_parse_op, *s_attrs, *s_operands,
    *s_results, *s_name, *s_type, *s_parent, *s_ops, *s_alias, *s_empty, *s_predicate, *s_axis, *s_file,
    *s_callsite, *s_loc_aliases, *s_attr_aliases, *s_alias_definition, *s_fused, *s_zero;

enum Outcome { DECLINE = 0, DONE = 1, FAILED = -1 };

// One attempt at one op: the references it made, dropped when it ends whichever way.
struct Attempt {
  PyObject* parser;
  PyObject* toks;  // the parser's token list (borrowed from the parser for the loop's duration)
  Py_ssize_t n;
  Py_ssize_t j;       // the next token
  PyObject* values;   // borrowed: the parser's visible names
  std::vector<PyObject*> owned;

  ~Attempt() {
    for (PyObject* o : owned) Py_DECREF(o);
  }
  PyObject* own(PyObject* o) {
    if (o != nullptr) owned.push_back(o);
    return o;
  }
  PyObject* tok(Py_ssize_t k) const { return k < n ? PyList_GET_ITEM(toks, k) : s_empty; }
  PyObject* cur() const { return tok(j); }
};

// the token's text when it is ASCII (every token of the compiled lexer), else nullptr
inline const char* ascii(PyObject* t, Py_ssize_t* len) {
  if (!PyUnicode_IS_ASCII(t)) return nullptr;
  *len = PyUnicode_GET_LENGTH(t);
  return reinterpret_cast<const char*>(PyUnicode_1BYTE_DATA(t));
}

inline bool is(PyObject* t, const char* s) {
  Py_ssize_t len;
  const char* p = ascii(t, &len);
  return p != nullptr && static_cast<size_t>(len) == strlen(s) && memcmp(p, s, len) == 0;
}

// the token's first character (any character: a `%` name need not be ASCII), -1 for the end of input
inline int first(PyObject* t) { return PyUnicode_GET_LENGTH(t) > 0 ? static_cast<int>(PyUnicode_READ_CHAR(t, 0)) : -1; }

inline bool alpha(int c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

// Parser.keyword's test: an ASCII letter or `_` first, no `<`
bool keyword(PyObject* t) {
  Py_ssize_t len;
  const char* p = ascii(t, &len);
  if (p == nullptr || len == 0 || !(alpha(p[0]) || p[0] == '_')) return false;
  return memchr(p, '<', len) == nullptr;
}

bool accept(Attempt& a, const char* s) {
  if (!is(a.cur(), s)) return false;
  ++a.j;
  return true;
}

// a Python primitive called at token j with the parser's index set; its result (owned by the attempt) and the
// index it left, or nullptr with no error set (an error it raised declines)
PyObject* call_at(Attempt& a, PyObject* fn, PyObject* extra = nullptr) {
  PyObject* index = PyLong_FromSsize_t(a.j);
  if (index == nullptr) return nullptr;
  int rc = PyObject_SetAttr(a.parser, s_i, index);
  Py_DECREF(index);
  if (rc < 0) return nullptr;
  PyObject* args[2] = {a.parser, extra};
  PyObject* out = PyObject_Vectorcall(fn, args, extra != nullptr ? 2 : 1, nullptr);
  if (out == nullptr) {
    if (PyErr_ExceptionMatches(PyExc_Exception)) PyErr_Clear();  // declines: the Python parser raises it again
    return nullptr;
  }
  a.own(out);
  PyObject* now = PyObject_GetAttr(a.parser, s_i);
  if (now == nullptr) return nullptr;
  Py_ssize_t k = PyLong_AsSsize_t(now);
  Py_DECREF(now);
  if (k == -1 && PyErr_Occurred()) return nullptr;
  a.j = k;
  return out;
}

// a type at the current token (borrowed or owned by the attempt), or nullptr: declined (no error) or failed
PyObject* type(Attempt& a) {
  PyObject* t = PyDict_GetItemWithError(cfg.type_cache, a.cur());
  if (t != nullptr) {
    ++a.j;
    return t;
  }
  if (PyErr_Occurred()) return nullptr;
  if (is(a.cur(), "(")) return nullptr;  // a function type: the Python parser
  return call_at(a, cfg.parse_type);
}

// `T, U, ...` into out
bool type_list(Attempt& a, std::vector<PyObject*>& out) {
  while (true) {
    PyObject* t = type(a);
    if (t == nullptr) return false;
    out.push_back(t);
    if (!accept(a, ",")) return true;
  }
}

// Parser.operand_list for names already visible (a forward use, a result group's member: declined)
bool operand_list(Attempt& a, std::vector<PyObject*>& out) {
  if (first(a.cur()) != '%') return true;
  while (true) {
    PyObject* tok = a.cur();
    PyObject* name = a.own(PyUnicode_Substring(tok, 1, PyUnicode_GET_LENGTH(tok)));
    if (name == nullptr) return false;
    PyObject* v = PyDict_GetItemWithError(a.values, name);
    if (v == nullptr) return false;
    out.push_back(v);
    ++a.j;
    if (!(is(a.cur(), ",") && first(a.tok(a.j + 1)) == '%')) return true;
    ++a.j;
  }
}

// Parser.bind_types where each operand already has the type the text gives (else the Python parser decides)
int bind(const std::vector<PyObject*>& values, size_t count, const std::vector<PyObject*>& types) {
  for (size_t k = 0; k < count && k < types.size(); ++k) {
    PyObject* vt = PyObject_GetAttr(values[k], s_type);
    if (vt == nullptr) return FAILED;
    int same = vt == types[k] ? 1 : (vt == Py_None ? 0 : PyObject_RichCompareBool(vt, types[k], Py_EQ));
    Py_DECREF(vt);
    if (same <= 0) return same < 0 ? FAILED : DECLINE;
  }
  return DONE;
}

bool attr_dict(Attempt& a, PyObject* attrs) {
  if (!is(a.cur(), "{")) return true;
  return call_at(a, cfg.parse_attr_dict, attrs) != nullptr;
}

// `{attrs} : T` typing all of `operands` (formats.typed_operands); T or nullptr
PyObject* typed_operands(Attempt& a, PyObject* attrs, const std::vector<PyObject*>& operands, size_t count,
                         int* rc) {
  *rc = DECLINE;
  if (!attr_dict(a, attrs) || !accept(a, ":")) return nullptr;
  PyObject* t = type(a);
  if (t == nullptr) return nullptr;
  std::vector<PyObject*> types(count, t);
  *rc = bind(operands, count, types);
  return *rc == DONE ? t : nullptr;
}

PyObject* call1(PyObject* fn, PyObject* arg) { return PyObject_CallOneArg(fn, arg); }

// an integer literal of an integer type, `7 : i32` (attrs.number_attr: IntAttr(int(tok), type)), owned by the
// attempt with its type in *type_out; nullptr (no error) for anything else: a float or i1 type, a hex or float
// spelling, a type the memo does not hold yet (parse_attr then reads it)
PyObject* int_constant(Attempt& a, PyObject** type_out) {
  Py_ssize_t len;
  const char* p = ascii(a.cur(), &len);
  if (p == nullptr || len == 0 || !is(a.tok(a.j + 1), ":")) return nullptr;
  Py_ssize_t k = (p[0] == '-' || p[0] == '+') ? 1 : 0;
  if (len == k || len - k > 18) return nullptr;
  for (Py_ssize_t q = k; q < len; ++q)
    if (p[q] < '0' || p[q] > '9') return nullptr;
  PyObject* t = PyDict_GetItemWithError(cfg.type_cache, a.tok(a.j + 2));
  if (t == nullptr || Py_TYPE(t) != reinterpret_cast<PyTypeObject*>(cfg.scalar_type)) return nullptr;
  PyObject* name = a.own(PyObject_GetAttr(t, s_name));
  if (name == nullptr) return nullptr;
  Py_ssize_t nlen;
  const char* n = ascii(name, &nlen);
  if (n == nullptr || nlen == 0 || n[0] == 'f' || (nlen >= 2 && (n[0] == 'b' || n[0] == 't') && n[1] == 'f') ||
      (nlen == 2 && n[0] == 'i' && n[1] == '1'))
    return nullptr;  // a float (is_float: f, bf, tf) or i1 (a BoolAttr): the Python code
  PyObject* value = a.own(PyLong_FromString(p, nullptr, 10));
  if (value == nullptr) return nullptr;
  PyObject* attr = a.own(PyObject_CallFunctionObjArgs(cfg.int_attr, value, t, nullptr));
  if (attr == nullptr) return nullptr;
  *type_out = t;
  a.j += 3;
  return attr;
}

// the body of one form after the op name: operands into `operands`, attributes into `attrs`, result types into
// `results`
int form_body(Attempt& a, int form, PyObject* attrs, std::vector<PyObject*>& operands,
              std::vector<PyObject*>& results) {
  int rc = DECLINE;
  PyObject* t;
  switch (form) {
    case SAME:
    case CMP:
      if (form == CMP) {
        if (!keyword(a.cur())) return DECLINE;
        PyObject* e = a.own(call1(cfg.enum_attr, a.cur()));
        if (e == nullptr || PyDict_SetItem(attrs, s_predicate, e) < 0) return FAILED;
        ++a.j;
        if (!accept(a, ",")) return DECLINE;
      }
      if (!operand_list(a, operands)) return PyErr_Occurred() ? FAILED : DECLINE;
      if (!is(a.cur(), ":") && !is(a.cur(), "{")) return DECLINE;  // arith flags: the Python parser
      t = typed_operands(a, attrs, operands, operands.size(), &rc);
      if (t == nullptr) return rc;
      if (form == CMP) {
        t = a.own(call1(cfg.i1_like, t));
        if (t == nullptr) return FAILED;
      }
      results.push_back(t);
      return DONE;
    case CAST:
      if (!operand_list(a, operands)) return PyErr_Occurred() ? FAILED : DECLINE;
      if (!is(a.cur(), ":") && !is(a.cur(), "{")) return DECLINE;
      if (typed_operands(a, attrs, operands, operands.size(), &rc) == nullptr) return rc;
      if (!accept(a, "to") || (t = type(a)) == nullptr) return DECLINE;
      results.push_back(t);
      return DONE;
    case ARROW: {
      if (!operand_list(a, operands)) return PyErr_Occurred() ? FAILED : DECLINE;
      while (is(a.cur(), "{")) {  // tt.expand_dims {axis = 0 : i32}
        if (!attr_dict(a, attrs)) return DECLINE;
      }
      if (!accept(a, ":")) return DECLINE;  // `, name = value`, keywords: the Python parser
      PyObject* src = type(a);
      if (src == nullptr) return DECLINE;
      std::vector<PyObject*> types{src};
      if ((rc = bind(operands, operands.empty() ? 0 : 1, types)) != DONE) return rc;
      if (!accept(a, "->") || (t = type(a)) == nullptr) return DECLINE;
      results.push_back(t);
      return DONE;
    }
    case LOAD:
    case STORE:
      if (!operand_list(a, operands)) return PyErr_Occurred() ? FAILED : DECLINE;
      if (!is(a.cur(), ":") && !is(a.cur(), "{")) return DECLINE;  // enum clauses: the Python parser
      t = typed_operands(a, attrs, operands, operands.empty() ? 0 : 1, &rc);
      if (t == nullptr) return rc;
      if (form == LOAD) {
        t = a.own(call1(cfg.pointee, t));
        if (t == nullptr) return FAILED;
        results.push_back(t);
      }
      return DONE;
    case ADDPTR: {
      if (!operand_list(a, operands)) return PyErr_Occurred() ? FAILED : DECLINE;
      if (!attr_dict(a, attrs) || !accept(a, ":")) return DECLINE;
      std::vector<PyObject*> types;
      if (!type_list(a, types) || types.size() != operands.size()) return DECLINE;
      if ((rc = bind(operands, operands.size(), types)) != DONE) return rc;
      results.push_back(types[0]);
      return DONE;
    }
    case AXIS: {
      if (!keyword(a.cur())) return DECLINE;
      PyObject* e = a.own(call1(cfg.enum_attr, a.cur()));
      if (e == nullptr || PyDict_SetItem(attrs, s_axis, e) < 0) return FAILED;
      ++a.j;
      if (!attr_dict(a, attrs) || !accept(a, ":") || (t = type(a)) == nullptr) return DECLINE;
      results.push_back(t);
      return DONE;
    }
    case TERMINATOR: {
      if (!attr_dict(a, attrs)) return DECLINE;
      if (!operand_list(a, operands)) return PyErr_Occurred() ? FAILED : DECLINE;
      if (operands.empty()) return DONE;
      if (!accept(a, ":")) return DECLINE;
      std::vector<PyObject*> types;
      if (!type_list(a, types) || types.size() != operands.size()) return DECLINE;
      return bind(operands, operands.size(), types);
    }
    case ATTRS_TYPE:
      if (is(a.cur(), "<")) return DECLINE;  // ub.poison <#ub.poison>
      if (!attr_dict(a, attrs) || !accept(a, ":") || (t = type(a)) == nullptr) return DECLINE;
      results.push_back(t);
      return DONE;
    case CONSTANT: {
      if (!attr_dict(a, attrs)) return DECLINE;
      PyObject* int_type = nullptr;
      PyObject* value = int_constant(a, &int_type);
      if (value == nullptr && PyErr_Occurred()) return FAILED;
      if (value != nullptr) {  // `7 : i32`: IntAttr(7, i32), its type the result's
        if (PyDict_SetItemString(attrs, "value", value) < 0) return FAILED;
        results.push_back(int_type);
        return DONE;
      }
      value = call_at(a, cfg.parse_attr);
      if (value == nullptr) return DECLINE;
      if (PyDict_SetItemString(attrs, "value", value) < 0) return FAILED;
      int b = PyObject_IsInstance(value, cfg.bool_attr);
      if (b < 0) return FAILED;
      if (b) {
        t = cfg.i1;
      } else {
        t = a.own(PyObject_GetAttr(value, s_type));
        if (t == nullptr) {
          if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return FAILED;
          PyErr_Clear();
          return DECLINE;
        }
        int ok = PyObject_IsInstance(t, cfg.type_class);
        if (ok <= 0) return ok < 0 ? FAILED : DECLINE;
      }
      results.push_back(t);
      return DONE;
    }
  }
  return DECLINE;
}

PyObject* list_of(const std::vector<PyObject*>& items) {
  PyObject* out = PyList_New(static_cast<Py_ssize_t>(items.size()));
  if (out == nullptr) return nullptr;
  for (size_t k = 0; k < items.size(); ++k) {
    Py_INCREF(items[k]);
    PyList_SET_ITEM(out, static_cast<Py_ssize_t>(k), items[k]);
  }
  return out;
}

PyObject* loc_body(Attempt& a, int depth);

// `loc(...)` at a.j (a.j past it) in the forms loc_body reads; nullptr: declined (a.j unchanged) or failed
PyObject* full_loc(Attempt& a) {
  Py_ssize_t start = a.j;
  if (!accept(a, "loc") || !accept(a, "(")) {
    a.j = start;
    return nullptr;
  }
  PyObject* tree = loc_body(a, 0);
  if (tree == nullptr || !accept(a, ")")) {
    a.j = start;
    return nullptr;
  }
  return tree;
}

// one op at a.j, into block: DONE (a.j past it), DECLINE (nothing changed) or FAILED (an error is set)
int one_op(Attempt& a, PyObject* block) {
  PyObject* result_name = nullptr;
  PyObject* tok = a.cur();
  if (first(tok) == '%') {
    if (!is(a.tok(a.j + 1), "=")) return DECLINE;  // a result group, several results: the Python parser
    result_name = a.own(PyUnicode_Substring(tok, 1, PyUnicode_GET_LENGTH(tok)));
    if (result_name == nullptr) return FAILED;
    a.j += 2;
  }
  PyObject* name = a.cur();
  PyObject* form_obj = PyDict_GetItemWithError(cfg.forms, name);
  if (form_obj == nullptr) return PyErr_Occurred() ? FAILED : DECLINE;
  int form = static_cast<int>(PyLong_AsLong(form_obj));
  ++a.j;
  PyObject* op = a.own(call1(cfg.op_class, name));
  if (op == nullptr) return FAILED;
  PyObject* attrs = a.own(PyObject_GetAttr(op, s_attrs));
  if (attrs == nullptr) return FAILED;
  std::vector<PyObject*> operands, types;
  int rc = form_body(a, form, attrs, operands, types);
  if (rc != DONE) return rc;
  // loc(#alias) here; any other location through the Python primitive
  PyObject* tree = nullptr;
  Py_ssize_t loc_index = a.j;
  PyObject* ltok = a.cur();
  Py_ssize_t llen;
  const char* lp = ascii(ltok, &llen);
  if (lp != nullptr && llen >= 5 && memcmp(lp, "loc(#", 5) == 0) {
    PyObject* alias = a.own(PyUnicode_Substring(ltok, 5, llen - 1));
    if (alias == nullptr) return FAILED;
    tree = a.own(PyTuple_Pack(2, s_alias, alias));
    if (tree == nullptr) return FAILED;
    ++a.j;
  } else if (is(ltok, "loc")) {
    tree = full_loc(a);
    if (tree == nullptr && PyErr_Occurred()) return FAILED;
    if (tree == nullptr) tree = call_at(a, cfg.parse_opt_loc);
    if (tree == nullptr) return PyErr_Occurred() ? FAILED : DECLINE;
  }
  size_t bound = result_name != nullptr ? 1 : 0;
  if (types.size() != bound) return DECLINE;
  PyObject* forward = a.own(PyObject_GetAttr(a.parser, s_forward));
  if (forward == nullptr) return FAILED;
  if (result_name != nullptr) {  // a redefinition, a name used before: the Python parser
    int seen = PyDict_Contains(a.values, result_name);
    if (seen == 0) seen = PyDict_Contains(forward, result_name);
    if (seen != 0) return seen < 0 ? FAILED : DECLINE;
  }
  PyObject* scopes = a.own(PyObject_GetAttr(a.parser, s_scopes));
  PyObject* pending = a.own(PyObject_GetAttr(a.parser, s_pending_locs));
  PyObject* ops = a.own(PyObject_GetAttr(block, s_ops));
  if (scopes == nullptr || pending == nullptr || ops == nullptr) return FAILED;
  // from here on the op is the parser's: what Parser.parse_op does after its format, in its order
  PyObject* operand_objs = a.own(list_of(operands));
  if (operand_objs == nullptr || PyObject_SetAttr(op, s_operands, operand_objs) < 0) return FAILED;
  if (tree != nullptr) {
    PyObject* index = a.own(PyLong_FromSsize_t(loc_index));
    PyObject* entry = index != nullptr ? a.own(PyTuple_Pack(3, op, tree, index)) : nullptr;
    if (entry == nullptr || PyList_Append(pending, entry) < 0) return FAILED;
  }
  PyObject* results = a.own(PyList_New(0));
  if (results == nullptr) return FAILED;
  for (size_t k = 0; k < types.size(); ++k) {
    PyObject* index = a.own(PyLong_FromSize_t(k));
    if (index == nullptr) return FAILED;
    PyObject* args[4] = {types[k], s_empty, op, index};
    PyObject* v = a.own(PyObject_Vectorcall(cfg.value_class, args, 4, nullptr));
    if (v == nullptr || PyList_Append(results, v) < 0) return FAILED;
  }
  if (PyObject_SetAttr(op, s_results, results) < 0) return FAILED;
  if (result_name != nullptr) {  // Parser.define
    PyObject* v = PyList_GET_ITEM(results, 0);
    Py_ssize_t nscopes = PyList_Size(scopes);
    if (nscopes < 1) return FAILED;
    if (PyObject_SetAttr(v, s_name, result_name) < 0 || PyDict_SetItem(a.values, result_name, v) < 0 ||
        PyList_Append(PyList_GET_ITEM(scopes, nscopes - 1), result_name) < 0)
      return FAILED;
  }
  if (PyObject_SetAttr(op, s_parent, block) < 0 || PyList_Append(ops, op) < 0) return FAILED;
  return DONE;
}


// ---- locations: `#name = loc(...)` definitions (locs.parse_loc_body's commonest forms) ---------------------

// a decimal integer token as Parser.integer reads it (`int(tok, 0)`: no leading zero), else nullptr, no error
PyObject* integer(Attempt& a) {
  Py_ssize_t len;
  const char* p = ascii(a.cur(), &len);
  if (p == nullptr || len == 0 || len > 18 || (p[0] == '0' && len > 1)) return nullptr;
  long long v = 0;
  for (Py_ssize_t k = 0; k < len; ++k) {
    if (p[k] < '0' || p[k] > '9') return nullptr;
    v = v * 10 + (p[k] - '0');
  }
  ++a.j;
  return a.own(PyLong_FromLongLong(v));
}

// a `"..."` token without escapes: its text (owned by the attempt), else nullptr
PyObject* plain_string(Attempt& a) {
  Py_ssize_t len;
  const char* p = ascii(a.cur(), &len);
  if (p == nullptr || len < 2 || p[0] != '"' || p[len - 1] != '"' || memchr(p, '\\', len) != nullptr) return nullptr;
  PyObject* text = a.own(PyUnicode_Substring(a.cur(), 1, len - 1));
  if (text != nullptr) ++a.j;
  return text;
}

// the tree of a location body (the tuples locs.parse_loc_body makes), owned by the attempt; nullptr: declined
// (or failed: an error is set)
PyObject* loc_body(Attempt& a, int depth) {
  if (depth > 50) return nullptr;
  PyObject* tok = a.cur();
  if (first(tok) == '#') {
    PyObject* name = a.own(PyUnicode_Substring(tok, 1, PyUnicode_GET_LENGTH(tok)));
    if (name == nullptr) return nullptr;
    ++a.j;
    return a.own(PyTuple_Pack(2, s_alias, name));
  }
  if (is(tok, "unknown")) {
    ++a.j;
    return cfg.unknown_loc;
  }
  if (first(tok) == '"') {
    PyObject* text = plain_string(a);
    if (text == nullptr) return nullptr;
    if (accept(a, ":")) {
      PyObject* line = integer(a);
      if (line == nullptr || !accept(a, ":")) return nullptr;
      PyObject* col = integer(a);
      if (col == nullptr || is(a.cur(), "to")) return nullptr;  // a range: the Python parser
      return a.own(PyTuple_Pack(4, s_file, text, line, col));
    }
    if (accept(a, "(")) {
      PyObject* child = loc_body(a, depth + 1);
      if (child == nullptr || !accept(a, ")")) return nullptr;
      return a.own(PyTuple_Pack(3, s_name, text, child));
    }
    return a.own(PyTuple_Pack(3, s_name, text, Py_None));
  }
  if (is(tok, "callsite")) {
    ++a.j;
    if (!accept(a, "(")) return nullptr;
    PyObject* callee = loc_body(a, depth + 1);
    if (callee == nullptr || !accept(a, "at")) return nullptr;
    PyObject* caller = loc_body(a, depth + 1);
    if (caller == nullptr || !accept(a, ")")) return nullptr;
    return a.own(PyTuple_Pack(3, s_callsite, callee, caller));
  }
  return nullptr;  // fused locations, anything else: the Python parser
}

// `#name = loc(...)` at a.j (Parser._alias_definition for a location): DONE, DECLINE (nothing changed) or FAILED
int loc_alias(Attempt& a, PyObject* loc_aliases, PyObject* attr_aliases) {
  PyObject* tok = a.cur();
  PyObject* name = a.own(PyUnicode_Substring(tok, 1, PyUnicode_GET_LENGTH(tok)));
  if (name == nullptr) return FAILED;
  int seen = PyDict_Contains(loc_aliases, name);
  if (seen == 0) seen = PyDict_Contains(attr_aliases, name);
  if (seen != 0) return seen < 0 ? FAILED : DECLINE;  // a redefinition: the Python parser raises it
  a.j += 2;                                          // the name and `=`
  if (!accept(a, "loc") || !accept(a, "(")) return DECLINE;
  PyObject* tree = loc_body(a, 0);
  if (tree == nullptr) return PyErr_Occurred() ? FAILED : DECLINE;
  if (!accept(a, ")")) return DECLINE;
  return PyDict_SetItem(loc_aliases, name, tree) < 0 ? FAILED : DONE;
}

bool has_char(PyObject* t, Py_UCS4 c) { return PyUnicode_FindChar(t, c, 0, PyUnicode_GET_LENGTH(t), 1) >= 0; }


// ---- locations resolved (locs.LocResolver: frames and to_loc) ----------------------------------------------

// one frame of a call chain (locs.Frame), borrowed from the trees
struct Frame {
  PyObject* file;
  PyObject* line;
  PyObject* col;
  PyObject* name;
};

inline bool kind_is(PyObject* tree, PyObject* kind) {
  PyObject* k = PyTuple_GET_ITEM(tree, 0);
  return k == kind || (PyUnicode_Check(k) && PyUnicode_Compare(k, kind) == 0);
}

inline bool truthy_str(PyObject* s) { return PyUnicode_Check(s) && PyUnicode_GET_LENGTH(s) > 0; }

// locs.frames: false where the Python code would raise or a tree is not what it makes (the caller then leaves
// it all to the Python resolver)
bool frames(PyObject* tree, PyObject* aliases, std::vector<PyObject*>& seen, std::vector<Frame>& out, int depth) {
  if (depth > 200 || !PyTuple_Check(tree) || PyTuple_GET_SIZE(tree) < 1) return false;
  Py_ssize_t n = PyTuple_GET_SIZE(tree);
  if (kind_is(tree, s_alias)) {
    if (n != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(tree, 1))) return false;
    PyObject* name = PyTuple_GET_ITEM(tree, 1);
    for (PyObject* s : seen)
      if (PyUnicode_Compare(s, name) == 0) return false;  // refers to itself: the Python resolver raises
    PyObject* target = PyDict_GetItemWithError(aliases, name);
    if (target == nullptr) return false;  // never defined: the Python resolver raises
    seen.push_back(name);
    bool ok = frames(target, aliases, seen, out, depth + 1);
    seen.pop_back();
    return ok;
  }
  if (kind_is(tree, s_file)) {
    if (n != 4) return false;
    out.push_back({PyTuple_GET_ITEM(tree, 1), PyTuple_GET_ITEM(tree, 2), PyTuple_GET_ITEM(tree, 3), s_empty});
    return true;
  }
  if (kind_is(tree, s_name)) {
    if (n != 3) return false;
    PyObject* name = PyTuple_GET_ITEM(tree, 1);
    size_t start = out.size();
    if (PyTuple_GET_ITEM(tree, 2) != Py_None && !frames(PyTuple_GET_ITEM(tree, 2), aliases, seen, out, depth + 1))
      return false;
    if (out.size() == start)
      out.push_back({s_empty, s_zero, s_zero, name});
    else
      out.back().name = name;
    return true;
  }
  if (kind_is(tree, s_callsite)) {
    return n == 3 && frames(PyTuple_GET_ITEM(tree, 1), aliases, seen, out, depth + 1) &&
           frames(PyTuple_GET_ITEM(tree, 2), aliases, seen, out, depth + 1);
  }
  if (kind_is(tree, s_fused)) {
    if (n != 2 || !PyTuple_Check(PyTuple_GET_ITEM(tree, 1))) return false;
    PyObject* children = PyTuple_GET_ITEM(tree, 1);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(children); ++k) {
      std::vector<Frame> found;
      if (!frames(PyTuple_GET_ITEM(children, k), aliases, seen, found, depth + 1)) return false;
      for (const Frame& f : found) {
        if (truthy_str(f.file)) {
          out.insert(out.end(), found.begin(), found.end());
          return true;
        }
      }
    }
    return true;
  }
  return true;  // unknown: no frame
}

// locs.to_loc: a new Loc, nullptr with no error (declined) or with one (failed)
PyObject* to_loc(PyObject* tree, PyObject* aliases) {
  std::vector<PyObject*> seen;
  std::vector<Frame> chain;
  if (!frames(tree, aliases, seen, chain, 0)) return nullptr;
  const Frame* last_file = nullptr;
  const Frame* last_name = nullptr;
  for (const Frame& f : chain) {
    if (truthy_str(f.file)) last_file = &f;
    if (PyObject_IsTrue(f.name) > 0) last_name = &f;
  }
  if (last_file == nullptr) {
    PyObject* args[4] = {s_empty, s_zero, s_zero, last_name != nullptr ? last_name->name : s_empty};
    return PyObject_Vectorcall(cfg.loc_class, args, 4, nullptr);
  }
  for (const Frame& f : chain) {
    if (!truthy_str(f.file)) continue;
    int same = PyObject_RichCompareBool(f.file, last_file->file, Py_EQ);
    if (same < 0) return nullptr;
    if (same) {
      PyObject* args[4] = {f.file, f.line, f.col, f.name};
      return PyObject_Vectorcall(cfg.loc_class, args, 4, nullptr);
    }
  }
  return nullptr;
}

// resolve_locs(pending, aliases): Parser._resolve_locs where every location resolves (True); False, having
// changed nothing the Python resolver does not set again, where one does not (then the Python code raises)
PyObject* resolve_locs(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || !PyList_Check(args[0]) || !PyDict_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "resolve_locs(pending: list, aliases: dict)");
    return nullptr;
  }
  if (cfg.loc_class == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "_ttirparse.setup() was not called");
    return nullptr;
  }
  PyObject *pending = args[0], *aliases = args[1];
  PyObject* memo = PyDict_New();
  if (memo == nullptr) return nullptr;
  PyObject* out = nullptr;
  Py_ssize_t k = 0;
  for (; k < PyList_GET_SIZE(pending); ++k) {
    PyObject* entry = PyList_GET_ITEM(pending, k);
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3) break;
    PyObject *op = PyTuple_GET_ITEM(entry, 0), *tree = PyTuple_GET_ITEM(entry, 1);
    if (!PyTuple_Check(tree) || PyTuple_GET_SIZE(tree) < 1) break;
    PyObject* loc = nullptr;
    bool alias = kind_is(tree, s_alias) && PyTuple_GET_SIZE(tree) == 2;
    if (alias) {  // LocResolver's memo: one Loc per alias
      loc = PyDict_GetItemWithError(memo, PyTuple_GET_ITEM(tree, 1));
      if (loc == nullptr && PyErr_Occurred()) break;
      Py_XINCREF(loc);
    }
    if (loc == nullptr) {
      loc = to_loc(tree, aliases);
      if (loc == nullptr) break;
      if (alias && PyDict_SetItem(memo, PyTuple_GET_ITEM(tree, 1), loc) < 0) {
        Py_DECREF(loc);
        break;
      }
    }
    int rc = PyObject_SetAttrString(op, "loc", loc);
    Py_DECREF(loc);
    if (rc < 0) break;
  }
  if (!PyErr_Occurred()) out = Py_NewRef(k == PyList_GET_SIZE(pending) ? Py_True : Py_False);
  Py_DECREF(memo);
  return out;
}

bool set_index(PyObject* parser, Py_ssize_t j) {
  PyObject* index = PyLong_FromSsize_t(j);
  if (index == nullptr) return false;
  int rc = PyObject_SetAttr(parser, s_i, index);
  Py_DECREF(index);
  return rc == 0;
}

// ops_into(parser, block): Parser._ops_into
PyObject* ops_into(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "ops_into(parser, block)");
    return nullptr;
  }
  if (cfg.forms == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "_ttirparse.setup() was not called");
    return nullptr;
  }
  PyObject *parser = args[0], *block = args[1];
  PyObject* toks = PyObject_GetAttr(parser, s_toks);
  if (toks == nullptr) return nullptr;
  if (!PyList_CheckExact(toks)) {
    Py_DECREF(toks);
    PyErr_SetString(PyExc_TypeError, "the parser's tokens are not a list");
    return nullptr;
  }
  PyObject* now = PyObject_GetAttr(parser, s_i);
  Py_ssize_t j = now != nullptr ? PyLong_AsSsize_t(now) : -1;
  Py_XDECREF(now);
  if (j == -1 && PyErr_Occurred()) {
    Py_DECREF(toks);
    return nullptr;
  }
  PyObject* out = nullptr;
  while (true) {
    Py_ssize_t n = PyList_GET_SIZE(toks);
    PyObject* tok = j < n ? PyList_GET_ITEM(toks, j) : s_empty;
    int c = first(tok);
    if (is(tok, "}") || c == '^' || PyUnicode_GET_LENGTH(tok) == 0) {
      if (set_index(parser, j)) out = Py_NewRef(Py_None);
      break;
    }
    PyObject* values = PyObject_GetAttr(parser, s_values);
    if (values == nullptr) break;
    int rc;
    {
      Attempt a{parser, toks, n, j, values, {}};
      rc = one_op(a, block);
      if (rc == DONE) j = a.j;
    }
    Py_DECREF(values);
    if (rc == FAILED || PyErr_Occurred()) break;  // (an error a primitive raised that is not an Exception)
    if (rc == DECLINE) {  // the Python parser reads it (and raises what it finds wrong)
      if (!set_index(parser, j)) break;
      PyObject* op = PyObject_CallMethodOneArg(parser, s_parse_op, block);
      if (op == nullptr) break;
      Py_DECREF(op);
      now = PyObject_GetAttr(parser, s_i);
      j = now != nullptr ? PyLong_AsSsize_t(now) : -1;
      Py_XDECREF(now);
      if (j == -1 && PyErr_Occurred()) break;
    }
  }
  Py_DECREF(toks);
  return out;
}


// module_items(parser, top): Parser._module_items, with `#name = loc(...)` definitions read here
PyObject* module_items(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "module_items(parser, top)");
    return nullptr;
  }
  if (cfg.forms == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "_ttirparse.setup() was not called");
    return nullptr;
  }
  PyObject *parser = args[0], *top = args[1];
  PyObject* toks = PyObject_GetAttr(parser, s_toks);
  PyObject* loc_aliases = toks != nullptr ? PyObject_GetAttr(parser, s_loc_aliases) : nullptr;
  PyObject* attr_aliases = loc_aliases != nullptr ? PyObject_GetAttr(parser, s_attr_aliases) : nullptr;
  PyObject* out = nullptr;
  Py_ssize_t j = -1;
  if (attr_aliases != nullptr) {
    if (!PyList_CheckExact(toks) || !PyDict_CheckExact(loc_aliases) || !PyDict_CheckExact(attr_aliases)) {
      PyErr_SetString(PyExc_TypeError, "the parser's tokens or aliases are not a list and dicts");
    } else {
      PyObject* now = PyObject_GetAttr(parser, s_i);
      j = now != nullptr ? PyLong_AsSsize_t(now) : -1;
      Py_XDECREF(now);
    }
  }
  while (j >= 0) {  // (-1: an error is set)
    Py_ssize_t n = PyList_GET_SIZE(toks);
    PyObject* tok = j < n ? PyList_GET_ITEM(toks, j) : s_empty;
    if (PyUnicode_GET_LENGTH(tok) == 0) {
      if (set_index(parser, j)) out = Py_NewRef(Py_None);
      break;
    }
    PyObject* after = j + 1 < n ? PyList_GET_ITEM(toks, j + 1) : s_empty;
    bool alias = first(tok) == '#' && !has_char(tok, '<') && is(after, "=");
    int rc = DECLINE;
    if (alias) {
      Attempt a{parser, toks, n, j, nullptr, {}};
      rc = loc_alias(a, loc_aliases, attr_aliases);
      if (rc == DONE) j = a.j;
    }
    if (rc == FAILED || PyErr_Occurred()) break;
    if (rc == DECLINE) {
      if (!set_index(parser, j)) break;
      PyObject* r = alias ? PyObject_CallMethodNoArgs(parser, s_alias_definition)
                          : PyObject_CallMethodOneArg(parser, s_parse_op, top);
      if (r == nullptr) break;
      Py_DECREF(r);
      PyObject* now = PyObject_GetAttr(parser, s_i);
      j = now != nullptr ? PyLong_AsSsize_t(now) : -1;
      Py_XDECREF(now);
    }
  }
  Py_XDECREF(toks);
  Py_XDECREF(loc_aliases);
  Py_XDECREF(attr_aliases);
  return out;
}


// opt_loc(parser): locs.parse_opt_loc (Parser.opt_loc, which the Python formats call: tt.func's arguments), the
// forms loc_body reads here, any other through the Python function
PyObject* opt_loc(PyObject*, PyObject* parser) {
  if (cfg.parse_opt_loc == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "_ttirparse.setup() was not called");
    return nullptr;
  }
  PyObject* toks = PyObject_GetAttr(parser, s_toks);
  if (toks == nullptr) return nullptr;
  PyObject* now = PyList_CheckExact(toks) ? PyObject_GetAttr(parser, s_i) : nullptr;
  Py_ssize_t j = now != nullptr ? PyLong_AsSsize_t(now) : -1;
  Py_XDECREF(now);
  PyObject* out = nullptr;
  if (j >= 0) {
    Attempt a{parser, toks, PyList_GET_SIZE(toks), j, nullptr, {}};
    PyObject* tok = a.cur();
    Py_ssize_t len;
    const char* p = ascii(tok, &len);
    PyObject* tree = nullptr;
    if (p != nullptr && len >= 5 && memcmp(p, "loc(#", 5) == 0) {
      PyObject* alias = a.own(PyUnicode_Substring(tok, 5, len - 1));
      tree = alias != nullptr ? a.own(PyTuple_Pack(2, s_alias, alias)) : nullptr;
      if (tree != nullptr) ++a.j;
    } else if (is(tok, "loc")) {
      tree = full_loc(a);
    } else if (!PyErr_Occurred()) {
      out = Py_NewRef(Py_None);  // no location
    }
    if (tree != nullptr) {
      if (set_index(parser, a.j)) out = Py_NewRef(tree);
    } else if (out == nullptr && !PyErr_Occurred()) {
      out = PyObject_CallOneArg(cfg.parse_opt_loc, parser);  // the index is still j
    }
  } else if (!PyErr_Occurred()) {
    PyErr_SetString(PyExc_TypeError, "the parser's tokens are not a list");
  }
  Py_DECREF(toks);
  return out;
}

PyObject* item(PyObject* d, const char* key) {
  PyObject* v = PyDict_GetItemString(d, key);
  if (v == nullptr) {
    PyErr_Format(PyExc_KeyError, "_ttirparse.setup: missing %s", key);
    return nullptr;
  }
  return Py_NewRef(v);
}

// setup(config): the classes, memo and primitives the parser module names, and {op name: form name}
PyObject* setup(PyObject*, PyObject* d) {
  if (!PyDict_Check(d)) {
    PyErr_SetString(PyExc_TypeError, "setup(dict)");
    return nullptr;
  }
  Config c;
  PyObject** slots[] = {&c.op_class,   &c.value_class, &c.enum_attr,       &c.type_class,    &c.bool_attr,
                        &c.i1,         &c.type_cache,  &c.parse_type,      &c.parse_attr,    &c.parse_attr_dict,
                        &c.parse_opt_loc, &c.i1_like,  &c.pointee,         &c.unknown_loc,   &c.loc_class, &c.int_attr, &c.scalar_type};
  const char* keys[] = {"Op",         "Value",      "EnumAttr",        "Type",          "BoolAttr",
                        "I1",         "TYPE_CACHE", "parse_type",      "parse_attr",    "parse_attr_dict",
                        "parse_opt_loc", "i1_like", "pointee",          "UNKNOWN_LOC",   "Loc", "IntAttr", "ScalarType"};
  for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); ++k) {
    if ((*slots[k] = item(d, keys[k])) == nullptr) return nullptr;  // (a failed setup leaks what it read)
  }
  if (!PyDict_Check(c.type_cache)) {
    PyErr_SetString(PyExc_TypeError, "_ttirparse.setup: TYPE_CACHE is not a dict");
    return nullptr;
  }
  PyObject* names = PyDict_GetItemString(d, "forms");
  if (names == nullptr || !PyDict_Check(names)) {
    PyErr_SetString(PyExc_TypeError, "_ttirparse.setup: forms must be a dict {op name: form name}");
    return nullptr;
  }
  c.forms = PyDict_New();
  if (c.forms == nullptr) return nullptr;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(names, &pos, &key, &value)) {
    int form = -1;
    for (int k = 0; k < NFORMS; ++k) {
      if (PyUnicode_Check(value) && PyUnicode_CompareWithASCIIString(value, FORM_NAMES[k]) == 0) form = k;
    }
    if (form < 0) {
      PyErr_Format(PyExc_ValueError, "_ttirparse.setup: no compiled form %R", value);
      return nullptr;
    }
    PyObject* num = PyLong_FromLong(form);
    if (num == nullptr || PyDict_SetItem(c.forms, key, num) < 0) return nullptr;
    Py_DECREF(num);
  }
  cfg = c;  // (a second setup leaks the first's references)
  Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"setup", setup, METH_O, "setup(config): what the parser module names (see ttir/parser.py)"},
    {"ops_into", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(ops_into)), METH_FASTCALL,
     "ops_into(parser, block): Parser._ops_into with the commonest op forms read here"},
    {"module_items", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(module_items)), METH_FASTCALL,
     "module_items(parser, top): Parser._module_items with `#name = loc(...)` read here"},
    {"opt_loc", opt_loc, METH_O, "opt_loc(parser): locs.parse_opt_loc with the commonest locations read here"},
    {"resolve_locs", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(resolve_locs)), METH_FASTCALL,
     "resolve_locs(pending, aliases): Parser._resolve_locs; False where the Python resolver must run"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ttirparse", "The TTIR parser's op loop, compiled.", -1, methods};

bool intern(PyObject** out, const char* s) {
  *out = PyUnicode_InternFromString(s);
  return *out != nullptr;
}

}  // namespace

PyMODINIT_FUNC PyInit__ttirparse(void) {
  if (!intern(&s_toks, "toks") || !intern(&s_i, "i") || !intern(&s_values, "values") ||
      !intern(&s_forward, "forward") || !intern(&s_scopes, "scopes") || !intern(&s_pending_locs, "pending_locs") ||
      !intern(&s_parse_op, "parse_op") || !intern(&s_attrs, "attrs") || !intern(&s_operands, "operands") ||
      !intern(&s_results, "results") || !intern(&s_name, "name") || !intern(&s_type, "type") ||
      !intern(&s_parent, "parent") || !intern(&s_ops, "ops") || !intern(&s_alias, "alias") ||
      !intern(&s_empty, "") || !intern(&s_predicate, "predicate") || !intern(&s_axis, "axis") ||
      !intern(&s_file, "file") || !intern(&s_callsite, "callsite") || !intern(&s_loc_aliases, "loc_aliases") ||
      !intern(&s_attr_aliases, "attr_aliases") || !intern(&s_alias_definition, "_alias_definition") ||
      !intern(&s_fused, "fused"))
    return nullptr;
  s_zero = PyLong_FromLong(0);
  if (s_zero == nullptr)
    return nullptr;
  return PyModule_Create(&module);
}
