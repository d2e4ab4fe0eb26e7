"""linalg.matrix_exp on plate tensors (float32 / float64): the CPU's algorithm (ATen's mexp, Bader, Blanes and Casas'
Taylor approximants of degree 1, 2, 4, 8, 12 or 18 evaluated with 0 to 5 matrix products) over plate's matmuls
and elementwise kernels. Each matrix takes the lowest degree whose bound (THETAS, per dtype) its 1-norm is within,
as the CPU decides per matrix (the norms read back once); above the last but one bound, degree 18 after scaling by
2^-s (s = ceil(log2(norm / theta_18)), at least 0) and squaring s times. The linear combinations add their terms in
the CPU's order; the products are plate's matmuls (their K steps summed exactly), so values agree with the CPU's to
rounding. Complex matrices run on the host, counted; a 1 x 1 matrix is exp of its element, as ATen's."""

from __future__ import annotations

import math

import torch

from .ops import Call, as_expected, checked
from .table import Row

# the 1-norm bound of each degree, per dtype (the approximants' backward error below the type's unit roundoff)
DEGREES = (1, 2, 4, 8, 12, 18)
THETAS = {
    torch.float32: (1.192092800768788e-07, 5.978858893805233e-04, 5.116619363445086e-02,
                    5.800524627688768e-01, 1.461661507209034e00, 3.010066362817634e00),
    torch.float64: (2.220446049250313e-16, 2.580956802971767e-08, 3.397168839976962e-04,
                    4.991228871115323e-02, 2.996158913811580e-01, 1.090863719290036e00),
}  # fmt: skip
SQRT_177 = 0.1330413469565007072504e2
# degree 12 and 18: the rows are the coefficients of I, A, A^2, A^3 (and A^6) in the evaluation scheme's B_i
B12 = (
    (9.0198e-16, 0.46932117595418237389, -0.20099424927047284052, -0.04623946134063071740),
    (5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031, 0.01108844528519167989),
    (0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968, 0.00610700528898058230),
    (-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079, -0.00675951846863086359),
)
B18 = (
    (0.0, -1.00365581030144618291e-01, -8.02924648241156932449e-03, -8.92138498045729985177e-04, 0.0),
    (0.0, 3.97849749499645077844e-01, 1.36783778460411720168e00, 4.98289622525382669416e-01,
     -6.37898194594723280150e-04),
    (-1.09676396052962061844e01, 1.68015813878906206114e00, 5.71779846478865511061e-02,
     -6.98210122488052056106e-03, 3.34975017086070470649e-05),
    (-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02,
     2.95552570429315521194e-02, -1.39180257516060693404e-05),
    (0.0, 0.0, -9.23364619367118555360e-02, -1.69364939002081722752e-02, -1.40086798182036094347e-05),
)  # fmt: skip


def _combination(terms, coefficients, dtype) -> torch.Tensor:
    """sum_j c_j * terms[j], added in order j = 0, 1, ... with each c_j rounded to the matrices' type (ATen's)."""
    total = None
    for term, c in zip(terms, coefficients):
        c = float(torch.tensor(c, dtype=dtype))
        if c == 0 and total is not None:
            continue
        part = term * c
        total = part if total is None else total + part
    return total


def _powers(a: torch.Tensor, count: int) -> list[torch.Tensor]:
    """[I, A, A^2, A^3, A^6][:count] of the (batch, n, n) matrices a."""
    n = a.shape[-1]
    powers = [torch.eye(n, dtype=a.dtype, device=a.device).expand(a.shape).contiguous(), a]
    if count > 2:
        powers.append(a @ a)
    if count > 3:
        powers.append(a @ powers[2])
    if count > 4:
        powers.append(powers[3] @ powers[3])
    return powers[:count]


