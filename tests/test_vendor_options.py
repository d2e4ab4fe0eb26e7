"""Other backends' compile and launch options: accepted, one warning per name, stored at the vendor's default."""

import os
import pathlib
import warnings

import pytest

os.environ.setdefault("TRITON_DEFAULT_BACKEND", "plate")
torch = pytest.importorskip("torch")
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.amd.compiler import HIPOptions  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.backends.nvidia.compiler import CUDAOptions  # noqa: E402

from triton_plate_backend.compiler import OPTION_FIELDS, PlateBackend  # noqa: E402
from triton_plate_backend.vendor_options import (  # noqa: E402
    VENDOR_OPTIONS,
    VendorOptionWarning,
    forget_warnings,
)

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs" / "differences.md"
VENDOR_CLASSES = {"NVIDIA": CUDAOptions, "AMD": HIPOptions}


@pytest.fixture(autouse=True)
def _fresh_warnings():
    forget_warnings()
    yield
    forget_warnings()


@triton.jit
def _scale(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def test_every_vendor_option_is_a_field_of_its_vendor_and_of_plate_with_the_vendor_default():
    for name, option in VENDOR_OPTIONS.items():
        assert name in OPTION_FIELDS, name
        for vendor in option.vendor.split(", "):
            fields = VENDOR_CLASSES[vendor].__dataclass_fields__
            assert name in fields, (name, vendor)
            if name != "ptx_options":  # NVIDIA's default comes from a knob (None unless set)
                assert fields[name].default == option.default, name


def test_parse_options_warns_once_per_name_and_keeps_the_default():
    be = PlateBackend(GPUTarget("plate", 1, 32))
    base = be.parse_options({})
    with pytest.warns(VendorOptionWarning) as record:
        o = be.parse_options({"matrix_instr_nonkdim": 16, "waves_per_eu": 2, "maxnreg": 128, "kpack": 2})
    assert sorted(str(w.message).split("=")[0] for w in record) == [
        "kpack",
        "matrix_instr_nonkdim",
        "maxnreg",
        "waves_per_eu",
    ]
    assert "AMD" in next(str(w.message) for w in record if "waves_per_eu" in str(w.message))
    assert (o.matrix_instr_nonkdim, o.waves_per_eu, o.maxnreg, o.kpack) == (0, 0, None, 1)
    assert o.hash() == base.hash()  # an ignored option does not split the kernel cache
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        be.parse_options({"matrix_instr_nonkdim": 32, "kpack": 2})  # already warned for these names
        be.parse_options(o.__dict__)  # defaults never warn
        be.parse_options({"launch_pdl": False, "schedule_hint": "none"})


def test_amd_autotune_configs_run():
    """Tutorial 03's non-CUDA configs carry matrix_instr_nonkdim (KeyError ... unrecognised before)."""
    tuned = triton.autotune(
        configs=[
            triton.Config({"BLOCK": b, "matrix_instr_nonkdim": 16, "waves_per_eu": 2}, num_warps=8) for b in (64, 128)
        ],
        key=["n"],
    )(_scale)
    n = 300
    x, o = torch.randn(n, device="plate"), torch.empty(n, device="plate")
    with pytest.warns(VendorOptionWarning, match="matrix_instr_nonkdim=16"):
        tuned[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, o, n)
    torch.testing.assert_close(o.cpu(), x.cpu() * 2)


def test_nvidia_launch_options_as_kwargs():
    n = 100
    x, o = torch.randn(n, device="plate"), torch.empty(n, device="plate")
    with pytest.warns(VendorOptionWarning) as record:
        _scale[(1,)](x, o, n, BLOCK=128, maxnreg=64, launch_pdl=True, enable_reflect_ftz=False)
    assert {str(w.message).split("=")[0] for w in record} == {"maxnreg", "launch_pdl", "enable_reflect_ftz"}
    torch.testing.assert_close(o.cpu(), x.cpu() * 2)


def test_unknown_kwargs_are_still_rejected():
    n = 16
    x, o = torch.randn(n, device="plate"), torch.empty(n, device="plate")
    with pytest.raises(KeyError, match="not_an_option"):
        _scale[(1,)](x, o, n, BLOCK=16, not_an_option=1)


def test_the_docs_table_lists_every_vendor_option():
    rows = {line.split("|")[1].strip().strip("`") for line in DOCS.read_text().splitlines() if line.startswith("| `")}
    assert set(VENDOR_OPTIONS) <= rows, set(VENDOR_OPTIONS) - rows
