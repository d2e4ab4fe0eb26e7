// triton_plate_backend.ir._irwalk: `Op.walk` (ir/core.py) as a C iterator. The Python generator is the reference:
//
//     def walk(self):
//         yield self
//         for region in self.regions:
//             for block in region.blocks:
//                 for op in list(block.ops):
//                     if op.regions:
//                         yield from op.walk()
//                     else:
//                         yield op
//
// and this iterator reads the same attributes at the same points: an op's `regions` when the walk goes on after
// yielding it (an op with regions is walked as its own generator would be), each region's `blocks` when the walk
// reaches that region, a block's `ops` copied when the walk reaches that block, `op.regions`' truth when the walk
// reaches that op; the regions and blocks lists are iterated live, as `for` does. A compile walks its IR a few
// hundred times (every pass, the demand and liveness analyses, the prefetcher's candidates): in Python each op
// came out through one generator frame per level of nesting. tests/test_compiled_walk_ir.py compares the two,
// with the IR changed between steps.
#include <Python.h>

#include <optional>
#include <vector>

#include "ptr_table.h"

namespace {

PyObject *s_regions, *s_blocks, *s_ops;

struct Frame {
  PyObject* op;       // whose regions this frame walks
  PyObject* regions;  // iterator over op.regions (nullptr: not read yet)
  PyObject* blocks;   // iterator over the current region's blocks (nullptr: take the next region)
  PyObject* ops;      // the current block's ops, copied (a list; nullptr: take the next block)
  Py_ssize_t next;    // index into ops
};

struct Walk {
  PyObject_HEAD std::vector<Frame>* stack;
  PyObject* first;  // the root, until it is yielded
  bool running;     // inside walk_next (an attribute read may run Python code that asks this walk again)
};

PyTypeObject WalkType = {PyVarObject_HEAD_INIT(nullptr, 0) "triton_plate_backend.ir._irwalk.Walk", sizeof(Walk)};

void drop(Frame& f) {
  Py_CLEAR(f.op);
  Py_CLEAR(f.regions);
  Py_CLEAR(f.blocks);
  Py_CLEAR(f.ops);
}

void clear_stack(Walk* w) {
  if (w->stack != nullptr) {
    for (Frame& f : *w->stack) drop(f);
    w->stack->clear();
  }
}

PyObject* walk_new(PyObject* op) {
  Walk* w = PyObject_GC_New(Walk, &WalkType);
  if (w == nullptr) return nullptr;
  w->stack = new std::vector<Frame>();
  w->stack->reserve(8);
  Py_INCREF(op);
  w->first = op;
  w->running = false;
  w->stack->push_back(Frame{Py_NewRef(op), nullptr, nullptr, nullptr, 0});
  PyObject_GC_Track((PyObject*)w);
  return (PyObject*)w;
}

void walk_dealloc(PyObject* self) {
  Walk* w = (Walk*)self;
  PyObject_GC_UnTrack(self);
  clear_stack(w);
  delete w->stack;
  Py_CLEAR(w->first);
  PyObject_GC_Del(self);
}

int walk_traverse(PyObject* self, visitproc visit, void* arg) {
  Walk* w = (Walk*)self;
  Py_VISIT(w->first);
  if (w->stack != nullptr) {
    for (Frame& f : *w->stack) {
      Py_VISIT(f.op);
      Py_VISIT(f.regions);
      Py_VISIT(f.blocks);
      Py_VISIT(f.ops);
    }
  }
  return 0;
}

int walk_clear(PyObject* self) {
  Walk* w = (Walk*)self;
  clear_stack(w);
  Py_CLEAR(w->first);
  return 0;
}

PyObject* walk_step(Walk* w);

// the next op of the walk, nullptr at its end (no error set) or on an error (the walk is then over); asked again
// from inside (a property read by the walk that walks on), ValueError, as a generator already executing raises
PyObject* walk_next(PyObject* self) {
  Walk* w = (Walk*)self;
  if (w->running) {
    PyErr_SetString(PyExc_ValueError, "generator already executing");
    return nullptr;
  }
  w->running = true;
  PyObject* op = walk_step(w);
  w->running = false;
  return op;
}

PyObject* walk_step(Walk* w) {
  if (w->first != nullptr) {
    PyObject* op = w->first;
    w->first = nullptr;
    return op;  // the reference it held
  }
  std::vector<Frame>& stack = *w->stack;
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.regions == nullptr) {
      PyObject* regions = PyObject_GetAttr(f.op, s_regions);
      if (regions == nullptr) break;
      f.regions = PyObject_GetIter(regions);
      Py_DECREF(regions);
      if (f.regions == nullptr) break;
    }
    if (f.blocks == nullptr) {
      PyObject* region = PyIter_Next(f.regions);
      if (region == nullptr) {
        if (PyErr_Occurred()) break;
        drop(f);
        stack.pop_back();
        continue;
      }
      PyObject* blocks = PyObject_GetAttr(region, s_blocks);
      Py_DECREF(region);
      if (blocks == nullptr) break;
      f.blocks = PyObject_GetIter(blocks);
      Py_DECREF(blocks);
      if (f.blocks == nullptr) break;
    }
    if (f.ops == nullptr) {
      PyObject* block = PyIter_Next(f.blocks);
      if (block == nullptr) {
        if (PyErr_Occurred()) break;
        Py_CLEAR(f.blocks);
        continue;
      }
      PyObject* ops = PyObject_GetAttr(block, s_ops);
      Py_DECREF(block);
      if (ops == nullptr) break;
      f.ops = PySequence_List(ops);
      Py_DECREF(ops);
      if (f.ops == nullptr) break;
      f.next = 0;
    }
    if (f.next >= PyList_GET_SIZE(f.ops)) {
      Py_CLEAR(f.ops);
      continue;
    }
    PyObject* op = PyList_GET_ITEM(f.ops, f.next);
    f.next++;
    Py_INCREF(op);
    PyObject* regions = PyObject_GetAttr(op, s_regions);
    int nested = regions == nullptr ? -1 : PyObject_IsTrue(regions);
    Py_XDECREF(regions);
    if (nested < 0) {
      Py_DECREF(op);
      break;
    }
    if (nested) stack.push_back(Frame{Py_NewRef(op), nullptr, nullptr, nullptr, 0});  // `f` is stale from here
    return op;
  }
  clear_stack(w);  // the end, or an error: a generator that raised is over too
  return nullptr;
}

