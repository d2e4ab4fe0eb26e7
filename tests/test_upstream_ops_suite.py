"""The runner's ``ops`` suite (PyTorch's test_ops.py OpInfo tests on the eager device): its pytest command loads the
library plugin (device setup, host ops) and the device-tests plugin, which lifts PyTorch's device restrictions for
the PrivateUse1 test classes only when not told to keep them."""

from __future__ import annotations

import sys
import types

import pytest

from upstream import device_tests_plugin, runner
from upstream.revisions import Tree


def test_the_ops_suite_runs_on_the_eager_device_with_its_host_ops_counted(tmp_path):
    args = runner.build_parser().parse_args(["ops", "--files", "test_ops.py"])
    args.library, args.skiplist, args.jobs, args.timeout = None, tmp_path / "s.toml", 0, 60.0
    cmd = " ".join(runner.pytest_command("ops", Tree(tmp_path, tmp_path), ["test_ops.py"], args, tmp_path, tmp_path))
    assert "-p upstream.library_plugin --lib-device plate -p upstream.device_tests_plugin" in cmd
    assert "upstream.inductor_plugin" not in cmd and runner.SUITE_PROJECT["ops"] == "pytorch"


@pytest.mark.parametrize("keep", [False, True])
def test_the_plugin_lifts_the_privateuse1_restrictions_unless_kept(keep, monkeypatch):
    """On a stand-in for common_device_type (the real one imports PyTorch's whole test harness: seconds)."""
    stand_in = types.ModuleType("stand_in_common_device_type")
    stand_in.PrivateUse1TestBase = type("PrivateUse1TestBase", (), {"bypass_device_restrictions": False})
    monkeypatch.setitem(sys.modules, stand_in.__name__, stand_in)
    monkeypatch.setattr(device_tests_plugin, "COMMON_DEVICE_TYPE", stand_in.__name__)

    class Config:
        def getoption(self, name):
            assert name == "--device-tests-keep-restrictions"
            return keep

    device_tests_plugin.pytest_configure(Config())
    assert stand_in.PrivateUse1TestBase.bypass_device_restrictions is (not keep)
