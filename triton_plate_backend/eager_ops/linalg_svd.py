"""The singular value decomposition of plate tensors (float32 / float64, batched) as plate kernels: one-sided
Jacobi (linalg_svd_kernels.one_sided_jacobi) on the columns of the matrix (of its transpose when it is wide), then
the singular values (the columns' norms) sorted descending, V's rows and the columns permuted to match, and U from
Householder QR (linalg.geqrf / householder_product) of the orthogonal columns: U's first columns are the columns
divided by their norms (the QR's signs undone), the rest (a zero singular value, full_matrices) an orthonormal
completion. Singular vectors are unique only up to their signs (LAPACK's may differ; U S Vh does not).

- ``_linalg_svd``: (U, S, Vh), full_matrices or not, compute_uv or not (then U and Vh empty, as the CPU's).
- ``linalg_lstsq``: the minimum-norm solution V S^+ U^T b for every driver (``lstsq``), the CPU's layouts.

Host fallbacks, counted, each for a named reason: complex matrices (no complex kernel), a ``driver=`` (the CPU
raises torch's error), a matrix holding inf or NaN (the CPU's SVD raises LinAlgError), and matrices beyond
SVD_MAX_COLUMNS, SVD_MAX_WORK or SVD_MAX_FULL (HOST_REASON: Jacobi's cost grows as columns^2 x rows a sweep, beyond
those one call would take minutes of simulator time)."""

from __future__ import annotations

import importlib
import math

import torch

from .launch import next_power_of_2
from .linalg import LINALG_DTYPES, geqrf, householder_product
from .ops import Call, as_expected, checked
from .table import Row

# a cap (LAPACK's gesvj: 30): sweeps stop once none rotates a pair; a 32 x 32 Gaussian matrix is done within 8 (the
# columns' largest cosine after a cap of 8 and of 30 the same: 6.4e-7 fp32, 1.2e-15 fp64; 1.4e-2 after 6)
MAX_SWEEPS = 30
ROW_BLOCK = 128  # linalg_svd_kernels.ROWS: the rows one step of the kernel takes
SVD_MAX_COLUMNS = 64  # the shorter side plate's Jacobi takes
# a sweep's work: column pairs x blocks of 128 rows; one 64 x 64 fp64 svdvals (2016) takes 15.9 s of simulator CPU
SVD_MAX_WORK = 4096
SVD_MAX_FULL = 256  # full_matrices: the longer side's square factor (org2r over all its columns) up to this
HOST_REASON = (
    "svd beyond SVD_MAX_COLUMNS, SVD_MAX_WORK or SVD_MAX_FULL: too long a simulation, the host's LAPACK runs it"
)


def kernels():
    return importlib.import_module(f"{__package__}.linalg_svd_kernels")


def on_device(a: torch.Tensor, full: bool = False) -> bool:
    """Whether plate's Jacobi takes the (*, m, n) matrices ``a`` (else HOST_REASON or the dtype's); ``full``: the
    square factor of the longer side asked for too."""
    shorter, longer = sorted(a.shape[-2:])
    work = shorter * (shorter - 1) // 2 * -(-longer // ROW_BLOCK)
    small = shorter <= SVD_MAX_COLUMNS and work <= SVD_MAX_WORK and (not full or longer <= SVD_MAX_FULL)
    return a.dtype in LINALG_DTYPES and small


def svd(a: torch.Tensor, full_matrices: bool, compute_uv: bool):
    """(U, S, Vh) of the (*, m, n) matrices ``a``, batch dims kept (U and Vh None without compute_uv)."""
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    wide = m < n
    rows, cols = (n, m) if wide else (m, n)  # the tall matrix's: A^T where A is wide
    columns = torch.empty((*batch, cols, rows), dtype=a.dtype, device=a.device)
    columns.copy_(a if wide else a.mT)  # the tall matrix's columns as rows
    count = math.prod(batch)
    w = columns.reshape(count, cols, rows)
    v = torch.eye(cols, dtype=a.dtype, device=a.device).expand(count, cols, cols).contiguous()
    if count and cols > 1 and rows:
        k = kernels()
        tolerance = torch.finfo(a.dtype).eps * rows**0.5  # LAPACK's gesvj: sqrt(m) eps
        k.one_sided_jacobi[(count,)](
            w, v, rows, cols, MAX_SWEEPS, tolerance, VECTORS=compute_uv,
            ROWS=k.SHORT_ROWS if rows <= k.SHORT_ROWS else k.ROWS, N=max(k.SHORT_ROWS, next_power_of_2(cols)),
            machine=k.machine_of(a),
        )  # fmt: skip
    norms = w.to(torch.float64).square().sum(-1).sqrt().to(a.dtype)
    s, order = norms.sort(dim=-1, descending=True, stable=True)
    s = s.reshape(*batch, cols)
    if not compute_uv:
        return None, s, None
    w = w.gather(1, order[:, :, None].expand(count, cols, rows))
    vh = v.gather(1, order[:, :, None].expand(count, cols, cols))
    u_cols = rows if full_matrices else cols
    reflected, tau = geqrf(w.mT)  # no matrices or no columns: no reflectors, U the identity's columns (as the CPU's)
    u = householder_product(reflected, tau, u_cols)
    signs = torch.where(reflected.diagonal(0, -2, -1) < 0, -1.0, 1.0).to(a.dtype)
    u[:, :, :cols] *= signs[:, None, :]
    u, vh = u.reshape(*batch, *u.shape[1:]), vh.reshape(*batch, cols, cols)
    if wide:  # A^T = U S Vh: A = Vh^T S U^T
        return vh.mT, s, u.mT
    return u, s, vh


