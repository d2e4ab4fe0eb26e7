# ruff: noqa: E501  (the TTIR text of MATMUL_2D keeps Triton's long lines)
"""The affinity pass (passes/affinity.py) on parsed kernels, and its footprint text (isa/footprint.py):
each program's byte range per pointer argument, evaluated over a grid and compared with the
addresses the kernel's loads and stores reach."""

from __future__ import annotations

import numpy as np
import pytest
from ttir_fixtures import fixture_text

from triton_plate_backend.isa.footprint import (
    Footprint,
    FootprintError,
    evaluate,
    format_footprints,
    parse_footprints,
    program_names,
)
from triton_plate_backend.passes.affinity import func_affinity
from triton_plate_backend.passes.pipeline import run_passes
from triton_plate_backend.ttir.parser import parse

# a 2-D grid matmul (program_id 0: row block of A, 1: column block of B), K loop over carried pointers
MATMUL_2D = """\
module {
  tt.func public @mm(%a: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %b: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %c: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %M: i32 {tt.divisibility = 16 : i32}, %N: i32 {tt.divisibility = 16 : i32}, %K: i32 {tt.divisibility = 16 : i32}, %sam: i32 {tt.divisibility = 16 : i32}, %sbk: i32 {tt.divisibility = 16 : i32}, %scm: i32 {tt.divisibility = 16 : i32}) attributes {noinline = false} {
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant dense<32> : tensor<32x32xi32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<32x32xf32>
    %c32_i32 = arith.constant 32 : i32
    %pid_m = tt.get_program_id x : i32
    %pid_n = tt.get_program_id y : i32
    %rm = arith.muli %pid_m, %c32_i32 : i32
    %rm_1 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %rm_2 = tt.splat %rm : i32 -> tensor<32xi32>
    %rm_3 = arith.addi %rm_2, %rm_1 : tensor<32xi32>
    %rn = arith.muli %pid_n, %c32_i32 : i32
    %rn_4 = tt.splat %rn : i32 -> tensor<32xi32>
    %rn_5 = arith.addi %rn_4, %rm_1 : tensor<32xi32>
    %ap = tt.expand_dims %rm_3 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %ap_6 = tt.splat %sam : i32 -> tensor<32x1xi32>
    %ap_7 = arith.muli %ap, %ap_6 : tensor<32x1xi32>
    %ap_8 = tt.splat %a : !tt.ptr<f32> -> tensor<32x1x!tt.ptr<f32>>
    %ap_9 = tt.addptr %ap_8, %ap_7 : tensor<32x1x!tt.ptr<f32>>, tensor<32x1xi32>
    %ap_10 = tt.expand_dims %rm_1 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %ap_11 = tt.broadcast %ap_9 : tensor<32x1x!tt.ptr<f32>> -> tensor<32x32x!tt.ptr<f32>>
    %ap_12 = tt.broadcast %ap_10 : tensor<1x32xi32> -> tensor<32x32xi32>
    %ap_13 = tt.addptr %ap_11, %ap_12 : tensor<32x32x!tt.ptr<f32>>, tensor<32x32xi32>
    %bp = tt.expand_dims %rm_1 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %bp_14 = tt.splat %sbk : i32 -> tensor<32x1xi32>
    %bp_15 = arith.muli %bp, %bp_14 : tensor<32x1xi32>
    %bp_16 = tt.splat %b : !tt.ptr<f32> -> tensor<32x1x!tt.ptr<f32>>
    %bp_17 = tt.addptr %bp_16, %bp_15 : tensor<32x1x!tt.ptr<f32>>, tensor<32x1xi32>
    %bp_18 = tt.expand_dims %rn_5 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %bp_19 = tt.broadcast %bp_17 : tensor<32x1x!tt.ptr<f32>> -> tensor<32x32x!tt.ptr<f32>>
    %bp_20 = tt.broadcast %bp_18 : tensor<1x32xi32> -> tensor<32x32xi32>
    %bp_21 = tt.addptr %bp_19, %bp_20 : tensor<32x32x!tt.ptr<f32>>, tensor<32x32xi32>
    %acc:3 = scf.for %k = %c0_i32 to %K step %c32_i32 iter_args(%ap_22 = %ap_13, %bp_23 = %bp_21, %acc_24 = %cst_0) -> (tensor<32x32x!tt.ptr<f32>>, tensor<32x32x!tt.ptr<f32>>, tensor<32x32xf32>)  : i32 {
      %acc_25 = tt.load %ap_22 : tensor<32x32x!tt.ptr<f32>>
      %acc_26 = tt.load %bp_23 : tensor<32x32x!tt.ptr<f32>>
      %acc_27 = tt.dot %acc_25, %acc_26, %acc_24, inputPrecision = tf32 : tensor<32x32xf32> * tensor<32x32xf32> -> tensor<32x32xf32>
      %ap_28 = tt.addptr %ap_22, %cst : tensor<32x32x!tt.ptr<f32>>, tensor<32x32xi32>
      %bp_29 = arith.muli %sbk, %c32_i32 : i32
      %bp_30 = tt.splat %bp_29 : i32 -> tensor<32x32xi32>
      %bp_31 = tt.addptr %bp_23, %bp_30 : tensor<32x32x!tt.ptr<f32>>, tensor<32x32xi32>
      scf.yield %ap_28, %bp_31, %acc_27 : tensor<32x32x!tt.ptr<f32>>, tensor<32x32x!tt.ptr<f32>>, tensor<32x32xf32>
    }
    %0 = tt.splat %scm : i32 -> tensor<32x1xi32>
    %1 = arith.muli %ap, %0 : tensor<32x1xi32>
    %2 = tt.splat %c : !tt.ptr<f32> -> tensor<32x1x!tt.ptr<f32>>
    %3 = tt.addptr %2, %1 : tensor<32x1x!tt.ptr<f32>>, tensor<32x1xi32>
    %4 = tt.broadcast %3 : tensor<32x1x!tt.ptr<f32>> -> tensor<32x32x!tt.ptr<f32>>
    %5 = tt.addptr %4, %bp_20 : tensor<32x32x!tt.ptr<f32>>, tensor<32x32xi32>
    tt.store %5, %acc#2 : tensor<32x32x!tt.ptr<f32>>
    tt.return
  }
}
"""


