// triton_plate_backend.isa._isawalk: the common case of three walks over a Program's instructions in C:
// isa/program.py's `verify` (`scan`), isa/asm.py's disassembly (`lines`) and isa/encoding.py's code section
// (`pack_code`).
//
// `scan` checks instructions from `start` on, the way `verify` checks them, and returns the pc of the first one it
// does not pass by itself (len(instrs) when it passed them all): one whose (mnemonic, suffixes) is not yet in
// `heads` (rows `verify` has checked: `program._FAST_HEADS`), whose operands or loc are not plain in-range
// integers of their kind, whose tile is larger than a vector instruction covers, or a matrix instruction (its
// shapes are checked in Python). `verify` checks that one in Python (which raises, or passes it) and scans on, so
// every error is Python's, with its message. A plain CPython module (no torch); `verify` runs all in Python without
// it. tests/test_compiled_verify.py checks both on the corpus' programs and on broken ones.
#include <Python.h>

#include <cstdint>
#include <string>

#include "fields.h"

namespace {

using plate_fields::SlotField;
// the fields the walks read of an instruction (fields.h)
SlotField f_mnemonic("mnemonic"), f_suffixes("suffixes"), f_operands("operands"), f_loc("loc");

// operand kind codes in heads' values (program._KIND_CODES)
enum Code : unsigned char { R = 0, Q = 1, T = 2, LABEL = 3, IMM = 4, STR = 5, RLIST = 6, OTHER = 7 };
enum Unit : long { PLAIN = 0, VECTOR = 1, MATRIX = 2 };

struct Ref {
  PyObject* p;
  explicit Ref(PyObject* o = nullptr) : p(o) {}
  ~Ref() { Py_XDECREF(p); }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  void reset(PyObject* o) {
    Py_XDECREF(p);
    p = o;
  }
};

// table[(mnemonic, suffixes)] within one walk, remembered by the objects' identity (the mnemonic, and the suffix
// tuple's items: `find`): an instruction's mnemonic and suffixes are mostly the same objects from instruction to
// instruction (interned names and dtypes), and the key tuple built and hashed for each instruction was a third of a
// walk. The memo holds what it remembers (a key object freed and its address reused cannot be mistaken for it); the
// table is not changed during a walk. NULL: not in the table (or the lookup's error, set).
struct FormMemo {
  static constexpr size_t N = 64;
  static constexpr Py_ssize_t K = 4;  // a suffix tuple of up to K items is told by its items, a longer one by itself
  PyObject* mnemonics[N] = {};
  PyObject* suffixes[N] = {};
  PyObject* values[N] = {};
  ~FormMemo() {
    for (size_t i = 0; i < N; i++) {
      Py_XDECREF(mnemonics[i]);
      Py_XDECREF(suffixes[i]);
      Py_XDECREF(values[i]);
    }
  }
  // the code makes a fresh suffix tuple for most instructions (`suffixes=(dtype,)`) of the same interned strings:
  // a tuple whose items are the very objects of the kept one's is an equal key (the dict finds the same form), so
  // the way is found by the mnemonic and the items, not the tuple object (which missed the memo every instruction)
  static Py_ssize_t items_of(PyObject* sfx) {
    return PyTuple_CheckExact(sfx) && PyTuple_GET_SIZE(sfx) <= K ? PyTuple_GET_SIZE(sfx) : -1;
  }
  static bool same(PyObject* kept, PyObject* sfx, Py_ssize_t n) {
    if (kept == sfx) return true;
    if (n < 0 || kept == nullptr || !PyTuple_CheckExact(kept) || PyTuple_GET_SIZE(kept) != n) return false;
    for (Py_ssize_t i = 0; i < n; i++) {
      if (PyTuple_GET_ITEM(kept, i) != PyTuple_GET_ITEM(sfx, i)) return false;
    }
    return true;
  }
  PyObject* find(PyObject* table, PyObject* m, PyObject* sfx) {
    const Py_ssize_t n = items_of(sfx);
    size_t h = ((uintptr_t)m >> 4) * 31;
    if (n < 0) {
      h += (uintptr_t)sfx >> 4;
    } else {
      for (Py_ssize_t i = 0; i < n; i++) h = h * 31 + ((uintptr_t)PyTuple_GET_ITEM(sfx, i) >> 4);
    }
    h &= N - 1;
    if (mnemonics[h] == m && same(suffixes[h], sfx, n)) return values[h];
    Ref key(PyTuple_Pack(2, m, sfx));
    if (key.p == nullptr) return nullptr;
    PyObject* got = PyDict_GetItemWithError(table, key.p);
    if (got == nullptr) return nullptr;
    Py_INCREF(m);
    Py_INCREF(sfx);
    Py_INCREF(got);
    Py_XDECREF(mnemonics[h]);
    Py_XDECREF(suffixes[h]);
    Py_XDECREF(values[h]);
    mnemonics[h] = m;
    suffixes[h] = sfx;
    values[h] = got;
    return got;
  }
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
    PyErr_SetString(PyExc_TypeError, "_isawalk.scan: numels must be a list of one count per tile, or None");
    return nullptr;
  }
  const long long nconsts = PyList_GET_SIZE(consts);
  const Py_ssize_t n = PyList_GET_SIZE(instrs);
  FormMemo memo;
  Py_ssize_t pc = start < 0 ? 0 : start;
  for (; pc < n; pc++) {
    PyObject* ins = PyList_GET_ITEM(instrs, pc);
    Ref m(f_mnemonic.get(ins));
    if (m.p == nullptr) return nullptr;
    Ref suffixes(f_suffixes.get(ins));
    if (suffixes.p == nullptr) return nullptr;
    if (!PyTuple_CheckExact(suffixes.p)) break;
    PyObject* head = memo.find(heads, m.p, suffixes.p);  // (kind codes as bytes, unit)
    if (head == nullptr) {
      if (PyErr_Occurred()) return nullptr;
      break;
    }
    if (!PyTuple_Check(head) || PyTuple_GET_SIZE(head) != 2 || !PyBytes_Check(PyTuple_GET_ITEM(head, 0))) {
      PyErr_SetString(PyExc_TypeError, "_isawalk.scan: a head must be (codes, unit)");
      return nullptr;
    }
    const unsigned char* codes = (const unsigned char*)PyBytes_AS_STRING(PyTuple_GET_ITEM(head, 0));
    const Py_ssize_t ncodes = PyBytes_GET_SIZE(PyTuple_GET_ITEM(head, 0));
    const long unit = PyLong_AsLong(PyTuple_GET_ITEM(head, 1));
    if (unit == -1 && PyErr_Occurred()) return nullptr;
    if (unit == MATRIX && bounded) break;
    Ref ops(f_operands.get(ins));
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
    Ref loc(f_loc.get(ins));
    if (loc.p == nullptr) return nullptr;
    long long x;
    if (!index_in(loc.p, nlocs, &x)) break;
  }
  return PyLong_FromSsize_t(pc);
}

