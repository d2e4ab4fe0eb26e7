// triton_plate_backend.passes._codewalk: walks over the emitted pseudo-instructions in C: regalloc's liveness and
// linear scan (passes/regalloc.py, `live_intervals` and `allocate`: the same walks, on bit sets and index arrays
// instead of Python sets and dicts), scalar_cse (passes/scalar_cse.py, `run`: the same walk and keys), licm
// (passes/licm.py, `run`) and finalize's operand mapping (passes/finalize.py, `_map_code`).
//
// A plain CPython module (no torch). regalloc.py and scalar_cse.py keep their functions in Python as the
// reference, used when this module is not built; tests/test_compiled_codewalk.py checks that both give equal
// results (dicts in the same order, the same code) on every code list the corpus' compiles finalize. What the
// Python code reads of the objects it reads here too: a pseudo-instruction's mnemonic, suffixes, operands, loc and
// extra_uses, a View's buffer, an Imm's value, a Label's hash and equality (the label dict is a Python dict), a
// resource's identity (its hash) and, for `allocate`, its id.
#include <Python.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../../ir/csrc/ptr_table.h"
#include "../../isa/csrc/fields.h"

namespace {

using plate_fields::SlotField;
// the attributes the walks read of the instructions and their operands (fields.h)
SlotField f_mnemonic("mnemonic"), f_operands("operands"), f_suffixes("suffixes"), f_loc("loc"),
    f_extra_uses("extra_uses"), f_buffer("buffer"), f_id("id"), f_value("value");

// what a mnemonic means to the walk (one dict lookup per instruction after the first sight)
enum Kind : long { OTHER = 0, LABEL = 1, DEF = 2, USE = 3, BRANCH = 4, END = 5 };  // END: jmp, halt (no fall-through)

long kind_of(PyObject* m) {
  const char* s = PyUnicode_AsUTF8(m);
  if (s == nullptr) return -1;
  if (!strcmp(s, ".label")) return LABEL;
  if (!strcmp(s, ".def")) return DEF;
  if (!strcmp(s, ".use")) return USE;
  if (!strcmp(s, "jmp") || !strcmp(s, "halt")) return END;
  if (!strcmp(s, "bz") || !strcmp(s, "bnz") || !strcmp(s, "loop")) return BRANCH;
  return OTHER;
}

// Owned references released at scope exit.
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

// An object whose hash and equality are object's own (its identity: a VReg, Token, Buffer): a dict finds it by
// identity alone, as a table of pointers does
bool by_identity(PyObject* o) {
  PyTypeObject* t = Py_TYPE(o);
  return t->tp_hash == PyBaseObject_Type.tp_hash && t->tp_richcompare == PyBaseObject_Type.tp_richcompare;
}

// pointer -> number, -1: none yet (the walks' register numbering without a dict's hashing and int objects); the
// keys are borrowed: the code being walked holds them
using PtrMap = plate_ptr_table::PtrTable<Py_ssize_t, -1>;

// object -> slot (0, 1, ... in first-seen order): what by_identity holds by its pointer, anything else by a dict (its
// own hash and equality), so a walk keeps what a Python dict keyed by the objects would keep in arrays by slot
struct Keys {
  PtrMap ptr;
  Ref dict;
  Py_ssize_t n = 0;
  explicit Keys(size_t expected) : ptr(expected), dict(PyDict_New()) {}
  // k's slot, made on first sight when `make`; -1: none (not `make`); -2: an error (set)
  Py_ssize_t slot(PyObject* k, bool make) {
    if (by_identity(k)) {
      if (!make) return ptr.find(k);
      Py_ssize_t& s = ptr.at(k);
      if (s < 0) s = n++;
      return s;
    }
    if (dict.p == nullptr) return -2;
    PyObject* got = PyDict_GetItemWithError(dict.p, k);
    if (got != nullptr) return PyLong_AsSsize_t(got);
    if (PyErr_Occurred()) return -2;
    if (!make) return -1;
    Ref num(PyLong_FromSsize_t(n));
    if (num.p == nullptr || PyDict_SetItem(dict.p, k, num.p) < 0) return -2;
    return n++;
  }
};

struct Walk {
  PyObject* index;      // resource -> its number (first-seen order), a dict (of those not by_identity)
  PyObject* resources;  // the resources in that order, a list
  std::vector<int64_t> lo, hi;
  PtrMap ptr{64};  // the by_identity resources' numbers (registers, tokens, buffers: all of them in practice)

