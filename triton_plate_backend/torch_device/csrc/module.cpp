// triton_plate_backend.torch_device._C: the few functions Python needs from the C++ side.
// A plain CPython module (no pybind11: the extension builds in seconds). Loading it registers the
// allocator, the device guard, the PrivateUse1 hooks and the kernels (static registrars).
#include <Python.h>

#include "plate.h"

#include <ATen/core/Generator.h>
#include <c10/util/Exception.h>
#include <torch/csrc/Generator.h>

#include <string>

namespace {

// Turn a C++ exception into a Python one (torch.OutOfMemoryError has no C-level handle here:
// out-of-memory errors only come from allocations inside torch ops, which torch translates itself).
#define PLATE_PY_BEGIN try {
#define PLATE_PY_END                                                 \
  }                                                                  \
  catch (const c10::Error& e) {                                      \
    PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace()); \
    return nullptr;                                                  \
  }                                                                  \
  catch (const std::exception& e) {                                  \
    PyErr_SetString(PyExc_RuntimeError, e.what());                   \
    return nullptr;                                                  \
  }

bool parse_device(PyObject* args, int* device) {
  *device = -1;
  return PyArg_ParseTuple(args, "|i", device) != 0;
}

c10::DeviceIndex resolve(int device) {
  const auto d = device < 0 ? plate::current_device() : static_cast<c10::DeviceIndex>(device);
  plate::check_device_index(d);
  return d;
}

PyObject* set_runtime(PyObject* /*self*/, PyObject* runtime) {
  plate::set_runtime(runtime == Py_None ? nullptr : runtime);
  Py_RETURN_NONE;
}

PyObject* stop_runtime(PyObject* /*self*/, PyObject* /*unused*/) {
  plate::stop_runtime();
  Py_RETURN_NONE;
}

PyObject* track_host_writes(PyObject* /*self*/, PyObject* on) {
  plate::set_track_host_writes(PyObject_IsTrue(on) == 1);
  Py_RETURN_NONE;
}

PyObject* device_count(PyObject* /*self*/, PyObject* /*unused*/) {
  return PyLong_FromLong(plate::device_count());
}

PyObject* current_device(PyObject* /*self*/, PyObject* /*unused*/) {
  return PyLong_FromLong(plate::current_device());
}

PyObject* set_device(PyObject* /*self*/, PyObject* args) {
  int device = 0;
  if (!PyArg_ParseTuple(args, "i", &device)) {
    return nullptr;
  }
  PLATE_PY_BEGIN
  plate::set_current_device(static_cast<c10::DeviceIndex>(device));
  Py_RETURN_NONE;
  PLATE_PY_END
}

PyObject* default_generator(PyObject* /*self*/, PyObject* args) {
  int device = -1;
  if (!parse_device(args, &device)) {
    return nullptr;
  }
  PLATE_PY_BEGIN
  return THPGenerator_initDefaultGenerator(plate::default_generator(resolve(device)));
  PLATE_PY_END
}

PyObject* memory_counters(PyObject* /*self*/, PyObject* args) {
  int device = -1;
  if (!parse_device(args, &device)) {
    return nullptr;
  }
  PLATE_PY_BEGIN
  const auto c = plate::allocator_counters(resolve(device));
  return Py_BuildValue("(LLLLL)", (long long)c.allocated, (long long)c.peak, (long long)c.num_allocs,
                       (long long)c.num_frees, (long long)c.num_ooms);
  PLATE_PY_END
}

PyObject* reset_peak(PyObject* /*self*/, PyObject* args) {
  int device = -1;
  if (!parse_device(args, &device)) {
    return nullptr;
  }
  PLATE_PY_BEGIN
  plate::reset_peak(resolve(device));
  Py_RETURN_NONE;
  PLATE_PY_END
}

PyObject* reset_accumulated(PyObject* /*self*/, PyObject* args) {
  int device = -1;
  if (!parse_device(args, &device)) {
    return nullptr;
  }
  PLATE_PY_BEGIN
  plate::reset_accumulated(resolve(device));
  Py_RETURN_NONE;
  PLATE_PY_END
}

PyObject* current_stream(PyObject* /*self*/, PyObject* args) {
  int device = -1;
  if (!parse_device(args, &device)) {
    return nullptr;
  }
  PLATE_PY_BEGIN
  const auto s = plate::current_stream(resolve(device));
  return Py_BuildValue("(LiI)", (long long)s.id(), int(s.device_index()), unsigned(s.device_type()));
  PLATE_PY_END
}

PyObject* set_stream(PyObject* /*self*/, PyObject* args) {
  long long id = 0;
  int device = 0;
  if (!PyArg_ParseTuple(args, "Li", &id, &device)) {
    return nullptr;
  }
  PLATE_PY_BEGIN
  plate::set_current_stream(c10::Stream(c10::Stream::UNSAFE, c10::Device(plate::kPlate, resolve(device)), id));
  Py_RETURN_NONE;
  PLATE_PY_END
}

