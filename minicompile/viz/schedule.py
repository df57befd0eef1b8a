"""Notebook shorthands for the scheduler (course tooling; no counterpart in torch/).

    s = schedule_function(fn, *args)       # trace to ATen, run the passes, lower, schedule
    run_scheduled(s, *args)                # run its kernels through the code-generation seam
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from ..decompositions import decomposition_table
from ..inductor.codegen.wrapper import WrapperCodeGen, unflatten_outputs
from ..inductor.fx_passes import run_graph_passes
from ..inductor.graph import lower_graph
from ..inductor.options import InductorOptions
from ..inductor.scheduler import Scheduler


def schedule_function(fn: Callable, *args: Any, fuse: bool = True,
                      record_metrics: bool = True) -> Scheduler:
    """Trace ``fn`` to ATen (make_fx with minicompile's decompositions), run the graph passes,
    lower, and schedule."""
    gm = make_fx(fn, decomposition_table=decomposition_table)(*args)
    run_graph_passes(gm)
    return Scheduler(lower_graph(gm, list(args)), fuse=fuse, record_metrics=record_metrics)


def run_scheduled(s: Scheduler, *args: Any, options: dict | None = None) -> Any:
    """Generate the wrapper and kernels of a scheduled graph (the configured backend, or
    ``options={"cpu_backend": ...}``) and run them on ``args``."""
    knobs = InductorOptions.of(options) if options is not None else None  # None: the schedule's
    _, call = WrapperCodeGen(s.graph, s).generate(lambda w: s.codegen(w, knobs))
    with torch.no_grad():
        return unflatten_outputs(s.graph, call(list(args)))