  // the number of a resource, numbering it on first sight (-1 on error)
  Py_ssize_t number(PyObject* r) {
    if (by_identity(r)) {
      Py_ssize_t& k = ptr.at(r);
      if (k >= 0) return k;
      Py_ssize_t n = PyList_GET_SIZE(resources);
      if (PyList_Append(resources, r) < 0) return -1;
      lo.push_back(-1);
      hi.push_back(-1);
      return k = n;
    }
    PyObject* got = PyDict_GetItemWithError(index, r);
    if (got != nullptr) return PyLong_AsSsize_t(got);
    if (PyErr_Occurred()) return -1;
    Py_ssize_t n = PyList_GET_SIZE(resources);
    Ref num(PyLong_FromSsize_t(n));
    if (num.p == nullptr || PyDict_SetItem(index, r, num.p) < 0 || PyList_Append(resources, r) < 0) return -1;
    lo.push_back(-1);
    hi.push_back(-1);
    return n;
  }
};

// live_intervals(code, defs, defs_fn, VReg, Token, View, Buffer, Label) -> {resource: (lo, hi)}
// defs: regalloc._DEFS (mnemonic -> per operand: defined?), defs_fn: regalloc._defs (fills it).
PyObject* live_intervals(PyObject*, PyObject* args) {
  PyObject *code, *defs, *defs_fn, *vreg_t, *token_t, *view_t, *buffer_t, *label_t;
  if (!PyArg_ParseTuple(args, "O!O!OOOOOO", &PyList_Type, &code, &PyDict_Type, &defs, &defs_fn, &vreg_t, &token_t,
                        &view_t, &buffer_t, &label_t))
    return nullptr;
  static PyObject *s_mnemonic, *s_operands, *s_extra_uses, *s_buffer;
  if (s_mnemonic == nullptr) {
    s_mnemonic = PyUnicode_InternFromString("mnemonic");
    s_operands = PyUnicode_InternFromString("operands");
    s_extra_uses = PyUnicode_InternFromString("extra_uses");
    s_buffer = PyUnicode_InternFromString("buffer");
    if (!s_mnemonic || !s_operands || !s_extra_uses || !s_buffer) return nullptr;
  }
  const Py_ssize_t n = PyList_GET_SIZE(code);
  Ref kinds(PyDict_New()), index(PyDict_New()), resources(PyList_New(0)), label_at(PyDict_New());
  if (!kinds.p || !index.p || !resources.p || !label_at.p) return nullptr;
  Walk w{index.p, resources.p, {}, {}};

  // per instruction: its kind and its label operand (for the successors); per block: start, end
  std::vector<long> kind(n);
  std::vector<PyObject*> operands(n, nullptr);  // each instruction's operands tuple (owned references)
  std::vector<Py_ssize_t> starts, ends;
  // per block, the resources read before any write (gen) and written (kill), as lists of numbers; the sets are
  // built once every resource is numbered
  std::vector<std::vector<Py_ssize_t>> gen_list, kill_list;
  std::vector<Py_ssize_t> uses, kills;  // this instruction's, as numbers
  std::vector<char> kill_is_buf;
  std::vector<Py_ssize_t> in_kill_stamp;  // resource -> the last block that wrote it + 1 (the per-block k set)
  std::vector<Py_ssize_t> in_gen_stamp;

  auto release = [&]() {
    for (PyObject* o : operands) Py_XDECREF(o);
    operands.clear();
  };
  auto fail = [&]() -> PyObject* {
    release();
    return nullptr;
  };
  auto add_use = [&](PyObject* r) -> bool {
    Py_ssize_t i = w.number(r);
    if (i < 0) return false;
    uses.push_back(i);
    return true;
  };
  auto add_kill = [&](PyObject* r) -> bool {
    Py_ssize_t i = w.number(r);
    if (i < 0) return false;
    kills.push_back(i);
    kill_is_buf.push_back(Py_TYPE(r) == (PyTypeObject*)buffer_t);
    return true;
  };

  bool after_branch = true;  // code[0] starts a block
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* inst = PyList_GET_ITEM(code, i);
    Ref m(f_mnemonic.get(inst));
    if (m.p == nullptr) return fail();
    PyObject* k = PyDict_GetItemWithError(kinds.p, m.p);
    long kd;
    if (k != nullptr) {
      kd = PyLong_AsLong(k);
    } else {
      if (PyErr_Occurred()) return fail();
      kd = kind_of(m.p);
      if (kd < 0) return fail();
      Ref kk(PyLong_FromLong(kd));
      if (kk.p == nullptr || PyDict_SetItem(kinds.p, m.p, kk.p) < 0) return fail();
    }
    kind[i] = kd;
    PyObject* got = f_operands.get(inst);
    if (got == nullptr) return fail();
    if (!PyTuple_Check(got)) {  // operands given as another sequence: the walk below indexes a tuple
      Py_SETREF(got, PySequence_Tuple(got));
      if (got == nullptr) return fail();
    }
    operands[i] = got;
    const Py_ssize_t nops = PyTuple_GET_SIZE(got);
    if (kd == LABEL || after_branch) {
      if (i > 0) ends.push_back(i - 1);
      starts.push_back(i);
      gen_list.emplace_back();
      kill_list.emplace_back();
    }
    after_branch = kd == END || kd == BRANCH;
    uses.clear();
    kills.clear();
    kill_is_buf.clear();
    if (kd == LABEL) {
      if (nops < 1) {
        PyErr_SetString(PyExc_IndexError, "tuple index out of range");
        return fail();
      }
      Ref at(PyLong_FromSsize_t(i));
      if (at.p == nullptr || PyDict_SetItem(label_at.p, PyTuple_GET_ITEM(got, 0), at.p) < 0) return fail();
    } else if (kd == DEF) {
      if (nops < 1) {
        PyErr_SetString(PyExc_IndexError, "tuple index out of range");
        return fail();
      }
      if (!add_kill(PyTuple_GET_ITEM(got, 0))) return fail();
    } else if (kd == USE) {
      for (Py_ssize_t j = 0; j < nops; j++)
        if (!add_use(PyTuple_GET_ITEM(got, j))) return fail();
    } else {
      Ref extra(f_extra_uses.get(inst));
      if (extra.p == nullptr) return fail();
      Ref extra_seq(PySequence_Fast(extra.p, "extra_uses must be a sequence"));
      if (extra_seq.p == nullptr) return fail();
      for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(extra_seq.p); j++)
        if (!add_use(PySequence_Fast_GET_ITEM(extra_seq.p, j))) return fail();
      PyObject* roles = PyDict_GetItemWithError(defs, m.p);  // borrowed: _DEFS keeps it
      Ref made;
      if (roles == nullptr || PyObject_Not(roles) == 1) {  // `_DEFS.get(m) or _defs(m)`
        if (PyErr_Occurred()) return fail();
        made.reset(PyObject_CallOneArg(defs_fn, m.p));
        if (made.p == nullptr) return fail();
        roles = made.p;
      }
      Ref roles_seq(PySequence_Fast(roles, "roles must be a sequence"));
      if (roles_seq.p == nullptr) return fail();
      const Py_ssize_t nr = std::min(PySequence_Fast_GET_SIZE(roles_seq.p), nops);
      for (Py_ssize_t j = 0; j < nr; j++) {
        PyObject* v = PyTuple_GET_ITEM(got, j);
        PyObject* t = (PyObject*)Py_TYPE(v);
        if (t == vreg_t || t == token_t) {
          int is_def = PyObject_IsTrue(PySequence_Fast_GET_ITEM(roles_seq.p, j));
          if (is_def < 0) return fail();
          if (!(is_def ? add_kill(v) : add_use(v))) return fail();
        } else if (t == view_t) {
          Ref b(f_buffer.get(v));
          if (b.p == nullptr || !add_use(b.p)) return fail();
        } else if (t == (PyObject*)&PyTuple_Type) {
          for (Py_ssize_t q = 0; q < PyTuple_GET_SIZE(v); q++)
            if (!add_use(PyTuple_GET_ITEM(v, q))) return fail();
        }
      }
    }
    // the points: an instruction reads (2i) before it writes (2i + 1; a buffer at 2i)
    const int64_t p = 2 * i;
    const size_t blk = starts.size() - 1;
    in_kill_stamp.resize(w.lo.size(), 0);
    in_gen_stamp.resize(w.lo.size(), 0);
    for (Py_ssize_t r : uses) {
      if (w.lo[r] < 0) w.lo[r] = p;
      w.hi[r] = p;
      if (in_kill_stamp[r] != (Py_ssize_t)blk + 1 && in_gen_stamp[r] != (Py_ssize_t)blk + 1) {
        in_gen_stamp[r] = blk + 1;
        gen_list[blk].push_back(r);
      }
    }
    for (size_t j = 0; j < kills.size(); j++) {
      Py_ssize_t r = kills[j];
      int64_t q = kill_is_buf[j] ? p : p + 1;
      if (w.lo[r] < 0) w.lo[r] = q;
      w.hi[r] = q;
      if (in_kill_stamp[r] != (Py_ssize_t)blk + 1) {
        in_kill_stamp[r] = blk + 1;
        kill_list[blk].push_back(r);
      }
    }
  }
  if (n > 0) ends.push_back(n - 1);
  const size_t nb = starts.size();
  const Py_ssize_t nres = PyList_GET_SIZE(resources.p);
  const size_t words = (nres + 63) / 64;

  // successors: the branch target's block, and the next block unless the code ends with jmp or halt
  std::vector<Py_ssize_t> block_at(n + 1, -1);
  for (size_t b = 0; b < nb; b++) block_at[starts[b]] = b;
  std::vector<std::vector<size_t>> succs(nb);
  for (size_t b = 0; b < nb; b++) {
    Py_ssize_t e = ends[b];
    PyObject* target = nullptr;  // the first Label among the block's last instruction's operands
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(operands[e]) && target == nullptr; j++) {
      PyObject* v = PyTuple_GET_ITEM(operands[e], j);
      int is = PyObject_IsInstance(v, label_t);
      if (is < 0) return fail();
      if (is) target = v;
    }
    if (target != nullptr) {
      PyObject* at = PyDict_GetItemWithError(label_at.p, target);
      if (at == nullptr) {
        if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, target);
        return fail();
      }
      Py_ssize_t li = PyLong_AsSsize_t(at);
      if (li < n) succs[b].push_back(block_at[li]);
    }
    if (kind[e] != END && b + 1 < nb) succs[b].push_back(b + 1);
  }
  release();

  // gen and kill - gen as bit sets, then the backward dataflow to its fixed point
  std::vector<uint64_t> gen(nb * words, 0), killed(nb * words, 0), live_in(nb * words, 0), live_out(nb * words, 0);
  for (size_t b = 0; b < nb; b++) {
    uint64_t* g = &gen[b * words];
    for (Py_ssize_t r : gen_list[b]) g[r >> 6] |= uint64_t(1) << (r & 63);
    uint64_t* k = &killed[b * words];
    for (Py_ssize_t r : kill_list[b]) k[r >> 6] |= uint64_t(1) << (r & 63);
    for (size_t q = 0; q < words; q++) k[q] &= ~g[q];
  }
  std::vector<uint64_t> out(words), inn(words);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = nb; b-- > 0;) {
      std::fill(out.begin(), out.end(), 0);
      for (size_t s : succs[b])
        for (size_t q = 0; q < words; q++) out[q] |= live_in[s * words + q];
      for (size_t q = 0; q < words; q++) inn[q] = gen[b * words + q] | (out[q] & ~killed[b * words + q]);
      if (memcmp(out.data(), &live_out[b * words], words * 8) || memcmp(inn.data(), &live_in[b * words], words * 8)) {
        memcpy(&live_out[b * words], out.data(), words * 8);
        memcpy(&live_in[b * words], inn.data(), words * 8);
        changed = true;
      }
    }
  }
  // each resource's hull takes in the end of every block it is live out of and the start of every block it is
  // live into
  for (size_t b = 0; b < nb; b++) {
    const int64_t pe = 2 * ends[b] + 2, ps = 2 * starts[b];
    for (size_t q = 0; q < words; q++) {
      for (uint64_t bits = live_out[b * words + q]; bits; bits &= bits - 1) {
        Py_ssize_t r = q * 64 + __builtin_ctzll(bits);
        w.lo[r] = std::min(w.lo[r], pe);
        w.hi[r] = std::max(w.hi[r], pe);
      }
      for (uint64_t bits = live_in[b * words + q]; bits; bits &= bits - 1) {
        Py_ssize_t r = q * 64 + __builtin_ctzll(bits);
        w.lo[r] = std::min(w.lo[r], ps);
        w.hi[r] = std::max(w.hi[r], ps);
      }
    }
  }
  PyObject* result = PyDict_New();
  if (result == nullptr) return nullptr;
  for (Py_ssize_t r = 0; r < nres; r++) {
    Ref iv(Py_BuildValue("(LL)", (long long)w.lo[r], (long long)w.hi[r]));
    if (iv.p == nullptr || PyDict_SetItem(result, PyList_GET_ITEM(resources.p, r), iv.p) < 0) {
      Py_DECREF(result);
      return nullptr;
    }
  }
  return result;
}

