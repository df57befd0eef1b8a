"""Draw a joint forward+backward graph with its partition: which nodes run in the forward,
which in the backward, which values are saved between them, and which the backward recomputes
(the picture behind torch/_functorch/partitioners.py's choices).

    from minicompile.viz.partition import draw_partition
    draw_partition(joint, default_partition(joint, sig.num_fwd_outputs))
"""

from __future__ import annotations

import graphviz
import torch.fx as fx

from .fx_graph import COLORS, node_label

SIDE_COLORS = {
    "forward": "#c8e6c9",  # green: runs in the forward graph
    "backward": "#bbdefb",  # blue: runs in the backward graph
    "recomputed": "#fff59d",  # yellow: runs in both (rematerialized in the backward)
    "saved": "#ffb74d",  # orange: kept alive from forward to backward
}


def _op_names(gm: fx.GraphModule) -> set[str]:
    return {n.name for n in gm.graph.nodes if n.op == "call_function"}


def node_sides(joint: fx.GraphModule, partition) -> dict[str, str]:
    """joint node name -> "forward" / "backward" / "recomputed" / "saved" / "input"."""
    fw, bw = _op_names(partition.fw_module), _op_names(partition.bw_module)
    sides = {}
    for n in joint.graph.nodes:
        if n.name in partition.saved:
            sides[n.name] = "saved"
        elif n.op == "placeholder" or n.op == "output":
            sides[n.name] = n.op
        elif n.name in fw and n.name in bw:
            sides[n.name] = "recomputed"
        elif n.name in fw:
            sides[n.name] = "forward"
        elif n.name in bw:
            sides[n.name] = "backward"
        else:
            sides[n.name] = "unused"
    return sides


def draw_partition(joint: fx.GraphModule, partition, title: str | None = None,
                   rankdir: str = "TB") -> graphviz.Digraph:
    """The joint graph coloured by partition; saved values in orange with a thick border."""
    sides = node_sides(joint, partition)
    dot = graphviz.Digraph(graph_attr={"rankdir": rankdir, "fontname": "Helvetica"},
                           node_attr={"shape": "box", "style": "rounded,filled",
                                      "fontname": "Helvetica", "fontsize": "10"})
    label = title or f"saved: {', '.join(partition.saved)} ({partition.saved_bytes} bytes)"
    dot.attr(label=label, labelloc="t")
    for n in joint.graph.nodes:
        side = sides[n.name]
        fill = SIDE_COLORS.get(side, COLORS.get(n.op, COLORS["default"]))
        extra = {"penwidth": "3"} if side == "saved" else {}
        if side == "unused":
            extra = {"style": "rounded,dashed"}
        dot.node(n.name, node_label(n), fillcolor=fill, **extra)
        for inp in n.all_input_nodes:
            dot.edge(inp.name, n.name)
    with dot.subgraph(name="cluster_legend") as legend:
        legend.attr(label="legend", fontsize="10")
        for side, color in SIDE_COLORS.items():
            legend.node(f"legend_{side}", side, fillcolor=color, shape="box",
                        style="rounded,filled")
    return dot
