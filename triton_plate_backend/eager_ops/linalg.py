"""Linear algebra on plate tensors (float32 / float64, batched, broadcast batches) as plate kernels
(linalg_kernels): an LU factorization with partial pivoting, a Cholesky factorization, row permutations and
triangular solves, and the ops torch builds from them as the CPU builds them (ATen's BatchLinearAlgebra.cpp):

- ``linalg_lu_factor_ex``: (LU, pivots, info) as LAPACK's getrf (1-based pivots, info the first zero pivot).
- ``linalg_lu_solve``: getrs (left / right, adjoint or not); ``_linalg_solve_ex``: the LU of A and that solve, a
  vector right-hand side as numpy's; ``linalg_inv_ex``: that solve of the identity.
- ``_linalg_det`` / ``_linalg_slogdet``: the product of U's diagonal times the permutation's sign (its logs), of
  the LU of A^T where A is contiguous and real (the CPU's choice, which their autograd formulas repeat).
- ``linalg_cholesky_ex``: potrf of A's lower triangle (upper=True: of its upper one, the factor transposed).
- ``linalg_solve_triangular``: trsm (left / right, upper / lower, unit diagonal or not).
- the older forms: ``linalg_lu`` and ``lu_unpack`` (P from the swaps), ``_cholesky_solve_helper``,
  ``cholesky_inverse``, ``triangular_solve``, ``cholesky``.
- ``geqrf`` / ``linalg_householder_product`` (``orgqr``) / ``linalg_qr``: Householder QR (geqr2, org2r).
- ``_linalg_eigh`` up to EIGH_MAX rows: cyclic Jacobi, eigenvalues ascending, eigenvectors up to their signs.

Errors as torch raises them: the meta kernels check shapes and dtypes (a float16 matrix, a non-square one:
torch's message), ``check_errors`` raises torch's LinAlgError from ``info`` (torch._linalg_check_errors, the
CPU's own messages). Complex matrices and ``pivot=False`` run on the host, counted (the CPU refuses the
latter). LU and Cholesky run column by column up to BLOCKED_FROM rows and in panels of NB columns above (the
trailing updates plate's bmm), so results differ from LAPACK's in the last bits: within a few ulp times the
condition number."""

from __future__ import annotations

import importlib
import math
import warnings

import torch

from .launch import next_power_of_2, triton_cdiv
from .ops import Call, as_expected, checked
from .table import Row

LINALG_DTYPES = (torch.float32, torch.float64)
# the blocked factorizations: matrices above BLOCKED_FROM rows in panels of NB columns (their updates plate's bmm)
NB = 64
BLOCKED_FROM = 96


def kernels():
    return importlib.import_module(f"{__package__}.linalg_kernels")


# ---- the factorizations and solves over (batch, n, n) contiguous copies ------------------------------------
def _flat(t: torch.Tensor, inner: int) -> torch.Tensor:
    """``t`` as (batch, *its last ``inner`` dims): its batch dims flattened into one. Not ``reshape(-1, ...)``, which
    torch refuses for an empty tensor whose inner dims hold a 0 (the -1 would be ambiguous): an empty batch of
    0 x 0 matrices is a valid linalg input (OpInfo's reference inputs have them)."""
    return t.reshape(math.prod(t.shape[: t.dim() - inner]), *t.shape[t.dim() - inner :])


def _owned(a: torch.Tensor, n: int) -> torch.Tensor:
    """A new contiguous (batch, n, n) copy of the square matrices ``a`` (any strides, broadcast batches)."""
    out = torch.empty((*a.shape[:-2], n, n), dtype=a.dtype, device=a.device)
    return _flat(out.copy_(a), 2)


def lu_factor(a: torch.Tensor):
    """(LU, pivots, info) of the matrices ``a`` (batch dims flattened): row-major LU, int32 pivots and info. Up to
    BLOCKED_FROM rows one getf2 kernel; above, getrf's right-looking blocks: a panel of NB columns by the kernel, its
    swaps applied to the columns on either side, U12 = L11^-1 A12 by the triangular solve, A22 -= L21 U12 by plate's
    bmm."""
    n = a.shape[-1]
    lu = _owned(a, n)
    batch = lu.shape[0]
    pivots = torch.empty((batch, n), dtype=torch.int32, device=a.device)
    info = torch.zeros((batch,), dtype=torch.int32, device=a.device)
    if not (batch and n):
        return lu, pivots, info
    if n <= BLOCKED_FROM:
        _panel(lu, pivots, info, 0)
        return lu, pivots, info
    for k0 in range(0, n, NB):
        k1 = min(k0 + NB, n)
        swaps = pivots[:, k0:k1]
        _panel(lu[:, k0:, k0:k1], swaps, info, k0)
        if k0:
            _permute(lu[:, k0:, :k0], swaps, backward=False, base=k0)
        if k1 < n:
            _permute(lu[:, k0:, k1:], swaps, backward=False, base=k0)
            _trsm(lu[:, k0:k1, k0:k1], lu[:, k0:k1, k1:], upper=False, unit=True)
            lu[:, k1:, k1:].sub_(torch.bmm(lu[:, k1:, k0:k1], lu[:, k0:k1, k1:]))
    return lu, pivots, info


