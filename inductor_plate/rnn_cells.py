"""The fused LSTM/GRU cells decomposed into pointwise ops on plate, so that Inductor fuses each cell.

``nn.LSTMCell``/``nn.GRUCell`` (and ``nn.LSTM``/``nn.GRU`` when Dynamo traces them) call ATen's
``lstm_cell``/``gru_cell``, which take the fused-cell path for PrivateUse1 inputs as for CUDA:
``_thnn_fused_lstm_cell``/``_thnn_fused_gru_cell`` and their backward ops. Inductor has no lowering for them (it
falls back to the device's kernel, CUDA's one fused kernel); on plate that kernel is eager ATen ops
(torch_device/csrc/rnn.cpp), about a dozen launches per cell and step. Here they are the same arithmetic in
Python (the op-math type, the same workspace layouts: LSTM [i, f, g, o] activated gates, GRU
[r, i, n, hn + b_hn, hx]), which Inductor lowers into one fused kernel per cell. Other devices keep the
table's previous entry (decompositions.install).

At symbolic sizes (``dynamic=True``) the GRU cell needs a Meta kernel, which PyTorch 2.13 lacks: shims.py
registers one (patches/pytorch/gru-cell-meta.patch). The backward's optional outputs have none: a training step
at symbolic sizes still skips the frame."""

from __future__ import annotations

import functools

import torch

from . import decompositions

aten = torch.ops.aten


def _on_plate(t) -> bool:
    return t.device.type == "plate"


def _op_math(t):
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


def _add_bias(a, bias):
    return a if bias is None else a + _op_math(bias)


def _grad_or_zeros(grad, like):
    return torch.zeros_like(like) if grad is None else _op_math(grad)


def lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    if not _on_plate(input_gates):
        return NotImplemented
    dtype = input_gates.dtype
    gates = _add_bias(_add_bias(_op_math(input_gates) + _op_math(hidden_gates), input_bias), hidden_bias)
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * _op_math(cx) + i * g
    hy = o * cy.tanh()
    return hy.to(dtype), cy.to(dtype), torch.cat([i, f, g, o], 1).to(dtype)


def lstm_cell_backward(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    if not _on_plate(workspace):
        return NotImplemented
    dtype = workspace.dtype
    i, f, g, o = _op_math(workspace).chunk(4, 1)
    tanh_cy = _op_math(cy).tanh()
    go = _grad_or_zeros(grad_hy, tanh_cy)
    gc = go * o * (1 - tanh_cy * tanh_cy) + _grad_or_zeros(grad_cy, tanh_cy)  # d loss / d cy
    grad_gates = torch.cat(
        [gc * g * (1 - i) * i, gc * _op_math(cx) * (1 - f) * f, gc * i * (1 - g * g), go * tanh_cy * (1 - o) * o], 1
    ).to(dtype)
    grad_bias = grad_gates.sum(0) if has_bias else None
    return grad_gates, (gc * f).to(dtype), grad_bias


def gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    if not _on_plate(input_gates):
        return NotImplemented
    dtype = input_gates.dtype
    ir, ii, in_ = _add_bias(_op_math(input_gates), input_bias).chunk(3, 1)
    hr, hi, hn = _add_bias(_op_math(hidden_gates), hidden_bias).chunk(3, 1)
    h = _op_math(hx)
    r, i = (ir + hr).sigmoid(), (ii + hi).sigmoid()
    n = (in_ + r * hn).tanh()
    hy = n + i * (h - n)
    return hy.to(dtype), torch.cat([r, i, n, hn, h], 1).to(dtype)


def gru_cell_backward(grad_hy, workspace, has_bias):
    if not _on_plate(workspace):
        return NotImplemented
    dtype = workspace.dtype
    r, i, n, hn, hx = _op_math(workspace).chunk(5, 1)
    go = _op_math(grad_hy)
    gi = go * (hx - n) * (1 - i) * i
    gn = go * (1 - i) * (1 - n * n)
    gr = gn * hn * (1 - r) * r
    grad_input_gates = torch.cat([gr, gi, gn], 1).to(dtype)
    grad_hidden_gates = torch.cat([gr, gi, gn * r], 1).to(dtype)
    grad_hx = (go * i).to(dtype)
    if not has_bias:
        return grad_input_gates, grad_hidden_gates, grad_hx, None, None
    return grad_input_gates, grad_hidden_gates, grad_hx, grad_input_gates.sum(0), grad_hidden_gates.sum(0)


DECOMPOSITIONS = {
    aten._thnn_fused_lstm_cell.default: lstm_cell,
    aten._thnn_fused_lstm_cell_backward_impl.default: lstm_cell_backward,
    aten._thnn_fused_gru_cell.default: gru_cell,
    aten._thnn_fused_gru_cell_backward.default: gru_cell_backward,
}


@functools.cache
def register() -> None:
    """Put the decompositions in Inductor's table (once; inductor_plate.register)."""
    decompositions.install(DECOMPOSITIONS, "_plate_rnn")
