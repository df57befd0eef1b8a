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

A bias alone stays with the library too (:func:`fuse_mm_bias`, the choice real Inductor makes
by keeping ``addmm`` and unfusing it only for pointwise readers, ``post_grad.py``'s
``unfuse_bias_add_to_pointwise``): ``mm(a, b) + bias`` becomes ``addmm(bias, a, b)`` unless
every reader of the sum is a pointwise op (through views), which would take the add into its
own kernel. Attention's query, key and value projections are read by the attention call: as
``mm`` + add each launched a kernel just for the bias.

On the CPU, a GELU after a large product goes to oneDNN instead (real Inductor's
``mkldnn_fusion.py``: ``mkldnn._linear_pointwise`` with a ``"gelu"`` post-op):
:func:`fuse_mm_bias_gelu` rewrites the exact GELU of ``mm(a, b) + bias`` into one call that
applies the bias and the GELU to each block of the product while it is in cache. A 1024x512 by
512x1024 product + GELU took 5.28 ms against 5.94 for eager on the 2-core VM (the product alone
5.65): no pass over the 4 MB result.
"""

from __future__ import annotations

import math

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
        emit = Emitter(gm.graph, relu)
        fused += _swap_in(gm, emit, relu, emit(aten._addmm_activation.default, *args),
                          [relu, *replaced])
    return _recompiled(gm, fused)


def _swap_in(gm: torch.fx.GraphModule, emit: Emitter, out: torch.fx.Node, new: torch.fx.Node,
             dead: list[torch.fx.Node]) -> int:
    """1 when ``new`` (made by ``emit``) replaces ``out`` for its readers and the nodes of
    ``dead`` (``out`` and those only it read) are erased, last first; 0, and what ``emit``
    made erased, when ``new``'s value could not be computed or differs in shape or dtype."""
    if not same_meta(out, new):
        for node in reversed(emit.created):
            gm.graph.erase_node(node)
        return 0
    out.replace_all_uses_with(new)
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    for node in sorted(set(dead), key=order.__getitem__, reverse=True):
        gm.graph.erase_node(node)
    return 1


def _recompiled(gm: torch.fx.GraphModule, fused: int) -> int:
    if fused:
        gm.graph.lint()
        gm.recompile()
    return fused


LINEAR_POINTWISE = getattr(getattr(torch.ops, "mkldnn", None), "_linear_pointwise", None)
GELU_MIN_FLOPS = 2 ** 24  # smaller products: oneDNN's call costs more than the pass it saves


def _is(arg, number: float) -> bool:
    """A scalar argument equal to ``number`` (to the last bits of a float64 constant)."""
    return isinstance(arg, (int, float)) and abs(arg - number) < 1e-15


def _exact_gelu_of(out: torch.fx.Node) -> tuple[torch.fx.Node, list[torch.fx.Node]] | None:
    """``(y, the nodes)`` when ``out`` is ``(y * 0.5) * (erf(y * M_SQRT1_2) + 1)`` (the
    decomposed ``gelu(y)``, ``approximate="none"``) and ``y`` is read by these two only, or
    ``gelu(y)`` itself."""
    def call(node, target):
        return isinstance(node, torch.fx.Node) and node.op == "call_function" and \
            node.target == target and not node.kwargs and len(node.users) == 1
    if out.target == aten.gelu.default and out.kwargs.get("approximate", "none") == "none" \
            and len(out.args) == 1 and _only_user_is(out.args[0], out):
        return out.args[0], [out]  # (a graph not decomposed further)
    if out.target != aten.mul.Tensor or out.kwargs:
        return None
    for half, plus in (out.args, out.args[::-1]):
        if call(half, aten.mul.Tensor) and call(plus, aten.add.Tensor) and _is(plus.args[1], 1) \
                and _is(half.args[1], 0.5) and call(plus.args[0], aten.erf.default):
            scaled = plus.args[0].args[0]
            y = half.args[0]
            if call(scaled, aten.mul.Tensor) and scaled.args[0] is y and \
                    _is(scaled.args[1], 0.7071067811865476) and set(y.users) == {half, scaled}:
                return y, [out, half, plus, plus.args[0], scaled]
    return None


def fuse_mm_bias_gelu(gm: torch.fx.GraphModule) -> int:
    """Replace each exact GELU of ``mm(a, b) + bias`` (or ``addmm(bias, a, b)``) on float32 CPU
    tensors, at least ``GELU_MIN_FLOPS``, by ``mkldnn._linear_pointwise(a, b.t(), bias,
    "gelu")``; returns how many were replaced."""
    if LINEAR_POINTWISE is None or not torch.backends.mkldnn.is_available():
        return 0
    fused = 0
    for out in list(gm.graph.nodes):
        gelu = _exact_gelu_of(out) if out.op == "call_function" else None
        found = _linear_parts(gelu[0]) if gelu is not None else None
        if found is None:
            continue
        (y, gelu_nodes), ((bias, a, b), replaced) = gelu, found
        val, a_val = tensor_val(y), tensor_val(a)
        if val.device.type != "cpu" or val.dtype != torch.float32 or a_val is None:
            continue
        sizes = (a_val.shape[0], a_val.shape[1], val.shape[1])
        if not all(type(n) is int for n in sizes) or 2 * math.prod(sizes) < GELU_MIN_FLOPS:
            continue  # (symbolic sizes: no guard is added for this choice)
        emit = Emitter(gm.graph, out)
        linear = emit(LINEAR_POINTWISE.default, a, emit(aten.t.default, b), bias, "gelu", [],
                      "none")
        fused += _swap_in(gm, emit, out, linear, [*gelu_nodes, *replaced])
    return _recompiled(gm, fused)


def _pointwise_reader(node: torch.fx.Node) -> bool:
    """``node`` is a pointwise op (a kernel that can compute the bias add with its own work),
    or a view all of whose readers are (Inductor's ``is_pointwise_use``)."""
    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return False
    if torch.Tag.pointwise in node.target.tags:
        return True
    return node.target.is_view and all(_pointwise_reader(u) for u in node.users)


def fuse_mm_bias(gm: torch.fx.GraphModule) -> int:
    """Replace each ``mm(a, b) + bias`` not read by pointwise ops alone by ``addmm(bias, a,
    b)``; returns how many were replaced."""
    fused = 0
    for add in list(gm.graph.nodes):
        if add.op != "call_function" or add.target != aten.add.Tensor or not add.users:
            continue
        found = _linear_parts(add)
        if found is None:
            continue
        if all(_pointwise_reader(u) for u in add.users):
            continue  # the readers' kernel adds the bias as it reads the product
        (bias, a, b), replaced = found
        emit = Emitter(gm.graph, add)
        fused += _swap_in(gm, emit, add, emit(aten.addmm.default, bias, a, b), replaced)
    return _recompiled(gm, fused)
