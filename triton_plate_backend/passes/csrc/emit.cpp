// triton_plate_backend.passes._emit: the code generator's most called methods in C, `Emitter.emit`,
// `Emitter.rematerialised` and `Emitter.li` (passes/emitter.py): the same pseudo-instructions (PInst objects with the same fields, in
// the same order) appended to the same list, the same register versions, the same block memo with the same keys,
// the same shared set. What is not scalar work goes back to the emitter's Python methods at the points the Python
// `emit` calls them (`wait_all` before a branch, `_hazards` before an instruction that touches a tile or memory,
// `_track` after a DMA); an instruction the table does not know, a wrong operand count or an unexpected keyword goes
// to the Python method whole, so every error is Python's.
//
// A plain CPython module (no torch). `Core(emitter)` holds a weak reference to its emitter (the emitter holds the
// core's bound methods as its `emit` / `rematerialised`: no reference cycle) and reads the emitter's attributes
// (code, pending, remat, _version, shared, _placed, loc) at every call, as the Python methods do, so a caller that
// replaces one (codegen sets `remat` to None, a test sets `code`) is seen. tests/test_compiled_emitter.py lowers
// every corpus kernel both ways and compares the code.
#include <Python.h>

#include <cstring>
#include <utility>

#include "../../isa/csrc/fields.h"

namespace {

using plate_fields::SlotField;
// the fields of the pseudo-instructions made here (fields.h)
SlotField f_mnemonic("mnemonic"), f_suffixes("suffixes"), f_operands("operands"), f_loc("loc"),
    f_extra_uses("extra_uses");
// and of the registers made here (VReg's slots)
SlotField f_id("id"), f_hint("hint");

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
  PyObject* release() {
    PyObject* o = p;
    p = nullptr;
    return o;
  }
};

// flags of a mnemonic (emitter.py `_CORE`): what the Python `emit` tests by set membership
enum : long { BRANCH = 1, FORWARD = 2, NO_HAZARD = 4, DMA = 8, HALT = 16, FENCE = 32 };

// set by init(): mnemonic -> (row, operand count, flags, written operand positions); the classes; the Python methods
PyObject *g_table, *g_pinst, *g_vreg, *g_imm, *g_imm_key, *g_emit_py, *g_remat_py, *g_li_py;
// set by init() when given: the counter VReg.__init__ takes its ids from, and that __init__ (what new_vreg checks)
PyObject *g_vreg_ids, *g_vreg_init;
PyObject *s_code, *s_pending, *s_remat, *s_version, *s_shared, *s_placed, *s_loc, *s_wait_all, *s_hazards,
    *s_track, *s_mnemonic, *s_suffixes, *s_operands, *s_extra_uses, *s_value, *s_force, *s_hint, *s_f, *s_i,
    *s_li, *s_init, *s_wait, *k_force, *k_hint, *empty_tuple, *empty_str, *zero, *one;

bool strings() {
  struct {
    PyObject** at;
    const char* text;
  } all[] = {{&s_code, "code"},
             {&s_pending, "pending"},
             {&s_remat, "remat"},
             {&s_version, "_version"},
             {&s_shared, "shared"},
             {&s_placed, "_placed"},
             {&s_loc, "loc"},
             {&s_wait_all, "wait_all"},
             {&s_hazards, "_hazards"},
             {&s_track, "_track"},
             {&s_mnemonic, "mnemonic"},
             {&s_suffixes, "suffixes"},
             {&s_operands, "operands"},
             {&s_extra_uses, "extra_uses"},
             {&s_value, "value"},
             {&s_force, "force"},
             {&s_hint, "hint"},
             {&s_f, "f"},
             {&s_i, "i"},
             {&s_li, "s.li"},
             {&s_init, "__init__"},
             {&s_wait, "wait"}};
  for (auto& s : all) {
    if (*s.at == nullptr && (*s.at = PyUnicode_InternFromString(s.text)) == nullptr) return false;
  }
  if (k_force == nullptr && (k_force = PyTuple_Pack(1, s_force)) == nullptr) return false;
  if (k_hint == nullptr && (k_hint = PyTuple_Pack(1, s_hint)) == nullptr) return false;
  if (empty_tuple == nullptr && (empty_tuple = PyTuple_New(0)) == nullptr) return false;
  if (empty_str == nullptr && (empty_str = PyUnicode_FromString("")) == nullptr) return false;
  if (zero == nullptr && (zero = PyLong_FromLong(0)) == nullptr) return false;
  if (one == nullptr && (one = PyLong_FromLong(1)) == nullptr) return false;
  return true;
}

// init(table, PInst, VReg, Imm, imm_key, Emitter.emit, Emitter.rematerialised, Emitter.li[, vreg_ids]) -> None
PyObject* init(PyObject*, PyObject* args) {
  PyObject *table, *pinst, *vreg, *imm, *imm_key, *emit_py, *remat_py, *li_py, *vreg_ids = nullptr;
  if (!PyArg_ParseTuple(args, "O!OOOOOOO|O", &PyDict_Type, &table, &pinst, &vreg, &imm, &imm_key, &emit_py, &remat_py,
                        &li_py, &vreg_ids))
    return nullptr;
  if (!PyType_Check(pinst) || !PyType_Check(vreg) || !PyType_Check(imm)) {
    PyErr_SetString(PyExc_TypeError, "init: PInst, VReg and Imm must be classes");
    return nullptr;
  }
  if (!strings()) return nullptr;
  PyObject** slots[] = {&g_table, &g_pinst, &g_vreg, &g_imm, &g_imm_key, &g_emit_py, &g_remat_py, &g_li_py};
  PyObject* values[] = {table, pinst, vreg, imm, imm_key, emit_py, remat_py, li_py};
  for (size_t k = 0; k < sizeof(values) / sizeof(*values); k++) {
    Py_INCREF(values[k]);
    Py_XSETREF(*slots[k], values[k]);
  }
  // the registers' counter and the __init__ that reads it: without them (or once VReg's __init__ is another)
  // a register is made by calling the class
  if (vreg_ids != nullptr && !PyIter_Check(vreg_ids)) {
    PyErr_SetString(PyExc_TypeError, "init: vreg_ids must be an iterator");
    return nullptr;
  }
  PyObject* vinit = vreg_ids != nullptr ? _PyType_Lookup((PyTypeObject*)vreg, s_init) : nullptr;
  PyObject* ids = vinit != nullptr ? vreg_ids : nullptr;
  Py_XINCREF(ids);
  Py_XSETREF(g_vreg_ids, ids);
  Py_XINCREF(vinit);
  Py_XSETREF(g_vreg_init, vinit);
  Py_RETURN_NONE;
}

