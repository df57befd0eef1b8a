"""Draw a lowered graph's buffers and what each reads, edge labels the index formulas (the
picture torch/_inductor/debug.py's ``draw_buffers`` gives of real Inductor's IR).

    graph = GraphLowering(gm).run()
    draw_buffers(graph)        # inputs green, one box per buffer, outputs blue

An edge ``x -> buf1`` labelled ``6*i0 + i1`` says: ``buf1``'s loop nest loads ``x`` at that flat
index. A broadcast is an index that leaves a loop variable out (``y[i1]``), a reduction reads
with its ``r`` variables, and a library call (extern kernel) reads its inputs whole (``*``).
"""

from __future__ import annotations

import graphviz

from .fusion import COLORS

# the node's kind, as its first printed line ends ("buf1: float32[4, 6] = Pointwise") -> colour
KIND_COLORS = {"Pointwise": COLORS["stored"], "Reduction": COLORS["reduction"]}


def _header(buf) -> tuple[str, str]:
    """(label, fill colour) of a buffer: its name, layout and kind."""
    head = str(buf).splitlines()[0]
    name_layout, _, kind = head.partition(" = ")
    if len(kind) > 30:  # a library call with its arguments: the op's name is enough here
        kind = kind.split("(")[0]
    kind_name = kind.split("(")[0].split()[0] if kind else ""
    return f"{name_layout}\n{kind}", KIND_COLORS.get(kind_name, COLORS["extern"])


def _index_label(dep) -> str:
    return "*" if dep.whole_view else str(dep.index)


def draw_buffers(graph, title: str = "") -> graphviz.Digraph:
    """One node per graph input and buffer; an edge per read, labelled with its index."""
    dot = graphviz.Digraph(graph_attr={"rankdir": "TB", "label": title, "fontsize": "12"},
                           node_attr={"shape": "box", "style": "filled,rounded",
                                      "fontname": "monospace", "fontsize": "10"},
                           edge_attr={"fontname": "monospace", "fontsize": "9"})
    for name, value in graph.graph_inputs.items():
        layout = getattr(value, "layout", None)
        label = f"{name}: {layout}" if layout is not None else f"{name} (a size)"
        dot.node(name, label, fillcolor=COLORS["input"])
    outputs = {getattr(o, "name", None) for o in graph.graph_outputs}
    for buf in graph.buffers:
        label, color = _header(buf)
        dot.node(buf.name, label, fillcolor=COLORS["output"] if buf.name in outputs else color)
        for dep in buf.get_read_writes().reads:
            dot.edge(dep.name, buf.name, label=" " + _index_label(dep))
    return dot
