"""emitter: vector instructions chunked to the machine's max_elements (flat when contiguous,
along leading dims otherwise; v.iota's start follows each piece), and the asynchronous-DMA
contract: `dma.wait` inserted lazily before the first instruction that touches a tile a pending
DMA writes (or writes one it reads), for memory order, for the queue depth, and at labels and
branches (but carried prefetches); and the pure scalar instructions one block shares
(`rematerialised`: once per block, again after a label, a back edge or a write of an operand). Each test
runs with the compiled `emit` and `rematerialised` (passes/_emit, where built) and with the Python ones."""

from __future__ import annotations

import dataclasses

import pytest

from triton_plate_backend.errors import CompileError
from triton_plate_backend.isa.program import Arg
from triton_plate_backend.machine import get_machine
from triton_plate_backend.passes import codegen, emitter
from triton_plate_backend.passes.emitter import Imm, Token, VReg


@pytest.fixture(autouse=True, params=["compiled", "python"])
def methods(request, monkeypatch):
    """The compiled `Emitter.emit` / `rematerialised` (skipped where passes._emit is not built), or the Python ones."""
    if request.param == "compiled" and emitter._emit is None:
        pytest.skip("passes._emit is not built (setup.py build_ext)")
    monkeypatch.setattr(emitter.Emitter, "compiled", request.param == "compiled")
    return request.param


def _machine(max_elements=16, queue_depth=8):
    m = get_machine("plate-mini")
    core = dataclasses.replace(
        m.core,
        vector=dataclasses.replace(m.core.vector, max_elements=max_elements),
        dma=dataclasses.replace(m.core.dma, queue_depth=queue_depth),
    )
    return dataclasses.replace(m, core=core)


def _ops(em, *mnemonics):
    return [i for i in em.code if i.mnemonic in mnemonics]


def _elements(view) -> set[int]:
    """Element offsets (in the buffer) a view covers."""
    out = {view.offset}
    for n, s in zip(view.shape, view.strides):
        out = {o + k * s for o in out for k in range(n)}
    return out


# ---- chunking -----------------------------------------------------------------------------------------


def test_small_vector_instructions_are_emitted_whole():
    em = emitter.Emitter(_machine())
    a, b = em.buffer("f32", (4, 4)), em.buffer("f32", (4, 4))
    em.vector("v.add", a, a, b)
    [add] = _ops(em, "v.add")
    assert add.operands == (a, a, b)


def test_contiguous_operands_are_chunked_flat():
    em = emitter.Emitter(_machine(max_elements=16))
    d, a, b = (em.buffer("f32", (5, 10)) for _ in range(3))
    em.vector("v.add", d, a, b)
    adds = _ops(em, "v.add")
    assert [(x.operands[0].offset, x.operands[0].shape) for x in adds] == [
        (0, (16,)),
        (16, (16,)),
        (32, (16,)),
        (48, (2,)),
    ]
    for x in adds:  # every operand is cut the same way
        assert x.operands[0].offset == x.operands[1].offset == x.operands[2].offset
        assert x.operands[1].buffer is a.buffer and x.operands[2].buffer is b.buffer


def test_strided_operands_are_chunked_along_leading_dims():
    em = emitter.Emitter(_machine(max_elements=16))
    d = em.buffer("f32", (6, 40))
    src = em.buffer("f32", (40, 6)).permute((1, 0))  # a transposed view: no flat form
    em.vector("v.copy", d, src)
    copies = _ops(em, "v.copy")
    assert all(x.operands[0].numel <= 16 for x in copies)
    assert len(copies) == 6 * 3  # each 40-element row in pieces of 16, 16, 8
    covered = [e for x in copies for e in _elements(x.operands[0])]
    assert sorted(covered) == list(range(240))  # every element exactly once
    read = [e for x in copies for e in _elements(x.operands[1])]
    assert sorted(read) == list(range(240))
    # each piece reads the transposed element that lands in its place
    for x in copies:
        dst, s = x.operands
        assert s.shape == dst.shape and s.strides == (6,) and dst.strides == (1,)
        row, col = divmod(dst.offset, 40)
        assert s.offset == col * 6 + row


