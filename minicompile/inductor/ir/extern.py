"""Kernels that call a library instead of a loop nest (mirrors ``ExternKernel``,
``FallbackKernel``, ``MultiOutput`` in torch/_inductor/ir.py).

Matmul, convolution and attention are faster in cuBLAS/oneDNN than in anything a pointwise code
generator writes, so they stay ATen calls: ``ExternKernel`` holds the ATen op, its arguments
(IR nodes where tensors go, constants elsewhere) and the layout of its output. A
``FallbackKernel`` is the same for an op that has no lowering: it still runs (through ATen), and
the reason it was not lowered is logged. Ops with several outputs write ``MultiOutput`` buffers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sympy
import torch
import torch.utils._pytree as pytree

from ...shapes.functions import sym_to_sympy
from ..sizevars import Expr
from .layout import Layout
from .nodes import Buffer, IRNode
from .read_writes import ReadWrites, StarDep


def _arg_str(a: Any) -> str:
    if isinstance(a, IRNode):
        return getattr(a, "name", None) or str(a)
    if isinstance(a, (list, tuple)):
        return "[" + ", ".join(map(_arg_str, a)) + "]"
    return repr(a)


@dataclass(eq=False)
class ExternKernel(Buffer):
    """``name = kernel(*args, **kwargs)`` where tensor arguments are IR nodes (``Buffer`` or
    ``ReinterpretView``: things with a real strided layout)."""

    kernel: Any = None  # an ATen OpOverload
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)

    # A multi-output kernel (``layout is None``) stores nothing itself: its ``MultiOutput``
    # buffers own the storage. It reports zero elements of bytes so byte counts stay exact.
    def get_size(self) -> list:
        return list(self.layout.size) if self.layout is not None else [sympy.Integer(0)]

    def get_dtype(self) -> torch.dtype:
        return self.layout.dtype if self.layout is not None else torch.uint8

    def get_numel(self):
        return self.layout.numel() if self.layout is not None else sympy.Integer(0)

    def inputs(self) -> list[IRNode]:
        leaves = pytree.tree_leaves((self.args, self.kwargs))
        return [a for a in leaves if isinstance(a, IRNode)]

    def get_read_writes(self) -> ReadWrites:
        reads = [StarDep(a.get_name(), distinct_elements(a)) for a in self.inputs()]
        writes = [StarDep(self.name, self.layout.numel())] if self.layout is not None else []
        return ReadWrites(reads, writes, {})

    def call_str(self) -> str:
        args = [_arg_str(a) for a in self.args]
        args += [f"{k}={_arg_str(v)}" for k, v in self.kwargs.items()]
        return f"{self.kernel}({', '.join(args)})"

    def __str__(self) -> str:
        out = f"{self.name}: {self.layout}" if self.layout is not None else self.name
        return f"{out} = {type(self).__name__} {self.call_str()}"


@dataclass(eq=False)
class FallbackKernel(ExternKernel):
    """An op with no lowering, run through ATen; ``reason`` says why."""

    reason: str = ""

    def __str__(self) -> str:
        return super().__str__() + f"\n  # fallback: {self.reason}"


@dataclass(eq=False)
class MultiOutput(Buffer):
    """Output ``indices`` (a path into the returned tuple) of a multi-output extern kernel."""

    parent: ExternKernel = None  # type: ignore[assignment]
    indices: tuple[int, ...] = ()

    def get_read_writes(self) -> ReadWrites:
        return ReadWrites([StarDep(self.parent.name, self.layout.numel())],
                          [StarDep(self.name, self.layout.numel())], {})

    def __str__(self) -> str:
        path = "".join(f"[{i}]" for i in self.indices)
        return f"{self.name}: {self.layout} = {self.parent.name}{path}"


def distinct_elements(node: IRNode) -> Expr:
    """Elements of its buffer a library call reads through ``node``: a strided view reads only
    its own elements, and each once however often a stride-0 (broadcast) dim repeats it."""
    stride = node.get_stride() if hasattr(node, "get_stride") else None
    if stride is None:
        return node.get_numel()
    return sympy.Mul(*[n for n, st in zip(node.get_size(), stride) if st != 0])


def layout_of(val: torch.Tensor) -> Layout:
    """The layout of a (fake) tensor, sizes and strides converted to SymPy."""
    return Layout(val.device, val.dtype, [sym_to_sympy(s) for s in val.shape],
                  [sym_to_sympy(s) for s in val.stride()], sym_to_sympy(val.storage_offset()))
