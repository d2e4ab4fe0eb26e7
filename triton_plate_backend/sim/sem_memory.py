"""DMA and atomic semantics: dma.load/store/gather/scatter, atom.rmw/cas, and the functional
no-ops dma.wait, fence, barrier (data lands when the DMA is issued; when it would land is the
timing model's business). Every access goes through sim/dma.py, which checks addresses against
the live allocations and returns the Traffic the executor records in the trace. Under a sanitizer
(``ctx.launch.sanitizer``) each rule then reports the elements it accessed (sim/sanitizer.py).
"""

from __future__ import annotations

import numpy as np

from ..errors import IsaError
from . import atomics, dma, dma_one
from . import numerics as nx
from .sanitizer import ATOMIC, READ, WRITE


def _bounds(st, ins, tile, *rlists):
    """Per-program [P, rank] int64 for each register list (strides, lo, hi)."""
    rank = len(tile.shape)
    out = []
    for regs in rlists:
        if len(regs) != rank:
            raise IsaError(f"{ins.mnemonic}: a rank-{rank} tile needs {rank} registers per list, got {len(regs)}")
        if len(regs) == 1:  # a view of the register's row as [P, 1]: read before any register changes
            out.append(st.regs[regs[0], :, None])
        else:
            out.append(st.regs[list(regs)].T if regs else np.zeros((st.P, 0), np.int64))
    return out


def fill_value(st, index, dtype):
    """Constant ``index`` as a ``dtype`` scalar, looked up once per launch in its table of (constant index, dtype)
    (a persistent loop loads every trip, a loop fills every trip): a DMA load's fill value and v.fill's."""
    fills, key = st.launch.fills, (index, dtype)
    v = fills.get(key)
    if v is None:
        v = fills[key] = nx.const_scalar(st.consts[index], dtype)
    return v


def _issued(st, q):
    st.tokens[q] += 1  # a token counts the DMAs issued on it; waits are functional no-ops


def _addresses(st, ins, addr, mask, like):
    ta, tm = st.tiles[addr], st.tiles[mask]
    if ta.dtype != "i64" or tm.dtype != "i1" or ta.shape != like.shape or tm.shape != like.shape:
        raise IsaError(
            f"{ins.mnemonic}: addresses t{addr} must be i64 and mask t{mask} i1, both shaped "
            f"{list(like.shape)}; got {ta.dtype}{list(ta.shape)} and {tm.dtype}{list(tm.shape)}"
        )
    return st.read(addr), st.read(mask)


def _sanitize_box(st, kind, t, base, s, lo, hi):
    """Report a strided access's elements to the launch's sanitizer, if there is one."""
    san = st.launch.sanitizer
    if san is not None:
        box = dma._Box(st.regs[base], t.dtype, t.shape, s, lo, hi)
        san.access(st.pc, st.pids, box.element_addrs(), box.valid(), box.isz, kind, owned=True)


def _sanitize_elements(st, kind, t, addrs, mask):
    san = st.launch.sanitizer
    if san is not None:
        san.access(st.pc, st.pids, addrs, mask, dma._storage(t.dtype).itemsize, kind)


def _sanitize_atomic(st, ins, t, addrs, mask):
    """An atomic reads before it writes: report it before it runs, once its addresses are checked."""
    if st.launch.sanitizer is not None:
        what = ins.suffixes[0] if ins.mnemonic == "atom.rmw" else "cas"
        st.memory.find(addrs, dma._storage(t.dtype).itemsize, mask, f"atomic {what} of {t.dtype}")
        _sanitize_elements(st, ATOMIC, t, addrs, mask)
        st.launch.sanitizer.atomic(st.pids, addrs, mask, cas=ins.mnemonic == "atom.cas")


