"""A linear layer's bias and ReLU done by the matrix-product library call (mirrors the epilogues
of torch/_inductor/kernel/mm.py's ``addmm`` choices, and ``aten._addmm_activation``, which
eager's fused Linear + ReLU paths call).

The decomposed ``relu(linear(x, w, b))`` is three nodes::

    mm = mm(x, w.T)          # a library call (extern kernel)
    y = relu(mm + b)         # a generated pointwise kernel: one more launch, one more pass

For a large product the pointwise kernel is noise. For a small one (a batch of 8 through a
64-wide MLP) each launch and each Python step of the wrapper costs more than the arithmetic, and
the library can apply the bias and the ReLU as it writes its result: cuBLASLt's bias + ReLU
epilogue on the GPU, ``addmm`` then an in-place ``relu_`` in C++ on the CPU.
:func:`fuse_mm_bias_relu` rewrites ``relu(mm(a, b) + bias)`` into one
``_addmm_activation(bias, a, b)`` node (an extern kernel) when the bias is a vector over the
product's columns and nothing else reads ``mm`` or the sum (``relu(addmm(bias, a, b))``, the
form of graphs not decomposed further, too).
"""

from __future__ import annotations

import torch
import torch.fx

from .pattern_matcher import Emitter, same_meta, tensor_val

aten = torch.ops.aten

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)  # what the library epilogues take


def _only_user_is(node: torch.fx.Node, user: torch.fx.Node) -> bool:
    return len(node.users) == 1 and user in node.users


def _bias_vector(bias, out: torch.Tensor) -> bool:
    """A contiguous vector over the product's columns, with its dtype and device."""
    vec = tensor_val(bias)
    return (vec is not None and out.dtype in FLOAT_DTYPES and vec.dim() == 1
            and vec.shape[0] == out.shape[1] and vec.dtype == out.dtype
            and vec.device == out.device and vec.stride() == (1,))


def _linear_parts(node: torch.fx.Node) -> tuple[tuple, list[torch.fx.Node]] | None:
    """((bias, a, b), the nodes it replaces) when ``node`` is ``mm(a, b) + bias`` (either order,
    ``mm`` read by nothing else) or ``addmm(bias, a, b)`` (beta and alpha 1)."""
    out = tensor_val(node)
    if node.op != "call_function" or node.kwargs or out is None or out.dim() != 2:
        return None
    if node.target == aten.addmm.default and len(node.args) == 3:
        bias, a, b = node.args
        return ((bias, a, b), [node]) if _bias_vector(bias, out) else None
    if node.target != aten.add.Tensor or len(node.args) != 2:
        return None
    for mm, bias in (node.args, node.args[::-1]):
        if isinstance(mm, torch.fx.Node) and mm.target == aten.mm.default \
                and _only_user_is(mm, node) and _bias_vector(bias, out):
            return (bias, *mm.args), [node, mm]
    return None


def fuse_mm_bias_relu(gm: torch.fx.GraphModule) -> int:
    """Replace each ``relu(mm(a, b) + bias)`` (or ``relu(addmm(bias, a, b))``) by
    ``_addmm_activation(bias, a, b)``; returns how many were replaced. The sum must have no
    reader but the ReLU (a sum read elsewhere would be computed twice)."""
    fused = 0
    for relu in list(gm.graph.nodes):
        if relu.op != "call_function" or relu.target != aten.relu.default:
            continue
        add = relu.args[0]
        if not isinstance(add, torch.fx.Node) or not _only_user_is(add, relu):
            continue
        found = _linear_parts(add)
        if found is None:
            continue
        args, replaced = found
        fusedmm = Emitter(gm.graph, relu)(aten._addmm_activation.default, *args)
        if not same_meta(relu, fusedmm):  # its value could not be computed: leave the three
            gm.graph.erase_node(fusedmm)
            continue
        relu.replace_all_uses_with(fusedmm)
        for dead in (relu, *replaced):
            gm.graph.erase_node(dead)
        fused += 1
    if fused:
        gm.graph.lint()
        gm.recompile()
    return fused
