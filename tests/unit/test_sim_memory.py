"""Device memory: placement, capacity accounting, allocation lifecycle, bounds faults, external memory."""

import numpy as np
import pytest

from triton_plate_backend.errors import DeviceOutOfMemory, MemoryFault, PlateError
from triton_plate_backend.machine import Domain, KiB, Machine
from triton_plate_backend.sim.memory import AllocationError, DeviceMemory, Placement

STRIPE = 4 * KiB


@pytest.fixture
def mem():
    return DeviceMemory("plate-mini")


def tiny_machine(hbm=64 * KiB):
    return Machine(name="tiny", domain=Domain(cores=1, hbm_bytes=hbm))


# ---- placement -----------------------------------------------------------------------------------
def test_placement_parse():
    assert Placement.parse(None) == Placement("interleaved")
    assert Placement.parse("local") == Placement("local")
    assert Placement.parse("local:2") == Placement("local", domain=2)
    assert Placement.parse("blocked:0,1") == Placement("blocked", domains=(0, 1))
    assert Placement.parse(3) == Placement("explicit", domain=3)
    assert Placement.parse([1, 3]) == Placement("explicit", domains=(1, 3))
    with pytest.raises(AllocationError, match="not one of"):
        Placement.parse("striped")
    with pytest.raises(AllocationError, match="domain="):
        Placement("explicit")


def test_placement_unknown_domain(mem):
    with pytest.raises(AllocationError, match="domain 7 does not exist"):
        mem.alloc(64, "local:7")


def test_home_domain_interleaved(mem):
    a = mem.alloc(10 * STRIPE)
    addrs = a.base + np.arange(10) * STRIPE + 5
    assert mem.home_domain(addrs).tolist() == [k % 4 for k in range(10)]
    assert mem.home_domain(np.array([a.base + STRIPE - 1, a.base + STRIPE])).tolist() == [0, 1]


def test_home_domain_local_and_explicit(mem):
    a = mem.alloc(3 * STRIPE, "local:2")
    assert set(mem.home_domain(a.base + np.arange(0, 3 * STRIPE, 512)).tolist()) == {2}
    b = mem.alloc(3 * STRIPE, "local")
    assert set(mem.home_domain(b.base + np.arange(0, 3 * STRIPE, 512)).tolist()) == {0}
    c = mem.alloc(2 * STRIPE, 3)
    assert set(mem.home_domain(c.base + np.arange(0, 2 * STRIPE, 512)).tolist()) == {3}


def test_home_domain_blocked(mem):
    a = mem.alloc(8 * KiB, "blocked")  # four 2 KiB chunks
    offs = np.array([0, 2047, 2048, 4095, 4096, 6143, 6144, 8191])
    assert mem.home_domain(a.base + offs).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    b = mem.alloc(8 * KiB, [3, 1])  # explicit list: two chunks
    assert mem.home_domain(b.base + np.array([0, 4095, 4096, 8191])).tolist() == [3, 3, 1, 1]


def test_home_domain_outside_faults(mem):
    a = mem.alloc(256)
    with pytest.raises(MemoryFault):
        mem.home_domain(np.array([a.end]))


# ---- accounting and OOM ------------------------------------------------------------------------------
def test_accounting_per_domain(mem):
    a = mem.alloc(4 * STRIPE)
    assert [mem.memory_allocated(d) for d in range(4)] == [STRIPE] * 4
    b = mem.alloc(1000, "local:1")
    assert mem.memory_allocated(1) == STRIPE + 1000
    assert mem.memory_allocated() == 4 * STRIPE + 1000
    c = mem.alloc(6 * STRIPE)  # stripes 0..5: domains 0 and 1 get two
    assert [mem.memory_allocated(d) for d in range(4)] == [3 * STRIPE, 3 * STRIPE + 1000, 2 * STRIPE, 2 * STRIPE]
    peak = mem.max_memory_allocated()
    mem.free(c.base)
    mem.free(a.base)
    assert mem.memory_allocated() == 1000
    assert mem.max_memory_allocated() == peak == 10 * STRIPE + 1000
    assert mem.max_memory_allocated(1) == 3 * STRIPE + 1000
    mem.reset_peak()
    assert mem.max_memory_allocated() == 1000
    stats = mem.memory_stats()
    assert stats["allocated_bytes_by_domain"] == [0, 1000, 0, 0]
    assert stats["active_allocations"] == 1 and stats["num_allocs"] == 3 and stats["num_frees"] == 2
    mem.free(b.base)
    assert mem.memory_allocated() == 0


