// triton_plate_backend.sim._tiles: v.select over a batch's SRAM image in one pass (sim/sem_vector.py, _select),
// the checks and home-domain count of a whole-tile strided DMA (sim/dma.py, _Tiles) from the register file,
// and a bf16 m.mma per program, widened and summed by numpy's sgemm (sim/sem_matrix.py, _narrow_into).
//
// numpy's select is several passes over the tiles (the condition as 0/1 words, then b + (a - b) * cond
// on the bits), each streaming a tile of every program of the batch: this is one pass that reads the
// condition byte and both sides and writes the destination, per program row. Bits are moved, never
// computed on (NaN payloads and -0.0 kept). A plain CPython module (no numpy headers: the image comes
// through the buffer protocol); sem_vector.py keeps its numpy code as the reference, used when this
// module is not built and for the layouts this one does not take (the caller checks them).
#include <Python.h>

#include <cstdint>
#include <cstring>

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

// ---- whole matrix tiles (sim/dma.py _Tiles.make / _Tiles.traffic, their numpy code the reference) ----------

// An int64 buffer (C-contiguous, `ndim` dimensions) or false with no Python error set (the caller falls back).
bool int64_buffer(PyObject* obj, Py_buffer* view, int ndim, bool writable) {
  int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(obj, view, flags) < 0) {
    PyErr_Clear();
    return false;
  }
  const char* f = view->format ? view->format : "B";
  char last = f[0] ? f[strlen(f) - 1] : 'B';
  if (view->ndim != ndim || view->itemsize != 8 || (last != 'l' && last != 'q')) {
    PyBuffer_Release(view);
    return false;
  }
  return true;
}

