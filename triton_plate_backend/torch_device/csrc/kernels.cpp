// The plate device's own ATen kernels: OpenReg's "minimal" set (factories, views, resize, set_,
// copies, item()). Everything else goes through the boxed CPU fallback (fallback.cpp).
//
// Device memory is host memory: a copy is the CPU copy_ between "host aliases" (CPU tensors over the
// same bytes), after checking that the plate side lies inside a live device allocation.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include "plate.h"

#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/_local_scalar_dense_ops.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_cpu_dispatch.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/resize_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <algorithm>
#include <sstream>

namespace plate {

void check_device_bytes(const at::Tensor& t, const char* what) {
  if (!t.defined() || t.device().type() != kPlate || t.numel() == 0) {
    return;
  }
  const auto& storage = t.storage();
  const void* base = storage.data();
  const auto storage_bytes = storage.nbytes();
  // the tensor's extent inside its storage (torch strides are never negative)
  const auto end_bytes = at::detail::computeStorageNbytes(t.sizes(), t.strides(), t.element_size(),
                                                          static_cast<size_t>(std::max<int64_t>(t.storage_offset(), 0)));
  TORCH_CHECK(t.storage_offset() >= 0 && end_bytes <= storage_bytes, "plate: ", what, ": the tensor (sizes ",
              t.sizes(), ", strides ", t.strides(), ", offset ", t.storage_offset(), ") reaches byte ", end_bytes,
              " of a ", storage_bytes, "-byte storage");
  Region r;
  if (find_region(base, &r)) {
    TORCH_CHECK(storage_bytes <= r.nbytes, "plate: ", what, ": storage of ", storage_bytes,
                " bytes is larger than its ", r.nbytes, "-byte device allocation at ", base);
    TORCH_CHECK(r.device == t.device().index(), "plate: ", what, ": the tensor says ", t.device(),
                " but its memory lives on plate:", int(r.device));
    return;
  }
  // not made by this allocator (e.g. wrapped by the runtime): ask the simulator's memory itself
  TORCH_CHECK(runtime_covers(t.device().index(), base, storage_bytes), "plate: ", what, ": storage [", base,
              ", +", storage_bytes, " bytes) is not inside any live allocation of ", t.device(),
              " (freed, or never device memory)");
}

at::Tensor host_alias(const at::Tensor& t, const char* what) {
  check_device_bytes(t, what);
  auto alias = at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().device(c10::kCPU));
  alias.unsafeGetTensorImpl()->_set_conj(t.is_conj());
  alias.unsafeGetTensorImpl()->_set_neg(t.is_neg());
  return alias;
}

void note_host_write(const at::Tensor& t) {
  if (!t.defined() || t.device().type() != kPlate || t.numel() == 0) {
    return;
  }
  // from data_ptr to the tensor's last byte: a strided tensor's gaps count too (conservative)
  const auto nbytes = at::detail::computeStorageNbytes(t.sizes(), t.strides(), t.element_size());
  runtime_wrote(t.data_ptr(), nbytes, t.device().index());
}

namespace {

void check_factory_options(const c10::Device& device, std::optional<c10::Layout> layout,
                           std::optional<bool> pin_memory) {
  TORCH_CHECK(device.type() == kPlate, "plate: a plate factory got device ", device);
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
              "plate: only strided tensors exist on plate, not ", c10::layout_or_default(layout));
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory), "plate: pin_memory applies to CPU tensors only");
}

constexpr c10::DispatchKeySet kPlateKeys(c10::DispatchKey::PrivateUse1);

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin_memory, std::optional<c10::MemoryFormat> memory_format) {
  const auto where = c10::device_or_default(device);
  check_factory_options(where, layout, pin_memory);
  const c10::DeviceGuard guard(where);
  return at::detail::empty_generic(size, c10::GetAllocator(kPlate), kPlateKeys, c10::dtype_or_default(dtype),
                                   memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                         std::optional<bool> pin_memory) {
  const auto where = c10::device_or_default(device);
  check_factory_options(where, layout, pin_memory);
  const c10::DeviceGuard guard(where);
  return at::detail::empty_strided_generic(size, stride, c10::GetAllocator(kPlate), kPlateKeys,
                                           c10::dtype_or_default(dtype));
}

at::Tensor as_strided(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                      std::optional<c10::SymInt> storage_offset) {
  return at::cpu::as_strided_symint(self, size, stride, std::move(storage_offset));
}

at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) {
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

at::Tensor reshape_alias(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride));
}