def test_out_of_memory_names_domain_and_sizes():
    mem = DeviceMemory(tiny_machine())
    mem.alloc(40 * KiB, "local:2")
    with pytest.raises(DeviceOutOfMemory) as e:
        mem.alloc(30 * KiB, "local:2", label="big")
    msg = str(e.value)
    assert "30720" in msg and "domain 2" in msg and "40960" in msg and "65536" in msg and "'big'" in msg
    mem.alloc(30 * KiB, "local:1")  # another domain still has room
    # interleaved: 96 KiB spreads 24 KiB per domain; domain 2 has only 24 KiB left -> fits exactly
    mem.alloc(96 * KiB)
    with pytest.raises(DeviceOutOfMemory, match="domain 2"):
        mem.alloc(STRIPE * 4 + 1)  # one stripe more per domain, and a byte


def test_oom_failed_alloc_leaves_accounting(mem):
    mem = DeviceMemory(tiny_machine())
    with pytest.raises(DeviceOutOfMemory):
        mem.alloc(65 * KiB, "local")
    assert mem.memory_allocated() == 0 and not mem.allocations


# ---- lifecycle -----------------------------------------------------------------------------------
def test_owned_alignment_zero_fill_and_labels(mem):
    recs = [mem.alloc(n, label=f"t{n}") for n in (1, 100, 4096, 0)]
    for r in recs:
        assert r.base % 256 == 0 and r.live and r.view.size == r.nbytes
        assert not r.view.any()
    assert len({r.base for r in recs}) == 4
    assert [r.base for r in mem.allocations] == sorted(r.base for r in recs)
    assert mem.allocation(recs[1].id) is recs[1]


def test_double_free_and_unknown_free(mem):
    a = mem.alloc(64, label="x")
    mem.free(a.base)
    assert not a.live
    with pytest.raises(AllocationError, match="double free.*'x'"):
        mem.free(a.base)
    b = mem.alloc(64)
    with pytest.raises(AllocationError, match="not the base"):
        mem.free(b.base + 8)
    assert isinstance(AllocationError("x"), PlateError)


def test_frees_held_until_the_block_ends(mem):
    a, b = mem.alloc(64), mem.alloc(64)
    with mem.frees_held():
        with mem.frees_held():  # nests: only the outermost block releases
            mem.free(a.base)
        assert a.live and len(mem.allocations) == 2
    assert not a.live and b.live and len(mem.allocations) == 1
    mem.free(b.base)
    assert not b.live


def test_find_returns_ids(mem):
    a, b = mem.alloc(256), mem.alloc(512)
    addrs = np.array([[a.base, b.base + 511], [a.base + 255, b.base]])
    assert mem.find(addrs).tolist() == [[a.id, b.id], [a.id, b.id]]
    ids = mem.find(addrs, mask=np.array([[True, False], [False, True]]))
    assert ids.tolist() == [[a.id, -1], [-1, b.id]]


# ---- bounds faults -----------------------------------------------------------------------------------
def fault(mem, addrs, itemsize=1, mask=None) -> MemoryFault:
    with pytest.raises(MemoryFault) as e:
        mem.find(np.asarray(addrs, np.int64), itemsize, mask)
    return e.value


def test_fault_one_past_end(mem):
    a = mem.alloc(1024, label="x")
    e = fault(mem, [[a.base], [a.base + 1024]])
    assert f"{a.base + 1024:#x}" in str(e) and "'x'" in str(e) and "offset 1024" in str(e)
    assert e.programs == [1]


def test_fault_element_straddles_end(mem):
    a = mem.alloc(1020, label="x")
    mem.find(np.array([[a.base + 1016]]), 4)  # the last whole element is fine
    e = fault(mem, [[a.base + 1016]], 8)
    assert "runs 4 byte(s) past its end" in str(e) and "'x'" in str(e)


