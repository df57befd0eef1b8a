"""Compile one ATen graph (mini version of torch/_inductor/compile_fx.py).

    compiled = compile_fx_inner(aten_gm, example_inputs)
    outs = compiled(*inputs)            # same outputs as aten_gm(*inputs)

Steps: run the FX graph passes (``fx_passes``: CSE, algebraic simplification, constant and
conv-batchnorm folding, dead-code elimination), lower the graph to loop IR (``GraphLowering``; artifact ``ir_pre_fusion``), schedule and
fuse it (``Scheduler``, when present; artifacts ``fusion``, ``ir_post_fusion``, and
``mc.metrics.num_bytes_accessed``), then run it. Until code generation exists the kernels run on
the reference executor, so every compiled graph is already checked against eager in the tests.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from .._logging import trace_artifact
from .executor import GraphExecutor
from .fx_passes import run_graph_passes
from .graph import GraphLowering


def schedule(graph: GraphLowering) -> tuple[Any, list]:
    """(scheduler or None, nodes in execution order)."""
    try:
        from .scheduler import Scheduler
    except ImportError:  # before the fusion stage exists: one node after another
        return None, list(graph.buffers)
    scheduler = Scheduler(graph)
    return scheduler, scheduler.ordered_nodes()


def compile_fx_inner(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
    report = run_graph_passes(gm)
    trace_artifact("ir_pre_fusion", lambda: str(report), title="graph passes")
    graph = GraphLowering(gm, example_inputs).run()
    trace_artifact("ir_pre_fusion", lambda: str(graph), title="loop IR after lowering")
    if graph.fallbacks:
        trace_artifact("ir_pre_fusion", lambda: "\n".join(
            f"fallback {op}: {reason}" for op, reason in graph.fallbacks), title="fallbacks")
    scheduler, nodes = schedule(graph)
    executor = GraphExecutor(graph, nodes)

    def compiled(*args: Any) -> Any:
        with torch.no_grad():
            return executor(*args)

    compiled.graph = graph  # for inspection in notebooks and tests
    compiled.scheduler = scheduler
    compiled.pass_report = report
    return compiled
