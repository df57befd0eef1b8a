"""Constant folding (mirrors torch/_inductor/constant_folding.py and freezing's use of it).

A node whose every input is a constant (a ``get_attr`` tensor of the module, or a Python number)
computes the same tensor on every call, so we compute it once, now, with eager PyTorch, and store
the result as a new constant. After conv-batchnorm folding this is what turns
``weight * (gamma / sqrt(var + eps))`` into one ready-made weight.

What we leave alone, and why:
- factory ops with no constant tensor input (``full``, ``arange``, ``zeros``): storing their
  output would trade a cheap kernel for a large constant (Inductor keeps them for the same reason);
- random and in-place ops: folding would freeze one draw, or drop a write.
"""

from __future__ import annotations

import torch
import torch.fx

from .dce import eliminate_dead_code


def _is_foldable(node: torch.fx.Node, constant: dict[torch.fx.Node, object]) -> bool:
    if node.op != "call_function":
        return False
    target = node.target
    if isinstance(target, torch._ops.OpOverload) and (
        target._schema.is_mutable or torch.Tag.nondeterministic_seeded in target.tags
    ):
        return False
    inputs = node.all_input_nodes
    return bool(inputs) and all(n in constant for n in inputs)


def fold_constants(gm: torch.fx.GraphModule) -> int:
    """Evaluate every node computable from constants alone; return how many nodes were folded."""
    constant: dict[torch.fx.Node, object] = {}
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            constant[node] = _fetch_attr(gm, node.target)
        elif _is_foldable(node, constant):
            args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: constant[n])
            constant[node] = node.target(*args, **kwargs)

    # Replace only the frontier: folded nodes that some non-folded node still needs.
    folded = 0
    for node in list(gm.graph.nodes):
        if node.op == "get_attr" or node not in constant:
            continue
        if all(user in constant for user in node.users):
            continue  # only feeds other folded nodes: DCE removes it afterwards
        value = constant[node]
        if not isinstance(value, torch.Tensor):
            continue  # a tuple (getitem folds it) or a Python number
        name = _fresh_name(gm, "_folded_constant")
        gm.register_buffer(name, value.detach().clone())
        with gm.graph.inserting_before(node):
            replacement = gm.graph.get_attr(name)
        replacement.meta.update(node.meta)
        replacement.meta.setdefault("val", value)  # nodes a pass built have no fake value yet
        node.replace_all_uses_with(replacement)
        folded += 1
    if folded:
        eliminate_dead_code(gm)
        gm.recompile()
    return folded


def _fetch_attr(gm: torch.nn.Module, target: str) -> object:
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _fresh_name(gm: torch.nn.Module, prefix: str) -> str:
    i = 0
    while hasattr(gm, f"{prefix}{i}"):
        i += 1
    return f"{prefix}{i}"
