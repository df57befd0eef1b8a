"""Dead-code elimination on an ATen FX graph (mirrors ``torch.fx.Graph.eliminate_dead_code`` and
the DCE Inductor runs in torch/_inductor/fx_passes/post_grad.py).

A node is dead when nothing uses its value and running it has no effect anyone could observe.
Walking the graph backwards removes whole dead chains in one sweep: by the time we reach a
producer, its dead consumers are already gone.
"""

from __future__ import annotations

import torch
import torch.fx

aten = torch.ops.aten


# ops whose effect is to raise: no value, but removing them would drop eager's error (an
# ``F.one_hot`` label out of range, decompositions/losses.py)
ASSERTS = {aten._assert_async.default, aten._assert_async.msg}


def has_side_effects(node: torch.fx.Node) -> bool:
    """True when removing ``node`` could change what the program does, even if it is unused."""
    if node.op in ("placeholder", "output"):
        return True  # the graph's signature
    if node.op != "call_function":
        return node.op == "call_module"  # a module may do anything
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        # An in-place op (add_, copy_) writes into one of its inputs: its effect is the write.
        return target._schema.is_mutable or target in ASSERTS
    return False  # operator.getitem and friends only compute


def eliminate_dead_code(gm: torch.fx.GraphModule) -> int:
    """Remove every unused node without side effects; return how many were removed."""
    removed = 0
    for node in reversed(list(gm.graph.nodes)):
        if not node.users and not has_side_effects(node):
            gm.graph.erase_node(node)
            removed += 1
    if removed:
        _drop_unused_attributes(gm)
        gm.recompile()
    return removed


def _drop_unused_attributes(gm: torch.fx.GraphModule) -> None:
    """Forget constants no get_attr node refers to any more (folded weights replace originals)."""
    used = {n.target for n in gm.graph.nodes if n.op == "get_attr"}
    for name in list(gm._buffers) + list(gm._parameters):
        if name not in used and "." not in name:
            gm._buffers.pop(name, None)
            gm._parameters.pop(name, None)
    for name, value in list(vars(gm).items()):
        if name.startswith("_tensor_constant") and name not in used and isinstance(value, torch.Tensor):
            delattr(gm, name)
