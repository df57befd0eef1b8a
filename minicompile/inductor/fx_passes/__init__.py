"""Graph passes on ATen FX graphs, run before lowering (mirrors torch/_inductor/fx_passes/:
``joint_graph.py``, ``post_grad.py``, ``freezing_patterns.py``, and torch/fx/passes/).

Each pass rewrites a ``torch.fx.GraphModule`` in place and returns what it did, so a notebook can
print it. :func:`run_graph_passes` runs them in an order where each one feeds the next:

1. :func:`fold_conv_bn` - eval batchnorm after a constant-weight conv folds into the conv;
2. :func:`eliminate_common_subexpressions` - ``sin(x)`` computed twice is computed once;
3. :func:`simplify_algebra` - the rewrite table in ``algebraic.py`` (``x*1 -> x``, ...), then
   :func:`remove_noop_ops` - calls that compute nothing (``clone`` read by other computations,
   a whole-tensor ``slice_scatter``, ``ceil`` of integers, ``cat`` of one tensor) disappear;
4. :func:`fold_constants` - anything computable from constants alone (the folded conv weights);
5. :func:`fold_conv_binary` - ``conv * c``, ``conv + c`` with per-channel constants ``c`` fold into
   the conv (decomposed eval batchnorm is such a chain), alternating with constant folding;
6. :func:`eliminate_dead_code` - whatever the others left unused;
7. :func:`reinplace_input_mutations` - a mutated input whose new value is the input with some
   elements replaced gets those elements written into it in place (marks nodes for lowering);
8. :func:`fuse_online_softmax` - where kernels are Triton's, softmax's max and sum of exp become
   one reduction (``online_softmax.py``): a long row is read once, not twice;
9. :func:`fuse_mm_bias_relu` - ``relu(mm(a, b) + bias)`` becomes one library call that applies
   the bias and the ReLU as it writes (``mm_activation.py``): no pointwise kernel after it;
   :func:`fuse_mm_bias_gelu` likewise a GELU after a large product on the CPU (oneDNN), and
   :func:`fuse_mm_bias` a bias no pointwise reader can take (``addmm``).

Every pass keeps results equal to eager's (``tests/test_fx_passes.py`` checks each one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.fx

from .algebraic import RULES, simplify_algebra
from .binary_folding import fold_conv_binary, fold_conv_bn
from .constant_folding import fold_constants
from .cse import eliminate_common_subexpressions
from .dce import eliminate_dead_code
from .noop import NOOPS, remove_noop_ops
from .mm_activation import fuse_mm_bias, fuse_mm_bias_gelu, fuse_mm_bias_relu
from .online_softmax import fuse_online_softmax, prepare_softmax_online
from .pattern_matcher import Op, Var, rewrite
from .reinplace import SCATTER_OPS, reinplace_input_mutations

__all__ = ["run_graph_passes", "PassReport", "eliminate_dead_code",
           "eliminate_common_subexpressions", "fold_constants", "simplify_algebra", "fold_conv_bn",
           "fold_conv_binary", "remove_noop_ops", "NOOPS", "reinplace_input_mutations",
           "SCATTER_OPS", "fuse_online_softmax", "prepare_softmax_online", "fuse_mm_bias_relu", "fuse_mm_bias",
           "RULES", "Op", "Var", "rewrite"]


@dataclass
class PassReport:
    """What :func:`run_graph_passes` changed, pass by pass."""

    conv_bn_folded: int = 0  # batchnorms, or per-channel ops of decomposed ones, folded into convs
    noops_removed: list[tuple[str, str]] = field(default_factory=list)  # (node, op)
    cse_merged: int = 0
    rewrites: list[tuple[str, str]] = field(default_factory=list)  # (node, rule)
    constants_folded: int = 0
    dead_removed: int = 0
    reinplaced: dict[str, str] = field(default_factory=dict)  # mutated input -> in place or why not
    online_softmax: int = 0  # max + sum(exp(x - max)) pairs made one reduction
    mm_activations: int = 0  # relu or gelu of mm + bias made one library call
    mm_biases: int = 0  # mm + bias read by no pointwise kernel made one library call (addmm)

    def __str__(self) -> str:
        rules = "".join(f"\n    {node}: {rule}" for node, rule in self.rewrites)
        noops = f"no-ops removed: {len(self.noops_removed)}, " if self.noops_removed else ""
        return (f"folded into convs: {self.conv_bn_folded}, {noops}CSE merged: {self.cse_merged}, "
                f"constants folded: {self.constants_folded}, dead removed: {self.dead_removed}, "
                f"rewrites: {len(self.rewrites)}{rules}{self._mutations()}"
                + (f"\n    online softmax: {self.online_softmax}" if self.online_softmax else "")
                + (f"\n    mm + bias + activation as one library call: {self.mm_activations}"
                   if self.mm_activations else "")
                + (f"\n    mm + bias as one library call (addmm): {self.mm_biases}"
                   if self.mm_biases else ""))

    def _mutations(self) -> str:
        return "".join(f"\n    mutated input {name}: {how}" for name, how in self.reinplaced.items())


def run_graph_passes(gm: torch.fx.GraphModule,
                     uses_online_softmax: Callable[[torch.device], bool] = lambda device: False
                     ) -> PassReport:
    """Run every pass once, in place, in the order of this module's docstring;
    ``uses_online_softmax(device)``: whether that device's kernels are Triton's."""
    report = PassReport()
    report.conv_bn_folded = fold_conv_bn(gm)
    report.cse_merged = eliminate_common_subexpressions(gm)
    report.rewrites = simplify_algebra(gm)
    report.cse_merged += eliminate_common_subexpressions(gm)  # rewrites can expose duplicates
    report.noops_removed = remove_noop_ops(gm)  # after CSE: the outputs it merged are visible
    report.constants_folded = fold_constants(gm)
    while n := fold_conv_binary(gm):  # each fold leaves new weights for constant folding
        report.conv_bn_folded += n
        report.constants_folded += fold_constants(gm)
    report.dead_removed = eliminate_dead_code(gm)
    report.reinplaced = reinplace_input_mutations(gm)  # it marks nodes for the lowering
    report.online_softmax = fuse_online_softmax(gm, uses_online_softmax)
    report.mm_activations = fuse_mm_bias_relu(gm) + fuse_mm_bias_gelu(gm)
    report.mm_biases = fuse_mm_bias(gm)
    return report
