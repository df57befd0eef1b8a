"""Every stage's artifact for one function, in one object: the tour of the pipeline.

    from minicompile.course.artifacts import compile_with_artifacts
    art = compile_with_artifacts(fn, *args)
    art.dynamo_graph      # torch-level FX graph from the bytecode tracer
    art.guards            # the guard function's source
    art.forward, art.backward               # ATen graphs after AOT autograd + decompositions
    art.forward_lowering.buffers            # loop IR (GraphLowering) of the forward graph
    art.forward_scheduler.describe()        # kernels after fusion, with bytes read and written
    aten_graph(fn, *args, dynamic=True)     # only the ATen graph the front half makes

It is the ``"inductor"`` backend (``minicompile/inductor/backend.py``) with each stage's result
kept: real Dynamo's ``TORCH_COMPILE_DEBUG=1`` writes the same artifacts into a folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from .. import compile as mc_compile
from .. import explain
from ..aot_autograd import aot_module_simplified
from ..decompositions import decomposition_table
from ..inductor.compile_fx import compile_fx_inner


@dataclass
class Artifacts:
    compiled: Callable | None = None  # the compiled function (call it like the original)
    dynamo_graph: torch.fx.GraphModule | None = None
    guards: str = ""
    transformed_program: str = ""
    forward: torch.fx.GraphModule | None = None  # ATen forward graph (or inference graph)
    backward: torch.fx.GraphModule | None = None  # ATen backward graph, when grads are needed
    compiled_graphs: dict[str, Callable] = field(default_factory=dict)  # "forward"/"backward"

    def _part(self, which: str, attr: str):
        compiled = self.compiled_graphs.get(which)
        return getattr(compiled, attr, None)

    @property
    def forward_lowering(self):
        return self._part("forward", "graph")

    @property
    def forward_scheduler(self):
        return self._part("forward", "scheduler")

    @property
    def backward_lowering(self):
        return self._part("backward", "graph")

    @property
    def backward_scheduler(self):
        return self._part("backward", "scheduler")


def compile_with_artifacts(fn: Callable, *args: Any, partition_fn: str = "min_cut") -> Artifacts:
    """Compile ``fn`` with the full pipeline, run it once on ``args``, keep every artifact."""
    art = Artifacts()

    def keep(which: str) -> Callable:
        def compiler(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
            setattr(art, which, gm)
            art.compiled_graphs[which] = compile_fx_inner(gm, example_inputs)
            return art.compiled_graphs[which]
        return compiler

    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        art.dynamo_graph = gm
        return aot_module_simplified(gm, example_inputs, fw_compiler=keep("forward"),
                                     bw_compiler=keep("backward"),
                                     decompositions=decomposition_table, partition_fn=partition_fn)

    art.compiled = mc_compile(fn, backend=backend)
    art.compiled(*args)
    report = explain(fn)(*args)
    art.guards = "\n\n".join(e.guard.source for e in report.entries)
    art.transformed_program = report.transformed_program()
    return art


def aten_graph(fn: Callable, *args: Any, dynamic: bool | None = None) -> torch.fx.GraphModule:
    """The ATen graph minicompile's own front half makes of ``fn(*args)``: the bytecode tracer
    captures it, AOT autograd traces it to ATen with minicompile's decomposition table (the
    inference graph, when no input needs a gradient). ``dynamic=True`` gives symbolic sizes,
    which the graph takes as extra ``Sym`` inputs. This is the graph the inductor backend lowers.
    """
    graphs: list[torch.fx.GraphModule] = []

    def keep(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        graphs.append(gm)
        return gm

    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        return aot_module_simplified(gm, example_inputs, fw_compiler=keep,
                                     decompositions=decomposition_table)

    mc_compile(fn, backend=backend, dynamic=dynamic)(*args)
    return graphs[-1]
