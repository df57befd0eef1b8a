"""CUDA graphs: the stage after code generation (mirrors torch/_inductor/cudagraph_trees.py and
torch/_dynamo/backends/cudagraphs.py).

    mc.compile(model, mode="reduce-overhead")    # inductor's kernels, replayed as CUDA graphs
    mc.compile(model, backend="cudagraphs")      # the captured ATen graphs, no code generation

Reading map:

    cudagraph_utils.py   what may be recorded (``skip_reason``), which inputs a recording reads
                         in place (``reads_in_place``), and what a call does with the
                         recordings it has (``decide``: warm up, record, replay, run as code)
    cudagraph_trees.py   ``CUDAGraphRunner``: static inputs, the private memory pool, recording
                         with ``torch.cuda.graph``, replays, stale outputs, pending backwards

Inductor runs this stage through its post-compile seam (``compile_fx.register_post_compile``;
``minicompile/__init__.py`` registers it): a graph compiled with the ``cudagraphs`` option
(``mode="reduce-overhead"``, ``"max-autotune"``) gets a runner around its program. Why a graph
runs without one is logged (``MINICOMPILE_LOGS=cudagraphs``) and counted in ``counters``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

import torch.fx as fx

from .cudagraph_trees import CUDAGraphRunner
from .cudagraph_utils import (MAX_RECORDINGS, GraphFacts, decide, facts_of, reads_in_place,
                              skip_reason)

# "wrapped": graphs given a runner; "skipped": graphs run without CUDA graphs (never reset)
counters: Counter[str] = Counter()


def cudagraphify(fn: Callable[[list], tuple], gm: fx.GraphModule, name: str,
                 kind: str) -> CUDAGraphRunner:
    """``fn`` (arguments as one list, outputs as a tuple) run through CUDA graphs."""
    runner = CUDAGraphRunner(fn, facts_of(gm), name, kind, gm.meta.get("saved_outputs_start"))
    counters["skipped" if runner.skip else "wrapped"] += 1
    return runner


class CUDAGraphsPostCompile:
    """Inductor's post-compile wrapper: a runner around a graph compiled with ``cudagraphs``."""

    name = "cudagraphs"

    def __call__(self, compiled: Any, gm: fx.GraphModule) -> Callable[[list], tuple] | None:
        if not compiled.options.cudagraphs:
            return None
        return cudagraphify(compiled.current_callable, gm, compiled.name, compiled.kind)


post_compile = CUDAGraphsPostCompile()

__all__ = ["CUDAGraphRunner", "GraphFacts", "MAX_RECORDINGS", "counters", "cudagraphify",
           "decide", "facts_of", "post_compile", "reads_in_place", "skip_reason"]
