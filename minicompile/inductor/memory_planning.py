"""Memory planning: when each stored buffer lives, which dead buffer's storage a new one can
take over, and the peak memory of a schedule (mirrors the buffer reuse of
torch/_inductor/codegen/wrapper.py's ``AllocateLine``/``FreeIfNotReusedLine``/``ReuseLine``, and
torch/_inductor/memory.py's peak-memory estimate).

Walking the kernels in order, a buffer is allocated by the kernel that stores it and dies after
the last kernel that reads it (the caller keeps outputs alive). A new buffer takes over the
storage of a dead one with the same device, dtype and number of elements, instead of allocating
(the reuse rule of Inductor's wrapper). Buffers that fusion keeps inside a kernel never appear:
that is fusion's memory win, next to its bandwidth win.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .scheduler import Scheduler


@dataclass
class BufferLifetime:
    name: str
    nbytes: int
    first: int  # index of the kernel that stores it
    last: int  # index of the last kernel that reads it (len(kernels) for outputs)
    storage: str  # the buffer whose allocation it lives in (itself unless reused)
    is_output: bool = False


@dataclass
class MemoryPlan:
    lifetimes: list[BufferLifetime] = field(default_factory=list)
    timeline: list[tuple[str, int]] = field(default_factory=list)  # (kernel, live bytes during it)
    peak_bytes: int = 0

    @property
    def reuses(self) -> list[tuple[str, str]]:
        """(buffer, the dead buffer whose storage it takes over)."""
        return [(b.name, b.storage) for b in self.lifetimes if b.storage != b.name]

    def __str__(self) -> str:
        lines = [f"peak memory: {self.peak_bytes} bytes (buffers the compiled graph allocates)"]
        for b in self.lifetimes:
            reuse = f"  reuses {b.storage}" if b.storage != b.name else ""
            end = "returned" if b.is_output else f"freed after kernel {b.last}"
            lines.append(f"  {b.name}: {b.nbytes} B, stored by kernel {b.first}, {end}{reuse}")
        return "\n".join(lines)


def plan_memory(scheduler: "Scheduler") -> MemoryPlan:
    """Lifetimes, reuse and peak memory of ``scheduler.kernels`` (concrete sizes only)."""
    kernels = scheduler.kernels
    plan = MemoryPlan()
    lifetime: dict[str, BufferLifetime] = {}
    for i, k in enumerate(kernels):
        for name in scheduler.stored_buffers(k):
            buf = scheduler.buffers[name]
            if getattr(buf, "layout", None) is None:
                continue  # a tuple-returning extern kernel: its MultiOutputs hold the data
            numel = scheduler.numel(name)
            if not numel.is_number:
                raise ValueError(f"{name} has symbolic size {numel}: plan memory for given sizes")
            lifetime[name] = BufferLifetime(name, int(numel) * scheduler.itemsize(name), i, i,
                                            name, name in scheduler.output_names)
        for name in k.read_names():
            if name in lifetime:
                lifetime[name].last = max(lifetime[name].last, i)
    for b in lifetime.values():
        if b.is_output:
            b.last = len(kernels)

    free: dict[tuple, list[str]] = {}  # reuse key -> storages of dead buffers
    storage_bytes: dict[str, int] = {}
    live = 0
    for i, k in enumerate(kernels):
        for b in (b for b in lifetime.values() if b.first == i):
            buf = scheduler.buffers[b.name]
            key = (buf.get_device(), buf.get_dtype(), b.nbytes)
            if free.get(key):
                b.storage = free[key].pop()  # take over a dead buffer's storage: no allocation
            else:
                storage_bytes[b.name] = b.nbytes
                live += b.nbytes
        plan.timeline.append((k.get_name(), live))
        plan.peak_bytes = max(plan.peak_bytes, live)
        for b in (b for b in lifetime.values() if b.last == i and not b.is_output):
            buf = scheduler.buffers[b.name]
            free.setdefault((buf.get_device(), buf.get_dtype(), b.nbytes), []).append(b.storage)
    plan.lifetimes = sorted(lifetime.values(), key=lambda b: b.first)
    return plan
