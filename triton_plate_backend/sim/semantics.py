"""SEMANTICS: the living definition of every PLATE instruction, one rule per ISA mnemonic.

A rule is ``rule(ctx, inst)``: ``ctx`` is the executor's batch context (registers ``ctx.regs``
[NREG, P] int64, ``ctx.read(t)`` / ``ctx.write(t, values)`` on tile views [P, *shape],
``ctx.consts``, ``ctx.tiles``, ``ctx.memory`` ...), ``inst`` the Inst. It returns None, a
``Branch`` / ``HALT`` (control flow) or the dma Traffic of a memory access. Rules raise PlateError
(or let numpy raise); the executor wraps any of those ONCE with pc, instruction, source line and
grid coordinates. The rules live by family: sem_scalar (s.*, control flow, dbg.*), sem_vector
(elementwise, compares, conversions), sem_tile (data movement, reductions, scans), sem_matrix
(m.mma), sem_memory (dma.*, atom.*, fence, barrier); numerics holds the shared rounding code.

NOTES: where Triton/LLVM leave a result undefined, PLATE defines it (PTX's choice unless noted)

| case                                   | result                                                   |
|----------------------------------------|----------------------------------------------------------|
| integer overflow (add, sub, mul, neg)  | wraps modulo 2**width                                    |
| signed x / 0                           | -1 (all ones)                        (PTX div.s)         |
| unsigned x / 0                         | all ones                             (PTX div.u)         |
| x % 0 (signed and unsigned)            | x                                    (PTX rem)           |
| INT_MIN / -1, INT_MIN % -1             | INT_MIN, 0 (wraps)                                       |
| shift amount (read unsigned) >= width  | shl, shru: 0; shrs: sign fill        (PTX clamps at width)|
| fptosi / fptoui: NaN                   | 0                                    (PTX cvt.rzi.sat)   |
| fptosi / fptoui: out of range, +-inf   | saturates to the type's min / max    (PTX cvt.rzi.sat)   |
| float -> fp8 (e4m3fn, e5m2), overflow  | +-max finite, also for +-inf; NaN stays NaN              |
|                                        | (PTX cvt.rn.satfinite; ml_dtypes' cast gives NaN / inf)  |
| float -> f16/bf16/f32 overflow         | rtne: +-inf; rtz: +-max finite (inf stays inf)           |
| fcvt.rtz                               | truncation toward zero in the target format              |
| f16/bf16/fp8 arithmetic                | computed in fp32, rounded once to the type (RNE)         |
| transcendentals (exp, sin, erf, ...)   | computed in fp64, rounded once: <= 1 ulp, usually exact  |
| maximum / minimum                      | NaN propagates; -0.0 < +0.0                              |
| maxnum / minnum                        | a NaN operand is ignored; -0.0 < +0.0                    |
| v.reduce order                         | pairwise tree (i with i + n/2), rounding at every combine|
| v.scan order                           | Hillis-Steele (log2 n steps), rounding at every combine  |
| v.gather index outside the axis        | SimulatorError naming the programs (no wrap, no clamp)   |
| v.hist value outside [0, bins)         | ignored                                                  |
| v.fma fp64 near overflow/underflow     | falls back to a*b + c with two roundings                 |
| m.mma f32 sum order                    | BLAS sgemm's (fp32 accumulate); ieee: fp64 sum rounded   |
| i1 values                              | 0 / 1 in registers and SRAM bytes; signed ops read -1    |
| register kinds                         | s.<op>.<stype>, v.splat read a register as a value of the|
|                                        | type's kind (a float type: the float64 word) and round / |
|                                        | wrap it to the type                                      |
| dbg.printr                             | prints the register as a signed 64-bit integer           |
| SRAM at program start                  | zero (undefined on hardware)                             |
| device memory at allocation            | zero; 0xFF bytes under the init sanitizer (sanitizer.py) |
| masked-off dma.load lanes              | the fill operand (0 when the kernel gave no `other`)     |
| dma.wait, fence, barrier               | no-ops: data lands when the DMA is issued                |
| atom.rmw max/min on floats             | IEEE maxNum/minNum: a NaN operand loses; the sign of a   |
|                                        | zero result (max(-0.0, +0.0)) is unspecified             |
"""

from __future__ import annotations

from ..isa.table import ISA
from . import sem_matrix, sem_memory, sem_scalar, sem_tile, sem_vector
from .sem_scalar import HALT, Branch, DeviceAssertionError

SEMANTICS: dict = {}
for _family in (sem_scalar, sem_vector, sem_tile, sem_matrix, sem_memory):
    _overlap = SEMANTICS.keys() & _family.SEMANTICS.keys()
    assert not _overlap, f"two families define {_overlap}"
    SEMANTICS.update(_family.SEMANTICS)

_missing, _extra = ISA.keys() - SEMANTICS.keys(), SEMANTICS.keys() - ISA.keys()
assert not _missing and not _extra, f"SEMANTICS vs ISA: missing {sorted(_missing)}, extra {sorted(_extra)}"

__all__ = ["SEMANTICS", "Branch", "HALT", "DeviceAssertionError"]
