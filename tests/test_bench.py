"""`plate bench --quick`: the outputs' shape and content (not the numbers)."""

from __future__ import annotations

import json

import pytest

from triton_plate_backend.bench.kernels import GEMM_TILES
from triton_plate_backend.bench.run import MODES, tile_ceiling
from triton_plate_backend.cli import main
from triton_plate_backend.machine import get_machine


def test_plate_bench_quick_writes_json_markdown_and_roofline(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="the roofline PNG needs matplotlib (dev extra)")
    rc = main(["bench", "--quick", "--kernel", "vector_add", "--kernel", "gemm_bf16", "--out", str(tmp_path)])
    assert rc == 0
    result = json.loads((tmp_path / "results.json").read_text())
    rows = result["rows"]
    assert [(r["kernel"], r["mode"]) for r in rows] == [(k, m) for k in ("vector_add", "gemm_bf16") for m in MODES]
    for r in rows:
        assert r["time_us"] > 0 and 0 < r["pct_of_level0"] <= 100.0 + 1e-9
        assert 0 <= r["remote_pct"] <= 100 and 0 <= r["overlap_pct"] <= 100
        assert r["estimate_us"] > 0 and r["sim_wall_s"] > 0
    assert rows[2]["peak_kind"] == "FLOP/s" and rows[0]["peak_kind"] == "HBM"
    assert all(tuple(r["tile"]) in GEMM_TILES["bf16"] for r in rows[2:]) and rows[0]["tile"] is None
    assert {"tile": "512x256", "dtype": "bf16"}.items() <= result["gemm_ceilings"][-1].items()
    md = (tmp_path / "results.md").read_text()
    assert md.count("| vector_add |") == 2 and "median |error|" in md
    assert "## GEMM tiles: the ceiling from local HBM" in md and "| 512x256 | bf16 | 171 | 60% |" in md
    assert (tmp_path / "roofline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "cost-model median" in capsys.readouterr().out


def test_plate_bench_names_an_unknown_kernel(tmp_path, capsys):
    assert main(["bench", "--quick", "--kernel", "nope", "--out", str(tmp_path)]) == 2
    assert "unknown kernel(s) nope" in capsys.readouterr().err


@pytest.mark.parametrize(
    "tile, dtype, intensity, ceiling",
    [((128, 128), "bf16", 64, 22.5), ((512, 256), "bf16", 512 / 3, 60.0), ((128, 128), "fp32", 32, 90.0)],
)
def test_tile_ceiling_is_intensity_times_a_cores_hbm_share(tile, dtype, intensity, ceiling):
    c = tile_ceiling(get_machine("plate1"), *tile, dtype)
    assert c["bytes_per_cycle_per_core"] == pytest.approx(7.2)
    assert c["intensity"] == pytest.approx(intensity) and c["ceiling_pct"] == pytest.approx(ceiling)


def test_gemm_tile_takes_the_fastest_estimate_and_skips_a_tile_that_overflows_sram():
    import torch

    from triton_plate_backend.bench.kernels import gemm_tile

    n = 512
    a, b = (torch.randn(n, n, dtype=torch.bfloat16).to("plate") for _ in range(2))
    c = torch.empty(n, n, dtype=torch.bfloat16, device="plate")
    assert gemm_tile(n, a, b, c, ((32, 32, 32), (512, 512, 64), (128, 128, 64))) == (128, 128, 64)


def test_the_gemm_tile_the_estimate_picks_has_the_shortest_drain():
    """At 2048^3 each core computes one 256x512 output tile and the K loop is HBM-bound: a DMA's issue
    runs under the previous transfer, so what BK changes is the drain, the last K step's m.mma that
    runs after the last load while HBM idles (16.5k cycles at BK 128, 8.3k at 64, 4.2k at 32), and
    the estimate picks BK 32."""
    import torch

    import triton_plate_backend.torch_device  # noqa: F401
    from triton_plate_backend.bench.kernels import gemm_tile

    n = 2048
    a, b = (torch.randn(n, n, dtype=torch.bfloat16).to("plate") for _ in range(2))
    c = torch.empty(n, n, dtype=torch.bfloat16, device="plate")
    assert gemm_tile(n, a, b, c, [(256, 512, 128), (256, 512, 64), (256, 512, 32)]) == (256, 512, 32)