// VReg(hint): what VReg.__init__ does (`self.id, self.hint = next(_VREG_IDS), hint`) without its frame, while VReg
// is made by object's __new__ and its __init__ is the one init() saw; else the class called
PyObject* new_vreg(PyObject* hint) {
  PyTypeObject* t = (PyTypeObject*)g_vreg;
  if (g_vreg_ids == nullptr || t->tp_new != PyBaseObject_Type.tp_new || _PyType_Lookup(t, s_init) != g_vreg_init)
    return PyObject_CallOneArg(g_vreg, hint);
  Ref id(PyIter_Next(g_vreg_ids));
  if (id.p == nullptr) {
    if (!PyErr_Occurred()) PyErr_SetNone(PyExc_StopIteration);
    return nullptr;
  }
  Ref r(t->tp_alloc(t, 0));
  if (r.p == nullptr || f_id.set(r.p, id.p) < 0 || f_hint.set(r.p, hint) < 0) return nullptr;
  return r.release();
}

struct Core {
  PyObject_HEAD PyObject* emitter;  // a weak reference
};

// the emitter (a new reference), or nullptr with an error set
PyObject* emitter_of(Core* self) {
  PyObject* em = PyWeakref_GetObject(self->emitter);
  if (em == nullptr) return nullptr;
  if (em == Py_None) {
    PyErr_SetString(PyExc_ReferenceError, "the emitter of this Core is gone");
    return nullptr;
  }
  Py_INCREF(em);
  return em;
}

// fn(em, *args[0:nargs], **kwnames): the Python method, whole
PyObject* delegate(PyObject* fn, PyObject* em, PyObject* const* args, size_t nargs, PyObject* kwnames) {
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  Py_ssize_t total = (Py_ssize_t)nargs + nkw;
  PyObject* small[16];
  PyObject** buf = total + 1 <= 16 ? small : (PyObject**)PyMem_Malloc(sizeof(PyObject*) * (total + 1));
  if (buf == nullptr) return PyErr_NoMemory();
  buf[0] = em;
  for (Py_ssize_t k = 0; k < total; k++) buf[k + 1] = args[k];
  PyObject* r = PyObject_Vectorcall(fn, buf, (size_t)nargs + 1, kwnames);
  if (buf != small) PyMem_Free(buf);
  return r;
}

// PyObject_GetAttr(obj, name) (name an exact str): read from the instance's dict directly when the class has no
// data descriptor of that name (what PyObject_GenericGetAttr looks up before the dict) and the dict holds it: the
// emitter's and the code generator's plain attributes (code, pending, remat, loc, env, em ...); else the lookup
PyObject* get_attr(PyObject* obj, PyObject* name) {
  PyTypeObject* t = Py_TYPE(obj);
  if (t->tp_getattro == PyObject_GenericGetAttr && PyUnicode_CheckExact(name)) {
    PyObject* descr = _PyType_Lookup(t, name);
    if (descr == nullptr || Py_TYPE(descr)->tp_descr_set == nullptr) {
      PyObject** dictptr = _PyObject_GetDictPtr(obj);
      if (dictptr != nullptr && *dictptr != nullptr && PyDict_CheckExact(*dictptr)) {
        PyObject* got = PyDict_GetItemWithError(*dictptr, name);
        if (got != nullptr) return Py_NewRef(got);
        if (PyErr_Occurred()) return nullptr;
      }
    }
  }
  return PyObject_GetAttr(obj, name);
}

// em.<name>(*args) through the attribute (the Python methods)
PyObject* call_method(PyObject* em, PyObject* name, PyObject* a, PyObject* b, PyObject* c) {
  PyObject* argv[] = {em, a, b, c};
  return PyObject_VectorcallMethod(name, argv, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
}

// is a list (or other container) non-empty: `if self.pending:`
int truth_of_attr(PyObject* em, PyObject* name, Ref& out) {
  out.reset(get_attr(em, name));
  if (out.p == nullptr) return -1;
  if (PyList_CheckExact(out.p)) return PyList_GET_SIZE(out.p) != 0;
  if (PyDict_CheckExact(out.p)) return PyDict_GET_SIZE(out.p) != 0;
  return PyObject_IsTrue(out.p);
}

// ---- the DMAs in flight: Emitter._hazards, _track, wait and wait_all (passes/emitter.py) ----------------------------
// set by init_dma(): the Python methods (an emitter whose class or instance has another runs that one) and _Pending
PyObject *g_hazards_py, *g_track_py, *g_wait_py, *g_wait_all_py, *g_pending_cls;
PyObject *s_buffer, *s_writes, *s_reads, *s_memory, *s_token, *s_carried, *s_other_program, *s_queue_depth, *s_read,
    *s_write, *s_both, *s_dma_wait, *k_other_program;

// init_dma(Emitter._hazards, Emitter._track, Emitter.wait, Emitter.wait_all, _Pending) -> None
PyObject* init_dma(PyObject*, PyObject* args) {
  PyObject *hazards, *track, *wait, *wait_all, *pending_cls;
  if (!PyArg_ParseTuple(args, "OOOOO", &hazards, &track, &wait, &wait_all, &pending_cls)) return nullptr;
  if (!strings()) return nullptr;
  struct {
    PyObject** at;
    const char* text;
  } all[] = {{&s_buffer, "buffer"},   {&s_writes, "writes"},   {&s_reads, "reads"},
             {&s_memory, "memory"},   {&s_token, "token"},     {&s_carried, "carried"},
             {&s_other_program, "other_program"}, {&s_queue_depth, "queue_depth"},
             {&s_read, "read"},       {&s_write, "write"},     {&s_both, "both"},
             {&s_dma_wait, "dma.wait"}};
  for (auto& x : all) {
    if (*x.at == nullptr && (*x.at = PyUnicode_InternFromString(x.text)) == nullptr) return nullptr;
  }
  if (k_other_program == nullptr && (k_other_program = PyTuple_Pack(1, s_other_program)) == nullptr) return nullptr;
  PyObject** slots[] = {&g_hazards_py, &g_track_py, &g_wait_py, &g_wait_all_py, &g_pending_cls};
  PyObject* values[] = {hazards, track, wait, wait_all, pending_cls};
  for (size_t k = 0; k < sizeof(values) / sizeof(*values); k++) {
    Py_INCREF(values[k]);
    Py_XSETREF(*slots[k], values[k]);
  }
  Py_RETURN_NONE;
}

// is em.<name> the method init_dma saw (its class's, not replaced on the class or the instance)
bool own_method(PyObject* em, PyObject* name, PyObject* fn) {
  if (fn == nullptr || _PyType_Lookup(Py_TYPE(em), name) != fn) return false;
  PyObject** dictptr = _PyObject_GetDictPtr(em);
  if (dictptr == nullptr || *dictptr == nullptr) return true;
  if (!PyDict_CheckExact(*dictptr)) return false;
  PyObject* got = PyDict_GetItemWithError(*dictptr, name);
  if (got == nullptr && PyErr_Occurred()) PyErr_Clear();
  return got == nullptr;
}

// {operands[i].buffer for i in positions} (a new set)
PyObject* buffers_at(PyObject* ops, PyObject* positions) {
  Ref set(PySet_New(nullptr));
  if (set.p == nullptr) return nullptr;
  for (Py_ssize_t k = 0, n = PyTuple_GET_SIZE(positions); k < n; k++) {
    Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(positions, k));
    if (i == -1 && PyErr_Occurred()) return nullptr;
    if (i < 0 || i >= PyTuple_GET_SIZE(ops)) {
      PyErr_SetString(PyExc_IndexError, "tuple index out of range");
      return nullptr;
    }
    Ref b(get_attr(PyTuple_GET_ITEM(ops, i), s_buffer));
    if (b.p == nullptr || PySet_Add(set.p, b.p) < 0) return nullptr;
  }
  return set.release();
}

