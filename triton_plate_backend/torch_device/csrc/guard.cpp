// Device guard, streams and events of the plate device.
//
// The simulated device runs every launch to completion before returning, so each stream is an
// in-order queue that is always drained: streams are names (ids), waits and synchronizes return at
// once. Events read the device's MODELED clock (the simulator's clock_ns, advanced by each launch's
// modeled time), so torch.Event.elapsed_time reports modeled milliseconds, as Triton's do_bench does.
#include "plate.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <array>
#include <atomic>

namespace plate {
namespace {

constexpr int kMaxDevices = 64;
thread_local std::array<c10::StreamId, kMaxDevices> t_current_stream{};  // 0: the default stream
std::atomic<c10::StreamId> g_next_stream{1};

struct PlateEvent {
  double time_ns = -1.0;  // modeled clock at record(); < 0: never recorded
  bool timing = false;
};

c10::DeviceIndex resolve(c10::DeviceIndex index) {
  return index < 0 ? current_device() : index;
}

c10::Stream make_stream(c10::DeviceIndex device, c10::StreamId id) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kPlate, device), id);
}

struct PlateGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  PlateGuardImpl() = default;

  c10::DeviceType type() const override {
    return kPlate;
  }

  c10::Device exchangeDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kPlate, "plate: expected a plate device, got ", d);
    return c10::Device(kPlate, exchange_device(d.index()));
  }

  c10::Device getDevice() const override {
    return c10::Device(kPlate, current_device());
  }

  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kPlate, "plate: expected a plate device, got ", d);
    set_current_device(d.index());
  }

  void uncheckedSetDevice(c10::Device d) const noexcept override {
    try {
      set_current_device(d.index());
    } catch (...) {
    }
  }

  c10::Stream getStream(c10::Device d) const override {
    return current_stream(d.index());
  }

  c10::Stream getDefaultStream(c10::Device d) const override {
    return make_stream(resolve(d.index()), 0);
  }

  c10::Stream getStreamFromGlobalPool(c10::Device d, bool /*isHighPriority*/) const override {
    return make_stream(resolve(d.index()), g_next_stream++);
  }

  c10::Stream getNewStream(c10::Device d, int /*priority*/) const override {
    return make_stream(resolve(d.index()), g_next_stream++);
  }

  c10::Stream exchangeStream(c10::Stream s) const override {
    auto old = current_stream(s.device_index());
    set_current_stream(s);
    return old;
  }

  c10::DeviceIndex deviceCount() const noexcept override {
    return device_count();
  }

  void destroyEvent(void* event, const c10::DeviceIndex /*unused*/) const noexcept override {
    delete static_cast<PlateEvent*>(event);
  }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(), "plate: event of device ",
                int(device_index), " recorded on a stream of device ", int(stream.device_index()));
    auto* ev = static_cast<PlateEvent*>(*event);
    if (ev == nullptr) {
      ev = new PlateEvent();
      ev->timing = flag == c10::EventFlag::BACKEND_DEFAULT;  // torch.Event(enable_timing=True)
      *event = ev;
    }
    ev->time_ns = runtime_now_ns(stream.device_index());
  }

  void block(void* /*event*/, const c10::Stream& /*stream*/) const override {}  // already complete

  bool queryEvent(void* /*event*/) const override {
    return true;
  }

  bool queryStream(const c10::Stream& /*stream*/) const override {
    return true;
  }

  void synchronizeStream(const c10::Stream& /*stream*/) const override {}

  void synchronizeEvent(void* /*event*/) const override {}

  void synchronizeDevice(const c10::DeviceIndex /*device_index*/) const override {}

  void recordDataPtrOnStream(const c10::DataPtr& /*unused*/, const c10::Stream& /*unused*/) const override {}

  double elapsedTime(void* start, void* end, const c10::DeviceIndex /*device_index*/) const override {
    return event_elapsed_ms(start, end);
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, PlateGuardImpl);

}  // namespace

c10::Stream current_stream(c10::DeviceIndex device) {
  const auto d = resolve(device);
  TORCH_CHECK(d < kMaxDevices, "plate: device index ", int(d), " is out of range");
  return make_stream(d, t_current_stream[d]);
}

double event_elapsed_ms(const void* start, const void* end) {
  const auto* a = static_cast<const PlateEvent*>(start);
  const auto* b = static_cast<const PlateEvent*>(end);
  TORCH_CHECK(a != nullptr && b != nullptr && a->time_ns >= 0 && b->time_ns >= 0,
              "plate: elapsed_time needs both events recorded first (call record())");
  TORCH_CHECK(a->timing && b->timing,
              "plate: both events must be created with enable_timing=True to measure elapsed time");
  return (b->time_ns - a->time_ns) / 1e6;  // modeled milliseconds
}

void set_current_stream(const c10::Stream& stream) {
  TORCH_CHECK(stream.device_type() == kPlate, "plate: set_stream got a stream of ", stream.device());
  const auto d = resolve(stream.device_index());
  TORCH_CHECK(d < kMaxDevices, "plate: device index ", int(d), " is out of range");
  t_current_stream[d] = stream.id();
}

}  // namespace plate