PyObject* walk_method(PyObject* self, PyObject*) { return walk_new(self); }

PyMethodDef walk_def = {"walk", walk_method, METH_NOARGS,
                        "Pre-order walk of this op and every op nested in its regions (ir/core.py Op.walk, in C)."};

PyObject* make_walk_method(PyObject*, PyObject* cls) {
  if (!PyType_Check(cls)) {
    PyErr_SetString(PyExc_TypeError, "walk_method takes a class");
    return nullptr;
  }
  return PyDescr_NewMethod((PyTypeObject*)cls, &walk_def);
}

PyObject* walk_function(PyObject*, PyObject* op) { return walk_new(op); }

// ---- sound(roots, facts, ISOLATED, TERMINATORS): ir/verify.py's checks on the common case ----------------------
// True only where `verify` finds nothing: every check `_Verifier` makes on an op, a single-block region and a block,
// in C; the region contracts (facts' rule) called as the Python functions. Anything else (a multi-block region, a
// successor, an operand or a result index that is not what IR holds, an error from any read) answers False, and
// verify then runs the Python walk, which raises what it raises. facts: name -> (operands min, max or -1, results
// min, max or -1, parents, rule or None), verify.py's `_FACTS` (vocabulary.OPS with REGION_RULES).
PyObject *s_operands, *s_results, *s_owner, *s_index, *s_parent, *s_name, *s_args, *s_successors;