// allocate(intervals, kind, count) -> {resource: physical index}, or None when more than count are live at once.
// The linear scan of regalloc.allocate: intervals of `kind` in (lo, id) order; the lowest free index first; the
// intervals that end first (then the lower index) leave first.
PyObject* allocate(PyObject*, PyObject* args) {
  PyObject *intervals, *kind;
  Py_ssize_t count;
  if (!PyArg_ParseTuple(args, "O!On", &PyDict_Type, &intervals, &kind, &count)) return nullptr;
  static PyObject* s_id;
  if (s_id == nullptr && (s_id = PyUnicode_InternFromString("id")) == nullptr) return nullptr;
  struct Item {
    long long lo, hi, id;
    PyObject* r;  // borrowed from the dict
  };
  std::vector<Item> items;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(intervals, &pos, &key, &value)) {
    int is = (PyObject*)Py_TYPE(key) == kind ? 1 : PyObject_IsInstance(key, kind);  // (its exact class: isinstance)
    if (is < 0) return nullptr;
    if (!is) continue;
    long long lo, hi;
    PyObject *a, *b;
    if (PyTuple_CheckExact(value) && PyTuple_GET_SIZE(value) == 2 && PyLong_CheckExact(a = PyTuple_GET_ITEM(value, 0)) &&
        PyLong_CheckExact(b = PyTuple_GET_ITEM(value, 1))) {  // (lo, hi) as the "LL" below reads it
      lo = PyLong_AsLongLong(a);
      hi = lo == -1 && PyErr_Occurred() ? -1 : PyLong_AsLongLong(b);
      if (hi == -1 && PyErr_Occurred()) return nullptr;
    } else if (!PyArg_ParseTuple(value, "LL", &lo, &hi)) {
      return nullptr;
    }
    Ref id(f_id.get(key));
    if (id.p == nullptr) return nullptr;
    long long i = PyLong_AsLongLong(id.p);
    if (i == -1 && PyErr_Occurred()) return nullptr;
    items.push_back({lo, hi, i, key});
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.lo < b.lo || (a.lo == b.lo && a.id < b.id); });
  std::vector<Py_ssize_t> free_;  // a min-heap of indices
  for (Py_ssize_t i = 0; i < count; i++) free_.push_back(i);
  std::vector<std::pair<long long, Py_ssize_t>> active;  // a min-heap of (hi, index)
  auto later = [](const auto& a, const auto& b) { return a > b; };
  PyObject* result = PyDict_New();
  if (result == nullptr) return nullptr;
  for (const Item& it : items) {
    while (!active.empty() && active.front().first < it.lo) {
      std::pop_heap(active.begin(), active.end(), later);
      free_.push_back(active.back().second);
      active.pop_back();
      std::push_heap(free_.begin(), free_.end(), later);
    }
    if (free_.empty()) {
      Py_DECREF(result);
      Py_RETURN_NONE;
    }
    std::pop_heap(free_.begin(), free_.end(), later);
    Py_ssize_t phys = free_.back();
    free_.pop_back();
    Ref ph(PyLong_FromSsize_t(phys));
    if (ph.p == nullptr || PyDict_SetItem(result, it.r, ph.p) < 0) {
      Py_DECREF(result);
      return nullptr;
    }
    active.emplace_back(it.hi, phys);
    std::push_heap(active.begin(), active.end(), later);
  }
  return result;
}

// scalar_cse's value-number keys as bytes (the compact form of the Python walk's tuples): an instruction's key is
// 'K', its mnemonic, its suffixes and its sources, a copy's 'M' and its one source; a source is a tag ('r' a value
// number, 'i' an int, 'f' a float's bytes) and 8 bytes. Two keys are equal exactly when the tuples are (the same
// strings, numbers and bytes in the same places), so the holder table finds what the Python dict finds; a key
// that does not encode (an operand other than a register or an Imm of an exact int within 64 bits, a float or a
// bool, a suffix that is not a str) sends the whole walk back to the tuples.
struct Src {
  unsigned char tag;
  uint64_t bits;
  bool operator<(const Src& o) const { return tag != o.tag ? tag < o.tag : bits < o.bits; }
};

// key bytes -> the register that holds the value (borrowed: the code holds it); emptied at each block's start
struct Holder {
  struct Entry {
    uint64_t hash;
    uint32_t off, len;
    PyObject* value;  // nullptr: a free slot
  };
  std::vector<Entry> slots = std::vector<Entry>(64, Entry{0, 0, 0, nullptr});
  std::vector<uint32_t> used;  // the slots taken, to free them at a clear
  std::string arena;           // the keys' bytes

  static uint64_t hash(const std::string& k) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ k.size();
    size_t i = 0;
    for (; i + 8 <= k.size(); i += 8) {
      uint64_t w;
      memcpy(&w, k.data() + i, 8);
      h = (h ^ w) * 0xff51afd7ed558ccdull;
      h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, k.data() + i, k.size() - i);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
  }
  // the slot of key k: its entry, or the free one where it goes
  Entry& find(const std::string& k, uint64_t h) {
    size_t mask = slots.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Entry& e = slots[i];
      if (e.value == nullptr) return e;
      if (e.hash == h && e.len == k.size() && memcmp(arena.data() + e.off, k.data(), k.size()) == 0) return e;
    }
  }
  PyObject* get(const std::string& k) { return find(k, hash(k)).value; }
  void set(const std::string& k, PyObject* v) {  // k is not in the table
    if (2 * (used.size() + 1) > slots.size()) grow();
    uint64_t h = hash(k);
    Entry& e = find(k, h);
    e = Entry{h, (uint32_t)arena.size(), (uint32_t)k.size(), v};
    arena += k;
    used.push_back((uint32_t)(&e - slots.data()));
  }
  void clear() {
    for (uint32_t i : used) slots[i].value = nullptr;
    used.clear();
    arena.clear();
  }
  void grow() {
    std::vector<Entry> old;
    old.swap(slots);
    slots.assign(old.size() * 2, Entry{0, 0, 0, nullptr});
    used.clear();
    size_t mask = slots.size() - 1;
    for (auto& e : old) {
      if (e.value == nullptr) continue;
      size_t i = e.hash & mask;
      while (slots[i].value != nullptr) i = (i + 1) & mask;
      slots[i] = e;
      used.push_back((uint32_t)i);
    }
  }
};

// a str's length and UTF-8 bytes appended to a key; false: not an exact str (the key does not encode), or an error
bool put_text(std::string& k, PyObject* s) {
  if (!PyUnicode_CheckExact(s)) return false;
  Py_ssize_t len;
  const char* u = PyUnicode_AsUTF8AndSize(s, &len);
  if (u == nullptr) {
    PyErr_Clear();  // (a lone surrogate): the tuple walk meets it as Python does
    return false;
  }
  uint32_t n = (uint32_t)len;
  k.append((const char*)&n, 4);
  k.append(u, len);
  return true;
}

PyObject* scalar_cse_walk(PyObject* code, PyObject* count, PyObject* pure, PyObject* commutative,
                          PyObject* new_block, PyObject* written_at, PyObject* vreg_t, PyObject* imm_t,
                          PyObject* imm_key, PyObject* pinst_t, bool compact);
PyObject* const RETRY = Py_None;  // scalar_cse_walk's "a key does not encode": walk again with the tuples

// scalar_cse(code, count, PURE, COMMUTATIVE, NEW_BLOCK, WRITTEN_AT, VReg, Imm, imm_key, PInst) -> code
// passes/scalar_cse.py's `run` (its docstring): the same walk, with the same value-number keys (as bytes, else
// tuples of the same Python objects compared by the same dict), and the same renamed pseudo-instructions.
PyObject* scalar_cse(PyObject*, PyObject* args) {
  PyObject *code, *count, *pure, *commutative, *new_block, *written_at, *vreg_t, *imm_t, *imm_key, *pinst_t;
  if (!PyArg_ParseTuple(args, "O!O!OOOO!OOOO", &PyList_Type, &code, &PyDict_Type, &count, &pure, &commutative,
                        &new_block, &PyDict_Type, &written_at, &vreg_t, &imm_t, &imm_key, &pinst_t))
    return nullptr;
  if (!PyType_Check(pinst_t)) {
    PyErr_SetString(PyExc_TypeError, "scalar_cse: PInst must be a class");
    return nullptr;
  }
  PyObject* out = scalar_cse_walk(code, count, pure, commutative, new_block, written_at, vreg_t, imm_t, imm_key,
                                  pinst_t, true);
  if (out != RETRY) return out;
  return scalar_cse_walk(code, count, pure, commutative, new_block, written_at, vreg_t, imm_t, imm_key, pinst_t,
                         false);
}