def footprints(ttir: str) -> list[Footprint] | None:
    return parse_footprints(func_affinity(run_passes(parse(ttir))))


def ranges(fp: Footprint, grid, ints=None):
    names = program_names(grid, ints or {})
    n = int(np.prod(grid))
    return tuple(np.broadcast_to(evaluate(e, names, None, fp.defs), (n,)) for e in (fp.lo, fp.hi, fp.nbytes))


def test_vector_add_touches_block_pid_of_each_tensor():
    fps = footprints(fixture_text("vec_add"))
    assert [f.arg for f in fps] == [0, 1, 2]  # x, y loaded; o stored
    for fp in fps:
        lo, hi, nbytes = ranges(fp, (8, 1, 1), {3: 8000})
        assert lo.tolist() == [p * 4096 for p in range(8)]
        assert (hi - lo).tolist() == [4096] * 8 and nbytes.tolist() == [4096] * 8


def test_softmax_touches_one_row_per_program():
    fps = footprints(fixture_text("softmax"))
    by_arg = {f.arg: f for f in fps}
    assert set(by_arg) == {0, 1}  # out, inp
    in_stride, out_stride = 200, 300
    lo, hi, _ = ranges(by_arg[1], (5, 1, 1), {2: in_stride, 3: out_stride, 4: 100})
    assert lo.tolist() == [r * in_stride * 4 for r in range(5)] and (hi - lo).tolist() == [128 * 4] * 5
    lo, _, _ = ranges(by_arg[0], (5, 1, 1), {2: in_stride, 3: out_stride, 4: 100})
    assert lo.tolist() == [r * out_stride * 4 for r in range(5)]


