"""Render a torch.fx graph with graphviz (the role torch/fx/passes/graph_drawer.py plays for
FX, in a smaller, readable form).

Placeholders are drawn as inputs (green), outputs as the sink (blue), ``get_attr`` nodes as
parameters (yellow), every other node as the op it calls with its output shape when known.
"""

from __future__ import annotations

from typing import Iterable

import graphviz
import torch
import torch.fx

COLORS = {
    "placeholder": "#c8e6c9",
    "output": "#bbdefb",
    "get_attr": "#fff9c4",
    "highlight": "#ffcc80",
    "default": "#ffffff",
}


def _target_name(node: torch.fx.Node) -> str:
    t = node.target
    if node.op == "call_method":
        return f".{t}()"
    if node.op == "call_module":
        return f"self.{t}"
    if isinstance(t, str):
        return t
    if isinstance(t, torch._ops.OpOverload):  # aten.add.Tensor -> add.Tensor
        return str(t).removeprefix("aten.")
    module = getattr(t, "__module__", "") or ""
    name = getattr(t, "__name__", str(t))
    if module.startswith("torch") and module != "torch":
        module = module.replace("torch.nn.functional", "F").replace("torch._C._nn", "F")
        return f"{module.split('.')[-1]}.{name}" if module != "_operator" else name
    if module == "_operator":
        return {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "getitem": "[]",
                "matmul": "@", "neg": "neg", "pow": "**"}.get(name, name)
    return f"torch.{name}" if module == "torch" else name


def _shape(node: torch.fx.Node) -> str:
    val = node.meta.get("val", node.meta.get("example_value"))
    if isinstance(val, torch.Tensor):
        dims = ", ".join(str(s) for s in val.shape)
        return f"{str(val.dtype).removeprefix('torch.')}[{dims}]"
    tm = node.meta.get("tensor_meta")
    if tm is not None and hasattr(tm, "shape"):
        return f"{str(tm.dtype).removeprefix('torch.')}[{', '.join(map(str, tm.shape))}]"
    return ""


def node_label(node: torch.fx.Node) -> str:
    if node.op == "placeholder":
        head = node.name
    elif node.op == "output":
        head = "output"
    elif node.op == "get_attr":
        head = f"{node.name}\n(self.{node.target})"
    else:
        head = f"{node.name}\n{_target_name(node)}"
    shape = _shape(node)
    return f"{head}\n{shape}" if shape else head


def draw_graph(
    gm: torch.fx.GraphModule | torch.fx.Graph,
    highlight: Iterable[str] = (),
    title: str | None = None,
    rankdir: str = "TB",
) -> graphviz.Digraph:
    """An FX graph as a graphviz Digraph (renders as SVG in Jupyter)."""
    graph = gm.graph if isinstance(gm, torch.fx.GraphModule) else gm
    highlight = set(highlight)
    dot = graphviz.Digraph(graph_attr={"rankdir": rankdir, "fontname": "Helvetica"},
                           node_attr={"shape": "box", "style": "rounded,filled",
                                      "fontname": "Helvetica", "fontsize": "10"})
    if title:
        dot.attr(label=title, labelloc="t")
    for node in graph.nodes:
        if node.name in highlight:
            fill = COLORS["highlight"]
        else:
            fill = COLORS.get(node.op, COLORS["default"])
        dot.node(node.name, node_label(node), fillcolor=fill)
        for inp in node.all_input_nodes:
            dot.edge(inp.name, node.name)
    return dot
