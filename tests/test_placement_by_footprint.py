"""A launch's affinity mapping (sim/affinity.KeptMappings) and the operand planner's shared operands
(sim/operands._sizes_key) are kept by what they read of the kernel, its footprint text and its arguments'
types, not by the program: a fresh kernel compiled to the same footprint (another constexpr that changes no
address, as a test's next parameters do) computes neither again, and what it gets is the full computation's
answer for its own program and arguments."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

import triton_plate_backend.torch_device  # noqa: F401  (registers the plate device)


@pytest.fixture(scope="module", autouse=True)
def mini(plate_mini_module):
    return plate_mini_module


@triton.jit
def scaled_row_add(x, y, o, C: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(o + offs, tl.load(x + offs) * C + tl.load(y + tl.arange(0, BLOCK)))  # every program reads all of y


def test_a_fresh_kernel_of_the_same_footprint_gets_the_full_computations_answers(mini, monkeypatch):
    from triton_plate_backend.sim import affinity, operands

    launches = []
    plan = operands.OperandPlanner.plan

    def recorded(self, program, grid, args, memory):
        launches.append((program, grid, list(args), memory))
        return plan(self, program, grid, args, memory)

    mapped, shared = [], []
    fresh_mapping, fresh_shared = affinity.resolve_policy, operands.shared_operands
    monkeypatch.setattr(operands.OperandPlanner, "plan", recorded)
    monkeypatch.setattr(affinity, "resolve_policy", lambda *a: mapped.append(a[1]) or fresh_mapping(*a))
    monkeypatch.setattr(operands, "shared_operands", lambda *a: shared.append(a[0]) or fresh_shared(*a))
    affinity.MAPPINGS.clear()
    mini._planner()._shared.clear()
    B, rows = 256, 16
    programs = []
    for c in (2.0, 3.0, 5.0):
        x, o = torch.rand(rows * B, device="plate"), torch.empty(rows * B, device="plate")
        y = torch.rand(B, device="plate")
        mapped.clear(), shared.clear(), launches.clear()
        scaled_row_add[(rows,)](x, y, o, C=c, BLOCK=B)
        assert torch.equal(o.cpu(), (x.cpu().view(rows, B) * c + y.cpu()).reshape(-1))
        program, grid, args, memory = next(a for a in launches if a[0].name == "scaled_row_add")
        programs.append(program)
        # the first kernel computes both; the next ones (fresh programs, the same footprint) neither
        if c == 2.0:
            assert program in mapped and shared == [program]
        else:
            assert mapped == [] and shared == []
        full = fresh_mapping("affinity", program, grid, args, memory)
        assert isinstance(full, affinity.CoreMapping)
        assert affinity.MAPPINGS.resolve("affinity", program, grid, args, memory) == full
        assert [i for i, _ in mini._planner().plan(program, grid, args, memory)[0]] == [
            i for i, _ in fresh_shared(program, grid, args, memory)
        ]
    assert len({id(p) for p in programs}) == 3 and programs[0] != programs[1]  # its constant: another program
    assert len({p.affinity for p in programs}) == 1