def test_fault_misaligned(mem):
    a = mem.alloc(1024)
    e = fault(mem, [[a.base], [a.base + 8], [a.base + 2]], 4)
    assert "misaligned" in str(e) and e.programs == [2]
    mem.find(np.array([[a.base + 2]]), 2)


def test_fault_before_start_and_gap(mem):
    a = mem.alloc(1024, label="lo")
    b = mem.alloc(1024, label="hi")
    lo_rec, hi_rec = sorted([a, b], key=lambda r: r.base)
    e = fault(mem, [[lo_rec.base - 4]])
    assert "4 byte(s) before the start of" in str(e)
    gap = lo_rec.end + 16
    assert gap < hi_rec.base
    e = fault(mem, [[lo_rec.base, lo_rec.base], [lo_rec.base, gap]])
    assert e.programs == [1]
    assert f"'{lo_rec.label}'" in str(e) and f"'{hi_rec.label}'" in str(e)


def test_fault_freed_allocation(mem):
    a = mem.alloc(1024, label="gone")
    base = a.base
    keep = mem.alloc(64)
    mem.free(base)
    e = fault(mem, [[keep.base], [base + 8]])
    assert "freed allocation 'gone'" in str(e) and e.programs == [1]


def test_masked_off_addresses_are_not_checked(mem):
    a = mem.alloc(64)
    ids = mem.find(np.array([[a.base, 0, -5]]), 4, mask=np.array([[True, False, False]]))
    assert ids.tolist() == [[a.id, -1, -1]]


def test_no_live_allocations(mem):
    e = fault(mem, [[4096]])
    assert "no live allocations" in str(e)


# ---- external memory and host copies ----------------------------------------------------------------
def test_register_external_numpy_array(mem):
    arr = np.arange(64, dtype=np.int32)
    rec = mem.register(arr.ctypes.data, arr.nbytes, "local:3", owner=arr, label="host")
    assert rec.external and rec.base == arr.ctypes.data and mem.memory_allocated(3) == 256
    assert np.frombuffer(mem.read_bytes(rec.base + 8, 8), np.int32).tolist() == [2, 3]
    mem.write_bytes(rec.base + 4, np.array([-7], np.int32).tobytes())
    assert arr[1] == -7
    with pytest.raises(AllocationError, match="overlaps"):
        mem.register(arr.ctypes.data + 16, 16)
    mem.free(rec.base)
    assert mem.memory_allocated(3) == 0 and arr[1] == -7  # the owner's memory is untouched by free
    with pytest.raises(MemoryFault, match="freed"):
        mem.read_bytes(rec.base, 4)


def test_view_must_stay_inside_one_allocation(mem):
    a = mem.alloc(100)
    assert mem.view(a.base + 10, 90).size == 90
    with pytest.raises(MemoryFault):
        mem.view(a.base + 10, 91)
    assert mem.view(12345, 0).size == 0


def test_zero_byte_registration_does_not_shadow(mem):
    arr = np.zeros(64, np.uint8)
    big = mem.register(arr.ctypes.data, 64, owner=arr)
    empty = mem.register(arr.ctypes.data + 16, 0)  # e.g. a 0-element tensor inside another's storage
    assert mem.find(np.array([[arr.ctypes.data + 32]])).tolist() == [[big.id]]
    mem.free(empty.base)
    with pytest.raises(AllocationError, match="no live allocation"):
        mem.allocation(empty.id)
    assert mem.allocation(big.id) is big


