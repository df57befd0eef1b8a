"""Common-subexpression elimination (mirrors torch/fx/passes/dialect/common/cse_pass.py).

Two nodes that call the same op on the same arguments compute the same value, so the second can
reuse the first. One forward walk suffices: arguments are rewritten to their representatives
before a node's key is built, so ``sin(x) * sin(x)`` first merges the two ``sin`` nodes and then
sees ``mul(sin, sin)``.

Random ops (``rand``, ``dropout``'s mask) and in-place ops are never merged: two draws are two
different values, and two writes are two effects.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx


def _is_pure(node: torch.fx.Node) -> bool:
    target = node.target
    if node.op != "call_function":
        return False
    if isinstance(target, torch._ops.OpOverload):
        if target._schema.is_mutable or torch.Tag.nondeterministic_seeded in target.tags:
            return False
    return True


def _hashable(value: Any) -> Any:
    """Turn an argument into a dict key: nodes stay nodes, lists become tuples."""
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, *map(_hashable, value))
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, float) and value != value:  # NaN != NaN: key it by its repr
        return ("nan",)
    if isinstance(value, (torch.dtype, torch.device, torch.layout, torch.memory_format)):
        return str(value)
    return (type(value).__name__, value)  # 1 and 1.0 and True differ for ATen


def eliminate_common_subexpressions(gm: torch.fx.GraphModule) -> int:
    """Merge nodes computing the same pure op on the same arguments; return how many merged."""
    seen: dict[tuple, torch.fx.Node] = {}
    merged = 0
    for node in list(gm.graph.nodes):
        if not _is_pure(node):
            continue
        key = (node.target, _hashable(node.args), _hashable(node.kwargs))
        try:
            hash(key)
        except TypeError:  # an argument we cannot key (a tensor constant): leave the node alone
            continue
        if key in seen:
            node.replace_all_uses_with(seen[key])
            gm.graph.erase_node(node)
            merged += 1
        else:
            seen[key] = node
    if merged:
        gm.recompile()
    return merged
