"""Memory planning: when each stored buffer lives, which dead buffer's storage a new one can
take over, and the peak memory of a schedule (mirrors the buffer reuse of
torch/_inductor/codegen/wrapper.py's ``AllocateLine``/``FreeIfNotReusedLine``/``ReuseLine``, and
torch/_inductor/memory.py's peak-memory estimate).

Walking the kernels in order, a buffer is allocated by the kernel that stores it and dies after
the last kernel that reads it (the caller keeps outputs alive). A new buffer takes over the
storage of a dead one with the same device, dtype and size instead of allocating (the reuse rule
of Inductor's wrapper): fewer allocator calls, the same peak. A pointwise kernel whose input
dies in it, read only at the element each point writes, writes its output into that input's
storage (in place: Inductor's ``can_inplace``; a matrix product's epilogue overwrites the
product). The wrapper program turns the plan into lines: ``empty(...)``, ``buf5 = buf2; del
buf2  # reuse``, ``buf6 = buf0  # in place``, ``del buf3``. Buffers that fusion keeps inside a
kernel never appear: that is fusion's memory win, next to its bandwidth win.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Hashable

import sympy

from . import kernel_graph
from .dependencies import rows_line_up
from .ir.extern import MultiOutput
from .ir.mutation import storage_owner
from .ir.read_writes import MemoryDep
from .lowerings.extern import FRESH_RESULTS

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
    in_place_of: str | None = None  # the input of its kernel whose storage it overwrites


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

    def owner(name: str) -> str:  # (a scatter's destination: lowerings/scatter.py)
        return storage_owner(scheduler.buffers, name) if name in scheduler.buffers else name
    for i, k in enumerate(kernels):
        for name in scheduler.stored_buffers(k):
            layout = getattr(scheduler.buffers[name], "layout", None)
            if layout is None:
                continue  # a tuple-returning extern kernel: its MultiOutputs hold the data
            if scheduler.buffers[name].get_mutation_names():
                continue  # written into another buffer in place: that buffer's storage
            nbytes = sympy.sympify(layout.storage_size() * scheduler.itemsize(name)).subs(hints)
            # a size no input had when traced (a SymInt argument): counted as 0 in the report
            lifetime[name] = BufferLifetime(name, int(nbytes) if nbytes.is_number else 0, i, i, name,
                                            name in scheduler.output_names)
        for name in map(owner, k.read_names()):  # (reading a value written in place reads
            if name in lifetime:                     # the storage of the buffer it went into)
                lifetime[name].last = max(lifetime[name].last, i)
    for name in map(owner, scheduler.output_names):
        if name in lifetime:
            lifetime[name].is_output = True
    for b in lifetime.values():
        if b.is_output:
            b.last = len(kernels)
    _alive_while_views_are(scheduler, kernels, lifetime, owner)

    writer_of = kernel_graph.writers(kernels)

    def reuse_key(name: str) -> Hashable:
        if writer_of[name].is_extern():
            return ("allocated by its library call", name)  # never shares storage
        return storage_key(scheduler.buffers[name].layout)

    names = [k.get_name() for k in kernels]
    # a buffer written in place continues its donor's storage: for assign_storage, one lifetime
    in_place = in_place_writes(scheduler, kernels, lifetime, writer_of)
    ends = {name: (b.last, b.is_output) for name, b in lifetime.items()}
    root: dict[str, str] = {}
    for name, donor in in_place.items():  # in kernel order: a chain ends at its first donor
        root[name] = root.get(donor, donor)
        lifetime[root[name]].last, lifetime[root[name]].is_output = ends[name]
    plan.timeline, plan.peak_bytes = assign_storage(
        [b for name, b in lifetime.items() if name not in in_place], names, reuse_key)
    for name, b in lifetime.items():
        b.last, b.is_output = ends[name]
        if name in in_place:
            b.storage, b.in_place_of = lifetime[root[name]].storage, in_place[name]
    plan.lifetimes = sorted(lifetime.values(), key=lambda b: b.first)
    return plan


def returns_a_view(node) -> bool:
    """May this library call's result share memory with a tensor it read? ATen's schema says:
    ``view_as_complex(Tensor(a) self) -> Tensor(a)``, ``_conj``, ``select``... return a view; a
    product or a convolution's backward returns fresh tensors. A call with no schema: maybe."""
    if isinstance(node, MultiOutput):  # an item of the tuple its parent returned
        return returns_a_view(node.parent)
    schema = getattr(getattr(node, "kernel", None), "_schema", None)
    return schema is None or any(r.alias_info is not None for r in schema.returns)