PyObject* scalar_cse_walk(PyObject* code, PyObject* count, PyObject* pure, PyObject* commutative,
                          PyObject* new_block, PyObject* written_at, PyObject* vreg_t, PyObject* imm_t,
                          PyObject* imm_key, PyObject* pinst_t, bool compact) {
  static PyObject *s_mnemonic, *s_operands, *s_suffixes, *s_value, *s_loc, *s_extra_uses, *s_r, *s_i, *s_f, *s_mov,
      *s_label, *one, *empty;
  if (s_mnemonic == nullptr) {
    empty = PyTuple_New(0);
    if (empty == nullptr) return nullptr;
    s_mnemonic = PyUnicode_InternFromString("mnemonic");
    s_operands = PyUnicode_InternFromString("operands");
    s_suffixes = PyUnicode_InternFromString("suffixes");
    s_value = PyUnicode_InternFromString("value");
    s_loc = PyUnicode_InternFromString("loc");
    s_extra_uses = PyUnicode_InternFromString("extra_uses");
    s_r = PyUnicode_InternFromString("r");
    s_i = PyUnicode_InternFromString("i");
    s_f = PyUnicode_InternFromString("f");
    s_mov = PyUnicode_InternFromString("mov");
    s_label = PyUnicode_InternFromString(".label");
    one = PyLong_FromLong(1);
    if (!s_mnemonic || !s_operands || !s_suffixes || !s_value || !s_loc || !s_extra_uses || !s_r || !s_i || !s_f ||
        !s_mov || !s_label || !one)
      return nullptr;
  }
  // a register written once: count.get(r) == 1
  auto once = [&](PyObject* r, bool* out) -> bool {
    PyObject* c = PyDict_GetItemWithError(count, r);
    if (c == nullptr) {
      *out = false;
      return !PyErr_Occurred();
    }
    if (c == one) {  // (the small int 1 is one object)
      *out = true;
      return true;
    }
    int eq = PyObject_RichCompareBool(c, one, Py_EQ);
    if (eq < 0) return false;
    *out = eq;
    return true;
  };
  Ref holder(PyDict_New()), keep(PyList_New(0));
  if (!holder.p || !keep.p) return nullptr;
  long long fresh = 0;
  // `rename` and `number` (dicts keyed by registers in the Python walk) by slot: rename[slot] (borrowed: the code
  // holds it; nullptr: none), number[slot] (valid while its generation is the current one: a clear is a new one)
  Keys keys(PyList_GET_SIZE(code));
  if (keys.dict.p == nullptr) return nullptr;
  std::vector<PyObject*> rename_to;
  std::vector<long long> number_of;
  std::vector<unsigned> number_gen;
  unsigned gen = 1;
  Py_ssize_t renamed_count = 0;
  auto slot = [&](PyObject* k, bool make) -> Py_ssize_t {
    Py_ssize_t s = keys.slot(k, make);
    if (s >= 0 && (size_t)s >= rename_to.size()) {
      rename_to.resize(s + 1, nullptr);
      number_of.resize(s + 1, 0);
      number_gen.resize(s + 1, 0);
    }
    return s;
  };
  // rename.get(v, v) (borrowed), nullptr on error
  auto rename_get = [&](PyObject* v) -> PyObject* {
    Py_ssize_t s = slot(v, false);
    if (s == -2) return nullptr;
    return s >= 0 && rename_to[s] != nullptr ? rename_to[s] : v;
  };
  auto rename_set = [&](PyObject* d, PyObject* to) -> bool {
    Py_ssize_t s = slot(d, true);
    if (s < 0) return false;
    if (rename_to[s] == nullptr) renamed_count++;
    rename_to[s] = to;
    return true;
  };
  // a mov of a register used once: d renamed to its source, the mov dropped. 1: done, 0: not such a mov, -1: error
  auto forward_mov = [&](PyObject* ops, PyObject* d) -> int {
    PyObject* v = PyTuple_GET_ITEM(ops, 1);
    if ((PyObject*)Py_TYPE(v) != vreg_t) return 0;
    PyObject* src = rename_get(v);
    if (src == nullptr) return -1;
    bool src_once;
    if (!once(src, &src_once)) return -1;
    if (!src_once) return 0;
    return rename_set(d, src) ? 1 : -1;
  };
  auto number_set = [&](PyObject* v) -> bool {  // number[v] = next(fresh)
    Py_ssize_t s = slot(v, true);
    if (s < 0) return false;
    number_of[s] = fresh++;
    number_gen[s] = gen;
    return true;
  };
  // imm_key(v) for an Imm (emitter.imm_key: ("f", its 8 bytes) for a float, ("i", int(x)) otherwise); other
  // operands through imm_key itself
  auto key_of = [&](PyObject* v) -> PyObject* {
    if ((PyObject*)Py_TYPE(v) != imm_t) return PyObject_CallOneArg(imm_key, v);
    Ref x(f_value.get(v));
    if (x.p == nullptr) return nullptr;
    if (PyFloat_Check(x.p)) {
      double d = PyFloat_AS_DOUBLE(x.p);
      char bytes[8];
      if (PyFloat_Pack8(d, bytes, 1) < 0) return nullptr;  // little-endian, struct.pack("<d")'s bytes
      Ref b(PyBytes_FromStringAndSize(bytes, 8));
      if (b.p == nullptr) return nullptr;
      return PyTuple_Pack(2, s_f, b.p);
    }
    Ref i(PyNumber_Long(x.p));  // int(x)
    if (i.p == nullptr) return nullptr;
    return PyTuple_Pack(2, s_i, i.p);
  };
  const Py_ssize_t n = PyList_GET_SIZE(code);
  // what a mnemonic object means to the walk, read once per object (an exact str: the sets do not change during
  // the walk and the code holds the object): the Kind bits below, or -1 not seen yet
  enum : Py_ssize_t { K_LABEL = 1, K_PURE = 2, K_COMM = 4, K_NEW_BLOCK = 8, K_MOV = 16 };
  PtrMap kinds(64);
  Holder table;        // compact: the holder dict's keys as bytes
  std::string kb;      // the key being built
  std::vector<Src> recs;  // its sources
  for (Py_ssize_t idx = 0; idx < n; idx++) {
    PyObject* inst = PyList_GET_ITEM(code, idx);
    Ref m(f_mnemonic.get(inst));
    if (m.p == nullptr) return nullptr;
    Ref ops(f_operands.get(inst));
    if (ops.p == nullptr) return nullptr;
    if (!PyTuple_Check(ops.p)) {
      ops.reset(PySequence_Tuple(ops.p));
      if (ops.p == nullptr) return nullptr;
    }
    const Py_ssize_t nops = PyTuple_GET_SIZE(ops.p);
    Py_ssize_t kind = -1;
    if (PyUnicode_CheckExact(m.p)) {
      Py_ssize_t& k = kinds.at(m.p);
      if (k < 0) {
        int p = PySet_Contains(pure, m.p), c = PySet_Contains(commutative, m.p), b = PySet_Contains(new_block, m.p);
        if (p < 0 || c < 0 || b < 0) return nullptr;
        k = (PyUnicode_Compare(m.p, s_label) == 0 ? K_LABEL : 0) | (p ? K_PURE : 0) | (c ? K_COMM : 0) |
            (b ? K_NEW_BLOCK : 0) | (PyUnicode_CompareWithASCIIString(m.p, "s.mov") == 0 ? K_MOV : 0);
      }
      kind = k;
    }
    int is_label = kind >= 0 ? (kind & K_LABEL) != 0 : PyUnicode_Compare(m.p, s_label) == 0;
    if (is_label) {
      gen++;
      if (compact)
        table.clear();
      else
        PyDict_Clear(holder.p);
    }
    int is_pure = kind >= 0 ? (kind & K_PURE) != 0 : PySet_Contains(pure, m.p);
    if (is_pure < 0) return nullptr;
    bool written_once = false;
    if (is_pure) {
      if (nops < 1) {
        PyErr_SetString(PyExc_IndexError, "tuple index out of range");
        return nullptr;
      }
      if (!once(PyTuple_GET_ITEM(ops.p, 0), &written_once)) return nullptr;
    }
    if (is_pure && written_once && compact) {
      PyObject* d = PyTuple_GET_ITEM(ops.p, 0);
      recs.clear();
      for (Py_ssize_t j = 1; j < nops; j++) {
        PyObject* v = PyTuple_GET_ITEM(ops.p, j);
        if ((PyObject*)Py_TYPE(v) == vreg_t) {  // the value number the register holds (one on first sight)
          v = rename_get(v);
          if (v == nullptr) return nullptr;
          Py_ssize_t s = slot(v, true);
          if (s < 0) return nullptr;
          if (number_gen[s] != gen) {
            number_of[s] = fresh++;
            number_gen[s] = gen;
          }
          recs.push_back(Src{'r', (uint64_t)number_of[s]});
          continue;
        }
        if ((PyObject*)Py_TYPE(v) != imm_t) return RETRY;
        Ref x(f_value.get(v));
        if (x.p == nullptr) return nullptr;
        if (PyFloat_CheckExact(x.p)) {
          char bytes[8];
          if (PyFloat_Pack8(PyFloat_AS_DOUBLE(x.p), bytes, 1) < 0) return nullptr;  // struct.pack("<d")'s bytes
          uint64_t bits;
          memcpy(&bits, bytes, 8);
          recs.push_back(Src{'f', bits});
        } else if (PyLong_CheckExact(x.p) || PyBool_Check(x.p)) {
          int overflow;
          long long i = PyLong_AsLongLongAndOverflow(x.p, &overflow);
          if (overflow) return RETRY;
          if (i == -1 && PyErr_Occurred()) return nullptr;
          recs.push_back(Src{'i', (uint64_t)i});
        } else {
          return RETRY;
        }
      }
      Ref suffixes(f_suffixes.get(inst));
      if (suffixes.p == nullptr) return nullptr;
      if (kind < 0) return RETRY;  // (a mnemonic that is not an exact str)
      if (kind & K_COMM) {  // `inst.suffixes[0].startswith("i")`
        if (!PyTuple_CheckExact(suffixes.p) || PyTuple_GET_SIZE(suffixes.p) < 1 ||
            !PyUnicode_CheckExact(PyTuple_GET_ITEM(suffixes.p, 0)))
          return RETRY;
        PyObject* first = PyTuple_GET_ITEM(suffixes.p, 0);
        if (PyUnicode_GET_LENGTH(first) > 0 && PyUnicode_READ_CHAR(first, 0) == 'i') std::sort(recs.begin(), recs.end());
      }
      kb.clear();
      if (kind & K_MOV) {  // ("mov", srcs[0])
        if (recs.empty()) {
          PyErr_SetString(PyExc_IndexError, "list index out of range");
          return nullptr;
        }
        kb.push_back('M');
        kb.push_back((char)recs[0].tag);
        kb.append((const char*)&recs[0].bits, 8);
        int forwarded = forward_mov(ops.p, d);
        if (forwarded < 0) return nullptr;
        if (forwarded) continue;
      } else {  // (m, suffixes, tuple(srcs))
        kb.push_back('K');
        if (!put_text(kb, m.p)) return RETRY;
        if (!PyTuple_CheckExact(suffixes.p)) return RETRY;
        uint32_t ns = (uint32_t)PyTuple_GET_SIZE(suffixes.p);
        kb.append((const char*)&ns, 4);
        for (uint32_t q = 0; q < ns; q++)
          if (!put_text(kb, PyTuple_GET_ITEM(suffixes.p, q))) return RETRY;
        for (const Src& r : recs) {
          kb.push_back((char)r.tag);
          kb.append((const char*)&r.bits, 8);
        }
      }
      PyObject* h = table.get(kb);
      if (h != nullptr) {
        if (!rename_set(d, h)) return nullptr;
        continue;
      }
      table.set(kb, d);
      if (!number_set(d)) return nullptr;
    } else if (is_pure && written_once) {
      PyObject* d = PyTuple_GET_ITEM(ops.p, 0);
      Ref srcs(PyList_New(0));
      if (srcs.p == nullptr) return nullptr;
      for (Py_ssize_t j = 1; j < nops; j++) {
        PyObject* v = PyTuple_GET_ITEM(ops.p, j);
        Ref key;
        if ((PyObject*)Py_TYPE(v) == vreg_t) {  // the value number the register holds (one on first sight)
          v = rename_get(v);
          if (v == nullptr) return nullptr;
          Py_ssize_t s = slot(v, true);
          if (s < 0) return nullptr;
          if (number_gen[s] != gen) {
            number_of[s] = fresh++;
            number_gen[s] = gen;
          }
          Ref num(PyLong_FromLongLong(number_of[s]));
          if (num.p == nullptr) return nullptr;
          key.reset(PyTuple_Pack(2, s_r, num.p));
        } else {
          key.reset(key_of(v));
        }
        if (key.p == nullptr || PyList_Append(srcs.p, key.p) < 0) return nullptr;
      }
      int comm = kind >= 0 ? (kind & K_COMM) != 0 : PySet_Contains(commutative, m.p);
      if (comm < 0) return nullptr;
      Ref suffixes(f_suffixes.get(inst));
      if (suffixes.p == nullptr) return nullptr;
      if (comm) {  // `inst.suffixes[0].startswith("i")`
        Ref first(PySequence_GetItem(suffixes.p, 0));
        if (first.p == nullptr) return nullptr;
        bool integer;
        if (PyUnicode_CheckExact(first.p)) {
          integer = PyUnicode_GET_LENGTH(first.p) > 0 && PyUnicode_READ_CHAR(first.p, 0) == 'i';
        } else {
          Ref yes(PyObject_CallMethod(first.p, "startswith", "s", "i"));
          if (yes.p == nullptr) return nullptr;
          integer = yes.p == Py_True;
        }
        if (integer && PyList_Sort(srcs.p) < 0) return nullptr;
      }
      Ref key;
      if (PyUnicode_CompareWithASCIIString(m.p, "s.mov") == 0) {
        if (PyList_GET_SIZE(srcs.p) < 1) {
          PyErr_SetString(PyExc_IndexError, "list index out of range");
          return nullptr;
        }
        key.reset(PyTuple_Pack(2, s_mov, PyList_GET_ITEM(srcs.p, 0)));
        if (key.p == nullptr) return nullptr;
        int forwarded = forward_mov(ops.p, d);
        if (forwarded < 0) return nullptr;
        if (forwarded) continue;
      } else {
        Ref t(PyList_AsTuple(srcs.p));
        if (t.p == nullptr) return nullptr;
        key.reset(PyTuple_Pack(3, m.p, suffixes.p, t.p));
        if (key.p == nullptr) return nullptr;
      }
      PyObject* h = PyDict_GetItemWithError(holder.p, key.p);
      if (h == nullptr && PyErr_Occurred()) return nullptr;
      if (h != nullptr) {
        if (!rename_set(d, h)) return nullptr;
        continue;
      }
      if (PyDict_SetItem(holder.p, key.p, d) < 0) return nullptr;
      if (!number_set(d)) return nullptr;
    } else if (PyUnicode_GET_LENGTH(m.p) == 0) {
      PyErr_SetString(PyExc_IndexError, "string index out of range");
      return nullptr;
    } else if (PyUnicode_READ_CHAR(m.p, 0) != '.') {
      PyObject* at = PyDict_GetItemWithError(written_at, m.p);
      if (at == nullptr) {
        if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, m.p);
        return nullptr;
      }
      Ref at_seq(PySequence_Fast(at, "WRITTEN_AT's positions must be a sequence"));
      if (at_seq.p == nullptr) return nullptr;
      for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(at_seq.p); j++) {
        Py_ssize_t i = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(at_seq.p, j));
        if (i == -1 && PyErr_Occurred()) return nullptr;
        if (i < 0 || i >= nops) {
          PyErr_SetString(PyExc_IndexError, "tuple index out of range");
          return nullptr;
        }
        PyObject* v = PyTuple_GET_ITEM(ops.p, i);
        if ((PyObject*)Py_TYPE(v) == vreg_t && !number_set(v)) return nullptr;
      }
    }
    if (PyList_Append(keep.p, inst) < 0) return nullptr;
    int nb = kind >= 0 ? (kind & K_NEW_BLOCK) != 0 : PySet_Contains(new_block, m.p);
    if (nb < 0) return nullptr;
    if (nb) {
      gen++;
      if (compact)
        table.clear();
      else
        PyDict_Clear(holder.p);
    }
  }
  if (renamed_count == 0) {
    Py_INCREF(keep.p);
    return keep.p;
  }
  // the readers of a dropped register read the one that holds its value
  const Py_ssize_t nk = PyList_GET_SIZE(keep.p);
  PyObject* out = PyList_New(nk);
  if (out == nullptr) return nullptr;
  auto renamed = [&](PyObject* v) -> PyObject* {  // a new reference
    if ((PyObject*)Py_TYPE(v) == vreg_t) {
      v = rename_get(v);
      if (v == nullptr) return nullptr;
    }
    Py_INCREF(v);
    return v;
  };
  for (Py_ssize_t k = 0; k < nk; k++) {
    PyObject* inst = PyList_GET_ITEM(keep.p, k);
    Ref ops(f_operands.get(inst));
    if (ops.p == nullptr) {
      Py_DECREF(out);
      return nullptr;
    }
    Ref ops_seq(PySequence_Fast(ops.p, "operands must be a sequence"));
    if (ops_seq.p == nullptr) {
      Py_DECREF(out);
      return nullptr;
    }
    const Py_ssize_t nops = PySequence_Fast_GET_SIZE(ops_seq.p);
    bool change = false;
    for (Py_ssize_t j = 0; j < nops && !change; j++) {
      PyObject* v = PySequence_Fast_GET_ITEM(ops_seq.p, j);
      if ((PyObject*)Py_TYPE(v) == vreg_t) {
        Py_ssize_t s = slot(v, false);
        if (s == -2) {
          Py_DECREF(out);
          return nullptr;
        }
        change = s >= 0 && rename_to[s] != nullptr;
      } else if (Py_TYPE(v) == &PyTuple_Type) {
        change = true;
      }
    }
    if (!change) {
      Py_INCREF(inst);
      PyList_SET_ITEM(out, k, inst);
      continue;
    }
    Ref new_ops(PyTuple_New(nops));
    if (new_ops.p == nullptr) {
      Py_DECREF(out);
      return nullptr;
    }
    for (Py_ssize_t j = 0; j < nops; j++) {
      PyObject* v = PySequence_Fast_GET_ITEM(ops_seq.p, j);
      PyObject* r;
      if (PyTuple_Check(v)) {  // `_renamed`: isinstance(v, tuple)
        const Py_ssize_t nt = PyTuple_GET_SIZE(v);
        r = PyTuple_New(nt);
        for (Py_ssize_t q = 0; r != nullptr && q < nt; q++) {
          PyObject* item = PyTuple_GET_ITEM(v, q);
          PyObject* to = rename_get(item);  // rename.get(r, r)
          if (to == nullptr) {
            Py_CLEAR(r);
            break;
          }
          Py_INCREF(to);
          PyTuple_SET_ITEM(r, q, to);
        }
      } else {
        r = renamed(v);
      }
      if (r == nullptr) {
        Py_DECREF(out);
        return nullptr;
      }
      PyTuple_SET_ITEM(new_ops.p, j, r);
    }
    Ref m(f_mnemonic.get(inst)), suffixes(f_suffixes.get(inst)),
        loc(f_loc.get(inst)), extra(f_extra_uses.get(inst));
    if (!m.p || !suffixes.p || !loc.p || !extra.p) {
      Py_DECREF(out);
      return nullptr;
    }
    // PInst(m, suffixes, ops, loc, extra_uses), made as its dataclass __init__ makes it (the five fields set in
    // order: the same vars()) without the Python-level __init__
    PyTypeObject* pinst_type = (PyTypeObject*)pinst_t;
    PyObject* made = pinst_type->tp_new(pinst_type, empty, nullptr);
    if (made == nullptr || f_mnemonic.set(made, m.p) < 0 ||
        f_suffixes.set(made, suffixes.p) < 0 ||
        f_operands.set(made, new_ops.p) < 0 || f_loc.set(made, loc.p) < 0 ||
        f_extra_uses.set(made, extra.p) < 0) {
      Py_XDECREF(made);
      Py_DECREF(out);
      return nullptr;
    }
    PyList_SET_ITEM(out, k, made);
  }
  return out;
}

