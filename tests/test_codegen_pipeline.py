"""The lowering pipeline as a whole: completeness of the rule table against the op vocabulary, error
messages (missing rules, SRAM overflow, register pressure, pass wrapping), the program's
metadata, the pir dump, the asynchronous-DMA contract, and round trips through asm/binary."""

from __future__ import annotations

import dataclasses
import re
import types

import numpy as np
import pytest
import ttir_fixtures
from codegen_kernels.dma_check import dma_violations
from codegen_kernels.harness import MACHINE, compile_corpus, compile_text, corpus_text, run

from triton_plate_backend.errors import CompileError, PlateError, SramOverflow
from triton_plate_backend.ir.vocabulary import OPS
from triton_plate_backend.isa.asm import assemble, disassemble
from triton_plate_backend.isa.encoding import decode, encode
from triton_plate_backend.passes import access, codegen, demand, inline, pipeline, prefetch
from triton_plate_backend.sim.timing import simulate_timing
from triton_plate_backend.ttir.parser import parse

KERNELS = ttir_fixtures.KERNELS
LOWERABLE = ttir_fixtures.LOWERABLE


def test_every_op_of_the_ttir_surface_has_a_rule_or_a_reason():
    """Every op of the vocabulary (which covers the TTIR surface: test_ir_vocabulary) is lowered by
    a rule, rejected with a reason, or lowered by its parent op; the lowering tables agree with it."""
    rules = {name for name, op in OPS.items() if op.lowering == "rule"}
    assert rules == set(codegen.LOWERING), (
        f"vocabulary says 'rule' but codegen has none: {sorted(rules - set(codegen.LOWERING))}; "
        f"rules for ops the vocabulary does not declare so: {sorted(set(codegen.LOWERING) - rules)}"
    )
    missing = [name for name, op in OPS.items() if op.lowering != "rule" and len(op.why) <= 20]
    assert not missing, f"ops with no lowering rule and no documented reason: {missing}"
    for table, status in ((codegen.REJECTED, "rejected"), (codegen.HANDLED_BY_PARENT, "parent")):
        for name, why in table.items():
            assert (OPS[name].lowering, OPS[name].why) == (status, why), f"{name}: codegen and the vocabulary disagree"
    assert len(OPS) > 100


def test_pass_tables_are_the_vocabulary_s():
    """The op lists passes keep are views of the vocabulary, with the members they always had."""
    descriptors = {f"tt.descriptor_{k}" for k in ("store", "scatter", "reduce")}
    writes = {"tt.store", "tt.atomic_rmw", "tt.atomic_cas"} | descriptors
    assert prefetch.WRITES == writes
    assert set(access.MEMORY_OPS) == writes | {"tt.load", "tt.descriptor_load", "tt.descriptor_gather"}
    others = {"tt.print", "tt.assert", "ttg.barrier", "gpu.barrier", "tt.call", "tt.elementwise_inline_asm"}
    assert demand.EFFECTS == writes | others | {"tt.return", "cf.br", "cf.cond_br"}
    assert demand.OPAQUE_REGIONS == {"tt.reduce", "tt.scan", "tt.map_elementwise"}


def test_rules_follow_the_naming_convention():
    for name, rule in codegen.LOWERING.items():
        assert rule.__name__.startswith("_lower_"), f"{name}: {rule.__name__}"


def test_missing_rule_names_op_types_and_source_line():
    module = parse(corpus_text("vec_add"), "vec_add")
    add = next(op for op in module.walk() if op.name == "arith.addf")
    add.name = "arith.mystery"
    with pytest.raises(CompileError) as e:
        pipeline.run_pipeline(module, None, MACHINE)
    msg = str(e.value)
    assert "arith.mystery" in msg and "tensor<1024xf32>" in msg and "kernels.py:23" in msg
    assert msg.startswith("[codegen]") and msg.count("[codegen]") == 1


