"""Loop reordering so a reduction over a non-last dim fuses with its pointwise neighbours (mirrors
``MemoryDep.decide_loop_order_to_match`` in torch/_inductor/dependencies.py and
``SchedulerNode.reorder_loops_by_dep_pair`` / ``shared_data_after_reordering_loop`` in
torch/_inductor/scheduler.py, Inductor's "loop ordering after fusion").

A reduction kernel runs ``n`` rows of ``r`` elements, and a pointwise node joins it only when its
loops, flattened in their order, cut into the same rows (``fusion._reads_line_up``).
``softmax(x, 0)`` on a (5, 7) x reduces each *column*: the reduction's loops are
``for i1 in range(7): for r0 in range(5): load(x, i1 + 7*r0)``, and a pointwise node such as
``exp(x - max)`` loops ``for i0 in range(5): for i1 in range(7)`` (row-major), so its row ``k``
(``(7*i0 + i1) // 5 == k``) is not the reduction's column ``k``: fusion is refused.

Swapping its loops (``for i1: for i0``) visits the same points in the reduction's order, and the
node fuses. The order is read off a buffer both nodes access: the reduction walks x with strides
``(1, 7)`` (``i1`` outer, ``r0`` inner), the pointwise node with strides ``{i0: 7, i1: 1}``;
taking its loop of stride 1 first, then its loop of stride 7, makes it walk x exactly as the
reduction does (:func:`order_to_match`). The executor gives the same values in any loop order:
the order only decides which points form one row of a fused kernel (and, in generated code, the
order of the loops).

Every pointwise node starts in the order its store walks memory (:func:`pick_loop_order`): a
channels-last buffer loops ``n, h, w, c``, so its flat iteration number is the offset it stores
at, and a kernel reading channels-last inputs into it is one straight loop over memory.

:func:`reorder_to_fuse` is what the scheduler calls when a fusion is refused: it reorders the
pointwise members of both kernels to the order of their reductions, propagating it from member to
member through the buffers they share, and the scheduler undoes it if the fusion is still refused.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import sympy

from .dependencies import var_strides
from .ir import MemoryDep, ReadWrites
from .ir.layout import stride_hint

if TYPE_CHECKING:
    from .scheduler import BaseSchedulerNode, SchedulerNode


def order_to_match(dep: MemoryDep, ref: MemoryDep) -> list[sympy.Symbol] | None:
    """The loop variables of ``dep``'s node, reordered so that it steps through the buffer the way
    ``ref``'s node does: ``dep``'s loop with the stride (and range) of ``ref``'s outermost loop
    first, and so on. Loops of size 1 go first (they change no row). None when some loop of size
    > 1 has no counterpart."""
    mine, theirs = var_strides(dep), var_strides(ref)
    if mine is None or theirs is None:
        return None
    my_ranges, ref_ranges = dict(dep.var_ranges), dict(ref.var_ranges)
    order: list[sympy.Symbol] = []
    for rv, _ in ref.var_ranges:
        if rv not in theirs:
            continue
        match = [v for v, s in mine.items() if v not in order
                 and sympy.expand(s - theirs[rv]) == 0
                 and sympy.expand(my_ranges[v] - ref_ranges[rv]) == 0]
        if len(match) != 1:
            return None  # no loop of this stride, or two of them (ambiguous)
        order.append(match[0])
    rest = [v for v, _ in dep.var_ranges if v not in order]
    if any(my_ranges[v] != 1 for v in rest):
        return None
    return rest + order


def pick_loop_order(read_writes: ReadWrites) -> list[sympy.Symbol]:
    """The pointwise loops of a node, outermost first, in the order its store walks memory:
    the loop of the largest stride outermost, the loop of stride 1 innermost (Inductor's
    ``pick_loop_order`` in ``ComputedBuffer.simplify_and_reorder``, with the output's strides
    deciding). A channels-last buffer ``[N, C, H, W]`` loops ``n, h, w, c``, so the flat
    iteration number is the offset it stores at. Loops the store does not use (size 1) and
    stores that are not affine keep the written order."""
    loops = list(read_writes.var_ranges)
    writes = [d for d in read_writes.writes if isinstance(d, MemoryDep)]
    strides = var_strides(writes[0]) if len(writes) == 1 else None
    if not strides:
        return loops
    hints = {v: stride_hint(s) for v, s in strides.items()}
    unused = [v for v in loops if v not in hints]
    return unused + sorted(hints, key=lambda v: (-hints[v], loops.index(v)))


def _deps(node: "BaseSchedulerNode", name: str) -> list[MemoryDep]:
    return [d for d in node.read_writes.reads + node.read_writes.writes
            if isinstance(d, MemoryDep) and d.name == name]


def _match_any(node: "SchedulerNode", decided: list["BaseSchedulerNode"]) -> list | None:
    """A loop order for ``node`` taken from any decided node it shares a buffer with."""
    names = {d.name for d in node.read_writes.reads + node.read_writes.writes}
    for ref_node in decided:
        for name in sorted(names):
            for dep in _deps(node, name):
                for ref in _deps(ref_node, name):
                    order = order_to_match(dep, ref)
                    if order is not None:
                        return order
    return None


def reorder_to_fuse(a: "BaseSchedulerNode", b: "BaseSchedulerNode") -> list[tuple]:
    """Give the pointwise members of ``(a, b)`` the loop order of their reductions, or, in a
    pointwise pair, the loop order of the second kernel (each pointwise node loops in its
    store's order, :func:`pick_loop_order`: a channels-last producer and its row-major consumer
    visit their points in two orders until one takes the other's).
    Returns ``[(node, old order), ...]`` for every node changed (to describe or undo it); empty
    when there is nothing to reorder."""
    members = a.get_nodes() + b.get_nodes()
    decided = [n for n in members if n.is_reduction()]  # a reduction's loop order is fixed
    if not decided:  # the consumer's order: it usually stores what the producer computes
        decided = b.get_nodes()
    todo = [n for n in members if hasattr(n, "reorder_loops") and n not in decided
            and not n.is_reduction()]
    changed = []
    progress = True
    while todo and progress:
        progress = False
        for node in list(todo):
            order = _match_any(node, decided)
            if order is None:
                continue
            old = node.loop_order()
            if order != old:
                node.reorder_loops(order)
                changed.append((node, old))
            todo.remove(node)
            decided.append(node)
            progress = True
    return changed


def permute_deps(read_writes: ReadWrites, order: list[sympy.Symbol]) -> ReadWrites:
    """The same accesses with the loops in ``order`` (loops not named, e.g. reduction loops, stay
    innermost): only ``var_ranges`` changes, which is what decides rows."""
    position = {v: k for k, v in enumerate(order)}

    def permute(ranges):
        return sorted(ranges, key=lambda vr: position.get(vr[0], len(position)))

    def dep(d):
        return dataclasses.replace(d, var_ranges=tuple(permute(d.var_ranges))) \
            if isinstance(d, MemoryDep) else d

    return dataclasses.replace(read_writes, reads=[dep(d) for d in read_writes.reads],
                               writes=[dep(d) for d in read_writes.writes],
                               var_ranges=dict(permute(read_writes.var_ranges.items())))


def describe_orders(changed: list[tuple]) -> str:
    """``buf1 loops (i1, i0)``, for the fusion log."""
    return ", ".join(f"{n.get_name()} loops ({', '.join(map(str, n.loop_order()))})"
                     for n, _ in changed)