// licm(code, count, PURE, BRANCHES, WRITTEN_AT, READ_AT, VReg, Label) -> code
// passes/licm.py's `run` (its docstring): the loops found once on the code as given (`loops`), innermost first,
// then each loop's invariant instructions (`invariant`) moved in front of its label. The instructions only move,
// so what the walk needs of each (its registers as numbers) is read once; the code is a permutation of indices.
// Returns the list given when nothing moves, as `run` does.
PyObject* licm(PyObject*, PyObject* args) {
  PyObject *code, *count, *pure, *branches, *written_at, *read_at, *vreg_t, *label_t;
  if (!PyArg_ParseTuple(args, "O!O!OOO!O!OO", &PyList_Type, &code, &PyDict_Type, &count, &pure, &branches,
                        &PyDict_Type, &written_at, &PyDict_Type, &read_at, &vreg_t, &label_t))
    return nullptr;
  static PyObject *s_mnemonic, *s_operands, *s_label, *one;
  if (s_mnemonic == nullptr) {
    s_mnemonic = PyUnicode_InternFromString("mnemonic");
    s_operands = PyUnicode_InternFromString("operands");
    s_label = PyUnicode_InternFromString(".label");
    one = PyLong_FromLong(1);
    if (!s_mnemonic || !s_operands || !s_label || !one) return nullptr;
  }
  const Py_ssize_t n = PyList_GET_SIZE(code);
  struct Info {
    bool unconditional = false;  // jmp, halt
    bool pure_once = false;      // in PURE and its register (operand 0) written once
    Py_ssize_t def = -1;         // operand 0's register number (pure_once)
    size_t w0 = 0, w1 = 0, r0 = 0, r1 = 0;  // its registers written and read: flat_w[w0:w1], flat_r[r0:r1]
  };
  std::vector<Info> info(n);
  std::vector<Py_ssize_t> flat_w, flat_r;
  flat_w.reserve(n);
  flat_r.reserve(2 * n);
  Ref regs(PyDict_New()), label_at(PyDict_New());
  if (!regs.p || !label_at.p) return nullptr;
  PtrMap by_ptr(n);
  Py_ssize_t nregs = 0;
  auto reg = [&](PyObject* r) -> Py_ssize_t {  // a register's number (first-seen order)
    if (by_identity(r)) {
      Py_ssize_t& k = by_ptr.at(r);
      if (k < 0) k = nregs++;
      return k;
    }
    PyObject* got = PyDict_GetItemWithError(regs.p, r);  // (a key that is not its identity: by the dict)
    if (got != nullptr) return PyLong_AsSsize_t(got);
    if (PyErr_Occurred()) return -1;
    Ref num(PyLong_FromSsize_t(nregs));
    if (num.p == nullptr || PyDict_SetItem(regs.p, r, num.p) < 0) return -1;
    return nregs++;
  };
  auto at = [](PyObject* ops, PyObject* positions, std::vector<Py_ssize_t>& out) -> bool {
    Ref seq(PySequence_Fast(positions, "operand positions must be a sequence"));
    if (seq.p == nullptr) return false;
    for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(seq.p); j++) {
      Py_ssize_t i = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(seq.p, j));
      if (i == -1 && PyErr_Occurred()) return false;
      if (i < 0 || i >= PyTuple_GET_SIZE(ops)) {
        PyErr_SetString(PyExc_IndexError, "tuple index out of range");
        return false;
      }
      out.push_back(i);
    }
    return true;
  };
  std::vector<std::pair<Py_ssize_t, PyObject*>> branch_list;  // (index, target label or nullptr), borrowed
  std::vector<PyObject*> keep_ops;                            // the operand tuples the labels are borrowed from
  auto release = [&]() {
    for (PyObject* o : keep_ops) Py_DECREF(o);
  };
  auto fail = [&]() -> PyObject* {
    release();
    return nullptr;
  };
  std::vector<Py_ssize_t> pos;
  for (Py_ssize_t k = 0; k < n; k++) {
    PyObject* inst = PyList_GET_ITEM(code, k);
    Ref m(f_mnemonic.get(inst));
    if (m.p == nullptr) return fail();
    PyObject* ops = f_operands.get(inst);
    if (ops == nullptr) return fail();
    if (!PyTuple_Check(ops)) {
      Py_SETREF(ops, PySequence_Tuple(ops));
      if (ops == nullptr) return fail();
    }
    keep_ops.push_back(ops);
    Info& it = info[k];
    const Py_ssize_t nops = PyTuple_GET_SIZE(ops);
    if (PyUnicode_GET_LENGTH(m.p) == 0) {
      PyErr_SetString(PyExc_IndexError, "string index out of range");
      return fail();
    }
    const bool dot = PyUnicode_READ_CHAR(m.p, 0) == '.';
    it.unconditional = !PyUnicode_CompareWithASCIIString(m.p, "jmp") || !PyUnicode_CompareWithASCIIString(m.p, "halt");
    if (dot && PyUnicode_Compare(m.p, s_label) == 0) {
      if (nops < 1) {
        PyErr_SetString(PyExc_IndexError, "tuple index out of range");
        return fail();
      }
      Ref i(PyLong_FromSsize_t(k));
      if (i.p == nullptr || PyDict_SetItem(label_at.p, PyTuple_GET_ITEM(ops, 0), i.p) < 0) return fail();
    } else {
      int br = PySet_Contains(branches, m.p);
      if (br < 0) return fail();
      if (br) {  // scalar_flow.target: the first Label among its operands
        PyObject* t = nullptr;
        for (Py_ssize_t j = 0; j < nops && t == nullptr; j++) {
          int is = PyObject_IsInstance(PyTuple_GET_ITEM(ops, j), label_t);
          if (is < 0) return fail();
          if (is) t = PyTuple_GET_ITEM(ops, j);
        }
        branch_list.emplace_back(k, t);
      }
    }
    // scalar_flow.written and read
    it.w0 = it.w1 = flat_w.size();
    it.r0 = flat_r.size();
    if (dot) {
      for (Py_ssize_t j = 0; j < nops; j++) {
        PyObject* v = PyTuple_GET_ITEM(ops, j);
        if ((PyObject*)Py_TYPE(v) == vreg_t) {
          Py_ssize_t r = reg(v);
          if (r < 0) return fail();
          flat_r.push_back(r);
        }
      }
    } else {
      PyObject* w = PyDict_GetItemWithError(written_at, m.p);
      PyObject* rd = w == nullptr ? nullptr : PyDict_GetItemWithError(read_at, m.p);
      if (w == nullptr || rd == nullptr) {
        if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, m.p);
        return fail();
      }
      pos.clear();
      if (!at(ops, w, pos)) return fail();
      for (Py_ssize_t i : pos) {
        PyObject* v = PyTuple_GET_ITEM(ops, i);
        if ((PyObject*)Py_TYPE(v) == vreg_t) {
          Py_ssize_t r = reg(v);
          if (r < 0) return fail();
          flat_w.push_back(r);
        }
      }
      it.w1 = flat_w.size();
      pos.clear();
      if (!at(ops, rd, pos)) return fail();
      for (Py_ssize_t i : pos) {
        PyObject* v = PyTuple_GET_ITEM(ops, i);
        if ((PyObject*)Py_TYPE(v) == vreg_t) {
          Py_ssize_t r = reg(v);
          if (r < 0) return fail();
          flat_r.push_back(r);
        } else if (PyTuple_Check(v)) {
          for (Py_ssize_t q = 0; q < PyTuple_GET_SIZE(v); q++) {
            PyObject* x = PyTuple_GET_ITEM(v, q);
            if ((PyObject*)Py_TYPE(x) == vreg_t) {
              Py_ssize_t r = reg(x);
              if (r < 0) return fail();
              flat_r.push_back(r);
            }
          }
        }
      }
    }
    it.r1 = flat_r.size();
    int is_pure = PySet_Contains(pure, m.p);
    if (is_pure < 0) return fail();
    if (is_pure) {
      if (nops < 1) {
        PyErr_SetString(PyExc_IndexError, "tuple index out of range");
        return fail();
      }
      PyObject* d = PyTuple_GET_ITEM(ops, 0);
      PyObject* c = PyDict_GetItemWithError(count, d);
      if (c == nullptr && PyErr_Occurred()) return fail();
      int eq = c == nullptr ? 0 : PyObject_RichCompareBool(c, one, Py_EQ);
      if (eq < 0) return fail();
      if (eq) {
        it.pure_once = true;
        it.def = reg(d);
        if (it.def < 0) return fail();
      }
    }
  }
  // loops: (header, last back edge), in the order their headers' first back edge comes, then by length
  auto label_index = [&](PyObject* t, Py_ssize_t missing, Py_ssize_t* out) -> bool {  // label_at.get(t, missing)
    if (t == nullptr) t = Py_None;
    PyObject* got = PyDict_GetItemWithError(label_at.p, t);
    if (got == nullptr) {
      if (PyErr_Occurred()) return false;
      *out = missing;
      return true;
    }
    *out = PyLong_AsSsize_t(got);
    return true;
  };
  std::vector<std::pair<Py_ssize_t, Py_ssize_t>> ends;  // (header, end), in insertion order
  std::vector<std::pair<Py_ssize_t, Py_ssize_t>> jumps;
  for (auto [i, t] : branch_list) {
    Py_ssize_t to;
    if (t != nullptr) {
      if (!label_index(t, i + 1, &to)) return fail();
      if (to <= i) {
        auto e = std::find_if(ends.begin(), ends.end(), [&](auto& he) { return he.first == to; });
        if (e == ends.end())
          ends.emplace_back(to, i);
        else
          e->second = std::max(e->second, i);
      }
    }
    if (!label_index(t, -1, &to)) return fail();
    jumps.emplace_back(i, to);
  }
  release();
  std::vector<std::pair<Py_ssize_t, Py_ssize_t>> loops;
  for (auto [h, e] : ends) {
    if (h == 0 || info[h - 1].unconditional) continue;  // no fall-through entry to put the moved code on
    bool entered = false;  // something jumps in from outside
    for (auto [k, to] : jumps)
      if (h <= to && to <= e && !(h <= k && k <= e)) entered = true;
    if (!entered) loops.emplace_back(h, e);
  }
  std::stable_sort(loops.begin(), loops.end(),
                   [](const auto& a, const auto& b) { return a.second - a.first < b.second - b.first; });

  std::vector<Py_ssize_t> order(n);  // position -> instruction
  for (Py_ssize_t k = 0; k < n; k++) order[k] = k;
  std::vector<Py_ssize_t> inside_stamp(nregs, -1), moved_stamp(nregs, -1);
  bool moved_any = false;
  struct Candidate {
    Py_ssize_t k, d;
    std::vector<Py_ssize_t> inside;
  };
  for (size_t l = 0; l < loops.size(); l++) {
    const auto [header, end] = loops[l];
    const Py_ssize_t stamp = l;
    for (Py_ssize_t k = header; k <= end; k++) {
      const Info& it = info[order[k]];
      for (size_t j = it.w0; j < it.w1; j++) inside_stamp[flat_w[j]] = stamp;
    }
    std::vector<Candidate> candidates;
    for (Py_ssize_t k = header; k <= end; k++) {
      const Info& it = info[order[k]];
      if (!it.pure_once) continue;
      Candidate c{k, it.def, {}};
      for (size_t j = it.r0; j < it.r1; j++)
        if (inside_stamp[flat_r[j]] == stamp) c.inside.push_back(flat_r[j]);
      candidates.push_back(std::move(c));
    }
    std::vector<Py_ssize_t> found;
    for (bool changed = true; changed;) {  // in code order, again until nothing more moves
      changed = false;
      std::vector<Candidate> left;
      for (Candidate& c : candidates) {
        bool all = true;
        for (Py_ssize_t r : c.inside)
          if (moved_stamp[r] != stamp) {
            all = false;
            break;
          }
        if (all) {
          found.push_back(c.k);
          moved_stamp[c.d] = stamp;
          changed = true;
        } else {
          left.push_back(std::move(c));
        }
      }
      candidates = std::move(left);
    }
    if (found.empty()) continue;
    moved_any = true;
    std::vector<char> gone(n, 0);
    for (Py_ssize_t k : found) gone[k] = 1;
    std::vector<Py_ssize_t> next(order.begin(), order.begin() + header);
    for (Py_ssize_t k : found) next.push_back(order[k]);
    for (Py_ssize_t k = header; k < n; k++)
      if (!gone[k]) next.push_back(order[k]);
    order = std::move(next);
  }
  if (!moved_any) {
    Py_INCREF(code);
    return code;
  }
  PyObject* out = PyList_New(n);
  if (out == nullptr) return nullptr;
  for (Py_ssize_t k = 0; k < n; k++) {
    PyObject* inst = PyList_GET_ITEM(code, order[k]);
    Py_INCREF(inst);
    PyList_SET_ITEM(out, k, inst);
  }
  return out;
}

