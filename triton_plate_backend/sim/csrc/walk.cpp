// triton_plate_backend.sim._walk: two of the timing model's per-entry walks in C: the cost model's per-program replay
// (sim/estimate.py, _program_times) and the level-1 bandwidth calendar's pass (sim/bandwidth.py, Calendar._pass).
//
// A plain CPython module (no numpy headers: arrays come through the buffer protocol). Each function
// applies its numpy code's float operations in the same order (the model's walk program by program: the
// numpy walk does each step for all its programs at once, and no step mixes two programs' values; the
// calendar's sums per cell in flow order, as np.bincount adds them), so its results are bit-identical:
// max and min as numpy's (np.maximum, np.minimum, np.fmin), no fused multiply-add (setup.py builds it
// with -ffp-contract=off). The numpy code stays as the reference and runs when this module is not built.
#include <Python.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

inline double mx(double a, double b) { return (a >= b || a != a) ? a : b; }  // np.maximum's rule

// A C-contiguous buffer of `n` items of `size` bytes (n < 0: any length).
struct Buf {
  Py_buffer view{};
  bool held = false;
  ~Buf() {
    if (held) PyBuffer_Release(&view);
  }
  bool get(PyObject* obj, Py_ssize_t size, Py_ssize_t n, bool writable, const char* name) {
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &view, flags) < 0) return false;
    held = true;
    if (view.itemsize != size || (n >= 0 && view.len / size < n)) {
      PyErr_Format(PyExc_ValueError, "_walk.program_times: %s must hold %zd items of %zd bytes (has %zd of %zd)",
                   name, n, size, view.len / view.itemsize, view.itemsize);
      return false;
    }
    return true;
  }
  template <class T>
  T* at() const {
    return static_cast<T*>(view.buf);
  }
  Py_ssize_t items() const { return view.len / view.itemsize; }
};

enum Kind : int64_t { SCALAR = 0, WAIT = 1, WAIT_ALL = 2, COMPUTE = 3, DMA = 4 };
constexpr int PC_INTS = 9;  // kind, engine, token (-1: none), outbound, then 5 offsets into deps
constexpr int STEP_INTS = 5;  // pc, first entry, end entry (a scalar run's), group, DMA row (-1: none)
constexpr int DMA_INTS = 2;  // offset of its issue cycles, offset of its transfer times (-1: none)

