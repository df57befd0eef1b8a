"""The rules deciding whether two scheduler nodes may share one kernel (mirrors ``can_fuse``,
``can_fuse_vertical`` and ``score_fusion`` in torch/_inductor/scheduler.py).

A kernel is one loop nest. Pointwise kernels loop over ``numel`` elements; a reduction kernel
loops over ``n`` rows of ``r`` elements each (its "tile" ``(n, r)``). A node can join a kernel
when its own loops fit that tile, and when every value it needs from the kernel is available at
the point where it needs it. :data:`RULES` lists the checks in order; the first that fails gives
the refusal's reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import sympy

from .dependencies import rows_line_up

if TYPE_CHECKING:
    from .scheduler import BaseSchedulerNode, Scheduler

Verdict = tuple[bool, str]


def same(a: sympy.Expr, b: sympy.Expr) -> bool:
    return sympy.expand(a - b) == 0


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


def row_bound(members: list) -> set[str]:
    """Buffers whose values in a fused kernel exist only row by row: reduction results, and
    pointwise values computed from them. A pointwise value from inputs alone can be recomputed
    at any index (its body is inlined), so it is not row-bound."""
    bound: set[str] = set()
    for m in sorted(members, key=lambda m: m.index):
        if m.is_reduction() or m.read_writes.read_names() & bound:
            bound.add(m.get_name())
    return bound


# --- the checks, in order ------------------------------------------------------------------------

def _no_extern(s: "Scheduler", a: "BaseSchedulerNode", b: "BaseSchedulerNode") -> Verdict:
    for k in (a, b):
        if k.is_extern():
            kernel = getattr(k.node, "kernel", None)
            return False, f"{k.get_name()} is a library call ({kernel}), not a loop nest"
    return True, ""


def _loops_fit(s: "Scheduler", a: "BaseSchedulerNode", b: "BaseSchedulerNode") -> Verdict:
    t = tile(a.get_nodes() + b.get_nodes())
    return (False, t) if isinstance(t, str) else (True, "")


def _rows_line_up(s: "Scheduler", a: "BaseSchedulerNode", b: "BaseSchedulerNode") -> Verdict:
    """Each read of a row-bound buffer must come from the row that wrote it."""
    members = a.get_nodes() + b.get_nodes()
    n_rows, r = tile(members)
    if same(r, 1):
        return True, ""  # no reduction: every value is recomputable anywhere
    bound = row_bound(members)
    writes = {d.name: d for m in members for d in m.read_writes.writes}
    for m in members:
        for dep in m.read_writes.reads:
            if dep.name in bound and dep.name != m.get_name():
                if not rows_line_up(writes[dep.name], dep, n_rows):
                    return False, (f"{m.get_name()} reads {dep} outside the row that computes it "
                                   f"(needs the whole of {dep.name} first)")
    return True, ""


RULES: list[Callable[..., Verdict]] = [_no_extern, _loops_fit, _rows_line_up]


def can_fuse(s: "Scheduler", a: "BaseSchedulerNode", b: "BaseSchedulerNode") -> Verdict:
    """(True, "") when ``a`` and ``b`` (``a`` first in program order) can share a kernel."""
    for rule in RULES:
        ok, reason = rule(s, a, b)
        if not ok:
            return False, reason
    return True, ""


def fusion_score(s: "Scheduler", a: "BaseSchedulerNode", b: "BaseSchedulerNode") -> tuple:
    """Best pairs first: vertical before horizontal, then by bytes the fusion saves (Inductor's
    ``score_fusion``), then earlier pairs first."""
    vertical = bool(a.get_names() & b.read_names())
    shared = (a.get_names() | a.read_names()) & (b.get_names() | b.read_names())
    saved = sum((s.numel(n) * s.itemsize(n) for n in shared if n in s.buffers), sympy.Integer(0))
    saved = float(saved) if saved.is_number else 0.0
    return (vertical, saved, -a.order(), -b.order())
