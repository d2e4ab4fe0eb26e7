// The bridge to the Python runtime object (torch_device/memory.py) and the current device.
//
// Every call takes the GIL (PyGILState_Ensure: any thread, re-entrant) and turns a Python
// exception into a c10::Error that names the exception, so torch raises it as a RuntimeError.
#include <Python.h>

#include "plate.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <string>
#include <utility>
#include <vector>

namespace plate {
namespace {

PyObject* g_runtime = nullptr;  // strong reference, never released (lives as long as the process)
// torch._C._dynamo.eval_frame.set_eval_frame (strong reference; null where torch has no Dynamo).
PyObject* g_set_eval_frame = nullptr;
// The code objects whose frame on this thread's stack answers in_compiled_frame(): (code, answer: a bool,
// or a callable asked then), strong references, replaced only with the GIL held (watch_compiled_frames).
std::vector<std::pair<PyObject*, PyObject*>> g_frame_marks;
std::atomic<bool> g_alive{false};
std::atomic<bool> g_track_writes{false};
std::atomic<int> g_device_count{-1};
thread_local c10::DeviceIndex t_current_device = 0;

bool python_usable() {
  return g_alive.load() && g_runtime != nullptr && Py_IsInitialized() && !_Py_IsFinalizing();
}

// Swaps Dynamo's eval-frame callback (set_eval_frame: a C function, no Python frame) and returns the
// previous one, a new reference; null where Dynamo is absent. Call with the GIL held and no error pending.
PyObject* swap_eval_frame(PyObject* callback) {
  if (g_set_eval_frame == nullptr) {
    return nullptr;
  }
  PyObject* prior = PyObject_CallOneArg(g_set_eval_frame, callback);
  if (prior == nullptr) {
    PyErr_Clear();
  }
  return prior;
}

// Holds the GIL and sets aside a Python exception already pending in this thread: a tensor freed
// while an error propagates (its last reference dropped by the unwinding) must neither run Python
// code with that error set nor swallow it. It also switches Dynamo's frame hook off: an allocation
// made while a compiled function runs (or while Dynamo traces) must run the runtime's Python code,
// never hand its frames to Dynamo to trace.
struct Gil {
  PyGILState_STATE state;
  PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
  PyObject* dynamo_callback = nullptr;  // the hook to put back; None when Dynamo was off
  Gil() : state(PyGILState_Ensure()) {
    PyErr_Fetch(&type, &value, &trace);
    dynamo_callback = swap_eval_frame(Py_None);
  }
  ~Gil() {
    if (dynamo_callback != nullptr) {
      if (dynamo_callback != Py_None) {
        PyObject *t = nullptr, *v = nullptr, *tb = nullptr;
        PyErr_Fetch(&t, &v, &tb);
        Py_XDECREF(swap_eval_frame(dynamo_callback));
        PyErr_Restore(t, v, tb);
      }
      Py_DECREF(dynamo_callback);
    }
    if (type != nullptr) {
      PyErr_Restore(type, value, trace);
    }
    PyGILState_Release(state);
  }
};

// The pending Python exception as "Type: message", cleared. Call with the GIL held.
std::string take_python_error() {
  PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
  PyErr_Fetch(&type, &value, &trace);
  PyErr_NormalizeException(&type, &value, &trace);
  std::string text = "unknown Python error";
  if (type != nullptr) {
    const char* name = reinterpret_cast<PyTypeObject*>(type)->tp_name;
    text = name ? name : "Exception";
  }
  if (value != nullptr) {
    if (PyObject* s = PyObject_Str(value)) {
      if (const char* c = PyUnicode_AsUTF8(s)) {
        text += std::string(": ") + c;
      }
      Py_DECREF(s);
    }
  }
  PyErr_Clear();
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(trace);
  return text;
}

// runtime.<method>(*args) (steals args); a new reference. Call with the GIL held.
PyObject* call_runtime(const char* method, PyObject* args) {
  TORCH_CHECK(g_runtime != nullptr, "plate: the torch device runtime is not registered yet; import "
              "triton_plate_backend.torch_device first");
  PyObject* fn = PyObject_GetAttrString(g_runtime, method);
  PyObject* out = fn ? PyObject_CallObject(fn, args) : nullptr;
  Py_XDECREF(fn);
  Py_XDECREF(args);
  if (out == nullptr) {
    std::string err = take_python_error();
    TORCH_CHECK(false, "plate: the device runtime's ", method, "() failed: ", err);
  }
  return out;
}

struct Ref {
  PyObject* p;
  explicit Ref(PyObject* o) : p(o) {}
  ~Ref() {
    Py_XDECREF(p);
  }
};

// torch._C._dynamo.eval_frame.set_eval_frame, or null (error cleared) where this torch has none.
PyObject* find_set_eval_frame() {
  PyObject* obj = PyImport_ImportModule("torch._C");
  for (const char* name : {"_dynamo", "eval_frame", "set_eval_frame"}) {
    PyObject* next = obj ? PyObject_GetAttrString(obj, name) : nullptr;
    Py_XDECREF(obj);
    obj = next;
  }
  if (obj == nullptr) {
    PyErr_Clear();
  }
  return obj;
}

}  // namespace

void set_runtime(PyObject* runtime) {
  if (g_set_eval_frame == nullptr) {
    g_set_eval_frame = find_set_eval_frame();  // called from Python: the GIL is held
  }
  Py_XINCREF(runtime);
  PyObject* old = g_runtime;
  g_runtime = runtime;
  Py_XDECREF(old);
  g_device_count.store(-1);
  g_alive.store(runtime != nullptr);
}

void stop_runtime() {
  g_alive.store(false);
}

void set_compiled_frame_marks(PyObject* marks) {
  for (auto& [code, answer] : g_frame_marks) {
    Py_DECREF(code);
    Py_DECREF(answer);
  }
  g_frame_marks.clear();
  PyObject *code = nullptr, *answer = nullptr;
  Py_ssize_t pos = 0;
  while (marks != nullptr && PyDict_Check(marks) && PyDict_Next(marks, &pos, &code, &answer)) {
    Py_INCREF(code);
    Py_INCREF(answer);
    g_frame_marks.emplace_back(code, answer);
  }
}

namespace {

// A mark's answer: its truth, or a callable's (called with no arguments; an error answers false).
bool mark_answer(PyObject* answer) {
  if (!PyCallable_Check(answer)) {
    return PyObject_IsTrue(answer) == 1;
  }
  PyObject* result = PyObject_CallNoArgs(answer);
  bool yes = result != nullptr && PyObject_IsTrue(result) == 1;
  Py_XDECREF(result);
  PyErr_Clear();
  return yes;
}

}  // namespace

bool in_compiled_frame() {
  if (!python_usable()) {
    return false;
  }
  Gil gil;  // Dynamo's hook is off while a mark's callable runs
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed; null in a thread with no Python frame
  Py_XINCREF(frame);
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    Py_DECREF(code);  // the frame keeps it alive
    for (const auto& [marked, answer] : g_frame_marks) {
      if (marked == reinterpret_cast<PyObject*>(code)) {
        Py_DECREF(frame);
        return mark_answer(answer);
      }
    }
    PyFrameObject* back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  return false;
}

void* runtime_alloc(size_t nbytes, c10::DeviceIndex device) {
  TORCH_CHECK(python_usable(), "plate: cannot allocate ", nbytes, " bytes on plate:", int(device),
              ": the Python runtime is gone (interpreter shutdown) or not registered");
  std::string oom;
  void* ptr = nullptr;
  {
    Gil gil;
    Ref out(call_runtime("alloc", Py_BuildValue("(Ki)", (unsigned long long)nbytes, int(device))));
    if (PyUnicode_Check(out.p)) {  // the runtime's answer to DeviceOutOfMemory: the message
      const char* c = PyUnicode_AsUTF8(out.p);
      oom = c ? c : "out of device memory";
    } else {
      unsigned long long addr = PyLong_AsUnsignedLongLong(out.p);
      if (PyErr_Occurred()) {
        std::string err = take_python_error();
        TORCH_CHECK(false, "plate: the device runtime's alloc() returned no address: ", err);
      }
      ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(addr));
    }
  }
  TORCH_CHECK_WITH(OutOfMemoryError, oom.empty(), oom);
  TORCH_CHECK(ptr != nullptr, "plate: the device runtime's alloc(", nbytes, ") returned address 0");
  return ptr;
}

