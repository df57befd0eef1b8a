"""The backends that add no compiler stage of minicompile's own (mirrors
torch/_dynamo/backends/debugging.py): "eager", and the real PyTorch stages used for comparison.
"""

from __future__ import annotations

import torch


def eager(gm: torch.fx.GraphModule, example_inputs: list) -> callable:
    """Run the captured graph as it is: capture only, no compilation."""
    return gm.forward


# The FX graph reads its sizes from the inputs at run time, so symbolic (Sym(s0)) graphs are fine.
eager.supports_dynamic_shapes = True


def torch_inductor(gm: torch.fx.GraphModule, example_inputs: list) -> callable:
    """The real Inductor (torch._inductor.compile_fx) behind minicompile's capture."""
    from torch._inductor.compile_fx import compile_fx

    return compile_fx(gm, example_inputs)


def torch_aot_eager(gm: torch.fx.GraphModule, example_inputs: list) -> callable:
    """The real AOTAutograd with no code generation behind minicompile's capture."""
    from torch._dynamo.backends.debugging import aot_eager

    return aot_eager(gm, example_inputs)


# The real stages compile for the example inputs' sizes: compile them once per shape instead.
torch_inductor.supports_dynamic_shapes = False
torch_aot_eager.supports_dynamic_shapes = False