def _panel(panel: torch.Tensor, pivots: torch.Tensor, info: torch.Tensor, offset: int) -> None:
    """getf2 of the (batch, rows, cols) view ``panel`` (column stride 1), its pivots into the (batch, cols) view."""
    batch, rows, cols = panel.shape
    k = kernels()
    k.lu_factor[(batch,)](
        panel, pivots, info, rows, cols, panel.stride(1), panel.stride(0), pivots.stride(0), offset,
        SMALLEST=torch.finfo(panel.dtype).tiny, ROWS=k.ROWS, COLS=k.COLS, machine=k.machine_of(panel),
    )  # fmt: skip


def cholesky_lower(a: torch.Tensor):
    """(L, info): the lower Cholesky factors of ``a``'s lower triangles (batch dims flattened). Up to BLOCKED_FROM
    rows one potf2 kernel; above, potrf's right-looking blocks: A11 by the kernel, L21 = A21 L11^-T by the
    triangular solve, A22 -= L21 L21^T by plate's bmm."""
    n = a.shape[-1]
    factor = _owned(a, n)
    batch = factor.shape[0]
    info = torch.zeros((batch,), dtype=torch.int32, device=a.device)
    if not (batch and n):
        return factor, info
    for k0 in range(0, n, n if n <= BLOCKED_FROM else NB):
        k1 = n if n <= BLOCKED_FROM else min(k0 + NB, n)
        diagonal = factor[:, k0:k1, k0:k1]
        k = kernels()
        rows = min(k.ROWS, next_power_of_2(k1 - k0))
        k.cholesky[(batch,)](
            diagonal, info, k1 - k0, diagonal.stride(1), diagonal.stride(0), k0, ROWS=rows, COLS=min(k.COLS, rows),
            machine=k.machine_of(a),
        )  # fmt: skip
        if k1 < n:
            below = factor[:, k1:, k0:k1]
            _trsm(diagonal, below.mT, upper=False, unit=False)
            factor[:, k1:, k1:].sub_(torch.bmm(below, below.mT))
    return factor.tril(), info


def _trsm(t: torch.Tensor, x: torch.Tensor, upper: bool, unit: bool) -> None:
    """x[b] := t[b]^-1 x[b] in place, over (batch, n, n) and (batch, n, k) views of any strides."""
    batch, n, nrhs = x.shape
    if not (batch and n and nrhs):
        return
    k = kernels()
    k.triangular_solve[(batch, triton_cdiv(nrhs, k.RHS_BLOCK))](
        t, x, n, nrhs, *t.stride(), *x.stride(), UPPER=upper, UNIT=unit, ROWS=k.ROWS, BLOCK=k.RHS_BLOCK,
        machine=k.machine_of(x),
    )  # fmt: skip


def _permute(x: torch.Tensor, pivots: torch.Tensor, backward: bool, base: int = 0) -> None:
    """getrs' / getrf's row swaps (laswp) of the (batch, n, k) view x: rows i and pivots[:, i] - 1 - base."""
    batch, n, nrhs = x.shape
    if not (batch and n and nrhs):
        return
    k = kernels()
    k.permute_rows[(batch, triton_cdiv(nrhs, k.RHS_BLOCK))](
        x, pivots, pivots.shape[1], nrhs, *x.stride(), pivots.stride(0), base,
        BACKWARD=backward, BLOCK=k.RHS_BLOCK, machine=k.machine_of(x),
    )  # fmt: skip


def _broadcast(matrices: torch.Tensor, rhs: torch.Tensor):
    """The batch shape both broadcast to, and each expanded to it."""
    shape = torch.broadcast_shapes(matrices.shape[:-2], rhs.shape[:-2])
    return shape, matrices.expand(*shape, *matrices.shape[-2:]), rhs.expand(*shape, *rhs.shape[-2:])