PyObject* elapsed_time(PyObject* /*self*/, PyObject* args) {
  unsigned long long start = 0, end = 0;
  if (!PyArg_ParseTuple(args, "KK", &start, &end)) {
    return nullptr;
  }
  PLATE_PY_BEGIN
  return PyFloat_FromDouble(plate::event_elapsed_ms(reinterpret_cast<const void*>(static_cast<uintptr_t>(start)),
                                                    reinterpret_cast<const void*>(static_cast<uintptr_t>(end))));
  PLATE_PY_END
}

PyObject* to_dict(const plate::HostOpCounts& counts) {
  PyObject* d = PyDict_New();
  for (const auto& [name, n] : counts) {
    PyObject* v = PyLong_FromLongLong(n);
    if (d == nullptr || v == nullptr || PyDict_SetItemString(d, name.c_str(), v) != 0) {
      Py_XDECREF(v);
      Py_XDECREF(d);
      return nullptr;
    }
    Py_DECREF(v);
  }
  return d;
}

PyObject* host_ops(PyObject* /*self*/, PyObject* /*unused*/) {
  return to_dict(plate::host_op_counts());
}

PyObject* count_host_op(PyObject* /*self*/, PyObject* name) {
  const char* text = PyUnicode_AsUTF8(name);
  if (text == nullptr) {
    return nullptr;
  }
  plate::count_host_op(text);
  Py_RETURN_NONE;
}

PyObject* reset_host_ops(PyObject* /*self*/, PyObject* /*unused*/) {
  plate::reset_host_op_counts();
  Py_RETURN_NONE;
}

PyObject* watch_compiled_frames(PyObject* /*self*/, PyObject* marks) {
  if (marks != Py_None && !PyDict_Check(marks)) {
    PyErr_SetString(PyExc_TypeError, "_watch_compiled_frames takes {code object: bool} or None");
    return nullptr;
  }
  plate::watch_compiled_frames(marks == Py_None ? nullptr : marks);
  Py_RETURN_NONE;
}

PyObject* compiled_frame_host_ops(PyObject* /*self*/, PyObject* /*unused*/) {
  return to_dict(plate::compiled_frame_host_op_counts());
}

PyObject* reset_compiled_frame_host_ops(PyObject* /*self*/, PyObject* /*unused*/) {
  plate::reset_compiled_frame_host_op_counts();
  Py_RETURN_NONE;
}

PyObject* enter_host_op_scope(PyObject* /*self*/, PyObject* /*unused*/) {
  return PyLong_FromSize_t(plate::enter_host_op_scope());
}

PyObject* exit_host_op_scope(PyObject* /*self*/, PyObject* depth) {
  const size_t d = PyLong_AsSize_t(depth);
  if (d == static_cast<size_t>(-1) && PyErr_Occurred()) {
    return nullptr;
  }
  return to_dict(plate::exit_host_op_scope(d));
}

PyMethodDef kMethods[] = {
    {"_host_ops", host_ops, METH_NOARGS, "{operator name: count} of the ops the CPU fallback ran on the host."},
    {"_reset_host_ops", reset_host_ops, METH_NOARGS, nullptr},
    {"_run_on_host", plate::run_on_host_py, METH_VARARGS, "Run an aten op through the CPU fallback (counted)."},
    {"_count_host_op", count_host_op, METH_O, "Count a host op that a Python-registered plate kernel ran."},
    {"_watch_compiled_frames", watch_compiled_frames, METH_O, "Count compiled functions' host ops: {code: bool}."},
    {"_compiled_frame_host_ops", compiled_frame_host_ops, METH_NOARGS, "{name: count} of those ops."},
    {"_reset_compiled_frame_host_ops", reset_compiled_frame_host_ops, METH_NOARGS, nullptr},
    {"_enter_host_op_scope", enter_host_op_scope, METH_NOARGS, "Open a host-op scope of this thread; its depth."},
    {"_exit_host_op_scope", exit_host_op_scope, METH_O, "Close the scope of that depth: its {name: count}."},
    {"_set_runtime", set_runtime, METH_O, "Register the Python runtime object (alloc/free/now_ns/...)."},
    {"_stop_runtime", stop_runtime, METH_NOARGS, "Stop calling Python (interpreter shutdown)."},
    {"_track_host_writes", track_host_writes, METH_O, "Report host writes to the runtime's wrote() (init sanitizer)."},
    {"_device_count", device_count, METH_NOARGS, nullptr},
    {"_current_device", current_device, METH_NOARGS, nullptr},
    {"_set_device", set_device, METH_VARARGS, nullptr},
    {"_default_generator", default_generator, METH_VARARGS, "The default torch.Generator of a plate device."},
    {"_memory_counters", memory_counters, METH_VARARGS,
     "(allocated, peak, num_allocs, num_frees, num_ooms) of the plate allocator on a device."},
    {"_reset_peak", reset_peak, METH_VARARGS, nullptr},
    {"_reset_accumulated", reset_accumulated, METH_VARARGS, nullptr},
    {"_current_stream", current_stream, METH_VARARGS, "(stream_id, device_index, device_type) of the current stream."},
    {"_set_stream", set_stream, METH_VARARGS, nullptr},
    {"_elapsed_time", elapsed_time, METH_VARARGS, "Modeled ms between two plate events, by event_id."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "_C", "The plate torch device's C++ side.", -1, kMethods};

}  // namespace

PyMODINIT_FUNC PyInit__C(void) {
  return PyModule_Create(&kModule);
}
