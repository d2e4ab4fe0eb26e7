"""Every `plate` subcommand turns bad input (a missing, empty or garbage file, a bad argument) into one
line on stderr, ``plate <cmd>: error: <what>``, and exit status 2: never a traceback, never exit 0."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from triton_plate_backend.cli import COMMANDS, main

GARBAGE = bytes(range(0xC0, 0x100)) * 4  # not UTF-8, no PLATEBIN magic


@pytest.fixture
def files(tmp_path):
    (tmp_path / "empty.pasm").write_bytes(b"")
    (tmp_path / "blank.pasm").write_text("\n  \n")
    (tmp_path / "garbage.bin").write_bytes(GARBAGE)
    (tmp_path / "cut.pbin").write_bytes(b"PLATEBIN\x01\x00")
    (tmp_path / "ok.pasm").write_text(".kernel k\n.arg x ptr\n    halt\n")
    (tmp_path / "empty.py").write_text("")
    return tmp_path


def run_cli(argv, capsys) -> tuple[int, str, str]:
    try:
        status = main(argv)
    except SystemExit as e:  # argparse reports a bad command line by exiting
        status = e.code
    out, err = capsys.readouterr()
    return status, out, err


def assert_one_line_error(argv, capsys, command, *fragments):
    status, _, err = run_cli(argv, capsys)
    lines = err.splitlines()
    assert status == 2, (argv, status, err)
    assert len(lines) == 1 and lines[0].startswith(f"plate {command}: error: "), (argv, err)
    for fragment in fragments:
        assert fragment in lines[0], (argv, lines[0], fragment)


FILE_COMMANDS = ("asm", "disasm", "run-asm")


@pytest.mark.parametrize("command", FILE_COMMANDS)
def test_a_missing_file(files, capsys, command):
    path = str(files / "nope.pasm")
    assert_one_line_error([command, path], capsys, command, "cannot read", path, "No such file or directory")


@pytest.mark.parametrize("command", FILE_COMMANDS)
@pytest.mark.parametrize("name", ["empty.pasm", "blank.pasm"])
def test_an_empty_file(files, capsys, command, name):
    assert_one_line_error([command, str(files / name)], capsys, command, name, "is empty")


@pytest.mark.parametrize("command", FILE_COMMANDS)
def test_garbage_bytes(files, capsys, command):
    path = str(files / "garbage.bin")
    assert_one_line_error([command, path], capsys, command, path, "neither a PLATE binary", "nor UTF-8", "0xc0")


@pytest.mark.parametrize("command", FILE_COMMANDS)
def test_a_truncated_binary_names_the_file(files, capsys, command):
    assert_one_line_error([command, str(files / "cut.pbin")], capsys, command, "cut.pbin: at byte")


@pytest.mark.parametrize("command", FILE_COMMANDS)
def test_a_directory(files, capsys, command):
    assert_one_line_error([command, str(files)], capsys, command, "cannot read", "Is a directory")


@pytest.mark.parametrize(
    ("argv", "command", "fragment"),
    [
        (["asm"], "asm", "the following arguments are required: file"),
        (["disasm", "a.pbin", "b.pbin"], "disasm", "unrecognized arguments: b.pbin"),
        (["asm", "ok.pasm", "-o", "no/such/dir/out.pbin"], "asm", "cannot write"),
        (["run-asm", "ok.pasm", "--grid", "a,b"], "run-asm", "--grid 'a,b': expected X[,Y[,Z]]"),
        (["run-asm", "ok.pasm", "--grid", "1,2,3,4"], "run-asm", "one to three non-negative integers"),
        (["run-asm", "ok.pasm", "--grid", "-1"], "run-asm", "--grid '-1'"),
        (["run-asm", "ok.pasm", "--arg", "x"], "run-asm", "expected NAME=VALUE"),
        (["run-asm", "ok.pasm", "--arg", "x=soup:f32:4"], "run-asm", "expected KIND:DTYPE:COUNT"),
        (["run-asm", "ok.pasm", "--arg", "x=zeros:f32:4", "--seed", "x"], "run-asm", "invalid int value: 'x'"),
        (["run-asm", "ok.pasm", "--arg", "x=zeros:f32:4", "--policy", "zigzag"], "run-asm", "'zigzag'"),
        (["info", "--machine", "plate99"], "info", "unknown machine preset 'plate99'"),
        (["info", "--colour"], "info", "unrecognized arguments: --colour"),
        (["isa", "extra"], "isa", "unrecognized arguments: extra"),
        (["run"], "run", "the following arguments are required: script"),
        (["upstream", "gluon"], "upstream", "no suite or library 'gluon'"),
        (["patches", "apply"], "patches", "invalid choice: 'apply'"),
        (["bench", "--kernel", "nope"], "bench", "unknown kernel(s) nope"),
        (["bench", "--quick", "--full"], "bench", "not allowed with argument"),
        (["fuzz", "--cases", "0"], "fuzz", "--cases 0: expected an integer >= 1"),
        (["fuzz", "--cases", "x"], "fuzz", "invalid int value: 'x'"),
        (["fuzz", "--jobs", "0"], "fuzz", "--jobs 0: expected an integer >= 1"),
        (["fuzz", "--start", "-3"], "fuzz", "--start -3: expected an integer >= 0"),
        (["fuzz", "--out", "ok.pasm"], "fuzz", "--out ok.pasm: not a directory"),
    ],
)
def test_bad_arguments(files, capsys, monkeypatch, argv, command, fragment):
    monkeypatch.chdir(files)
    assert_one_line_error(argv, capsys, command, fragment)


def test_a_bad_command(capsys):
    status, _, err = run_cli(["frobnicate"], capsys)
    assert status == 2 and err.splitlines() == [err.strip()] and err.startswith("plate: error: argument command")


@pytest.mark.parametrize(
    ("name", "fragment"),
    [("nope.py", "no such script"), ("empty.py", "defines no main()"), ("garbage.bin", "is not a Python script")],
)
def test_run_with_a_bad_script(files, capsys, name, fragment):
    assert_one_line_error(["run", str(files / name)], capsys, "run", fragment)


def test_every_subcommand_is_covered():
    covered = {"asm", "disasm", "run-asm", "info", "isa", "run", "upstream", "patches", "bench", "fuzz"}
    assert set(COMMANDS) == covered  # a new subcommand needs its bad-input cases here


def test_the_installed_command_prints_no_traceback(files):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))}
    for argv in (["disasm", str(files / "garbage.bin")], ["asm", str(files / "nope.pasm")]):
        r = subprocess.run(
            [sys.executable, "-m", "triton_plate_backend.cli", *argv], capture_output=True, text=True, env=env
        )
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