// Python's floor division and modulo on int64 (the numpy code's // and %).
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// A tuple or list of `n` Python ints as int64 (false: another length, a non-int or an overflow; no error set).
bool int64_items(PyObject* seq, Py_ssize_t n, int64_t* out) {
  if (!PyTuple_Check(seq) && !PyList_Check(seq)) return false;
  if (PySequence_Fast_GET_SIZE(seq) != n) return false;
  PyObject** items = PySequence_Fast_ITEMS(seq);
  for (Py_ssize_t i = 0; i < n; ++i) {
    int overflow = 0;
    long long v = PyLong_Check(items[i]) ? PyLong_AsLongLongAndOverflow(items[i], &overflow) : -1;
    if (!PyLong_Check(items[i]) || overflow || (v == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      return false;
    }
    out[i] = v;
  }
  return true;
}

constexpr Py_ssize_t MAX_RANK = 8;

// whole_tiles(regs, base, strides, lo, hi, shape, itemsize): _Tiles.make's test and values over the register
// file (int64 [registers, P], C-contiguous) with the descriptor in registers (`base` a register, the others
// tuples of registers, one per axis of `shape`): None unless at least two programs, one set of strides, every
// element moved (lo <= 0 and hi >= the shape on every axis, at least one element), bases aligned to
// `itemsize`, and every value fits int64 (the numpy code then decides); else (span lo, span hi, lo_off,
// hi_off, numel, runs, strides): the byte range holding every tile, its offsets in elements, the elements
// and contiguous runs of one tile, the strides as ints.
PyObject* whole_tiles(PyObject*, PyObject* args) {
  PyObject *regs_obj, *s_obj, *lo_obj, *hi_obj, *shape_obj;
  Py_ssize_t base_reg, isz;
  if (!PyArg_ParseTuple(args, "OnOOOOn", &regs_obj, &base_reg, &s_obj, &lo_obj, &hi_obj, &shape_obj, &isz))
    return nullptr;
  if (!PyTuple_Check(shape_obj)) Py_RETURN_NONE;
  Py_ssize_t r = PyTuple_GET_SIZE(shape_obj);
  if (r < 2 || r > MAX_RANK || isz <= 0) Py_RETURN_NONE;
  int64_t shape[MAX_RANK], s_reg[MAX_RANK], lo_reg[MAX_RANK], hi_reg[MAX_RANK];
  if (!int64_items(shape_obj, r, shape) || !int64_items(s_obj, r, s_reg) || !int64_items(lo_obj, r, lo_reg) ||
      !int64_items(hi_obj, r, hi_reg))
    Py_RETURN_NONE;
  Py_buffer view;
  if (!int64_buffer(regs_obj, &view, 2, false)) Py_RETURN_NONE;
  const Py_ssize_t nreg = view.shape[0], P = view.shape[1];
  const int64_t* R = static_cast<const int64_t*>(view.buf);
  auto in_file = [&](int64_t reg) { return reg >= 0 && reg < nreg; };
  bool ok = P >= 2 && in_file(base_reg);
  int64_t numel = 1;
  for (Py_ssize_t i = 0; ok && i < r; ++i) {
    ok = in_file(s_reg[i]) && in_file(lo_reg[i]) && in_file(hi_reg[i]) && shape[i] >= 0 &&
         !__builtin_mul_overflow(numel, shape[i], &numel);
  }
  ok = ok && numel > 0;
  int64_t strides[MAX_RANK];
  for (Py_ssize_t i = 0; ok && i < r; ++i) {
    const int64_t *s = R + s_reg[i] * P, *lo = R + lo_reg[i] * P, *hi = R + hi_reg[i] * P;
    strides[i] = s[0];
    for (Py_ssize_t p = 0; p < P; ++p) {
      if (lo[p] > 0 || hi[p] < shape[i] || s[p] != s[0]) {
        ok = false;
        break;
      }
    }
  }
  const int64_t* base = R + base_reg * P;
  int64_t bmin = base[0], bmax = base[0];
  for (Py_ssize_t p = 0; ok && p < P; ++p) {
    if (isz > 1 && base[p] % isz != 0) ok = false;
    bmin = base[p] < bmin ? base[p] : bmin;
    bmax = base[p] > bmax ? base[p] : bmax;
  }
  PyBuffer_Release(&view);
  // lo_off / hi_off (in elements: _Box.span(whole=True)) and the runs of one tile (_Box.runs), as in make
  int64_t lo_off = 0, hi_off = 1, inner = 0, outer = numel, cont = 0;
  for (Py_ssize_t i = r - 1; ok && i >= 0; --i) {
    int64_t n = shape[i], k = strides[i], ext, step;
    if (__builtin_mul_overflow(n - 1, k, &ext)) ok = false;
    if (ok && ext < 0 && __builtin_add_overflow(lo_off, ext, &lo_off)) ok = false;
    if (ok && ext > 0 && __builtin_add_overflow(hi_off, ext, &hi_off)) ok = false;
    if (!ok) break;
    outer /= n;
    if (__builtin_sub_overflow(k, inner, &step)) ok = false;
    if (ok && n > 1 && (step == 1 || step == -1)) cont += (n - 1) * outer;
    if (ok && __builtin_add_overflow(inner, ext, &inner)) ok = false;
  }
  int64_t span_lo, span_hi, lo_bytes, hi_bytes;
  ok = ok && !__builtin_mul_overflow(lo_off, static_cast<int64_t>(isz), &lo_bytes) &&
       !__builtin_mul_overflow(hi_off, static_cast<int64_t>(isz), &hi_bytes) &&
       !__builtin_add_overflow(bmin, lo_bytes, &span_lo) && !__builtin_add_overflow(bmax, hi_bytes, &span_hi);
  if (!ok) Py_RETURN_NONE;
  PyObject* st = PyTuple_New(r);
  if (!st) return nullptr;
  for (Py_ssize_t i = 0; i < r; ++i) {
    PyObject* v = PyLong_FromLongLong(strides[i]);
    if (!v) {
      Py_DECREF(st);
      return nullptr;
    }
    PyTuple_SET_ITEM(st, i, v);
  }
  return Py_BuildValue("(LLLLLLN)", static_cast<long long>(span_lo), static_cast<long long>(span_hi),
                       static_cast<long long>(lo_off), static_cast<long long>(hi_off), static_cast<long long>(numel),
                       static_cast<long long>(numel - cont), st);
}

// tile_homes(out, base, offset, span, granule, owners, striped, nbytes): _Tiles.traffic's count for tiles of
// an allocation with several owners: when every program's tile, bytes [base + offset, + span) from the
// allocation's start, lies in one stripe or chunk of `granule` bytes, out[p, home of that piece] = nbytes
// for each program p (out: float64 [P, columns], base: int64 [P]) and True; else False, out untouched.
PyObject* tile_homes(PyObject*, PyObject* args) {
  PyObject *out_obj, *base_obj, *owners_obj;
  long long offset, span, granule;
  int striped;
  double nbytes;
  if (!PyArg_ParseTuple(args, "OOLLLOpd", &out_obj, &base_obj, &offset, &span, &granule, &owners_obj, &striped,
                        &nbytes))
    return nullptr;
  if (!PyTuple_Check(owners_obj)) {
    PyErr_SetString(PyExc_TypeError, "_tiles.tile_homes: owners must be a tuple");
    return nullptr;
  }
  const Py_ssize_t k = PyTuple_GET_SIZE(owners_obj);
  int64_t owners[64];
  if (k < 1 || k > 64 || granule <= 0 || span <= 0 || !int64_items(owners_obj, k, owners)) {
    PyErr_SetString(PyExc_ValueError, "_tiles.tile_homes: 1 to 64 int owners, a positive granule and span");
    return nullptr;
  }
  Py_buffer out, base;
  if (PyObject_GetBuffer(out_obj, &out, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) return nullptr;
  if (out.ndim != 2 || out.itemsize != 8 || !out.format || strcmp(out.format, "d") != 0) {
    PyBuffer_Release(&out);
    PyErr_SetString(PyExc_ValueError, "_tiles.tile_homes: out must be C-contiguous float64 [P, columns]");
    return nullptr;
  }
  if (!int64_buffer(base_obj, &base, 1, false)) {
    PyBuffer_Release(&out);
    PyErr_SetString(PyExc_ValueError, "_tiles.tile_homes: base must be C-contiguous int64 [P]");
    return nullptr;
  }
  const Py_ssize_t P = base.shape[0], cols = out.shape[1];
  const int64_t* b = static_cast<const int64_t*>(base.buf);
  double* o = static_cast<double*>(out.buf);
  bool fits = out.shape[0] == P;
  for (int64_t j = 0; fits && j < k; ++j) fits = owners[j] >= 0 && owners[j] < cols;
  bool whole = true;
  for (Py_ssize_t p = 0; fits && whole && p < P; ++p) {
    int64_t lo = b[p] + offset;
    whole = floor_div(lo, granule) == floor_div(lo + (span - 1), granule);
  }
  for (Py_ssize_t p = 0; fits && whole && p < P; ++p) {
    int64_t piece = floor_div(b[p] + offset, granule), at;
    if (striped) {
      at = piece % k;
      at = at < 0 ? at + k : at;
    } else {
      at = piece < k - 1 ? piece : k - 1;
    }
    o[p * cols + owners[at]] = nbytes;
  }
  PyBuffer_Release(&base);
  PyBuffer_Release(&out);
  if (!fits) {
    PyErr_SetString(PyExc_ValueError, "_tiles.tile_homes: out has another row count or too few columns");
    return nullptr;
  }
  return PyBool_FromLong(whole);
}

// ---- v.select with strided sides (sim/sem_vector.py _select_compiled; the numpy code the reference) --------

// One program row of select_strided: the destination and the condition row-major over `shape`, each side
// at its own byte strides; the last axis is the inner loop.
template <class T>
void select_strided_row(uint8_t* base, int rank, const int64_t* shape, Py_ssize_t d, Py_ssize_t c, Py_ssize_t a,
                        const int64_t* sa, Py_ssize_t b, const int64_t* sb) {
  const int64_t inner = shape[rank - 1], ia = sa[rank - 1], ib = sb[rank - 1];
  int64_t idx[MAX_RANK] = {0};
  T* out = reinterpret_cast<T*>(base + d);
  const uint8_t* cond = base + c;
  int64_t oa = a, ob = b;  // byte offsets of the sides' current inner run
  for (;;) {
    const uint8_t* pa = base + oa;
    const uint8_t* pb = base + ob;
    for (int64_t i = 0; i < inner; ++i) {
      T x, y;
      std::memcpy(&x, pa + i * ia, sizeof(T));
      std::memcpy(&y, pb + i * ib, sizeof(T));
      T m = static_cast<T>(T(0) - static_cast<T>(cond[i] != 0));
      out[i] = static_cast<T>((x & m) | (y & static_cast<T>(~m)));
    }
    out += inner;
    cond += inner;
    int ax = rank - 2;  // the odometer over the outer axes
    for (; ax >= 0; --ax) {
      if (++idx[ax] < shape[ax]) {
        oa += sa[ax];
        ob += sb[ax];
        break;
      }
      oa -= (shape[ax] - 1) * sa[ax];
      ob -= (shape[ax] - 1) * sb[ax];
      idx[ax] = 0;
    }
    if (ax < 0) return;
  }
}

// select_strided(image, programs, row, itemsize, shape, d, c, a, a_strides, b, b_strides): v.select per
// program row p of the C-contiguous uint8 image, as select does, where each side has its own byte strides
// (any sign; 0 broadcasts) over `shape` and the destination and condition are row-major. The caller checks
// that neither side nor the condition overlaps the destination.
PyObject* select_strided(PyObject*, PyObject* args) {
  PyObject *obj, *shape_obj, *sa_obj, *sb_obj;
  Py_ssize_t programs, row, itemsize, d, c, a, b;
  if (!PyArg_ParseTuple(args, "OnnnOnnnOnO", &obj, &programs, &row, &itemsize, &shape_obj, &d, &c, &a, &sa_obj, &b,
                        &sb_obj))
    return nullptr;
  Py_ssize_t rank = PySequence_Check(shape_obj) ? PySequence_Size(shape_obj) : -1;
  int64_t shape[MAX_RANK], sa[MAX_RANK], sb[MAX_RANK];
  if (rank < 1 || rank > MAX_RANK || !int64_items(shape_obj, rank, shape) || !int64_items(sa_obj, rank, sa) ||
      !int64_items(sb_obj, rank, sb)) {
    PyErr_SetString(PyExc_ValueError, "_tiles.select_strided: shape and strides: tuples of 1-8 ints");
    return nullptr;
  }
  if (itemsize != 1 && itemsize != 2 && itemsize != 4 && itemsize != 8) {
    PyErr_SetString(PyExc_ValueError, "_tiles.select_strided: elements of 1, 2, 4 or 8 bytes");
    return nullptr;
  }
  int64_t n = 1;
  for (Py_ssize_t i = 0; i < rank; ++i) {
    if (shape[i] < 0) n = -1;
    if (n > 0) n *= shape[i];
  }
  // [lo, hi) bytes a strided operand touches in its row
  auto inside = [&](Py_ssize_t off, const int64_t* st, Py_ssize_t size) {
    int64_t lo = off, hi = off + size;
    for (Py_ssize_t i = 0; i < rank; ++i) {
      int64_t span = (shape[i] - 1) * st[i];
      (span < 0 ? lo : hi) += span;
    }
    return lo >= 0 && hi <= row;
  };
  int64_t dense_d[MAX_RANK], dense_c[MAX_RANK];
  for (Py_ssize_t i = rank - 1, sd = itemsize, sc = 1; i >= 0; --i) {
    dense_d[i] = sd;
    dense_c[i] = sc;
    sd *= shape[i];
    sc *= shape[i];
  }
  Py_buffer view;
  if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) return nullptr;
  if (n < 0 || programs < 0 || row < 0 || programs * row > view.len ||
      (n > 0 && (!inside(d, dense_d, itemsize) || !inside(c, dense_c, 1) || !inside(a, sa, itemsize) ||
                 !inside(b, sb, itemsize)))) {
    PyBuffer_Release(&view);
    PyErr_SetString(PyExc_ValueError, "_tiles.select_strided: an operand lies outside the image's rows");
    return nullptr;
  }
  uint8_t* img = static_cast<uint8_t*>(view.buf);
  if (n > 0) {
    Py_BEGIN_ALLOW_THREADS for (Py_ssize_t p = 0; p < programs; ++p) {
      uint8_t* base = img + p * row;
      switch (itemsize) {
        case 1:
          select_strided_row<uint8_t>(base, int(rank), shape, d, c, a, sa, b, sb);
          break;
        case 2:
          select_strided_row<uint16_t>(base, int(rank), shape, d, c, a, sa, b, sb);
          break;
        case 4:
          select_strided_row<uint32_t>(base, int(rank), shape, d, c, a, sa, b, sb);
          break;
        default:
          select_strided_row<uint64_t>(base, int(rank), shape, d, c, a, sa, b, sb);
          break;
      }
    }
    Py_END_ALLOW_THREADS
  }
  PyBuffer_Release(&view);
  Py_RETURN_NONE;
}

// element_homes(out, addrs, counts, base, granule, owners, striped, itemsize): _element_bytes of element
// accesses all in one allocation of several owners (sim/dma.py): addrs int64 [n] in C order, program p's
// counts[p] after program p - 1's (counts int64 [P], summing to n), each element's home the owner of its
// stripe (striped: piece % k) or chunk (min(piece, k - 1)), piece = (address - base) // granule, addresses
// at or past base (located). Adds each program's count per owner times itemsize to out float64 [P, columns]
// (whole numbers: the numpy code's float sums, bit for bit). Returns None.
PyObject* element_homes(PyObject*, PyObject* args) {
  PyObject *out_obj, *addrs_obj, *counts_obj, *owners_obj;
  long long base, granule;
  int striped;
  double isz;
  if (!PyArg_ParseTuple(args, "OOOLLOpd", &out_obj, &addrs_obj, &counts_obj, &base, &granule, &owners_obj, &striped,
                        &isz))
    return nullptr;
  const Py_ssize_t k = PyTuple_Check(owners_obj) ? PyTuple_GET_SIZE(owners_obj) : 0;
  int64_t owners[64];
  if (k < 1 || k > 64 || granule <= 0 || !int64_items(owners_obj, k, owners)) {
    PyErr_SetString(PyExc_ValueError, "_tiles.element_homes: 1 to 64 int owners (a tuple), a positive granule");
    return nullptr;
  }
  Py_buffer out, addrs, counts;
  if (PyObject_GetBuffer(out_obj, &out, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) return nullptr;
  if (out.ndim != 2 || out.itemsize != 8 || !out.format || strcmp(out.format, "d") != 0) {
    PyBuffer_Release(&out);
    PyErr_SetString(PyExc_ValueError, "_tiles.element_homes: out must be C-contiguous float64 [P, columns]");
    return nullptr;
  }
  if (!int64_buffer(addrs_obj, &addrs, 1, false)) {
    PyBuffer_Release(&out);
    PyErr_SetString(PyExc_ValueError, "_tiles.element_homes: addrs must be C-contiguous int64 [n]");
    return nullptr;
  }
  if (!int64_buffer(counts_obj, &counts, 1, false)) {
    PyBuffer_Release(&addrs);
    PyBuffer_Release(&out);
    PyErr_SetString(PyExc_ValueError, "_tiles.element_homes: counts must be C-contiguous int64 [P]");
    return nullptr;
  }
  const Py_ssize_t P = counts.shape[0], cols = out.shape[1], n = addrs.shape[0];
  const int64_t *a = static_cast<const int64_t*>(addrs.buf), *c = static_cast<const int64_t*>(counts.buf);
  double* o = static_cast<double*>(out.buf);
  bool ok = out.shape[0] == P;
  for (int64_t j = 0; ok && j < k; ++j) ok = owners[j] >= 0 && owners[j] < cols;
  Py_ssize_t total = 0;
  for (Py_ssize_t p = 0; ok && p < P; ++p) ok = c[p] >= 0 && (total += c[p]) <= n;
  ok = ok && total == n;
  for (Py_ssize_t i = 0; ok && i < n; ++i) ok = a[i] >= base;
  if (ok) {
    const bool pow2 = (granule & (granule - 1)) == 0;
    int shift = 0;
    while (pow2 && (int64_t(1) << shift) < granule) ++shift;
    const double inverse = 1.0 / static_cast<double>(granule);
    int64_t tally[64];
    Py_ssize_t i = 0;
    for (Py_ssize_t p = 0; p < P; ++p) {
      for (Py_ssize_t j = 0; j < k; ++j) tally[j] = 0;
      for (const Py_ssize_t end = i + c[p]; i < end; ++i) {
        const int64_t rel = a[i] - base;
        int64_t piece;
        if (pow2) {
          piece = rel >> shift;
        } else {  // rel // granule without a 64-bit division: the reciprocal's quotient, off by at most one, corrected
          piece = static_cast<int64_t>(static_cast<double>(rel) * inverse);
          if (piece * granule > rel)
            --piece;
          else if ((piece + 1) * granule <= rel)
            ++piece;
        }
        tally[striped ? piece % k : (piece < k - 1 ? piece : k - 1)] += 1;
      }
      for (Py_ssize_t j = 0; j < k; ++j)
        if (tally[j]) o[p * cols + owners[j]] += static_cast<double>(tally[j]) * isz;
    }
  }
  PyBuffer_Release(&counts);
  PyBuffer_Release(&addrs);
  PyBuffer_Release(&out);
  if (!ok) {
    PyErr_SetString(PyExc_ValueError,
                    "_tiles.element_homes: out's rows or columns, counts or an address below base do not fit");
    return nullptr;
  }
  Py_RETURN_NONE;
}

// ---- m.mma on bf16 operands (sim/sem_matrix.py _narrow_into, its numpy code the reference) ------------------

// cblas_sgemm of the OpenBLAS numpy loaded (sim/sem_matrix.py finds it), with its integer width.
template <class I>
using Sgemm = void (*)(int, int, int, I, I, I, float, const float*, I, const float*, I, float, float*, I);

// A strided 3-d buffer [P, R, S] of `itemsize`-byte elements whose rows are contiguous (strides (any, S, 1)
// elements), or false with no Python error set (the caller falls back to numpy).
bool rows_buffer(PyObject* obj, Py_buffer* view, Py_ssize_t itemsize, bool writable) {
  if (PyObject_GetBuffer(obj, view, PyBUF_STRIDES | (writable ? PyBUF_WRITABLE : 0)) < 0) {
    PyErr_Clear();
    return false;
  }
  if (view->ndim != 3 || view->itemsize != itemsize || view->strides[2] != itemsize ||
      view->strides[1] < view->shape[2] * itemsize || view->strides[0] % itemsize || view->strides[1] % itemsize) {
    PyBuffer_Release(view);
    return false;
  }
  return true;
}

// bf16 codes to the f32 they are exactly: the code in the high half of the word.
void widen_bf16(float* __restrict__ out, const uint16_t* __restrict__ in, Py_ssize_t rows, Py_ssize_t cols,
                Py_ssize_t in_row, Py_ssize_t out_row) {
  for (Py_ssize_t r = 0; r < rows; ++r) {
    const uint16_t* x = in + r * in_row;
    uint32_t* y = reinterpret_cast<uint32_t*>(out + r * out_row);
    for (Py_ssize_t i = 0; i < cols; ++i) y[i] = static_cast<uint32_t>(x[i]) << 16;
  }
}

template <class I>
void mma_programs(Sgemm<I> sgemm, Py_buffer* v[5], bool wa, bool wb, Py_ssize_t block) {
  const Py_ssize_t P = v[0]->shape[0], M = v[0]->shape[1], K = v[0]->shape[2], N = v[1]->shape[2];
  char *a = static_cast<char*>(v[0]->buf), *b = static_cast<char*>(v[1]->buf), *c = static_cast<char*>(v[2]->buf);
  char *a32 = static_cast<char*>(v[3]->buf), *b32 = static_cast<char*>(v[4]->buf);
  for (Py_ssize_t p = 0; p < P; ++p) {
    float* pa = reinterpret_cast<float*>(a32 + p * v[3]->strides[0]);
    float* pb = reinterpret_cast<float*>(b32 + p * v[4]->strides[0]);
    float* pc = reinterpret_cast<float*>(c + p * v[2]->strides[0]);
    const Py_ssize_t lda = v[3]->strides[1] / 4, ldb = v[4]->strides[1] / 4, ldc = v[2]->strides[1] / 4;
    if (wa)
      widen_bf16(pa, reinterpret_cast<const uint16_t*>(a + p * v[0]->strides[0]), M, K, v[0]->strides[1] / 2, lda);
    if (wb)
      widen_bf16(pb, reinterpret_cast<const uint16_t*>(b + p * v[1]->strides[0]), K, N, v[1]->strides[1] / 2, ldb);
    // numpy's matmul call for each `block`-row block (row-major, no transposes, alpha 1), with beta 1: the
    // block's products summed as numpy's call sums them, then added to the accumulator once
    for (Py_ssize_t r = 0; r < M; r += block)
      sgemm(101, 111, 111, static_cast<I>(block), static_cast<I>(N), static_cast<I>(K), 1.0f, pa + r * lda,
            static_cast<I>(lda), pb, static_cast<I>(ldb), 1.0f, pc + r * ldc, static_cast<I>(ldc));
  }
}

// mma_bf16(sgemm, int64, a, b, c, a32, b32, widen_a, widen_b, block): per program p of a [P, M, K] and b
// [P, K, N] (bf16 codes, uint16), a32[p] / b32[p] (f32) = the widened operands (each unless already widened:
// widen_a / widen_b false), then c[p] (f32 [P, M, N]) += a32[p] @ b32[p] by one sgemm (the address `sgemm`,
// 64-bit integers when `int64`) per block of `block` rows, beta 1. Every array's rows contiguous. Returns
// False when the layouts are not these (nothing done), True when done.
PyObject* mma_bf16(PyObject*, PyObject* args) {
  unsigned long long address;
  int int64, wa, wb;
  Py_ssize_t block;
  PyObject* objs[5];
  if (!PyArg_ParseTuple(args, "KpOOOOOppn", &address, &int64, &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                        &wa, &wb, &block))
    return nullptr;
  Py_buffer views[5];
  Py_buffer* v[5];
  const Py_ssize_t sizes[5] = {2, 2, 4, 4, 4};
  int got = 0;
  for (; got < 5; ++got) {
    v[got] = &views[got];
    if (!rows_buffer(objs[got], v[got], sizes[got], got >= 2)) break;
  }
  bool ok = got == 5 && address != 0 && block > 0;
  if (ok) {
    const Py_ssize_t P = v[0]->shape[0], M = v[0]->shape[1], K = v[0]->shape[2], N = v[1]->shape[2];
    auto is = [&](int i, Py_ssize_t r, Py_ssize_t s) {
      return v[i]->shape[0] == P && v[i]->shape[1] == r && v[i]->shape[2] == s;
    };
    ok = is(1, K, N) && is(2, M, N) && is(3, M, K) && is(4, K, N) && M % block == 0;
  }
  if (ok) {
    Py_BEGIN_ALLOW_THREADS if (int64) mma_programs<int64_t>(reinterpret_cast<Sgemm<int64_t>>(address), v, wa, wb,
                                                           block);
    else mma_programs<int32_t>(reinterpret_cast<Sgemm<int32_t>>(address), v, wa, wb, block);
    Py_END_ALLOW_THREADS
  }
  for (int i = 0; i < got; ++i) PyBuffer_Release(v[i]);
  return PyBool_FromLong(ok);
}

PyMethodDef METHODS[] = {
    {"select", select, METH_VARARGS, "v.select over a batch's SRAM image in one pass (sim/sem_vector.py)."},
    {"select_strided", select_strided, METH_VARARGS, "v.select whose sides have strides of their own (sim/sem_vector.py)."},
    {"whole_tiles", whole_tiles, METH_VARARGS, "_Tiles.make's test and values from the register file (sim/dma.py)."},
    {"tile_homes", tile_homes, METH_VARARGS, "_Tiles.traffic's count by home of tiles in one stripe (sim/dma.py)."},
    {"element_homes", element_homes, METH_VARARGS, "_element_bytes of element accesses in one allocation (sim/dma.py)."},
    {"mma_bf16", mma_bf16, METH_VARARGS, "m.mma on bf16 operands: widened, then sgemm with beta 1 (sim/sem_matrix.py)."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_tiles", "Tile rules of the vector unit in one pass; whole-tile DMA checks.", -1, METHODS,
                      nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__tiles() { return PyModule_Create(&MODULE); }
