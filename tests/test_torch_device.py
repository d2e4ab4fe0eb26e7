"""The `plate` torch device: registration, memory in the simulator, eager ops against the CPU,
placement, errors, seeds, events and threads."""

from __future__ import annotations

import threading

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import triton_plate_backend.torch_device as plate_device
from triton_plate_backend.errors import PlateError
from triton_plate_backend.sim.device import DeviceError, get_device
from triton_plate_backend.sim.memory import AllocationError
from triton_plate_backend.torch_device import compiler_hooks


def on_plate(t: torch.Tensor) -> torch.Tensor:
    return t.to("plate")


# ---- registration and naming -------------------------------------------------------------------------
def test_registered_as_torch_plate():
    assert torch.plate is plate_device
    assert torch._C._get_privateuse1_backend_name() == "plate"
    assert torch.device("plate").type == "plate"
    assert torch.plate.is_available() and torch.plate.device_count() >= 1
    assert torch.plate.current_device() == 0


def test_registration_is_idempotent():
    import importlib

    from triton_plate_backend.torch_device import _registration

    _registration.register(plate_device, plate_device.memory, _registration.extension())
    assert importlib.reload(plate_device) is plate_device  # registering again changes nothing
    assert torch.plate is plate_device
    assert torch.ones(2, device="plate").device.type == "plate"


def test_inductor_hook_takes_exactly_the_discovery_names():
    with pytest.raises(PlateError, match="Scheduling, PythonWrapperCodegen, CppWrapperCodegen, WrapperFxCodegen"):
        compiler_hooks.register_inductor_backend(Scheduling=object)
    with pytest.raises(AttributeError):
        torch.plate.NotAnInductorName  # noqa: B018


def test_tensor_methods_and_device_strings():
    x = torch.arange(4).plate()
    assert x.device == torch.device("plate", 0) and x.is_plate and not torch.ones(1).is_plate
    assert str(x.device) == "plate:0"
    assert x.untyped_storage().device.type == "plate"
    assert torch.accelerator.current_accelerator().type == "plate"


def test_tensors_live_in_the_simulators_memory():
    x = torch.zeros(1000, device="plate")
    mem = get_device().memory
    rec = mem.live(int(mem.span_positions(*([[x.data_ptr()]] * 2))[0]))
    assert rec.base == x.data_ptr() and rec.nbytes == 4000 and rec.label == "torch"
    mem.write_bytes(x.data_ptr(), torch.full((2,), 3.0).numpy().tobytes())  # the simulator writes, torch reads
    assert x[:3].tolist() == [3.0, 3.0, 0.0]


# ---- factories and copies ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda d: torch.empty(3, 4, device=d).fill_(2.5),
        lambda d: torch.zeros(2, 3, dtype=torch.int64, device=d),
        lambda d: torch.ones(5, dtype=torch.bfloat16, device=d),
        lambda d: torch.full((2, 2), 7, dtype=torch.int16, device=d),
        lambda d: torch.arange(0, 10, 3, device=d),
        lambda d: torch.linspace(-1, 1, 7, device=d),
        lambda d: torch.eye(3, dtype=torch.float16, device=d),
        lambda d: torch.empty_strided((2, 3), (1, 2), device=d).fill_(1),
        lambda d: torch.tensor([[1, 2], [3, 4]], dtype=torch.uint8, device=d),
    ],
)
def test_factories_match_cpu(make):
    got, want = make("plate"), make("cpu")
    assert got.device.type == "plate" and got.dtype == want.dtype and got.stride() == want.stride()
    assert torch.equal(got.cpu(), want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.bool])
def test_copies_both_ways(dtype):
    src = (torch.randn(6, 5) * 10).to(dtype)
    dev = src.plate()
    assert torch.equal(dev.cpu(), src)
    back = torch.empty_like(src)
    back.copy_(dev.t().t())
    assert torch.equal(back, src)
    other = torch.empty(6, 5, dtype=dtype, device="plate")
    other.copy_(dev)  # plate -> plate
    assert torch.equal(other.cpu(), src)
    assert torch.equal(dev.to(torch.float64).cpu(), src.to(torch.float64))  # converting copy


