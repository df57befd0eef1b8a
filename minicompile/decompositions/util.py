"""Helpers shared by the decomposition rows: dtype handling and dimension lists (no counterpart:
torch/_decomp/decompositions.py keeps such helpers next to its rows)."""

from __future__ import annotations

import functools
from typing import Callable

import torch

aten = torch.ops.aten
LOW_PRECISION = (torch.float16, torch.bfloat16)


def upcast(x: torch.Tensor) -> torch.Tensor:
    """Compute half-precision math in float32, as ATen's kernels do internally."""
    return aten._to_copy.default(x, dtype=torch.float32) if x.dtype in LOW_PRECISION else x


def downcast(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return x if x.dtype == dtype else aten._to_copy.default(x, dtype=dtype)


def pw_cast_for_opmath(fn: Callable) -> Callable:
    """A pointwise row computed in float32 when its tensors are half precision, its result
    rounded once to their dtype (torch/_decomp's decorator of the same name): ATen's kernel
    for ``gelu`` or ``silu`` on bfloat16 computes the whole formula in float and rounds the
    result; the formula's ops run one by one in bfloat16 would round after each of them
    (five times for gelu), further from eager's result, and each rounding costs a kernel time."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        dtypes = [a.dtype for a in args if isinstance(a, torch.Tensor)]
        dtype = functools.reduce(torch.promote_types, dtypes) if dtypes else None
        if dtype not in LOW_PRECISION:
            return fn(*args, **kwargs)
        out = fn(*[upcast(a) if isinstance(a, torch.Tensor) else a for a in args], **kwargs)
        return downcast(out, dtype)
    return wrapper


def scalars_of(x: torch.Tensor, *scalars):
    """Scalar arguments as ATen's kernel reads them: in the tensor's dtype, so on an integer
    tensor ``beta=0.2`` or ``min_val=-0.5`` is 0 (torch/_decomp's addmm: ``beta = int(beta)``,
    torch/_refs' hardtanh likewise); a float scalar in the arithmetic would make the result
    float."""
    if x.is_floating_point() or x.is_complex():
        return scalars
    kind = bool if x.dtype == torch.bool else int
    return tuple(kind(s) for s in scalars)


def reduction_dims(x: torch.Tensor, dim) -> list[int]:
    """``dim=None`` or ``[]`` means every dimension."""
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(x.dim()))
    return [dim] if isinstance(dim, int) else list(dim)


def numel_of(x: torch.Tensor, dims: list[int]):
    """Elements in the block that ``dims`` reduce; a 0-d tensor's dim 0 (or -1), which ATen
    accepts as a dim of size 1, is its one element."""
    n = 1
    for d in dims:
        n = n * (x.shape[d] if x.dim() else 1)
    return n