def test_a_bug_inside_a_pass_is_wrapped_once_with_the_pass_name(monkeypatch):
    def broken(module):
        raise KeyError("oops")

    monkeypatch.setattr(pipeline, "PASSES", [("inline", inline.run), ("broken-pass", broken)])
    with pytest.raises(CompileError, match=r"^\[broken-pass\] KeyError: 'oops'") as e:
        pipeline.run_pipeline(parse(corpus_text("vec_add"), "vec_add"), None, MACHINE)
    assert isinstance(e.value.__cause__, KeyError)


def test_the_verifier_runs_after_each_rewriting_pass_and_names_it(monkeypatch):
    from triton_plate_backend.ir.verify import IrVerifyError

    def drop_make_range(module):  # leaves the uses of tt.make_range's result undefined
        for op in module.walk():
            if op.name == "tt.make_range":
                op.parent.ops.remove(op)
                return module
        raise AssertionError("vec_add has a tt.make_range")

    monkeypatch.setattr(pipeline, "PASSES", [("inline", inline.run), ("drop-range", drop_make_range)])
    with pytest.raises(IrVerifyError, match=r"^\[drop-range\] the IR this pass produced is invalid") as e:
        pipeline.run_passes(parse(corpus_text("vec_add"), "vec_add"))
    assert e.value.plate_pass == "drop-range"


def test_sram_overflow_names_the_tensors_and_the_fix():
    small = dataclasses.replace(MACHINE, name="tiny-sram", core=dataclasses.replace(MACHINE.core, sram_bytes=6000))
    with pytest.raises(SramOverflow) as e:
        compile_text(corpus_text("vec_add"), "vec_add", small)
    msg = str(e.value)
    assert "vec_add" in msg and "6000" in msg and "f32[1024]" in msg and "kernels.py:23" in msg
    assert "BLOCK" in msg and "num_stages" in msg
    assert isinstance(e.value, PlateError)


def test_too_many_live_scalars_is_a_clear_error():
    few = dataclasses.replace(MACHINE, name="few-regs", core=dataclasses.replace(MACHINE.core, scalar_registers=3))
    with pytest.raises(CompileError, match="more than 3 scalar registers"):
        compile_text(corpus_text("matmul"), "matmul", few)


def test_program_metadata_and_locations():
    prog = compile_corpus("layernorm")
    assert prog.name == "layernorm"
    assert [a.type for a in prog.args] == ["ptr"] * 6 + ["i32", "i32", "f32"]
    assert [a.name for a in prog.args][:2] == ["X", "Y"]
    located = [ins for ins in prog.instrs if ins.loc]
    assert len(located) > 0.9 * len(prog.instrs)
    assert {prog.locs[ins.loc].file for ins in located} == {"kernels.py"}
    assert len(set(prog.locs)) == len(prog.locs), "locations are deduplicated"


def test_pir_dump_is_annotated_and_parses_back():
    pir, prog, report = pipeline.run_pipeline(parse(corpus_text("softmax"), "softmax"), None, MACHINE)
    assert "plate.access" in pir and "strided" in pir
    parse(pir, "softmax.pir")
    assert "tt.load" in report["access"] and report["instructions"] == len(prog.instrs)
    # where codegen put each op's results: the report (report.txt, the pasm's header), not the pir
    assert re.search(r"^arith\.divf kernels\.py:37:50: 0x[0-9a-f]+\+512$", report["sram"], re.M)
    assert "sram:" in pipeline.format_report(report)


def test_inline_pass_removes_calls_and_private_functions():
    module = inline.run(parse(corpus_text("reduce_misc"), "reduce_misc"))
    assert not [op for op in module.walk() if op.name == "tt.call"]
    assert [codegen.func_name(f) for f in module.functions()] == ["reduce_misc"]


def test_inline_leaves_a_kernel_that_calls_nothing_as_it_is():
    module = parse(corpus_text("casts"), "casts")
    ops = module.kernel().regions[0].blocks[0].ops
    assert inline.run(module) is module and module.kernel().regions[0].blocks[0].ops is ops
    assert not inline._nothing_to_inline(parse(corpus_text("reduce_misc"), "reduce_misc"), module.kernel())


