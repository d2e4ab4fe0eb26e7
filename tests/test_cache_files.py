"""The cache manager the plate driver installs: Triton's files, written without a temporary directory."""

import os

import pytest
import triton
from triton import knobs as triton_knobs
from triton.runtime.cache import FileCacheManager

from triton_plate_backend import cache_files
from triton_plate_backend.cache_files import PlateFileCacheManager


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))  # the knob reads it on each use
    return tmp_path


def test_put_writes_the_same_files_as_triton_and_leaves_nothing_else(cache_dir):
    ours, theirs = PlateFileCacheManager("a" * 32), FileCacheManager("b" * 32)
    for manager in (ours, theirs):
        text = manager.put("tt.func @k", "k.ttir")
        binary = manager.put(b"\x00\x01pbin", "k.pbin")
        manager.put_group("k.json", {"k.ttir": text, "k.pbin": binary})
    for manager in (ours, theirs):
        assert sorted(os.listdir(manager.cache_dir)) == ["__grp__k.json", "k.pbin", "k.ttir"]
        assert open(manager.get_file("k.ttir")).read() == "tt.func @k"
        assert open(manager.get_file("k.pbin"), "rb").read() == b"\x00\x01pbin"
        assert set(manager.get_group("k.json")) == {"k.ttir", "k.pbin"}
    mode = {os.stat(m.get_file("k.ttir")).st_mode for m in (ours, theirs)}
    assert len(mode) == 1, f"the file permissions differ from Triton's: {mode}"


def test_a_manager_makes_its_folder_as_triton_does(tmp_path, monkeypatch):
    """The same cache_dir, lock_path and folder (its mode too) as FileCacheManager's, under a root not made
    yet as well; a file where the folder goes is an error, as for os.makedirs; dump and override managers
    are Triton's own."""
    root = tmp_path / "not" / "made"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(root))
    ours = PlateFileCacheManager("K" * 32)
    again = PlateFileCacheManager("K" * 32)  # the folder is there: nothing to make
    theirs = FileCacheManager("L" * 32)
    assert ours.cache_dir == again.cache_dir == str(root / ("K" * 32)) and os.path.isdir(ours.cache_dir)
    assert (ours.key, ours.lock_path) == ("K" * 32, os.path.join(ours.cache_dir, "lock"))
    assert os.stat(ours.cache_dir).st_mode == os.stat(theirs.cache_dir).st_mode
    (root / ("F" * 32)).write_text("a file")
    for manager_class in (PlateFileCacheManager, FileCacheManager):
        with pytest.raises(FileExistsError):
            manager_class("F" * 32)
    monkeypatch.setenv("TRITON_DUMP_DIR", str(tmp_path / "dump"))
    dump = PlateFileCacheManager("D" * 32, dump=True)
    assert dump.cache_dir == str(tmp_path / "dump" / ("D" * 32)) and os.path.isdir(dump.cache_dir)
    monkeypatch.setenv("TRITON_CACHE_DIR", "")
    with pytest.raises(RuntimeError, match="cache dir"):
        PlateFileCacheManager("E" * 32)


def test_put_replaces_an_existing_file(cache_dir):
    manager = PlateFileCacheManager("c" * 32)
    manager.put("old", "k.pasm")
    path = manager.put("new", "k.pasm")
    assert open(path).read() == "new"
    assert os.listdir(manager.cache_dir) == ["k.pasm"]


def test_a_new_file_is_created_in_place_and_an_existing_one_replaced_by_a_rename(cache_dir, monkeypatch):
    manager = PlateFileCacheManager("e" * 32)
    renames = []
    real_replace = os.replace

    def replace(src, dst):
        renames.append((os.path.basename(src), os.path.basename(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(cache_files.os, "replace", replace)
    first = manager.put("first", "k.ttir")
    assert renames == [], "a file not there yet is written in place"
    part = os.stat(first)
    manager.put("second, longer", "k.ttir")
    assert len(renames) == 1 and renames[0][1] == "k.ttir" and renames[0][0].startswith(".tmp.pid_")
    assert open(first).read() == "second, longer"
    assert os.stat(first).st_ino != part.st_ino, "replaced by another file, not rewritten in place"
    assert os.listdir(manager.cache_dir) == ["k.ttir"]


def test_text_is_written_as_text_mode_writes_it(cache_dir):
    manager = PlateFileCacheManager("f" * 32)
    text = "tt.func @k() {\n  // \u00e9\u2192 loc\n}\n"
    path = manager.put(text, "k.ttir")
    with open(path) as f:  # text mode, as Triton's CompiledKernel reads it (Path.read_text)
        assert f.read() == text
    theirs = FileCacheManager("g" * 32)
    assert open(theirs.put(text, "k.ttir"), "rb").read() == open(path, "rb").read()


def test_a_failed_rename_leaves_no_temporary_file(cache_dir, monkeypatch):
    manager = PlateFileCacheManager("d" * 32)
    manager.put("old", "k.pir")

    def no_rename(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(cache_files.os, "replace", no_rename)
    with pytest.raises(OSError, match="disk full"):
        manager.put("text", "k.pir")
    assert os.listdir(manager.cache_dir) == ["k.pir"]
    assert open(manager.get_file("k.pir")).read() == "old"


def test_install_keeps_a_configured_manager(monkeypatch):
    class Mine(FileCacheManager):
        pass

    monkeypatch.setattr(triton_knobs.cache, "manager_class", Mine)
    assert not cache_files.install()
    assert triton_knobs.cache.manager_class is Mine


def test_the_active_plate_driver_installed_it():
    triton.runtime.driver.active.get_current_target()  # the driver exists
    assert triton_knobs.cache.manager_class is PlateFileCacheManager
