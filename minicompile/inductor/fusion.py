"""The rules deciding whether two scheduler nodes may share one kernel (mirrors ``can_fuse``,
``can_fuse_vertical`` and ``score_fusion`` in torch/_inductor/scheduler.py).

A kernel is one loop nest. Pointwise kernels loop over ``numel`` elements; a reduction kernel
loops over ``n`` rows of ``r`` elements each (its "tile" ``(n, r)``). A node can join a kernel
when its own loops fit that tile, and when every value it needs from the kernel is available at
the point where it needs it (the same element, or the same row). :data:`RULES` lists the checks in order; the first that fails gives
the refusal's reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import sympy

from .codegen import get_scheduling
from .dependencies import reduction_direction, rows_line_up
from .ir import storage_owner
from .sizevars import same

if TYPE_CHECKING:
    from .scheduler import BaseSchedulerNode, Scheduler

Verdict = tuple[bool, str]


def tile(members: list) -> tuple[sympy.Expr, sympy.Expr] | str:
    """The ``(n, r)`` loops a kernel of ``members`` runs, or why there is none.

    Reductions fix the tile; a pointwise member fits it when it covers ``n`` elements (an
    epilogue on the reduced values) or ``n * r`` (a prologue, or an epilogue broadcast back over
    the rows, like ``x - x.max(1, keepdim=True)``).
    """
    reductions = {(m.numel, m.rnumel) for m in members if m.is_reduction()}
    unique = []
    for t in reductions:
        if not any(same(t[0], u[0]) and same(t[1], u[1]) for u in unique):
            unique.append(t)
    if len(unique) > 1:
        return f"reductions over different loops {' vs '.join(f'{n}x{r}' for n, r in unique)}"
    if unique:
        n, r = unique[0]
        for m in members:
            if not m.is_reduction() and not (same(m.numel, n) or same(m.numel, n * r)):
                return f"{m.get_name()} has {m.numel} elements; the reduction loops {n}x{r}"
        return n, r
    numels = {m.numel for m in members}
    first = members[0].numel
    if any(not same(x, first) for x in numels):
        return f"different loop sizes: {', '.join(str(x) for x in sorted(numels, key=str))}"
    return first, sympy.Integer(1)


def runs_per_row(m, n: sympy.Expr, r: sympy.Expr) -> bool:
    """Does member ``m`` of a kernel over ``n`` rows of ``r`` produce one value per row (a
    reduction, or an epilogue over ``n`` points) rather than one per element (as a scan does)?"""
    if m.node.is_scan():
        return False
    return m.is_reduction() or (not same(r, 1) and same(m.numel, n))


# --- the checks, in order ------------------------------------------------------------------------

def _has_elements(s: "Scheduler", a: "BaseSchedulerNode", b: "BaseSchedulerNode") -> Verdict:
    """A node over zero elements computes nothing and needs no kernel; inside another kernel's
    loops its (empty) index would be simplified as if it had points, and be stored to."""
    for m in a.get_nodes() + b.get_nodes():
        if sympy.sympify(m.numel).is_zero:
            return False, f"{m.get_name()} has no elements"
    return True, ""


def _scatters_run_alone(s: "Scheduler", a: "BaseSchedulerNode",
                        b: "BaseSchedulerNode") -> Verdict:
    """A scatter (``ir.Scatter``) writes wherever its index tensor says: every point of the
    kernel filling its destination must come before any of its points, and any point reading its
    result after all of them. In one kernel, points run in any order: it stays alone (also where
    a dim of size 1 hides its loaded index from the store's address)."""
    for m in a.get_nodes() + b.get_nodes():
        if m.node.data.writes_anywhere():
            return False, f"{m.get_name()} is a scatter: it writes at indices it loads"
    return True, ""


def _no_extern(s: "Scheduler", a: "BaseSchedulerNode", b: "BaseSchedulerNode") -> Verdict:
    for k in (a, b):
        if k.is_extern():
            kernel = getattr(k.node, "kernel", None)
            return False, f"{k.get_name()} is a library call ({kernel}), not a loop nest"
    return True, ""


def _one_scan_with_pointwise_work(s: "Scheduler", a: "BaseSchedulerNode",
                                  b: "BaseSchedulerNode") -> Verdict:
    """A scan's kernel holds one scan and pointwise work at its elements (a producer it reads, a
    consumer of its running values), all in the one loop along each row that carries the running
    value. A reduction (a value per row, needed before a later loop) or a second scan would need
    loops or a per-row part that a scan's kernel does not have."""
    members = a.get_nodes() + b.get_nodes()
    scans = [m for m in members if m.node.is_scan()]
    if not scans:
        return True, ""
    if len(scans) > 1:
        return False, f"{scans[0].get_name()} and {scans[1].get_name()} are both scans"
    scan = scans[0]
    for m in members:
        if m is not scan and (m.is_reduction() or not same(m.numel, scan.numel * scan.rnumel)):
            return False, (f"{scan.get_name()} is a scan and {m.get_name()} does not run at its "
                           "elements")
    return True, ""


def _loops_fit(s: "Scheduler", a: "BaseSchedulerNode", b: "BaseSchedulerNode") -> Verdict:
    t = tile(a.get_nodes() + b.get_nodes())
    return (False, t) if isinstance(t, str) else (True, "")


def _reads_line_up(s: "Scheduler", a: "BaseSchedulerNode", b: "BaseSchedulerNode") -> Verdict:
    """In a kernel, a value produced by one member reaches another as a value, never through
    memory (``codegen/common.py``), so each such read must be of the value computed at the
    reader's own point: the same element, or for a per-row value (a reduction's result) the
    same row."""
    members = a.get_nodes() + b.get_nodes()
    n, r = tile(members)
    by_name = {m.get_name(): m for m in members}
    writes = {d.name: d for m in members for d in m.read_writes.writes}
    for m in members:
        for dep in m.read_writes.reads:
            writer = by_name.get(dep.name)
            if writer is None or writer is m:
                continue
            if runs_per_row(writer, n, r):
                if not rows_line_up(writes[dep.name], dep, n):
                    return False, (f"{m.get_name()} reads {dep} outside the row that computes it "
                                   f"(needs the whole of {dep.name} first)")
            elif runs_per_row(m, n, r) and not m.is_reduction():
                return False, (f"{m.get_name()} runs once per row but reads {dep.name}, which "
                               "has a value per element")
            elif not rows_line_up(writes[dep.name], dep, n * r):
                return False, (f"{m.get_name()} reads {dep} at another point than the one that "
                               f"computes it in the same kernel")
    return True, ""




def _in_place_writes_stay_at_their_point(s: "Scheduler", a: "BaseSchedulerNode",
                                         b: "BaseSchedulerNode") -> Verdict:
    """A member writing an input in place (``ir/mutation.py``) shares its kernel only with
    accesses to that storage at the very element each point writes (``x[:, 0] += 1``: read
    ``x[i, 0]``, write ``x[i, 0]``). Points run in any order, in parallel, in vectors: a read of
    another element (``x[1:] = x[:-1].clone()`` reads ``x[i]`` and writes ``x[i + 1]``) might see
    it before or after another point overwrote it, and two writes of one element in any order."""
    members = a.get_nodes() + b.get_nodes()
    n, r = tile(members)
    for w in (m for m in members if m.node.get_mutation_names()):
        owner = storage_owner(s.buffers, w.get_name())
        if not same(r, sympy.Integer(1)):
            reader = _reads_storage(s, members, owner, w)
            if reader is not None:  # a reduction goes over its row in several loops: a later
                # loop would read the storage again, after an earlier one wrote it
                return False, (f"{w.get_name()} writes {owner} in place and {reader.get_name()}, "
                               f"in a reduction kernel, reads it (or a value computed from it)")
        for write in w.read_writes.writes:
            for m in members:
                accesses = m.read_writes.reads + (m.read_writes.writes if m is not w else [])
                for dep in accesses:
                    if storage_owner(s.buffers, dep.name) != owner:
                        continue
                    if not (same(w.numel, n * r) and same(m.numel, n * r)
                            and rows_line_up(write, dep, n * r)):
                        return False, (f"{w.get_name()} writes {owner} in place and "
                                       f"{m.get_name()} reads or writes {dep} at other elements")
    return True, ""


def _reads_storage(s: "Scheduler", members: list, owner: str, writer) -> object | None:
    """A member other than ``writer`` reading the storage of ``owner`` (an input, or a value
    written into it), or None. (A member reading such a reader's buffer depends on the storage
    too, but the reader it depends on comes first.)"""
    def owner_of(name: str) -> str:
        return storage_owner(s.buffers, name) if name in s.buffers else name
    return next((m for m in members if m is not writer
                 and any(owner_of(dep.name) == owner for dep in m.read_writes.reads)), None)


def _reductions_run_one_way(s: "Scheduler", a: "BaseSchedulerNode",
                            b: "BaseSchedulerNode") -> Verdict:
    """Reductions along rows and reductions down columns over the same tile stay in separate
    kernels (Inductor's ``tiling_prevents_reduction_fusion``): one loop nest can run along only
    one of them, and the other's loads would then be strided (gathers on a CPU, uncoalesced on a
    GPU). Their kernels each read the shared input once more, in order."""
    ways = {}
    for m in a.get_nodes() + b.get_nodes():
        way = reduction_direction(m)
        if way is not None:
            ways.setdefault(way, m)
    if len(ways) == 2:
        return False, (f"{ways['rows'].get_name()} reduces along rows and "
                       f"{ways['columns'].get_name()} down columns")
    return True, ""


def _backend_allows(s: "Scheduler", a: "BaseSchedulerNode", b: "BaseSchedulerNode") -> Verdict:
    """The code generator of the kernel's device may veto (``BaseScheduling.can_fuse``)."""
    device = a.get_nodes()[0].node.get_device()
    return get_scheduling(device, s.options).can_fuse(a, b)


RULES: list[Callable[..., Verdict]] = [_no_extern, _scatters_run_alone, _has_elements,
                                       _loops_fit,
                                       _one_scan_with_pointwise_work,
                                       _in_place_writes_stay_at_their_point, _reads_line_up,
                                       _reductions_run_one_way, _backend_allows]


# refusals no loop order can lift: what the kernels are, and how many points each loops over
LOOP_ORDER_BLIND = {_no_extern, _scatters_run_alone, _has_elements, _loops_fit,
                    _one_scan_with_pointwise_work}


def refusal(s: "Scheduler", a: "BaseSchedulerNode",
            b: "BaseSchedulerNode") -> tuple[Callable[..., Verdict], str] | None:
    """The first rule refusing ``(a, b)`` and its reason, or None when they can share a kernel."""
    for rule in RULES:
        ok, reason = rule(s, a, b)
        if not ok:
            return rule, reason
    return None


def can_fuse(s: "Scheduler", a: "BaseSchedulerNode", b: "BaseSchedulerNode") -> Verdict:
    """(True, "") when ``a`` and ``b`` (``a`` first in program order) can share a kernel."""
    refused = refusal(s, a, b)
    return (True, "") if refused is None else (False, refused[1])


MAX_PAIRWISE_ATTEMPTS = 64  # kernels after each one, of those touching a buffer, tried with it


def candidate_pairs(kernels: list) -> list[tuple]:
    """Pairs of kernels touching a common buffer, earlier kernel first. Of the kernels
    touching one buffer, each is paired with the next ``MAX_PAIRWISE_ATTEMPTS`` only
    (Inductor's ``max_fusion_buffer_group_pairwise_attempts``): a buffer every step of a
    recurrence reads (a weight, the loss's gradient) would otherwise pair every step with
    every other, quadratically many pairs."""
    by_buffer: dict[str, list] = {}
    for k in kernels:
        for name in k.read_names() | k.get_names():
            by_buffer.setdefault(name, []).append(k)
    pairs = set()
    for users in by_buffer.values():
        users.sort(key=lambda k: k.order())
        for i, a in enumerate(users):
            for b in users[i + 1:i + 1 + MAX_PAIRWISE_ATTEMPTS]:
                pairs.add((a, b))
    return sorted(pairs, key=lambda p: (p[0].order(), p[1].order()))


def fusion_score(s: "Scheduler", a: "BaseSchedulerNode", b: "BaseSchedulerNode") -> tuple:
    """Best pairs first: vertical before horizontal, then by bytes the fusion saves (Inductor's
    ``score_fusion``), then earlier pairs first."""
    vertical = bool(a.get_names() & b.read_names())
    shared = (a.get_names() | a.read_names()) & (b.get_names() | b.read_names())
    saved = sum((s.numel(n) * s.itemsize(n) for n in shared if n in s.buffers), sympy.Integer(0))
    saved = float(saved) if saved.is_number else 0.0
    return (vertical, saved, -a.order(), -b.order())