// bool(a & b) (1, 0, -1 on error): a common member found by the smaller set's walk, as set & set finds them
int meet(PyObject* a, PyObject* b) {
  if (!PyAnySet_CheckExact(a) || !PyAnySet_CheckExact(b)) {
    Ref both(PyNumber_And(a, b));
    return both.p == nullptr ? -1 : PyObject_IsTrue(both.p);
  }
  if (PySet_GET_SIZE(a) > PySet_GET_SIZE(b)) std::swap(a, b);
  Py_ssize_t pos = 0;
  PyObject* key;
  Py_hash_t hash;
  while (_PySet_NextEntry(a, &pos, &key, &hash)) {
    int in = PySet_Contains(b, key);
    if (in != 0) return in;
  }
  return 0;
}

// Emitter.wait(p): p out of the pending list (list.remove), a dma.wait of its token keeping its buffers alive
bool wait_c(PyObject* em, PyObject* p) {
  Ref pending(get_attr(em, s_pending));
  if (pending.p == nullptr) return false;
  if (PyList_CheckExact(pending.p)) {
    Py_ssize_t i = 0;
    for (; i < PyList_GET_SIZE(pending.p); i++) {
      PyObject* item = PyList_GET_ITEM(pending.p, i);
      Py_INCREF(item);
      int eq = PyObject_RichCompareBool(item, p, Py_EQ);
      Py_DECREF(item);
      if (eq < 0) return false;
      if (eq) break;
    }
    if (i == PyList_GET_SIZE(pending.p)) {
      PyErr_SetString(PyExc_ValueError, "list.remove(x): x not in list");
      return false;
    }
    if (PyList_SetSlice(pending.p, i, i + 1, nullptr) < 0) return false;
  } else {
    Ref r(PyObject_CallMethod(pending.p, "remove", "O", p));
    if (r.p == nullptr) return false;
  }
  Ref code(get_attr(em, s_code));
  if (code.p == nullptr) return false;
  Ref token(PyObject_GetAttr(p, s_token));
  if (token.p == nullptr) return false;
  Ref ops(PyTuple_Pack(1, token.p));
  Ref loc(get_attr(em, s_loc));
  if (ops.p == nullptr || loc.p == nullptr) return false;
  Ref w(PyObject_GetAttr(p, s_writes));
  if (w.p == nullptr) return false;
  Ref r(PyObject_GetAttr(p, s_reads));
  if (r.p == nullptr) return false;
  Ref both(PyNumber_Or(w.p, r.p));
  if (both.p == nullptr) return false;
  Ref extra(PySequence_Tuple(both.p));
  if (extra.p == nullptr) return false;
  // PInst("dma.wait", (), (p.token,), self.loc, tuple(p.writes | p.reads)), made as its __init__ makes it
  PyTypeObject* pinst_type = (PyTypeObject*)g_pinst;
  Ref inst(pinst_type->tp_new(pinst_type, empty_tuple, nullptr));
  if (inst.p == nullptr || f_mnemonic.set(inst.p, s_dma_wait) < 0 || f_suffixes.set(inst.p, empty_tuple) < 0 ||
      f_operands.set(inst.p, ops.p) < 0 || f_loc.set(inst.p, loc.p) < 0 || f_extra_uses.set(inst.p, extra.p) < 0)
    return false;
  if (PyList_CheckExact(code.p)) return PyList_Append(code.p, inst.p) == 0;
  Ref done(PyObject_CallMethod(code.p, "append", "O", inst.p));
  return done.p != nullptr;
}

// a snapshot of the pending list (list(self.pending)), a new reference
PyObject* pending_now(PyObject* em) {
  Ref pending(get_attr(em, s_pending));
  if (pending.p == nullptr) return nullptr;
  return PySequence_List(pending.p);
}

// Emitter.wait_all(force): every pending DMA waited for (but carried prefetches, unless force)
bool wait_all_c(PyObject* em, bool force) {
  Ref all(pending_now(em));
  if (all.p == nullptr) return false;
  for (Py_ssize_t k = 0; k < PyList_GET_SIZE(all.p); k++) {
    PyObject* p = PyList_GET_ITEM(all.p, k);
    if (!force) {
      Ref carried(PyObject_GetAttr(p, s_carried));
      if (carried.p == nullptr) return false;
      int yes = PyObject_IsTrue(carried.p);
      if (yes < 0) return false;
      if (yes) continue;
    }
    if (!wait_c(em, p)) return false;
  }
  return true;
}