def _finite(a: torch.Tensor) -> bool:
    """No inf or NaN in ``a`` (one value read back): Jacobi would return NaN where LAPACK reports an error."""
    return not a.numel() or bool(torch.isfinite(a).all())


def _empty_like(e: torch.Tensor, device) -> torch.Tensor:
    return torch.empty_strided(e.shape, e.stride(), dtype=e.dtype, device=device)


def _column_major(x: torch.Tensor) -> torch.Tensor:
    """x with column-major matrices, the layout the CPU gives Vh (the meta kernel's is row-major)."""
    return torch.empty(x.mT.shape, dtype=x.dtype, device=x.device).mT.copy_(x)


def svd_op(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        a = call["A"]
        if call["driver"] is not None or not on_device(a, call["full_matrices"] and call["compute_uv"]):
            return call.on_host()  # a driver: the CPU's error; else HOST_REASON (or a complex matrix)
        if not _finite(a):
            return call.on_host()  # the CPU's LinAlgError ("failed to converge ... non-finite values")
        compute_uv = call["compute_uv"]
        u, s, vh = svd(a, call["full_matrices"], compute_uv)
        if not compute_uv:
            return _empty_like(expected[0], a.device), as_expected(s, expected[1]), _empty_like(expected[2], a.device)
        return as_expected(u, expected[0]), as_expected(s, expected[1]), _column_major(vh)

    return kernel


# ---- least squares: the pseudo-inverse from the SVD --------------------------------------------------------
LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")  # the CPU's; another name: the host raises torch's error


def lstsq(a: torch.Tensor, b: torch.Tensor, rcond: float | None, driver: str):
    """linalg_lstsq's (solution, residuals, rank, singular_values) of the (*, m, n) matrices a and (*, m, k)
    right-hand sides b (batch dims broadcast), as the CPU lays them out. The solution is the minimum-norm one,
    V S^+ U^T b, the singular values at or below rcond times the largest (default eps max(m, n)) taken as zero and
    counted out of the rank: gelsd's / gelss' rule (gelsy estimates the rank by QR with column pivoting instead,
    the same one but on matrices whose singular values straddle the threshold; gels assumes full rank)."""
    m, n = a.shape[-2:]
    k = b.shape[-1]
    shape = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    u, s, vh = svd(a, False, True)  # rank and singular values keep a's batch shape, the rest broadcast
    if rcond is None or rcond < 0:  # LAPACK: a negative rcond is machine precision
        rcond = torch.finfo(a.dtype).eps * max(m, n) if rcond is None else torch.finfo(a.dtype).eps
    kept = s > rcond * s[..., :1]
    inverse = torch.where(kept, 1 / torch.where(kept, s, 1), 0)
    x = (vh.mT @ ((u.mT @ b) * inverse[..., :, None])).expand(*shape, n, k)
    rank = kept.sum(-1)
    solution = torch.empty((*shape, k, max(m, n)), dtype=a.dtype, device=a.device).mT[..., :n, :]
    solution.copy_(x)  # a column-major (*, max(m, n), k) buffer's first n rows, as LAPACK's
    full_rank = driver == "gels" or bool((rank == n).all())
    if m > n and driver == "gels" and not n:  # the CPU's gels leaves an empty matrix's residuals 0
        residuals = torch.zeros((*shape, k), dtype=a.dtype, device=a.device)
    elif m > n and driver != "gelsy" and full_rank:
        residuals = (a @ x - b).square().sum(-2)
    else:
        residuals = torch.empty((0,), dtype=a.dtype, device=a.device)
    if driver == "gels":
        rank = torch.empty((0,), dtype=torch.int64, device=a.device)
    if driver not in ("gelsd", "gelss"):
        s = torch.empty((0,), dtype=a.dtype, device=a.device)
    return solution, residuals, rank, s


def lstsq_op(op: torch._ops.OpOverload, row: Row):
    """linalg_lstsq has no meta kernel: the CPU's layout written here, a call it refuses (shapes, dtypes, devices,
    a driver it does not know) left to the host, which raises its error."""

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        a, b, driver = call["self"], call["b"], call["driver"] or "gelsy"
        vector = b.dim() == a.dim() - 1
        if call.mixed or a.dim() < 2 or b.dim() < 1 or not (vector or b.dim() == a.dim()):
            return call.on_host()
        rhs = b.unsqueeze(-1) if vector else b
        if a.dtype != b.dtype or not on_device(a) or driver not in LSTSQ_DRIVERS or rhs.shape[-2] != a.shape[-2]:
            return call.on_host()  # torch's error, a complex matrix or HOST_REASON
        try:
            torch.broadcast_shapes(a.shape[:-2], rhs.shape[:-2])
        except RuntimeError:
            return call.on_host()
        if not _finite(a):
            return call.on_host()  # what LAPACK makes of inf / NaN (the CPU's SVD raises, its gelsy does not)
        solution, residuals, rank, s = lstsq(a, rhs, call["rcond"], driver)
        return (solution.squeeze(-1) if vector else solution), residuals, rank, s

    return kernel


FAMILIES = {
    "svd": svd_op,
    "lstsq": lstsq_op,
}
