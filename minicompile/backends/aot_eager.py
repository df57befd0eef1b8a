"""The ``aot_eager`` backend: minicompile's AOT autograd and decompositions, then run the ATen
graphs as they are (mirrors ``aot_eager`` in torch/_dynamo/backends/debugging.py, which runs
the real AOTAutograd with no code generation).

    mc.compile(fn, backend="aot_eager")
    torch.compile(fn, backend=aot_eager)          # real Dynamo in front works too
"""

from __future__ import annotations

from typing import Callable

import torch.fx as fx

from ..decompositions import decomposition_table
from ..aot_autograd import aot_module_simplified


def aot_eager(gm: fx.GraphModule, example_inputs: list, partition_fn: str = "default",
              decompositions: dict | None = None) -> Callable:
    """Trace forward and backward to ATen (decomposed with minicompile's table), partition,
    and run the resulting graphs with no further compilation."""
    table = decomposition_table if decompositions is None else decompositions
    return aot_module_simplified(gm, example_inputs, decompositions=table,
                                 partition_fn=partition_fn)


def aot_eager_min_cut(gm: fx.GraphModule, example_inputs: list) -> Callable:
    """``aot_eager`` with the min-cut rematerialization partitioner."""
    return aot_eager(gm, example_inputs, partition_fn="min_cut")


def aot_eager_no_decomp(gm: fx.GraphModule, example_inputs: list) -> Callable:
    """``aot_eager`` keeping compound ATen ops (no decomposition table)."""
    return aot_eager(gm, example_inputs, decompositions={})


# Graphs with symbolic sizes (Sym(s0) in the placeholders' fake tensors) are traced with those
# sizes as graph values, so one compiled graph serves every size; what the tracer cannot express
# falls back to eager.
for _backend in (aot_eager, aot_eager_min_cut, aot_eager_no_decomp):
    _backend.supports_dynamic_shapes = True