// Emitter._hazards(mnemonic, row, operands) for the table's entry (row, count, flags, written, tiles read, tiles
// written, memory): a pending DMA that clashes with this instruction is waited for, then a full queue drained
bool hazards_c(PyObject* em, PyObject* entry, long flags, PyObject* ops) {
  PyObject *used = PyTuple_GET_ITEM(entry, 4), *written = PyTuple_GET_ITEM(entry, 5),
           *memory = PyTuple_GET_ITEM(entry, 6);
  bool fence = flags & FENCE;
  auto is = [&](const char* kind) { return PyUnicode_Check(memory) && PyUnicode_CompareWithASCIIString(memory, kind) == 0; };
  bool mem_read = is("read"), mem_write = is("write"), mem_both = is("both");
  if (memory == Py_None && PyTuple_GET_SIZE(used) == 0 && PyTuple_GET_SIZE(written) == 0 && !fence) return true;
  Ref reads(buffers_at(ops, used));
  if (reads.p == nullptr) return false;
  Ref writes(buffers_at(ops, written));
  if (writes.p == nullptr) return false;
  Ref touched(PyNumber_Or(reads.p, writes.p));
  if (touched.p == nullptr) return false;
  Ref all(pending_now(em));
  if (all.p == nullptr) return false;
  for (Py_ssize_t k = 0; k < PyList_GET_SIZE(all.p); k++) {
    PyObject* p = PyList_GET_ITEM(all.p, k);
    // clash = (p.writes & (reads | writes)) or (p.reads & writes)
    Ref pw(PyObject_GetAttr(p, s_writes));
    if (pw.p == nullptr) return false;
    int clash = meet(pw.p, touched.p);
    if (clash < 0) return false;
    if (!clash) {
      Ref pr(PyObject_GetAttr(p, s_reads));
      if (pr.p == nullptr) return false;
      clash = meet(pr.p, writes.p);
      if (clash < 0) return false;
    }
    // ordered = not (self.other_program or p.other_program): programs do not see each other's memory
    Ref other(get_attr(em, s_other_program));
    if (other.p == nullptr) return false;
    int unordered = PyObject_IsTrue(other.p);
    if (unordered < 0) return false;
    if (!unordered) {
      Ref po(PyObject_GetAttr(p, s_other_program));
      if (po.p == nullptr) return false;
      unordered = PyObject_IsTrue(po.p);
      if (unordered < 0) return false;
    }
    if (!unordered && (mem_read || mem_both || mem_write)) {
      Ref pm(PyObject_GetAttr(p, s_memory));
      if (pm.p == nullptr) return false;
      if (mem_read || mem_both) {  // a load must see an earlier store
        int eq = PyObject_RichCompareBool(pm.p, s_write, Py_EQ);
        if (eq < 0) return false;
        if (eq) clash = 1;
      }
      if (mem_write || mem_both) {  // a store must not overtake an earlier load of the same memory
        int eq = PyObject_RichCompareBool(pm.p, s_read, Py_EQ);
        if (eq < 0) return false;
        if (eq) clash = 1;
      }
    }
    if (fence) clash = 1;
    if (clash && !wait_c(em, p)) return false;
  }
  if (mem_read || mem_write) {  // while len(self.pending) >= self.queue_depth: self.wait(self.pending[0])
    for (;;) {
      Ref pending(get_attr(em, s_pending));
      if (pending.p == nullptr) return false;
      Py_ssize_t n = PyObject_Length(pending.p);
      if (n < 0) return false;
      Ref depth(get_attr(em, s_queue_depth));
      if (depth.p == nullptr) return false;
      Ref len(PyLong_FromSsize_t(n));
      if (len.p == nullptr) return false;
      int full = PyObject_RichCompareBool(len.p, depth.p, Py_GE);
      if (full < 0) return false;
      if (!full) break;
      Ref first(PySequence_GetItem(pending.p, 0));
      if (first.p == nullptr || !wait_c(em, first.p)) return false;
    }
  }
  return true;
}

// Emitter._track(mnemonic, row, operands): the DMA just emitted joins the pending list
bool track_c(PyObject* em, PyObject* entry, PyObject* ops) {
  Ref pending(get_attr(em, s_pending));
  if (pending.p == nullptr) return false;
  if (PyTuple_GET_SIZE(ops) < 1) {
    PyErr_SetString(PyExc_IndexError, "tuple index out of range");
    return false;
  }
  Ref w(buffers_at(ops, PyTuple_GET_ITEM(entry, 5)));
  if (w.p == nullptr) return false;
  Ref r(buffers_at(ops, PyTuple_GET_ITEM(entry, 4)));
  if (r.p == nullptr) return false;
  Ref other(get_attr(em, s_other_program));
  if (other.p == nullptr) return false;
  // _Pending(tok, writes, reads, DMA_MEMORY[mnemonic], other_program=self.other_program)
  PyObject* argv[] = {PyTuple_GET_ITEM(ops, 0), w.p, r.p, PyTuple_GET_ITEM(entry, 6), other.p};
  Ref p(PyObject_Vectorcall(g_pending_cls, argv, 4, k_other_program));
  if (p.p == nullptr) return false;
  if (PyList_CheckExact(pending.p)) return PyList_Append(pending.p, p.p) == 0;
  Ref done(PyObject_CallMethod(pending.p, "append", "O", p.p));
  return done.p != nullptr;
}

// the C methods above serve this emitter: the table's entry has their columns and the emitter's methods are the ones
// init_dma saw (the callers of wait among them: wait too)
bool dma_in_c(PyObject* em, PyObject* entry, PyObject* name, PyObject* fn) {
  return PyTuple_GET_SIZE(entry) >= 7 && own_method(em, name, fn) &&
         (name == s_track || own_method(em, s_wait, g_wait_py));
}