@pytest.mark.parametrize("kernel, rewritten", [("casts", False), ("atomics", False), ("vec_add", True)])
def test_the_verifier_runs_again_only_after_a_pass_that_rewrote(kernel, rewritten, monkeypatch):
    """persistent leaves most kernels as they are: the module after it is the one inline's verifier passed, and the
    same text as without the pass; one it rewrites is verified (and numbered) again."""
    names = []
    verify_after = pipeline.verify_after
    monkeypatch.setattr(pipeline, "verify_after", lambda name, m: (names.append(name), verify_after(name, m)))
    sram = MACHINE.core.sram_bytes
    text = pipeline.print_module(pipeline.run_passes(parse(corpus_text(kernel), kernel), persistent_sram=sram))
    assert names == (["inline", "persistent"] if rewritten else ["inline"])
    plain = pipeline.print_module(pipeline.run_passes(parse(corpus_text(kernel), kernel)))
    assert (text != plain) == rewritten


@pytest.mark.parametrize("name", LOWERABLE)
def test_dma_waits_respect_the_asynchronous_contract(name):
    prog = compile_corpus(name)
    assert dma_violations(prog) == []


def test_dma_check_catches_a_missing_wait():
    prog = compile_corpus("vec_add")
    first_wait = next(i for i, ins in enumerate(prog.instrs) if ins.mnemonic == "dma.wait")
    broken = dataclasses.replace(prog, instrs=prog.instrs[:first_wait] + prog.instrs[first_wait + 1 :])
    assert dma_violations(broken)


def test_loads_overlap_each_other():
    prog = compile_corpus("vec_add")
    names = [ins.mnemonic for ins in prog.instrs]
    first_wait = names.index("dma.wait")
    assert names[:first_wait].count("dma.load") == 2, "both loads are issued before the first wait"


def test_loop_accumulator_updates_in_place():
    prog = compile_corpus("matmul")
    body = prog.instrs[prog.labels["for_body1"] : prog.labels["for_end2"]]
    assert not [ins for ins in body if ins.mnemonic == "v.copy"], "acc = tl.dot(a, b, acc) copies nothing"


@pytest.mark.parametrize("name", ["matmul", "attn_fwd", "where_cumsum", "atomics", "tensor_desc"])
def test_programs_round_trip_through_asm_and_binary(name):
    prog = compile_corpus(name)
    again = assemble(disassemble(prog))
    assert again.instrs == prog.instrs and again.tiles == prog.tiles and again.args == prog.args
    assert decode(encode(prog)).instrs == prog.instrs


