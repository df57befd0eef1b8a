"""Draw a function split by graph breaks: guard -> graph 1 -> break (run natively) -> resume
function's guard -> graph 2 ... (no real counterpart; depyf and tlparse draw similar timelines).

Input is an ``ExplainOutput`` (``mc.explain(fn)(*args)``): its cache entries in the order they
were compiled, the graphs of each, and the graph breaks with their kind and user line.
"""

from __future__ import annotations

import linecache

import graphviz


def draw_graph_breaks(out, title: str = "") -> graphviz.Digraph:
    """One row per compiled frame (the function, then each resume function it reached): its
    guard, its graphs and the break that ends it, left to right; the next row starts where the
    break hands over to the resume function. Rows keep the picture as narrow as one frame."""
    dot = graphviz.Digraph(graph_attr={"rankdir": "TB", "label": title, "fontsize": "12"},
                           node_attr={"fontsize": "10", "fontname": "Helvetica"},
                           edge_attr={"fontsize": "10", "fontname": "Helvetica"})
    breaks = list(out.break_reasons)
    prev = None
    graph_index = 0
    for i, entry in enumerate(out.entries):
        with dot.subgraph() as row:
            row.attr(rank="same")
            guard = f"guard_{i}"
            row.node(guard, f"guard_{i}\n{entry.code.co_name}\n{len(entry.guard.guards)} guards",
                     shape="diamond", style="filled", fillcolor="#fff9c4")
            if prev is not None:  # down to the next row, which starts under this one
                dot.edge(prev, guard, label="resume", constraint="false")
                dot.edge(f"guard_{i - 1}", guard, style="invis", weight="10")
            prev = guard
            for g in entry.result.graphs:
                ops = [n for n in g.gm.graph.nodes if n.op.startswith("call_")]
                name = f"graph{graph_index}"
                row.node(name, f"{g.name}\n{len(ops)} ops", shape="box", style="filled",
                         fillcolor="#c8e6c9")
                row.edge(prev, name)
                prev, graph_index = name, graph_index + 1
            if i < len(breaks):
                b = breaks[i]
                node = f"break{i}"
                line = (b.user_line or "").split(": ", 1)[-1][:40]
                row.node(node, f"graph break: {getattr(b, 'kind', '')}\n{line}", shape="octagon",
                         style="filled", fillcolor="#ffcdd2")
                row.edge(prev, node, label="run natively")
                prev = node
    return dot


def break_chain(n_ops: int = 8, n_breaks: int = 0):
    """A straight-line function of ``n_ops`` pointwise steps with ``n_breaks`` prints spread
    between them (no loop: a break inside a loop would skip the whole frame), for measuring
    what breaks cost. Its source is registered with linecache so break reasons show lines."""
    where = {round((k + 1) * n_ops / (n_breaks + 1)) - 1 for k in range(n_breaks)}
    body = "".join("    x = x * 1.01 + 0.1\n" + ("    print(end='')\n" if i in where else "")
                   for i in range(n_ops))
    source = f"def chain_{n_breaks}(x):\n{body}    return x\n"
    filename = f"<break_chain_{n_ops}_{n_breaks}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[f"chain_{n_breaks}"]
