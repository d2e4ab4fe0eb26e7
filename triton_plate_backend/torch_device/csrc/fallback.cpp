// The boxed CPU fallback: every aten op without a plate kernel runs its CPU kernel.
//
// Unlike OpenReg's copy-everything fallback (at::native::cpu_fallback) plate needs no copies for
// inputs: device memory is host memory, so each plate tensor becomes a "host alias" (a CPU tensor
// over the same bytes, checked against the live device allocations first) and the CPU kernel reads
// it in place; in-place ops write in place too, with exactly the CPU's semantics (overlap checks
// included). Only out= arguments are copied (a CPU kernel may have to resize them), and results are
// copied to the plate device. Beyond OpenReg's fallback it also
//   - refuses mixed devices like TensorIterator does ("Expected all tensors to be on the same
//     device"): a CPU tensor is accepted only as a 0-dim scalar, or as an index of index ops;
//   - puts results on the plate device even when a CPU scalar comes first (torch.tensor(2.) * x);
//   - draws random numbers from the plate generator (its CPU twin, hooks.cpp), not the CPU one;
//   - serves view ops: the CPU kernel views the host alias, and the result is rebuilt as a view of
//     the plate storage at the same byte offset.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include "plate.h"

#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <ATen/ops/_copy_from_and_resize.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <string>
#include <unordered_set>
#include <vector>

