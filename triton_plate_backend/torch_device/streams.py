"""Streams and events of the plate device: subclasses of torch.Stream / torch.Event.

A launch on the simulator runs to completion before it returns, so every stream is an in-order
queue that is always drained: waits and synchronizes return at once, and streams only name where
work would go. Events record the device's MODELED clock (csrc/guard.cpp), so
``start.elapsed_time(end)`` is modeled milliseconds, the time Triton's do_bench reports.
"""

from __future__ import annotations

import torch

from ..sim.device import DeviceError
from . import _registration
from .devices import current_device, device_index


class Stream(torch.Stream):
    """torch.plate.Stream(device=None, priority=0): a new stream on a plate device."""

    def __new__(cls, device=None, priority: int = 0, **kwargs):
        if "stream_id" in kwargs:  # rebuilding an existing stream: (stream_id, device_index, device_type)
            return super().__new__(cls, priority=priority, **kwargs)
        return super().__new__(cls, torch.device(_registration.BACKEND, device_index(device)), priority=priority)

    def record_event(self, event: torch.Event | None = None) -> torch.Event:
        # torch.Stream.record_event accepts only exact torch.Event objects, not this module's subclass
        event = Event() if event is None else event
        event.record(self)
        return event


class Event(torch.Event):
    """torch.plate.Event(enable_timing=False, blocking=False, interprocess=False) on the current device."""

    def __new__(cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        return super().__new__(
            cls,
            torch.device(_registration.BACKEND, current_device()),
            enable_timing=enable_timing,
            blocking=blocking,
            interprocess=interprocess,
        )

    def elapsed_time(self, end_event: torch.Event) -> float:
        """Modeled milliseconds from this event to ``end_event`` (both recorded, both enable_timing=True).

        torch.Event.elapsed_time accepts only exact torch.Event objects; this one reads the plate
        events themselves, so plate Events and plain torch.Events on plate mix."""
        for event in (self, end_event):
            if not isinstance(event, torch.Event) or event.device.type != _registration.BACKEND:
                raise DeviceError(f"elapsed_time: expected two events of a plate device, got {event!r}")
        return _registration.extension()._elapsed_time(self.event_id, end_event.event_id)


def _stream(stream_id: int, index: int, device_type: int) -> Stream:
    return Stream(stream_id=stream_id, device_index=index, device_type=device_type)


def current_stream(device=None) -> Stream:
    return _stream(*_registration.extension()._current_stream(device_index(device)))


def default_stream(device=None) -> Stream:
    _, index, device_type = _registration.extension()._current_stream(device_index(device))
    return _stream(0, index, device_type)


def set_stream(stream: torch.Stream) -> None:
    if stream is None:
        return
    _registration.extension()._set_stream(stream.stream_id, stream.device_index)


class StreamContext:
    """Makes ``stream`` current inside the block (None: no change), like torch.cuda.StreamContext."""

    def __init__(self, stream: torch.Stream | None):
        self.stream = stream
        self.previous = None

    def __enter__(self):
        if self.stream is not None:
            self.previous = current_stream(self.stream.device_index)
            set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc):
        if self.previous is not None:
            set_stream(self.previous)
        return False


def stream(stream: torch.Stream | None) -> StreamContext:
    return StreamContext(stream)
