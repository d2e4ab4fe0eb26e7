"""The hand-written .pasm programs assemble, run on the simulator and equal numpy; the CLI runs them."""

from pathlib import Path

import pytest

from triton_plate_backend.cli import main
from triton_plate_backend.isa import asm, encoding
from triton_plate_backend.machine import get_machine
from triton_plate_backend.runasm import ArgSpecError, check_expect, run_asm

ASM = Path(__file__).resolve().parents[2] / "examples" / "asm"
MINI = get_machine("plate-mini")

CASES = {
    "vec_add": (
        (5, 1, 1),
        {"x": "rand:f32:4500", "y": "rand:f32:4500", "o": "zeros:f32:4500", "n": "4500"},
        "o = x + y",
    ),
    "softmax": (
        (48, 1, 1),
        {"out": "zeros:f32:6144", "inp": "randn:f32:6144", "in_stride": "128", "out_stride": "128", "n_cols": "100"},
        "out = np.where(np.arange(128) < 100, softmax(np.where(np.arange(128) < 100, "
        "inp.reshape(48, 128), -np.inf)), 0).ravel()",
    ),
    "matmul": (
        (3, 2, 1),
        {
            "a": "randn:f16:6400",
            "b": "randn:f16:7000",
            "c": "zeros:f32:4480",
            "M": "64",
            "N": "70",
            "K": "100",
        },  # ragged: masks on every edge, odd k steps
        "c = (a.astype('f4').reshape(64, 100) @ b.astype('f4').reshape(100, 70)).ravel()",
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_program_matches_numpy(name):
    program = asm.assemble((ASM / f"{name}.pasm").read_text(), MINI)
    assert encoding.decode(encoding.encode(program), MINI) == program
    grid, args, expect = CASES[name]
    run = run_asm(program, grid, args, MINI)
    ok, msg = check_expect(run, expect)
    assert ok, msg
    p = run.profile
    assert p.cycles > 0 and p.cycles >= p.bound.cycles


def test_check_expect_can_fail():
    program = asm.assemble((ASM / "vec_add.pasm").read_text(), MINI)
    run = run_asm(
        program, (1, 1, 1), {"x": "ones:f32:2048", "y": "ones:f32:2048", "o": "zeros:f32:2048", "n": "2048"}, MINI
    )
    ok, msg = check_expect(run, "o = x + y")  # only the first block ran: the second half stays 0
    assert not ok and "DIFFERS" in msg
    with pytest.raises(ArgSpecError, match="KIND:DTYPE:COUNT"):
        run_asm(program, (1, 1, 1), {"x": "bogus", "y": "ones:f32:4", "o": "zeros:f32:4", "n": "4"}, MINI)


def test_cli_run_asm(tmp_path, capsys):
    trace = tmp_path / "t.json"
    rc = main(
        [
            "run-asm",
            str(ASM / "vec_add.pasm"),
            "--machine",
            "plate-mini",
            "--grid",
            "4",
            "--arg",
            "x=rand:f32:4096",
            "--arg",
            "y=rand:f32:4096",
            "--arg",
            "o=zeros:f32:4096",
            "--arg",
            "n=4096",
            "--expect",
            "o = x + y",
            "--trace",
            str(trace),
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "o: matches the reference" in out and "level-0 bound" in out and trace.stat().st_size > 0


def test_cli_asm_disasm_round_trip(tmp_path, capsys):
    out = tmp_path / "m.pbin"
    assert main(["asm", str(ASM / "matmul.pasm"), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["disasm", str(out)]) == 0
    text = capsys.readouterr().out
    assert text == asm.disassemble(asm.assemble((ASM / "matmul.pasm").read_text()))
    out.write_bytes(out.read_bytes()[:40])
    assert main(["disasm", str(out)]) == 2  # truncated binary: a clear error, not a traceback


def test_out_of_bounds_names_instruction_address_allocation_and_source():
    from triton_plate_backend.errors import MemoryFault

    text = (ASM / "vec_add.pasm").read_text().replace(".tile X", '.loc 1 "vec_add.py" 23 31 "x"\n.tile X')
    text = text.replace("dma.load q0, X, r7, [r10], [r11], [r4], 0.0", "dma.load q0, X, r7, [r10], [r11], [r4], 0.0 @1")
    program = asm.assemble(text, MINI)
    # n says 3000 elements but x holds 2000: the second block reads past the end of x
    with pytest.raises(MemoryFault) as e:
        run_asm(
            program, (3, 1, 1), {"x": "rand:f32:2000", "y": "rand:f32:3000", "o": "zeros:f32:3000", "n": "3000"}, MINI
        )
    msg = str(e.value)
    assert "outside every live allocation" in msg and "'x'" in msg and "dma.load" in msg
    assert "vec_add.py:23:31 (x)" in msg and "(1, 0, 0)" in msg


def test_run_asm_takes_its_policy_from_plate_policy_like_a_launch(monkeypatch):
    grid, specs, _ = CASES["vec_add"]
    program = asm.assemble((ASM / "vec_add.pasm").read_text())
    monkeypatch.setenv("PLATE_POLICY", "blocked")
    assert run_asm(program, grid, specs, MINI).profile.policy == "blocked"
    monkeypatch.setenv("PLATE_POLICY", "round_robin")
    assert run_asm(program, grid, specs, MINI).profile.policy == "round_robin"