// map_code(code, regs, toks, pcs, tile, operand, locs, loc_list, UNKNOWN_LOC, VReg, Token, View, Label, Inst,
//          instrs[, Imm, consts, const_list]) -> None
// finalize's last walk (passes/finalize.py, `finalize`): each pseudo-instruction that is not a directive as an
// Inst of physical operands appended to `instrs`: a VReg, Token or Label through its dict (regs, toks, pcs), a
// View through `tile`, an Imm of an exact int and a register list (an exact tuple) as `operand` maps them (the
// constant pool entry: `consts`, key -> index, `const_list`: the program's consts; the registers' numbers),
// anything else through `operand`; its loc through the location table (`locs`: loc ->
// index, `loc_list`: the program's locs), looked up again only when it is another object than the last one's.
// The Inst is made as its dataclass __init__ makes it (each field set with object.__setattr__, in field order).
PyObject* map_code(PyObject*, PyObject* args) {
  PyObject *code, *regs, *toks, *pcs, *tile, *operand, *locs, *loc_list, *unknown, *vreg_t, *token_t, *view_t,
      *label_t, *inst_t, *instrs, *imm_t = nullptr, *consts = nullptr, *const_list = nullptr;
  if (!PyArg_ParseTuple(args, "O!O!O!O!OOO!O!OOOOOOO!|OO!O!", &PyList_Type, &code, &PyDict_Type, &regs, &PyDict_Type,
                        &toks, &PyDict_Type, &pcs, &tile, &operand, &PyDict_Type, &locs, &PyList_Type, &loc_list,
                        &unknown, &vreg_t, &token_t, &view_t, &label_t, &inst_t, &PyList_Type, &instrs, &imm_t,
                        &PyDict_Type, &consts, &PyList_Type, &const_list))
    return nullptr;
  if (const_list == nullptr) imm_t = nullptr;  // (all three, or the operand function for every immediate)
  if (!PyType_Check(inst_t)) {
    PyErr_SetString(PyExc_TypeError, "map_code: Inst must be a class");
    return nullptr;
  }
  static PyObject *s_mnemonic, *s_suffixes, *s_operands, *s_loc, *empty, *s_i;
  if (s_mnemonic == nullptr) {
    s_mnemonic = PyUnicode_InternFromString("mnemonic");
    s_suffixes = PyUnicode_InternFromString("suffixes");
    s_operands = PyUnicode_InternFromString("operands");
    s_loc = PyUnicode_InternFromString("loc");
    s_i = PyUnicode_InternFromString("i");
    empty = PyTuple_New(0);
    if (!s_mnemonic || !s_suffixes || !s_operands || !s_loc || !s_i || !empty) return nullptr;
  }
  // an immediate whose value is exactly an int: finalize's `const` (its entry of the constant pool, made on first
  // sight under the key ("i", value)); any other immediate through `operand`
  auto int_const = [&](PyObject* value) -> PyObject* {
    Ref key(PyTuple_Pack(2, s_i, value));
    if (key.p == nullptr) return nullptr;
    PyObject* got = PyDict_GetItemWithError(consts, key.p);
    if (got != nullptr) return Py_NewRef(got);
    if (PyErr_Occurred()) return nullptr;
    Ref k(PyLong_FromSsize_t(PyList_GET_SIZE(const_list)));
    if (k.p == nullptr || PyDict_SetItem(consts, key.p, k.p) < 0 || PyList_Append(const_list, value) < 0)
      return nullptr;
    return Py_NewRef(k.p);
  };
  PyTypeObject* inst_type = (PyTypeObject*)inst_t;
  PyObject* last_loc = nullptr;  // borrowed: the code list keeps its instructions' locs alive
  Ref at;
  const Py_ssize_t n = PyList_GET_SIZE(code);
  for (Py_ssize_t k = 0; k < n; k++) {
    PyObject* inst = PyList_GET_ITEM(code, k);
    Ref m(f_mnemonic.get(inst));
    if (m.p == nullptr) return nullptr;
    if (!PyUnicode_Check(m.p) || PyUnicode_GET_LENGTH(m.p) == 0) {
      PyErr_SetString(PyExc_IndexError, "string index out of range");
      return nullptr;
    }
    if (PyUnicode_READ_CHAR(m.p, 0) == '.') continue;
    Ref loc_attr(f_loc.get(inst));
    if (loc_attr.p == nullptr) return nullptr;
    int truth = PyObject_IsTrue(loc_attr.p);  // `inst.loc or UNKNOWN_LOC`
    if (truth < 0) return nullptr;
    PyObject* loc = truth ? loc_attr.p : unknown;
    if (loc != last_loc) {
      PyObject* got = PyDict_GetItemWithError(locs, loc);
      if (got == nullptr) {
        if (PyErr_Occurred()) return nullptr;
        at.reset(PyLong_FromSsize_t(PyList_GET_SIZE(loc_list)));
        if (at.p == nullptr || PyDict_SetItem(locs, loc, at.p) < 0 || PyList_Append(loc_list, loc) < 0)
          return nullptr;
      } else {
        Py_INCREF(got);
        at.reset(got);
      }
      last_loc = loc;
    }
    Ref ops(f_operands.get(inst));
    if (ops.p == nullptr) return nullptr;
    Ref seq(PySequence_Fast(ops.p, "operands must be a sequence"));
    if (seq.p == nullptr) return nullptr;
    const Py_ssize_t nops = PySequence_Fast_GET_SIZE(seq.p);
    Ref mapped(PyTuple_New(nops));
    if (mapped.p == nullptr) return nullptr;
    for (Py_ssize_t j = 0; j < nops; j++) {
      PyObject* v = PySequence_Fast_GET_ITEM(seq.p, j);
      PyObject* t = (PyObject*)Py_TYPE(v);
      PyObject* table = t == vreg_t ? regs : t == token_t ? toks : t == label_t ? pcs : nullptr;
      PyObject* r;
      if (table != nullptr) {  // regs[v], toks[v], pcs[v]
        r = PyDict_GetItemWithError(table, v);
        if (r == nullptr) {
          if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, v);
          return nullptr;
        }
        Py_INCREF(r);
      } else if (t == (PyObject*)&PyTuple_Type && imm_t != nullptr) {  // a register list: `operand`'s regs[r] each
        const Py_ssize_t nr = PyTuple_GET_SIZE(v);
        r = PyTuple_New(nr);
        if (r == nullptr) return nullptr;
        for (Py_ssize_t q = 0; q < nr; q++) {
          PyObject* item = PyTuple_GET_ITEM(v, q);
          PyObject* phys = PyDict_GetItemWithError(regs, item);
          if (phys == nullptr) {
            if (!PyErr_Occurred()) {  // KeyError(item), as the subscript raises it
              PyObject* e = PyObject_CallOneArg(PyExc_KeyError, item);
              if (e != nullptr) {
                PyErr_SetObject(PyExc_KeyError, e);
                Py_DECREF(e);
              }
            }
            Py_DECREF(r);
            return nullptr;
          }
          PyTuple_SET_ITEM(r, q, Py_NewRef(phys));
        }
      } else if (t == imm_t) {
        Ref value(f_value.get(v));
        if (value.p == nullptr) return nullptr;
        r = PyLong_CheckExact(value.p) ? int_const(value.p) : PyObject_CallOneArg(operand, v);
        if (r == nullptr) return nullptr;
      } else {
        r = PyObject_CallOneArg(t == view_t ? tile : operand, v);
        if (r == nullptr) return nullptr;
      }
      PyTuple_SET_ITEM(mapped.p, j, r);
    }
    Ref suffixes(f_suffixes.get(inst));
    if (suffixes.p == nullptr) return nullptr;
    if (!PyTuple_CheckExact(suffixes.p)) {  // tuple(inst.suffixes)
      suffixes.reset(PySequence_Tuple(suffixes.p));
      if (suffixes.p == nullptr) return nullptr;
    }
    Ref made(inst_type->tp_new(inst_type, empty, nullptr));
    if (made.p == nullptr || f_mnemonic.set(made.p, m.p) < 0 ||
        f_suffixes.set(made.p, suffixes.p) < 0 ||
        f_operands.set(made.p, mapped.p) < 0 || f_loc.set(made.p, at.p) < 0 ||
        PyList_Append(instrs, made.p) < 0)
      return nullptr;
  }
  Py_RETURN_NONE;
}

