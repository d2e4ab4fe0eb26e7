"""The compiled walks read an object's slot at its offset (isa/csrc/fields.h): through `_codewalk.writes`
(scalar_flow.writes, which reads `mnemonic` and `operands`), every kind of object gives what the attribute
lookup gives: the emitter's PInst (slots), a subclass that makes a field a property, an object with a __dict__,
a class with __getattr__, a class whose field is replaced by a property after the walk learnt its offset, more
classes than the reader remembers in turns, and an empty slot (the same AttributeError)."""

from __future__ import annotations

import dataclasses
import types
from dataclasses import dataclass

import pytest

from triton_plate_backend.passes import scalar_flow
from triton_plate_backend.passes.emitter import PInst, VReg

pytestmark = pytest.mark.skipif(scalar_flow._codewalk is None, reason="passes._codewalk is not built")


def compiled(code):
    return scalar_flow._codewalk.writes(code, scalar_flow.WRITTEN_AT, VReg)


def both(code):
    got = compiled(code)
    assert got is not NotImplemented
    assert list(got.items()) == list(scalar_flow.writes_py(code).items())
    return got


A, B, C = VReg(), VReg(), VReg()


def test_pinst_has_slots_and_no_dict():
    p = PInst("s.add", (), (A, B, C))
    assert "__slots__" in PInst.__dict__ and not hasattr(p, "__dict__")


def test_the_emitters_instructions():
    code = [PInst("s.add", (), (A, B, C)), PInst(".label", (), ()), PInst("s.mul", (), (A, A, B))]
    assert both(code) == {A: 2}


def test_a_subclass_that_makes_a_field_a_property():
    class Renamed(PInst):
        __slots__ = ()

        @property
        def operands(self):  # the property, not the slot the base class declares
            return (B, A, A)

        @operands.setter
        def operands(self, value):  # __init__'s write: the base class' slot stays empty
            pass

    code = [PInst("s.add", (), (A, B, C)), Renamed("s.add", (), (A, B, C)), PInst("s.add", (), (A, B, C))]
    assert both(code) == {A: 2, B: 1}


def test_objects_with_a_dict_and_with_getattr():
    class Dynamic:
        def __getattr__(self, name):
            return {"mnemonic": "s.add", "operands": (C, A, B)}[name]

    ns = types.SimpleNamespace(mnemonic="s.add", operands=(B, A, C))
    code = [ns, PInst("s.add", (), (A, B, C)), Dynamic(), ns]
    assert both(code) == {B: 2, A: 1, C: 1}


def test_a_class_changed_after_its_offset_was_learnt():
    @dataclass(slots=True)
    class Inst:
        mnemonic: str
        operands: tuple

    code = [Inst("s.add", (A, B, C))]
    assert both(code) == {A: 1}
    Inst.operands = property(lambda self: (C, A, B))  # the slot's descriptor replaced: the class changed
    assert both(code) == {C: 1}


def test_more_classes_than_the_reader_remembers_in_turns():
    kinds = []
    for k in range(7):
        kinds.append(
            dataclass(slots=True)(type(f"K{k}", (), {"__annotations__": {"mnemonic": str, "operands": tuple}}))
        )
    regs = [VReg() for _ in range(7)]
    code = [kinds[k % 7]("s.add", (regs[k % 7], A, B)) for k in range(40)]
    got = both(code)
    assert list(got.values()) == [6, 6, 6, 6, 6, 5, 5]


def test_an_empty_slot_raises_the_lookups_error():
    p = PInst("s.add", (), (A, B, C))
    del p.operands
    with pytest.raises(AttributeError) as c_err:
        compiled([PInst("s.add", (), (A, B, C)), p])
    with pytest.raises(AttributeError) as py_err:
        scalar_flow.writes_py([p])
    assert str(c_err.value) == str(py_err.value)


def test_a_field_written_through_a_property_of_a_subclass(monkeypatch):
    """finalize's operand mapping makes each Inst in C (`set`): an Inst subclass whose `loc` is a property gets it
    through the property's setter, as its Python __init__ does; the Programs are the same both ways."""
    import ttir_fixtures

    from triton_plate_backend.isa.program import Inst
    from triton_plate_backend.machine import get_machine
    from triton_plate_backend.passes import finalize, licm, regalloc, scalar_cse
    from triton_plate_backend.passes.pipeline import run_pipeline
    from triton_plate_backend.ttir.parser import parse

    class Located(Inst):
        __slots__ = ("_where",)

        @property
        def loc(self):
            return self._where

        @loc.setter
        def loc(self, value):
            object.__setattr__(self, "_where", value)  # the base class' slot stays empty

    monkeypatch.setattr(finalize, "Inst", Located)
    text = ttir_fixtures.fixture_text("softmax")

    def lowered():
        return run_pipeline(parse(text, "softmax"), None, get_machine("plate1"))[1].instrs

    with_c = lowered()
    for module in (regalloc, scalar_cse, licm, finalize, scalar_flow):
        monkeypatch.setattr(module, "_codewalk", None)
    without = lowered()
    assert len(with_c) > 10 and all(type(i) is Located and hasattr(i, "_where") for i in with_c)
    assert [(i.mnemonic, i.suffixes, i.operands, i.loc) for i in with_c] == [
        (i.mnemonic, i.suffixes, i.operands, i.loc) for i in without
    ]


@pytest.mark.parametrize("kernel", ["softmax", "matmul"])
def test_instructions_whose_names_and_suffixes_are_other_equal_objects(kernel, monkeypatch):
    """The Program walks remember each (mnemonic, suffixes) by the objects' identity within a walk (isawalk.cpp
    `FormMemo`): with every other instruction's mnemonic and suffixes copied into new, equal objects (and one
    suffix tuple changed to one the ISA lacks), the text, the code section and verify's answer are Python's."""
    import ttir_fixtures

    from triton_plate_backend.isa import asm, encoding
    from triton_plate_backend.isa import program as isa_program

    program = ttir_fixtures.lowered(kernel)

    def copied(ins, k):
        if k % 2:
            return ins
        return dataclasses.replace(ins, mnemonic="".join(list(ins.mnemonic)), suffixes=tuple(list(ins.suffixes)))

    instrs = [copied(ins, k) for k, ins in enumerate(program.instrs)]
    assert any(a.mnemonic is not b.mnemonic for a, b in zip(instrs, program.instrs))
    odd = next(k for k, ins in enumerate(instrs) if ins.suffixes)
    broken = [*instrs[:odd], dataclasses.replace(instrs[odd], suffixes=("nope",)), *instrs[odd + 1 :]]
    for code in (instrs, broken):
        changed = dataclasses.replace(program, instrs=code)
        for module, fn in (
            (asm, lambda changed=changed: asm.disassemble_read_back(changed)[0]),
            (encoding, lambda changed=changed: encoding._pack_code(changed.instrs)),
            (isa_program, lambda changed=changed: isa_program.verify(changed)),
        ):
            both = [ttir_fixtures.with_or_without_isawalk(module, c, monkeypatch, fn) for c in (True, False)]
            assert both[0] == both[1]
