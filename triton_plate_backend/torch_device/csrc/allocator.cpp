// The plate allocator: a c10::DeviceAllocator (torch.accelerator.memory_* ask it for stats; a plain
// at::Allocator makes them assert) whose memory comes from the simulator's DeviceMemory through the
// Python runtime, under the placement policy of the calling thread. No caching: the simulator's
// accounting per NUMA domain is the truth, and a freed tensor's bytes go back at once.
#include "plate.h"

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

namespace plate {
namespace {

using c10::CachingAllocator::StatType;
constexpr size_t kAll = static_cast<size_t>(StatType::AGGREGATE);

struct Book {  // what the allocator knows; guarded by mutex (never held while calling Python)
  std::mutex mutex;
  std::unordered_map<uintptr_t, Region> regions;
  std::map<c10::DeviceIndex, c10::CachingDeviceAllocator::DeviceStats> stats;
};

Book& book() {
  static Book* b = new Book();  // leaked on purpose: tensors may be freed during static destruction
  return *b;
}

void record_alloc(void* ptr, size_t nbytes, c10::DeviceIndex device) {
  auto& b = book();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.regions[reinterpret_cast<uintptr_t>(ptr)] = Region{nbytes, device};
  auto& s = b.stats[device];
  const auto n = static_cast<int64_t>(nbytes);
  s.allocated_bytes[kAll].increase(n);
  s.reserved_bytes[kAll].increase(n);
  s.active_bytes[kAll].increase(n);
  s.requested_bytes[kAll].increase(n);
  s.allocation[kAll].increase(1);
  s.segment[kAll].increase(1);
  s.active[kAll].increase(1);
  s.num_device_alloc++;
}

void delete_plate_memory(void* ptr) {
  if (ptr == nullptr) {
    return;
  }
  Region r;
  {
    auto& b = book();
    std::lock_guard<std::mutex> lock(b.mutex);
    auto it = b.regions.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == b.regions.end()) {
      return;  // not ours (cannot happen through DataPtr); never free twice
    }
    r = it->second;
    b.regions.erase(it);
    auto& s = b.stats[r.device];
    const auto n = static_cast<int64_t>(r.nbytes);
    s.allocated_bytes[kAll].decrease(n);
    s.reserved_bytes[kAll].decrease(n);
    s.active_bytes[kAll].decrease(n);
    s.requested_bytes[kAll].decrease(n);
    s.allocation[kAll].decrease(1);
    s.segment[kAll].decrease(1);
    s.active[kAll].decrease(1);
    s.num_device_free++;
  }
  runtime_free(ptr, r.device);
}

struct PlateAllocator final : public c10::DeviceAllocator {
  at::DataPtr allocate(size_t nbytes) override {
    const auto device = current_device();
    const c10::Device where(kPlate, device);
    if (nbytes == 0) {
      return {nullptr, nullptr, &delete_plate_memory, where};
    }
    void* ptr = nullptr;
    try {
      ptr = runtime_alloc(nbytes, device);
    } catch (const c10::OutOfMemoryError&) {
      auto& b = book();
      std::lock_guard<std::mutex> lock(b.mutex);
      b.stats[device].num_ooms++;
      throw;
    }
    record_alloc(ptr, nbytes, device);
    return {ptr, ptr, &delete_plate_memory, where};
  }

  at::DeleterFnPtr raw_deleter() const override {
    return &delete_plate_memory;
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);  // device addresses are host addresses
    runtime_wrote(dest, count, current_device());
  }

  bool initialized() override {
    return true;
  }

  void emptyCache(c10::MempoolId_t /*unused*/) override {}  // nothing cached

  void recordStream(const at::DataPtr& /*unused*/, c10::Stream /*unused*/) override {}  // streams are in order

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    auto& b = book();
    std::lock_guard<std::mutex> lock(b.mutex);
    return b.stats[device < 0 ? current_device() : device];
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    reset_accumulated(device);
  }

  void resetPeakStats(c10::DeviceIndex device) override {
    reset_peak(device);
  }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    return runtime_mem_info(device < 0 ? current_device() : device);
  }
};

PlateAllocator g_allocator;
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_allocator);

}  // namespace

bool find_region(const void* base, Region* out) {
  auto& b = book();
  std::lock_guard<std::mutex> lock(b.mutex);
  auto it = b.regions.find(reinterpret_cast<uintptr_t>(base));
  if (it == b.regions.end()) {
    return false;
  }
  *out = it->second;
  return true;
}

AllocatorCounters allocator_counters(c10::DeviceIndex device) {
  auto& b = book();
  std::lock_guard<std::mutex> lock(b.mutex);
  const auto& s = b.stats[device];
  return {s.allocated_bytes[kAll].current, s.allocated_bytes[kAll].peak, s.num_device_alloc, s.num_device_free,
          s.num_ooms};
}

void reset_peak(c10::DeviceIndex device) {
  auto& b = book();
  std::lock_guard<std::mutex> lock(b.mutex);
  auto& s = b.stats[device < 0 ? current_device() : device];
  for (size_t i = 0; i < static_cast<size_t>(StatType::NUM_TYPES); ++i) {
    s.allocated_bytes[i].reset_peak();
    s.reserved_bytes[i].reset_peak();
    s.active_bytes[i].reset_peak();
    s.requested_bytes[i].reset_peak();
    s.allocation[i].reset_peak();
    s.segment[i].reset_peak();
    s.active[i].reset_peak();
  }
}

void reset_accumulated(c10::DeviceIndex device) {
  auto& b = book();
  std::lock_guard<std::mutex> lock(b.mutex);
  auto& s = b.stats[device < 0 ? current_device() : device];
  for (size_t i = 0; i < static_cast<size_t>(StatType::NUM_TYPES); ++i) {
    s.allocated_bytes[i].reset_accumulated();
    s.reserved_bytes[i].reset_accumulated();
    s.active_bytes[i].reset_accumulated();
    s.requested_bytes[i].reset_accumulated();
    s.allocation[i].reset_accumulated();
    s.segment[i].reset_accumulated();
    s.active[i].reset_accumulated();
  }
  s.num_device_alloc = 0;
  s.num_device_free = 0;
  s.num_ooms = 0;
}

}  // namespace plate
