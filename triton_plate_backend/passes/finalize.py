"""finalize: the code generator's virtual code -> a verified `Program`.

Liveness over the emitted pseudo-instructions (`regalloc.live_intervals`) gives scalar registers
and DMA tokens (`regalloc.allocate`; with ``spill_scalars``, scalars the registers cannot hold go to SRAM
slots, `spill.allocate`) and SRAM addresses (`sram_plan.plan`); then views become
entries of the tile table, immediates and strings entries of the constant pool, labels pcs and
op locations entries of the location table (all deduplicated). That last walk runs in C
(`_codewalk.map_code`) when it is built; `_map_code` is the reference."""

from __future__ import annotations

from ..errors import CompileError
from ..isa.encoding import float_bits
from ..isa.program import Inst, Program, Tile
from ..isa.table import ITEMSIZE
from ..isa.verified import verify_once
from ..srcloc import UNKNOWN_LOC
from . import regalloc, spill, sram_plan
from .emitter import Buffer, Emitter, Imm, Label, Str, Token, View, VReg

try:
    from . import _codewalk
except ImportError:  # not built (setup.py build_ext): _map_code
    _codewalk = None


def sram_by_op(ctx) -> dict:
    """op -> 'addr+bytes' of the buffers made for its results (for the pir dump)."""
    out: dict = {}
    for buf in ctx.em.buffers:
        op = ctx.defs.get(buf.owner) if buf.owner is not None else None
        if op is not None and buf.addr is not None:
            text = f"{buf.addr:#x}+{buf.nbytes}"
            out[op] = f"{out[op]}, {text}" if op in out else text
    return out


def finalize(em: Emitter, name: str, args, machine, spill_scalars: bool = False) -> tuple[Program, int]:
    """Liveness -> registers, tokens and SRAM addresses -> a verified Program."""
    if spill_scalars:
        em.code, intervals, regs = spill.allocate(em.code, machine.core.scalar_registers, name, em.buffers)
    else:
        intervals = regalloc.live_intervals(em.code)
        regs = regalloc.allocate(intervals, VReg, machine.core.scalar_registers, "scalar registers", name)
    code = em.code
    toks = regalloc.allocate(intervals, Token, machine.core.dma_tokens, "DMA tokens", name)
    top = sram_plan.plan(intervals, machine.core.sram_bytes, name)
    program = Program(name=name, args=list(args))
    tiles, consts, locs, view_tiles = {}, {}, {UNKNOWN_LOC: 0}, {}
    pcs, pc = {}, 0
    for inst in code:
        m = inst.mnemonic
        if m[0] != ".":  # (an instruction: most of the code; a mnemonic is never empty, as `_map_code` reads it)
            pc += 1
        elif m == ".label":
            pcs[inst.operands[0]] = pc

    def tile(v: View) -> int:
        got = view_tiles.get(v)  # (one lookup: a view's hash is the dataclass' Python method)
        if got is not None:  # the same view again (a tile is built, and checked, once per distinct view)
            return got
        t = Tile.of(v.buffer.addr + v.offset * ITEMSIZE[v.dtype], v.dtype, v.shape, v.strides)
        k = tiles.get(t)
        if k is None:
            k = tiles[t] = len(program.tiles)
            program.tiles.append(t)
        view_tiles[v] = k
        return k

    def const(c) -> int:
        if type(c) is int:  # (most constants: the same key and entry as below, without the instance checks)
            k = consts.get(("i", c))
            if k is None:
                k = consts["i", c] = len(program.consts)
                program.consts.append(c)
            return k
        key = ("s", c) if isinstance(c, str) else ("f", float_bits(c)) if isinstance(c, float) else ("i", int(c))
        if key not in consts:
            consts[key] = len(program.consts)
            program.consts.append(c if isinstance(c, (str, float)) else int(c))
        return consts[key]

    def operand(v):
        if type(v) is Imm:  # (the C walk maps registers, tokens, views and labels itself: it hands over immediates)
            return const(v.value)
        if type(v) is tuple:  # (and register lists)
            return tuple([regs[r] for r in v])
        if isinstance(v, VReg):
            return regs[v]
        if isinstance(v, Token):
            return toks[v]
        if isinstance(v, View):
            return tile(v)
        if isinstance(v, (Imm, Str)):
            return const(v.value)
        if isinstance(v, Label):
            return pcs[v]
        if isinstance(v, tuple):
            return tuple(regs[r] for r in v)
        raise CompileError(f"internal: bad operand {v!r}")

    if _codewalk is not None and type(code) is list:  # the walk below, in C
        kinds = (VReg, Token, View, Label, Inst)
        walked = (code, regs, toks, pcs, tile, operand, locs, program.locs, UNKNOWN_LOC, *kinds, program.instrs)
        _codewalk.map_code(*walked, Imm, consts, program.consts)  # (an int immediate's pool entry: `const`'s, in C)
    else:
        _map_code(code, regs, toks, pcs, tile, operand, locs, program)
    program.labels = {lab.name: p for lab, p in pcs.items()}
    program.sram_bytes = max(top, program.sram_high_water())
    verify_once(program, machine)
    return program, len([r for r in intervals if isinstance(r, Buffer)])  # (a list display: no generator frame)


def _map_code(code, regs, toks, pcs, tile, operand, locs, program) -> None:
    """Each pseudo-instruction that is not a directive as an Inst of physical operands (`_codewalk.map_code` is
    this walk in C)."""
    by_type = {VReg: regs.__getitem__, Token: toks.__getitem__, View: tile, Label: pcs.__getitem__}
    last_loc, at = None, 0  # the instructions of one op share its loc (the same object): looked up once
    for inst in code:
        if inst.mnemonic[0] == ".":
            continue
        loc = inst.loc or UNKNOWN_LOC
        if loc is not last_loc:
            at = locs.get(loc)
            if at is None:
                at = locs[loc] = len(program.locs)
                program.locs.append(loc)
            last_loc = loc
        operands = tuple([(by_type.get(type(v)) or operand)(v) for v in inst.operands])  # the common kinds directly
        program.instrs.append(Inst(inst.mnemonic, tuple(inst.suffixes), operands, at))