// a plain attribute (the IR classes keep theirs in the instance dict, a Value in its slots): PyObject_GetAttr
PyObject* attr(PyObject* o, PyObject* name) { return PyObject_GetAttr(o, name); }

// pointer -> how many enclosing scopes hold it (borrowed keys: the IR holds them)
struct Visible {
  plate_ptr_table::PtrTable<int, 0> count{128};  // 256 slots
  std::vector<PyObject*> stack;  // in the order added, to take them off at a scope's end
  void add(PyObject* v) {
    count.at(v)++;
    stack.push_back(v);
  }
  bool has(PyObject* v) const { return count.find(v) > 0; }
  void pop_to(size_t n) {
    while (stack.size() > n) {
      count.at(stack.back())--;
      stack.pop_back();
    }
  }
};

// a Value's hash and equality are object's own: `v in visible` is an identity test
bool by_identity(PyObject* o) {
  PyTypeObject* t = Py_TYPE(o);
  return t->tp_hash == PyBaseObject_Type.tp_hash && t->tp_richcompare == PyBaseObject_Type.tp_richcompare;
}

struct Sound {
  PyObject *facts, *isolated, *terminators;
  // -1: an error or a case left to Python (the caller answers False); 0: sound so far
  int op(PyObject* op, Visible& vis);
  int block(PyObject* block, PyObject* region, PyObject* owner_name, Visible& vis);
};

// an exact list attribute (a borrowed item source), else nullptr: left to Python
PyObject* list_attr(PyObject* o, PyObject* name) {
  PyObject* v = attr(o, name);
  if (v == nullptr) return nullptr;
  if (!PyList_CheckExact(v)) {
    Py_DECREF(v);
    return nullptr;
  }
  return v;
}

bool count_ok(Py_ssize_t n, PyObject* lo, PyObject* hi) {
  long l = PyLong_AsLong(lo), h = PyLong_AsLong(hi);
  if ((l == -1 || h == -1) && PyErr_Occurred()) return false;
  return n >= l && (h < 0 || n <= h);
}

