"""Pictures of a schedule: the fusion graph with one graphviz cluster per kernel, and the
memory-planning timeline (the views torch/_inductor/debug.py's ``draw_buffers`` and
torch/_inductor/memory.py's estimates give of the real scheduler).

    draw_fusion(scheduler)                     # SVG in Jupyter
    plot_memory_timeline({"unfused": plan_a, "fused": plan_b})
"""

from __future__ import annotations

import graphviz

COLORS = {"input": "#c8e6c9", "stored": "#ffffff", "kept": "#eeeeee", "output": "#bbdefb",
          "extern": "#fff9c4", "reduction": "#ffe0b2"}


def draw_fusion(scheduler, title: str = "") -> graphviz.Digraph:
    """Buffers as boxes, reads as edges, one dashed cluster per kernel. Grey dashed boxes are
    never stored: fusion keeps them inside their kernel."""
    dot = graphviz.Digraph(graph_attr={"rankdir": "TB", "label": title, "fontsize": "12"},
                           node_attr={"shape": "box", "style": "filled,rounded",
                                      "fontname": "monospace", "fontsize": "10"})
    for name in sorted(scheduler.input_names):
        dot.node(name, name, fillcolor=COLORS["input"])
    for i, kernel in enumerate(scheduler.kernels):
        stored = set(scheduler.stored_buffers(kernel))
        r, w = scheduler.kernel_bytes(kernel)
        with dot.subgraph(name=f"cluster_{i}") as c:
            c.attr(label=f"kernel {i}: read {r} B, write {w} B", style="dashed", fontsize="10")
            for n in kernel.get_nodes():
                name = n.get_name()
                kind = ("extern" if n.is_extern() else "reduction" if n.is_reduction()
                        else "pointwise")
                label = f"{name}\n{kind}"
                if name in scheduler.output_names:
                    color, style = COLORS["output"], "filled,rounded"
                elif name in stored:
                    color, style = COLORS.get(kind, COLORS["stored"]), "filled,rounded"
                else:
                    color, style = COLORS["kept"], "filled,rounded,dashed"
                c.node(name, label, fillcolor=color, style=style)
    for kernel in scheduler.kernels:
        for n in kernel.get_nodes():
            for src in sorted(n.read_names()):
                if src in scheduler.buffers:
                    dot.edge(src, n.get_name())
    return dot


def plot_memory_timeline(plans: dict, ax=None, title: str = "live memory per kernel"):
    """Step plot of the live bytes while each kernel runs, one line per plan (e.g. unfused vs
    fused), the peak marked."""
    import matplotlib.pyplot as plt  # lazy: optional, and slow to import

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3))
    for label, plan in plans.items():
        xs = list(range(len(plan.timeline)))
        ys = [b for _, b in plan.timeline]
        ax.step(xs, ys, where="mid", label=f"{label} (peak {plan.peak_bytes} B)")
    ax.set_xlabel("kernel")
    ax.set_ylabel("live bytes")
    ax.set_title(title)
    ax.legend()
    return ax
