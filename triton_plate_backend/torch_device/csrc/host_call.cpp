// _run_on_host(name, overload, args, kwargs, wrapped): an aten op run through the CPU fallback from Python.
//
// plate's eager kernels (triton_plate_backend/eager_ops/) are registered for PrivateUse1 from Python and
// so shadow the boxed fallback for their ops; the cases they leave to the host (a dtype or layout they do
// not cover) come back here and run exactly as the fallback runs every other op, counted as a host op.
// A Python kernel receives a scalar operand (the 2 of x + 2) as a Python number; the caller hands it back
// as a CPU 0-dim tensor and names it in `wrapped`, and it becomes a wrapped number again (torch's type
// promotion treats those apart).
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/csrc/utils/pybind.h>

#include "plate.h"

#include <ATen/core/dispatch/Dispatcher.h>

namespace plate {

PyObject* run_on_host_py(PyObject* /*self*/, PyObject* args) {
  const char* name = nullptr;
  const char* overload = nullptr;
  PyObject* op_args = nullptr;
  PyObject* op_kwargs = nullptr;
  PyObject* wrapped = nullptr;
  if (!PyArg_ParseTuple(args, "ssO!O!O!", &name, &overload, &PyTuple_Type, &op_args, &PyDict_Type, &op_kwargs,
                        &PyFrozenSet_Type, &wrapped)) {
    return nullptr;
  }
  HANDLE_TH_ERRORS
  const auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
  auto stack = torch::jit::createStackForSchema(op.schema(), py::reinterpret_borrow<py::tuple>(op_args),
                                                py::reinterpret_borrow<py::dict>(op_kwargs), std::nullopt);
  const auto& arguments = op.schema().arguments();
  for (size_t i = 0; i < arguments.size() && i < stack.size(); ++i) {
    py::str arg_name(arguments[i].name());
    if (PySet_Contains(wrapped, arg_name.ptr()) == 1 && stack[i].isTensor()) {
      stack[i].toTensor().unsafeGetTensorImpl()->set_wrapped_number(true);
    }
  }
  {
    pybind11::gil_scoped_release no_gil;
    run_on_host(op, &stack);
  }
  return torch::jit::createPyObjectForStack(std::move(stack)).release().ptr();
  END_HANDLE_TH_ERRORS
}

}  // namespace plate