// writes(code, WRITTEN_AT, VReg) -> scalar_flow.writes(code): register -> how many instructions write it, in the
// order of their first write; NotImplemented where the Python walk would read something else than the common
// case (a mnemonic that is not a str or is empty, one WRITTEN_AT lacks, positions that are not a tuple of ints,
// operands that are not a tuple): the caller then runs the Python walk, which gives its result or its error
PyObject* writes(PyObject*, PyObject* args) {
  PyObject *code, *written_at, *vreg_t;
  if (!PyArg_ParseTuple(args, "O!O!O", &PyList_Type, &code, &PyDict_Type, &written_at, &vreg_t)) return nullptr;
  static PyObject *s_mnemonic, *s_operands;
  if (s_mnemonic == nullptr) {
    s_mnemonic = PyUnicode_InternFromString("mnemonic");
    s_operands = PyUnicode_InternFromString("operands");
    if (!s_mnemonic || !s_operands) return nullptr;
  }
  Ref count(PyDict_New());
  if (count.p == nullptr) return nullptr;
  auto declined = []() {
    Py_INCREF(Py_NotImplemented);
    return Py_NotImplemented;
  };
  for (Py_ssize_t idx = 0; idx < PyList_GET_SIZE(code); idx++) {
    PyObject* inst = PyList_GET_ITEM(code, idx);
    Py_INCREF(inst);
    Ref hold(inst);
    Ref m(f_mnemonic.get(inst));
    if (m.p == nullptr) return nullptr;
    if (!PyUnicode_CheckExact(m.p) || PyUnicode_GET_LENGTH(m.p) == 0) return declined();
    if (PyUnicode_READ_CHAR(m.p, 0) == '.') continue;
    Ref ops(f_operands.get(inst));
    if (ops.p == nullptr) return nullptr;
    PyObject* at = PyDict_GetItemWithError(written_at, m.p);  // borrowed: WRITTEN_AT keeps it
    if (at == nullptr) {
      if (PyErr_Occurred()) return nullptr;
      return declined();
    }
    if (!PyTuple_CheckExact(at) || !PyTuple_CheckExact(ops.p)) return declined();
    const Py_ssize_t nops = PyTuple_GET_SIZE(ops.p);
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(at); j++) {
      PyObject* pos = PyTuple_GET_ITEM(at, j);
      if (!PyLong_CheckExact(pos)) return declined();
      Py_ssize_t i = PyLong_AsSsize_t(pos);
      if (i == -1 && PyErr_Occurred()) return nullptr;
      if (i < 0 || i >= nops) return declined();
      PyObject* v = PyTuple_GET_ITEM(ops.p, i);
      if ((PyObject*)Py_TYPE(v) != vreg_t) continue;
      PyObject* c = PyDict_GetItemWithError(count.p, v);
      long n = 0;
      if (c == nullptr) {
        if (PyErr_Occurred()) return nullptr;
      } else {
        n = PyLong_AsLong(c);
        if (n == -1 && PyErr_Occurred()) return nullptr;
      }
      Ref next(PyLong_FromLong(n + 1));
      if (next.p == nullptr || PyDict_SetItem(count.p, v, next.p) < 0) return nullptr;
    }
  }
  PyObject* out = count.p;
  count.p = nullptr;
  return out;
}