// lines(instrs, start, forms, labels, names, consts, imm_texts, format_number, quote, out) -> pc
// isa/asm.py's `_disassemble` loop from `start` on: each instruction's label lines and its line appended to `out`,
// up to the first instruction it does not print by itself (returned; len(instrs) when it printed them all): one
// whose (mnemonic, suffixes) is not in `forms` (asm._LINE_KINDS: key -> (line head, operand kind codes as bytes)),
// whose operands are not a tuple of as many values, or an operand that is not an int of its kind (a register list:
// a tuple of ints). `_disassemble` prints that one in Python and goes on. An immediate's text is
// format_number(consts[v]), kept in `imm_texts` (index -> text) for the other uses in the same program.
PyObject* lines(PyObject*, PyObject* args) {
  PyObject *instrs, *forms, *labels, *names, *consts, *imm_texts, *format_number, *quote, *out;
  Py_ssize_t start;
  if (!PyArg_ParseTuple(args, "O!nO!O!O!O!O!OOO!", &PyList_Type, &instrs, &start, &PyDict_Type, &forms, &PyDict_Type,
                        &labels, &PyList_Type, &names, &PyList_Type, &consts, &PyDict_Type, &imm_texts, &format_number,
                        &quote, &PyList_Type, &out))
    return nullptr;
  static PyObject *s_mnemonic, *s_suffixes, *s_operands, *s_loc;
  if (s_mnemonic == nullptr) {
    s_mnemonic = PyUnicode_InternFromString("mnemonic");
    s_suffixes = PyUnicode_InternFromString("suffixes");
    s_operands = PyUnicode_InternFromString("operands");
    s_loc = PyUnicode_InternFromString("loc");
    if (!s_mnemonic || !s_suffixes || !s_operands || !s_loc) return nullptr;
  }
  const Py_ssize_t n = PyList_GET_SIZE(instrs);
  const Py_ssize_t nnames = PyList_GET_SIZE(names), nconsts = PyList_GET_SIZE(consts);
  std::string line;
  auto exact_index = [](PyObject* v, Py_ssize_t limit, Py_ssize_t* x) -> bool {
    if (!PyLong_CheckExact(v)) return false;
    int overflow = 0;
    long long got = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (got == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      return false;
    }
    if (got < 0 || got >= limit) return false;
    *x = (Py_ssize_t)got;
    return true;
  };
  auto append_str = [&](PyObject* text) -> bool {  // a str's UTF-8 onto the line (false: not a str)
    if (!PyUnicode_Check(text)) return false;
    Py_ssize_t size;
    const char* utf8 = PyUnicode_AsUTF8AndSize(text, &size);
    if (utf8 == nullptr) {
      PyErr_Clear();
      return false;
    }
    line.append(utf8, size);
    return true;
  };
  auto append_int = [&](long long v) {  // "%lld" (snprintf was 60% of this walk's instructions under callgrind)
    char buf[24];
    int k = sizeof buf;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do {
      buf[--k] = char('0' + u % 10);
      u /= 10;
    } while (u);
    if (v < 0) buf[--k] = '-';
    line.append(buf + k, sizeof buf - k);
  };
  FormMemo memo;
  Py_ssize_t pc = start < 0 ? 0 : start;
  for (; pc < n; pc++) {
    PyObject* ins = PyList_GET_ITEM(instrs, pc);
    Ref m(f_mnemonic.get(ins)), suffixes(f_suffixes.get(ins));
    if (m.p == nullptr || suffixes.p == nullptr) return nullptr;
    PyObject* form = memo.find(forms, m.p, suffixes.p);
    if (form == nullptr) {
      if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return nullptr;
        PyErr_Clear();  // unhashable suffixes: Python's
      }
      break;
    }
    if (!PyTuple_Check(form) || PyTuple_GET_SIZE(form) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(form, 0)) ||
        !PyBytes_Check(PyTuple_GET_ITEM(form, 1))) {
      PyErr_SetString(PyExc_TypeError, "_isawalk.lines: a form must be (head, codes)");
      return nullptr;
    }
    const unsigned char* codes = (const unsigned char*)PyBytes_AS_STRING(PyTuple_GET_ITEM(form, 1));
    const Py_ssize_t ncodes = PyBytes_GET_SIZE(PyTuple_GET_ITEM(form, 1));
    Ref ops(f_operands.get(ins));
    if (ops.p == nullptr) return nullptr;
    if (!PyTuple_CheckExact(ops.p) || PyTuple_GET_SIZE(ops.p) != ncodes) break;
    Ref loc(f_loc.get(ins));
    if (loc.p == nullptr) return nullptr;
    if (!PyLong_CheckExact(loc.p)) break;
    // the operands' text (the line is built before anything is appended to out: a stop leaves out as it was)
    line.clear();
    if (!append_str(PyTuple_GET_ITEM(form, 0))) break;
    bool plain = true;
    for (Py_ssize_t j = 0; j < ncodes && plain; j++) {
      line.append(j == 0 ? " " : ", ");
      PyObject* v = PyTuple_GET_ITEM(ops.p, j);
      Py_ssize_t x;
      switch (codes[j]) {
        case R:
        case Q:
          plain = PyLong_CheckExact(v);
          if (plain) {
            long long r = PyLong_AsLongLong(v);
            if (r == -1 && PyErr_Occurred()) {
              PyErr_Clear();
              plain = false;
              break;
            }
            line.push_back(codes[j] == R ? 'r' : 'q');
            append_int(r);
          }
          break;
        case T:
          plain = exact_index(v, nnames, &x) && append_str(PyList_GET_ITEM(names, x));
          break;
        case LABEL: {
          plain = PyLong_CheckExact(v);
          if (!plain) break;
          PyObject* at = PyDict_GetItemWithError(labels, v);  // labels[v][0]
          if (at == nullptr) {
            if (PyErr_Occurred()) return nullptr;
            plain = false;
            break;
          }
          plain = PyList_Check(at) && PyList_GET_SIZE(at) > 0 && append_str(PyList_GET_ITEM(at, 0));
          break;
        }
        case IMM:
        case STR: {
          plain = exact_index(v, nconsts, &x);
          if (!plain) break;
          PyObject* text;
          Ref made;
          if (codes[j] == IMM) {
            text = PyDict_GetItemWithError(imm_texts, v);
            if (text == nullptr) {
              if (PyErr_Occurred()) return nullptr;
              made.reset(PyObject_CallOneArg(format_number, PyList_GET_ITEM(consts, x)));
              if (made.p == nullptr) return nullptr;
              if (PyDict_SetItem(imm_texts, v, made.p) < 0) return nullptr;
              text = made.p;
            }
          } else {
            made.reset(PyObject_CallOneArg(quote, PyList_GET_ITEM(consts, x)));
            if (made.p == nullptr) return nullptr;
            text = made.p;
          }
          plain = append_str(text);
          break;
        }
        case RLIST:
          plain = PyTuple_CheckExact(v);
          line.append("[");
          for (Py_ssize_t q = 0; plain && q < PyTuple_GET_SIZE(v); q++) {
            PyObject* r = PyTuple_GET_ITEM(v, q);
            plain = PyLong_CheckExact(r);
            if (!plain) break;
            long long rr = PyLong_AsLongLong(r);
            if (rr == -1 && PyErr_Occurred()) {
              PyErr_Clear();
              plain = false;
              break;
            }
            line.append(q == 0 ? "r" : ", r");
            append_int(rr);
          }
          line.append("]");
          break;
        default:
          plain = false;
      }
    }
    if (!plain) break;
    if (ncodes == 1 && line.size() == (size_t)PyUnicode_GET_LENGTH(PyTuple_GET_ITEM(form, 0)) + 1 &&
        PyUnicode_IS_ASCII(PyTuple_GET_ITEM(form, 0)))
      line.pop_back();  // an operand printed as "": the head alone, as `f"{head} {ops}" if ops else head`
    long long at = PyLong_AsLongLong(loc.p);
    if (at == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      break;
    }
    if (at != 0) {
      line.append("  @");
      append_int(at);
    }
    // this pc's labels, then its line
    Ref pc_obj(PyLong_FromSsize_t(pc));
    if (pc_obj.p == nullptr) return nullptr;
    PyObject* names_here = PyDict_GetItemWithError(labels, pc_obj.p);
    if (names_here == nullptr && PyErr_Occurred()) return nullptr;
    if (names_here != nullptr) {
      Ref it(PyObject_GetIter(names_here));
      if (it.p == nullptr) return nullptr;
      for (PyObject* name; (name = PyIter_Next(it.p)) != nullptr;) {
        Ref nm(name);
        Ref text(PyUnicode_FromFormat("%S:", nm.p));
        if (text.p == nullptr || PyList_Append(out, text.p) < 0) return nullptr;
      }
      if (PyErr_Occurred()) return nullptr;
    }
    Ref text(PyUnicode_DecodeUTF8(line.data(), line.size(), nullptr));
    if (text.p == nullptr || PyList_Append(out, text.p) < 0) return nullptr;
  }
  return PyLong_FromSsize_t(pc);
}

