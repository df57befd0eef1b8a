"""No-op elimination before lowering (mirrors ``remove_noop_ops`` in
torch/_inductor/fx_passes/post_grad.py).

Some calls compute nothing: a ``slice_scatter`` whose source covers the whole tensor is its
source, ``ceil`` of an integer tensor is the tensor, ``cat`` of one tensor is that tensor, and a
``clone`` read only by other computations is its input. Lowered as written each would still
move its whole tensor through memory (a ``clone`` feeding a library call is a copy kernel, a
whole-tensor ``slice_scatter`` reads a tensor nobody needs). Each row of :data:`NOOPS` names the
argument that is the result and the condition under which the call is a no-op;
:func:`~.pattern_matcher.forwardable` (shared with the algebraic rewrites) adds what every row
needs: the same value (shape, dtype, device, strides) and no aliasing a caller could observe.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.fx

from .pattern_matcher import forwardable, tensor_val

aten = torch.ops.aten


def _is_integer(node: torch.fx.Node) -> bool:
    val = tensor_val(node.args[0])
    return val is not None and not val.dtype.is_floating_point and not val.dtype.is_complex


def _covers_whole(node: torch.fx.Node) -> bool:
    """``slice_scatter(x, src, dim, start, end, step)`` with ``src`` as large as ``x``: every
    element of the result comes from ``src`` (a slice that long has start 0 and step 1)."""
    self_val, src_val = tensor_val(node.args[0]), tensor_val(node.args[1])
    return self_val is not None and src_val is not None and self_val.shape == src_val.shape


# op -> (the argument that is the result, when the call is a no-op)
NOOPS: dict[object, tuple[Callable[[torch.fx.Node], object], Callable[[torch.fx.Node], bool]]] = {
    aten.slice_scatter.default: (lambda n: n.args[1], _covers_whole),  # all of it is src
    aten.clone.default: (lambda n: n.args[0], lambda n: not n.kwargs),  # a copy of x is x
    aten.ceil.default: (lambda n: n.args[0], _is_integer),  # ceil(int) = int
    aten.floor.default: (lambda n: n.args[0], _is_integer),  # floor(int) = int
    aten.round.default: (lambda n: n.args[0], _is_integer),  # round(int) = int
    aten.trunc.default: (lambda n: n.args[0], _is_integer),  # trunc(int) = int
    aten.cat.default: (lambda n: n.args[0][0], lambda n: len(n.args[0]) == 1),  # cat([x]) = x
}


def remove_noop_ops(gm: torch.fx.GraphModule) -> list[tuple[str, str]]:
    """Forward every no-op call's result argument to its users; return ``(node, op)`` pairs."""
    done = []
    for node in list(gm.graph.nodes):
        row = NOOPS.get(node.target) if node.op == "call_function" else None
        if row is None or not node.users:
            continue
        result, is_noop = row
        if is_noop(node) and forwardable(node, result(node)):
            node.replace_all_uses_with(result(node))
            gm.graph.erase_node(node)
            done.append((node.name, str(node.target)))
    if done:
        gm.recompile()
    return done
