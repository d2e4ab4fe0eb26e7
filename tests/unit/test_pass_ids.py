"""The code generator's virtual registers, DMA tokens and SRAM buffers number themselves 1, 2, 3, ... per kind in
the order they are made, without changing their class: a class changed at every register made (a count kept as
a class attribute) is one whose attribute lookups the interpreter has to find again."""

from __future__ import annotations

from triton_plate_backend.passes.emitter import Buffer, Token, VReg


def _made(cls, n: int) -> list:
    return [Buffer(64) if cls is Buffer else cls() for _ in range(n)]


def test_each_kind_counts_on_by_one_on_its_own():
    for cls in (VReg, Token, Buffer):
        first = _made(cls, 1)[0].id
        others = [c for c in (VReg, Token, Buffer) if c is not cls]
        for other in others:
            _made(other, 3)  # another kind's ids do not move this one's
        assert [x.id for x in _made(cls, 4)] == [first + 1, first + 2, first + 3, first + 4]


def test_making_one_leaves_its_class_as_it_was():
    for cls in (VReg, Token, Buffer):
        before = dict(vars(cls))
        made = _made(cls, 3)
        assert dict(vars(cls)) == before and len({x.id for x in made}) == 3