def test_rows_that_fit_are_grouped():
    em = emitter.Emitter(_machine(max_elements=16))
    d = em.buffer("f32", (10, 5))
    src = em.buffer("f32", (5, 10)).permute((1, 0))
    em.vector("v.copy", d, src)
    assert [x.operands[0].shape for x in _ops(em, "v.copy")] == [(3, 5), (3, 5), (3, 5), (1, 5)]


def test_iota_start_follows_each_piece():
    em = emitter.Emitter(_machine(max_elements=16))
    d = em.buffer("i32", (40,))
    em.vector("v.iota", d, Imm(5))
    iotas = _ops(em, "v.iota")
    assert [(x.operands[0].offset, x.operands[0].numel, x.operands[1]) for x in iotas] == [
        (0, 16, Imm(5)),
        (16, 16, Imm(21)),
        (32, 8, Imm(37)),
    ]


def test_operands_of_different_shapes_are_an_internal_error():
    em = emitter.Emitter(_machine())
    with pytest.raises(CompileError, match="operands differ in shape"):
        em.vector("v.add", em.buffer("f32", (4,)), em.buffer("f32", (4,)), em.buffer("f32", (8,)))


# ---- lazy DMA waits ------------------------------------------------------------------------------


def _load(em, view):
    base, tok = VReg(), Token()
    em.emit("s.li", base, Imm(0))
    em.emit("dma.load", tok, view, base, (), (), (), Imm(0))
    return tok


def _store(em, view):
    base, tok = VReg(), Token()
    em.emit("s.li", base, Imm(0))
    em.emit("dma.store", tok, view, base, (), (), ())
    return tok


def _waits(em):
    return [i.operands[0] for i in _ops(em, "dma.wait")]


def _sequence(em):
    return [i.mnemonic for i in em.code if i.mnemonic not in (".def", "s.li")]


def test_a_load_is_waited_for_just_before_its_tile_is_read():
    em = emitter.Emitter(_machine())
    a, b, out = em.buffer("f32", (16,)), em.buffer("f32", (16,)), em.buffer("f32", (16,))
    tok = _load(em, a)
    em.emit("v.fill", b, Imm(1.0))  # another tile: the load stays in flight
    assert _waits(em) == []
    em.emit("v.add", out, b, a)
    assert _sequence(em) == ["dma.load", "v.fill", "dma.wait", "v.add"] and _waits(em) == [tok]
    em.emit("v.add", out, out, a)  # already waited: no second wait
    assert _waits(em) == [tok]


def test_a_tile_a_pending_store_reads_is_not_overwritten_early():
    em = emitter.Emitter(_machine())
    a, b = em.buffer("f32", (16,)), em.buffer("f32", (16,))
    tok = _store(em, a)
    em.emit("v.add", b, a, a)  # reading a is fine while the store reads it too
    assert _waits(em) == []
    em.emit("v.fill", a, Imm(0.0))
    assert _sequence(em)[-2:] == ["dma.wait", "v.fill"] and _waits(em) == [tok]


def test_device_memory_order_forces_waits():
    em = emitter.Emitter(_machine())
    a, b = em.buffer("f32", (16,)), em.buffer("f32", (16,))
    first = _load(em, a)
    second = _load(em, b)  # two loads may overlap
    assert _waits(em) == []
    _store(em, em.buffer("f32", (16,)))  # a store must not overtake the loads
    assert _waits(em) == [first, second]
    store = em.pending[0].token
    _load(em, em.buffer("f32", (16,)))  # a load must see the store
    assert _waits(em) == [first, second, store]


