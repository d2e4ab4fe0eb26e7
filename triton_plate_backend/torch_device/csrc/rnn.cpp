// The fused LSTM/GRU cells that ATen's RNN loop calls on a PrivateUse1 device.
//
// at::lstm / at::gru (native/RNN.cpp) take the fused-cell path for CUDA, XPU and PrivateUse1 inputs:
// _thnn_fused_lstm_cell / _thnn_fused_gru_cell, whose autograd formulas call the matching backward ops.
// These have CUDA kernels only, so the CPU fallback cannot serve them; here they are the CUDA kernels'
// arithmetic (native/cuda/RNN.cu) in ATen ops on plate tensors, computed in the op-math type (float for
// half and bfloat16) like CUDA's accscalar_t. The workspace layouts are CUDA's: LSTM [i, f, g, o]
// activated gates (4H); GRU [r, i, n, hn + b_hn, hx] (5H).
#include <ATen/ATen.h>
#include <ATen/OpMathType.h>
#include <torch/library.h>

#include <optional>
#include <tuple>

namespace {

using at::Tensor;

Tensor op_math(const Tensor& t) {
  return t.to(at::toOpMathType(t.scalar_type()));
}

// a + b, plus the bias when given.
Tensor add_bias(const Tensor& a, const std::optional<Tensor>& bias) {
  return bias.has_value() && bias->defined() ? a + op_math(*bias) : a;
}

// The gradient, or zeros like ``like`` where autograd passes none.
Tensor grad_or_zeros(const std::optional<Tensor>& grad, const Tensor& like) {
  return grad.has_value() && grad->defined() ? op_math(*grad) : at::zeros_like(like);
}

std::tuple<Tensor, Tensor, Tensor> fused_lstm_cell(const Tensor& input_gates, const Tensor& hidden_gates,
                                                    const Tensor& cx, const std::optional<Tensor>& input_bias,
                                                    const std::optional<Tensor>& hidden_bias) {
  const auto dtype = input_gates.scalar_type();
  const Tensor gates = add_bias(add_bias(op_math(input_gates) + op_math(hidden_gates), input_bias), hidden_bias);
  auto chunks = gates.chunk(4, 1);
  const Tensor i = chunks[0].sigmoid(), f = chunks[1].sigmoid(), g = chunks[2].tanh(), o = chunks[3].sigmoid();
  const Tensor cy = f * op_math(cx) + i * g;
  const Tensor hy = o * cy.tanh();
  const Tensor workspace = at::cat({i, f, g, o}, 1);
  return {hy.to(dtype), cy.to(dtype), workspace.to(dtype)};
}

std::tuple<Tensor, Tensor, Tensor> fused_lstm_cell_backward(const std::optional<Tensor>& grad_hy,
                                                             const std::optional<Tensor>& grad_cy, const Tensor& cx,
                                                             const Tensor& cy, const Tensor& workspace,
                                                             bool has_bias) {
  const auto dtype = workspace.scalar_type();
  auto gates = op_math(workspace).chunk(4, 1);
  const Tensor &i = gates[0], &f = gates[1], &g = gates[2], &o = gates[3];
  const Tensor tanh_cy = op_math(cy).tanh();
  const Tensor go = grad_or_zeros(grad_hy, tanh_cy);
  const Tensor gc = go * o * (1 - tanh_cy * tanh_cy) + grad_or_zeros(grad_cy, tanh_cy);  // d loss / d cy
  const Tensor grad_gates = at::cat({gc * g * (1 - i) * i, gc * op_math(cx) * (1 - f) * f, gc * i * (1 - g * g),
                                     go * tanh_cy * (1 - o) * o},
                                    1)
                                .to(dtype);
  const Tensor grad_cx = (gc * f).to(dtype);
  const Tensor grad_bias = has_bias ? grad_gates.sum(0, /*keepdim=*/false) : Tensor();
  return {grad_gates, grad_cx, grad_bias};
}

std::tuple<Tensor, Tensor> fused_gru_cell(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& hx,
                                          const std::optional<Tensor>& input_bias,
                                          const std::optional<Tensor>& hidden_bias) {
  const auto dtype = input_gates.scalar_type();
  auto in = add_bias(op_math(input_gates), input_bias).chunk(3, 1);
  auto hid = add_bias(op_math(hidden_gates), hidden_bias).chunk(3, 1);
  const Tensor h = op_math(hx);
  const Tensor r = (in[0] + hid[0]).sigmoid(), i = (in[1] + hid[1]).sigmoid();
  const Tensor n = (in[2] + r * hid[2]).tanh();
  const Tensor hy = n + i * (h - n);
  const Tensor workspace = at::cat({r, i, n, hid[2], h}, 1);
  return {hy.to(dtype), workspace.to(dtype)};
}

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> fused_gru_cell_backward(const Tensor& grad_hy,
                                                                           const Tensor& workspace, bool has_bias) {
  const auto dtype = workspace.scalar_type();
  auto ws = op_math(workspace).chunk(5, 1);
  const Tensor &r = ws[0], &i = ws[1], &n = ws[2], &hn = ws[3], &hx = ws[4];
  const Tensor go = op_math(grad_hy);
  const Tensor gi = go * (hx - n) * (1 - i) * i;
  const Tensor gn = go * (1 - i) * (1 - n * n);
  const Tensor gr = gn * hn * (1 - r) * r;
  const Tensor grad_input_gates = at::cat({gr, gi, gn}, 1).to(dtype);
  const Tensor grad_hidden_gates = at::cat({gr, gi, gn * r}, 1).to(dtype);
  const Tensor grad_hx = (go * i).to(dtype);
  if (!has_bias) {
    return {grad_input_gates, grad_hidden_gates, grad_hx, Tensor(), Tensor()};
  }
  return {grad_input_gates, grad_hidden_gates, grad_hx, grad_input_gates.sum(0), grad_hidden_gates.sum(0)};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", fused_lstm_cell);
  m.impl("_thnn_fused_lstm_cell_backward_impl", fused_lstm_cell_backward);
  m.impl("_thnn_fused_gru_cell", fused_gru_cell);
  m.impl("_thnn_fused_gru_cell_backward", fused_gru_cell_backward);
}

}  // namespace