// the Python `emit` body for a known mnemonic with the right operand count (entry: the table's tuple)
PyObject* do_emit(PyObject* em, PyObject* mnemonic, PyObject* entry, PyObject* ops, PyObject* suffixes) {
  PyObject* row = PyTuple_GET_ITEM(entry, 0);
  long flags = PyLong_AsLong(PyTuple_GET_ITEM(entry, 2));
  if (flags == -1 && PyErr_Occurred()) return nullptr;
  Ref got;
  if (flags & BRANCH) {
    int busy = truth_of_attr(em, s_pending, got);
    if (busy < 0) return nullptr;
    if (busy) {  // self.wait_all(force=mnemonic == "halt"): nothing to wait for when nothing is pending
      if (dma_in_c(em, entry, s_wait_all, g_wait_all_py)) {
        if (!wait_all_c(em, flags & HALT)) return nullptr;
      } else {
        PyObject* argv[] = {em, (flags & HALT) ? Py_True : Py_False};
        Ref r(PyObject_VectorcallMethod(s_wait_all, argv, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, k_force));
        if (r.p == nullptr) return nullptr;
      }
    }
    int memo = truth_of_attr(em, s_remat, got);
    if (memo < 0) return nullptr;
    if (memo) {
      int clear = 1;
      if (flags & FORWARD) {  // operands[1] in self._placed
        Ref placed(get_attr(em, s_placed));
        if (placed.p == nullptr) return nullptr;
        clear = PySequence_Contains(placed.p, PyTuple_GET_ITEM(ops, 1));
        if (clear < 0) return nullptr;
      }
      if (clear) {
        if (PyDict_CheckExact(got.p)) {
          PyDict_Clear(got.p);
        } else {
          Ref r(PyObject_CallMethod(got.p, "clear", nullptr));
          if (r.p == nullptr) return nullptr;
        }
      }
    }
  } else if (!(flags & NO_HAZARD)) {
    int busy = truth_of_attr(em, s_pending, got);
    if (busy < 0) return nullptr;
    if (busy) {  // self._hazards(mnemonic, row, operands) returns at once when nothing is pending
      if (dma_in_c(em, entry, s_hazards, g_hazards_py)) {
        if (!hazards_c(em, entry, flags, ops)) return nullptr;
      } else {
        Ref r(call_method(em, s_hazards, mnemonic, row, ops));
        if (r.p == nullptr) return nullptr;
      }
    }
  }
  Ref sfx;
  if (PyTuple_CheckExact(suffixes)) {
    Py_INCREF(suffixes);
    sfx.reset(suffixes);
  } else {
    sfx.reset(PySequence_Tuple(suffixes));
    if (sfx.p == nullptr) return nullptr;
  }
  Ref loc(get_attr(em, s_loc));
  if (loc.p == nullptr) return nullptr;
  // PInst(mnemonic, tuple(suffixes), tuple(operands), self.loc): its dataclass __init__ sets the five fields in order
  PyTypeObject* pinst_type = (PyTypeObject*)g_pinst;
  Ref inst(pinst_type->tp_new(pinst_type, empty_tuple, nullptr));
  if (inst.p == nullptr || f_mnemonic.set(inst.p, mnemonic) < 0 ||
      f_suffixes.set(inst.p, sfx.p) < 0 || f_operands.set(inst.p, ops) < 0 ||
      f_loc.set(inst.p, loc.p) < 0 ||
      f_extra_uses.set(inst.p, empty_tuple) < 0)
    return nullptr;
  Ref code(get_attr(em, s_code));
  if (code.p == nullptr) return nullptr;
  if (PyList_CheckExact(code.p)) {
    if (PyList_Append(code.p, inst.p) < 0) return nullptr;
  } else {
    Ref r(PyObject_CallMethod(code.p, "append", "O", inst.p));
    if (r.p == nullptr) return nullptr;
  }
  PyObject* written = PyTuple_GET_ITEM(entry, 3);
  Ref version;
  for (Py_ssize_t k = 0, n = PyTuple_GET_SIZE(written); k < n; k++) {
    Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(written, k));
    if (i == -1 && PyErr_Occurred()) return nullptr;
    PyObject* v = PyTuple_GET_ITEM(ops, i);
    if ((PyObject*)Py_TYPE(v) != g_vreg) continue;
    if (version.p == nullptr) {  // self._version[v] = self._version.get(v, 0) + 1
      version.reset(get_attr(em, s_version));
      if (version.p == nullptr) return nullptr;
      if (!PyDict_Check(version.p)) {
        PyErr_SetString(PyExc_TypeError, "Emitter._version must be a dict");
        return nullptr;
      }
    }
    PyObject* was = PyDict_GetItemWithError(version.p, v);
    if (was == nullptr && PyErr_Occurred()) return nullptr;
    Ref now(was == nullptr ? PyLong_FromLong(1) : PyNumber_Add(was, one));
    if (now.p == nullptr || PyDict_SetItem(version.p, v, now.p) < 0) return nullptr;
  }
  if (flags & DMA) {
    if (dma_in_c(em, entry, s_track, g_track_py)) {
      if (!track_c(em, entry, ops)) return nullptr;
    } else {
      Ref r(call_method(em, s_track, mnemonic, row, ops));
      if (r.p == nullptr) return nullptr;
    }
  }
  return inst.release();
}

// the suffixes (and hint) keywords; false: another keyword (the Python method then raises its TypeError)
bool keywords(PyObject* const* args, size_t nargs, PyObject* kwnames, PyObject** suffixes, PyObject** hint) {
  if (kwnames == nullptr) return true;
  for (Py_ssize_t k = 0, n = PyTuple_GET_SIZE(kwnames); k < n; k++) {
    PyObject* name = PyTuple_GET_ITEM(kwnames, k);
    if (name == s_suffixes || PyUnicode_Compare(name, s_suffixes) == 0) {
      *suffixes = args[nargs + k];
    } else if (hint != nullptr && (name == s_hint || PyUnicode_Compare(name, s_hint) == 0)) {
      *hint = args[nargs + k];
    } else {
      PyErr_Clear();
      return false;
    }
  }
  return true;
}

// the table's entry of a mnemonic with this many operands (borrowed), or nullptr: go to the Python method
PyObject* entry_of(PyObject* mnemonic, Py_ssize_t nops) {
  if (!PyUnicode_CheckExact(mnemonic)) return nullptr;
  PyObject* entry = PyDict_GetItemWithError(g_table, mnemonic);
  if (entry == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) < 4) return nullptr;
  Py_ssize_t want = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 1));
  if (want == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return nullptr;
  }
  return want == nops ? entry : nullptr;
}

PyObject* tuple_of(PyObject* const* items, Py_ssize_t n, PyObject* first) {
  Py_ssize_t off = first != nullptr;
  PyObject* t = PyTuple_New(n + off);
  if (t == nullptr) return nullptr;
  if (first != nullptr) {
    Py_INCREF(first);
    PyTuple_SET_ITEM(t, 0, first);
  }
  for (Py_ssize_t k = 0; k < n; k++) {
    Py_INCREF(items[k]);
    PyTuple_SET_ITEM(t, k + off, items[k]);
  }
  return t;
}

// Core.emit(mnemonic, *operands, suffixes=()): Emitter.emit
PyObject* core_emit(PyObject* self, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) {
  size_t nargs = PyVectorcall_NARGS(nargsf);
  Ref em(emitter_of((Core*)self));
  if (em.p == nullptr) return nullptr;
  PyObject* suffixes = empty_tuple;
  PyObject* entry = nullptr;
  if (nargs >= 1 && keywords(args, nargs, kwnames, &suffixes, nullptr)) entry = entry_of(args[0], nargs - 1);
  if (entry == nullptr) return delegate(g_emit_py, em.p, args, nargs, kwnames);
  Ref ops(tuple_of(args + 1, nargs - 1, nullptr));
  if (ops.p == nullptr) return nullptr;
  return do_emit(em.p, args[0], entry, ops.p, suffixes);
}

// the key of an immediate's value x: ("f", struct.pack("<d", x)) for a float, else ("i", int(x))
PyObject* value_key(PyObject* x) {
  if (PyFloat_Check(x)) {
    char bits[8];
    if (PyFloat_Pack8(PyFloat_AS_DOUBLE(x), bits, 1) < 0) return nullptr;
    Ref b(PyBytes_FromStringAndSize(bits, 8));
    if (b.p == nullptr) return nullptr;
    return PyTuple_Pack(2, s_f, b.p);
  }
  Ref i(PyLong_CheckExact(x) ? (Py_INCREF(x), x) : PyNumber_Long(x));
  if (i.p == nullptr) return nullptr;
  return PyTuple_Pack(2, s_i, i.p);
}

// imm_key(v): the key of v.value; the Python function for what is not exactly an Imm
PyObject* imm_key(PyObject* v) {
  if ((PyObject*)Py_TYPE(v) != g_imm) return PyObject_CallOneArg(g_imm_key, v);
  Ref x(get_attr(v, s_value));
  if (x.p == nullptr) return nullptr;
  return value_key(x.p);
}

