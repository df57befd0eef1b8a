"""Mini version of torch/_inductor/scheduler.py: decides which loop nests share a kernel.

Every IR buffer becomes a scheduler node that knows what it reads and writes
(``MemoryDep(buffer, SymPy index)``, from ``ir/read_writes.py``). Fusion then merges nodes into
``FusedSchedulerNode`` s, one per kernel, greedily, best pair first (Inductor's
``fuse_nodes_once``):

- **vertical**: a consumer joins its producer's kernel, so the intermediate buffer never goes
  to memory (``y = x*2; z = y+3`` -> one kernel ``z = (x*2)+3``);
- **reduction prologue/epilogue**: pointwise work before or after a reduction joins it (softmax
  is one kernel: max, exp, sum and divide row by row);
- **horizontal**: independent nodes over the same loops that read the same buffer share a kernel
  and load that buffer once (``x.sin(), x.cos()``).

What may fuse is decided by :mod:`.fusion` (each refusal has a reason, logged to the ``fusion``
artifact). What a kernel costs is :meth:`Scheduler.kernel_bytes`: a buffer is stored only when a
node outside its kernel (or the caller) reads it. ``mc.metrics.num_bytes_accessed`` is the sum over
kernels of the bytes they read and write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import sympy

from .._logging import trace_artifact
from ..metrics import metrics
from . import kernel_graph
from .codegen import BaseScheduling, get_scheduling
from .dependencies import footprint
from .fusion import LOOP_ORDER_BLIND, can_fuse, candidate_pairs, fusion_score, refusal
from .inlining import inline_unfusable_producers
from .ir import Buffer, ComputedBuffer, ExternKernel, MultiOutput, ReadWrites, storage_owner
from .kernel_group import KernelGroup, build_kernel_group
from .loop_order import describe_orders, permute_deps, pick_loop_order, reorder_to_fuse
from .options import InductorOptions
from .scheduler_report import describe as describe_schedule


class BaseSchedulerNode:
    """One IR buffer to compute (or, for :class:`FusedSchedulerNode`, several)."""

    node: Buffer | None = None
    read_writes: ReadWrites

    def get_name(self) -> str:
        return self.node.get_name()

    def get_nodes(self) -> list["BaseSchedulerNode"]:
        return [self]

    def get_names(self) -> set[str]:
        return {n.get_name() for n in self.get_nodes()}

    def read_names(self) -> set[str]:
        """Buffers it needs first: those it reads, and the value it overwrites in place."""
        return {d.name for n in self.get_nodes() for d in n.read_writes.reads} | {
            m for n in self.get_nodes() for m in n.node.get_mutation_names()}

    def is_reduction(self) -> bool:
        return False

    def is_extern(self) -> bool:
        return False

    def order(self) -> int:
        """Position of the first member in program order (ties in the final order)."""
        return min(n.index for n in self.get_nodes())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(n.get_name() for n in self.get_nodes())})"


class SchedulerNode(BaseSchedulerNode):
    """A ``ComputedBuffer``: a loop nest over ``sizes`` (and ``reduction_sizes``)."""

    def __init__(self, node: ComputedBuffer, index: int):
        self.node, self.index = node, index
        self.read_writes = self._natural_read_writes = node.get_read_writes()
        self.sizes, self.reduction_sizes = node.get_ranges()
        self._order = list(node.index_vars()[0])  # pointwise loops, outermost first
        if not node.is_reduction():  # in the order its store walks memory (a reduction's
            self.reorder_loops(pick_loop_order(self.read_writes))  # rows stay as they are)

    def loop_order(self) -> list[sympy.Symbol]:
        return list(self._order)

    def reorder_loops(self, order: list[sympy.Symbol]) -> None:
        """Visit the same points in another loop order (``loop_order.py``): the accesses are the
        same, only which points form a kernel row changes."""
        self._order = list(order)
        self.read_writes = permute_deps(self._natural_read_writes, order)

    def is_reordered(self) -> bool:
        """Loops in another order than the buffer's own: its store's (``pick_loop_order``), or
        another node's in its kernel (``loop_order.py``)."""
        return self._order != list(self.node.index_vars()[0])

    def is_reduction(self) -> bool:
        return self.node.is_reduction()

    @property
    def numel(self) -> sympy.Expr:
        return sympy.Mul(*self.sizes)

    @property
    def rnumel(self) -> sympy.Expr:
        return sympy.Mul(*self.reduction_sizes)


