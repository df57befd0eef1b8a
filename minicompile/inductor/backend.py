"""The ``"inductor"`` backend (mirrors ``compile_fx`` in torch/_inductor/compile_fx.py, the
function ``torch.compile`` calls): AOT autograd traces forward and backward to ATen with
minicompile's decomposition table, and each ATen graph goes through ``compile_fx_inner``.

    mc.compile(model, backend="inductor")
    torch.compile(model, backend=inductor)      # real Dynamo in front works too
"""

from __future__ import annotations

import functools
from typing import Callable

import torch

from ..aot_autograd import aot_module_simplified
from ..decompositions import decomposition_table
from .compile_fx import compile_fx_inner
from .options import InductorOptions

aten = torch.ops.aten


def var_mean_on_cpu(x, *args, **kwargs):
    """``var_mean`` decomposed on a CPU only. On a GPU it is lowered whole: one Welford
    reduction, a single read of its input (a batch norm's statistics), split into equal chunks
    where it has few outputs (``lowerings/reductions.split_welford``), where the decomposition
    (the mean, then sum((x - mean)^2)) reads the input twice, in twice the kernels once split.
    On a CPU the two vectorised passes stay: over a million elements a thread's sequential
    Welford loses more to rounding than two sums."""
    if x.device.type != "cpu":
        return NotImplemented
    return decomposition_table[aten.var_mean.correction](x, *args, **kwargs)


def decompositions() -> dict:
    """The decomposition table the backend traces with: the registered one, with ``var_mean``
    left whole off the CPU."""
    return {**decomposition_table, aten.var_mean.correction: var_mean_on_cpu}


def inductor(gm: torch.fx.GraphModule, example_inputs: list, mode: str | None = None,
             options: dict | None = None) -> Callable:
    """``mode`` ("reduce-overhead", "max-autotune", ...) and ``options`` set inductor knobs
    over ``config.inductor`` for this graph only: read once, here, into the ``InductorOptions``
    that the forward, backward and inference compiles all read."""
    opts = InductorOptions.build(mode, options)
    compile_graph = functools.partial(compile_fx_inner, options=opts)
    # min-cut partitioning, as Inductor does: recompute cheap pointwise ops in the backward
    # instead of saving them, since fusion makes the recomputation almost free
    return aot_module_simplified(
        gm, example_inputs, decompositions=decompositions(), partition_fn="min_cut",
        fw_compiler=functools.partial(compile_graph, graph_kind="forward"),
        bw_compiler=functools.partial(compile_graph, graph_kind="backward"),
        inference_compiler=functools.partial(compile_graph, graph_kind="inference"))


# The lowering maps symbolic sizes to SymPy symbols and the executor binds them from the runtime
# inputs, so one compiled graph serves every size: Dynamo may pass graphs with Sym(s0) inputs.
inductor.supports_dynamic_shapes = True
