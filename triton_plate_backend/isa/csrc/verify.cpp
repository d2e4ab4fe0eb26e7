// triton_plate_backend.isa._verify: the common case of isa/program.py's `verify` walk in C.
//
// `scan` checks instructions from `start` on, the way `verify` checks them, and returns the pc of the first one it
// does not pass by itself (len(instrs) when it passed them all): one whose (mnemonic, suffixes) is not yet in
// `heads` (rows `verify` has checked: `program._FAST_HEADS`), whose operands or loc are not plain in-range
// integers of their kind, whose tile is larger than a vector instruction covers, or a matrix instruction (its
// shapes are checked in Python). `verify` checks that one in Python (which raises, or passes it) and scans on, so
// every error is Python's, with its message. A plain CPython module (no torch); `verify` runs all in Python without
// it. tests/unit/test_isa_verify_compiled.py checks both on the corpus' programs and on broken ones.
#include <Python.h>

#include <cstdint>

namespace {

// operand kind codes in heads' values (program._KIND_CODES)
enum Code : unsigned char { R = 0, Q = 1, T = 2, LABEL = 3, IMM = 4, STR = 5, RLIST = 6, OTHER = 7 };
enum Unit : long { PLAIN = 0, VECTOR = 1, MATRIX = 2 };

struct Ref {
  PyObject* p;
  explicit Ref(PyObject* o = nullptr) : p(o) {}
  ~Ref() { Py_XDECREF(p); }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
};

// an exact int in [0, limit) (anything else: not passed here)
inline bool index_in(PyObject* v, long long limit, long long* out) {
  if (!PyLong_CheckExact(v)) return false;
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
  if (overflow || (x == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return false;
  }
  if (x < 0 || x >= limit) return false;
  *out = x;
  return true;
}

// scan(instrs, heads, start, nreg, ntok, ntiles, nlabels, consts, nlocs, numels, max_elements) -> pc
// heads: (mnemonic, suffixes) -> (operand kind codes as bytes, unit); numels: each tile's element count (None: no
// machine, so no vector bound and no matrix check); max_elements: the vector bound
PyObject* scan(PyObject*, PyObject* args) {
  PyObject *instrs, *heads, *consts, *numels;
  Py_ssize_t start;
  long long nreg, ntok, ntiles, nlabels, nlocs, max_elements;
  if (!PyArg_ParseTuple(args, "O!O!nLLLLO!LOL", &PyList_Type, &instrs, &PyDict_Type, &heads, &start, &nreg, &ntok,
                        &ntiles, &nlabels, &PyList_Type, &consts, &nlocs, &numels, &max_elements))
    return nullptr;
  static PyObject *s_mnemonic, *s_suffixes, *s_operands, *s_loc;
  if (s_mnemonic == nullptr) {
    s_mnemonic = PyUnicode_InternFromString("mnemonic");
    s_suffixes = PyUnicode_InternFromString("suffixes");
    s_operands = PyUnicode_InternFromString("operands");
    s_loc = PyUnicode_InternFromString("loc");
    if (!s_mnemonic || !s_suffixes || !s_operands || !s_loc) return nullptr;
  }
  const bool bounded = numels != Py_None;
  if (bounded && (!PyList_Check(numels) || PyList_GET_SIZE(numels) < ntiles)) {
    PyErr_SetString(PyExc_TypeError, "_verify.scan: numels must be a list of one count per tile, or None");
    return nullptr;
  }
  const long long nconsts = PyList_GET_SIZE(consts);
  const Py_ssize_t n = PyList_GET_SIZE(instrs);
  Py_ssize_t pc = start < 0 ? 0 : start;
  for (; pc < n; pc++) {
    PyObject* ins = PyList_GET_ITEM(instrs, pc);
    Ref m(PyObject_GetAttr(ins, s_mnemonic));
    if (m.p == nullptr) return nullptr;
    Ref suffixes(PyObject_GetAttr(ins, s_suffixes));
    if (suffixes.p == nullptr) return nullptr;
    if (!PyTuple_CheckExact(suffixes.p)) break;
    Ref key(PyTuple_Pack(2, m.p, suffixes.p));
    if (key.p == nullptr) return nullptr;
    PyObject* head = PyDict_GetItemWithError(heads, key.p);  // (kind codes as bytes, unit)
    if (head == nullptr) {
      if (PyErr_Occurred()) return nullptr;
      break;
    }
    if (!PyTuple_Check(head) || PyTuple_GET_SIZE(head) != 2 || !PyBytes_Check(PyTuple_GET_ITEM(head, 0))) {
      PyErr_SetString(PyExc_TypeError, "_verify.scan: a head must be (codes, unit)");
      return nullptr;
    }
    const unsigned char* codes = (const unsigned char*)PyBytes_AS_STRING(PyTuple_GET_ITEM(head, 0));
    const Py_ssize_t ncodes = PyBytes_GET_SIZE(PyTuple_GET_ITEM(head, 0));
    const long unit = PyLong_AsLong(PyTuple_GET_ITEM(head, 1));
    if (unit == -1 && PyErr_Occurred()) return nullptr;
    if (unit == MATRIX && bounded) break;
    Ref ops(PyObject_GetAttr(ins, s_operands));
    if (ops.p == nullptr) return nullptr;
    if (!PyTuple_Check(ops.p) || PyTuple_GET_SIZE(ops.p) != ncodes) break;
    bool plain = true;
    for (Py_ssize_t j = 0; j < ncodes && plain; j++) {
      PyObject* v = PyTuple_GET_ITEM(ops.p, j);
      long long x;
      switch (codes[j]) {
        case R:
          plain = index_in(v, nreg, &x);
          break;
        case Q:
          plain = index_in(v, ntok, &x);
          break;
        case T:
          plain = index_in(v, ntiles, &x);
          if (plain && unit == VECTOR && bounded) {  // _check_bounds: at most max_elements elements
            long long numel;
            plain = index_in(PyList_GET_ITEM(numels, x), max_elements + 1, &numel);
          }
          break;
        case LABEL:
          plain = index_in(v, nlabels, &x);
          break;
        case IMM:
          plain = index_in(v, nconsts, &x) && !PyUnicode_Check(PyList_GET_ITEM(consts, x));
          break;
        case STR:
          plain = index_in(v, nconsts, &x) && PyUnicode_Check(PyList_GET_ITEM(consts, x));
          break;
        case RLIST:
          plain = PyTuple_CheckExact(v);
          for (Py_ssize_t q = 0; plain && q < PyTuple_GET_SIZE(v); q++)
            plain = index_in(PyTuple_GET_ITEM(v, q), nreg, &x);
          break;
        default:
          plain = false;
      }
    }
    if (!plain) break;
    Ref loc(PyObject_GetAttr(ins, s_loc));
    if (loc.p == nullptr) return nullptr;
    long long x;
    if (!index_in(loc.p, nlocs, &x)) break;
  }
  return PyLong_FromSsize_t(pc);
}

PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(instrs, heads, start, nreg, ntok, ntiles, nlabels, consts, nlocs, numels, max_elements): the first pc "
     "from start that verify must check in Python"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_verify", "the common case of isa.program.verify's walk in C", -1,
                      methods};

}  // namespace

PyMODINIT_FUNC PyInit__verify(void) { return PyModule_Create(&module); }
