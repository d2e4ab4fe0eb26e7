"""spill: scalar registers kept in SRAM when more are live than the core has.

Each spilled VReg gets an 8-byte slot (its own buffer, so the SRAM planner reuses the bytes once
the value is dead). Every instruction that writes it writes a fresh temporary instead, stored to
the slot right after (`v.splat` into an i64 [1] tile: the register's 64-bit word as it is); every
instruction that reads it reads a fresh temporary loaded right before (`v.extract`). Both are
ordinary vector-unit instructions, so the simulator, the cost model and the timing model treat
them like any other SRAM access. The temporaries live one instruction each and are never spilled
again; a hardware loop's counter (`loop` reads and writes it, and its back edge skips a store
after it) is never spilled. `allocate` repeats the choice until the registers suffice, or names
the point where the registers of a single instruction alone outnumber the core's."""

from __future__ import annotations

from ..errors import RegisterOverflow
from ..isa.table import ISA
from . import regalloc
from .emitter import Buffer, Imm, PInst, VReg, whole

SLOT_DTYPE = "i64"  # a register is a 64-bit word, ints and floats alike


def _rewrite(code: list[PInst], spilled: set, slots: dict, pinned: set, added: set) -> list[PInst]:
    """The code with each spilled VReg read from and written to its slot through temporaries."""
    out: list[PInst] = []
    for inst in code:
        m = inst.mnemonic
        if m in (".def", ".use"):
            ops = tuple(slots[v].buffer if v in spilled else v for v in inst.operands)
            out.append(PInst(m, inst.suffixes, ops, inst.loc, inst.extra_uses) if ops != inst.operands else inst)
            continue
        if m == ".label" or not any(
            (v in spilled) if type(v) is VReg else isinstance(v, tuple) and any(x in spilled for x in v)
            for v in inst.operands
        ):
            out.append(inst)
            continue
        loads, stores, ops = [], [], []
        for od, v in zip(ISA[m].operands, inst.operands):
            is_def = od.role == "def"
            if type(v) is VReg and v in spilled:
                t = VReg(f"{v.hint or v.id}.spill")
                pinned.add(t)
                if is_def:
                    stores += [
                        PInst(".def", (), (slots[v].buffer,), inst.loc),
                        PInst("v.splat", (), (slots[v], t), inst.loc),
                    ]
                else:
                    loads.append(PInst("v.extract", (), (t, slots[v], Imm(0)), inst.loc))
                ops.append(t)
            elif isinstance(v, tuple) and any(x in spilled for x in v):
                temps = []
                for x in v:
                    if x in spilled:
                        t = VReg(f"{x.hint or x.id}.spill")
                        pinned.add(t)
                        loads.append(PInst("v.extract", (), (t, slots[x], Imm(0)), inst.loc))
                        temps.append(t)
                    else:
                        temps.append(x)
                ops.append(tuple(temps))
            else:
                ops.append(v)
        added.update(id(x) for x in loads + stores)
        out += loads
        out.append(PInst(m, inst.suffixes, tuple(ops), inst.loc, inst.extra_uses))
        out += stores
    return out


def allocate(code: list[PInst], count: int, kernel: str, buffers: list) -> tuple[list[PInst], dict, dict]:
    """(code, live intervals, VReg -> register) with as few scalars in SRAM as the linear scan needs;
    new slot buffers are appended to ``buffers``. Raises RegisterOverflow when no spilling helps."""
    pinned = {v for inst in code if not inst.mnemonic.startswith(".") for v in _inout_regs(inst)}
    slots: dict = {}
    added: set = set()  # id() of the loads and stores this pass inserted
    while True:
        intervals = regalloc.live_intervals(code)
        chosen, stuck = regalloc.spill_choice(intervals, count, pinned)
        if not chosen and stuck is None:
            return code, intervals, regalloc.allocate(intervals, VReg, count, "scalar registers", kernel)
        if not chosen:
            at = min(stuck // 2, len(code) - 1)
            while at + 1 < len(code) and (code[at].mnemonic.startswith(".") or id(code[at]) in added):
                at += 1  # name the instruction the reloads serve, not a reload
            inst = code[at]
            raise RegisterOverflow(
                f"kernel {kernel}: more than {count} scalar registers live at once at {inst.mnemonic} "
                f"({inst.loc or 'unknown location'}), even with every other scalar kept in SRAM: one instruction "
                f"reads or writes more registers than the core has, or as many hardware loop counters are live; "
                f"reduce the tensor rank of that access or nest fewer loops"
            )
        for v in chosen:
            buf = Buffer(8, f"spilled scalar {v!r}")
            buffers.append(buf)
            slots[v] = whole(buf, SLOT_DTYPE, (1,))
        code = _rewrite(code, chosen, slots, pinned, added)


def _inout_regs(inst: PInst):
    return [
        v
        for od, v in zip(ISA[inst.mnemonic].operands, inst.operands)
        if od.kind == "r" and od.role == "inout" and type(v) is VReg
    ]
