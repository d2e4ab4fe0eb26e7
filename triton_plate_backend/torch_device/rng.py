"""Random number generators of the plate device, as in torch.cuda.

Each device has one default generator (csrc/hooks.cpp): a Philox (seed, offset) pair, as CUDA's.
plate's random kernels (triton_plate_backend/eager_ops: random_, uniform_, normal_, bernoulli_,
exponential_, native_dropout) draw counters offset, offset + 1, ... under the seed and move the offset
past them, so a seed reproduces on plate and the numbers differ from the CPU's, as CUDA's do. Random
ops without a plate kernel run on the host (counted) and draw from a CPU generator seeded from the
(seed, offset) pair, moving the offset on. The state of get_rng_state/set_rng_state is CUDA's: the seed and
the offset, two int64 in 16 bytes of torch.uint8, which libraries read and write as on CUDA (FlagGems:
``seed, offset = state.view(torch.int64)``).
"""

from __future__ import annotations

import torch

from . import _registration
from .devices import device_count, device_index

_generators: dict[int, torch.Generator] = {}


def default_generator(device=None) -> torch.Generator:
    """The default torch.Generator of a plate device (one Python object per device)."""
    index = device_index(device)
    gen = _generators.get(index)
    if gen is None:
        gen = _generators[index] = _registration.extension()._default_generator(index)
    return gen


def default_generators() -> tuple[torch.Generator, ...]:
    """Every device's default generator, by index (``torch.plate.default_generators``, as torch.cuda's)."""
    return tuple(default_generator(index) for index in range(device_count()))


def manual_seed(seed: int) -> None:
    """Seed the current plate device's generator."""
    default_generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for index in range(device_count()):
        default_generator(index).manual_seed(int(seed))


def seed() -> None:
    """Seed the current device's generator with a nondeterministic number."""
    default_generator().seed()


def seed_all() -> None:
    for index in range(device_count()):
        default_generator(index).seed()


def initial_seed() -> int:
    return default_generator().initial_seed()


def get_rng_state(device="plate") -> torch.Tensor:
    return default_generator(device).get_state()


def set_rng_state(new_state: torch.Tensor, device="plate") -> None:
    default_generator(device).set_state(new_state)


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(index) for index in range(device_count())]


def set_rng_state_all(new_states) -> None:
    for index, state in enumerate(new_states):
        set_rng_state(state, index)
