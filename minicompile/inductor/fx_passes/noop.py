"""No-op elimination before lowering (mirrors ``remove_noop_ops`` in
torch/_inductor/fx_passes/post_grad.py).

Some calls compute nothing: a ``slice_scatter`` whose source covers the whole tensor is its
source, ``ceil`` of an integer tensor is the tensor, ``cat`` of one tensor is that tensor, and a
``clone`` read only by other computations is its input. Lowered as written each would still
move its whole tensor through memory (a ``clone`` feeding a library call is a copy kernel, a
whole-tensor ``slice_scatter`` reads a tensor nobody needs). Each row of :data:`NOOPS` names the
argument that is the result and the condition under which the call is a no-op; :func:`forwardable`
adds what every row needs: the same value (shape, dtype, device, strides) and no aliasing a
caller could observe.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.fx

from .pattern_matcher import tensor_val

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


def _is_view(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and getattr(node.target, "is_view", False)


# ops that read a tensor's place in its storage (its storage offset), which a copy does not keep:
# functionalisation scatters a write through a view of an offset input into a clone of it
_READS_STORAGE = {aten.as_strided.default, aten.as_strided_scatter.default,
                  aten.as_strided_copy.default}


def _mutates(node: torch.fx.Node) -> bool:
    schema = getattr(node.target, "_schema", None)
    return schema is not None and schema.is_mutable


def _alias_users(node: torch.fx.Node) -> list[torch.fx.Node]:
    """The users of ``node`` and of every view of it (views of views too): whatever reads the
    same memory. A view's user sees ``node``'s storage, so it counts as a user of ``node``."""
    users, todo = [], list(node.users)
    while todo:
        user = todo.pop()
        users.append(user)
        if _is_view(user):
            todo.extend(user.users)
    return users


def forwardable(old: torch.fx.Node, new: object) -> bool:
    """May every use of ``old`` read ``new`` instead?

    Uses are followed through views: ``x.clone().reshape(-1)`` returned to the caller is an
    output of the clone as much as ``x.clone()`` is, and forwarding the clone would hand the
    caller a view of ``x`` (which sees every later write into ``x``, including the copy back of
    an in-place update on the input).
    """
    a, b = tensor_val(old), tensor_val(new)
    if a is None or b is None or (a.shape, a.dtype, a.device) != (b.shape, b.dtype, b.device):
        return False
    if a.stride() != b.stride():  # a caller (or a stride-reading op) would see other strides
        return False
    old_users, new_users = _alias_users(old), _alias_users(new)
    if any(_mutates(u) for u in old_users) or any(_mutates(u) for u in new_users):
        return False  # a write into one would now land in the other
    if any(u.target in _READS_STORAGE for u in old_users):
        return False  # it would see the other tensor's storage offset
    if any(u.op == "output" for u in old_users):  # the caller gets a fresh tensor today:
        fresh = new.op == "call_function" and not _is_view(new)  # not an input, nor a view
        return fresh and not any(u.op == "output" for u in new_users)  # nor another output
    return True


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
