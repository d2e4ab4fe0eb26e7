"""`plate bench --quick`: the outputs' shape and content (not the numbers)."""

from __future__ import annotations

import json

import pytest

from triton_plate_backend.bench.run import MODES
from triton_plate_backend.cli import main


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
    md = (tmp_path / "results.md").read_text()
    assert md.count("| vector_add |") == 2 and "median |error|" in md
    assert (tmp_path / "roofline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "cost-model median" in capsys.readouterr().out


def test_plate_bench_names_an_unknown_kernel(tmp_path, capsys):
    assert main(["bench", "--quick", "--kernel", "nope", "--out", str(tmp_path)]) == 2
    assert "unknown kernel(s) nope" in capsys.readouterr().err