// program_times(n, depth, eng, ready, read, issued, tok, done, out_busy, ring, nq,
//               pc_int, pc_f64, deps, steps, cost_of, g_off, g_ps, dma, issue, xfer, flight, moved)
// State arrays (float64 unless said, written in place): eng [3, n], ready [T, n], read [T, n],
// issued [3, n], tok [Q, n], done [n], out_busy [n], ring [2, depth, n], nq int64 [2, n].
// pc_int int64 [P, 9], pc_f64 [P, 2] (cost, extra latency), deps int64: per pc its after_write,
// after_read, reads and writes tiles between consecutive offsets. steps int64 [S, 5]; cost_of [E];
// g_off int64 [G + 1], g_ps int64: a group's programs; dma int64 [Dm, 2]; issue, xfer, flight float64,
// moved uint8: per program of a DMA step.
PyObject* program_times(PyObject*, PyObject* args) {
  Py_ssize_t n, depth;
  PyObject* o[21];
  if (!PyArg_ParseTuple(args, "nnOOOOOOOOOOOOOOOOOOOOO", &n, &depth, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                        &o[6], &o[7], &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14], &o[15], &o[16],
                        &o[17], &o[18], &o[19], &o[20]))
    return nullptr;
  Buf eng_b, ready_b, read_b, issued_b, tok_b, done_b, busy_b, ring_b, nq_b;
  Buf pci_b, pcf_b, deps_b, steps_b, cost_b, goff_b, gps_b, dma_b, issue_b, xfer_b, flight_b, moved_b;
  if (!eng_b.get(o[0], 8, 3 * n, true, "eng") || !ready_b.get(o[1], 8, -1, true, "ready") ||
      !read_b.get(o[2], 8, ready_b.items(), true, "read") || !issued_b.get(o[3], 8, 3 * n, true, "issued") ||
      !tok_b.get(o[4], 8, -1, true, "tok") || !done_b.get(o[5], 8, n, true, "done") ||
      !busy_b.get(o[6], 8, n, true, "out_busy") || !ring_b.get(o[7], 8, 2 * depth * n, true, "ring") ||
      !nq_b.get(o[8], 8, 2 * n, true, "nq") || !pci_b.get(o[9], 8, -1, false, "pc_int") ||
      !pcf_b.get(o[10], 8, 2 * (pci_b.items() / PC_INTS), false, "pc_f64") ||
      !deps_b.get(o[11], 8, -1, false, "deps") || !steps_b.get(o[12], 8, -1, false, "steps") ||
      !cost_b.get(o[13], 8, -1, false, "cost_of") || !goff_b.get(o[14], 8, -1, false, "g_off") ||
      !gps_b.get(o[15], 8, -1, false, "g_ps") || !dma_b.get(o[16], 8, -1, false, "dma") ||
      !issue_b.get(o[17], 8, -1, false, "issue") || !xfer_b.get(o[18], 8, -1, false, "xfer") ||
      !flight_b.get(o[19], 8, xfer_b.items(), false, "flight") ||
      !moved_b.get(o[20], 1, xfer_b.items(), false, "moved"))
    return nullptr;
  if (n < 1 || depth < 1) {
    PyErr_SetString(PyExc_ValueError, "_walk.program_times: n and depth must be positive");
    return nullptr;
  }
  double *eng = eng_b.at<double>(), *ready = ready_b.at<double>(), *read = read_b.at<double>();
  double *issued = issued_b.at<double>(), *tok = tok_b.at<double>(), *done = done_b.at<double>();
  double *out_busy = busy_b.at<double>(), *ring = ring_b.at<double>();
  int64_t* nq = nq_b.at<int64_t>();
  const int64_t *pc_int = pci_b.at<int64_t>(), *deps = deps_b.at<int64_t>(), *steps = steps_b.at<int64_t>();
  const int64_t *g_off = goff_b.at<int64_t>(), *g_ps = gps_b.at<int64_t>(), *dma = dma_b.at<int64_t>();
  const double *pc_f64 = pcf_b.at<double>(), *cost_of = cost_b.at<double>(), *issue = issue_b.at<double>();
  const double *xfer = xfer_b.at<double>(), *flight = flight_b.at<double>();
  const uint8_t* moved = moved_b.at<uint8_t>();
  const Py_ssize_t P = pci_b.items() / PC_INTS, S = steps_b.items() / STEP_INTS, E = cost_b.items();
  const Py_ssize_t T = ready_b.items() / (n ? n : 1), Q = tok_b.items() / (n ? n : 1);
  const Py_ssize_t G = goff_b.items() - 1, Dm = dma_b.items() / DMA_INTS;
  const Py_ssize_t ndeps = deps_b.items(), nps = gps_b.items(), nissue = issue_b.items(), nx = xfer_b.items();
  double* e1 = eng + n;

  // every index is checked before the walk writes anything: a bad table raises, it never corrupts memory
  for (Py_ssize_t p = 0; p < P; p++) {
    const int64_t* r = pc_int + p * PC_INTS;
    if (r[0] < SCALAR || r[0] > DMA || (r[0] == DMA && r[1] != 0 && r[1] != 2) || r[2] >= Q || r[4] < 0 ||
        r[8] > ndeps)
      goto bad;
    for (int k = 4; k < 8; k++)
      if (r[k] > r[k + 1]) goto bad;
    if (r[0] == WAIT && r[2] < 0) goto bad;
    for (int64_t k = r[4]; k < r[8]; k++)
      if (deps[k] < 0 || deps[k] >= T) goto bad;
  }
  for (Py_ssize_t g = 0; g < G; g++)
    if (g_off[g] < 0 || g_off[g] > g_off[g + 1] || g_off[g + 1] > nps) goto bad;
  for (Py_ssize_t k = 0; k < nps; k++)
    if (g_ps[k] < 0 || g_ps[k] >= n) goto bad;
  for (Py_ssize_t s = 0; s < S; s++) {
    const int64_t* r = steps + s * STEP_INTS;
    if (r[0] < 0 || r[0] >= P || r[1] < 0 || r[2] <= r[1] || r[2] > E || r[3] < 0 || r[3] >= G || r[4] >= Dm)
      goto bad;
    if ((pc_int[r[0] * PC_INTS] == DMA) != (r[4] >= 0)) goto bad;
    const Py_ssize_t k = g_off[r[3] + 1] - g_off[r[3]];
    if (r[4] >= 0) {
      const int64_t* d = dma + r[4] * DMA_INTS;
      // d[1] == -1: a DMA that moves no bytes (every element masked off) reads no transfer times
      if (d[0] < 0 || d[0] + k > nissue || d[1] < -1 || (d[1] >= 0 && d[1] + k > nx)) goto bad;
    }
  }

  Py_BEGIN_ALLOW_THREADS;  // the arrays are the caller's own: another thread may run meanwhile
  for (Py_ssize_t s = 0; s < S; s++) {
    const int64_t* r = steps + s * STEP_INTS;
    const int64_t* pc = pc_int + r[0] * PC_INTS;
    const double cost = pc_f64[2 * r[0]];
    const int64_t* ps = g_ps + g_off[r[3]];
    const Py_ssize_t k = g_off[r[3] + 1] - g_off[r[3]];
    const int64_t *aw = deps + pc[4], *ar = deps + pc[5], *rd = deps + pc[6], *wr = deps + pc[7];
    const int64_t naw = pc[5] - pc[4], nar = pc[6] - pc[5], nrd = pc[7] - pc[6], nwr = pc[8] - pc[7];
    switch (pc[0]) {
      case SCALAR:  // a run of scalar entries: their costs added one after another
        for (Py_ssize_t x = 0; x < k; x++) {
          double e = e1[ps[x]];
          for (int64_t m = r[1]; m < r[2]; m++) e += cost_of[m];
          e1[ps[x]] = e;
        }
        break;
      case WAIT:
        for (Py_ssize_t x = 0; x < k; x++) e1[ps[x]] = mx(e1[ps[x]], tok[pc[2] * n + ps[x]]) + cost;
        break;
      case WAIT_ALL:
        for (Py_ssize_t x = 0; x < k; x++) e1[ps[x]] = mx(e1[ps[x]], done[ps[x]]) + cost;
        break;
      case COMPUTE:
        for (Py_ssize_t x = 0; x < k; x++) {
          const int64_t q = ps[x];
          double start = e1[q];
          for (int64_t t = 0; t < naw; t++) start = mx(start, ready[aw[t] * n + q]);
          for (int64_t t = 0; t < nar; t++) start = mx(start, read[ar[t] * n + q]);
          const double end = start + cost;
          e1[q] = end;
          for (int64_t t = 0; t < nrd; t++) read[rd[t] * n + q] = mx(read[rd[t] * n + q], end);
          for (int64_t t = 0; t < nwr; t++) ready[wr[t] * n + q] = mx(ready[wr[t] * n + q], end);
        }
        break;
      default: {  // DMA
        const int64_t engine = pc[1], kq = engine / 2, token = pc[2];
        const bool outbound = pc[3] != 0;
        const double extra = pc_f64[2 * r[0] + 1];
        const int64_t* d = dma + r[4] * DMA_INTS;
        const double* iss = issue + d[0];
        const bool timed = d[1] >= 0;
        double *eng_e = eng + engine * n, *issued_e = issued + engine * n, *ring_k = ring + kq * depth * n;
        int64_t* nq_k = nq + kq * n;
        for (Py_ssize_t x = 0; x < k; x++) {
          const int64_t q = ps[x];
          const int64_t slot = nq_k[q] % depth;
          double start1 = mx(e1[q], ring_k[slot * n + q]);  // a full DMA queue stalls the stream
          e1[q] = start1;
          for (int64_t t = 0; t < naw; t++) start1 = mx(start1, ready[aw[t] * n + q]);
          for (int64_t t = 0; t < nar; t++) start1 = mx(start1, read[ar[t] * n + q]);
          const double moving = eng_e[q];
          const double st = mx(issued_e[q], start1);  // cost.dma_stages
          const double issue_end = st + iss[x];
          issued_e[q] = issue_end;
          const double a = mx(issue_end, moving);
          double xe = a, comp = a;
          if (timed) {
            xe = a + xfer[d[1] + x];
            comp = moved[d[1] + x] ? xe + flight[d[1] + x] + extra : a;
          }
          eng_e[q] = xe;
          if (outbound) out_busy[q] += xe - mx(st, moving);
          if (token >= 0) tok[token * n + q] = comp;
          done[q] = mx(done[q], comp);
          ring_k[slot * n + q] = comp;
          nq_k[q] += 1;
          for (int64_t t = 0; t < nrd; t++) read[rd[t] * n + q] = mx(read[rd[t] * n + q], xe);
          for (int64_t t = 0; t < nwr; t++) ready[wr[t] * n + q] = mx(ready[wr[t] * n + q], comp);
        }
      }
    }
  }
  Py_END_ALLOW_THREADS;
  Py_RETURN_NONE;
