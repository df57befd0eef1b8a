"""Draw what happens on a call of a compiled function: its cache entries checked in order, each
guard either passing (run that entry's graph) or failing (try the next entry), and a miss of
every entry recompiling, with the reason each recompile had (no real counterpart in torch;
real Dynamo keeps the same chain in C++, ``torch/csrc/dynamo/cache_entry.h``, and prints its
guard tree with ``TORCH_LOGS=guards``).

    draw_guard_flow(cfn)        # after a few calls of cfn = mc.compile(fn)

Each guard diamond lists its checks in short form, one per guard; ``print(entry.guard)`` shows
the generated code they stand for.
"""

from __future__ import annotations

import textwrap
from typing import Any, Callable

import graphviz

from ..dynamo.eval_frame import cache_entries, recompile_reasons
from ..dynamo.guards import Guard, GuardKind, TensorSpec

MAX_ROWS = 8  # guard rows drawn per entry; the rest are counted


def _tensor(spec: TensorSpec) -> str:
    """``f32[6, s] cpu``: a ``None`` size is symbolic (not checked)."""
    sizes = ", ".join("s" if n is None else str(n) for n in spec.shape)
    grad = " requires_grad" if spec.requires_grad else ""
    return f"{str(spec.dtype).removeprefix('torch.')}[{sizes}] {spec.device}{grad}"


# kind -> the short text of one guard (kinds without a row show their name and source)
SUMMARIES: dict[GuardKind, Callable[[Guard], str]] = {
    GuardKind.TENSOR_MATCH: lambda g: f"{g.name}: {_tensor(g.expected)}",
    GuardKind.EQUALS_MATCH: lambda g: f"{g.name} == {g.expected!r}",
    GuardKind.SHAPE_ENV: lambda g: str(g.expected),
    GuardKind.GRAD_MODE: lambda g: f"grad mode {'on' if g.expected else 'off'}",
    GuardKind.DEFAULT_DTYPE: lambda g: f"default dtype {g.expected}",
    GuardKind.GLOBAL_STATE: lambda g: "autocast, threads, ... unchanged",
}


def guard_rows(guards: list[Guard]) -> list[str]:
    """One short line per guard: its kind, then what it checks."""
    rows = []
    for g in guards:
        summary = SUMMARIES.get(g.kind, lambda g: g.name)(g)
        rows.append(f"{g.kind.value}: {summary}"[:60])
    if len(rows) > MAX_ROWS:
        rows = rows[:MAX_ROWS] + [f"... {len(rows) - MAX_ROWS} more"]
    return rows


def draw_guard_flow(compiled_fn: Any, title: str = "") -> graphviz.Digraph:
    """The cache of ``compiled_fn`` as a decision chain: call -> guard of entry 0 -> (pass) its
    graph, (fail) the guard of entry 1 -> ... -> recompile. An entry compiled after a miss is
    labelled with the recompile reason."""
    entries = cache_entries(compiled_fn)
    reasons = recompile_reasons(compiled_fn)
    dot = graphviz.Digraph(graph_attr={"rankdir": "TB", "label": title, "fontsize": "12"},
                           node_attr={"fontsize": "10", "fontname": "Helvetica"},
                           edge_attr={"fontsize": "10", "fontname": "Helvetica"})
    name = entries[0].code.co_name if entries else "fn"
    dot.node("call", f"call {name}(...)", shape="oval", style="filled", fillcolor="#e3f2fd")
    previous, edge_label = "call", ""
    for i, entry in enumerate(entries):
        rows = "\\l".join(guard_rows(entry.guard.guards)) + "\\l"
        dot.node(f"guard{i}", f"entry {i}: guard\\n{rows}", shape="box",
                 style="filled,rounded", fillcolor="#fff9c4")
        dot.edge(previous, f"guard{i}", label=edge_label)
        graphs = entry.result.graphs
        ops = sum(n.op.startswith("call_") for g in graphs for n in g.gm.graph.nodes)
        why = ""
        if 0 < i <= len(reasons):
            failures = [textwrap.shorten(r, 60) for r in reasons[i - 1].split("; ")]
            why = "\\ncompiled because:\\n" + "\\n".join(failures)
        with dot.subgraph() as row:  # the guard and what it runs side by side
            row.attr(rank="same")
            row.node(f"run{i}", f"run entry {i}\\n{len(graphs)} graph(s), {ops} ops{why}",
                     shape="box", style="filled", fillcolor="#c8e6c9")
            row.edge(f"guard{i}", f"run{i}", label="pass")
        previous, edge_label = f"guard{i}", "fail"
    dot.node("miss", "every guard failed:\\ntrace and compile a new entry\\n"
             "(after recompile_limit: run eagerly)", shape="octagon", style="filled",
             fillcolor="#ffcdd2")
    dot.edge(previous, "miss", label=edge_label)
    return dot