// pack_code(instrs, forms) -> bytes or None
// isa/encoding.py's `_pack_code`: the code section's payload (a u32 count, then per instruction u16 opcode,
// u16 modifier, u32 loc and a u32 per operand; a register list as a u32 count and a u32 per register),
// little-endian. forms: (mnemonic, suffixes) -> (opcode, modifier, operand kind codes as bytes), filled by
// `_code_form`. None when an instruction's key is not there yet or a value is not an int that fits its field:
// `_pack_code` packs (or reports) those in Python.
PyObject* pack_code(PyObject*, PyObject* args) {
  PyObject *instrs, *forms;
  if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &instrs, &PyDict_Type, &forms)) return nullptr;
  static PyObject *s_mnemonic, *s_suffixes, *s_operands, *s_loc;
  if (s_mnemonic == nullptr) {
    s_mnemonic = PyUnicode_InternFromString("mnemonic");
    s_suffixes = PyUnicode_InternFromString("suffixes");
    s_operands = PyUnicode_InternFromString("operands");
    s_loc = PyUnicode_InternFromString("loc");
    if (!s_mnemonic || !s_suffixes || !s_operands || !s_loc) return nullptr;
  }
  std::string out;
  out.reserve(4 + 24 * (size_t)PyList_GET_SIZE(instrs));  // (most records: 8 bytes and up to 4 operands)
  auto put = [&](uint64_t v, int bytes) {  // little-endian, a value's bytes appended at once (not a byte at a time)
    char b[8];
    for (int k = 0; k < bytes; k++) b[k] = char((v >> (8 * k)) & 0xff);
    out.append(b, bytes);
  };
  auto word = [](PyObject* v, uint64_t limit, uint64_t* x) -> bool {  // an int in [0, limit] (struct's I, H)
    if (!PyLong_Check(v)) return false;
    int overflow = 0;
    long long got = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (got == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      return false;
    }
    if (got < 0 || (uint64_t)got > limit) return false;
    *x = (uint64_t)got;
    return true;
  };
  const Py_ssize_t n = PyList_GET_SIZE(instrs);
  if ((uint64_t)n > 0xffffffffu) Py_RETURN_NONE;
  put(n, 4);
  FormMemo memo;
  for (Py_ssize_t pc = 0; pc < n; pc++) {
    PyObject* ins = PyList_GET_ITEM(instrs, pc);
    Ref m(f_mnemonic.get(ins)), suffixes(f_suffixes.get(ins));
    if (m.p == nullptr || suffixes.p == nullptr) return nullptr;
    PyObject* form = memo.find(forms, m.p, suffixes.p);
    if (form == nullptr) {
      if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return nullptr;
        PyErr_Clear();
      }
      Py_RETURN_NONE;
    }
    if (!PyTuple_Check(form) || PyTuple_GET_SIZE(form) != 3 || !PyBytes_Check(PyTuple_GET_ITEM(form, 2))) {
      PyErr_SetString(PyExc_TypeError, "_isawalk.pack_code: a form must be (opcode, modifier, codes)");
      return nullptr;
    }
    uint64_t opcode, modifier, loc;
    if (!word(PyTuple_GET_ITEM(form, 0), 0xffff, &opcode) || !word(PyTuple_GET_ITEM(form, 1), 0xffff, &modifier))
      Py_RETURN_NONE;
    Ref lo(f_loc.get(ins)), ops(f_operands.get(ins));
    if (lo.p == nullptr || ops.p == nullptr) return nullptr;
    if (!word(lo.p, 0xffffffffu, &loc)) Py_RETURN_NONE;
    const unsigned char* codes = (const unsigned char*)PyBytes_AS_STRING(PyTuple_GET_ITEM(form, 2));
    const Py_ssize_t ncodes = PyBytes_GET_SIZE(PyTuple_GET_ITEM(form, 2));
    // zip(row.operands, ins.operands): as many as the shorter (verify has checked the count)
    Ref seq(PySequence_Fast(ops.p, "operands must be a sequence"));
    if (seq.p == nullptr) return nullptr;
    if (PySequence_Fast_GET_SIZE(seq.p) != ncodes) Py_RETURN_NONE;
    put(opcode, 2);
    put(modifier, 2);
    put(loc, 4);
    for (Py_ssize_t j = 0; j < ncodes; j++) {
      PyObject* v = PySequence_Fast_GET_ITEM(seq.p, j);
      uint64_t x;
      if (codes[j] == RLIST) {
        if (!PyTuple_Check(v)) Py_RETURN_NONE;
        put(PyTuple_GET_SIZE(v), 4);
        for (Py_ssize_t q = 0; q < PyTuple_GET_SIZE(v); q++) {
          if (!word(PyTuple_GET_ITEM(v, q), 0xffffffffu, &x)) Py_RETURN_NONE;
          put(x, 4);
        }
      } else {
        if (!word(v, 0xffffffffu, &x)) Py_RETURN_NONE;
        put(x, 4);
      }
    }
  }
  return PyBytes_FromStringAndSize(out.data(), out.size());
}

PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(instrs, heads, start, nreg, ntok, ntiles, nlabels, consts, nlocs, numels, max_elements): the first pc "
     "from start that verify must check in Python"},
    {"lines", lines, METH_VARARGS,
     "lines(instrs, start, forms, labels, names, consts, imm_texts, format_number, quote, out): the disassembly's "
     "instruction lines from start, up to the first pc it leaves to Python"},
    {"pack_code", pack_code, METH_VARARGS,
     "pack_code(instrs, forms): the code section's payload, or None where Python packs it"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_isawalk", "the common case of verify's, disassembly's and encoding's walks in C", -1,
                      methods};

}  // namespace

PyMODINIT_FUNC PyInit__isawalk(void) { return PyModule_Create(&module); }
