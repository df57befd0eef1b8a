"""Extern kernels: the ops a library does better than a generated loop nest (mirrors
torch/_inductor/kernel/mm.py, conv.py and the attention fallbacks). Each stays one ATen call;
its tensor inputs are realized into strided buffers (a transpose stays a strided view, so
``x @ w.t()`` costs no copy)."""

from __future__ import annotations

import functools
import math
from typing import Any

import torch

from ..layout_opt import ATTENTION
from ..lowering import laid_out_as_traced, make_extern, register_lowering

aten = torch.ops.aten

EXTERN_OPS = [
    aten.mm.default, aten.bmm.default, aten.addmm.default, aten.baddbmm.default,
    aten._addmm_activation.default,
    *sorted(ATTENTION, key=str),  # scaled_dot_product_attention's kernels and their backwards
    aten._cdist_forward.default,
]
# convolutions and attention always allocate their results too; the products below also hand
# them over laid out as given. A dead result of one of these may be overwritten in place
# (memory_planning.py), never that of an op which could return a view of its input.
FRESH_RESULTS = {aten.convolution.default, aten._cdist_forward.default}
if hasattr(torch.ops, "mkldnn") and hasattr(torch.ops.mkldnn, "_linear_pointwise"):
    EXTERN_OPS.append(torch.ops.mkldnn._linear_pointwise.default)  # (fx_passes/mm_activation.py)
    FRESH_RESULTS.add(torch.ops.mkldnn._linear_pointwise.default)


def _register(op) -> None:
    # Attention kernels read their inputs in the layouts the public op hands them (the CPU
    # flash kernel walks the head dim as contiguous): laid out as eager traced them, as every
    # other op left to ATen gets them. The products read any strides.
    as_traced = laid_out_as_traced if op in ATTENTION else lambda args, kwargs: (args, kwargs)
    register_lowering(op)(lambda *args, **kwargs: make_extern(op, *as_traced(args, kwargs)))


for _op in EXTERN_OPS:
    _register(_op)


# Matrix products whose result is always a fresh contiguous tensor (ATen allocates it so),
# each with the torch function that calls it straight through the C++ argument parser (about
# a microsecond less per call than ``torch.ops.aten.mm.default``'s Python ``__call__``): the
# wrapper calls ``torch.mm(...)`` and takes the result as laid out, with no check per call.
FRESH_CONTIGUOUS = {
    aten.mm.default: "torch.mm", aten.bmm.default: "torch.bmm", aten.addmm.default: "torch.addmm",
    aten.baddbmm.default: "torch.baddbmm",
    aten._addmm_activation.default: "torch._addmm_activation",
}
FRESH_RESULTS |= set(FRESH_CONTIGUOUS)


@functools.cache
def python_binding(op: Any) -> str | None:
    """``torch.<name>`` (or ``torch._C._nn.<name>``), the function torch's C++ argument parser
    binds to ``aten::<name>``, where a call with ``op``'s arguments can reach no overload but
    ``op``: every other overload takes an ``out=`` tensor or a dimension name, which the wrapper
    never passes. A call of ``torch.ops.aten.convolution.default`` goes through the op's Python
    ``__call__`` and the JIT's schema matching: about 13 us more than ``torch.convolution`` on a
    CPU host, and a ResNet-50 step makes 53 (Inductor's wrapper calls the same binding,
    ``extern_kernels.convolution``). None where the name is a Python function there
    (``torch.split``) or is not bound."""
    if not isinstance(op, torch._ops.OpOverload) or op.namespace != "aten":
        return None
    name = op._schema.name.split("::")[1]
    where = next((w for w, module in BINDING_MODULES.items() if _is_binding(module, name)), None)
    packet = getattr(aten, name)
    others = [getattr(packet, o)._schema for o in packet.overloads() if getattr(packet, o) is not op]
    if where is None or not all(any(a.is_out or str(a.type).startswith("Dimname") for a in s.arguments)
                                for s in others):
        return None
    return f"{where}.{name}"


BINDING_MODULES = {"torch": torch, "torch._C._nn": torch._C._nn}  # as the wrapper names them


def _is_binding(module: Any, name: str) -> bool:
    """``module.<name>`` is a C++ argument parser's function (``builtin_function_or_method``),
    not a Python function of the same name."""
    return type(getattr(module, name, None)) is type(torch._C._VariableFunctions.add)


# The matrix products, each with the positions of its two factors (``addmm(bias, a, b)``).
PRODUCT_FACTORS = {
    aten.mm.default: (0, 1), aten.addmm.default: (1, 2), aten._addmm_activation.default: (1, 2),
    aten.bmm.default: (0, 1), aten.baddbmm.default: (1, 2),
}


def multiply_adds(node) -> int | None:
    """The multiply-adds of a matrix-product extern kernel (``M*K*N``, times the batch of a
    ``bmm``), or None: not a product, or sizes that are symbolic."""
    factors = PRODUCT_FACTORS.get(getattr(node, "kernel", None))
    if factors is None:
        return None
    a, b = (node.args[i].get_size() for i in factors)
    sizes = [*a, b[-1]]
    if not all(getattr(s, "is_Integer", False) or isinstance(s, int) for s in sizes):
        return None
    return math.prod(int(s) for s in sizes)