int Sound::op(PyObject* op, Visible& vis) {
  PyObject* operands = list_attr(op, s_operands);
  if (operands == nullptr) return -1;
  for (Py_ssize_t k = 0; k < PyList_GET_SIZE(operands); k++) {
    PyObject* v = PyList_GET_ITEM(operands, k);
    if (!by_identity(v) || !vis.has(v)) {
      Py_DECREF(operands);
      return -1;
    }
  }
  Py_ssize_t n_operands = PyList_GET_SIZE(operands);
  Py_DECREF(operands);
  PyObject* results = list_attr(op, s_results);
  if (results == nullptr) return -1;
  Py_ssize_t n_results = PyList_GET_SIZE(results);
  for (Py_ssize_t k = 0; k < n_results; k++) {  // r.owner is op and r.index == k
    PyObject* r = PyList_GET_ITEM(results, k);
    PyObject* owner = attr(r, s_owner);
    PyObject* index = owner != nullptr ? attr(r, s_index) : nullptr;
    bool ok = owner == op && index != nullptr && PyLong_CheckExact(index) && PyLong_AsSsize_t(index) == k;
    Py_XDECREF(owner);
    Py_XDECREF(index);
    if (!ok) {
      Py_DECREF(results);
      return -1;
    }
  }
  Py_DECREF(results);
  PyObject* name = attr(op, s_name);
  if (name == nullptr) return -1;
  PyObject* known = PyDict_GetItemWithError(facts, name);  // (borrowed)
  if (known == nullptr && PyErr_Occurred()) {
    Py_DECREF(name);
    return -1;
  }
  if (known != nullptr) {
    if (!PyTuple_CheckExact(known) || PyTuple_GET_SIZE(known) != 6 ||
        !count_ok(n_operands, PyTuple_GET_ITEM(known, 0), PyTuple_GET_ITEM(known, 1)) ||
        !count_ok(n_results, PyTuple_GET_ITEM(known, 2), PyTuple_GET_ITEM(known, 3))) {
      Py_DECREF(name);
      return -1;
    }
  }
  int iso = PySet_Contains(isolated, name);
  if (iso < 0) {
    Py_DECREF(name);
    return -1;
  }
  PyObject* regions = list_attr(op, s_regions);
  if (regions == nullptr) {
    Py_DECREF(name);
    return -1;
  }
  std::optional<Visible> fresh;  // an isolated op's regions see nothing from outside
  if (iso) fresh.emplace();
  Visible& inner = iso ? *fresh : vis;
  int rc = 0;
  for (Py_ssize_t k = 0; rc == 0 && k < PyList_GET_SIZE(regions); k++) {
    PyObject* region = PyList_GET_ITEM(regions, k);
    PyObject* parent = attr(region, s_parent);
    Py_XDECREF(parent);
    if (parent != op) {
      rc = -1;
      break;
    }
    PyObject* blocks = list_attr(region, s_blocks);
    if (blocks == nullptr || PyList_GET_SIZE(blocks) > 1) {  // several blocks: dominators, left to Python
      Py_XDECREF(blocks);
      rc = -1;
      break;
    }
    if (PyList_GET_SIZE(blocks) == 1) rc = block(PyList_GET_ITEM(blocks, 0), region, name, inner);
    Py_DECREF(blocks);
  }
  Py_DECREF(regions);
  Py_DECREF(name);
  if (rc != 0) return rc;
  PyObject* rule = known != nullptr ? PyTuple_GET_ITEM(known, 5) : Py_None;
  if (rule != Py_None) {
    PyObject* done = PyObject_CallOneArg(rule, op);
    if (done == nullptr) return -1;
    Py_DECREF(done);
  }
  return 0;
}

int Sound::block(PyObject* block, PyObject* region, PyObject* owner_name, Visible& vis) {
  PyObject* parent = attr(block, s_parent);
  Py_XDECREF(parent);
  if (parent != region) return -1;
  size_t mark = vis.stack.size();
  PyObject* args = list_attr(block, s_args);
  if (args == nullptr) return -1;
  for (Py_ssize_t k = 0; k < PyList_GET_SIZE(args); k++) {
    PyObject* a = PyList_GET_ITEM(args, k);
    if (!by_identity(a)) {
      Py_DECREF(args);
      return -1;
    }
    vis.add(a);
  }
  PyObject* ops = list_attr(block, s_ops);
  int rc = ops == nullptr ? -1 : 0;
  Py_ssize_t last = ops != nullptr ? PyList_GET_SIZE(ops) - 1 : -1;
  for (Py_ssize_t k = 0; rc == 0 && k <= last; k++) {
    PyObject* op = PyList_GET_ITEM(ops, k);
    Py_INCREF(op);
    rc = -1;
    PyObject *op_parent = attr(op, s_parent), *name = op_parent != nullptr ? attr(op, s_name) : nullptr;
    PyObject* successors = name != nullptr ? list_attr(op, s_successors) : nullptr;
    int term = name != nullptr ? PySet_Contains(terminators, name) : -1;
    PyObject* known = term >= 0 ? PyDict_GetItemWithError(facts, name) : nullptr;
    if (op_parent == block && successors != nullptr && PyList_GET_SIZE(successors) == 0 && term >= 0 &&
        !(term && k != last) && !(known == nullptr && PyErr_Occurred())) {
      // parents: `region.parent.name not in parents` (the region's parent is the op whose name is owner_name)
      int placed = 1;
      if (known != nullptr && PyTuple_CheckExact(known) && PyTuple_GET_SIZE(known) == 6) {
        PyObject* parents = PyTuple_GET_ITEM(known, 4);
        if (PyTuple_CheckExact(parents) && PyTuple_GET_SIZE(parents) > 0)
          placed = PySequence_Contains(parents, owner_name);
        else if (!PyTuple_CheckExact(parents))
          placed = -1;
      }
      if (placed == 1) rc = 0;
    }
    Py_XDECREF(op_parent);
    Py_XDECREF(name);
    Py_XDECREF(successors);
    if (rc == 0) rc = this->op(op, vis);
    if (rc == 0) {
      PyObject* results = list_attr(op, s_results);
      if (results == nullptr) {
        rc = -1;
      } else {
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(results); j++) {
          PyObject* r = PyList_GET_ITEM(results, j);
          if (!by_identity(r)) {
            rc = -1;
            break;
          }
          vis.add(r);
        }
        Py_DECREF(results);
      }
    }
    Py_DECREF(op);
  }
  Py_XDECREF(ops);
  Py_DECREF(args);
  vis.pop_to(mark);
  return rc;
}