const at::Tensor& resize_(const at::Tensor& self, c10::SymIntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format) {
  const c10::DeviceGuard guard(self.device());  // a grown storage is allocated on self's device
  return at::native::resize_(self, C10_AS_INTARRAYREF_SLOW(size), memory_format);
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool /*non_blocking: copies are synchronous*/) {
  TORCH_CHECK(self.defined() && dst.defined(), "plate: copy with an undefined tensor");
  const auto src_host = self.is_cpu() ? self : host_alias(self, "copy source");
  auto dst_host = dst.is_cpu() ? dst : host_alias(dst, "copy destination");
  dst_host.copy_(src_host);
  note_host_write(dst);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  copy_from(self, dst, false);
  return dst;
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  return at::_ops::_local_scalar_dense::call(host_alias(self, "item()"));
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  return at::native::set_tensor_(self, source);
}

at::Tensor& set_source_storage(at::Tensor& self, at::Storage source) {
  return at::native::set_(self, std::move(source));
}

at::Tensor& set_source_storage_offset(at::Tensor& self, at::Storage source, int64_t storage_offset,
                                      c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::native::set_storage_cpu_(self, std::move(source), storage_offset, size, stride);
}

at::Tensor& set_empty(at::Tensor& self) {
  // the CPU kernel would give a plate tensor a CPU storage: make an empty plate one instead
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, c10::GetAllocator(kPlate), /*resizable=*/true);
  return at::native::set_storage_cpu_(self, std::move(storage), 0, {0}, {});
}

// Whether `self.data = from` may swap from's storage and metadata into self's TensorImpl (Module._apply asks
// this before it moves a parameter in place; the .data setter checks it). TensorImpl's own answer knows only
// the in-tree dense backends, so a CPU parameter moved to plate got a new Parameter object instead, and a weight
// two modules share (a tied LM head) became two. A plate tensor and a CPU one are the same class of TensorImpl
// (dense), as a CUDA tensor and a CPU one are: the
// check is TensorImpl::has_compatible_shallow_copy_type's, with PrivateUse1 among the dense backends.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  const auto dense = [](c10::DispatchKeySet keys) {
    constexpr c10::DispatchKeySet backends({c10::BackendComponent::CPUBit, c10::BackendComponent::PrivateUse1Bit});
    return keys.has_any(c10::DispatchKeySet(c10::DispatchKey::Dense)) && keys.has_any(backends);
  };
  return self.key_set() == from.key_set() || (dense(self.key_set()) && dense(from.key_set()));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("as_strided", as_strided);
  m.impl("view", view);
  m.impl("_reshape_alias", reshape_alias);
  m.impl("resize_", resize_);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("_local_scalar_dense", local_scalar_dense);
  m.impl("set_.source_Tensor", set_source_tensor);
  m.impl("set_.source_Storage", set_source_storage);
  m.impl("set_.source_Storage_storage_offset", set_source_storage_offset);
  m.impl("set_", set_empty);
  m.impl("_has_compatible_shallow_copy_type", has_compatible_shallow_copy_type);
  // complex <-> real pairs are views (at::native's, as on CPU and CUDA): they never compute
  m.impl("view_as_real", at::native::view_as_real);
  m.impl("view_as_complex", at::native::view_as_complex);
}

// The conjugate and negative bits pass through to copy_from, whose host aliases carry them, so the CPU copy_
// resolves them. Without this a copy from a conj() view recursed until the stack overflowed: the math-bit
// fallbacks let copy_ through but not _copy_from, which only out-of-tree devices reach, and they resolve the
// bit with clone -> copy_ -> _copy_from again. (In-tree devices copy in copy_ itself and never meet this.)
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

}  // namespace
}  // namespace plate