def test_the_queue_depth_bounds_dma_in_flight():
    em = emitter.Emitter(_machine(queue_depth=2))
    toks = [_load(em, em.buffer("f32", (16,))) for _ in range(4)]
    assert _waits(em) == toks[:2]  # the oldest is waited for when a third would exceed the queue
    assert [p.token for p in em.pending] == toks[2:]


def test_labels_and_branches_wait_for_all_but_carried_prefetches():
    em = emitter.Emitter(_machine())
    a, b = em.buffer("f32", (16,)), em.buffer("f32", (16,))
    carried, plain = _load(em, a), _load(em, b)
    em.carry(carried)
    em.place(em.label("loop"))
    assert _waits(em) == [plain]
    em.emit("jmp", em.label("out"))
    assert _waits(em) == [plain]  # the prefetch stays in flight across the back edge
    em.emit("halt")  # the end waits for everything
    assert _waits(em) == [plain, carried] and not em.pending


def test_a_wait_keeps_the_tiles_of_its_dma_alive():
    em = emitter.Emitter(_machine())
    a = em.buffer("f32", (16,))
    _store(em, a)
    em.emit("halt")
    [wait] = _ops(em, "dma.wait")
    assert wait.extra_uses == (a.buffer,)


def test_a_block_computes_a_constant_an_argument_and_a_sum_of_them_once():
    em = emitter.Emitter(_machine())
    share = em.rematerialised
    k, a = share("s.li", Imm(8)), share("s.arg", Imm(0))
    s = share("s.add", a, k, suffixes=("i64",))
    assert share("s.li", Imm(8)) is k and share("s.arg", Imm(0)) is a
    assert share("s.add", a, share("s.li", Imm(8)), suffixes=("i64",)) is s
    assert share("s.add", a, k, suffixes=("i32",)) is not s  # another type, another value
    assert share("s.li", Imm(8.0)) is not k and share("s.li", Imm(-0.0)) is not share("s.li", Imm(0.0))
    assert [i.mnemonic for i in em.code] == ["s.li", "s.arg", "s.add", "s.add", "s.li", "s.li", "s.li"]
    assert em.shared == {k, a, s}


def test_a_label_a_back_edge_or_a_write_of_an_operand_ends_the_sharing():
    em = emitter.Emitter(_machine())
    share = em.rematerialised
    top, ahead = em.label("top"), em.label("ahead")
    k = share("s.li", Imm(3))
    em.place(top)
    k2 = share("s.li", Imm(3))
    assert k2 is not k  # another block: what reaches the label from elsewhere has no k
    em.emit("bz", k2, ahead)  # a forward branch: the fall-through path goes on in the same block
    assert share("s.li", Imm(3)) is k2
    em.emit("bnz", k2, top)  # a loop's back edge: the code after the loop is not in it
    assert share("s.li", Imm(3)) is not k2
    iv = VReg("iv")
    em.emit("s.li", iv, Imm(0))
    one = share("s.li", Imm(1))
    nxt = share("s.add", iv, one, suffixes=("i64",))
    em.emit("s.add", iv, iv, one, suffixes=("i64",))  # iv written again: iv + 1 is another value now
    assert share("s.add", iv, one, suffixes=("i64",)) is not nxt
    off = emitter.Emitter(_machine())
    off.remat = None  # codegen's lowering again, each use its own
    assert off.rematerialised("s.li", Imm(3)) is not off.rematerialised("s.li", Imm(3)) and not off.shared


def test_a_shared_register_written_again_lowers_the_kernel_again_without_sharing():
    """A caller that writes a register `rematerialised` handed out more than once would change
    the other users' value: `_finalize` asks for a lowering without sharing instead of using it."""
    m = get_machine("plate-mini")
    em = emitter.Emitter(m)
    k = em.rematerialised("s.li", Imm(3))
    assert em.rematerialised("s.li", Imm(3)) is k
    em.emit("s.add", k, k, k, suffixes=("i64",))
    em.emit("halt")
    with pytest.raises(codegen.Rematerialise):
        codegen._finalize(em, "k", [Arg("a0", "i64")], m)