namespace plate {
namespace {

// ops that, as on CUDA, take CPU index tensors next to device tensors
const std::unordered_set<std::string> kCpuIndexOps = {
    "aten::index.Tensor", "aten::index.Tensor_out", "aten::index_put", "aten::index_put_", "aten::_index_put_impl_",
};

bool is_generator(const c10::Argument& a) {
  auto type = a.real_type();
  if (auto opt = type->castRaw<c10::OptionalType>()) {
    type = opt->getElementType();
  }
  return type->kind() == c10::TypeKind::GeneratorType;
}

bool writes(const c10::Argument& a) {
  return a.alias_info() != nullptr && a.alias_info()->isWrite();
}

template <class F>
void for_each_tensor(const c10::IValue& v, F&& f) {
  if (v.isTensor()) {
    f(v.toTensor());
  } else if (v.isTensorList()) {
    for (const auto& t : v.toTensorVector()) {
      f(t);
    }
  } else if (v.isOptionalTensorList()) {
    for (const auto& t : v.toOptionalTensorVector()) {
      if (t.has_value()) {
        f(*t);
      }
    }
  }
}

[[noreturn]] void mixed_devices(const c10::Device& a, const c10::Device& b, const std::string& op) {
  TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two devices, ", a, " and ", b,
              "! (plate: in ", op, "; move the tensors with .to(\"plate\") or .cpu() first)");
}

// The plate device the results belong on; raises on tensors of different devices.
std::optional<c10::Device> target_device(const c10::OperatorHandle& op, torch::jit::Stack* stack, size_t begin) {
  const auto name = c10::toString(op.schema().operator_name());
  const bool cpu_index_ok = kCpuIndexOps.count(name) > 0;
  std::optional<c10::Device> plate_device, stranger;
  for (size_t i = begin; i < stack->size(); ++i) {
    const auto& v = (*stack)[i];
    if (v.isDevice() && v.toDevice().type() == kPlate && !plate_device) {
      const auto d = v.toDevice();
      plate_device = c10::Device(kPlate, d.has_index() ? d.index() : current_device());
    }
    for_each_tensor(v, [&](const at::Tensor& t) {
      if (!t.defined()) {
        return;
      }
      const auto d = t.device();
      if (d.type() == kPlate) {
        if (plate_device && *plate_device != d) {
          mixed_devices(*plate_device, d, name);
        }
        plate_device = d;
      } else if (!(d.is_cpu() && (t.dim() == 0 || cpu_index_ok)) && !stranger) {
        stranger = d;
      }
    });
  }
  if (plate_device && stranger) {
    mixed_devices(*plate_device, *stranger, name);
  }
  return plate_device;
}

// A plate tensor with the host view's sizes, strides and dtype, over the plate storage of `base`.
at::Tensor rebuild_view(const at::Tensor& base, const at::Tensor& host_base, const at::Tensor& host, const char* op) {
  TORCH_CHECK(host.storage().data() == host_base.storage().data(), "plate: view op ", op,
              " returned a tensor that does not view its input; it needs a plate kernel");
  const auto byte_offset = base.storage_offset() * static_cast<int64_t>(base.element_size()) +
                           host.storage_offset() * static_cast<int64_t>(host.element_size());
  TORCH_CHECK(byte_offset % static_cast<int64_t>(host.element_size()) == 0, "plate: view op ", op,
              " gives a misaligned view");
  // base's keys (autograd ones included: without them the view would be an inference tensor), its math bits cleared
  const auto keys = base.key_set() - c10::DispatchKeySet({c10::DispatchKey::Conjugate, c10::DispatchKey::Negative});
  auto impl = c10::make_intrusive<c10::TensorImpl>(c10::TensorImpl::VIEW, c10::Storage(base.storage()), keys,
                                                   host.dtype());
  impl->set_sizes_and_strides(host.sizes(), host.strides(), byte_offset / static_cast<int64_t>(host.element_size()));
  impl->_set_conj(host.is_conj());
  impl->_set_neg(host.is_neg());
  return at::Tensor(std::move(impl));
}

// In-place ops that change metadata (unsqueeze_, transpose_, ...) changed the host alias only:
// carry the change over to the plate tensor.
void apply_metadata_change(const at::Tensor& original, const at::Tensor& alias, const std::string& op) {
  if (alias.sizes() == original.sizes() && alias.strides() == original.strides() &&
      alias.data_ptr() == original.data_ptr()) {
    return;
  }
  const auto* base = static_cast<const char*>(original.storage().data());
  const auto* now = static_cast<const char*>(alias.data_ptr());
  const auto isz = static_cast<int64_t>(original.element_size());
  const auto offset = now - base;
  TORCH_CHECK(alias.dtype() == original.dtype() && offset >= 0 && offset % isz == 0 &&
                  static_cast<size_t>(offset) <= original.storage().nbytes(),
              "plate: ", op, " moved its argument to other memory; it needs a plate kernel");
  original.unsafeGetTensorImpl()->set_sizes_and_strides(alias.sizes(), alias.strides(), offset / isz);
}

void plate_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const auto& args = schema.arguments();
  const auto& rets = schema.returns();
  const auto name = c10::toString(schema.operator_name());
  const size_t begin = stack->size() - args.size();
  const auto target = target_device(op, stack, begin);
  const std::vector<c10::IValue> originals(stack->begin() + begin, stack->end());
  count_host_op(name);

  struct Copied {
    at::Tensor plate, host;  // an out= argument: computed on a CPU copy, copied back
  };
  std::vector<Copied> copied;
  std::vector<std::pair<at::Tensor, at::Tensor>> aliased_writes;  // (plate, host alias) of in-place args
  std::vector<at::Tensor> host_args(args.size());  // host alias of each Tensor argument

  auto to_host = [&](const at::Tensor& t, const c10::Argument& a) -> at::Tensor {
    if (!t.defined() || t.device().type() != kPlate) {
      return t;
    }
    if (writes(a) && a.is_out()) {
      auto host = t.to(c10::kCPU);
      copied.push_back({t, host});
      return host;
    }
    auto host = host_alias(t, name.c_str());
    if (writes(a)) {
      aliased_writes.emplace_back(t, host);
    }
    return host;
  };

