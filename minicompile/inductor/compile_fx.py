"""Compile one ATen graph (mini version of torch/_inductor/compile_fx.py).

    compiled = compile_fx_inner(aten_gm, example_inputs)
    outs = compiled(*inputs)            # same outputs as aten_gm(*inputs)

Steps: run the FX graph passes (``fx_passes``: CSE, algebraic simplification, constant and
conv-batchnorm folding, dead-code elimination), lower the graph to loop IR (``GraphLowering``),
schedule and fuse it (``Scheduler``), then run it. Until code generation exists the kernels run
on the reference executor, so every compiled graph is already checked against eager in the tests.

Symbolic sizes: a graph traced with ``dynamic=True`` has ``Sym(s0)`` placeholders and fake
tensors of size ``(s0, 7)``. The lowering keeps ``s0`` as a SymPy symbol in every size and index
and remembers which input dim holds it; the executor reads it from the runtime inputs on each
call, so one compiled graph serves every size (the backend declares ``supports_dynamic_shapes``).

What ``MINICOMPILE_LOGS=ir_pre_fusion,ir_post_fusion,fusion`` prints, once per graph and each
titled with the graph's name (``forward graph 0``, ``backward graph 1``; Inductor's
``model__0_forward_0`` debug folders): ``ir_pre_fusion`` the graph passes' report, the loop IR
and any fallbacks; ``fusion`` every fusion decision with its reason; ``ir_post_fusion`` the
kernels, each with the bytes it reads and writes.

``counters`` (mirrors ``torch._dynamo.utils.counters["inductor"]``) counts the graphs compiled
here, so a test can see that one compile served many sizes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

import torch

from .._logging import trace_artifact
from .executor import GraphExecutor
from .fx_passes import run_graph_passes
from .graph import GraphLowering
from .scheduler import Scheduler

# "graphs": graphs compiled; "symbolic_graphs": those with symbolic sizes (never reset by
# mc.reset, like torch's counters: take differences)
counters: Counter[str] = Counter()


def compile_fx_inner(gm: torch.fx.GraphModule, example_inputs: list,
                     graph_kind: str = "graph") -> Callable:
    """``graph_kind`` ("forward", "backward", "inference") only names the graph in the logs."""
    name = f"{graph_kind} graph {counters['graphs']}"
    counters["graphs"] += 1
    report = run_graph_passes(gm)
    graph = GraphLowering(gm, example_inputs, name=name).run()
    if graph.symbol_sources:
        counters["symbolic_graphs"] += 1
    trace_artifact("ir_pre_fusion", lambda: _pre_fusion_text(report, graph),
                   title=f"{name}: loop IR before fusion")
    scheduler = Scheduler(graph)  # logs "fusion" and "ir_post_fusion"
    executor = GraphExecutor(graph, scheduler.ordered_nodes())

    def compiled(*args: Any) -> Any:
        with torch.no_grad():
            return executor(*args)

    compiled.graph = graph  # for inspection in notebooks and tests
    compiled.scheduler = scheduler
    compiled.pass_report = report
    return compiled


def _pre_fusion_text(report: Any, graph: GraphLowering) -> str:
    """One block: what the FX passes changed, the loop IR, and what fell back to ATen."""
    parts = [f"# graph passes: {report}", str(graph)]
    parts += [f"# fallback {op}: {reason}" for op, reason in graph.fallbacks]
    return "\n".join(parts)