void runtime_free(void* ptr, c10::DeviceIndex device) noexcept {
  if (!python_usable()) {
    return;  // shutdown: the simulator's memory goes away with the interpreter
  }
  Gil gil;
  PyObject* fn = PyObject_GetAttrString(g_runtime, "free");
  PyObject* out = fn ? PyObject_CallFunction(fn, "(Ki)", (unsigned long long)reinterpret_cast<uintptr_t>(ptr),
                                             int(device))
                     : nullptr;
  if (out == nullptr) {
    PyErr_WriteUnraisable(fn ? fn : Py_None);  // a deleter must not throw: report and go on
  }
  Py_XDECREF(out);
  Py_XDECREF(fn);
}

double runtime_now_ns(c10::DeviceIndex device) {
  Gil gil;
  Ref out(call_runtime("now_ns", Py_BuildValue("(i)", int(device))));
  double ns = PyFloat_AsDouble(out.p);
  if (PyErr_Occurred()) {
    std::string err = take_python_error();
    TORCH_CHECK(false, "plate: now_ns() did not return a number: ", err);
  }
  return ns;
}

std::pair<size_t, size_t> runtime_mem_info(c10::DeviceIndex device) {
  Gil gil;
  Ref out(call_runtime("mem_info", Py_BuildValue("(i)", int(device))));
  unsigned long long free_b = 0, total_b = 0;
  if (!PyArg_ParseTuple(out.p, "KK", &free_b, &total_b)) {
    std::string err = take_python_error();
    TORCH_CHECK(false, "plate: mem_info() must return (free, total): ", err);
  }
  return {size_t(free_b), size_t(total_b)};
}

