// triton_plate_backend.sim._tiles: v.select over a batch's SRAM image in one pass (sim/sem_vector.py, _select).
//
// numpy's select is several passes over the tiles (the condition as 0/1 words, then b + (a - b) * cond
// on the bits), each streaming a tile of every program of the batch: this is one pass that reads the
// condition byte and both sides and writes the destination, per program row. Bits are moved, never
// computed on (NaN payloads and -0.0 kept). A plain CPython module (no numpy headers: the image comes
// through the buffer protocol); sem_vector.py keeps its numpy code as the reference, used when this
// module is not built and for the layouts this one does not take (the caller checks them).
#include <Python.h>

#include <cstdint>

namespace {

// One program row: the element loop with each side's step known (contiguous, or 0: a broadcast constant)
// so that the compiler vectorizes it.
template <class T, bool A_ONE, bool B_ONE>
void select_row(T* __restrict__ out, const uint8_t* __restrict__ cond, const T* pa, const T* pb, Py_ssize_t n) {
  const T a0 = A_ONE ? *pa : T(0), b0 = B_ONE ? *pb : T(0);
  for (Py_ssize_t i = 0; i < n; ++i) {
    T x = A_ONE ? a0 : pa[i];
    T y = B_ONE ? b0 : pb[i];
    T m = static_cast<T>(T(0) - static_cast<T>(cond[i] != 0));  // all ones where the byte is nonzero
    out[i] = static_cast<T>((x & m) | (y & static_cast<T>(~m)));
  }
}

template <class T, bool A_ONE, bool B_ONE>
void select_rows(uint8_t* img, Py_ssize_t programs, Py_ssize_t row, Py_ssize_t n, Py_ssize_t d, Py_ssize_t c,
                 Py_ssize_t a, Py_ssize_t b) {
  for (Py_ssize_t p = 0; p < programs; ++p) {
    uint8_t* base = img + p * row;
    // tiles are aligned to their element size and rows to 64 bytes (sim/executor.py): typed access is safe
    select_row<T, A_ONE, B_ONE>(reinterpret_cast<T*>(base + d), base + c, reinterpret_cast<const T*>(base + a),
                                reinterpret_cast<const T*>(base + b), n);
  }
}

template <class T>
void select_typed(uint8_t* img, Py_ssize_t programs, Py_ssize_t row, Py_ssize_t n, Py_ssize_t d, Py_ssize_t c,
                  Py_ssize_t a, Py_ssize_t a_step, Py_ssize_t b, Py_ssize_t b_step) {
  if (a_step && b_step)
    select_rows<T, false, false>(img, programs, row, n, d, c, a, b);
  else if (b_step)
    select_rows<T, true, false>(img, programs, row, n, d, c, a, b);
  else if (a_step)
    select_rows<T, false, true>(img, programs, row, n, d, c, a, b);
  else
    select_rows<T, true, true>(img, programs, row, n, d, c, a, b);
}

// select(image, programs, row, itemsize, n, d, c, a, a_step, b, b_step): per program row p of the
// C-contiguous uint8 image (programs rows of `row` bytes), the n elements of `itemsize` bytes at byte
// offset d become those at a (stepping a_step bytes: itemsize, or 0 for a broadcast constant) where the
// condition byte at c + i is nonzero, else those at b. d and c contiguous; d either equal to a side or
// disjoint from it (the caller checks), so reading element i before writing it sees the operands as
// they were.
PyObject* select(PyObject*, PyObject* args) {
  PyObject* obj;
  Py_ssize_t programs, row, itemsize, n, d, c, a, a_step, b, b_step;
  if (!PyArg_ParseTuple(args, "Onnnnnnnnnn", &obj, &programs, &row, &itemsize, &n, &d, &c, &a, &a_step, &b,
                        &b_step))
    return nullptr;
  Py_buffer view;
  if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) return nullptr;
  auto ends = [&](Py_ssize_t off, Py_ssize_t step, Py_ssize_t size) {
    return off >= 0 && off + (n > 0 ? (n - 1) * step + size : 0) <= row;
  };
  if (programs < 0 || row < 0 || n < 0 || programs * row > view.len || !ends(d, itemsize, itemsize) ||
      !ends(c, 1, 1) || !ends(a, a_step, itemsize) || !ends(b, b_step, itemsize) || a_step < 0 || b_step < 0) {
    PyBuffer_Release(&view);
    PyErr_SetString(PyExc_ValueError, "_tiles.select: an operand lies outside the image's rows");
    return nullptr;
  }
  uint8_t* img = static_cast<uint8_t*>(view.buf);
  Py_BEGIN_ALLOW_THREADS switch (itemsize) {
    case 1:
      select_typed<uint8_t>(img, programs, row, n, d, c, a, a_step, b, b_step);
      break;
    case 2:
      select_typed<uint16_t>(img, programs, row, n, d, c, a, a_step, b, b_step);
      break;
    case 4:
      select_typed<uint32_t>(img, programs, row, n, d, c, a, a_step, b, b_step);
      break;
    case 8:
      select_typed<uint64_t>(img, programs, row, n, d, c, a, a_step, b, b_step);
      break;
    default:
      break;
  }
  Py_END_ALLOW_THREADS PyBuffer_Release(&view);
  if (itemsize != 1 && itemsize != 2 && itemsize != 4 && itemsize != 8) {
    PyErr_SetString(PyExc_ValueError, "_tiles.select: elements of 1, 2, 4 or 8 bytes");
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyMethodDef METHODS[] = {
    {"select", select, METH_VARARGS, "v.select over a batch's SRAM image in one pass (sim/sem_vector.py)."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_tiles", "Tile rules of the vector unit in one pass.", -1, METHODS,
                      nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__tiles() { return PyModule_Create(&MODULE); }