# ---- freed buffers kept for the next allocation of their size ------------------------------------
def test_a_freed_buffer_is_reused_zeroed_unless_a_view_of_it_outlived_it(mem):
    from triton_plate_backend.sim import memory as memmod

    n = memmod.SPARE_MIN_BYTES
    a = mem.alloc(n)
    mem.view(a.base, n)[:] = 7
    base = a.base
    mem.free(base)
    b = mem.alloc(n)  # the same buffer, zeroed: the same address
    assert b.base == base and not mem.view(b.base, n).any() and mem._spare_bytes == 0
    assert mem.alloc(n).base != base  # taken: a new one
    held = mem.view(b.base, n)
    mem.free(b.base)
    assert mem._spare_bytes == 0  # a view still holds it: not kept (a stale reader must not see new data)
    held[:] = 1
    c = mem.alloc(n)
    assert c.base != base and not mem.view(c.base, n).any()
    small = mem.alloc(n // 2)
    mem.free(small.base)
    poisoned = mem.alloc(n, poison=True)
    mem.free(poisoned.base)
    assert mem._spare_bytes == 0  # below SPARE_MIN_BYTES, and a poisoned buffer: not kept
    d = mem.alloc(n)
    mem.free(d.base)
    assert mem._spare_bytes == n + memmod.ALIGN
    assert mem.alloc(2 * n).base != d.base and mem._spare_bytes == n + memmod.ALIGN  # another size: not taken


def test_holding_finds_the_live_allocation_of_a_byte(mem):
    """``holding`` (one address, Python integers) agrees with ``span_positions`` (arrays) at every edge:
    first and last byte, one past the end, one before the base, freed memory, addresses no allocation holds."""
    recs = [mem.alloc(4096 * (i + 1)) for i in range(6)]
    mem.free(recs[2].base)
    live = [r for i, r in enumerate(recs) if i != 2]
    addrs = [a for r in recs for a in (r.base - 1, r.base, r.base + 1, r.end - 1, r.end)] + [0, 1, 2**40]
    for a in addrs:
        pos = int(mem.span_positions(np.array([a], np.int64), np.array([a + 1], np.int64))[0])
        want = mem.live(pos) if pos >= 0 else None
        assert mem.holding(a) is want
        assert mem.holding(np.int64(a)) is want
    assert [mem.holding(r.base + 5) for r in live] == live
    assert mem.holding(recs[2].base + 5) is not recs[2]


def test_holding_answers_follow_the_live_table(mem):
    """``holding`` keeps its answers while the live table stands: asked before and after a free, an allocation at
    the freed bytes, a registered range and a frees_held block, it answers as a fresh table does."""
    a = mem.alloc(8192)
    addr = a.base + 100
    assert mem.holding(addr) is a and mem.holding(addr) is a
    with mem.frees_held():
        mem.free(a.base)
        assert mem.holding(addr) is a  # the release waits until the block ends
    assert mem.holding(addr) is None and mem.holding(np.int64(addr)) is None
    b = mem.alloc(8192)
    assert b.base <= addr < b.end  # the freed bytes again (the allocator reuses them)
    assert mem.holding(addr) is b
    host = np.zeros(4096, np.uint8)
    hb = host.ctypes.data
    assert mem.holding(hb) is None
    r = mem.register(hb, host.nbytes)
    assert mem.holding(hb) is r and mem.holding(hb + 4095) is r and mem.holding(hb + 4096) is not r
    mem.free(r.base)
    assert mem.holding(hb) is None


def test_held_by_argument_follows_the_program_arguments(mem):
    """The allocation behind each pointer argument, None for the others; the pointer positions are kept per
    program and made again when its arguments change."""
    from triton_plate_backend.isa.program import Arg
    from triton_plate_backend.sim.memory import argument_types, held_by_argument, pointer_positions

    class P:
        args = [Arg("x", "ptr"), Arg("n", "i32"), Arg("y", "ptr")]

    x, y = mem.alloc(4096), mem.alloc(4096)
    p = P()
    assert pointer_positions(p) == (0, 2) and argument_types(p) == ("ptr", "i32", "ptr")
    assert held_by_argument(p, [x.base + 8, y.base, y.base + 16], mem) == [x, None, y]
    assert held_by_argument(p, [x.base, 7], mem) == [x, None]  # as zip pairs them
    p.args = [Arg("x", "ptr"), Arg("n", "ptr"), Arg("y", "i64")]
    assert pointer_positions(p) == (0, 1) and argument_types(p) == ("ptr", "ptr", "i64")
    assert held_by_argument(p, [x.base, y.base, y.base], mem) == [x, y, None]
    p.args[1] = Arg("n", "i32")  # the same list, changed in place
    assert pointer_positions(p) == (0,)


@pytest.mark.parametrize("machine", ["plate-mini", "plate1", "plate4"])
def test_split_one_is_split_of_one_range(machine):
    """``Allocation.split_one`` (Python numbers, one range) gives ``split``'s values for ranges inside,
    at the edges of and across stripes and chunks, for every placement; an allocation's shares per
    domain are its whole range split over its owners."""
    from triton_plate_backend.machine import get_machine
    from triton_plate_backend.sim.memory import BLOCKED_MIN_BYTES, DeviceMemory

    m = get_machine(machine)
    mem = DeviceMemory(m)
    rng = np.random.default_rng(3)
    specs = ["interleaved", "blocked", "local:1", f"explicit:0,{m.total_domains - 1},0"]
    for spec in specs:
        for n in (1, 100, 4096, 5000, 3 * BLOCKED_MIN_BYTES + 8):
            rec = mem.alloc(n, spec)
            cuts = [0, n, rec.granule, rec.granule - 1, rec.granule + 1, *rng.integers(0, n + 1, 12).tolist()]
            for lo in cuts:
                for hi in cuts:
                    lo, hi = min(lo, n), min(hi, n)
                    if lo > hi:
                        continue
                    want = rec.split(np.array([lo]), np.array([hi]))[0]
                    assert rec.split_one(lo, hi) == want.tolist(), (spec, n, lo, hi)
            shares = np.zeros(m.total_domains, np.int64)
            np.add.at(shares, np.asarray(rec.owners), rec.split(np.array([0]), np.array([n]))[0].astype(np.int64))
            assert rec.shares.tolist() == shares.tolist() and int(rec.shares.sum()) == n


# ---- a shadow's registration of the allocations it leaves where they are -----------------------------
def _record_fields(rec):
    return (rec.id, rec.base, rec.nbytes, rec.placement, rec.label, rec.owners, rec.striped, rec.granule)


def _accounting(m: DeviceMemory):
    counters = (m.peak_total, m.copy_bytes, m.copy_peak, m.num_allocs, m._next_id, m._live_bases)
    return counters, m.used.tolist(), m.peak.tolist(), [_record_fields(r) for r in m.allocations]


def test_register_alike_is_register_of_the_allocation_as_it_is(mem):
    """``register_alike(rec)`` makes what ``register(rec.base, rec.nbytes, rec.placement, owner=rec,
    label=rec.label)`` makes: the same record (home domains, stripes, shares, an external view of the same
    bytes), the same accounting; for every placement, a migrated allocation, a poisoned one and zero bytes."""
    made = [
        mem.alloc(3 * STRIPE + 100),
        mem.alloc(64, "local:2"),
        mem.alloc(5 * STRIPE, "blocked:0,1"),
        mem.alloc(2 * STRIPE, [1, 3]),
        mem.alloc(100, "replicated"),
        mem.alloc(STRIPE + 1, poison=True),
        mem.alloc(0),
    ]
    mem.migrate(made[0].base, "local:3")
    mem.view(made[1].base, 64)[:] = 5
    by_register, alike = DeviceMemory(mem.machine), DeviceMemory(mem.machine)
    for rec in mem.allocations:
        want = by_register.register(rec.base, rec.nbytes, rec.placement, owner=rec, label=rec.label)
        got = alike.register_alike(rec)
        assert _record_fields(got) == _record_fields(want)
        assert got.shares.tolist() == want.shares.tolist() and got.shares is not rec.shares
        assert got.external and got.owner is rec and got.replica_of is None and got.written is None
        assert np.shares_memory(got.view, rec.view) or rec.nbytes == 0
        assert got.view.tobytes() == want.view.tobytes()
    assert _accounting(alike) == _accounting(by_register)
    assert alike.view(made[1].base, 64).tolist() == [5] * 64


def test_register_alike_raises_as_register_does():
    """Past the shadow's capacity or over a live allocation, register's own error (the pricing catches it)."""
    small = DeviceMemory(tiny_machine())
    big = DeviceMemory(tiny_machine(hbm=256 * KiB))
    rec = big.alloc(400 * KiB)  # 100 KiB a domain: past 64
    with pytest.raises(DeviceOutOfMemory) as want:
        small.register(rec.base, rec.nbytes, rec.placement, owner=rec, label=rec.label)
    with pytest.raises(DeviceOutOfMemory) as got:
        DeviceMemory(tiny_machine()).register_alike(rec)
    assert str(got.value) == str(want.value)
    twice = DeviceMemory(big.machine)
    twice.register_alike(rec)
    with pytest.raises(AllocationError, match="overlaps live allocation"):
        twice.register_alike(rec)
