"""Functionalization: remove every mutation from a traced ATen graph (mini version of
torch/_subclasses/functional_tensor.py and torch/_functorch/_aot_autograd/functional_utils.py).

Compilers want pure graphs: a node's value must not change after it is computed, so that nodes
can be reordered, fused, recomputed. The traced graph may still contain in-place ops
(``add_``, ``bernoulli_``, ``copy_``) and mutations of the graph's inputs (a BatchNorm's running
statistics). The pass rewrites

    add_ = aten.add_.Tensor(x, y)     ->   add_ = aten.add.Tensor(x, y)   # a new value
    (later readers of x)              ->   read add_ instead               # "rebinding"

and when the mutated tensor is a graph input, records the node holding its final value: the
graph returns it as an extra output and the runtime wrapper copies it back into the input
(``input.copy_(new_value)``), which is exactly what real AOTAutograd does.

What it refuses (raises Unsupported, so the backend falls back to eager): a mutation whose
effect would be visible through another alias (a view of the mutated tensor read after the
write, or a write into a view of a graph input). Real functionalization replays such writes onto
the base with ``*_scatter`` ops; we keep the simple case simple.
"""

from __future__ import annotations

import operator

import torch
import torch.fx as fx

from .tracer import Unsupported

aten = torch.ops.aten

# Mutating ops whose functional twin does not follow the "drop the trailing underscore" rule.
FUNCTIONAL_OVERRIDES = {
    aten.bernoulli_.float: aten.bernoulli.p,
}


def _batch_norm(node: fx.Node) -> list[tuple[int, int]]:
    """native_batch_norm updates its running stats in training mode without saying so in its
    schema. Eval: nothing is written. Training: the functional op returns the new stats."""
    x, w, b, mean, var, training, momentum, eps = node.args
    if not training or mean is None:
        node.target = aten._native_batch_norm_legit_no_training.default
        node.args = (x, w, b, mean, var, momentum, eps)
        return []
    node.target = aten._native_batch_norm_legit_functional.default
    # the functional op returns 5 values: (out, save_mean, save_rstd, new_mean, new_var)
    node.meta["val"] = (*node.meta["val"], mean.meta["val"], var.meta["val"])
    return [(3, 3), (4, 4)]  # (argument index, output index of its new value)


# ops that mutate arguments in place -> rewrite the node, return (arg index, output index) pairs
SPECIAL_MUTATIONS = {
    aten.native_batch_norm.default: _batch_norm,
}


def is_mutating(op) -> bool:
    return isinstance(op, torch._ops.OpOverload) and (op._schema.is_mutable
                                                      or op in SPECIAL_MUTATIONS)


def functional_variant(op: torch._ops.OpOverload) -> torch._ops.OpOverload:
    """aten.add_.Tensor -> aten.add.Tensor (same overload, no underscore), or the override."""
    if op in FUNCTIONAL_OVERRIDES:
        return FUNCTIONAL_OVERRIDES[op]
    name = op._schema.name.split("::")[1]
    if name.endswith("_"):
        packet = getattr(aten, name[:-1], None)
        overload = getattr(packet, op._overloadname, None) if packet else None
        if overload is not None and not overload._schema.is_mutable:
            return overload
    raise Unsupported(f"no functional variant of the mutating op {op}")


def _written_args(op: torch._ops.OpOverload) -> list[int]:
    return [i for i, a in enumerate(op._schema.arguments)
            if a.alias_info is not None and a.alias_info.is_write]


def functionalize(gm: fx.GraphModule) -> dict[str, fx.Node]:
    """Rewrite ``gm`` in place into a mutation-free graph.

    Returns ``{placeholder name: node holding that input's final value}`` for every mutated
    input, in graph input order (the caller adds them as outputs)."""
    graph = gm.graph
    order = {n: i for i, n in enumerate(graph.nodes)}
    version_of: dict[fx.Node, fx.Node] = {}  # a node's "root": the input or value it updates
    mutated: dict[fx.Node, fx.Node] = {}  # placeholder -> latest version

    def root(n: fx.Node) -> fx.Node:
        while n in version_of:
            n = version_of[n]
        return n

    for node in list(graph.nodes):
        if node.op != "call_function" or not is_mutating(node.target):
            continue
        op = node.target
        if op in SPECIAL_MUTATIONS:
            writes = SPECIAL_MUTATIONS[op](node)
            new_versions = []
            for arg_i, out_i in writes:
                with graph.inserting_after(node):
                    get = graph.call_function(operator.getitem, (node, out_i))
                get.meta["val"] = node.args[arg_i].meta["val"]
                get.meta["storage"] = node.args[arg_i].meta.get("storage")
                new_versions.append((node.args[arg_i], get))
        else:
            written = _written_args(op)
            if written != [0] or op._schema.returns[0].alias_info is None:
                raise Unsupported(f"{op} writes arguments {written}; only `self` is handled")
            node.target = functional_variant(op)
            new_versions = [(node.args[0], node)]  # the node itself is x's new version
        for old, new in new_versions:
            _check_no_visible_alias(graph, old, new, node, order, root)
            base = root(old)
            version_of[new] = old
            # rebinding: readers of the old version after this point read the new value
            for user in list(old.users):
                if user is not new and user is not node and order.get(user, -1) > order[node]:
                    user.replace_input_with(old, new)
            if base.op == "placeholder":
                mutated[base] = new
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    return {p.name: mutated[p] for p in placeholders if p in mutated}


def _check_no_visible_alias(graph, old, new, node, order, root) -> None:
    """Refuse writes that another alias (a view sharing the storage, taken before the write)
    would observe. Views taken after the write already read the new value."""
    key = old.meta.get("storage")
    base = root(old)
    for other in graph.nodes:
        if other.meta.get("storage") != key or other in (old, new, node) or root(other) is base:
            continue
        if order.get(other, len(order)) > order[node]:
            continue
        if other.op == "placeholder":
            raise Unsupported(f"{node.target} writes into a view of the input {other.name}")
        if any(order.get(u, -1) > order[node] for u in other.users):
            raise Unsupported(f"{node.target} mutates {old.name} while its alias {other.name}"
                              " is read afterwards")
