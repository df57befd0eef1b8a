"""The three IR levels of one program, side by side: ATen as the dispatcher sees it, core ATen
after minicompile's decomposition table, and prims after the prims rows on top (the levels
torch/_decomp and torch/_refs produce in PyTorch).

    graphs = trace_levels(model, [x])           # {"ATen": gm, "core ATen": gm, "prims": gm}
    print(op_count_table(graphs))
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.fx as fx

from ..aot_autograd import trace_module
from ..decompositions.prims import prims_table
from ..decompositions.registry import decomposition_table, ops_used

__all__ = ["trace_levels", "op_count_table", "count_ops", "unfused_bytes", "fused_bytes", "LEVELS"]

LEVELS: dict[str, Callable[[], dict]] = {
    "ATen": dict,
    "core ATen": lambda: dict(decomposition_table),
    "prims": lambda: {**decomposition_table, **prims_table},
}


def trace_levels(model, inputs: list, joint: bool = False) -> dict[str, fx.GraphModule]:
    """Trace ``model(*inputs)`` once per level (forward only unless ``joint``)."""

    return {level: trace_module(model, inputs, table(), joint=joint)[0]
            for level, table in LEVELS.items()}


def op_count_table(graphs: dict[str, fx.GraphModule]) -> str:
    """Rows: levels; columns: total op count and distinct ops (the vocabulary a backend needs)."""
    lines = [f"{'level':<10} {'ops':>5} {'distinct':>8}  example ops"]
    for level, gm in graphs.items():
        used = ops_used(gm)
        names = sorted({str(op.overloadpacket).removeprefix("aten.") for op in used})
        lines.append(f"{level:<10} {sum(used.values()):>5} {len(used):>8}  "
                     f"{', '.join(names[:8])}{' ...' if len(names) > 8 else ''}")
    return "\n".join(lines)


def count_ops(gm: fx.GraphModule) -> int:
    return sum(ops_used(gm).values())





def _nbytes(val) -> int:
    if isinstance(val, torch.Tensor):
        return val.numel() * val.element_size()
    if isinstance(val, (tuple, list)):
        return sum(_nbytes(v) for v in val)
    return 0


def unfused_bytes(gm: fx.GraphModule) -> int:
    """Memory traffic when every op is its own kernel: each op reads its tensor inputs from
    memory and writes its output back (views move nothing)."""
    total = 0
    for n in gm.graph.nodes:
        if n.op != "call_function" or getattr(n.target, "is_view", False) or not isinstance(
                n.target, torch._ops.OpOverload):
            continue
        total += _nbytes(n.meta.get("val")) + sum(_nbytes(a.meta.get("val"))
                                                  for a in n.all_input_nodes)
    return total


def fused_bytes(gm: fx.GraphModule) -> int:
    """The floor: one kernel reading the graph's inputs once and writing its outputs once."""
    inputs = sum(_nbytes(n.meta.get("val")) for n in gm.graph.nodes if n.op == "placeholder")
    outputs = sum(_nbytes(a.meta.get("val")) for a in gm.graph.output_node().all_input_nodes)
    return inputs + outputs
