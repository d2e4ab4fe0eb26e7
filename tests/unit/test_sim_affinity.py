"""The launch side of affinity (sim/affinity.py) on plate-mini (4 domains x 2 cores): a kernel's
footprint evaluated with the arguments' home domains gives each program the domain that homes its
bytes, balanced over the domain's cores; the cost model decides when a program moves to another
domain; and migration between placements is priced by cost.migration_cycles."""

from __future__ import annotations

import numpy as np
import pytest

from triton_plate_backend import cost
from triton_plate_backend.isa.program import Arg, Program
from triton_plate_backend.machine import get_machine
from triton_plate_backend.sim.affinity import assign, core_mapping, program_bytes
from triton_plate_backend.sim.memory import BLOCKED_MIN_BYTES, DeviceMemory, Placement, default_placement
from triton_plate_backend.sim.timing import CoreMapping, map_programs

MINI = get_machine("plate-mini")
STREAM = "arg0[pid_x*4096:(pid_x + 1)*4096]*4096; arg1[pid_x*4096:(pid_x + 1)*4096]*4096"


def kernel(affinity: str) -> Program:
    return Program("k", args=[Arg("x", "ptr"), Arg("o", "ptr"), Arg("n", "i32")], affinity=affinity)


def test_blocked_stream_runs_every_program_in_its_home_domain():
    mem = DeviceMemory(MINI)
    x, o = (mem.alloc(64 * 4096, "blocked") for _ in range(2))
    by_domain, spread = program_bytes(kernel(STREAM), (64, 1, 1), [x.base, o.base, 0], mem)
    home = np.arange(64) // 16  # 16 programs per 64 KiB chunk
    assert (by_domain.argmax(axis=1) == home).all() and (by_domain.sum(axis=1) == 8192).all() and not spread.any()
    mapping = core_mapping(kernel(STREAM), (64, 1, 1), [x.base, o.base, 0], mem)
    cores = map_programs(mapping, 64, MINI)
    assert mapping.name == "affinity" and (cores // MINI.domain.cores == home).all()
    assert np.bincount(cores, minlength=MINI.total_cores).tolist() == [8] * MINI.total_cores


def test_local_tensor_keeps_programs_home_when_moving_does_not_pay():
    mem = DeviceMemory(MINI)
    x, o = (mem.alloc(64 * 4096, "local:2") for _ in range(2))
    cores = map_programs(core_mapping(kernel(STREAM), (64, 1, 1), [x.base, o.base, 0], mem), 64, MINI)
    # domain 2's HBM binds wherever the programs run: moving them would only add remote bytes
    assert set((cores // MINI.domain.cores).tolist()) == {2}


def test_ties_spread_over_domains_when_no_local_byte_is_lost():
    by_domain = np.zeros((64, 4))
    r = np.arange(64)
    by_domain[r, (2 * r) % 4] = by_domain[r, (2 * r + 1) % 4] = 4096  # each program split over two domains
    dom = assign(MINI, by_domain) // MINI.domain.cores
    assert np.bincount(dom, minlength=4).tolist() == [16] * 4
    assert (by_domain[r, dom] == 4096).all()  # each still in a domain homing half its bytes


def test_gathered_bytes_are_work_that_steers_no_program():
    mem = DeviceMemory(MINI)
    x, table = mem.alloc(64 * 4096, "blocked"), mem.alloc(1 << 20, "local:3")
    text = "arg0[pid_x*4096:(pid_x + 1)*4096]*4096; arg1[:]*2048; any[:]*1024"
    by_domain, spread = program_bytes(kernel(text), (64, 1, 1), [x.base, table.base, 0], mem)
    assert (by_domain.sum(axis=1) == 4096).all()
    assert (spread[:, 3] == 2048 + 256).all() and (spread[:, :3] == 256).all()
    dom = map_programs(core_mapping(kernel(text), (64, 1, 1), [x.base, table.base, 0], mem), 64, MINI) // 2
    assert (dom == np.arange(64) // 16).all()  # the located bytes decide; the table's domain does not
    only_gathers = "arg0[0:0]*0; arg1[:]*4096"  # nothing located: the default mapping, not a pile on domain 3
    assert core_mapping(kernel(only_gathers), (64, 1, 1), [x.base, table.base, 0], mem) is None
    half = "arg0[pid_x*4096:(pid_x + 1)*4096]*(pid_x // 32 * 4096); arg1[:]*1024"  # programs 0-31 locate none
    dom = map_programs(core_mapping(kernel(half), (64, 1, 1), [x.base, table.base, 0], mem), 64, MINI) // 2
    assert (dom[32:] == np.arange(32, 64) // 16).all()  # the located ones at home, the others spread:
    assert np.bincount(dom, minlength=4).tolist() == [16] * 4  # no domain gets the unlocated pile


def test_mostly_gathered_kernels_keep_the_default_mapping():
    mem = DeviceMemory(MINI)
    x, table = mem.alloc(64 * 4096, "blocked"), mem.alloc(1 << 20, "local:3")
    text = "arg0[pid_x*4096:(pid_x + 1)*4096]*4096; arg1[:]*8192"  # a third located: where most bytes go is data
    assert core_mapping(kernel(text), (64, 1, 1), [x.base, table.base, 0], mem) is None


def test_even_ties_follow_program_id_order():
    by_domain = np.full((64, 4), 1024.0)  # every program homed evenly in every domain (an interleaved tile)
    assert (assign(MINI, by_domain) // 2 == np.arange(64) // 16).all()


def test_unknown_footprint_or_foreign_memory_keeps_the_default_mapping():
    mem = DeviceMemory(MINI)
    x = mem.alloc(4096, "blocked")
    assert core_mapping(kernel("none (a gather)"), (4, 1, 1), [x.base, x.base, 0], mem) is None
    assert core_mapping(kernel(""), (4, 1, 1), [x.base, x.base, 0], mem) is None
    assert core_mapping(kernel(STREAM), (4, 1, 1), [1 << 40, 1 << 41, 0], mem) is None


def test_core_mapping_is_hashable_and_checked():
    m = CoreMapping.of("affinity", [0, 1, 7])
    assert hash(m) == hash(CoreMapping.of("affinity", np.array([0, 1, 7]))) and m.array().tolist() == [0, 1, 7]
    with pytest.raises(Exception, match="one core"):
        map_programs(CoreMapping.of("affinity", [0, 99]), 2, MINI)


def test_default_placement_blocks_large_and_interleaves_small():
    assert default_placement(BLOCKED_MIN_BYTES) == Placement("blocked")
    assert default_placement(BLOCKED_MIN_BYTES - 1) == Placement("interleaved")


def test_migration_moves_homes_in_place_and_is_priced_by_the_cost_model():
    mem = DeviceMemory(MINI)
    rec = mem.alloc(1 << 20, "interleaved")
    data = np.arange(1 << 18, dtype=np.float32)
    rec.view[:] = data.view(np.uint8)
    moved = mem.migrate(rec.base, "local:1")
    assert moved.sum() == 1 << 20 and moved[:, 1].sum() == 1 << 20 and moved[1, 1] == (1 << 20) // 4
    assert (mem.home_domain(np.array([rec.base, rec.end - 1])) == 1).all()
    assert (rec.view.view(np.float32) == data).all()  # the bytes stay where they are
    assert mem.used.tolist() == [0, 1 << 20, 0, 0]
    cycles = cost.migration_cycles(MINI, moved)
    hbm = MINI.domain.hbm_bytes_per_cycle * MINI.domain.hbm_efficiency
    assert cycles >= 3 * (1 << 18) / hbm  # the bytes that change home all land in domain 1's HBM
    assert cost.migration_cycles(MINI, np.diag([5.0, 6.0, 7.0, 8.0])) == 0.0  # nothing changes home
    assert mem.migrate(rec.base, "local:1")[1, 1] == 1 << 20  # already there: nothing to move


@pytest.mark.parametrize("before", ["blocked", "interleaved", "local:2"])
@pytest.mark.parametrize("after", ["blocked", "interleaved", "replicated", "local:1"])
def test_moved_by_counts_each_byte_from_its_old_home_to_its_new(before, after):
    # the bytes of a placement change per (old home, new home), against the count byte by byte
    mem = DeviceMemory(MINI)
    rec = mem.alloc(3 * (1 << 20) + 4100, before)
    old = mem.home_domain(np.arange(rec.base, rec.end))
    moved = mem.moved_by(rec.base, after)
    D = MINI.total_domains
    want = np.zeros((D, D))
    if after == "replicated":
        for d in range(MINI.domains):
            want[:, d] += np.bincount(old, minlength=D)
    else:
        probe = mem.alloc(rec.nbytes, after)
        new = probe.home_domain(np.arange(probe.nbytes))
        np.add.at(want, (old, new), 1)
    assert moved.tolist() == want.tolist()


def test_a_launch_shape_evaluates_its_footprints_once_for_mapping_and_operand_planner():
    from triton_plate_backend.sim.footprints import launch_footprints
    from triton_plate_backend.sim.operands import shared_operands

    mem = DeviceMemory(MINI)
    x, o = (mem.alloc(64 * 4096, "blocked") for _ in range(2))
    k = kernel("arg0[0:arg2]*4096; arg1[pid_x*4096:(pid_x + 1)*4096]*4096")
    launch = launch_footprints(k, (64, 1, 1), [x.base, o.base, 64 * 4096])
    assert launch_footprints(k, (64, 1, 1), [x.base + 8, o.base, 64 * 4096]) is launch  # pointers are not its key
    assert launch_footprints(k, (64, 1, 1), [x.base, o.base, 4096]) is not launch  # integer arguments are
    assert launch.value("pid_x*4096").tolist() == [p * 4096 for p in range(64)]
    assert not launch.value("arg2").flags.writeable and launch.value("arg2").shape == (64,)
    evaluated = dict(launch._values)
    program_bytes(k, (64, 1, 1), [x.base, o.base, 64 * 4096], mem)
    shared_operands(k, (64, 1, 1), [x.base, o.base, 64 * 4096], mem)
    texts = {t for fp in launch.footprints for t in (fp.lo, fp.hi, fp.nbytes)}
    assert set(launch._values) == texts | set(evaluated)  # each expression evaluated once, kept for both
    assert all(launch._values[t] is v for t, v in evaluated.items())
    # x's range spans every domain's share: shared; o's programs each read their own slice
    assert [i for i, _ in shared_operands(k, (64, 1, 1), [x.base, o.base, 64 * 4096], mem)] == [0]


def test_a_large_grid_keeps_only_its_last_launch_shape(monkeypatch):
    from triton_plate_backend.sim import footprints

    monkeypatch.setattr(footprints, "KEPT_PROGRAMS", 16)
    mem = DeviceMemory(MINI)
    x, o = (mem.alloc(64 * 4096, "blocked") for _ in range(2))
    k = kernel(STREAM)
    first = footprints.launch_footprints(k, (64, 1, 1), [x.base, o.base, 1])
    assert footprints.launch_footprints(k, (64, 1, 1), [x.base, o.base, 1]) is first  # the same launch: shared
    other = footprints.launch_footprints(k, (64, 1, 1), [x.base, o.base, 2])
    assert other is not first and footprints.launch_footprints(k, (64, 1, 1), [x.base, o.base, 1]) is not first
    small = footprints.launch_footprints(k, (8, 1, 1), [x.base, o.base, 1])
    assert footprints.launch_footprints(k, (8, 1, 1), [x.base, o.base, 1]) is small


@pytest.mark.parametrize("machine", ["plate-mini", "plate1", "plate4"])
def test_a_one_program_launch_counts_the_bytes_the_numpy_path_counts(machine):
    """program_bytes of a one-program launch (sim/affinity.py ``_one_program_bytes``, in Python numbers)
    against the numpy path over the programs (``_program_bytes``) on the same launch: equal arrays, for
    ranges inside, across and past allocations of every placement, gathers, anywhere-bytes and offsets
    from the allocation's base, pointers into unknown memory and a replicated tensor."""
    from triton_plate_backend.sim import affinity
    from triton_plate_backend.sim.footprints import launch_footprints

    m = get_machine(machine)
    mem = DeviceMemory(m)
    rng = np.random.default_rng(7)
    specs = ["interleaved", "blocked", "local:1", "replicated", f"explicit:0,{m.total_domains - 1},0"]
    recs = [mem.alloc(int(n), spec) for spec in specs for n in (100, 4096, 5000, 3 * BLOCKED_MIN_BYTES + 8)]
    args = [Arg(f"p{i}", "ptr") for i in range(3)] + [Arg("n", "i32")]
    checked = 0
    for trial in range(400):
        ptrs = [int(recs[i].base + rng.integers(0, 64)) for i in rng.integers(0, len(recs), 3)]
        if trial % 17 == 0:
            ptrs[1] = 8  # not device memory
        entries = []
        for k in range(int(rng.integers(1, 5))):
            a = int(rng.integers(0, 3))
            lo, n = int(rng.integers(-5000, 3 * BLOCKED_MIN_BYTES)), int(rng.integers(0, 2 * BLOCKED_MIN_BYTES))
            form = int(rng.integers(0, 4))
            if form == 0:
                entries.append(f"arg{a}[:]*{n // 3}")
            elif form == 1:
                entries.append(f"any[:]*{n}")
            else:
                entries.append(f"arg{a}[{lo} + arg3:{lo} + arg3 + {n}]*{n + 7 * k}")
        text = "; ".join(entries)
        values = [*ptrs, int(rng.integers(0, 9000))]
        program = Program("k", args=args, affinity=text)
        launch = launch_footprints(program, (1, 1, 1), values)
        one = affinity._one_program_bytes(program, values, mem, launch)
        full = affinity._program_bytes(program, values, mem, launch)
        assert (one is None) == (full is None)
        if one is not None:
            assert one[0].dtype == full[0].dtype and one[0].shape == full[0].shape == (1, m.total_domains)
            assert np.array_equal(one[0], full[0]) and np.array_equal(one[1], full[1]), text
            checked += bool(one[0].any() or one[1].any())
    assert checked > 300