def lu_solve(lu: torch.Tensor, pivots: torch.Tensor, b: torch.Tensor, left: bool, adjoint: bool) -> torch.Tensor:
    """getrs: A^-1 B (A^-T B when adjoint; B A^-1, B A^-T when not left) of A = P L U given as (lu, pivots)."""
    if not left:  # X A = B: A^T X^T = B^T
        return lu_solve(lu, pivots, b.mT, True, not adjoint).mT
    n = lu.shape[-1]
    shape, lu, b = _broadcast(lu, b)
    lu = _owned(lu, n)
    pivots = torch.empty((*shape, n), dtype=torch.int32, device=b.device).copy_(
        pivots.expand(*shape, n))  # fmt: skip
    pivots = _flat(pivots, 1)
    x = torch.empty(b.shape, dtype=b.dtype, device=b.device).copy_(b)
    flat = _flat(x, 2)
    if not adjoint:  # P L U x = b
        _permute(flat, pivots, backward=False)
        _trsm(lu, flat, upper=False, unit=True)
        _trsm(lu, flat, upper=True, unit=False)
    else:  # U^T L^T P^T x = b
        _trsm(lu.mT, flat, upper=False, unit=False)
        _trsm(lu.mT, flat, upper=True, unit=True)
        _permute(flat, pivots, backward=True)
    return x


def solve_triangular(a: torch.Tensor, b: torch.Tensor, upper: bool, left: bool, unit: bool) -> torch.Tensor:
    if not left:  # X A = B: A^T X^T = B^T
        return solve_triangular(a.mT, b.mT, not upper, True, unit).mT
    n = a.shape[-1]
    shape, a, b = _broadcast(a, b)
    x = torch.empty(b.shape, dtype=b.dtype, device=b.device).copy_(b)
    _trsm(_owned(a, n), _flat(x, 2), upper=upper, unit=unit)
    return x


def _permutation_sign(pivots: torch.Tensor) -> torch.Tensor:
    """(-1) ** (the number of rows the pivots swap), per matrix."""
    n = pivots.shape[-1]
    identity = torch.arange(1, n + 1, dtype=torch.int32, device=pivots.device)
    swaps = (pivots != identity).sum(-1)
    return 1 - 2 * (swaps % 2)


# ---- the ops ---------------------------------------------------------------------------------------------
def _covered(*tensors: torch.Tensor) -> bool:
    return all(t.dtype in LINALG_DTYPES for t in tensors)


def _factored(a: torch.Tensor, expected_lu, expected_pivots, expected_info=None):
    """lu_factor of ``a`` (batch dims kept), written as the meta kernel lays the results out."""
    lu, pivots, info = lu_factor(a)
    written = [as_expected(lu, expected_lu), as_expected(pivots, expected_pivots)]
    if expected_info is not None:
        written.append(as_expected(info, expected_info))
    return written, info.reshape(a.shape[:-2])


def _use_transpose(a: torch.Tensor) -> bool:
    """det / slogdet: the CPU factors A^T of a contiguous real A (torch 2.13; its solve factors A itself), and the
    autograd formulas solve with the LU they return accordingly."""
    return a.is_contiguous() and not a.is_complex()


