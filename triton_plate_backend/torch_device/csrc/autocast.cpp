// Autocast for plate: torch.amp.autocast(device_type="plate") behaves as it does on CUDA.
//
// torch registers the AutocastCUDA kernels itself but leaves AutocastPrivateUse1 to the backend; with
// nothing registered every op under a plate autocast region fails ("Could not run ... with arguments
// from the 'Autocastplate' backend"). So: a fallthrough for every op, and CUDA's cast policies (the
// shared op lists of ATen/autocast_mode.h) for the ops CUDA casts.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

// In at::autocast, as torch's own registrations are: the op lists name Tensor, Scalar, IntArrayRef unqualified.
namespace at::autocast {
namespace {

#define PLATE_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define PLATE_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define PLATE_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define PLATE_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  AT_FORALL_LOWER_PRECISION_FP(PLATE_LOWER_PRECISION_FP)
  AT_FORALL_FP32(PLATE_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(PLATE_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(PLATE_PROMOTE)
}

}  // namespace
}  // namespace at::autocast