  for (size_t i = 0; i < args.size(); ++i) {
    auto& v = (*stack)[begin + i];
    const auto& a = args[i];
    if (v.isTensor()) {
      host_args[i] = to_host(v.toTensor(), a);
      v = c10::IValue(host_args[i]);
    } else if (v.isTensorList()) {
      std::vector<at::Tensor> hosts;
      for (const auto& t : v.toTensorVector()) {
        hosts.push_back(to_host(t, a));
      }
      v = c10::IValue(c10::List<at::Tensor>(hosts));
    } else if (v.isOptionalTensorList()) {
      std::vector<std::optional<at::Tensor>> hosts;
      for (const auto& t : v.toOptionalTensorVector()) {
        hosts.push_back(t.has_value() ? std::optional<at::Tensor>(to_host(*t, a)) : std::nullopt);
      }
      v = c10::IValue(c10::List<std::optional<at::Tensor>>(hosts));
    } else if (v.isDevice() && v.toDevice().type() == kPlate) {
      v = c10::IValue(c10::Device(c10::kCPU));
    } else if (target && is_generator(a) && (v.isNone() || v.isGenerator())) {
      const auto gen = v.isNone() ? default_generator(target->index()) : v.toGenerator();
      v = c10::IValue(cpu_twin(gen));
    }
  }

  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);

  for (const auto& c : copied) {
    if (c.plate.sizes() != c.host.sizes()) {
      // the CPU kernel resized its out= argument: TensorIterator gives a resized out the inputs' layout (a
      // permuted input gives a permuted result, as on every device); give the plate one that layout too
      const auto elements = at::detail::computeStorageNbytes(c.host.sizes(), c.host.strides(), /*itemsize=*/1);
      c.plate.resize_({static_cast<int64_t>(elements)});
      c.plate.as_strided_(c.host.sizes(), c.host.strides(), c.plate.storage_offset());
    }
    at::_copy_from_and_resize(c.host, c.plate);
  }
  for (const auto& [plate_t, host] : aliased_writes) {
    apply_metadata_change(plate_t, host, name);
    note_host_write(plate_t);
  }

  const size_t rbegin = stack->size() - rets.size();
  for (size_t j = 0; j < rets.size(); ++j) {
    auto& r = (*stack)[rbegin + j];
    const auto* alias = rets[j].alias_info();
    if (alias != nullptr && alias->isWrite()) {  // returns its (mutated) argument: hand back the plate one
      for (size_t i = 0; i < args.size(); ++i) {
        if (args[i].alias_info() != nullptr && *args[i].alias_info() == *alias) {
          r = originals[i];
          break;
        }
      }
    } else if (alias != nullptr) {  // a view of an input: rebuild it over the plate storage
      size_t src = 0;
      while (src < args.size() && !(args[src].alias_info() && *args[src].alias_info() == *alias)) {
        ++src;
      }
      TORCH_CHECK(src < args.size() && originals[src].isTensor(), "plate: cannot tell which input view op ", name,
                  " views; it needs a plate kernel");
      const auto& base = originals[src].toTensor();
      if (base.device().type() != kPlate) {
        continue;  // viewing a CPU input: the CPU result is right
      }
      if (r.isTensor()) {
        r = c10::IValue(rebuild_view(base, host_args[src], r.toTensor(), name.c_str()));
      } else if (r.isTensorList()) {
        std::vector<at::Tensor> views;
        for (const auto& h : r.toTensorVector()) {
          views.push_back(rebuild_view(base, host_args[src], h, name.c_str()));
        }
        r = c10::IValue(c10::List<at::Tensor>(views));
      }
    } else if (target && r.isTensor() && r.toTensor().defined()) {
      r = c10::IValue(r.toTensor().to(*target));
    } else if (target && r.isTensorList()) {
      std::vector<at::Tensor> outs;
      for (const auto& t : r.toTensorVector()) {
        outs.push_back(t.defined() ? t.to(*target) : t);
      }
      r = c10::IValue(c10::List<at::Tensor>(outs));
    }
  }
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&plate_fallback>());
}

}  // namespace

void run_on_host(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  plate_fallback(op, stack);
}

}  // namespace plate