def test_matmul_reads_a_row_block_and_a_column_block_over_k():
    fps = footprints(MATMUL_2D)
    by_arg = {}
    for f in fps:
        by_arg.setdefault(f.arg, []).append(f)
    assert sorted(by_arg) == [0, 1, 2]
    M = N = K = 128
    ints = {3: M, 4: N, 5: K, 6: K, 7: N, 8: N}  # sam = K, sbk = N, scm = N (row-major, fp32)
    grid = (4, 4, 1)
    pid_x, pid_y = program_names(grid, {})["pid_x"], program_names(grid, {})["pid_y"]
    (a,) = by_arg[0]
    lo, hi, nbytes = ranges(a, grid, ints)
    # A: rows [32 pid_x, 32 pid_x + 32) over all of K, 4 trips of a 32x32 fp32 tile
    assert (lo == pid_x * 32 * K * 4).all() and (hi == (pid_x * 32 + 32) * K * 4).all()
    assert (nbytes == 4 * 32 * 32 * 4).all()
    (b,) = by_arg[1]
    lo, hi, _ = ranges(b, grid, ints)
    # B: columns [32 pid_y, 32 pid_y + 32) of every row: from row 0 to row K-1
    assert (lo == pid_y * 32 * 4).all() and (hi == ((K - 1) * N + pid_y * 32 + 32) * 4).all()
    (c,) = by_arg[2]
    lo, hi, _ = ranges(c, grid, ints)
    assert (lo == (pid_x * 32 * N + pid_y * 32) * 4).all()


@pytest.mark.parametrize("kernel", ["atomics", "while_if"])
def test_while_loops_fall_back(kernel):
    text = func_affinity(run_passes(parse(fixture_text(kernel))))
    assert text.startswith("none (") and "scf.while" in text and parse_footprints(text) is None


def test_a_pointer_made_from_an_integer_is_work_somewhere():
    fps = footprints(fixture_text("casts"))
    assert [str(f) for f in fps if f.lo is None] == ["any[:]*512"] and any(f.lo is not None for f in fps)