class ExternKernelSchedulerNode(BaseSchedulerNode):
    """A library call (mm, conv, fallback op): never fused, reads and writes whole buffers."""

    def __init__(self, node: ExternKernel, index: int):
        self.node, self.index = node, index
        self.read_writes = node.get_read_writes()

    def is_extern(self) -> bool:
        return True


class NopKernelSchedulerNode(ExternKernelSchedulerNode):
    """A ``MultiOutput``: names one output of a tuple-returning extern kernel, moves no data."""


class FusedSchedulerNode(BaseSchedulerNode):
    """Several scheduler nodes sharing one kernel, members in program order."""

    def __init__(self, snodes: Iterable[BaseSchedulerNode]):
        self.snodes = sorted({n for s in snodes for n in s.get_nodes()}, key=lambda n: n.index)

    @property
    def read_writes(self) -> ReadWrites:  # computed: a member's loops may be reordered later
        return ReadWrites([d for n in self.snodes for d in n.read_writes.reads],
                          [d for n in self.snodes for d in n.read_writes.writes])

    def get_name(self) -> str:
        return "_".join(n.get_name() for n in self.snodes)

    def get_nodes(self) -> list[BaseSchedulerNode]:
        return list(self.snodes)

    def is_reduction(self) -> bool:
        return any(n.is_reduction() for n in self.snodes)


def create_scheduler_node(node: Buffer, index: int) -> BaseSchedulerNode:
    kinds = ((MultiOutput, NopKernelSchedulerNode), (ExternKernel, ExternKernelSchedulerNode),
             (ComputedBuffer, SchedulerNode))
    for cls, make in kinds:
        if isinstance(node, cls):
            return make(node, index)
    raise TypeError(f"cannot schedule {type(node).__name__} {node.get_name()}")


def drop_unread_outputs(nodes: Sequence[Buffer], output_names: set[str]) -> list[Buffer]:
    """``nodes`` without the outputs of multi-output library calls that nothing reads (Inductor's
    dead-node elimination, for these): taking one out of the returned tuple is pure, and where
    the traced metadata names a tensor the real kernel may return none (CUDA flash attention's
    debug mask and sequence offsets, in inference)."""
    read = set(output_names)
    for n in nodes:
        read.update(d.name for d in n.get_read_writes().reads)
        read.update(n.get_mutation_names())
    return [n for n in nodes if not isinstance(n, MultiOutput) or n.get_name() in read]


@dataclass
class FusionDecision:
    """One pair the scheduler considered: ``fused`` or refused with ``reason``."""

    first: str
    second: str
    kind: str  # "vertical" (second reads what first writes) or "horizontal"
    fused: bool
    reason: str

    def __str__(self) -> str:
        verdict = f"refused: {self.reason}" if not self.fused else (
            f"fused {self.reason}" if self.reason else "fused")
        return f"{self.kind:10} {self.first} + {self.second}: {verdict}"