bool runtime_covers(c10::DeviceIndex device, const void* ptr, size_t nbytes) {
  if (!python_usable()) {
    return false;
  }
  Gil gil;
  Ref out(call_runtime("covers", Py_BuildValue("(iKK)", int(device),
                                               (unsigned long long)reinterpret_cast<uintptr_t>(ptr),
                                               (unsigned long long)nbytes)));
  return PyObject_IsTrue(out.p) == 1;
}

void set_track_host_writes(bool on) {
  g_track_writes.store(on);
}

void runtime_wrote(const void* ptr, size_t nbytes, c10::DeviceIndex device) {
  if (!g_track_writes.load() || nbytes == 0 || !python_usable()) {
    return;
  }
  Gil gil;
  Ref out(call_runtime("wrote", Py_BuildValue("(KKi)", (unsigned long long)reinterpret_cast<uintptr_t>(ptr),
                                              (unsigned long long)nbytes, int(device))));
}

c10::DeviceIndex device_count() noexcept {
  int n = g_device_count.load();
  if (n >= 0) {
    return static_cast<c10::DeviceIndex>(n);
  }
  if (!python_usable()) {
    return 1;  // the default until the runtime answers
  }
  try {
    Gil gil;
    Ref out(call_runtime("device_count", nullptr));
    long v = PyLong_AsLong(out.p);
    if (PyErr_Occurred() || v < 0) {
      PyErr_Clear();
      return 1;
    }
    g_device_count.store(static_cast<int>(v));
    return static_cast<c10::DeviceIndex>(v);
  } catch (...) {
    return 1;  // deviceCount() must not throw (DeviceGuardImplInterface)
  }
}

void check_device_index(c10::DeviceIndex index) {
  const auto n = device_count();
  TORCH_CHECK(index >= 0 && index < n, "plate: no device plate:", int(index), "; there ",
              n == 1 ? "is 1 device" : "are " + std::to_string(n) + " devices", " (indices 0..", n - 1, ")");
}

c10::DeviceIndex current_device() noexcept {
  return t_current_device;
}

void set_current_device(c10::DeviceIndex index) {
  if (index < 0) {
    return;  // -1: "the current device", nothing to change
  }
  check_device_index(index);
  t_current_device = index;
}

c10::DeviceIndex exchange_device(c10::DeviceIndex index) {
  const auto old = t_current_device;
  set_current_device(index);
  return old;
}

}  // namespace plate
