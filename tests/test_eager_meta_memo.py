"""eager_ops/meta_memo.py: a meta kernel's result remembered per call signature; what it must not key alike (a
bool and an int, -0.0 and 0.0, another default dtype), what it leaves out (host tensors), and torch's out= resize
warning on every call, not only the first."""

from __future__ import annotations

import warnings

import torch

from triton_plate_backend import eager_ops
from triton_plate_backend.eager_ops import meta_memo

eager_ops.register()  # what the torch.backends entry point does at `import torch`

ADD = torch.ops.aten.add.Tensor


def _plate(*shape, dtype=torch.float32):
    return torch.empty(shape, dtype=dtype, device="plate")


def test_a_signature_keys_shapes_strides_dtypes_and_values_by_type():
    a, b = _plate(2, 3), _plate(2, 3)
    key = meta_memo.key(ADD, {"self": a, "other": b, "alpha": 1})
    assert key == meta_memo.key(ADD, {"self": b, "other": a, "alpha": 1})  # same layout: same signature
    assert key != meta_memo.key(ADD, {"self": a, "other": b.t().contiguous().t(), "alpha": 1})  # strides
    assert key != meta_memo.key(ADD, {"self": a, "other": b.double(), "alpha": 1})
    assert key != meta_memo.key(ADD, {"self": a, "other": b, "alpha": True})  # True == 1, another type
    assert meta_memo.key(ADD, {"x": 0.0}) != meta_memo.key(ADD, {"x": -0.0})
    assert meta_memo.key(ADD, {"x": float("nan")}) == meta_memo.key(ADD, {"x": float("nan")})
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert key != meta_memo.key(ADD, {"self": a, "other": b, "alpha": 1})
    finally:
        torch.set_default_dtype(previous)


def test_host_tensors_and_unknown_arguments_are_not_keyed():
    a = _plate(2)
    assert meta_memo.key(ADD, {"self": a, "other": torch.tensor(2.0), "alpha": 1}) is None
    assert meta_memo.key(ADD, {"self": a, "other": a, "alpha": object()}) is None


def test_a_repeated_call_reuses_the_meta_result_and_computes_the_same():
    a = torch.arange(6, dtype=torch.float32, device="plate").reshape(2, 3)
    b = torch.ones(3, dtype=torch.float32, device="plate")
    first = (a + b).cpu()
    key = meta_memo.key(ADD, {"self": a, "other": b, "alpha": 1})
    remembered = meta_memo.lookup(key)
    assert remembered is not None and remembered.is_meta and remembered.shape == (2, 3)
    second = a + b
    assert meta_memo.lookup(key) is remembered
    assert torch.equal(second.cpu(), first) and torch.equal(first, a.cpu() + b.cpu())


def test_an_out_resize_warns_on_every_call():
    a = torch.ones(4, device="plate")
    for _ in range(2):
        out = torch.empty(3, device="plate")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.add(a, a, out=out)
        assert any("resized" in str(w.message) for w in caught)
        assert torch.equal(out.cpu(), torch.full((4,), 2.0))