class Scheduler:
    """Turn IR buffers (program order) into kernels: ``Scheduler(nodes, inputs, outputs)``.

    ``nodes``: the graph's ComputedBuffers/ExternKernels in program order; ``inputs``: every other
    buffer a node may read (graph inputs, constants), by name; ``output_names``: buffers the
    caller receives. ``fuse=False`` keeps one kernel per node (the unfused baseline).
    ``Scheduler(graph)`` with a ``GraphLowering`` takes all three from it. After fusion,
    ``kernel_groups`` holds one kernel object per kernel (``kernel_group.py``), and
    ``codegen(wrapper)`` hands them to the backends.
    """

    def __init__(self, nodes: Sequence[Buffer], inputs: dict[str, Buffer] | None = None,
                 output_names: Iterable[str] = (), fuse: bool = True,
                 record_metrics: bool = True, options: InductorOptions | None = None):
        self.graph = None
        # the compile's knobs (a GraphLowering's own, by default): which backend may veto a
        # fusion, which one generates the kernels
        self.options = InductorOptions.of(options or getattr(nodes, "options", None))
        if hasattr(nodes, "graph_inputs"):  # a GraphLowering: take everything from it
            graph = self.graph = nodes
            inputs = {k: v for k, v in graph.graph_inputs.items() if isinstance(v, Buffer)}
            inputs.update(graph.constant_buffers)
            output_names = [o.get_name() for o in graph.graph_outputs if hasattr(o, "get_name")]
            nodes = graph.buffers
        self.input_names = set(inputs or {})
        self.output_names = set(output_names)
        nodes = drop_unread_outputs(nodes, self.output_names)
        if fuse:  # a producer its consumer reads over other loops is substituted into it
            nodes = inline_unfusable_producers(nodes, self.output_names)
        self.buffers: dict[str, Buffer] = dict(inputs or {})
        self.buffers.update({n.get_name(): n for n in nodes})
        # buffers whose storage another buffer writes into in place
        self.written_in_place = {m for n in nodes for m in n.get_mutation_names()}
        self.nodes = [create_scheduler_node(n, i) for i, n in enumerate(nodes)]
        self.decisions: list[FusionDecision] = []
        self.kernels: list[BaseSchedulerNode] = list(self.nodes)
        # fusion's cycle check: (the kernels' ids, the readers graph of those kernels)
        self._readers: tuple[tuple[int, ...], dict] = ((), {})
        # answers that hold while the kernels do (who reads a buffer, a kernel's bytes), by the
        # kernels' ids: asked per kernel and per buffer, rebuilt after each fusion
        self._now: tuple[tuple[int, ...], dict] = ((), {})
        if fuse:
            self.fuse_nodes()
        self.kernels = self.topological_order(self.kernels)
        self.num_bytes_accessed = sum((sum(self.kernel_bytes(k), sympy.Integer(0))
                                       for k in self.kernels), sympy.Integer(0))
        title = getattr(self.graph, "name", "graph")
        trace_artifact("fusion", lambda: "\n".join(map(str, self.decisions)) or "(no candidates)",
                       title=f"{title}: fusion decisions")
        self.kernel_groups: list[KernelGroup] = [build_kernel_group(self, k, i)
                                                  for i, k in enumerate(self.kernels)]
        trace_artifact("ir_post_fusion", self.describe,
                       title=f"{title}: kernels after fusion")
        if record_metrics and self.bytes_hint() is not None:  # summed over every graph since
            metrics.num_bytes_accessed += self.bytes_hint()  # metrics.reset(), as Inductor does

    def bytes_hint(self) -> int | None:
        """``num_bytes_accessed`` as a number: with symbolic sizes, at the sizes the graph was
        traced with (a report, never a decision)."""
        total = sympy.sympify(self.num_bytes_accessed)
        if not total.is_number and self.graph is not None:
            total = total.subs(getattr(self.graph, "size_hints", {}))
        return int(total) if total.is_number else None

    @classmethod
    def from_graph(cls, graph, **kwargs) -> "Scheduler":
        """Schedule a lowered ``GraphLowering``: its buffers, inputs and outputs."""
        return cls(graph, **kwargs)

    def ordered_nodes(self) -> list[Buffer]:
        """Every IR node, kernel after kernel: the order to execute them in."""
        return [n.node for k in self.kernels for n in k.get_nodes()]

    # --- who reads what ----------------------------------------------------------------------

    def memo(self, what: str) -> dict:
        """A table of answers about the current kernels (emptied when they change)."""
        key = tuple(map(id, self.kernels))
        if self._now[0] != key:
            self._now = (key, {})
        return self._now[1].setdefault(what, {})

    def kernels_reading(self, name: str) -> list[BaseSchedulerNode]:
        readers = self.memo("readers")
        if not readers:
            for k in self.kernels:
                for read in k.read_names():
                    readers.setdefault(read, []).append(k)
            readers[None] = []  # (built, even when nothing reads anything)
        return readers.get(name, [])

    def is_stored(self, name: str, kernel: BaseSchedulerNode) -> bool:
        """Must ``kernel`` write ``name`` to memory? Yes when the caller or another kernel reads it."""
        if name in self.output_names:
            return True
        if any(k is not kernel for k in self.kernels_reading(name)):
            return True
        buffer = self.buffers[name]
        if name in self.written_in_place and not buffer.get_mutation_names():
            return True  # the storage later writes in place go into (as_strided_scatter's copy)
        # a write in place reaches memory, unless the next write into that storage is in this
        # kernel (fusion.py: then of the same elements; ``x[:, 0] += 1`` writes them twice)
        return bool(buffer.get_mutation_names()) and not any(
            name in n.node.get_mutation_names() for n in kernel.get_nodes())

    # --- fusion -------------------------------------------------------------------------------

    def fuse_nodes(self, max_rounds: int = 10) -> None:
        seen: set[tuple[str, str]] = set()
        # a refusal holds for good: it depends on the two kernels alone, and a path between
        # them (another kernel in the way) only ever grows; kernels are new objects once fused
        refused: set[tuple[BaseSchedulerNode, BaseSchedulerNode]] = set()
        scores: dict[tuple[BaseSchedulerNode, BaseSchedulerNode], tuple] = {}
        for _ in range(max_rounds):
            candidates = [p for p in self.candidate_pairs() if p not in refused]
            for pair in candidates:
                if pair not in scores:
                    scores[pair] = fusion_score(self, *pair)
            candidates.sort(key=scores.__getitem__, reverse=True)
            fused_any = False
            for a, b in candidates:
                if a not in self.kernels or b not in self.kernels:
                    continue  # one of them was fused earlier in this round
                refused_by = refusal(self, a, b)
                ok, reason = refused_by is None, "" if refused_by is None else refused_by[1]
                if not ok and refused_by[0] not in LOOP_ORDER_BLIND:
                    ok, reason = self.fuse_after_reordering(a, b, reason)
                if ok and self.would_create_cycle(a, b):
                    ok, reason = False, "a kernel between them needs the first and feeds the second"
                kind = "vertical" if a.get_names() & b.read_names() else "horizontal"
                key = (a.get_name(), b.get_name())
                if ok or key not in seen:
                    self.decisions.append(FusionDecision(*key, kind, ok, reason))
                    seen.add(key)
                if ok:
                    fused = FusedSchedulerNode([a, b])
                    stale = self._readers[0] != tuple(map(id, self.kernels))
                    self.kernels = [k for k in self.kernels if k is not a and k is not b] + [fused]
                    if not stale:  # the readers graph follows the fusion
                        kernel_graph.merge(self._readers[1], a, b, fused)
                        self._readers = (tuple(map(id, self.kernels)), self._readers[1])
                    fused_any = True
                else:
                    refused.add((a, b))
            if not fused_any:
                break

    def fuse_after_reordering(self, a: BaseSchedulerNode, b: BaseSchedulerNode,
                              reason: str) -> tuple[bool, str]:
        """A refused pair may fuse once the pointwise side loops in the reduction's order
        (``loop_order.py``); if it still may not, or a kernel between them forbids it anyway,
        the old orders come back (a node left in another's order for nothing walks its own
        store across memory: a channels-last store visited channel by channel)."""
        changed = reorder_to_fuse(a, b)
        if not changed:
            return False, reason
        ok, _ = can_fuse(self, a, b)
        if ok and not self.would_create_cycle(a, b):
            return True, f"after reordering {describe_orders(changed)}"
        for node, old in changed:
            node.reorder_loops(old)
        return False, reason

    def candidate_pairs(self) -> list[tuple[BaseSchedulerNode, BaseSchedulerNode]]:
        return candidate_pairs(self.kernels)

    def would_create_cycle(self, a: BaseSchedulerNode, b: BaseSchedulerNode) -> bool:
        """Fusing is impossible when a third kernel sits on a path between the two."""
        key = tuple(map(id, self.kernels))  # the readers graph, rebuilt after each fusion
        if self._readers[0] != key:
            self._readers = (key, kernel_graph.readers(self.kernels))
        readers = self._readers[1]
        return kernel_graph.path_between(readers, a, b) or kernel_graph.path_between(readers, b, a)

    def topological_order(self, kernels: list[BaseSchedulerNode]) -> list[BaseSchedulerNode]:
        """Kernels after the kernels they read from; program order breaks ties."""
        return kernel_graph.topological_order(kernels)

    # --- memory traffic -----------------------------------------------------------------------

    def itemsize(self, name: str) -> int:
        return self.buffers[name].get_dtype().itemsize

    def numel(self, name: str) -> sympy.Expr:
        buf = self.buffers[name]
        return buf.layout.numel() if getattr(buf, "layout", None) is not None else buf.get_numel()

    def kernel_bytes(self, kernel: BaseSchedulerNode) -> tuple[sympy.Expr, sympy.Expr]:
        """(bytes read, bytes written) by ``kernel``: each outside buffer read once, each stored
        buffer written once; buffers produced and consumed inside the kernel cost nothing."""
        known = self.memo("bytes")
        if kernel not in known:
            known[kernel] = self._kernel_bytes(kernel)
        return known[kernel]

    def _kernel_bytes(self, kernel: BaseSchedulerNode) -> tuple[sympy.Expr, sympy.Expr]:
        written_here = kernel.get_names()
        reads: dict[str, list] = {}
        for n in kernel.get_nodes():
            if isinstance(n, NopKernelSchedulerNode):
                continue  # names an output of its parent: no data moves
            for d in n.read_writes.reads:
                if d.name not in written_here:
                    reads.setdefault(d.name, []).append(d)
        read_bytes = sum((footprint(deps, self.numel(name)) * self.itemsize(name)
                          for name, deps in reads.items()), sympy.Integer(0))
        write_bytes = sympy.Integer(0)
        for n in kernel.get_nodes():
            for d in n.read_writes.writes:
                if self.is_stored(d.name, kernel):
                    write_bytes += footprint([d], self.numel(d.name)) * self.itemsize(d.name)
        return read_bytes, write_bytes

    def stored_buffers(self, kernel: BaseSchedulerNode) -> list[str]:
        return [n.get_name() for n in kernel.get_nodes() if self.is_stored(n.get_name(), kernel)]

    def describe(self) -> str:
        """The ``ir_post_fusion`` artifact (``scheduler_report.py``)."""
        return describe_schedule(self)

    # --- code generation ----------------------------------------------------------------------

    def codegen(self, wrapper, options: InductorOptions | None = None) -> None:
        """Hand each kernel to its device's backend and each library call to the wrapper, in
        order (Inductor's ``Scheduler.codegen``), then let every backend flush."""
        backends: dict[str, BaseScheduling] = {}

        def backend(group: KernelGroup) -> BaseScheduling:
            if group.device.type not in backends:
                backends[group.device.type] = get_scheduling(group.device, options or self.options)
            return backends[group.device.type]

        for run in self.kernel_runs(wrapper, backend):
            for group in run:
                wrapper.begin_kernel(group)
            if len(run) > 1:  # independent kernels launched as one (codegen/triton_combo.py)
                backend(run[0]).codegen_combo(run, wrapper)
            elif run[0].is_loop_kernel():
                backend(run[0]).codegen_kernel(run[0], wrapper)
            else:
                wrapper.codegen_extern(run[0])
            for group in run:
                wrapper.end_kernel(group)
        for b in backends.values():
            b.flush()

    def kernel_runs(self, wrapper, backend) -> list[list[KernelGroup]]:
        """The kernel groups in order, consecutive ones that may run as one kernel together:
        each ``combinable`` by its backend, on one device, allocating its outputs fresh (not
        in a buffer an earlier one frees), none touching a storage another writes, and the
        backend taking each into the run (``joins``: C++ only pairs a row kernel with a column
        kernel riding along it, ``codegen/cpp_riders.py``)."""
        runs: list[list[KernelGroup]] = []
        parts: list[tuple[set[str], set[str]]] = []  # the last run's parts: storages written, read
        for group in self.kernel_groups:
            if not (group.is_loop_kernel() and wrapper.allocates_fresh(group)
                    and backend(group).combinable(group, wrapper)):
                runs.append([group])
                parts = []
                continue
            writes, reads = self.storages(group.stored), self.storages(group.reads)
            joins = parts and group.device == runs[-1][0].device \
                and len(parts) < backend(group).max_parts \
                and all(not writes & (w | r) and not w & reads for w, r in parts) \
                and backend(group).joins(runs[-1], group, wrapper)
            if not joins:
                runs.append([])
                parts = []
            runs[-1].append(group)
            parts.append((writes, reads))
        return runs

    def storages(self, names: Iterable[str]) -> set[str]:
        """The storages the buffers ``names`` live in (an input written in place: the input)."""
        return {storage_owner(self.buffers, n) if n in self.buffers else n for n in names}