def test_loop_loads_are_prefetched_and_that_pays():

    rng = np.random.default_rng(8)
    H, N, D = 1, 256, 64
    q, k, v = (rng.uniform(-1, 1, (H, N, D)).astype(np.float16) for _ in range(3))
    results = {}
    for stages in (1, 2):
        _, prog, _ = pipeline.run_pipeline(
            parse(corpus_text("attn_fwd"), "attn_fwd"), types.SimpleNamespace(num_stages=stages), MACHINE
        )
        assert dma_violations(prog) == []
        body = prog.instrs[prog.labels["for_body1"] : prog.labels["for_end2"]]
        loads = [ins for ins in body if ins.mnemonic == "dma.load"]
        assert len(loads) == 2  # k and v, each issued once per iteration
        issue_before_loop = [ins.mnemonic for ins in prog.instrs[: prog.labels["for_body1"]]].count("dma.load")
        assert issue_before_loop == (3 if stages == 2 else 1)  # q (+ the first k and v tiles)
        (_, _, _, out), trace = run(prog, (N // 64, H), [q, k, v, np.zeros_like(q), 0.125, N])
        results[stages] = (out, simulate_timing(trace, MACHINE).cycles)
    np.testing.assert_array_equal(results[1][0], results[2][0])
    assert results[2][1] < 0.9 * results[1][1], "prefetching hides DMA latency behind the loop's compute"


@pytest.mark.parametrize("stages", [3, 4])
def test_num_stages_keeps_that_many_minus_one_tiles_in_flight(stages):
    """num_stages S >= 3: S - 1 tiles of each pipelined load issued before the loop, S staging
    tiles, the body lowered S times (one copy per staging tile) computing on the staging tiles
    without copying them; every trip count, multiple of S or not, gives the bits of the
    unpipelined loop (attention: carried m_i, l_i, acc)."""
    progs = {}
    for s in (1, 2, stages):
        _, progs[s], _ = pipeline.run_pipeline(
            parse(corpus_text("attn_fwd"), "attn_fwd"), types.SimpleNamespace(num_stages=s), MACHINE
        )
        assert dma_violations(progs[s]) == []

    def loop_counts(p):
        body = p.instrs[p.labels["for_body1"] : p.labels["for_end2"]]
        before = [ins.mnemonic for ins in p.instrs[: p.labels["for_body1"]]]
        return before.count("dma.load"), [ins.mnemonic for ins in body]

    ahead, body = loop_counts(progs[stages])
    ahead2, body2 = loop_counts(progs[2])
    assert (ahead2, ahead) == (3, 1 + 2 * (stages - 1)), "q, then k and v: num_stages - 1 tiles each"
    assert body.count("m.mma") == stages * body2.count("m.mma") > 0, "one copy of the body per staging tile"
    assert body.count("dma.load") == 2 * stages, "each copy fetches its own next k and v tiles"
    assert body.count("bz") - body2.count("bz") == stages - 1, "copies but the last can leave the loop"
    assert body.count("v.copy") == stages * (body2.count("v.copy") - 2), "k and v are not copied out of staging"
    prog = progs[stages]
    prologue = [ins for ins in prog.instrs[: prog.labels["for_body1"]] if ins.mnemonic == "dma.load"]
    first_waits = [ins for ins in prog.instrs[prog.labels["for_body1"] :] if ins.mnemonic == "dma.wait"][:2]
    issued = [ins.operands[0] for ins in prologue[1:]]
    assert [ins.operands[0] for ins in first_waits] == issued[:2], "the first iteration's k and v are issued first"
    rng = np.random.default_rng(stages)
    H, D = 1, 64
    for N in (64, 192, 200, 320):  # 1, 3, 4 (the last masked), 5 iterations
        q, k, v = (rng.uniform(-1, 1, (H, N, D)).astype(np.float16) for _ in range(3))
        outs = []
        for s in (1, stages):
            (_, _, _, out), _ = run(progs[s], (-(-N // 64), H), [q, k, v, np.zeros_like(q), 0.125, N])
            outs.append(out)
        np.testing.assert_array_equal(outs[0], outs[1])


def test_deeper_pipelining_falls_back_when_its_staging_tiles_overflow_sram():
    """num_stages 3 needs one staging tile per load more than num_stages 2; a kernel whose
    num_stages 2 plan fits but whose num_stages 3 plan does not compiles to the num_stages 2
    program, and one that fits at neither still fails with SramOverflow."""
    plan = {}
    for s in (2, 3):
        _, prog, _ = pipeline.run_pipeline(
            parse(corpus_text("attn_fwd"), "attn_fwd"), types.SimpleNamespace(num_stages=s), MACHINE
        )
        plan[s] = prog
    assert plan[3].sram_bytes > plan[2].sram_bytes
    for sram, expect in ((plan[3].sram_bytes - 64, plan[2]), (plan[2].sram_bytes - 64, None)):
        small = dataclasses.replace(MACHINE, core=dataclasses.replace(MACHINE.core, sram_bytes=sram))
        module = parse(corpus_text("attn_fwd"), "attn_fwd")
        if expect is None:
            with pytest.raises(SramOverflow):
                pipeline.run_pipeline(module, types.SimpleNamespace(num_stages=3), small)
            continue
        _, prog, _ = pipeline.run_pipeline(module, types.SimpleNamespace(num_stages=3), small)
        assert prog.instrs == expect.instrs and prog.sram_bytes == expect.sram_bytes
