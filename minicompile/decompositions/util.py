"""Helpers shared by the decomposition rows: dtype handling and dimension lists (no counterpart:
torch/_decomp/decompositions.py keeps such helpers next to its rows)."""

from __future__ import annotations

import torch

aten = torch.ops.aten
LOW_PRECISION = (torch.float16, torch.bfloat16)


def upcast(x: torch.Tensor) -> torch.Tensor:
    """Compute half-precision math in float32, as ATen's kernels do internally."""
    return aten._to_copy.default(x, dtype=torch.float32) if x.dtype in LOW_PRECISION else x


def downcast(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return x if x.dtype == dtype else aten._to_copy.default(x, dtype=dtype)


def reduction_dims(x: torch.Tensor, dim) -> list[int]:
    """``dim=None`` or ``[]`` means every dimension."""
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(x.dim()))
    return [dim] if isinstance(dim, int) else list(dim)


def numel_of(x: torch.Tensor, dims: list[int]):
    n = 1
    for d in dims:
        n = n * x.shape[d]
    return n