def _load(st, ins):
    q, d, base, strides, lo, hi, fill = ins.operands
    t = st.tiles[d]
    rank = len(t.shape)
    if (
        dma.COMPILED_TILES
        and st.P > 1
        and rank >= 2
        and len(strides) == len(lo) == len(hi) == rank
        and st.launch.sanitizer is None
    ):  # whole tiles tested from the registers (_Tiles.from_registers): load_strided's tile path
        fill_value(st, fill, t.dtype)  # unused by whole tiles; converted (or refused) as on the general path
        tiles = dma._Tiles.from_registers(st.memory, st.regs, base, strides, lo, hi, t.dtype, t.shape)
        if tiles is not None:
            into = st.view(d)
            vals = tiles.values(into)
            if vals is not into:
                st.write(d, vals)
            _issued(st, q)
            return tiles.traffic(st.memory) if st.launch.counted else dma.NOT_COUNTED
    if st.P == 1 and st.launch.sanitizer is None:  # one program: its box from the register words (dma_one)
        box = dma_one.box_of(st.regs, base, strides, lo, hi, t.dtype, t.shape)
        if box is not None:
            into = st.view(d) if t.dtype != "i1" else None
            done = dma_one.load_box(st.memory, box, t.dtype, fill_value(st, fill, t.dtype), into)
            if done is not None:
                vals, traffic = done
                if vals is not into:
                    st.write(d, vals)
                _issued(st, q)
                return traffic
    s, a, b = _bounds(st, ins, t, strides, lo, hi)
    args = (st.memory, st.regs[base], t.dtype, t.shape, s, a, b, fill_value(st, fill, t.dtype))
    into = st.view(d) if t.dtype != "i1" else None
    done = dma_one.load(*args, into=into) if st.P == 1 else None  # one program: the same in Python integers
    vals, traffic = done if done is not None else dma.load_strided(*args, into=into, counted=st.launch.counted)
    _sanitize_box(st, READ, t, base, s, a, b)
    if vals is not into:
        st.write(d, vals)
    _issued(st, q)
    return traffic


def _store(st, ins):
    q, a, base, strides, lo, hi = ins.operands
    t = st.tiles[a]
    if st.P == 1 and st.launch.sanitizer is None:  # one program: its box from the register words (dma_one)
        box = dma_one.box_of(st.regs, base, strides, lo, hi, t.dtype, t.shape)
        traffic = None if box is None else dma_one.store_box(st.memory, box, st.read(a), t.dtype)
        if traffic is not None:
            _issued(st, q)
            return traffic
    s, lo_, hi_ = _bounds(st, ins, t, strides, lo, hi)
    args = (st.memory, st.regs[base], st.read(a), s, lo_, hi_)
    traffic = dma_one.store(*args, t.dtype) if st.P == 1 else None  # one program: the same in Python integers
    if traffic is None:
        traffic = dma.store_strided(*args, dtype=t.dtype, counted=st.launch.counted)
    _sanitize_box(st, WRITE, t, base, s, lo_, hi_)
    _issued(st, q)
    return traffic


def _gather(st, ins):
    q, d, addr, m, fill = ins.operands
    t = st.tiles[d]
    addrs, mask = _addresses(st, ins, addr, m, t)
    fill_v = fill_value(st, fill, t.dtype)
    vals, traffic = dma.gather(st.memory, addrs, mask, t.dtype, fill_v, counted=st.launch.counted)
    _sanitize_elements(st, READ, t, addrs, mask)
    st.write(d, vals)
    _issued(st, q)
    return traffic


def _scatter(st, ins):
    q, a, addr, m = ins.operands
    t = st.tiles[a]
    addrs, mask = _addresses(st, ins, addr, m, t)
    traffic = dma.scatter(st.memory, addrs, mask, st.read(a), t.dtype, counted=st.launch.counted)
    _sanitize_elements(st, WRITE, t, addrs, mask)
    _issued(st, q)
    return traffic


def _same_values(st, ins, d, *values):
    td = st.tiles[d]
    for v in values:
        tv = st.tiles[v]
        if tv.dtype != td.dtype or tv.shape != td.shape:
            raise IsaError(
                f"{ins.mnemonic}: t{v} {tv.dtype}{list(tv.shape)} must match t{d} {td.dtype}{list(td.shape)}"
            )
    return td


