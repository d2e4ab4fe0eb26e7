// Pinned host memory (torch.empty(..., pin_memory=True), Tensor.pin_memory()): CPU tensors a plate kernel
// may take as pointer arguments, as a CUDA kernel takes mapped pinned memory (cudaHostAlloc). The bytes are
// plain page-aligned host memory, a CPU DataPtr; this allocator keeps the live ranges so that isPinnedPtr
// answers for any address inside one (a view's data_ptr()), and the launcher lends a pinned tensor's
// storage to the simulator for the launch (launcher.py, as in host-memory mode).
#include "plate.h"

#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <map>
#include <mutex>

namespace plate {
namespace {

struct Pinned {  // live pinned ranges, base -> bytes; leaked on purpose (frees during static destruction)
  std::mutex mutex;
  std::map<uintptr_t, size_t> ranges;
};

Pinned& pinned() {
  static Pinned* p = new Pinned();
  return *p;
}

void delete_pinned(void* ptr) {
  if (ptr == nullptr) {
    return;
  }
  {
    auto& p = pinned();
    std::lock_guard<std::mutex> lock(p.mutex);
    p.ranges.erase(reinterpret_cast<uintptr_t>(ptr));
  }
  c10::free_cpu(ptr);
}

struct PinnedAllocator final : public at::Allocator {
  at::DataPtr allocate(size_t nbytes) override {
    const c10::Device cpu(c10::DeviceType::CPU);
    if (nbytes == 0) {
      return {nullptr, nullptr, &delete_pinned, cpu};
    }
    void* ptr = c10::alloc_cpu(nbytes);  // aligned as CPU tensors are (gAlignment)
    {
      auto& p = pinned();
      std::lock_guard<std::mutex> lock(p.mutex);
      p.ranges[reinterpret_cast<uintptr_t>(ptr)] = nbytes;
    }
    return {ptr, ptr, &delete_pinned, cpu};
  }

  at::DeleterFnPtr raw_deleter() const override {
    return &delete_pinned;
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

PinnedAllocator g_pinned_allocator;

}  // namespace

at::Allocator* pinned_allocator() {
  return &g_pinned_allocator;
}

bool is_pinned_ptr(const void* ptr) {
  const auto addr = reinterpret_cast<uintptr_t>(ptr);
  auto& p = pinned();
  std::lock_guard<std::mutex> lock(p.mutex);
  auto it = p.ranges.upper_bound(addr);  // the first range based after addr
  if (it == p.ranges.begin()) {
    return false;
  }
  --it;
  return addr < it->first + it->second;
}

}  // namespace plate