def _alive_while_views_are(scheduler: "Scheduler", kernels: list,
                           lifetime: dict[str, BufferLifetime], owner: Callable) -> None:
    """A buffer read by a library call whose result may be a view of it lives as long as that
    result (through a chain of such calls, as long as the last one's): its last reader is not
    the end of its memory, and its storage must be neither taken over by a later buffer nor
    overwritten in place while the view is read (a ``view_as_complex`` of a kernel's output,
    the output's storage then reused by the next kernel: a wrong gradient)."""
    end = {name: b.last for name, b in lifetime.items()}
    for k in reversed(kernels):  # (a later view's end is final before an earlier one's)
        if not k.is_extern() or not returns_a_view(k.node):
            continue
        results = [end[n] for n in scheduler.stored_buffers(k) if n in end]
        if results:
            for name in map(owner, k.read_names()):
                end[name] = max(end.get(name, -1), *results)
    for name, b in lifetime.items():
        b.last = end[name]


def storage_key(layout) -> Hashable:
    """Two buffers with equal keys can live in the same storage: device, dtype, storage size."""
    return (str(layout.device), layout.dtype, sympy.expand(layout.storage_size()))


def in_place_writes(scheduler: "Scheduler", kernels: list, lifetime: dict[str, BufferLifetime],
                    writer_of: dict) -> dict[str, str]:
    """``{buffer: donor}``: buffers a pointwise kernel writes into the storage of one of its
    inputs (``_can_donate`` says when)."""
    out: dict[str, str] = {}
    for i, k in enumerate(kernels):
        if k.is_extern() or k.is_reduction() or any(
                m.node.get_mutation_names() for m in k.get_nodes()):
            continue
        for name in scheduler.stored_buffers(k):
            if name in lifetime and lifetime[name].first == i:
                donor = next((d for d in sorted(k.read_names()) if d not in out.values()
                              and _can_donate(scheduler, k, i, d, name, lifetime, writer_of)),
                             None)
                if donor is not None:
                    out[name] = donor
    return out


def _can_donate(scheduler: "Scheduler", k, i: int, donor: str, name: str,
                lifetime: dict[str, BufferLifetime], writer_of: dict) -> bool:
    """May ``name``, stored by pointwise kernel ``k`` (number ``i``), overwrite ``donor``? When
    the donor is a buffer of this graph (not the caller's input, not an output, not the result
    of a library call that might be a view of its input: ``FRESH_RESULTS``) whose last reader
    is ``k``, of the same device, dtype and storage size, and every load of it in ``k``
    is of the element the same point stores (``rows_line_up`` with one row per point) and
    comes first: in a member before the one storing ``name``, or in that member (whose body
    loads before it stores). Each point then reads its element before overwriting it, and no
    other point reads it. A kernel over rows (a reduction) reads its rows in several loops:
    never in place."""
    d, writer = lifetime.get(donor), writer_of.get(donor)
    if d is None or d.last != i or d.is_output or writer is None or \
            (writer.is_extern() and getattr(writer.node, "kernel", None) not in FRESH_RESULTS):
        return False
    if storage_key(scheduler.buffers[donor].layout) != storage_key(scheduler.buffers[name].layout):
        return False
    members = k.get_nodes()
    [storer] = [m for m in members if m.get_name() == name]
    writes = storer.read_writes.writes
    if len(writes) != 1 or not isinstance(writes[0], MemoryDep):
        return False
    [write] = writes
    points = sympy.Mul(*[size for _, size in write.var_ranges])
    for position, m in enumerate(members):
        for dep in m.read_writes.reads:
            if dep.name == donor and (position > members.index(storer)
                                      or not isinstance(dep, MemoryDep)
                                      or not rows_line_up(write, dep, points)):
                return False
    return True


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
