import json
from collections import Counter

import pytest

from triton_plate_backend.cli import main
from triton_plate_backend.errors import MachineError
from triton_plate_backend.machine import PRESETS, Machine, get_machine


def test_plate1_matches_plate_md():
    m = get_machine("plate1")
    assert (m.chips, m.domains, m.domain.cores, m.total_cores) == (1, 4, 8, 32)
    assert m.core.sram_bytes == 1 << 20
    # 65.5 TFLOP/s bf16 per chip, 256 GB/s HBM per chip, balance 256 FLOP/B
    assert m.peak_flops("bf16") == pytest.approx(65.5e12, rel=1e-3)
    assert m.hbm_bytes_per_cycle_chip() * m.clock_ghz == 256
    assert m.peak_flops("bf16") / (m.hbm_bytes_per_cycle_chip() * 1e9) == pytest.approx(256)
    # matrix rate r: 1 for bf16, 1/2 for int8, 8 for fp32
    assert [m.core.matrix.k_rate(d) for d in ("bf16", "i8", "f32")] == [1, 0.5, 8]


def test_ring_topology():
    m = get_machine("plate1")
    assert [m.domain_hops(0, d) for d in range(4)] == [0, 1, 1, 2]  # the diagonal is 2 hops
    for a in range(4):
        for b in range(4):
            path = m.domain_path(a, b)
            assert len(path) == m.domain_hops(a, b)
            if path:
                assert path[0][0] == a and path[-1][1] == b
                assert all(x[1] == y[0] for x, y in zip(path, path[1:]))


def test_diagonal_routes_go_along_x_then_y_so_every_die_link_carries_the_same_routes():
    """All-to-all traffic (interleaved memory, a GEMM's shared B) loads every directed die link with
    one neighbour's route and one diagonal's; turning the same way round the ring for every diagonal
    put three routes on half the links and one on the others."""
    m = get_machine("plate1")
    assert m.domain_path(0, 3) == [(0, 1), (1, 3)] and m.domain_path(1, 2) == [(1, 0), (0, 2)]
    load = Counter(link for a in range(4) for b in range(4) for link in m.domain_path(a, b))
    assert len(load) == 8 and set(load.values()) == {2}


def test_presets_and_errors():
    assert {"plate1", "plate-mini", "plate4"} <= set(PRESETS)
    assert get_machine("plate4").total_cores == 128
    assert get_machine("plate-mini").total_cores == 8
    with pytest.raises(MachineError, match="unknown machine preset 'x'.*plate1"):
        get_machine("x")
    with pytest.raises(MachineError, match="domains must be"):
        Machine(name="bad", domains=3)


def test_plate_info_cli(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "32 cores" in out and "65.5 TFLOP/s bf16" in out and "256 GB/s" in out
    assert main(["info", "--machine", "plate4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["chips"] == 4
    assert main(["info", "--machine", "nope"]) == 2
