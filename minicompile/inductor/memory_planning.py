"""Memory planning: when each stored buffer lives, which dead buffer's storage a new one can
take over, and the peak memory of a schedule (mirrors the buffer reuse of
torch/_inductor/codegen/wrapper.py's ``AllocateLine``/``FreeIfNotReusedLine``/``ReuseLine``, and
torch/_inductor/memory.py's peak-memory estimate).

Walking the kernels in order, a buffer is allocated by the kernel that stores it and dies after
the last kernel that reads it (the caller keeps outputs alive). A new buffer takes over the
storage of a dead one with the same device, dtype and size instead of allocating (the reuse rule
of Inductor's wrapper): fewer allocator calls, the same peak. The wrapper program turns the
plan into lines: ``empty(...)``, ``buf5 = buf2; del buf2  # reuse``, ``del buf3``. Buffers that fusion keeps inside a kernel never appear:
that is fusion's memory win, next to its bandwidth win.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Hashable

import sympy

from . import kernel_graph

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
    """Lifetimes, reuse and peak memory of ``scheduler.kernels``: the plan the wrapper writes as
    allocate / reuse / free lines (``codegen/wrapper.py``).

    With symbolic sizes, reuse is decided on the SymPy size (two buffers of ``s0 * 4`` floats
    share storage for every ``s0``), and the bytes and peak are reported at the traced sizes.
    A library call allocates its own output, so only loop kernels' buffers take over storage.
    """
    kernels = scheduler.kernels
    plan = MemoryPlan()
    lifetime: dict[str, BufferLifetime] = {}
    hints = getattr(scheduler.graph, "size_hints", {})
    for i, k in enumerate(kernels):
        for name in scheduler.stored_buffers(k):
            layout = getattr(scheduler.buffers[name], "layout", None)
            if layout is None:
                continue  # a tuple-returning extern kernel: its MultiOutputs hold the data
            if scheduler.buffers[name].get_mutation_names():
                continue  # written into an input in place: its storage is the caller's
            nbytes = sympy.sympify(layout.storage_size() * scheduler.itemsize(name)).subs(hints)
            # a size no input had when traced (a SymInt argument): counted as 0 in the report
            lifetime[name] = BufferLifetime(name, int(nbytes) if nbytes.is_number else 0, i, i, name,
                                            name in scheduler.output_names)
        for name in k.read_names():
            if name in lifetime:
                lifetime[name].last = max(lifetime[name].last, i)
    for b in lifetime.values():
        if b.is_output:
            b.last = len(kernels)

    writer_of = kernel_graph.writers(kernels)

    def reuse_key(name: str) -> Hashable:
        if writer_of[name].is_extern():
            return ("allocated by its library call", name)  # never shares storage
        layout = scheduler.buffers[name].layout
        return (str(layout.device), layout.dtype, sympy.expand(layout.storage_size()))

    names = [k.get_name() for k in kernels]
    plan.timeline, plan.peak_bytes = assign_storage(list(lifetime.values()), names, reuse_key)
    plan.lifetimes = sorted(lifetime.values(), key=lambda b: b.first)
    return plan


def assign_storage(lifetimes: list[BufferLifetime], steps: list[str],
                   reuse_key: Callable[[str], Hashable]) -> tuple[list[tuple[str, int]], int]:
    """Walk the steps; give each new buffer the storage of a dead buffer with the same
    ``reuse_key`` when one is free (no allocator call), else a fresh allocation. Sets
    ``storage`` on each lifetime; returns the timeline (step, bytes of live buffers while it
    runs) and the peak. Reuse saves allocations, not peak: live bytes count buffers, not pools."""
    free: dict[Hashable, list[str]] = {}  # reuse key -> storages of dead buffers
    live, peak, timeline = 0, 0, []
    for i, step in enumerate(steps):
        for b in (b for b in lifetimes if b.first == i):
            pool = free.get(reuse_key(b.name))
            b.storage = pool.pop() if pool else b.name
            live += b.nbytes
        timeline.append((step, live))
        peak = max(peak, live)
        for b in (b for b in lifetimes if b.last == i and not b.is_output):
            free.setdefault(reuse_key(b.name), []).append(b.storage)
            live -= b.nbytes
    return timeline, peak