bad:
  PyErr_SetString(PyExc_ValueError, "_walk.program_times: an index in the tables is out of range");
  return nullptr;
}


// ---- the bandwidth calendar's pass (sim/bandwidth.py, Calendar._pass over one dense range of buckets) ----

inline double mn(double a, double b) { return (a <= b || a != a) ? a : b; }     // np.minimum's rule
inline double fmn(double a, double b) { return (a <= b || b != b) ? a : b; }    // np.fmin's rule

struct Cells {  // bandwidth._Cells: cells [F, J, K] flattened (f, j, k), N cells
  Py_ssize_t F, J, K, S, N;
  std::vector<int64_t> cells, col;  // col [F, K]
  std::vector<double> cap, capx, tol;
  // np.bincount(cells, weights=spread(x)): per cell, its flows' values added in (f, j, k) order
  void per_cell(const double* x, double* out) const {
    std::fill(out, out + N, 0.0);
    for (Py_ssize_t f = 0; f < F; f++)
      for (Py_ssize_t j = 0; j < J; j++) {
        const int64_t* c = &cells[(f * J + j) * K];
        const double* xf = x + f * K;
        for (Py_ssize_t k = 0; k < K; k++) out[c[k]] += xf[k];
      }
  }
};

// bandwidth._waterfill
void waterfill(const Cells& c, const double* demand, double* alloc, int rounds = 6) {
  const Py_ssize_t FK = c.F * c.K, N = c.N, S = c.S, J = c.J, K = c.K;
  std::vector<double> pc(N);
  c.per_cell(demand, pc.data());
  bool over = false;
  for (Py_ssize_t i = 0; i < N; i++) over |= pc[i] > c.capx[i];
  if (!over) {
    std::copy(demand, demand + FK, alloc);
    return;
  }
  std::vector<double> head(demand, demand + FK), live(FK), rem(c.cap), floor_(FK), share(N), level(FK), colmin(S);
  for (Py_ssize_t i = 0; i < FK; i++) {
    live[i] = head[i] > 0;
    floor_[i] = 1e-9 * demand[i];
  }
  for (int i = 0; i <= rounds; i++) {
    c.per_cell(live.data(), pc.data());
    for (Py_ssize_t n = 0; n < N; n++) share[n] = rem[n] / pc[n];
    if (i < rounds) {
      for (Py_ssize_t s = 0; s < S; s++) colmin[s] = share[s];
      for (Py_ssize_t r = 1; r < N / S; r++)
        for (Py_ssize_t s = 0; s < S; s++) colmin[s] = fmn(colmin[s], share[r * S + s]);
      for (Py_ssize_t n = 0; n < FK; n++) level[n] = colmin[c.col[n]];
    } else {
      for (Py_ssize_t f = 0; f < c.F; f++)
        for (Py_ssize_t k = 0; k < K; k++) {
          double v = share[c.cells[f * J * K + k]];
          for (Py_ssize_t j = 1; j < J; j++) v = fmn(v, share[c.cells[(f * J + j) * K + k]]);
          level[f * K + k] = v;
        }
    }
    for (Py_ssize_t n = 0; n < FK; n++) {
      const double give = fmn(level[n], head[n]);
      alloc[n] = i == 0 ? give : alloc[n] + give;
      head[n] -= give;
      level[n] = give;
    }
    c.per_cell(level.data(), pc.data());
    for (Py_ssize_t n = 0; n < N; n++) rem[n] = mx(rem[n] - pc[n], 0.0);
    Py_ssize_t nlive = 0;
    for (Py_ssize_t f = 0; f < c.F; f++)
      for (Py_ssize_t k = 0; k < K; k++) {
        const Py_ssize_t n = f * K + k;
        bool l = head[n] > floor_[n];
        bool free_ = true;
        for (Py_ssize_t j = 0; j < J; j++) free_ = free_ && rem[c.cells[(f * J + j) * K + k]] > c.tol[c.cells[(f * J + j) * K + k]];
        l = l && free_;
        live[n] = l;
        head[n] *= l;
        nlive += l;
      }
    if (!nlive) break;
  }
}