// A fresh register written by one emitted instruction (mnemonic, the register, *operands); kept under key in
// memo first when memo is given (a rematerialisation's miss)
PyObject* emit_fresh(PyObject* em, PyObject* mnemonic, PyObject* entry, PyObject* const* operands, Py_ssize_t n,
                     PyObject* hint, PyObject* suffixes, PyObject* memo, PyObject* key) {
  Ref r(new_vreg(hint));
  if (r.p == nullptr || (memo != nullptr && PyDict_SetItem(memo, key, r.p) < 0)) return nullptr;
  Ref ops(tuple_of(operands, n, r.p));
  if (ops.p == nullptr) return nullptr;
  Ref inst(do_emit(em, mnemonic, entry, ops.p, suffixes));
  if (inst.p == nullptr) return nullptr;
  return r.release();
}

// A rematerialisation's hit: the kept register (a new reference), noted in the emitter's shared set
PyObject* shared_hit(PyObject* em, PyObject* got) {
  Ref shared(get_attr(em, s_shared));
  if (shared.p == nullptr) return nullptr;
  if (PySet_CheckExact(shared.p)) {
    if (PySet_Add(shared.p, got) < 0) return nullptr;
  } else {
    Ref done(PyObject_CallMethod(shared.p, "add", "O", got));
    if (done.p == nullptr) return nullptr;
  }
  Py_INCREF(got);
  return got;
}

// Core.rematerialised(mnemonic, *operands, suffixes=(), hint=""): Emitter.rematerialised
PyObject* core_remat(PyObject* self, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) {
  size_t nargs = PyVectorcall_NARGS(nargsf);
  Ref em(emitter_of((Core*)self));
  if (em.p == nullptr) return nullptr;
  PyObject* suffixes = empty_tuple;
  PyObject* hint = empty_str;
  PyObject* entry = nullptr;
  // + 1: the fresh register in front of the operands
  if (nargs >= 1 && keywords(args, nargs, kwnames, &suffixes, &hint)) entry = entry_of(args[0], nargs);
  Ref memo(entry != nullptr ? get_attr(em.p, s_remat) : nullptr);
  if (entry != nullptr && memo.p == nullptr) return nullptr;
  if (entry == nullptr || (memo.p != Py_None && !PyDict_CheckExact(memo.p)))
    return delegate(g_remat_py, em.p, args, nargs, kwnames);
  PyObject* mnemonic = args[0];
  const Py_ssize_t n = (Py_ssize_t)nargs - 1;
  PyObject* const* operands = args + 1;
  if (memo.p == Py_None)  // every use computes its own
    return emit_fresh(em.p, mnemonic, entry, operands, n, hint, suffixes, nullptr, nullptr);
  // key: (mnemonic, suffixes, *((v, version) for a register, imm_key(v) for anything else))
  Ref key(PyTuple_New(n + 2));
  if (key.p == nullptr) return nullptr;
  Py_INCREF(mnemonic);
  PyTuple_SET_ITEM(key.p, 0, mnemonic);
  Py_INCREF(suffixes);
  PyTuple_SET_ITEM(key.p, 1, suffixes);
  Ref version;
  for (Py_ssize_t k = 0; k < n; k++) {
    PyObject* v = operands[k];
    PyObject* item;
    if ((PyObject*)Py_TYPE(v) == g_vreg) {
      if (version.p == nullptr) {
        version.reset(get_attr(em.p, s_version));
        if (version.p == nullptr) return nullptr;
        if (!PyDict_Check(version.p)) {
          PyErr_SetString(PyExc_TypeError, "Emitter._version must be a dict");
          return nullptr;
        }
      }
      PyObject* was = PyDict_GetItemWithError(version.p, v);
      if (was == nullptr) {
        if (PyErr_Occurred()) return nullptr;
        was = zero;
      }
      item = PyTuple_Pack(2, v, was);
    } else {
      item = imm_key(v);
    }
    if (item == nullptr) return nullptr;
    PyTuple_SET_ITEM(key.p, k + 2, item);
  }
  PyObject* got = PyDict_GetItemWithError(memo.p, key.p);
  if (got == nullptr && PyErr_Occurred()) return nullptr;
  if (got == nullptr || got == Py_None)
    return emit_fresh(em.p, mnemonic, entry, operands, n, hint, suffixes, memo.p, key.p);
  return shared_hit(em.p, got);
}

// Core.li(value, hint=""): Emitter.li, rematerialised("s.li", Imm(value), hint=hint), the Imm made only when the block
// has no such register yet
PyObject* core_li(PyObject* self, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) {
  size_t nargs = PyVectorcall_NARGS(nargsf);
  Ref em(emitter_of((Core*)self));
  if (em.p == nullptr) return nullptr;
  PyObject* hint = empty_str;
  bool plain = nargs >= 1 && nargs <= 2 && (kwnames == nullptr || (nargs == 1 && PyTuple_GET_SIZE(kwnames) == 1 &&
                                                                   PyUnicode_Compare(PyTuple_GET_ITEM(kwnames, 0), s_hint) == 0));
  if (PyErr_Occurred()) return nullptr;
  if (!plain) return delegate(g_li_py, em.p, args, nargs, kwnames);
  if (nargs == 2 || kwnames != nullptr) hint = args[1];
  Ref memo(get_attr(em.p, s_remat));
  if (memo.p == nullptr) return nullptr;
  if (PyDict_CheckExact(memo.p)) {  // a hit: the register, no Imm made
    Ref key(PyTuple_New(3));
    if (key.p == nullptr) return nullptr;
    PyObject* vk = value_key(args[0]);
    if (vk == nullptr) return nullptr;
    Py_INCREF(s_li);
    PyTuple_SET_ITEM(key.p, 0, s_li);
    Py_INCREF(empty_tuple);
    PyTuple_SET_ITEM(key.p, 1, empty_tuple);
    PyTuple_SET_ITEM(key.p, 2, vk);
    PyObject* got = PyDict_GetItemWithError(memo.p, key.p);
    if (got == nullptr && PyErr_Occurred()) return nullptr;
    if (got != nullptr && got != Py_None) return shared_hit(em.p, got);
  }
  Ref imm(PyObject_CallOneArg(g_imm, args[0]));
  if (imm.p == nullptr) return nullptr;
  PyObject* argv[] = {s_li, imm.p, hint};
  return core_remat(self, argv, 2, k_hint);
}

// ---- dma_operands.materialize: an affine expression as a scalar register -------------------------------------------
// set by init_materialize(): the node classes walked here (exact types) and the Python function for the others
PyObject *g_const, *g_val, *g_carried, *g_materialize_py;
PyObject* g_binary[5];            // Add, Sub, Mul, Min, Max
PyObject* g_binary_mnemonic[5];   // s.add, s.sub, s.mul, s.mins, s.maxs
PyObject *s_em, *s_reg, *s_companions, *s_a, *s_b, *s_arg, *s_k, *s_li_attr, *s_rematerialised, *k_suffixes,
    *i64_suffix;
// set by init_materialize() when given: Ctx, its `reg` (what ctx_reg checks), the bindings Const and ArgRef
PyObject *g_ctx, *g_ctx_reg, *g_binding_const, *g_argref;
PyObject *s_env, *s_index, *s_s_arg;

