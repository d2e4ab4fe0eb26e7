"""The graph-level placement pass of inductor_plate (inductor_plate/placement.py) on plate-mini: every
buffer of a compiled graph gets a layout and a reason, in the generated code and in
placement_summary(); inputs the graph never writes are replicated once their rent pays the copy,
once and not at every call; inputs the graph writes keep their placement; results match CPU eager."""

from __future__ import annotations

import pytest
import torch
from torch._inductor import config as inductor_config
from torch._inductor.utils import run_and_get_code

import inductor_plate
from inductor_plate import placement
from inductor_plate.placement import place_inputs, replica_saving_ns


@pytest.fixture(scope="module", autouse=True)
def mini(plate_mini_module):
    return plate_mini_module


@pytest.fixture(autouse=True)
def fresh():
    torch._dynamo.reset()
    inductor_plate.reset_placement_summary()
    with inductor_config.patch(force_disable_caches=True):
        yield
    torch._dynamo.reset()


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(64)
        self.up = torch.nn.Linear(64, 256)

    def forward(self, x):
        return torch.relu(self.up(self.norm(x)))


def lines_of(summary: str) -> dict[str, str]:
    return {ln.split()[0]: ln for ln in summary.splitlines() if ln.startswith("  ") and not ln.startswith("  *")}


def test_every_buffer_gets_a_layout_and_weights_are_replicated_once(mini):
    torch.manual_seed(0)
    ref = Block().eval()
    model = Block().eval()
    model.load_state_dict(ref.state_dict())
    model = model.to("plate")
    x = torch.randn(128, 64)
    compiled = torch.compile(model)
    with torch.no_grad():
        out, (code,) = run_and_get_code(compiled, x.to("plate"))
        for _ in range(14):  # a weight read by one kernel pays its copy within a few calls (rent or buy)
            out = compiled(x.to("plate"))
    torch.testing.assert_close(out.cpu(), ref(x), rtol=1e-4, atol=1e-4)
    summary = inductor_plate.placement_summary()
    assert "# plate placement of graph" in code and "plate_place_inputs(args," in code
    rows = lines_of(summary)
    assert sum("replicated" in r for r in rows.values()) == 5  # the 4 parameters, and x: read-only inputs
    made = [r for name, r in rows.items() if name.startswith("buf")]
    assert any("blocked (axis 0)" in r for r in made)  # the 128 x 256 fp32 output: 128 KiB
    assert all("blocked" in r or "interleaved" in r for r in made)
    for p in model.parameters():  # by the graph's code, or by the launch pricing its kernels (sim/operands.py)
        assert torch.plate.placement_of(p) == "replicated"
    for line in summary.splitlines():  # a copy made at every call (x: a new tensor) pays within the call
        if "times (a new tensor at each call)" in line:
            copy, saves = (float(line.split(w)[1].split()[0]) for w in ("copy ", "saves ~"))
            assert copy <= saves
    assert "replicated once" in summary


def test_an_input_the_graph_writes_keeps_its_placement(mini):
    def bump(x, w):
        x.add_(w)
        return x * 2

    x, w = torch.randn(64, 64), torch.randn(64, 64)
    xp, wp = x.to("plate"), w.to("plate")
    with torch.no_grad():
        out = torch.compile(bump)(xp, wp)
    torch.testing.assert_close(out.cpu(), (x + w) * 2)
    rows = lines_of(inductor_plate.placement_summary())
    written = [r for r in rows.values() if "written by the graph" in r]
    assert len(written) == 1 and "as given" in written[0]
    assert torch.plate.placement_of(xp) != "replicated"


def test_a_replica_is_made_only_once_it_pays(mini):
    """A big input read by one kernel costs more to copy than one call saves: the copy waits until the
    calls have lost its price. A small input read by many kernels pays at the first call."""
    big = torch.zeros(1 << 18, device="plate")  # 1 MiB
    small = torch.zeros(256, device="plate")
    one_call = replica_saving_ns(mini.machine, big.nbytes, 1, torch.plate.home_domains(big))
    price = torch.plate.migration_cost_ns(big, "replicated")
    assert 0 < one_call < price
    calls_to_pay = int(price // one_call) + 1
    big_plan = (("big", big.nbytes, "input", "replicated", "a weight", 1, 0),)  # GraphPlan.rows of a 1-input graph
    small_plan = (("small", small.nbytes, "input", "replicated", "a weight", 8, 0),)
    clock = mini.clock_ns
    for _ in range(calls_to_pay - 1):
        place_inputs([big], "test-big", big_plan)
    assert torch.plate.placement_of(big) != "replicated" and mini.clock_ns == clock
    place_inputs([big], "test-big", big_plan)
    assert torch.plate.placement_of(big) == "replicated"
    assert mini.clock_ns - clock == pytest.approx(price)  # the copy is charged once, when it is made
    assert replica_saving_ns(mini.machine, small.nbytes, 8, torch.plate.home_domains(small)) > (
        torch.plate.migration_cost_ns(small, "replicated")
    )
    place_inputs([small], "test-small", small_plan)
    assert torch.plate.placement_of(small) == "replicated"
    summary = inductor_plate.placement_summary()  # plans this process did not compile are listed too
    assert "plate placement of graph test-big" in summary and "big replicated once" in summary


def test_a_parameter_is_bought_at_the_first_call_when_it_pays_within_the_horizon(mini, monkeypatch):
    """A module's parameter comes back at every call: its replica is made at the first call when it pays
    within PARAMETER_HORIZON calls; a plain input of the same size waits for its rent."""
    plain = torch.zeros(1 << 14, device="plate")
    weight = torch.nn.Parameter(torch.zeros(1 << 14, device="plate"), requires_grad=False)
    one_call = replica_saving_ns(mini.machine, plain.nbytes, 1, torch.plate.home_domains(plain))
    price = torch.plate.migration_cost_ns(plain, "replicated")
    assert one_call < price <= placement.PARAMETER_HORIZON * one_call
    plan = (("x", plain.nbytes, "input", "replicated", "a weight", 1, 0),)
    place_inputs([plain], "test-plain", plan)
    assert torch.plate.placement_of(plain) != "replicated"
    monkeypatch.setattr(placement, "PARAMETER_HORIZON", 1)  # a copy that would not pay within the horizon
    place_inputs([weight], "test-weight", plan)
    assert torch.plate.placement_of(weight) != "replicated"
    monkeypatch.undo()
    place_inputs([weight], "test-weight", plan)
    assert torch.plate.placement_of(weight) == "replicated"
