"""The committed TTIR fixtures: regenerating them from kernels.py gives the same text, and no
location names a path of the machine that made them."""

from __future__ import annotations

import re

import pytest
import ttir_fixtures


def test_every_kernel_has_both_forms():
    assert len(ttir_fixtures.KERNELS) >= 24
    for name in ttir_fixtures.KERNELS:
        assert (ttir_fixtures.DIR / f"{name}.ttir.noloc.mlir").is_file(), name


@pytest.mark.parametrize("path", ttir_fixtures.FILES, ids=lambda p: p.name)
def test_locations_are_relative(path):
    files = set(re.findall(r'loc\("([^"]+)":\d+:\d+\)', path.read_text()))
    assert all(not f.startswith("/") and ":" not in f for f in files), files
    if ".noloc." in path.name:
        assert not files
    else:
        assert "kernels.py" in files


def test_fixtures_match_the_generator(tmp_path):
    pytest.importorskip("triton._C.libtriton")
    made = ttir_fixtures.make_fixtures().make(tmp_path)
    assert sorted(made) == ttir_fixtures.KERNELS
    made_files = sorted(tmp_path.glob("*.mlir"))
    stale = [p.name for p in made_files if p.read_text() != (ttir_fixtures.DIR / p.name).read_text()]
    assert not stale, f"rerun tests/fixtures/ttir/make_fixtures.py: {stale} differ from what it makes"
    assert [p.name for p in made_files] == [p.name for p in ttir_fixtures.FILES]
