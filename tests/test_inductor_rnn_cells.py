"""LSTM/GRU cells compiled on plate are fused Inductor kernels (inductor_plate/rnn_cells.py), not calls of the
fused-cell ops' eager plate kernels (about a dozen launches per cell and step), forward and backward, with
CPU eager's values."""

from __future__ import annotations

import pytest
import torch
from torch._inductor.utils import run_and_get_code

import inductor_plate
from triton_plate_backend import shims

FUSED_CELL_CALLS = (
    "aten._thnn_fused_lstm_cell.",
    "aten._thnn_fused_lstm_cell_backward_impl.",
    "aten._thnn_fused_gru_cell.",
    "aten._thnn_fused_gru_cell_backward.",
)


class Cells(torch.nn.Module):
    """An LSTMCell feeding a GRUCell, stepped over time in Python (Dynamo unrolls the loop)."""

    def __init__(self, bias: bool):
        super().__init__()
        self.lstm = torch.nn.LSTMCell(8, 6, bias=bias)
        self.gru = torch.nn.GRUCell(6, 5, bias=bias)

    def forward(self, x):
        h = c = x.new_zeros(x.shape[0], 6)
        g = x.new_zeros(x.shape[0], 5)
        outs = []
        for t in range(x.shape[1]):
            h, c = self.lstm(x[:, t], (h, c))
            g = self.gru(h, g)
            outs.append(g)
        return torch.stack(outs, 1)


def fused_cell_calls(code: list[str]) -> list[str]:
    return [call for call in FUSED_CELL_CALLS if any(call in source for source in code)]


# Without biases Dynamo fails before plate's code runs: PyTorch's meta function of _thnn_fused_lstm_cell
# (rnn_cell_checkSizes) reads ``.device`` of the None biases (the same for any device taking the fused path).
NO_BIAS = pytest.mark.xfail(raises=torch._dynamo.exc.TorchRuntimeError, strict=True, reason="PyTorch's meta")


@pytest.mark.parametrize("bias", [True, pytest.param(False, marks=NO_BIAS)])
def test_compiled_cells_are_fused_kernels_forward_and_backward(bias):
    torch.manual_seed(0)
    model, x = Cells(bias), torch.randn(3, 4, 8)
    plate = Cells(bias).to("plate")
    plate.load_state_dict(model.state_dict())
    model(x).square().sum().backward()

    def step(m, x):
        out = m(x)
        out.square().sum().backward()
        return out

    torch._dynamo.reset()
    inductor_plate.reset_host_fallbacks()
    out, code = run_and_get_code(torch.compile(step), plate, x.to("plate"))
    assert fused_cell_calls(code) == []
    assert inductor_plate.host_fallbacks() == {}
    torch.testing.assert_close(out.cpu(), model(x), rtol=1e-5, atol=1e-5)
    for (name, p), q in zip(plate.named_parameters(), model.parameters(), strict=True):
        torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-4, atol=1e-5, msg=name)


def test_compiled_bf16_cells_match_eager_plate():
    """bf16 weights and input: the cells compute in float32 (the op-math type) as the eager kernels do."""
    torch.manual_seed(0)
    model = Cells(True).to(torch.bfloat16).to("plate")
    x = torch.randn(2, 3, 8, dtype=torch.bfloat16, device="plate")
    with torch.no_grad():
        want = model(x)
        torch._dynamo.reset()
        out, code = run_and_get_code(torch.compile(model), x)
    assert fused_cell_calls(code) == []
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.cpu(), want.cpu(), rtol=1.6e-2, atol=1e-2)


def test_gru_cell_compiles_at_symbolic_sizes():
    """dynamic=True: the GRU cell needs a Meta kernel (PyTorch has none); without it Dynamo skipped the frame."""
    torch.manual_seed(0)
    model = Cells(True)
    plate = Cells(True).to("plate")
    plate.load_state_dict(model.state_dict())
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    fn = torch.compile(plate, dynamic=True)
    with torch.no_grad():
        for batch in (3, 5):
            x = torch.randn(batch, 4, 8)
            torch.testing.assert_close(fn(x.to("plate")).cpu(), model(x), rtol=1e-5, atol=1e-5)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1


@pytest.mark.parametrize("bias", [True, False])
def test_gru_cell_meta_kernel_gives_the_plate_kernels_outputs(bias):
    """shims.py's Meta kernel (gru-cell-meta.patch): the shapes, dtypes and strides of the eager plate kernel's
    outputs, with or without biases; a wrong hx size is refused."""
    assert shims.STATUS["_thnn_fused_gru_cell has a Meta kernel"] in ("applied", "not needed")
    assert torch._C._dispatch_has_kernel_for_dispatch_key("aten::_thnn_fused_gru_cell", "Meta")
    batch, hidden = 3, 5
    inputs = [torch.randn(batch, 3 * hidden), torch.randn(batch, 3 * hidden), torch.randn(batch, hidden)]
    inputs += [torch.randn(3 * hidden), torch.randn(3 * hidden)] if bias else [None, None]
    plate = torch.ops.aten._thnn_fused_gru_cell(*[t if t is None else t.to("plate") for t in inputs])
    on_meta = [t if t is None else t.to("meta") for t in inputs]
    meta = torch.ops.aten._thnn_fused_gru_cell(*on_meta)
    assert [(t.shape, t.dtype, t.stride()) for t in meta] == [(t.shape, t.dtype, t.stride()) for t in plate]
    on_meta[2] = on_meta[2][:2]  # hx of another batch
    with pytest.raises(RuntimeError, match="!="):
        torch.ops.aten._thnn_fused_gru_cell(*on_meta)
