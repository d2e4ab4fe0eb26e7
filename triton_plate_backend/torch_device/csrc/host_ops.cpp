// Host ops, counted and named: every aten op the boxed CPU fallback (fallback.cpp) runs on the host for
// plate tensors, by operator name ("aten::mm.out"). One process-wide table, and a per-thread stack of
// scopes so a caller can ask what ran on the host between two points of its own thread (Inductor's
// compiled graphs), and, once asked to watch, those run outside any scope while a compiled function runs
// (its graph breaks' eager code) apart. The cost is one mutex and one map update per op (plus a GIL round trip when watching),
// small next to the op itself, which runs a CPU kernel.
#include "plate.h"

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace plate {
namespace {

std::mutex counts_mutex;
std::map<std::string, int64_t> counts;  // every host op of the process since the last reset
thread_local std::vector<std::map<std::string, int64_t>> scopes;  // open scopes of this thread
std::atomic<bool> watching{false};
std::map<std::string, int64_t> in_compiled_frames;  // guarded by counts_mutex

}  // namespace

void count_host_op(const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(counts_mutex);
    ++counts[name];
  }
  if (!scopes.empty()) {
    ++scopes.back()[name];
  } else if (watching.load() && in_compiled_frame()) {  // not under the lock: it takes the GIL
    std::lock_guard<std::mutex> lock(counts_mutex);
    ++in_compiled_frames[name];
  }
}

void watch_compiled_frames(PyObject* marks) {
  set_compiled_frame_marks(marks);
  watching.store(marks != nullptr);
}

HostOpCounts compiled_frame_host_op_counts() {
  std::lock_guard<std::mutex> lock(counts_mutex);
  return HostOpCounts(in_compiled_frames.begin(), in_compiled_frames.end());
}

void reset_compiled_frame_host_op_counts() {
  std::lock_guard<std::mutex> lock(counts_mutex);
  in_compiled_frames.clear();
}

HostOpCounts host_op_counts() {
  std::lock_guard<std::mutex> lock(counts_mutex);
  return HostOpCounts(counts.begin(), counts.end());
}

void reset_host_op_counts() {
  std::lock_guard<std::mutex> lock(counts_mutex);
  counts.clear();
}

size_t enter_host_op_scope() {
  scopes.emplace_back();
  return scopes.size();
}

HostOpCounts exit_host_op_scope(size_t depth) {
  // scopes left open by an exception in between are closed with this one; their ops belong to it
  std::map<std::string, int64_t> merged;
  while (scopes.size() >= depth && !scopes.empty()) {
    for (const auto& [name, n] : scopes.back()) {
      merged[name] += n;
    }
    scopes.pop_back();
  }
  if (!scopes.empty()) {  // an enclosing scope saw them too
    for (const auto& [name, n] : merged) {
      scopes.back()[name] += n;
    }
  }
  return HostOpCounts(merged.begin(), merged.end());
}

}  // namespace plate
