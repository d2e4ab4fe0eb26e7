// A table from object pointers to small values, open addressing with linear probing: what the compiled walks keep
// of objects found by their identity (by_identity: a VReg, a Token, an IR Value) without a dict's hashing and its
// int objects. The keys are borrowed (the code or IR being walked holds them) and never removed: a value that goes
// back to ABSENT keeps its slot.
//
// `PtrTable<Py_ssize_t, -1> number(expected)`: `number.at(p)` is p's value, ABSENT when it is new (then set it);
// `number.find(p)` reads it, ABSENT for a pointer never met, without adding it. Used by ir/csrc/irwalk.cpp (the
// verifier's visible values) and passes/csrc/codewalk.cpp (the walks' register and mnemonic numbering).
#pragma once

#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace plate_ptr_table {
namespace {  // each module its own copy: no symbol that the dynamic linker would bind across modules

template <typename V, V ABSENT>
struct PtrTable {
  std::vector<std::pair<PyObject*, V>> slots;
  size_t used = 0;

  // room for `expected` keys before the first grow: a power of two, at least 16 slots, at most half of them used
  static size_t capacity(size_t expected) {
    size_t cap = 16;
    while (cap < 2 * expected) cap <<= 1;
    return cap;
  }
  explicit PtrTable(size_t expected) : slots(capacity(expected), {nullptr, ABSENT}) {}
  // objects are 16-byte aligned: the low bits say nothing; the multiply spreads the rest over the mask's bits
  static size_t hash(PyObject* k) { return (size_t)(((uintptr_t)k >> 4) * 0x9E3779B97F4A7C15ull >> 7); }

  V& at(PyObject* k) {
    if (2 * (used + 1) > slots.size()) grow();
    size_t mask = slots.size() - 1;
    for (size_t i = hash(k) & mask;; i = (i + 1) & mask) {
      auto& e = slots[i];
      if (e.first == k) return e.second;
      if (e.first == nullptr) {
        e.first = k;
        e.second = ABSENT;
        used++;
        return e.second;
      }
    }
  }
  V find(PyObject* k) const {
    size_t mask = slots.size() - 1;
    for (size_t i = hash(k) & mask;; i = (i + 1) & mask) {
      const auto& e = slots[i];
      if (e.first == k) return e.second;
      if (e.first == nullptr) return ABSENT;
    }
  }
  void grow() {
    std::vector<std::pair<PyObject*, V>> old;
    old.swap(slots);
    slots.assign(old.size() * 2, {nullptr, ABSENT});
    size_t mask = slots.size() - 1;
    for (auto& e : old) {
      if (e.first == nullptr) continue;
      size_t i = hash(e.first) & mask;
      while (slots[i].first != nullptr) i = (i + 1) & mask;
      slots[i] = e;
    }
  }
};

}  // namespace
}  // namespace plate_ptr_table
