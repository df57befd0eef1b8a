"""The ``cudagraphs`` backend: the captured graph through AOT autograd, then its ATen graphs run
as they are, each replayed as a CUDA graph (mirrors torch/_dynamo/backends/cudagraphs.py: CUDA
graphs without code generation).

    mc.compile(model, backend="cudagraphs")

Launch overhead is all it removes: the kernels are eager's, one per ATen op.
"""

from __future__ import annotations

import itertools
from typing import Callable

import torch.fx as fx

from ..aot_autograd import aot_module_simplified
from ..cudagraphs import cudagraphify

_graphs = itertools.count()


def _compiler(kind: str) -> Callable[[fx.GraphModule, list], Callable]:
    def compile_graph(gm: fx.GraphModule, example_inputs: list) -> Callable:
        runner = cudagraphify(lambda args: tuple(gm.forward(*args)), gm,
                              f"{kind} graph {next(_graphs)}", kind)
        return lambda *args: runner(list(args))
    return compile_graph


def cudagraphs(gm: fx.GraphModule, example_inputs: list) -> Callable:
    """AOT autograd with no decompositions beyond its own, every graph through a runner."""
    return aot_module_simplified(gm, example_inputs, fw_compiler=_compiler("forward"),
                                 bw_compiler=_compiler("backward"),
                                 inference_compiler=_compiler("inference"))


cudagraphs.supports_dynamic_shapes = True  # one recording per shape (cudagraph_utils.decide)
