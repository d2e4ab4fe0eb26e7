"""tl.device_print's output lines as Triton's CUDA backend writes them: unsigned operands print unsigned
(tt.print's isSigned), and a print of several operands labels each value "(operand n)"."""

from __future__ import annotations

import numpy as np
from codegen_kernels.harness import compile_text, run

TTIR = """
module {
  tt.func public @k(%X: !tt.ptr<i32>) attributes {noinline = false} {
    %r = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
    %p = tt.splat %X : !tt.ptr<i32> -> tensor<4x!tt.ptr<i32>>
    %q = tt.addptr %p, %r : tensor<4x!tt.ptr<i32>>, tensor<4xi32>
    %x = tt.load %q : tensor<4x!tt.ptr<i32>>
    tt.print " x: " {hex = false, isSigned = array<i32: 0>} : %x : tensor<4xi32>
    tt.print " y: " {hex = false, isSigned = array<i32: 1>} : %x : tensor<4xi32>
    tt.print ": " {hex = false, isSigned = array<i32: 0, 1>} : %x, %r : tensor<4xi32>, tensor<4xi32>
    tt.return
  }
}
"""


def test_unsigned_and_several_operands_print_as_triton_does():
    program, _ = compile_text(TTIR, "k")
    lines = []
    x = (np.arange(4, dtype=np.int64) + 2**31).astype(np.uint32).view(np.int32)
    run(program, 1, [x], printer=lines.append)
    assert lines[:4] == [f"pid (0, 0, 0) idx ({i}) x: {2**31 + i}" for i in range(4)]
    assert lines[4] == f"pid (0, 0, 0) idx (0) y: {-(2**31)}"
    assert lines[8:10] == [f"pid (0, 0, 0) idx ({i}): (operand 0) {2**31 + i}" for i in range(2)]
    assert lines[12:14] == ["pid (0, 0, 0) idx (0): (operand 1) 0", "pid (0, 0, 0) idx (1): (operand 1) 1"]