// init_materialize(Const, Val, Carried, (Add, Sub, Mul, Min, Max), materialize_py[, (Ctx, Const, ArgRef)]) -> None
PyObject* init_materialize(PyObject*, PyObject* args) {
  PyObject *c, *v, *carried, *binary, *py, *ctx_classes = nullptr;
  if (!PyArg_ParseTuple(args, "OOOO!O|O!", &c, &v, &carried, &PyTuple_Type, &binary, &py, &PyTuple_Type, &ctx_classes))
    return nullptr;
  if (ctx_classes != nullptr && (PyTuple_GET_SIZE(ctx_classes) != 3 || !PyType_Check(PyTuple_GET_ITEM(ctx_classes, 0)))) {
    PyErr_SetString(PyExc_TypeError, "init_materialize: (Ctx, Const, ArgRef)");
    return nullptr;
  }
  if (PyTuple_GET_SIZE(binary) != 5) {
    PyErr_SetString(PyExc_TypeError, "init_materialize: five binary node classes");
    return nullptr;
  }
  if (!strings()) return nullptr;
  const char* names[] = {"s.add", "s.sub", "s.mul", "s.mins", "s.maxs"};
  for (int k = 0; k < 5; k++) {
    PyObject* cls = PyTuple_GET_ITEM(binary, k);
    Py_INCREF(cls);
    Py_XSETREF(g_binary[k], cls);
    if (g_binary_mnemonic[k] == nullptr && (g_binary_mnemonic[k] = PyUnicode_InternFromString(names[k])) == nullptr)
      return nullptr;
  }
  PyObject** slots[] = {&g_const, &g_val, &g_carried, &g_materialize_py};
  PyObject* values[] = {c, v, carried, py};
  for (size_t k = 0; k < sizeof(values) / sizeof(*values); k++) {
    Py_INCREF(values[k]);
    Py_XSETREF(*slots[k], values[k]);
  }
  struct {
    PyObject** at;
    const char* text;
  } all[] = {{&s_em, "em"}, {&s_reg, "reg"}, {&s_companions, "companions"}, {&s_a, "a"},        {&s_b, "b"},
             {&s_arg, "arg"}, {&s_k, "k"},   {&s_li_attr, "li"},          {&s_rematerialised, "rematerialised"},
             {&s_env, "env"}, {&s_index, "index"}, {&s_s_arg, "s.arg"}};
  for (auto& x : all) {
    if (*x.at == nullptr && (*x.at = PyUnicode_InternFromString(x.text)) == nullptr) return nullptr;
  }
  if (k_suffixes == nullptr && (k_suffixes = PyTuple_Pack(1, s_suffixes)) == nullptr) return nullptr;
  if (i64_suffix == nullptr) {
    Ref i64(PyUnicode_InternFromString("i64"));
    if (i64.p == nullptr || (i64_suffix = PyTuple_Pack(1, i64.p)) == nullptr) return nullptr;
  }
  // Ctx.reg inlined for a Val while Ctx's `reg` is the one seen here (ctx_reg)
  PyObject* ctx = ctx_classes != nullptr ? PyTuple_GET_ITEM(ctx_classes, 0) : nullptr;
  PyObject* reg = ctx != nullptr ? _PyType_Lookup((PyTypeObject*)ctx, s_reg) : nullptr;
  PyObject** cslots[] = {&g_ctx, &g_ctx_reg, &g_binding_const, &g_argref};
  PyObject* cvalues[] = {reg != nullptr ? ctx : nullptr, reg, reg != nullptr ? PyTuple_GET_ITEM(ctx_classes, 1) : nullptr,
                         reg != nullptr ? PyTuple_GET_ITEM(ctx_classes, 2) : nullptr};
  for (size_t k = 0; k < sizeof(cvalues) / sizeof(*cvalues); k++) {
    Py_XINCREF(cvalues[k]);
    Py_XSETREF(*cslots[k], cvalues[k]);
  }
  Py_RETURN_NONE;
}

// ctx.reg(value) as Ctx.reg does it, without its frame: the binding in ctx.env; a register is itself, a Const its
// ctx.li(value), an ArgRef ctx.em.rematerialised("s.arg", Imm(index), hint="arg"); anything else (or another Ctx, a
// Ctx whose `reg` is another, an env that is not a dict) through the method
PyObject* ctx_reg(PyObject* ctx, PyObject* value) {
  if (g_ctx == nullptr || (PyObject*)Py_TYPE(ctx) != g_ctx || _PyType_Lookup(Py_TYPE(ctx), s_reg) != g_ctx_reg)
    return PyObject_CallMethodOneArg(ctx, s_reg, value);
  Ref env(get_attr(ctx, s_env));
  if (env.p == nullptr) return nullptr;
  if (!PyDict_CheckExact(env.p)) return PyObject_CallMethodOneArg(ctx, s_reg, value);
  PyObject* b = PyDict_GetItemWithError(env.p, value);
  if (b == nullptr && PyErr_Occurred()) return nullptr;
  PyObject* t = b != nullptr ? (PyObject*)Py_TYPE(b) : nullptr;
  if (t == g_vreg) return Py_NewRef(b);
  if (t == g_binding_const) {
    Ref v(get_attr(b, s_value));
    if (v.p == nullptr) return nullptr;
    return PyObject_CallMethodOneArg(ctx, s_li_attr, v.p);
  }
  if (t == g_argref) {
    Ref index(get_attr(b, s_index));
    if (index.p == nullptr) return nullptr;
    Ref imm(PyObject_CallOneArg(g_imm, index.p));
    if (imm.p == nullptr) return nullptr;
    Ref em(get_attr(ctx, s_em));
    if (em.p == nullptr) return nullptr;
    Ref remat(get_attr(em.p, s_rematerialised));
    if (remat.p == nullptr) return nullptr;
    PyObject* argv[] = {s_s_arg, imm.p, s_arg};
    return PyObject_Vectorcall(remat.p, argv, 2, k_hint);
  }
  return PyObject_CallMethodOneArg(ctx, s_reg, value);
}

