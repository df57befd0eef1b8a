"""Foreach ops: ``torch._foreach_add_(params, grads, alpha=-lr)`` and the rest of the family
that optimizers' ``foreach=True`` paths call (the default on CUDA), lowered item by item
(mirrors ``register_foreach_pointwise`` in torch/_inductor/lowering.py).

A foreach op applies one pointwise op to each item of its lists: ``_foreach_add.List(xs, ys,
alpha=a)`` is ``[aten.add.Tensor(x, y, alpha=a) for x, y in zip(xs, ys)]``. As an ATen call it
would allocate a new list of tensors, and the functionalized optimizer step would then copy each
back into its parameter: two passes over every parameter. Lowered per item, each item is an
ordinary pointwise body, so the copy back into the parameter (the mutation) computes it, and the
step reads each parameter and gradient once and writes the parameter once.

Items are lowered by their pointwise op's own lowering: only ops tagged ``pointwise`` with a
lowering qualify (``_foreach_norm`` and ``_foreach_max`` are reductions and stay ATen calls),
and only overloads whose arguments are lists or Python scalars (the ``.Tensor`` overloads take a
tensor that may live on another device: they stay ATen calls). A scalar may come first:
``_foreach_pow.ScalarAndTensor(beta1, steps)`` is ``[aten.pow.Scalar(beta1, s) for s in steps]``
(Adam's bias corrections when its steps are tensors on the GPU).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch
import torch.fx as fx

from ..lowering import Unsupported, lowerings, register_lowering
from ..virtualized import V

aten = torch.ops.aten

# which overload of the item's op an overload of the foreach op applies, tried in order: the
# first that exists, is tagged pointwise and has a lowering
ITEM_OVERLOADS = {
    "default": ("default",),
    "List": ("Tensor", "Tensor_Tensor", "default"),
    "Scalar": ("Tensor", "Scalar", "Tensor_Scalar", "default"),
    "ScalarList": ("Tensor", "Scalar", "Tensor_Scalar", "default"),
    "ScalarAndTensor": ("Scalar",),
}


@dataclass
class ItemNode:
    """What a lowering sees of one item of a foreach node: a node of the item's own op, with
    the item's arguments and value (lowerings read ``V.graph.current_node``'s target, arguments
    and ``meta["val"]``: ``add_sub`` tells add from sub by the target)."""
    target: torch._ops.OpOverload
    args: tuple
    kwargs: dict
    name: str
    meta: dict = field(default_factory=dict)
    op: str = "call_function"


@contextlib.contextmanager
def lowering_item(node: ItemNode) -> Iterator[None]:
    outer = V.graph.current_node
    V.graph.current_node = node
    try:
        yield
    finally:
        V.graph.current_node = outer


def item_op(foreach_op: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    """The pointwise op one item of ``foreach_op`` applies, or None where there is none."""
    packet = getattr(aten, foreach_op._schema.name.split("::")[1].removeprefix("_foreach_"), None)
    for name in ITEM_OVERLOADS.get(foreach_op._overloadname, ()):
        op = getattr(packet, name, None) if name in getattr(packet, "overloads", list)() else None
        if op is not None and torch.Tag.pointwise in op.tags and op in lowerings:
            return op
    return None


def item_args(args: tuple, i: int, n: int) -> list:
    """The arguments of item ``i``: each list argument's ``i``-th element, scalars as they are."""
    out = []
    for a in args:
        if isinstance(a, (list, tuple)):
            if len(a) != n:
                raise Unsupported(f"foreach lists of lengths {n} and {len(a)}")
            a = a[i]
        out.append(a)
    return out


def lower_foreach(op: torch._ops.OpOverload) -> Callable:
    lower_item = lowerings[op]

    def lower(*args: Any, **kwargs: Any) -> list:
        node: fx.Node = V.graph.current_node
        n, items = len(next(a for a in args if isinstance(a, (list, tuple)))), []
        for i in range(n):
            item = ItemNode(op, tuple(item_args(node.args, i, n)), node.kwargs,
                            f"{node.name}_{i}", {"val": node.meta["val"][i]})
            with lowering_item(item):
                items.append(lower_item(*item_args(args, i, n), **kwargs))
        return items

    return lower


def register_foreach_lowerings() -> None:
    """A lowering for every foreach overload whose items are pointwise ops we lower."""
    for name in dir(torch._C._VariableFunctions):
        if not name.startswith("_foreach_") or name.endswith("_"):
            continue  # (the in-place ops are functionalized into these first)
        packet = getattr(aten, name)
        for overload in packet.overloads():
            op = getattr(packet, overload)
            types = [str(a.type) for a in op._schema.arguments]
            if op._schema.is_mutable or "List[Tensor]" not in types[:2]:
                continue
            item = item_op(op)
            if item is not None:
                register_lowering(op)(lower_foreach(item))


register_foreach_lowerings()
