"""AMD's fp8 formats (Triton's fp8e4b8 and fp8e5b16, MLIR f8E4M3FNUZ and f8E5M2FNUZ): biases 8 and 16, no
infinity, no negative zero, one NaN code (0x80). Every code upcasts exactly; downcasts round to nearest even and
saturate finite overflow and infinities at the largest finite value, as plate's other fp8 formats do."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from codegen_kernels.harness import compile_text, run

TTIR = """
module {
  tt.func public @k(%X: !tt.ptr<T>, %Y: !tt.ptr<f32>, %S: !tt.ptr<f32>, %Z: !tt.ptr<T>) attributes {noinline = false} {
    %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %xp = tt.splat %X : !tt.ptr<T> -> tensor<256x!tt.ptr<T>>
    %xq = tt.addptr %xp, %r : tensor<256x!tt.ptr<T>>, tensor<256xi32>
    %x = tt.load %xq : tensor<256x!tt.ptr<T>>
    %y = tt.fp_to_fp %x : tensor<256xT> -> tensor<256xf32>
    %yp = tt.splat %Y : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
    %yq = tt.addptr %yp, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
    tt.store %yq, %y : tensor<256x!tt.ptr<f32>>
    %sp = tt.splat %S : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
    %sq = tt.addptr %sp, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
    %s = tt.load %sq : tensor<256x!tt.ptr<f32>>
    %z = tt.fp_to_fp %s, rounding = rtne : tensor<256xf32> -> tensor<256xT>
    %zp = tt.splat %Z : !tt.ptr<T> -> tensor<256x!tt.ptr<T>>
    %zq = tt.addptr %zp, %r : tensor<256x!tt.ptr<T>>, tensor<256xi32>
    tt.store %zq, %z : tensor<256x!tt.ptr<T>>
    tt.return
  }
}
"""


@pytest.mark.parametrize(
    "mlir, fp8", [("f8E4M3FNUZ", ml_dtypes.float8_e4m3fnuz), ("f8E5M2FNUZ", ml_dtypes.float8_e5m2fnuz)]
)
def test_fnuz_fp8_upcasts_every_code_and_downcasts_rtne_saturating(mlir, fp8):
    program, _ = compile_text(TTIR.replace("T>", f"{mlir}>").replace("xT>", f"x{mlir}>"), "k")
    codes = np.arange(256, dtype=np.uint8)
    big = float(ml_dtypes.finfo(fp8).max)
    src = np.concatenate(
        [codes.view(fp8).astype(np.float32)[:248], [-0.0, big * 1.01, big * 2, np.inf, -np.inf, np.nan]]
    )
    src = np.concatenate([src, np.float32(1.0) + np.arange(2, dtype=np.float32) * 2.0**-5]).astype(np.float32)
    (_, up, _, down), _ = run(program, 1, [codes.view(np.int8), np.zeros(256, np.float32), src, np.zeros(256, np.int8)])
    want_up = codes.view(fp8).astype(np.float32)
    np.testing.assert_array_equal(up.view(np.uint32), want_up.view(np.uint32))  # 0x80: NaN; no -0
    finite = np.where(np.isnan(src), src, np.clip(src, -big, big))
    want_down = finite.astype(fp8).view(np.uint8)  # ml_dtypes rounds once to nearest even
    np.testing.assert_array_equal(down.view(np.uint8), want_down)
    assert down.view(np.uint8)[248] == 0 and down.view(np.uint8)[251] == 0x7F  # -0 -> +0; +inf -> max finite


DOT = """
module {
  tt.func public @k(%X: !tt.ptr<T>, %Y: !tt.ptr<f32>) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %cst_0 = arith.constant dense<16> : tensor<16x1xi32>
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %x = tt.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %x_1 = arith.muli %x, %cst_0 : tensor<16x1xi32>
    %x_2 = tt.splat %X : !tt.ptr<T> -> tensor<16x1x!tt.ptr<T>>
    %x_3 = tt.addptr %x_2, %x_1 : tensor<16x1x!tt.ptr<T>>, tensor<16x1xi32>
    %x_4 = tt.expand_dims %r {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %x_5 = tt.broadcast %x_3 : tensor<16x1x!tt.ptr<T>> -> tensor<16x16x!tt.ptr<T>>
    %x_6 = tt.broadcast %x_4 : tensor<1x16xi32> -> tensor<16x16xi32>
    %x_7 = tt.addptr %x_5, %x_6 : tensor<16x16x!tt.ptr<T>>, tensor<16x16xi32>
    %x_8 = tt.load %x_7 : tensor<16x16x!tt.ptr<T>>
    %0 = tt.splat %Y : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %1 = tt.addptr %0, %x_1 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %3 = tt.addptr %2, %x_6 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %4 = tt.dot %x_8, %x_8, %cst, inputPrecision = tf32 : tensor<16x16xT> * tensor<16x16xT> -> tensor<16x16xf32>
    tt.store %3, %4 : tensor<16x16x!tt.ptr<f32>>
    tt.return
  }
}

"""


@pytest.mark.parametrize(
    "mlir, fp8", [("f8E4M3FNUZ", ml_dtypes.float8_e4m3fnuz), ("f8E5M2FNUZ", ml_dtypes.float8_e5m2fnuz)]
)
def test_fnuz_fp8_dot_accumulates_exact_products_in_f32(mlir, fp8):
    program, _ = compile_text(DOT.replace("<T>", f"<{mlir}>").replace("xT>", f"x{mlir}>"), "k")
    codes = np.random.default_rng(0).integers(0, 256, (16, 16), dtype=np.uint8)
    codes[codes == 0x80] = 0  # no NaN
    (_, out), _ = run(program, 1, [codes.view(np.int8), np.zeros((16, 16), np.float32)])
    x = codes.view(fp8).astype(np.float64)
    bound = 16 * np.finfo(np.float32).eps * (np.abs(x) @ np.abs(x))  # f32 accumulation of exact products
    assert (np.abs(out - x @ x) <= bound).all()
