"""A config whose tiles do not fit SRAM is a compile-time error, and @triton.autotune prunes it."""

import os
import pickle

import pytest

os.environ.setdefault("TRITON_DEFAULT_BACKEND", "plate")
torch = pytest.importorskip("torch")
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from triton_plate_backend.errors import SramOverflow  # noqa: E402


@triton.jit
def _scale(x, o, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o + offs, tl.load(x + offs, mask=m) * 2.0, mask=m)


def test_overflow_is_a_compile_error_with_sizes_and_advice():
    x = torch.randn(64, device="plate")
    with pytest.raises(SramOverflow) as e:
        _scale[(1,)](x, x, 64, BLOCK=1 << 20)
    msg = str(e.value)
    assert "needs 4194368 bytes of SRAM but a core has 1048576" in msg
    assert "f32[1048576]" in msg and "Shrink the block sizes" in msg
    from triton.runtime.errors import OutOfResources

    assert isinstance(e.value, OutOfResources)  # what Triton's autotuner skips
    again = pickle.loads(pickle.dumps(e.value))  # crosses process boundaries (compile workers)
    assert isinstance(again, SramOverflow) and str(again) == msg


def test_autotune_prunes_configs_that_do_not_fit():
    tuned = triton.autotune(configs=[triton.Config({"BLOCK": 1 << 20}), triton.Config({"BLOCK": 1024})], key=["n"])(
        _scale
    )
    n = 4096
    x, o = torch.randn(n, device="plate"), torch.empty(n, device="plate")
    tuned[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, o, n)
    assert tuned.best_config.kwargs["BLOCK"] == 1024
    torch.testing.assert_close(o.cpu(), x.cpu() * 2)