// materialize(ctx, e, memo) as dma_operands.materialize_py does it: the memo's register, else Const -> ctx.li(int(v)),
// Val -> ctx.reg(v), Carried -> ctx.companions[arg][k], Add / Sub / Mul / Min / Max -> the operands' registers (a, then
// b) into ctx.em.rematerialised(mnemonic, ra, rb, suffixes=("i64",)), kept in the memo; any other node (or a subclass)
// through materialize_py, which keeps its own in the memo
PyObject* materialize_rec(PyObject* ctx, PyObject* e, PyObject* memo, Ref& remat) {
  PyObject* got = PyDict_GetItemWithError(memo, e);
  if (got != nullptr && got != Py_None) return Py_NewRef(got);
  if (PyErr_Occurred()) return nullptr;
  PyObject* t = (PyObject*)Py_TYPE(e);
  Ref r;
  if (t == g_const) {
    Ref v(get_attr(e, s_value));
    if (v.p == nullptr) return nullptr;
    Ref i(PyNumber_Long(v.p));
    if (i.p == nullptr) return nullptr;
    r.reset(PyObject_CallMethodOneArg(ctx, s_li_attr, i.p));
  } else if (t == g_val) {
    Ref v(get_attr(e, s_value));
    if (v.p == nullptr) return nullptr;
    r.reset(ctx_reg(ctx, v.p));
  } else if (t == g_carried) {
    Ref companions(get_attr(ctx, s_companions));
    Ref arg(get_attr(e, s_arg));
    Ref k(get_attr(e, s_k));
    if (companions.p == nullptr || arg.p == nullptr || k.p == nullptr) return nullptr;
    Ref regs(PyObject_GetItem(companions.p, arg.p));
    if (regs.p == nullptr) return nullptr;
    r.reset(PyObject_GetItem(regs.p, k.p));
  } else {
    int which = -1;
    for (int n = 0; n < 5; n++) {
      if (t == g_binary[n]) which = n;
    }
    if (which < 0) {
      PyObject* argv[] = {ctx, e, memo};
      return PyObject_Vectorcall(g_materialize_py, argv, 3, nullptr);
    }
    if (Py_EnterRecursiveCall(" while materialising an access expression")) return nullptr;  // as deep as Python
    Ref a(get_attr(e, s_a));
    Ref ra(a.p == nullptr ? nullptr : materialize_rec(ctx, a.p, memo, remat));
    Ref b(ra.p == nullptr ? nullptr : get_attr(e, s_b));
    Ref rb(b.p == nullptr ? nullptr : materialize_rec(ctx, b.p, memo, remat));
    Py_LeaveRecursiveCall();
    if (rb.p == nullptr) return nullptr;
    if (remat.p == nullptr) {  // s_op: ctx.em.rematerialised
      Ref em(get_attr(ctx, s_em));
      if (em.p == nullptr) return nullptr;
      remat.reset(get_attr(em.p, s_rematerialised));
      if (remat.p == nullptr) return nullptr;
    }
    PyObject* argv[] = {g_binary_mnemonic[which], ra.p, rb.p, i64_suffix};
    r.reset(PyObject_Vectorcall(remat.p, argv, 3, k_suffixes));
  }
  if (r.p == nullptr || PyDict_SetItem(memo, e, r.p) < 0) return nullptr;
  return r.release();
}

PyObject* materialize(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (g_materialize_py == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "_emit.init_materialize was not called");
    return nullptr;
  }
  if (nargs != 3 || !PyDict_CheckExact(args[2])) {  // the Python function says what is wrong
    return PyObject_Vectorcall(g_materialize_py, args, nargs, nullptr);
  }
  Ref remat;
  return materialize_rec(args[0], args[1], args[2], remat);
}

// vreg(hint=""): VReg(hint), made as the compiled methods make their registers (new_vreg)
PyObject* vreg(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (g_vreg == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "_emit.init was not called");
    return nullptr;
  }
  if (nargs > 1) return PyObject_Vectorcall(g_vreg, args, nargs, nullptr);  // (VReg's own error)
  return new_vreg(nargs == 1 ? args[0] : empty_str);
}

PyObject* core_new(PyTypeObject* type, PyObject* args, PyObject* kwds) {
  PyObject* emitter;
  if (!PyArg_ParseTuple(args, "O:Core", &emitter)) return nullptr;
  if (g_table == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "_emit.init was not called");
    return nullptr;
  }
  Ref ref(PyWeakref_NewRef(emitter, nullptr));
  if (ref.p == nullptr) return nullptr;
  Core* self = (Core*)type->tp_alloc(type, 0);
  if (self == nullptr) return nullptr;
  self->emitter = ref.release();
  return (PyObject*)self;
}

void core_dealloc(PyObject* self) {
  Py_XDECREF(((Core*)self)->emitter);
  Py_TYPE(self)->tp_free(self);
}

PyMethodDef core_methods[] = {
    {"emit", (PyCFunction)(void (*)(void))core_emit, METH_FASTCALL | METH_KEYWORDS,
     "emit(mnemonic, *operands, suffixes=()): Emitter.emit in C"},
    {"rematerialised", (PyCFunction)(void (*)(void))core_remat, METH_FASTCALL | METH_KEYWORDS,
     "rematerialised(mnemonic, *operands, suffixes=(), hint=''): Emitter.rematerialised in C"},
    {"li", (PyCFunction)(void (*)(void))core_li, METH_FASTCALL | METH_KEYWORDS, "li(value, hint=''): Emitter.li in C"},
    {nullptr, nullptr, 0, nullptr},
};

PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(nullptr, 0) "triton_plate_backend.passes._emit.Core", /* tp_name */
    sizeof(Core),                                                               /* tp_basicsize */
};

PyMethodDef methods[] = {
    {"init_materialize", init_materialize, METH_VARARGS,
     "init_materialize(Const, Val, Carried, (Add, Sub, Mul, Min, Max), materialize_py): the classes materialize "
     "walks"},
    {"materialize", (PyCFunction)(void (*)(void))materialize, METH_FASTCALL,
     "materialize(ctx, e, memo): dma_operands.materialize in C"},
    {"vreg", (PyCFunction)(void (*)(void))vreg, METH_FASTCALL,
     "vreg(hint=''): a fresh VReg, without VReg.__init__'s frame while it is the one init() saw"},
    {"init_dma", init_dma, METH_VARARGS,
     "init_dma(Emitter._hazards, Emitter._track, Emitter.wait, Emitter.wait_all, _Pending): what emit's DMA "
     "bookkeeping in C reads"},
    {"init", init, METH_VARARGS,
     "init(table, PInst, VReg, Imm, imm_key, Emitter.emit, Emitter.rematerialised, Emitter.li): what Core's methods "
     "read"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_emit",
                      "Emitter.emit and Emitter.rematerialised in C (passes/emitter.py)", -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit__emit(void) {
  CoreType.tp_dealloc = core_dealloc;
  CoreType.tp_flags = Py_TPFLAGS_DEFAULT;
  CoreType.tp_doc = "Core(emitter): the emitter's emit and rematerialised in C (a weak reference to it)";
  CoreType.tp_methods = core_methods;
  CoreType.tp_new = core_new;
  if (PyType_Ready(&CoreType) < 0) return nullptr;
  PyObject* m = PyModule_Create(&module);
  if (m == nullptr) return nullptr;
  Py_INCREF(&CoreType);
  if (PyModule_AddObject(m, "Core", (PyObject*)&CoreType) < 0) {
    Py_DECREF(&CoreType);
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