def lu_factor_ex(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        a = call["A"]
        if not call["pivot"] or not _covered(a) or a.shape[-1] != a.shape[-2]:
            return call.on_host()  # rectangular LU (torch.lu of a 3 x 5 matrix): the CPU's, as linalg_lu's
        (lu, pivots, info), raw = _factored(a, *expected)
        if call["check_errors"]:
            torch._linalg_check_errors(raw, "torch.linalg.lu_factor_ex", is_matrix=a.dim() == 2)
        return lu, pivots, info

    return kernel


def lu_solve_op(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        lu, pivots, b = call["LU"], call["pivots"], call["B"]
        if not _covered(lu, b):
            return call.on_host()
        return as_expected(lu_solve(lu, pivots, b, call["left"], call["adjoint"]), expected)

    return kernel


def solve_ex(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        a, b, left = call["A"], call["B"], call["left"]
        if not _covered(a, b):
            return call.on_host()
        (lu, pivots, info), raw = _factored(a, *expected[1:])
        if call["check_errors"]:
            torch._linalg_check_errors(raw, "torch.linalg.solve_ex", is_matrix=a.dim() == 2)
        vector = b.dim() == 1 or (a.dim() - 1 == b.dim() and b.shape == a.shape[:-1])
        x = lu_solve(lu, pivots, b.unsqueeze(-1) if vector else b, left, False)
        return as_expected(x.squeeze(-1) if vector else x, expected[0]), lu, pivots, info

    return kernel


def inv_ex(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        a = call["A"]
        if not _covered(a):
            return call.on_host()
        lu, pivots, info = lu_factor(a)
        info = info.reshape(a.shape[:-2])
        if call["check_errors"]:
            torch._linalg_check_errors(info, "linalg.inv_ex", is_matrix=a.dim() == 2)
        n = a.shape[-1]
        identity = torch.eye(n, dtype=a.dtype, device=a.device).expand(lu.shape[0], n, n)
        x = lu_solve(lu, pivots, identity, True, False)
        return as_expected(x, expected[0]), as_expected(info, expected[1])

    return kernel


def det(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        a = call["A"]
        if not _covered(a):
            return call.on_host()
        lu, pivots = _factored(a.mT if _use_transpose(a) else a, *expected[1:])[0]
        value = lu.diagonal(0, -2, -1).prod(-1) * _permutation_sign(pivots)
        return as_expected(value, expected[0]), lu, pivots

    return kernel


def slogdet(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        a = call["A"]
        if not _covered(a):
            return call.on_host()
        lu, pivots = _factored(a.mT if _use_transpose(a) else a, *expected[2:])[0]
        diagonal = lu.diagonal(0, -2, -1)
        sign = diagonal.sgn().prod(-1) * _permutation_sign(pivots)
        return as_expected(sign, expected[0]), as_expected(diagonal.abs().log().sum(-1), expected[1]), lu, pivots

    return kernel


def cholesky_ex(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        a, upper = call["self"], call["upper"]
        if not _covered(a):
            return call.on_host()
        factor, info = cholesky_lower(a.mT if upper else a)  # upper: potrf of A's upper triangle, U = L^T
        info = info.reshape(a.shape[:-2])
        if call["check_errors"]:
            torch._linalg_check_errors(info, "linalg.cholesky_ex", is_matrix=a.dim() == 2)
        factor = factor.reshape(a.shape)
        return as_expected(factor.mT if upper else factor, expected[0]), as_expected(info, expected[1])

    return kernel


def solve_triangular_op(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        a, b = call["self"], call["B"]
        if not _covered(a, b):
            return call.on_host()
        x = solve_triangular(a, b, call["upper"], call["left"], call["unitriangular"])
        return as_expected(x, expected)

    return kernel


def unpack(lu: torch.Tensor, pivots: torch.Tensor, data: bool, swaps: bool):
    """lu_unpack's (P, L, U) of (*, m, n) factors: P from the swaps (applied to the identity they give P^T), L the
    unit lower part of the first min(m, n) columns, U the upper part of the first min(m, n) rows; None for the
    parts not asked for."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    p = lower = upper = None
    if swaps:
        batch = lu.shape[:-2]
        transposed = torch.eye(m, dtype=lu.dtype, device=lu.device).expand(*batch, m, m).contiguous()
        flat = _flat(transposed, 2)
        _permute(flat, _flat(pivots, 1).to(torch.int32).contiguous(), backward=False)
        p = transposed.mT
    if data:
        lower = lu[..., :, :k].tril(-1) + torch.eye(m, k, dtype=lu.dtype, device=lu.device)
        upper = lu[..., :k, :].triu()
    return p, lower, upper


def lu_unpack_op(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        lu, pivots = call["LU_data"], call["LU_pivots"]
        if not _covered(lu) or pivots.dtype != torch.int32:
            return call.on_host()
        parts = unpack(lu, pivots, call["unpack_data"], call["unpack_pivots"])
        return tuple(
            as_expected(part, e) if part is not None else torch.empty_strided(
                e.shape, e.stride(), dtype=e.dtype, device=lu.device)
            for part, e in zip(parts, expected)
        )  # fmt: skip

    return kernel


def linalg_lu(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        a = call["A"]
        if not call["pivot"] or not _covered(a) or a.shape[-1] != a.shape[-2]:
            return call.on_host()  # rectangular LU: the CPU's
        lu, pivots, _ = lu_factor(a)
        lu, pivots = lu.reshape(a.shape), pivots.reshape(*a.shape[:-1])
        return tuple(as_expected(part, e) for part, e in zip(unpack(lu, pivots, True, True), expected))

    return kernel


def cholesky_solve(b: torch.Tensor, factor: torch.Tensor, upper: bool) -> torch.Tensor:
    """(F F^T)^-1 B for a lower F (F^T F for an upper one): two triangular solves."""
    first, second = (factor.mT, factor) if upper else (factor, factor.mT)
    y = solve_triangular(first, b, upper=False, left=True, unit=False)
    return solve_triangular(second, y, upper=True, left=True, unit=False)


def cholesky_solve_op(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        b, factor = call["self"], call["A"]
        if not _covered(b, factor):
            return call.on_host()
        return as_expected(cholesky_solve(b, factor, call["upper"]), expected)

    return kernel


def cholesky_inverse_op(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        factor = call["self"]
        if not _covered(factor):
            return call.on_host()
        n = factor.shape[-1]
        identity = torch.eye(n, dtype=factor.dtype, device=factor.device).expand(factor.shape)
        return as_expected(cholesky_solve(identity, factor, call["upper"]), expected)

    return kernel


# ---- QR: Householder reflectors (geqrf), their product (orgqr), linalg.qr ---------------------------------
def geqrf(a: torch.Tensor):
    """(the reflectors under R, tau) of the (*, m, n) matrices a: LAPACK's geqr2, batch dims flattened."""
    m, n = a.shape[-2:]
    reflected = _flat(torch.empty(a.shape, dtype=a.dtype, device=a.device).copy_(a), 2)
    batch = reflected.shape[0]
    tau = torch.empty((batch, min(m, n)), dtype=a.dtype, device=a.device)
    if batch and m and n:
        k = kernels()
        k.householder_qr[(batch,)](
            reflected, tau, m, n, m * n, tau.shape[1], ROWS=k.ROWS, COLS=k.COLS, machine=k.machine_of(a)
        )  # fmt: skip
    return reflected, tau


def householder_product(reflectors: torch.Tensor, tau: torch.Tensor, columns: int) -> torch.Tensor:
    """H_0 ... H_{r-1} times the identity's first ``columns`` columns, (batch, m, columns); reflectors (batch, m, n)
    of any strides, tau (batch, r)."""
    batch, m = reflectors.shape[:2]
    q = torch.eye(m, columns, dtype=reflectors.dtype, device=reflectors.device).expand(batch, m, columns).contiguous()
    tau = tau.contiguous()
    if batch and m and columns and tau.shape[1]:
        k = kernels()
        k.householder_product[(batch,)](
            q, reflectors, tau, m, columns, tau.shape[1], *reflectors.stride(), tau.stride(0),
            ROWS=k.ROWS, COLS=k.COLS, machine=k.machine_of(q),
        )  # fmt: skip
    return q


def geqrf_op(op: torch._ops.OpOverload, row: Row):
    """geqrf has no meta kernel: the CPU's layout (column-major matrices, tau contiguous) written here, a call the
    CPU refuses (fewer than 2 dims, mixed devices, another dtype) left to the host, which raises its error."""

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        a = call["self"]
        if call.mixed or a.dim() < 2 or not _covered(a):
            return call.on_host()
        m, n = a.shape[-2:]
        reflected, tau = geqrf(a)
        out = torch.empty(a.shape, dtype=a.dtype, device=a.device).mT.contiguous().mT
        out.copy_(reflected.reshape(a.shape))
        return out, tau.reshape(*a.shape[:-2], min(m, n))

    return kernel


def householder_product_op(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        a, tau = call["input"], call["tau"]
        if not _covered(a, tau):
            return call.on_host()
        m, n = a.shape[-2:]
        shape = torch.broadcast_shapes(a.shape[:-2], tau.shape[:-1])
        flat_a = _flat(a.expand(*shape, m, n), 2)
        flat_tau = _flat(tau.expand(*shape, tau.shape[-1]), 1)
        return as_expected(householder_product(flat_a, flat_tau, n), expected)

    return kernel


def qr_op(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        a, mode = call["A"], call["mode"]
        if not _covered(a):
            return call.on_host()
        m, n = a.shape[-2:]
        k = min(m, n)
        reflected, tau = geqrf(a)
        rows = m if mode == "complete" else k
        r = reflected[:, :rows, :].triu()
        if mode == "r":
            q = torch.empty_strided(expected[0].shape, expected[0].stride(), dtype=a.dtype, device=a.device)
        else:
            q = as_expected(householder_product(reflected, tau, rows), expected[0])
        return q, as_expected(r, expected[1])

    return kernel


# ---- eigh: cyclic Jacobi ----------------------------------------------------------------------------------
EIGH_MAX = 32  # larger ones go to the host (n^2 / 2 rotations a sweep: one 32 x 32 fp64 matrix takes 5.5 s of CPU)
SWEEPS = {torch.float32: 6, torch.float64: 8}  # Jacobi converges quadratically: enough for n <= EIGH_MAX (tests)


def eigh(a: torch.Tensor, upper: bool):
    """(eigenvalues ascending, eigenvectors) of the symmetric matrices a (batch dims flattened), from a's lower
    (upper) triangle."""
    n = a.shape[-1]
    half = a.triu() if upper else a.tril()
    symmetric = half + (half.triu(1) if upper else half.tril(-1)).mT
    matrix = _owned(symmetric, n)
    batch = matrix.shape[0]
    vectors = torch.eye(n, dtype=a.dtype, device=a.device).expand(batch, n, n).contiguous()
    if batch and n > 1:
        k = kernels()
        k.symmetric_jacobi[(batch,)](
            matrix, vectors, n, SWEEPS[a.dtype], N=next_power_of_2(n), machine=k.machine_of(a)
        )  # fmt: skip
    values, order = matrix.diagonal(0, -2, -1).sort(dim=-1, stable=True)
    return values, vectors.gather(-1, order[:, None, :].expand(batch, n, n))


def eigh_op(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        a = call["A"]
        if not _covered(a) or a.shape[-1] > EIGH_MAX:
            return call.on_host()
        values, vectors = eigh(a, call["UPLO"].upper() == "U")
        out_values = as_expected(values, expected[0])
        if not call["compute_v"]:
            e = expected[1]
            return out_values, torch.empty_strided(e.shape, e.stride(), dtype=e.dtype, device=a.device)
        return out_values, as_expected(vectors, expected[1])

    return kernel


# the deprecation notes the CPU kernels of the older forms give once a process (TORCH_WARN_ONCE)
DEPRECATED = {
    "triangular_solve": "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will be "
    "removed in a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments reversed and does not "
    "return a copy of one of the inputs.\nX = torch.triangular_solve(B, A).solution\nshould be replaced with\n"
    "X = torch.linalg.solve_triangular(A, B).",
    "cholesky": "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
    "PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)\nand\n"
    "U = torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\nThis transform "
    "will produce equivalent results for all valid (symmetric positive definite) inputs.",
}
_warned: set[str] = set()


def _deprecated(name: str) -> None:
    if name not in _warned:
        _warned.add(name)
        warnings.warn(DEPRECATED[name], UserWarning, stacklevel=2)


def triangular_solve_op(op: torch._ops.OpOverload, row: Row):
    """The older torch.triangular_solve(B, A): (A^-1 B or A^-T B, a copy of A)."""

    @checked(op)
    def kernel(call: Call, expected):
        _deprecated("triangular_solve")
        b, a, upper = call["self"], call["A"], call["upper"]
        if not _covered(a, b):
            return call.on_host()
        t, upper = (a.mT, not upper) if call["transpose"] else (a, upper)
        x = solve_triangular(t, b, upper, True, call["unitriangular"])
        return as_expected(x, expected[0]), as_expected(a, expected[1])

    return kernel


def cholesky_old(op: torch._ops.OpOverload, row: Row):
    """The older torch.cholesky(A, upper): linalg.cholesky's factor, its error under the name "cholesky"."""

    @checked(op)
    def kernel(call: Call, expected):
        _deprecated("cholesky")
        a, upper = call["self"], call["upper"]
        if not _covered(a):
            return call.on_host()
        factor, info = cholesky_lower(a.mT if upper else a)
        torch._linalg_check_errors(info.reshape(a.shape[:-2]), "cholesky", is_matrix=a.dim() == 2)
        factor = factor.reshape(a.shape)
        return as_expected(factor.mT if upper else factor, expected)

    return kernel


FAMILIES = {
    "eigh": eigh_op,
    "geqrf": geqrf_op,
    "householder_product": householder_product_op,
    "qr": qr_op,
    "lu_unpack": lu_unpack_op,
    "linalg_lu": linalg_lu,
    "cholesky_solve": cholesky_solve_op,
    "cholesky_inverse": cholesky_inverse_op,
    "triangular_solve": triangular_solve_op,
    "cholesky_old": cholesky_old,
    "lu_factor": lu_factor_ex,
    "lu_solve": lu_solve_op,
    "linalg_solve": solve_ex,
    "linalg_inv": inv_ex,
    "linalg_det": det,
    "linalg_slogdet": slogdet,
    "cholesky": cholesky_ex,
    "solve_triangular": solve_triangular_op,
}