@settings(max_examples=25, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=3),
    step=st.integers(1, 3),
    transpose=st.booleans(),
)
def test_strided_round_trip(shape, step, transpose):
    base = torch.arange(int(torch.tensor(shape).prod()), dtype=torch.float32).reshape(shape)
    view = base[..., ::step]
    if transpose and view.dim() > 1:
        view = view.transpose(0, -1)
    dev = view.plate()
    assert torch.equal(dev.cpu(), view)
    dev_view = base.plate()[..., ::step]
    if transpose and dev_view.dim() > 1:
        dev_view = dev_view.transpose(0, -1)
    assert dev_view.stride() == view.stride() and torch.equal(dev_view.cpu(), view)


# ---- eager ops against the CPU -----------------------------------------------------------------------
A, B = torch.randn(4, 6, generator=torch.Generator().manual_seed(1)), torch.randn(4, 6)
M = torch.randn(6, 3)
IDX = torch.tensor([0, 2, 3])

OPS = {
    "add": lambda t: t(A) + t(B),
    "sub_alpha": lambda t: torch.sub(t(A), t(B), alpha=2),
    "mul_cpu_scalar_first": lambda t: torch.tensor(3.0, dtype=A.dtype) * t(A),
    "div": lambda t: t(A) / (t(B).abs() + 1),
    "matmul": lambda t: t(A) @ t(M),
    "bmm": lambda t: torch.bmm(t(A).reshape(2, 2, 6), t(M).expand(2, 6, 3)),
    "sum_dim": lambda t: t(A).sum(1),
    "mean": lambda t: t(A).mean(),
    "amax": lambda t: t(A).amax(0),
    "max_dim": lambda t: t(A).max(1).values,
    "argmin": lambda t: t(A).argmin(1),
    "cumsum": lambda t: t(A).cumsum(1),
    "softmax": lambda t: torch.softmax(t(A), -1),
    "exp_log": lambda t: t(A).exp().log1p(),
    "where": lambda t: torch.where(t(A) > 0, t(A), t(B)),
    "clamp": lambda t: t(A).clamp(-0.5, 0.5),
    "compare": lambda t: t(A) >= t(B),
    "index_cpu_indices": lambda t: t(A)[IDX],
    "index_device_indices": lambda t: t(A)[t(IDX)],
    "boolean_mask": lambda t: t(A)[t(A) > 0],
    "gather": lambda t: t(A).gather(1, t(torch.tensor([[0, 1]] * 4))),
    "cat": lambda t: torch.cat([t(A), t(B)], 1),
    "stack": lambda t: torch.stack([t(A), t(B)]),
    "sort": lambda t: t(A).sort(1).values,
    "topk": lambda t: t(A).topk(2).indices,
    "nonzero": lambda t: torch.nonzero(t(A) > 0),
    "linear": lambda t: torch.nn.functional.linear(t(A), t(M.t())),
    "conv1d": lambda t: torch.nn.functional.conv1d(t(A)[None], t(torch.ones(2, 4, 3))),
    "layer_norm": lambda t: torch.nn.functional.layer_norm(t(A), (6,)),
    "einsum": lambda t: torch.einsum("ij,jk->ik", t(A), t(M)),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_eager_ops_match_cpu_float32(name):
    want = OPS[name](lambda x: x)
    got = OPS[name](on_plate)
    assert got.device.type == "plate"
    # the CPU kernels run, so most ops are bit-exact; a few (layer_norm) take torch's composite
    # decomposition on a non-CPU device and round differently in the last bit
    torch.testing.assert_close(got.cpu(), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", ["add", "mul_cpu_scalar_first", "matmul", "sum_dim", "softmax", "where", "cat"])
def test_eager_ops_match_cpu_low_precision(name, dtype):
    def cast(x):
        return x.to(dtype) if x.is_floating_point() else x

    want = OPS[name](cast)
    if name in ("matmul", "sum_dim", "softmax"):  # accumulate as on CUDA: computed wide, rounded once
        want = OPS[name](lambda x: cast(x).double()).float().to(dtype)
    got = OPS[name](lambda x: cast(x).plate())
    assert got.dtype == want.dtype == dtype
    torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0)


def test_item_and_python_scalars():
    x = torch.tensor([1.5, -2.0], device="plate")
    assert x.sum().item() == -0.5 and x[0].item() == 1.5
    assert torch.tensor(7, device="plate").item() == 7 and bool(torch.tensor(True, device="plate"))


def test_autograd_matches_cpu():
    # plate's eager fp32 products round once (exact accumulation) where the host BLAS rounds per step: the
    # gradients agree to fp32 tolerances, not bit for bit, so compare with assert_close, from a fixed seed
    torch.manual_seed(0)
    lin = torch.nn.Linear(6, 3)
    lin_dev = torch.nn.Linear(6, 3)
    lin_dev.load_state_dict(lin.state_dict())
    lin_dev.plate()
    lin(A).tanh().sum().backward()
    lin_dev(A.plate()).tanh().sum().backward()
    assert lin_dev.weight.grad.device.type == "plate"
    torch.testing.assert_close(lin_dev.weight.grad.cpu(), lin.weight.grad)
    torch.testing.assert_close(lin_dev.bias.grad.cpu(), lin.bias.grad)


class TiedHead(torch.nn.Module):
    """An embedding whose weight is also the output projection's (GPT-2's LM head)."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(11, 4)
        self.head = torch.nn.Linear(4, 11, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, idx):
        return self.head(torch.tanh(self.embed(idx)))


def test_module_to_plate_keeps_tied_weights():
    # Module._apply moves a parameter in place (param.data = moved) only when torch says the two tensor types are
    # shallow-copy compatible; otherwise each module gets a new Parameter and the tie is two copies that train apart
    torch.manual_seed(0)
    cpu = TiedHead()
    dev = TiedHead()
    dev.load_state_dict(cpu.state_dict())
    weight = dev.embed.weight
    dev.to("plate")
    assert dev.embed.weight is weight and dev.head.weight is dev.embed.weight
    assert dev.embed.weight.device.type == "plate" and len(list(dev.parameters())) == 1
    idx, target = torch.tensor([[1, 4, 7], [2, 9, 0]]), torch.tensor([3, 5, 8, 1, 10, 6])
    for model, where in ((cpu, "cpu"), (dev, "plate")):
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        loss = torch.nn.functional.cross_entropy(model(idx.to(where)).view(-1, 11), target.to(where))
        loss.backward()
        opt.step()
    torch.testing.assert_close(dev.embed.weight.detach().cpu(), cpu.embed.weight.detach())
    assert dev.head.weight is dev.embed.weight


def test_shallow_copy_compatibility_is_dense_cpu_and_plate_only():
    dense_cpu, dense_plate = torch.ones(2), torch.ones(2, device="plate")
    assert torch._has_compatible_shallow_copy_type(dense_cpu, dense_plate)
    assert torch._has_compatible_shallow_copy_type(dense_plate, dense_cpu)
    assert torch._has_compatible_shallow_copy_type(dense_plate, dense_plate)
    assert not torch._has_compatible_shallow_copy_type(torch.ones(2).to_sparse(), dense_plate)
    assert not torch._has_compatible_shallow_copy_type(dense_plate, torch.ones(2).to_sparse())


@pytest.mark.parametrize("rnn", [torch.nn.LSTM, torch.nn.GRU])
@pytest.mark.parametrize("bias", [True, False])
def test_rnn_fused_cells_match_cpu(rnn, bias):
    """ATen's LSTM/GRU take the fused-cell ops (CUDA-only kernels) on PrivateUse1: plate serves them."""
    torch.manual_seed(0)
    ref = rnn(4, 3, num_layers=2, batch_first=True, bias=bias)
    dev = rnn(4, 3, num_layers=2, batch_first=True, bias=bias)
    dev.load_state_dict(ref.state_dict())
    dev.plate()
    x = torch.randn(2, 5, 4, requires_grad=True)
    x_dev = x.detach().plate().requires_grad_()
    (out, hidden), (out_dev, hidden_dev) = ref(x), dev(x_dev)
    last, last_dev = (hidden[1], hidden_dev[1]) if rnn is torch.nn.LSTM else (hidden, hidden_dev)
    (out.sum() + last.sum()).backward()
    (out_dev.sum() + last_dev.sum()).backward()
    torch.testing.assert_close(out_dev.cpu(), out)
    torch.testing.assert_close(last_dev.cpu(), last)
    torch.testing.assert_close(x_dev.grad.cpu(), x.grad)
    for (name, p), p_dev in zip(ref.named_parameters(), dev.parameters()):
        torch.testing.assert_close(p_dev.grad.cpu(), p.grad, msg=name)


def test_autocast_casts_like_cuda():
    """Ops under torch.autocast("plate") run (fallthrough) and take CUDA's cast policies."""
    a, b = A.plate(), torch.randn(6, 2).plate()
    with torch.autocast("plate", dtype=torch.bfloat16):
        assert (a @ b).dtype == torch.bfloat16  # lower_precision_fp
        assert torch.softmax(a.half(), 1).dtype == torch.float32  # fp32
        assert (a + 1).dtype == torch.float32  # not listed: falls through unchanged
        emb = torch.nn.functional.embedding(torch.tensor([0, 2], device="plate"), a)
    torch.testing.assert_close(emb.cpu(), A[[0, 2]])


def test_allocation_is_never_traced_by_dynamo():
    """The allocator's Python runtime runs with Dynamo's frame hook off: frames a compiled function runs
    eagerly (a skipped frame, code around a graph break) allocate without Dynamo intercepting (and trying
    to trace) the allocator's frames."""
    from torch._C._dynamo.eval_frame import set_eval_frame
    from torch._dynamo.types import ConvertFrameReturn

    seen = []

    def record(frame, cache_entry, frame_state):
        seen.append(frame.f_code.co_filename)
        return ConvertFrameReturn(apply_to_code=False)  # run it as is; keep intercepting this code

    def allocate():
        return torch.empty(8, device="plate"), torch.ones(3, device="plate") + 1

    prior = set_eval_frame(record)
    try:
        allocate()
    finally:
        set_eval_frame(prior)
    assert __file__ in seen  # the hook was live
    runtime_files = (plate_device.memory.__file__, "triton_plate_backend/sim/")
    assert not [f for f in seen if any(part in f for part in runtime_files)]


# ---- views and in-place ops --------------------------------------------------------------------------
def test_views_share_device_memory():
    x = torch.zeros(4, 6, device="plate")
    x.t()[1].fill_(1.0)  # a view of a view, written in place
    x[2:, ::2] += 5
    x.view(-1)[0] = -1
    want = torch.zeros(4, 6)
    want.t()[1].fill_(1.0)
    want[2:, ::2] += 5
    want.view(-1)[0] = -1
    assert torch.equal(x.cpu(), want)
    assert x.t().data_ptr() == x.data_ptr() and x[1].data_ptr() == x.data_ptr() + 24


@pytest.mark.parametrize(
    "view",
    [
        lambda t: t.unfold(1, 2, 2),
        lambda t: t.diagonal(),
        lambda t: t.expand(3, 4, 6)[1],
        lambda t: t.unsqueeze(0).squeeze(0).permute(1, 0),
        lambda t: t.reshape(2, 12)[:, 3:9],
        lambda t: torch.view_as_real(torch.complex(t, t * 2)),
        lambda t: t.view(torch.int32),
    ],
)
def test_view_ops_match_cpu(view):
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    want, got = view(base), view(base.plate())
    assert got.device.type == "plate" and got.shape == want.shape and got.stride() == want.stride()
    assert torch.equal(got.cpu(), want)


@pytest.mark.parametrize(
    "op",
    [
        lambda t: t.conj().resolve_conj(),
        lambda t: t.conj() * 2,
        lambda t: t.conj().imag + 1,  # the negative bit
        lambda t: t.conj().imag.resolve_neg(),
        lambda t: t.conj().T.clone(),
        lambda t: torch.view_as_real(t.conj().resolve_conj()),
        lambda t: t.clone().conj().copy_(t).resolve_conj(),  # copy into a conj view
    ],
)
def test_conjugate_and_negative_bits_match_cpu(op):
    # copies of conj()/neg views once recursed through the math-bit fallbacks until the stack overflowed
    base = torch.complex(A, B)
    want, got = op(base), op(base.plate())
    assert got.device.type == "plate" and torch.equal(got.cpu().resolve_conj().resolve_neg(), want)
    assert torch.equal(base.plate().conj().cpu(), base.conj())  # device -> host copy of a conj view


def test_in_place_ops_match_cpu():
    def run(t):
        x = t(A.clone())
        x.add_(t(B)).mul_(2).clamp_(max=1.0)
        x.masked_fill_(x < -1, -1.0)
        x.index_put_((IDX,), torch.tensor(9.0))
        x[:, 0].zero_()
        x.unsqueeze_(0).transpose_(1, 2)  # in-place metadata changes
        return x

    want, got = run(lambda x: x), run(on_plate)
    assert got.shape == want.shape and got.stride() == want.stride() and torch.equal(got.cpu(), want)


def test_out_argument_is_resized_on_device():
    out = torch.empty(0, device="plate")
    res = torch.add(A.plate(), B.plate(), out=out)
    assert res is out and out.shape == (4, 6) and torch.equal(out.cpu(), A + B)


def test_resized_out_argument_takes_the_inputs_layout():
    # TensorIterator gives a resized out= the inputs' layout on every device; aten.complex relies on it
    a = torch.arange(15.0).reshape(5, 3).permute(1, 0)
    got = torch.complex(a.plate(), a.plate())
    assert got.stride() == torch.complex(a, a).stride() == (1, 3) and torch.equal(got.cpu(), torch.complex(a, a))
    out = torch.empty(5, 6, device="plate")[:, ::2].t()  # the right size already: its own strides stay
    torch.add(a.plate(), 1, out=out)
    assert out.stride() == (2, 6) and torch.equal(out.cpu(), a + 1)


def test_storage_and_tensor_resize():
    x = torch.arange(4.0, device="plate")
    x.resize_(8)
    assert x.shape == (8,) and x[:4].tolist() == [0.0, 1.0, 2.0, 3.0]
    x.untyped_storage().resize_(64)
    assert x.untyped_storage().nbytes() == 64 and x[:4].tolist() == [0.0, 1.0, 2.0, 3.0]


# ---- memory accounting -------------------------------------------------------------------------------
def test_memory_allocated_rises_and_returns():
    before = torch.plate.memory_allocated()
    x = torch.empty(1000, device="plate")
    assert torch.plate.memory_allocated() == before + 4000
    assert torch.accelerator.memory_allocated() == before + 4000
    assert get_device().memory.memory_allocated() >= 4000
    del x
    assert torch.plate.memory_allocated() == before


def test_max_memory_allocated_and_reset():
    torch.plate.reset_peak_memory_stats()
    base = torch.plate.memory_allocated()
    assert torch.plate.max_memory_allocated() == base
    x = torch.empty(2048, device="plate")
    del x
    assert torch.plate.max_memory_allocated() == base + 8192
    stats = torch.plate.memory_stats()
    assert stats["allocated_bytes.all.peak"] == base + 8192 and "device.allocated_bytes_by_domain" in stats
    torch.plate.reset_peak_memory_stats()
    assert torch.plate.max_memory_allocated() == base
    free, total = torch.plate.mem_get_info()
    assert 0 < free <= total == get_device().memory.capacity.sum()


# ---- placement ---------------------------------------------------------------------------------------
def test_default_placement_interleaves_over_domains():
    machine = get_device().machine
    stripe = machine.domain.stripe_bytes
    x = torch.empty(machine.domains * stripe // 4, device="plate")
    assert torch.plate.home_domains(x) == {d: stripe for d in range(machine.domains)}


@pytest.mark.parametrize(
    "kwargs, expect",
    [
        ({"mode": "local", "domain": 2}, {2: 16384}),
        ({"mode": "explicit", "domain": 1}, {1: 16384}),
        ({"mode": "blocked", "domains": (3, 1)}, {3: 8192, 1: 8192}),
        ({"mode": "interleaved", "domains": (0, 2)}, {0: 8192, 2: 8192}),
    ],
)
def test_placement_sets_home_domains(kwargs, expect):
    with torch.plate.placement(**kwargs):
        x = torch.empty(4096, device="plate")
        y = x * 2  # also made inside: same placement
    z = torch.empty(4096, device="plate")  # made after: the default again
    assert torch.plate.home_domains(x) == expect and torch.plate.home_domains(y) == expect
    assert len(torch.plate.home_domains(z)) == get_device().machine.domains


def test_home_domains_of_a_view_counts_its_span():
    with torch.plate.placement("blocked"):
        x = torch.empty(4 * 1024, device="plate")  # 4 chunks of 4 KiB
    assert torch.plate.home_domains(x[:256]) == {0: 1024}
    assert torch.plate.home_domains(x[1024 + 512 : 2048 + 512]) == {1: 2048, 2: 2048}


def test_placement_errors():
    with pytest.raises(AllocationError, match="does not exist"):
        with torch.plate.placement("local", domain=99):
            pass
    with pytest.raises(AllocationError, match="not one of"):
        with torch.plate.placement("scattered"):
            pass
    with pytest.raises(DeviceError, match="not a plate device"):
        torch.plate.home_domains(torch.ones(2))


# ---- errors ------------------------------------------------------------------------------------------
def test_out_of_memory_names_size_and_capacity(frozen_heap):  # each failed allocation collects garbage
    assert torch.cuda.OutOfMemoryError is torch.OutOfMemoryError
    machine = get_device().machine
    capacity = machine.domain.hbm_bytes
    too_big = capacity * machine.total_domains + 4096
    before = torch.plate.memory_stats()["num_ooms"]
    with pytest.raises(torch.OutOfMemoryError) as err:
        torch.empty(too_big, dtype=torch.uint8, device="plate")
    assert f"allocating {too_big} bytes" in str(err.value) and f"of {capacity} bytes" in str(err.value)
    assert torch.plate.memory_stats()["num_ooms"] == before + 1
    with pytest.raises(torch.OutOfMemoryError, match="domain 3"):
        with torch.plate.placement("local", domain=3):
            torch.empty(capacity + 1, dtype=torch.uint8, device="plate")


def test_mixed_devices_are_refused():
    x = torch.ones(3, device="plate")
    for op in (lambda: torch.add(x, torch.ones(3)), lambda: torch.ones(3) * x, lambda: x @ torch.ones(3)):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            op()
    assert torch.equal((x + torch.tensor(2.0)).cpu(), torch.full((3,), 3.0))  # a CPU scalar is fine


def test_bad_device_index():
    with pytest.raises(DeviceError, match="expected a plate device"):
        torch.plate.synchronize("cpu")
    with pytest.raises(RuntimeError, match="no device plate:5"):
        torch.empty(2, device="plate:5")
    with pytest.raises(RuntimeError, match="no device plate:3"):
        torch.plate.set_device(3)


# ---- random numbers ----------------------------------------------------------------------------------
def test_manual_seed_reproduces_on_plate():
    torch.plate.manual_seed(1234)
    first = torch.randn(100, device="plate")
    torch.plate.manual_seed(1234)
    second = torch.randn(100, device="plate")
    assert torch.equal(first.cpu(), second.cpu())
    assert torch.plate.initial_seed() == 1234
    torch.plate.manual_seed(99)
    assert not torch.equal(torch.randn(100, device="plate").cpu(), first.cpu())
    torch.manual_seed(1234)  # seeds plate too (torch seeds every registered device)
    assert torch.equal(torch.randn(100, device="plate").cpu(), first.cpu())
    torch.manual_seed(1234)
    assert not torch.equal(torch.randn(100), first.cpu())  # plate's Philox stream, not the CPU's (as on CUDA)


def test_generators_and_rng_state():
    gen = torch.Generator(device="plate").manual_seed(5)
    assert gen.device.type == "plate"
    a = torch.rand(10, device="plate", generator=gen)
    state = torch.plate.get_rng_state()
    b = torch.rand(10, device="plate")
    torch.plate.set_rng_state(state)
    assert torch.equal(torch.rand(10, device="plate").cpu(), b.cpu())
    again = torch.rand(10, device="plate", generator=torch.Generator(device="plate").manual_seed(5))
    assert torch.equal(again.cpu(), a.cpu())  # a generator's seed reproduces its numbers


def test_generator_state_is_cudas_seed_and_offset():
    """Libraries read and write the state as CUDA's (FlagGems: ``seed, offset = state.view(torch.int64)``)."""
    gens = torch.plate.default_generators  # torch.cuda.default_generators: one per device
    assert len(gens) == torch.plate.device_count() and gens[0] is torch.plate.default_generator(0)
    gens[0].manual_seed(1234)
    torch.rand(100, device="plate")
    state = gens[0].get_state()
    assert state.dtype == torch.uint8 and state.numel() == 16
    seed, offset = state.view(torch.int64).tolist()
    assert seed == 1234 and offset == gens[0].get_offset() > 0
    b = torch.rand(10, device="plate")
    moved = state.clone()
    moved.view(torch.int64)[1] = offset + 4  # a library reserving counters moves the offset on
    gens[0].set_state(moved)
    assert gens[0].get_offset() == offset + 4
    gens[0].set_state(state)
    assert torch.equal(torch.rand(10, device="plate").cpu(), b.cpu())
    with pytest.raises(RuntimeError, match="16 bytes"):
        gens[0].set_state(torch.zeros(8, dtype=torch.uint8))


def test_host_random_draws_reproduce_from_the_state():
    """A random op without a plate kernel draws on the host from (seed, offset) and moves the offset on."""
    torch.plate.manual_seed(7)
    state = torch.plate.get_rng_state()
    with torch.plate.host_op_scope() as ops:
        a = torch.empty(64, device="plate").cauchy_()
    torch.plate.set_rng_state(state)
    b = torch.empty(64, device="plate").cauchy_()
    assert torch.equal(a.cpu(), b.cpu()) and sum(ops.values()) >= 1  # it did run on the host
    assert not torch.equal(torch.empty(64, device="plate").cauchy_().cpu(), a.cpu())  # the offset moved


def test_backends_module_is_registered():
    """torch.backends.plate, as torch.backends.cuda: libraries import torch.backends.<device> by name."""
    import importlib

    module = importlib.import_module("torch.backends.plate")
    assert module is torch.backends.plate and module.is_built() and module.is_available()


# ---- streams and events ------------------------------------------------------------------------------
def test_event_elapsed_time_reads_the_modeled_clock():
    start, end = torch.plate.Event(enable_timing=True), torch.plate.Event(enable_timing=True)
    start.record()
    get_device().clock_ns += 2.5e6  # what a 2.5 ms modeled launch does to the device clock
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) == pytest.approx(2.5)
    assert start.query() and end.elapsed_time(end) == 0.0
    plain = torch.Event(device="plate", enable_timing=True)
    plain.record()
    assert start.elapsed_time(plain) >= 0  # a torch.Event on plate mixes with plate Events
    with pytest.raises(RuntimeError, match="enable_timing"):
        untimed = torch.plate.Event()
        untimed.record()
        untimed.elapsed_time(end)


def test_streams():
    default = torch.plate.current_stream()
    assert isinstance(default, torch.Stream) and default.device.type == "plate" and default.stream_id == 0
    side = torch.plate.Stream()
    assert side != default and side.query()
    with torch.plate.stream(side):
        assert torch.plate.current_stream() == side
        event = side.record_event()
    assert torch.plate.current_stream() == default and event.query()
    side.synchronize()
    torch.plate.synchronize()


# ---- device API --------------------------------------------------------------------------------------
def test_device_api():
    with torch.plate.device(0):
        assert torch.plate.current_device() == 0
    props = torch.plate.get_device_properties(0)
    machine = get_device().machine
    assert props.multi_processor_count == machine.total_cores and props.domains == machine.total_domains
    assert torch.plate.get_device_name() == f"PLATE {machine.name}"
    assert torch.plate.last_profile() is get_device().last_profile
    assert not torch.plate._is_in_bad_fork() and torch.plate.is_bf16_supported()


# ---- threads -----------------------------------------------------------------------------------------
def test_threads_allocate_concurrently():
    before = torch.plate.memory_allocated()
    errors, results = [], {}

    def work(i):
        try:
            with torch.plate.placement("local", domain=i % 4):
                acc = torch.zeros(32, 32, device="plate")
                for k in range(20):
                    t = torch.full((32, 32), float(i + k), device="plate")
                    acc += t @ torch.eye(32, device="plate")
                results[i] = (acc.sum().item(), torch.plate.home_domains(acc))
        except Exception as err:  # collected: a thread's failure must fail the test
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(4):
        assert results[i] == (32 * 32 * sum(i + k for k in range(20)), {i % 4: 4096})
    assert torch.plate.memory_allocated() == before


# ---- Triton on plate tensors -------------------------------------------------------------------------
def test_triton_kernel_runs_on_plate_tensors_and_advances_the_modeled_clock():
    import triton
    import triton.language as tl

    @triton.jit
    def double(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    x = torch.arange(300.0, device="plate")
    start, end = torch.plate.Event(enable_timing=True), torch.plate.Event(enable_timing=True)
    start.record()
    double[(3,)](x, 300, BLOCK=128)  # the kernel reads and writes the tensor's device memory
    end.record()
    assert torch.equal(x.cpu(), torch.arange(300.0) * 2)
    profile = torch.plate.last_profile()
    assert profile is not None and profile.time_ns > 0
    assert start.elapsed_time(end) == pytest.approx(profile.time_ns / 1e6)


def test_pinned_cpu_tensors_are_kernel_arguments_as_on_cuda():
    """pin_memory=True and Tensor.pin_memory() give CPU tensors a plate kernel reads and writes, as CUDA's
    mapped pinned memory; an unpinned CPU tensor is still refused (ValueError, as CUDA's launcher)."""
    import triton
    import triton.language as tl

    @triton.jit
    def double(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    x = torch.arange(300.0, pin_memory=True)
    assert x.device.type == "cpu" and x.is_pinned() and x[100:].is_pinned()  # a view's interior address too
    double[(3,)](x, 300, BLOCK=128)
    assert torch.equal(x, torch.arange(300.0) * 2)
    y = torch.arange(64.0).pin_memory()
    double[(1,)](y[32:], 32, BLOCK=32)  # a view: the kernel sees its storage, writes only the view's half
    assert torch.equal(y, torch.cat([torch.arange(32.0), torch.arange(32.0, 64.0) * 2]))
    before = torch.plate.memory_allocated()
    assert torch.ones(3, device="plate").copy_(torch.ones(3, pin_memory=True)).sum().item() == 3
    assert torch.plate.memory_allocated() == before  # pinned bytes are host memory, not the device's
    plain = torch.ones(8)
    assert not plain.is_pinned()
    with pytest.raises(ValueError, match=r"cannot be accessed from Triton \(cpu tensor\?\).*pin_memory=True"):
        double[(1,)](plain, 8, BLOCK=8)


# ---- host ops: what the CPU fallback ran on the host --------------------------------------------------------
def test_eager_host_ops_are_counted_and_named():
    a, b = on_plate(torch.randn(8, 8)), on_plate(torch.randn(8, 8))
    torch.plate.reset_host_ops()
    c = a @ b  # mm is a plate kernel (eager_ops/matmul.py), ldl_factor, rfft and eig are not
    torch.linalg.ldl_factor(c + c.mT)
    torch.fft.rfft(c)
    torch.linalg.eig(c)
    counts = torch.plate.host_ops()
    assert counts["aten.linalg_ldl_factor_ex"] == 1 and counts["aten._fft_r2c"] == 1 and counts["aten.linalg_eig"] == 1
    assert "aten.mm" not in counts
    torch.plate.reset_host_ops()
    assert torch.plate.host_ops() == {}


def test_ops_with_plate_kernels_are_not_host_ops():
    torch.plate.reset_host_ops()
    x = torch.empty(4, 4, device="plate")
    x.copy_(torch.ones(4, 4))
    x.view(2, 8)
    x.relu()  # an eager kernel of plate's (triton_plate_backend/eager_ops)
    assert torch.plate.host_ops() == {}


def test_a_host_op_scope_counts_only_its_own_thread():
    x = on_plate(torch.randn(16))
    seen = {}

    def other():
        with torch.plate.host_op_scope() as ops:
            torch.linalg.eig(x.view(4, 4))
        seen.update(ops)

    with torch.plate.host_op_scope() as outer:
        torch.fft.rfft(x)
        with torch.plate.host_op_scope() as inner:
            torch.linalg.ldl_factor(x.view(4, 4))
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
    assert inner == {"aten.linalg_ldl_factor_ex": 1}
    assert outer == {"aten._fft_r2c": 1, "aten.linalg_ldl_factor_ex": 1}  # the inner scope's ops count here too
    assert seen == {"aten.linalg_eig": 1}


def test_a_scope_left_open_by_an_error_closes_with_its_parent():
    x = on_plate(torch.randn(4))
    token = plate_device.host_op_counter.enter_scope()
    plate_device.host_op_counter.enter_scope()  # never exited, as after an exception
    torch.linalg.eig(x.view(2, 2))
    assert plate_device.host_op_counter.exit_scope(token) == {"aten.linalg_eig": 1}
    with torch.plate.host_op_scope() as ops:
        torch.fft.rfft(x)
    assert ops == {"aten._fft_r2c": 1}