def _rmw(st, ins):
    d, addr, v, m = ins.operands
    t = _same_values(st, ins, d, v)
    addrs, mask = _addresses(st, ins, addr, m, t)
    _sanitize_atomic(st, ins, t, addrs, mask)
    old, traffic = atomics.atomic_rmw(st.memory, ins.suffixes[0], addrs, st.read(v), mask, t.dtype)
    st.write(d, old)
    return traffic


def _cas(st, ins):
    d, addr, cmp, v, m = ins.operands
    t = _same_values(st, ins, d, cmp, v)
    addrs, mask = _addresses(st, ins, addr, m, t)
    _sanitize_atomic(st, ins, t, addrs, mask)
    old, traffic = atomics.atomic_cas(st.memory, addrs, st.read(cmp), st.read(v), mask, t.dtype)
    st.write(d, old)
    return traffic


def _no_op(st, ins):
    return None


SEMANTICS = {
    "dma.load": _load,
    "dma.store": _store,
    "dma.gather": _gather,
    "dma.scatter": _scatter,
    "dma.wait": _no_op,
    "atom.rmw": _rmw,
    "atom.cas": _cas,
    "fence": _no_op,
    "barrier": _no_op,
}


# ---- traffic only: the same accesses, checked and counted, moving no data (sim/estimate.py) ----------
def _load_traffic(st, ins):
    q, d, base, strides, lo, hi, fill = ins.operands
    return _strided_traffic(st, ins, st.tiles[d], q, base, strides, lo, hi)


def _store_traffic(st, ins):
    q, a, base, strides, lo, hi = ins.operands
    return _strided_traffic(st, ins, st.tiles[a], q, base, strides, lo, hi)


def _strided_traffic(st, ins, t, q, base, strides, lo, hi):
    rank = len(t.shape)
    if rank >= 2 and len(strides) == len(lo) == len(hi) == rank:  # whole tiles read from the registers
        traffic = dma.strided_traffic_of_registers(st.memory, st.regs, base, strides, lo, hi, t.dtype, t.shape)
        if traffic is not None:
            _issued(st, q)
            return traffic
    s, a, b = _bounds(st, ins, t, strides, lo, hi)
    _issued(st, q)
    return dma.strided_traffic(st.memory, st.regs[base], t.dtype, t.shape, s, a, b)


def _element_rule(value: str, access: str, token: bool):
    """Traffic of an access by address tile (gather, scatter, atomics): ``value`` names the data operand."""

    def rule(st, ins):
        ops = {od.name: v for od, v in zip(ins.row.operands, ins.operands)}
        t = st.tiles[ops[value]]
        addrs, mask = _addresses(st, ins, ops["addr"], ops["m"], t)
        if token:
            _issued(st, ops["q"])
        return dma.element_traffic(st.memory, addrs, mask, t.dtype, access)

    return rule


def kept_access(st, ins):
    """The access a dma.load or dma.gather is about to make, kept to be counted again over another
    placement (``dma.Access``, its span alone past ``dma.ACCESS_BYTES``; None for any other instruction): what
    the traffic-only rule's Traffic keeps, for a load the address-only run makes for real (its values
    feed an address, a mask or a scalar: sim/estimate.py). Called before the rule, it issues nothing."""
    if ins.mnemonic == "dma.load":
        q, d, base, strides, lo, hi, fill = ins.operands
        t = st.tiles[d]
        s, a, b = _bounds(st, ins, t, strides, lo, hi)
        return dma.strided_access(st.memory, st.regs[base], t.dtype, t.shape, s, a, b)
    if ins.mnemonic == "dma.gather":
        q, d, addr, m, fill = ins.operands
        t = st.tiles[d]
        addrs, mask = _addresses(st, ins, addr, m, t)
        return dma.element_access(addrs, mask, t.dtype, "gather")
    return None


TRAFFIC_ONLY = {
    "dma.load": _load_traffic,
    "dma.store": _store_traffic,
    "dma.gather": _element_rule("d", "gather", True),
    "dma.scatter": _element_rule("a", "scatter", True),
    "atom.rmw": _element_rule("d", "atomic", False),
    "atom.cas": _element_rule("d", "atomic", False),
}