// bandwidth._reach: cumulative allocation per flow, first bucket where it reaches the need (K if never)
void reach(const double* alloc, const double* need, Py_ssize_t F, Py_ssize_t K, double* cum, int64_t* fin) {
  for (Py_ssize_t f = 0; f < F; f++) {
    double a = 0.0;
    const double want = need[f] * (1 - 1e-12);
    fin[f] = K;
    for (Py_ssize_t k = 0; k < K; k++) {
      a = k ? a + alloc[f * K + k] : alloc[f * K];
      cum[f * K + k] = a;
    }
    if (cum[f * K + K - 1] >= want)
      for (Py_ssize_t k = 0; k < K; k++)
        if (cum[f * K + k] >= want) {
          fin[f] = k;
          break;
        }
  }
}

// calendar_pass(used, base, kmin, S, K, dl, cap, cap_padded, fa, fb, fr, frate, cum, t, fin, kf0)
// Calendar._pass over one dense range of S bucket columns from kmin (the caller grew ``used``), flows
// starting at fa in buckets kf0 (fa // dl): commits the flows' bytes into ``used`` [R + 1, width] and
// fills cum [F, K], t [F] (where some flow is done) and fin [F] (the first bucket reaching the flow's
// bytes, K if none). Returns (all done, any done).
// calendar_pass_columns(used, base, S, K, dl, cap, cap_padded, fa, fb, fr, frate, cum, t, fin, kf0, c0, ucol)
// The same over any S columns: ucol int64 [S] the column of ``used`` of each, increasing (the numpy pass's
// union of the flows' windows when they start far apart), c0 int64 [F] each flow's first column.
PyObject* calendar_pass_any(PyObject* args, bool columns) {
  PyObject* o[14];
  Py_ssize_t base, kmin = 0, S, K;
  double dl;
  if (columns ? !PyArg_ParseTuple(args, "OnnndOOOOOOOOOOOO", &o[0], &base, &S, &K, &dl, &o[1], &o[2], &o[3], &o[4],
                                  &o[5], &o[6], &o[7], &o[8], &o[9], &o[10], &o[11], &o[12])
              : !PyArg_ParseTuple(args, "OnnnndOOOOOOOOOO", &o[0], &base, &kmin, &S, &K, &dl, &o[1], &o[2], &o[3],
                                  &o[4], &o[5], &o[6], &o[7], &o[8], &o[9], &o[10]))
    return nullptr;
  Buf used_b, cap_b, capp_b, fa_b, fb_b, fr_b, rate_b, cum_b, t_b, fin_b, kf0_b, c0_b, ucol_b;
  if (!used_b.get(o[0], 8, -1, true, "used") || !cap_b.get(o[1], 8, -1, false, "cap") ||
      !capp_b.get(o[2], 8, cap_b.items() + 1, false, "cap_padded") || !fa_b.get(o[3], 8, -1, false, "fa") ||
      !fb_b.get(o[4], 8, fa_b.items(), false, "fb") || !fr_b.get(o[5], 8, -1, false, "fr") ||
      !rate_b.get(o[6], 8, fa_b.items(), false, "frate") || !cum_b.get(o[7], 8, fa_b.items() * K, true, "cum") ||
      !t_b.get(o[8], 8, fa_b.items(), true, "t") || !fin_b.get(o[9], 8, fa_b.items(), true, "fin") ||
      !kf0_b.get(o[10], 8, fa_b.items(), false, "kf0"))
    return nullptr;
  if (columns && (!c0_b.get(o[11], 8, fa_b.items(), false, "c0") || !ucol_b.get(o[12], 8, S, false, "ucol")))
    return nullptr;
  const Py_ssize_t R = cap_b.items(), F = fa_b.items(), J = F ? fr_b.items() / F : 1;
  const Py_ssize_t width = used_b.items() / (R + 1), rows = J == 1 ? R : R + 1;
  double *used = used_b.at<double>(), *cum = cum_b.at<double>(), *t = t_b.at<double>();
  const double *cap = cap_b.at<double>(), *cap_padded = capp_b.at<double>(), *fa = fa_b.at<double>();
  const double *fb = fb_b.at<double>(), *frate = rate_b.at<double>();
  const int64_t* fr = fr_b.at<int64_t>();
  int64_t* fin = fin_b.at<int64_t>();
  const int64_t* kf0 = kf0_b.at<int64_t>();
  // per flow its first column, per column its column of ``used``: the dense range's, or the caller's
  std::vector<int64_t> first_col(F > 0 ? F : 0), used_col(S > 0 ? S : 0);
  for (Py_ssize_t f = 0; f < F; f++) first_col[f] = columns ? c0_b.at<int64_t>()[f] : kf0[f] - kmin;
  for (Py_ssize_t s = 0; s < S; s++) used_col[s] = columns ? ucol_b.at<int64_t>()[s] : kmin - base + s;
  if (F < 1 || K < 1 || S < K || J < 1 || fr_b.items() != F * J || used_col[0] < 0 || used_col[S - 1] >= width ||
      used_b.items() != (R + 1) * width || !(dl > 0)) {
    PyErr_SetString(PyExc_ValueError, "_walk.calendar_pass: inconsistent shapes");
    return nullptr;
  }
  for (Py_ssize_t s = 1; s < S; s++)
    if (used_col[s] <= used_col[s - 1]) goto bad;
  for (Py_ssize_t f = 0; f < F; f++) {
    if (first_col[f] < 0 || first_col[f] + K > S) goto bad;
    if (kf0[f] + K - 1 - base >= width || kf0[f] - base < 0) goto bad;  // the drain reads its last bucket
    for (Py_ssize_t j = 0; j < J; j++)
      if (fr[f * J + j] < 0 || fr[f * J + j] >= rows) goto bad;
  }
  {
    const Py_ssize_t FK = F * K, N = rows * S;
    Cells c;
    c.F = F, c.J = J, c.K = K, c.S = S, c.N = N;
    c.cells.resize(F * J * K), c.col.resize(FK);
    std::vector<double> lo(FK), ell(FK), edges(F * (K + 1)), active(N, 0.0), demand(FK), alloc(FK);
    for (Py_ssize_t f = 0; f < F; f++) {
      const int64_t c0 = first_col[f];
      for (Py_ssize_t k = 0; k <= K; k++) edges[f * (K + 1) + k] = static_cast<double>(kf0[f] + k) * dl;
      for (Py_ssize_t k = 0; k < K; k++) {
        c.col[f * K + k] = c0 + k;
        lo[f * K + k] = mx(fa[f], edges[f * (K + 1) + k]);
        ell[f * K + k] = edges[f * (K + 1) + k + 1] - lo[f * K + k];
      }
      for (Py_ssize_t j = 0; j < J; j++)
        for (Py_ssize_t k = 0; k < K; k++) c.cells[(f * J + j) * K + k] = fr[f * J + j] * S + c0 + k;
    }
    for (Py_ssize_t f = 0; f < F; f++)  // active[cells[..., 1:]] = dl
      for (Py_ssize_t j = 0; j < J; j++)
        for (Py_ssize_t k = 1; k < K; k++) active[c.cells[(f * J + j) * K + k]] = dl;
    for (Py_ssize_t f = 0; f < F; f++)  // np.maximum.at(active, first, ell0)
      for (Py_ssize_t j = 0; j < J; j++) {
        const int64_t cell = c.cells[(f * J + j) * K];
        active[cell] = mx(active[cell], ell[f * K]);
      }
    c.cap.resize(N), c.tol.resize(N), c.capx.resize(N);
    for (Py_ssize_t r = 0; r < R; r++)
      for (Py_ssize_t s = 0; s < S; s++) {
        const double v = mn(cap[r] * dl - used[r * width + used_col[s]], cap[r] * active[r * S + s]);
        c.cap[r * S + s] = mx(v, 0.0);
        c.tol[r * S + s] = 1e-9 * c.cap[r * S + s];
      }
    if (J > 1)
      for (Py_ssize_t s = 0; s < S; s++) c.cap[R * S + s] = INFINITY, c.tol[R * S + s] = 0.0;
    for (Py_ssize_t n = 0; n < N; n++) c.capx[n] = c.cap[n] * (1 + 1e-12);
    for (Py_ssize_t f = 0; f < F; f++)
      for (Py_ssize_t k = 0; k < K; k++) demand[f * K + k] = frate[f] * ell[f * K + k];
    waterfill(c, demand.data(), alloc.data());
    reach(alloc.data(), fb, F, K, cum, fin);
    int64_t fmin_ = fin[0], fmax_ = fin[0];
    for (Py_ssize_t f = 1; f < F; f++) fmin_ = std::min(fmin_, fin[f]), fmax_ = std::max(fmax_, fin[f]);
    if (fmin_ < fmax_) {  // peers that finish early free their share: once more
      for (Py_ssize_t f = 0; f < F; f++)
        for (Py_ssize_t k = 0; k < K; k++) demand[f * K + k] *= static_cast<double>(k <= fin[f]);
      waterfill(c, demand.data(), alloc.data());
      reach(alloc.data(), fb, F, K, cum, fin);
      fmin_ = fmax_ = fin[0];
      for (Py_ssize_t f = 1; f < F; f++) fmin_ = std::min(fmin_, fin[f]), fmax_ = std::max(fmax_, fin[f]);
    }
    std::vector<double> kept(FK), cum_before(F), at_fc(F), percell(N);
    for (Py_ssize_t f = 0; f < F; f++) {
      const int64_t fc = std::min<int64_t>(fin[f], K - 1);
      at_fc[f] = alloc[f * K + fc];
      cum_before[f] = cum[f * K + fc] - at_fc[f];
      for (Py_ssize_t k = 0; k < K; k++) kept[f * K + k] = alloc[f * K + k] * static_cast<double>(k < fin[f]);
      if (fmax_ < K || fin[f] < K) kept[f * K + fc] = fb[f] - cum_before[f];
    }
    c.per_cell(kept.data(), percell.data());
    for (Py_ssize_t r = 0; r < rows; r++)
      for (Py_ssize_t s = 0; s < S; s++) used[r * width + used_col[s]] += percell[r * S + s];
    if (fmin_ < K) {
      for (Py_ssize_t f = 0; f < F; f++) {
        const int64_t fc = std::min<int64_t>(fin[f], K - 1);
        double tf = lo[f * K + fc] + ell[f * K + fc] * (fb[f] - cum_before[f]) / at_fc[f];
        // a flow cannot finish before its last bucket's committed bytes could drain
        const Py_ssize_t kb = kf0[f] + fc - base;
        double drain;
        if (J == 1) {
          drain = used[fr[f] * width + kb] / cap[fr[f]];
        } else {
          drain = used[fr[f * J] * width + kb] / cap_padded[fr[f * J]];
          for (Py_ssize_t j = 1; j < J; j++) drain = mx(drain, used[fr[f * J + j] * width + kb] / cap_padded[fr[f * J + j]]);
        }
        t[f] = mx(tf, edges[f * (K + 1) + fc] + drain);
      }
    }
    return Py_BuildValue("(OO)", fmax_ < K ? Py_True : Py_False, fmin_ < K ? Py_True : Py_False);
  }
bad:
  PyErr_SetString(PyExc_ValueError, "_walk.calendar_pass: a flow's window, column or resource is out of range");
  return nullptr;
}

PyObject* calendar_pass(PyObject*, PyObject* args) { return calendar_pass_any(args, false); }
PyObject* calendar_pass_columns(PyObject*, PyObject* args) { return calendar_pass_any(args, true); }

PyMethodDef METHODS[] = {
    {"program_times", program_times, METH_VARARGS, "The cost model's per-entry walk (sim/estimate.py)."},
    {"calendar_pass", calendar_pass, METH_VARARGS, "One pass of the bandwidth calendar (sim/bandwidth.py)."},
    {"calendar_pass_columns", calendar_pass_columns, METH_VARARGS,
     "One pass of the bandwidth calendar over any columns (sim/bandwidth.py)."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_walk", "Two of the timing model's per-entry walks in C.", -1, METHODS,
                      nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__walk() { return PyModule_Create(&MODULE); }
