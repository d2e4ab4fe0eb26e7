// PrivateUse1 hooks (what torch asks a backend: availability, generators, pinned memory, torch.accelerator)
// and the plate random generator.
//
// Random numbers, as on CUDA: a plate generator is a Philox (seed, offset) pair. plate's random kernels
// (triton_plate_backend/eager_ops/) read the seed and the offset and advance the offset past the
// counters they used, so a seed reproduces on plate, and the numbers differ from the CPU's as CUDA's do.
// The random ops still left to the host (the CPU fallback) draw from a CPU generator seeded from the
// (seed, offset) pair, and move the offset on (host_draw). The state (get_state/set_state) is CUDA's: the
// seed and the offset, two int64, which libraries read and write (FlagGems' philox_backend_seed_offset).
#include "plate.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>

#include <ATen/ops/empty.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

namespace plate {
namespace {

struct PlateGeneratorImpl final : public c10::GeneratorImpl {
  explicit PlateGeneratorImpl(c10::DeviceIndex device, at::Generator twin)
      : c10::GeneratorImpl(c10::Device(kPlate, device), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        twin_(std::move(twin)) {}

  explicit PlateGeneratorImpl(c10::DeviceIndex device)
      : PlateGeneratorImpl(device, at::make_generator<at::CPUGeneratorImpl>(c10::default_rng_seed_val)) {}

  void set_current_seed(uint64_t seed) override {
    std::lock_guard<std::mutex> lock(twin_.mutex());
    twin_.set_current_seed(seed);
    philox_offset_ = 0;
  }
  void set_offset(uint64_t offset) override {
    philox_offset_ = offset;  // the Philox counter (CUDA's philox_offset_per_thread)
  }
  uint64_t get_offset() const override {
    return philox_offset_;
  }
  uint64_t current_seed() const override {
    return twin_.current_seed();
  }
  uint64_t seed() override {
    std::lock_guard<std::mutex> lock(twin_.mutex());
    philox_offset_ = 0;
    return twin_.seed();
  }
  void set_state(const c10::TensorImpl& new_state) override {
    // CUDA's layout: the seed, then the Philox offset, two int64 (16 bytes of torch.uint8)
    TORCH_CHECK(new_state.dtype() == at::kByte && new_state.numel() == kStateBytes,
                "plate: a generator state is ", kStateBytes, " bytes (torch.uint8: the seed, then the Philox offset), got ",
                new_state.numel(), " of ", new_state.dtype(), "; pass what get_rng_state() returned");
    uint64_t words[2];
    std::memcpy(words, new_state.data(), kStateBytes);
    std::lock_guard<std::mutex> lock(twin_.mutex());
    twin_.set_current_seed(words[0]);
    philox_offset_ = words[1];
  }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    const uint64_t words[2] = {twin_.current_seed(), philox_offset_.load()};
    auto state = at::empty({kStateBytes}, at::TensorOptions().dtype(at::kByte));
    std::memcpy(state.data_ptr(), words, kStateBytes);
    return state.getIntrusivePtr();
  }

  // The CPU generator a host random op draws from: seeded from (seed, offset), then the offset moves past
  // it, as a kernel's counters do; so the state (seed, offset) reproduces host draws too.
  at::Generator host_draw() {
    std::lock_guard<std::mutex> lock(twin_.mutex());
    const uint64_t offset = philox_offset_.fetch_add(kHostDrawCounters);
    const uint64_t mixed = twin_.current_seed() ^ (0x9E3779B97F4A7C15ull * (offset + 1));
    auto draw = at::make_generator<at::CPUGeneratorImpl>(mixed);
    return draw;
  }

 private:
  PlateGeneratorImpl* clone_impl() const override {
    auto* copy = new PlateGeneratorImpl(device_.index(), twin_.clone());
    copy->philox_offset_ = philox_offset_.load();
    return copy;
  }

  static constexpr int64_t kStateBytes = 2 * sizeof(uint64_t);
  static constexpr uint64_t kHostDrawCounters = 4;  // the offset step of one host draw (CUDA's offsets are x4)
  at::Generator twin_;
  std::atomic<uint64_t> philox_offset_{0};
};

std::vector<at::Generator>& default_generators() {
  const auto n = device_count();  // may call Python: not inside the static initialiser's lock
  static std::vector<at::Generator>* gens = [n] {
    auto* v = new std::vector<at::Generator>();
    for (c10::DeviceIndex i = 0; i < n; ++i) {
      v->push_back(at::make_generator<PlateGeneratorImpl>(i));
      v->back().seed();  // like CUDA: a nondeterministic seed until manual_seed
    }
    return v;
  }();
  return *gens;
}

struct PlateHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override {
    return true;
  }
  bool isAvailable() const override {
    return device_count() > 0;
  }
  bool hasPrimaryContext(c10::DeviceIndex /*unused*/) const override {
    return true;  // nothing to initialise: the simulator is created on first use
  }
  c10::DeviceIndex deviceCount() const override {
    return device_count();
  }
  void setCurrentDevice(c10::DeviceIndex device) const override {
    set_current_device(device);
  }
  c10::DeviceIndex getCurrentDevice() const override {
    return current_device();
  }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    return exchange_device(device);
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return (device < 0 || device >= device_count()) ? current_device() : exchange_device(device);
  }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex device) const override {
    return default_generator(device);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device) const override {
    const auto d = device < 0 ? current_device() : device;
    check_device_index(d);
    return at::make_generator<PlateGeneratorImpl>(d);
  }
  at::Device getDeviceFromPtr(void* data) const override {
    Region r;
    return c10::Device(kPlate, find_region(data, &r) ? r.device : current_device());
  }
  bool isPinnedPtr(const void* data) const override {
    return is_pinned_ptr(data);
  }
  at::Allocator* getPinnedMemoryAllocator() const override {
    return pinned_allocator();  // host memory a plate kernel may take as an argument (pinned.cpp)
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    // storage.resize_(): what the CPU does (resize_bytes_cpu): new bytes from the storage's allocator, memcpy
    auto* impl = storage.unsafeGetStorageImpl();
    TORCH_CHECK(impl->resizable(), "plate: this storage is not resizable");
    at::DataPtr fresh = newsize == 0 ? at::DataPtr(nullptr, impl->device()) : impl->allocator()->allocate(newsize);
    const size_t keep = std::min(newsize, impl->nbytes());
    if (keep > 0) {
      std::memcpy(fresh.get(), impl->data(), keep);
      runtime_wrote(fresh.get(), keep, impl->device().index());
    }
    impl->set_data_ptr_noswap(std::move(fresh));
    impl->set_nbytes(newsize);
  }
};

const bool g_hooks_registered = [] {
  at::RegisterPrivateUse1HooksInterface(new PlateHooks());
  return true;
}();

}  // namespace

const at::Generator& default_generator(c10::DeviceIndex device) {
  const auto d = device < 0 ? current_device() : device;
  check_device_index(d);
  auto& gens = default_generators();
  TORCH_CHECK(d < static_cast<c10::DeviceIndex>(gens.size()), "plate: no default generator for plate:", int(d));
  return gens[d];
}

at::Generator cpu_twin(const at::Generator& gen) {
  if (gen.defined() && gen.device().type() == kPlate) {
    return static_cast<PlateGeneratorImpl*>(gen.unsafeGetGeneratorImpl())->host_draw();
  }
  return gen;  // already a CPU generator
}

}  // namespace plate