def test_grouped_matmul_locates_c_through_the_swizzle_and_counts_wrapped_a_b_as_work():
    fps = footprints(fixture_text("matmul"))
    a, b, c = fps
    assert (a.arg, a.lo, b.arg, b.lo, c.arg) == (0, None, 1, None, 2)  # A, B: offsets wrap (% M): gathers
    M, N, K, scm, GROUP_M, BM = 512, 256, 128, 256, 8, 64
    ints = {3: M, 4: N, 5: K, 6: K, 7: N, 8: scm}
    num_m, num_n = M // BM, N // BM
    grid = (num_m * num_n, 1, 1)
    lo, hi, nbytes = ranges(c, grid, ints)
    for pid in range(grid[0]):  # the tutorial's grouped ordering, in Python
        group, in_group = pid // (GROUP_M * num_n), pid % (GROUP_M * num_n)
        size = min(num_m - group * GROUP_M, GROUP_M)
        pid_m, pid_n = group * GROUP_M + in_group % size, in_group // size
        assert lo[pid] == (pid_m * BM * scm + pid_n * BM) * 2 and hi[pid] == lo[pid] + ((BM - 1) * scm + BM) * 2
    assert (nbytes == BM * BM * 2).all()
    a_bytes = evaluate(a.nbytes, program_names(grid, ints), None, a.defs)
    assert (a_bytes == (K // 32) * 64 * 32 * 2).all()  # a 64x32 f16 tile per trip of the K loop


def test_footprint_text_round_trips_and_rejects_other_python():
    fps = footprints(fixture_text("layernorm"))
    assert fps and parse_footprints(format_footprints(fps)) == fps
    for bad in ("arg0[0:4]", "x[0:4]*4", "arg0[0:__import__('os')]*4", "arg0[0:4:1]*4", "arg0[pid_x.real:4]*4"):
        with pytest.raises(FootprintError):
            parse_footprints(bad)
    assert parse_footprints("") is None and parse_footprints("none (a gather)") is None


def test_footprint_evaluates_like_python_integers():
    names = program_names((6, 1, 1), {2: 7})
    got = evaluate("min(pid_x*3, arg2) + max(0, pid_x - 4) // 2 - (pid_x % 4) + nprog_x", names)
    want = [min(p * 3, 7) + max(0, p - 4) // 2 - (p % 4) + 6 for p in range(6)]
    assert got.tolist() == want


def test_footprint_survives_the_pasm_and_pbin_stages():
    from triton_plate_backend.isa.asm import assemble, disassemble
    from triton_plate_backend.isa.encoding import decode, encode
    from triton_plate_backend.passes.pipeline import generate

    program, _ = generate(run_passes(parse(fixture_text("vec_add"))), machine="plate1")
    assert program.affinity.startswith("arg0[pid_x*1024*4:")
    text = disassemble(program)
    assert f'.affinity "{program.affinity}"' in text.splitlines()
    again = assemble(text)
    assert again.affinity == program.affinity and decode(encode(again)).affinity == program.affinity
    assert assemble(text.replace(".affinity", "; .affinity")).affinity == ""  # none: the launch's default
    with pytest.raises(Exception, match="expected argK"):
        assemble(text.replace(program.affinity, "arg0[0:4]"))


def test_the_memoised_substitution_gives_the_fold_of_its_own_texts():
    """_substitute's cache (shared by compiles): a hit returns what a cold fold returns; other values or
    another text miss and fold anew. The fast refusal in _int agrees with int()."""
    from triton_plate_backend.passes import affinity

    text = "max(0, 16*pid + i0*(arg3 - 1)) + i1 - 2"
    end = {"i0": "max(0, arg4 - 1)", "i1": "7"}
    affinity._substituted.cache_clear()
    cold = affinity._substitute(text, end)
    assert affinity._substitute(text, dict(end)) == cold
    assert affinity._substituted.cache_info().hits == 1
    affinity._substituted.cache_clear()
    assert affinity._substitute(text, end) == cold
    assert affinity._substitute(text, {"i0": "0", "i1": "0"}) == "max(0, 16*pid) - 2"
    assert affinity._substitute("i1 + 1", end) == "8"
    for s in (
        "12",
        "-3",
        " 4",
        "+5",
        "1_0",
        "pid",
        "arg0",
        "-1*x",
        "(a)",
        "",
        "²",
        "4 ",
        "2*x",
        "0 // y",
        "12345678*x",
        "- 1",
        "1 2",
    ):
        try:
            want = int(s)
        except ValueError:
            want = None
        assert affinity._int(s) == want, s


def test_the_trees_the_folds_build_are_the_parse_of_their_texts(monkeypatch):
    """Each fold keeps its text's tree beside the text instead of parsing it again: on random folds (sums
    and products chained onto sums and products, negative constants, min/max, // and %) every kept tree
    is what ast.parse gives, so parenthesising and substituting read the same trees as before."""
    import ast
    import random

    from triton_plate_backend.passes import affinity

    kept = []
    keep = affinity._keep
    monkeypatch.setattr(affinity, "_keep", lambda text, node: kept.append((text, node)) or keep(text, node))
    affinity._TREES.clear()
    affinity._MEMO.clear()  # (else a fold another test made is a lookup: no tree kept to compare)
    rng = random.Random(14)
    pool = ["pid_x", "arg3", "trip0", "0", "1", "7", "-2", "32"]
    folds = (
        affinity._add,
        affinity._sub,
        affinity._mul,
        affinity._floordiv,
        affinity._mod,
        lambda a, b: affinity._call("min", a, b),
        lambda a, b: affinity._call("max", a, b),
    )
    for _ in range(600):
        fold = rng.choice(folds)
        b = rng.choice(pool)
        if fold in (affinity._floordiv, affinity._mod) and affinity._int(b) in (0, None):
            b = "arg3"  # a divisor: what the pass folds (constants and sizes)
        pool.append(fold(rng.choice(pool), b))
        if len(pool[-1]) > 200:
            pool.pop()
    texts = pool[8:]
    for t in rng.sample(texts, 20):  # substitution re-folds a text through its tree
        affinity._substitute(t, {"trip0": "max(0, arg4 - 1)", "pid_x": "3"})
    assert len(kept) > 400
    for text, node in kept:
        assert ast.dump(node) == ast.dump(ast.parse(text, mode="eval").body), text
    # the registry is bounded: emptied when full, the folds parse what they no longer find, same texts
    affinity._substituted.cache_clear()
    monkeypatch.setattr(affinity, "_TREES_MAX", 50)
    small = [affinity._substitute(t, {"trip0": "arg4", "pid_x": "pid_x + 1"}) for t in texts[::10]]
    affinity._TREES.clear()
    affinity._substituted.cache_clear()
    monkeypatch.setattr(affinity, "_TREES_MAX", 4096)
    assert small == [affinity._substitute(t, {"trip0": "arg4", "pid_x": "pid_x + 1"}) for t in texts[::10]]
    assert len(affinity._TREES) > 50


def test_a_fold_asked_again_with_the_same_texts_is_a_lookup_of_the_same_text(monkeypatch):
    """A kernel's host expressions repeat across its compiles (and the persistent loop's share of the grid
    across kernels): each fold is memoised by its operand texts, and gives what the fold itself gives."""
    from triton_plate_backend.passes import affinity

    affinity._MEMO.clear()
    kept = []
    keep = affinity._keep
    monkeypatch.setattr(affinity, "_keep", lambda text, node: kept.append(text) or keep(text, node))
    args = [("pid_x * 4", "arg3 + 2"), ("arg3 - 1", "7"), ("min(1, max(0, pid_x // arg7))", "arg4")]
    first = [affinity._add(*a) for a in args] + [affinity._mul(*a) for a in args]
    built = len(kept)
    assert built > 0
    assert [affinity._add(*a) for a in args] + [affinity._mul(*a) for a in args] == first
    assert len(kept) == built  # nothing folded again
    affinity._MEMO.clear()
    assert [affinity._add.__wrapped__(*a) for a in args] + [affinity._mul.__wrapped__(*a) for a in args] == first
    assert affinity._call("min", "arg3", "4") == "min(arg3, 4)" and affinity._call("min", "3", "4") == "3"


def test_the_persistent_prologue_is_one_lookup_of_the_texts_its_folds_give(monkeypatch):
    """`_share`: the prologue's (base, count) texts kept in _MEMO as one entry by the operands' texts: asked again it
    folds nothing, and gives what program_range.share over the folds gives (one group, two, three)."""
    from triton_plate_backend.passes import affinity, program_range

    for splits in ((), ("arg5",), ("arg5", "arg6 * 2")):
        affinity._MEMO.clear()
        want = program_range.share("pid_x", splits, "arg3", "arg4", affinity._fold, str)
        affinity._MEMO.clear()
        kept = []
        keep = affinity._keep
        monkeypatch.setattr(
            affinity, "_keep", lambda text, node, kept=kept, keep=keep: kept.append(text) or keep(text, node)
        )
        assert affinity._share(splits, "arg3", "arg4") == want
        built = len(kept)
        assert built > 0
        assert affinity._share(splits, "arg3", "arg4") == want
        assert len(kept) == built  # nothing folded again
        monkeypatch.undo()
    assert affinity._share((), "arg3", "7") != affinity._share((), "arg3", "arg4")