def taylor(a: torch.Tensor, degree: int) -> torch.Tensor:
    """T_degree(A), the CPU's evaluation of each approximant."""
    dtype = a.dtype
    if degree == 1:
        identity, x = _powers(a, 2)
        return identity + x
    if degree == 2:
        identity, x, x2 = _powers(a, 3)
        return identity + x + x2 / 2.0
    if degree == 4:
        identity, x, x2 = _powers(a, 3)
        tail = x2 @ _combination((identity, x, x2), (1 / 2.0, 1 / 6.0, 1 / 24.0), dtype)
        return _combination((identity, x, x2, tail), (1.0, 1.0, 0.0, 1.0), dtype)
    if degree == 8:
        x3 = 2.0 / 3.0
        x1, x2c = x3 * ((1.0 + SQRT_177) / 88.0), x3 * ((1.0 + SQRT_177) / 352.0)
        x4, x5 = (-271.0 + 29.0 * SQRT_177) / (315.0 * x3), (-11.0 + 11.0 * SQRT_177) / (1260.0 * x3)
        x6, x7 = (-99.0 + 11.0 * SQRT_177) / (5040.0 * x3), (89.0 - SQRT_177) / (5040.0 * x3)
        y2 = (857.0 - 58.0 * SQRT_177) / 630.0
        identity, x, sq = _powers(a, 3)
        a4 = sq @ _combination((x, sq), (x1, x2c), dtype)
        a8 = _combination((sq, a4), (x3, 1.0), dtype) @ _combination((identity, x, sq, a4), (x4, x5, x6, x7), dtype)
        return _combination((identity, x, sq, a4, a8), (1.0, 1.0, y2, 0.0, 1.0), dtype)
    if degree == 12:
        powers = _powers(a, 4)
        b = [_combination(powers, row, dtype) for row in B12]
        b[2] = b[2] + b[3] @ b[3]  # A6
        return b[0] + (b[1] + b[2]) @ b[2]
    powers = _powers(a, 5)
    b = [_combination(powers, row, dtype) for row in B18]
    b[3] = b[3] + b[0] @ b[4]  # A9
    return b[1] + (b[2] + b[3]) @ b[3]


def matrix_exp(a: torch.Tensor) -> torch.Tensor:
    """exp of the (batch, n, n) matrices a."""
    thetas = THETAS[a.dtype]
    norms = a.abs().sum(-2).amax(-1).cpu().tolist()  # the CPU decides per matrix, on the host
    result = torch.empty_like(a)
    groups: dict[int, list[int]] = {}
    for i, norm in enumerate(norms):
        degree = next((d for d, theta in zip(DEGREES[:-1], thetas[:-1]) if norm <= theta), 18)
        if norm >= thetas[-2]:
            degree = 18
        groups.setdefault(degree, []).append(i)
    for degree, members in groups.items():
        index = torch.tensor(members, device=a.device)
        subset = a.index_select(0, index)
        if degree < 18:
            result.index_copy_(0, index, taylor(subset, degree))
            continue
        steps = [max(0, math.ceil(math.log2(norms[i] / thetas[-1]))) if norms[i] > 0 else 0 for i in members]
        scale = torch.tensor([2.0**-s for s in steps], dtype=a.dtype, device=a.device).view(-1, 1, 1)
        value = taylor(subset * scale, 18)
        for p in range(max(steps)):  # squared s times, each matrix its own s
            pick = torch.tensor([k for k, s in enumerate(steps) if s > p], device=a.device)
            squared = value.index_select(0, pick)
            value = value.index_copy(0, pick, squared @ squared)
        result.index_copy_(0, index, value)
    return result


def matrix_exp_op(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        a = call["self"]
        if a.dtype not in THETAS:
            return call.on_host()  # complex (and the CPU's errors)
        n = a.shape[-1]
        if n <= 1:
            value = a.exp() if n == 1 else a.clone()
        else:
            value = matrix_exp(a.reshape(-1, n, n)).reshape(a.shape)
        return as_expected(value, expected)

    return kernel


FAMILIES = {"matrix_exp": matrix_exp_op}