PyMethodDef methods[] = {
    {"live_intervals", live_intervals, METH_VARARGS,
     "live_intervals(code, defs, defs_fn, VReg, Token, View, Buffer, Label): regalloc.live_intervals in C"},
    {"allocate", allocate, METH_VARARGS,
     "allocate(intervals, kind, count): regalloc.allocate's linear scan in C; None when it overflows"},
    {"map_code", map_code, METH_VARARGS,
     "map_code(code, regs, toks, pcs, tile, operand, locs, loc_list, UNKNOWN_LOC, VReg, Token, View, Label, Inst, "
     "instrs): finalize's operand mapping in C"},
    {"licm", licm, METH_VARARGS,
     "licm(code, count, PURE, BRANCHES, WRITTEN_AT, READ_AT, VReg, Label): licm.run in C"},
    {"writes", writes, METH_VARARGS,
     "writes(code, WRITTEN_AT, VReg): scalar_flow.writes in C; NotImplemented where it leaves the walk to Python"},
    {"scalar_cse", scalar_cse, METH_VARARGS,
     "scalar_cse(code, count, PURE, COMMUTATIVE, NEW_BLOCK, WRITTEN_AT, VReg, Imm, imm_key, PInst): "
     "scalar_cse.run in C"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_codewalk",
                      "walks over the emitted code in C: licm, scalar_cse, liveness, linear scan, operand mapping, write counts", -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit__codewalk(void) { return PyModule_Create(&module); }
