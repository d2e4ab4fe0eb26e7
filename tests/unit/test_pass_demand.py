"""demand: which ops the code generator lowers, given how each memory op is lowered. Strided
accesses need only the scalars of their address expressions (pointer and mask tensors are never
materialised); a gather needs its pointer tensor; a loop-carried pointer whose accesses are all
strided travels as scalar companions; ops no effect depends on are dropped. last_uses says where
each value dies."""

from __future__ import annotations

from collections import Counter

import pytest
from ttir_fixtures import LOWERABLE, fixture_text

from triton_plate_backend.passes import access, demand
from triton_plate_backend.ttir.parser import parse

HEAD = "module {\n  tt.func public @k(%x: !tt.ptr<f32>, %o: !tt.ptr<f32>, %ix: !tt.ptr<i32>, %n: i32) {\n"
TAIL = "    tt.return\n  }\n}\n"

# a loop accumulating 4 contiguous blocks of x (the pointer tensor advances by 64 each trip), an
# indirect load o[ix[r]], a store of both and an op whose result nobody reads
LOOP_AND_GATHER = (
    HEAD
    + """    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c4 = arith.constant 4 : i32
    %step = arith.constant dense<64> : tensor<64xi32>
    %zero = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %p0 = tt.addptr %xs, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %res:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero, %p = %p0)
        -> (tensor<64xf32>, tensor<64x!tt.ptr<f32>>) : i32 {
      %v = tt.load %p : tensor<64x!tt.ptr<f32>>
      %s = arith.addf %acc, %v : tensor<64xf32>
      %p2 = tt.addptr %p, %step : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      scf.yield %s, %p2 : tensor<64xf32>, tensor<64x!tt.ptr<f32>>
    }
    %ixs = tt.splat %ix : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
    %ixp = tt.addptr %ixs, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    %idx = tt.load %ixp : tensor<64x!tt.ptr<i32>>
    %os = tt.splat %o : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %gp = tt.addptr %os, %idx : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %g = tt.load %gp : tensor<64x!tt.ptr<f32>>
    %sum = arith.addf %res#0, %g : tensor<64xf32>
    %op = tt.addptr %os, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %op, %sum : tensor<64x!tt.ptr<f32>>
    %unused = arith.mulf %sum, %sum : tensor<64xf32>
"""
    + TAIL
)


def _kernel(text: str):
    return parse(text, "k.ttir").kernel()


def _by_result(func) -> dict:
    return {r.name.partition("#")[0]: op for op in func.walk() for r in op.results}


def test_strided_accesses_leave_pointer_and_mask_tensors_unmaterialised():
    func = parse(fixture_text("vec_add"), "vec_add").kernel()
    d = demand.analyze(func)
    assert Counter(op.name for op in d.strided) == {"tt.load": 2, "tt.store": 1}
    assert all(isinstance(acc, access.StructuredAccess) for acc in d.strided.values())
    live = Counter(op.name for op in d.live)
    assert live == {"tt.get_program_id": 1, "tt.load": 2, "arith.addf": 1, "tt.store": 1, "tt.return": 1}
    # the pointer tensors, the offsets tensor and the mask exist in the IR but are never lowered
    dropped = {op.name for op in func.walk() if op not in d.live and op is not func}
    assert {"tt.splat", "tt.addptr", "tt.make_range", "arith.cmpi"} <= dropped
    assert not d.companions and not d.tensor_args


def test_loop_pointer_travels_as_companions_and_a_gather_needs_its_pointers():
    func = _kernel(LOOP_AND_GATHER)
    ops = _by_result(func)
    d = demand.analyze(func)
    loop = ops["res"]
    p = loop.regions[0].blocks[0].args[2]
    acc = loop.regions[0].blocks[0].args[1]
    # the loop's pointer tensor is all strided: scalar companion registers, no tile
    assert list(d.companions) == [loop] and list(d.companions[loop]) == [p]
    assert p not in d.tensor_args and acc in d.tensor_args
    assert ops["v"] in d.strided and ops["p2"] not in d.live and ops["p0"] not in d.live
    # o[ix[r]]: the index load is strided, the load through it a gather that needs its pointer tensor
    assert ops["idx"] in d.strided and ops["g"] not in d.strided
    assert {ops["gp"], ops["os"], ops["idx"], ops["g"]} <= d.live
    assert ops["idx"].results[0] in d.needed and ops["gp"].results[0] in d.needed
    # the store is strided: its own pointer tensor is not; nobody reads %unused
    assert ops["op"] not in d.live and ops["sum"] in d.live
    assert ops["unused"] not in d.live


def test_last_uses_say_where_values_die():
    func = _kernel(LOOP_AND_GATHER)
    ops = _by_result(func)
    dies, unused = demand.last_uses(func)
    assert ops["res"].results[0] in dies[ops["sum"]]  # the loop's sum dies where it is added
    assert ops["sum"].results[0] in dies[ops["unused"]]  # read last by the dead mulf
    assert ops["unused"].results[0] in unused and ops["res"].results[1] in unused
    # %step is defined outside the loop and read inside it: it never dies inside the body
    inner = ops["p2"]
    assert ops["step"].results[0] not in dies.get(inner, set())
    assert ops["step"].results[0] in dies[ops["res"]]  # ...but at the loop op, from outside


def test_the_analyses_leave_no_reference_cycle():
    """Their nested functions call each other through closure cells: emptied on return, so reference counting
    frees their maps (which hold every op and value) and nothing waits for Python's cycle collector."""
    import gc

    func = _kernel(LOOP_AND_GATHER)
    demand.analyze(func), demand.last_uses(func)  # warm: anything cached on first use stays
    gc.collect()
    was_on = gc.isenabled()
    gc.disable()
    try:
        d = demand.analyze(func)
        dies, unused = demand.last_uses(func)
        assert d.live and dies
        del d, dies, unused
        assert gc.collect() == 0
    finally:
        if was_on:
            gc.enable()


def _last_uses_by_climbing(func) -> tuple[dict, set]:
    """last_uses' definition, the slow way: from each use climb the op's parents to the value's defining block."""
    def_block, parent_of = {}, {}

    def place(block, parent):
        def_block.update({a: block for a in block.args})
        for op in block.ops:
            parent_of[op] = (block, parent)
            def_block.update({r: block for r in op.results})
            for region in op.regions:
                for b in region.blocks:
                    place(b, op)

    for b in func.regions[0].blocks:
        place(b, func)
    order = {op: i for i, op in enumerate(func.walk())}
    last, immortal, used = {}, set(), set()
    for op in list(func.walk())[1:]:
        for v in op.operands:
            used.add(v)
            top = op
            while top is not func and parent_of[top][0] is not def_block.get(v):
                top = parent_of[top][1]
            if top is func:
                immortal.add(v)
            elif v not in last or order[top] > order[last[v]]:
                last[v] = top
    dies = {}
    for v, op in last.items():
        if v not in immortal:
            dies.setdefault(op, set()).add(v)
    return dies, set(def_block) - used


@pytest.mark.parametrize("kernel", LOWERABLE)
def test_last_uses_agree_with_climbing_the_parents(kernel):
    """(each use finds its op in the defining block by one lookup: the same answer, in the same order)"""
    func = _kernel(fixture_text(kernel))
    dies, unused = demand.last_uses(func)
    want_dies, want_unused = _last_uses_by_climbing(func)
    assert list(dies.items()) == list(want_dies.items()) and unused == want_unused
    assert dies  # (every kernel reads some value last somewhere)
