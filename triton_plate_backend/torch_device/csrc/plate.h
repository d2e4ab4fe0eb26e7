// The plate torch device, C++ side: what the translation units share.
//
// Layers, one direction (STYLE.md, OpenReg): Python API (torch_device/*.py) -> this thin C++
// binding -> the Python runtime object (torch_device/memory.py) -> the simulator's DeviceMemory.
// Device addresses are host addresses: a plate tensor's data_ptr() points at bytes the simulator
// owns, so copies are memcpy and CPU kernels can read device memory directly.
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

typedef struct _object PyObject;  // Python.h stays out of the headers the kernels include

namespace c10 {
class OperatorHandle;
struct IValue;
}  // namespace c10

namespace at {
class Generator;
class Tensor;
}  // namespace at

namespace plate {

constexpr c10::DeviceType kPlate = c10::DeviceType::PrivateUse1;

// ---- the Python runtime (runtime.cpp) ------------------------------------------------------------
// Set once at import by torch_device/_registration.py; the object has alloc, free, now_ns, mem_info,
// covers and device_count (see memory.py). Every call acquires the GIL, so any thread may call.
void set_runtime(PyObject* runtime);
// After interpreter shutdown begins nothing calls Python any more (frees become no-ops).
void stop_runtime();
// Is this thread running a function torch.compile wraps? The innermost frame of this thread's Python stack
// whose code object is marked answers (set_compiled_frame_marks: the wrapper torch.compile returns, true but
// under a stance that runs it eagerly;
// Dynamo's and AOTAutograd's compilers, false); no marked frame, false. Takes the GIL; false once Python is
// unusable.
bool in_compiled_frame();
// marks: {code object: answer}, answer a bool or a callable of no arguments asked when its frame is the
// innermost marked one (a dict; null forgets them). Call with the GIL held.
void set_compiled_frame_marks(PyObject* marks);

void* runtime_alloc(size_t nbytes, c10::DeviceIndex device);  // throws c10::OutOfMemoryError on OOM
void runtime_free(void* ptr, c10::DeviceIndex device) noexcept;
double runtime_now_ns(c10::DeviceIndex device);
std::pair<size_t, size_t> runtime_mem_info(c10::DeviceIndex device);  // (free, total) bytes
bool runtime_covers(c10::DeviceIndex device, const void* ptr, size_t nbytes);
// Host writes to device bytes, reported to the runtime's wrote() for the init sanitizer
// (PLATE_SANITIZE=init) once Python switched tracking on; a no-op otherwise.
void set_track_host_writes(bool on);
void runtime_wrote(const void* ptr, size_t nbytes, c10::DeviceIndex device);

// ---- devices (runtime.cpp) ------------------------------------------------------------------------
c10::DeviceIndex device_count() noexcept;  // from the runtime, cached; 1 before it is known
c10::DeviceIndex current_device() noexcept;
void set_current_device(c10::DeviceIndex index);
c10::DeviceIndex exchange_device(c10::DeviceIndex index);
void check_device_index(c10::DeviceIndex index);

// ---- memory (allocator.cpp) -----------------------------------------------------------------------
struct Region {
  size_t nbytes = 0;
  c10::DeviceIndex device = -1;
};
// The live allocation based at ``base``, if the plate allocator made it.
bool find_region(const void* base, Region* out);
struct AllocatorCounters {
  int64_t allocated, peak, num_allocs, num_frees, num_ooms;
};
AllocatorCounters allocator_counters(c10::DeviceIndex device);
void reset_peak(c10::DeviceIndex device);
void reset_accumulated(c10::DeviceIndex device);

// ---- pinned host memory (pinned.cpp) --------------------------------------------------------------
// The allocator of pin_memory=True CPU tensors, and whether an address lies inside one of its live blocks.
at::Allocator* pinned_allocator();
bool is_pinned_ptr(const void* ptr);

// ---- streams (guard.cpp) --------------------------------------------------------------------------
c10::Stream current_stream(c10::DeviceIndex device);
void set_current_stream(const c10::Stream& stream);
// Modeled milliseconds between two recorded events (event ids as torch.Event.event_id gives them).
double event_elapsed_ms(const void* start, const void* end);

// ---- random numbers (hooks.cpp) -------------------------------------------------------------------
const at::Generator& default_generator(c10::DeviceIndex device);
// The CPU generator that holds a plate generator's state: what CPU kernels draw from in the fallback.
at::Generator cpu_twin(const at::Generator& gen);

// ---- tensors (kernels.cpp) ------------------------------------------------------------------------
// Checks that a plate tensor's bytes lie inside a live device allocation and its own storage.
void check_device_bytes(const at::Tensor& t, const char* what);
// A CPU tensor over the same host bytes (same sizes, strides, dtype, conj/neg bits): no copy.
at::Tensor host_alias(const at::Tensor& t, const char* what);
// Report a host write to a plate tensor: its whole extent counts as written (runtime_wrote).
void note_host_write(const at::Tensor& t);

// ---- the CPU fallback (fallback.cpp) -------------------------------------------------------------------
// Run `op` on the host as the fallback does (counted): for plate kernels that leave some cases to the host.
void run_on_host(const c10::OperatorHandle& op, std::vector<c10::IValue>* stack);
// Python: _run_on_host(name, overload, args, kwargs) (host_call.cpp).
PyObject* run_on_host_py(PyObject* self, PyObject* args);
// ---- host ops (host_ops.cpp) ------------------------------------------------------------------------
// What the CPU fallback ran on the host, by operator name: process-wide, and per scope of one thread.
using HostOpCounts = std::vector<std::pair<std::string, int64_t>>;
void count_host_op(const std::string& name);  // called by the fallback for every op it runs
HostOpCounts host_op_counts();
void reset_host_op_counts();
size_t enter_host_op_scope();  // returns the scope's depth, to hand to exit_host_op_scope
HostOpCounts exit_host_op_scope(size_t depth);  // the ops this thread ran on the host since the enter
// Host ops outside any scope while a compiled function ran (its graph breaks' eager code, the frames Dynamo
// resumes, what they call), kept apart once watching is on: marks as set_compiled_frame_marks takes them,
// null stops (it takes the GIL per host op, so it is off until asked for). Call with the GIL held.
void watch_compiled_frames(PyObject* marks);
HostOpCounts compiled_frame_host_op_counts();
void reset_compiled_frame_host_op_counts();

}  // namespace plate