PyObject* sound(PyObject*, PyObject* args) {
  PyObject *roots, *facts, *isolated, *terminators;
  if (!PyArg_ParseTuple(args, "OO!OO", &roots, &PyDict_Type, &facts, &isolated, &terminators)) return nullptr;
  if (!PyAnySet_Check(isolated) || !PyAnySet_Check(terminators)) {
    PyErr_SetString(PyExc_TypeError, "sound: ISOLATED and TERMINATORS must be sets");
    return nullptr;
  }
  PyObject* seq = PySequence_List(roots);
  if (seq == nullptr) return nullptr;
  Sound s{facts, isolated, terminators};
  int rc = 0;
  for (Py_ssize_t k = 0; rc == 0 && k < PyList_GET_SIZE(seq); k++) {
    Visible vis;
    rc = s.op(PyList_GET_ITEM(seq, k), vis);
  }
  Py_DECREF(seq);
  if (rc != 0) {
    PyErr_Clear();  // the Python walk meets it again and says what it is
    Py_RETURN_FALSE;
  }
  Py_RETURN_TRUE;
}

PyMethodDef methods[] = {
    {"walk_method", make_walk_method, METH_O, "walk_method(Op): the method to set as Op.walk"},
    {"walk", walk_function, METH_O, "walk(op): the iterator Op.walk returns"},
    {"sound", sound, METH_VARARGS,
     "sound(roots, facts, ISOLATED, TERMINATORS): True where ir/verify.py's checks find nothing (False: run them)"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_irwalk", "Op.walk in C (ir/core.py); the verifier's common case", -1,
                      methods};

}  // namespace

PyMODINIT_FUNC PyInit__irwalk(void) {
  s_regions = PyUnicode_InternFromString("regions");
  s_blocks = PyUnicode_InternFromString("blocks");
  s_ops = PyUnicode_InternFromString("ops");
  if (s_regions == nullptr || s_blocks == nullptr || s_ops == nullptr) return nullptr;
  struct {
    PyObject** at;
    const char* text;
  } all[] = {{&s_operands, "operands"}, {&s_results, "results"}, {&s_owner, "owner"}, {&s_index, "index"},
             {&s_parent, "parent"},     {&s_name, "name"},       {&s_args, "args"},   {&s_successors, "successors"}};
  for (auto& x : all) {
    if ((*x.at = PyUnicode_InternFromString(x.text)) == nullptr) return nullptr;
  }
  WalkType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
  WalkType.tp_doc = "an op's pre-order walk (Op.walk)";
  WalkType.tp_dealloc = walk_dealloc;
  WalkType.tp_traverse = walk_traverse;
  WalkType.tp_clear = walk_clear;
  WalkType.tp_iter = PyObject_SelfIter;
  WalkType.tp_iternext = walk_next;
  if (PyType_Ready(&WalkType) < 0) return nullptr;
  return PyModule_Create(&module);
}
