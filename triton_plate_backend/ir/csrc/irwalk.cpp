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

#include <vector>

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

PyMethodDef methods[] = {
    {"walk_method", make_walk_method, METH_O, "walk_method(Op): the method to set as Op.walk"},
    {"walk", walk_function, METH_O, "walk(op): the iterator Op.walk returns"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_irwalk", "Op.walk in C (ir/core.py)", -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit__irwalk(void) {
  s_regions = PyUnicode_InternFromString("regions");
  s_blocks = PyUnicode_InternFromString("blocks");
  s_ops = PyUnicode_InternFromString("ops");
  if (s_regions == nullptr || s_blocks == nullptr || s_ops == nullptr) return nullptr;
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
