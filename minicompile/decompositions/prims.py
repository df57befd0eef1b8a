"""One level lower: core ATen -> prims (mirrors torch/_refs/__init__.py, which writes each
ATen op with ``torch.ops.prims``).

Prims are the smallest vocabulary: elementwise ops that do *not* broadcast or promote types
(``prims.add`` wants two tensors of one shape and dtype), reductions over explicit dims, and
``broadcast_in_dim`` / ``reshape`` / ``transpose`` / ``convert_element_type`` for everything
implicit in ATen. Each row below makes the implicit parts explicit:

    aten.add.Tensor(x, 1.0)   ->   prims.add(x, prims.broadcast_in_dim(prims.full([], 1.0), ...))

Matrix products and convolutions have no prim (a backend calls a library for them), so
``mm``/``bmm``/``convolution`` stay, and so do ``slice``/``split``/``clone``/``gather``, which
have no public prim either.
Used for the "IR levels" view (``prims_table`` on top of ``decomposition_table``), not by
default: prims ``reshape`` copies where ``view`` aliases, so apply it to functional graphs.
"""

from __future__ import annotations

from typing import Callable

import torch

from .registry import register_decomposition

aten, prims = torch.ops.aten, torch.ops.prims
prims_table: dict = {}


def _row(*ops):
    return register_decomposition(list(ops), prims_table)


def _as_tensor(x, like: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A Python number becomes a 0-d tensor (prims take only tensors)."""
    if isinstance(x, torch.Tensor):
        return x if x.dtype == dtype else prims.convert_element_type.default(x, dtype)
    return prims.full.default([], x, dtype=dtype, device=like.device, requires_grad=False)


def _broadcast(x: torch.Tensor, shape: list) -> torch.Tensor:
    """Numpy broadcasting, explicit: x's dims map to the trailing dims of ``shape``."""
    if list(x.shape) == list(shape):
        return x
    lead = len(shape) - x.dim()
    keep = [d for d in range(x.dim()) if x.shape[d] != 1 or shape[lead + d] == 1]
    if len(keep) != x.dim():  # size-1 dims are dropped, then broadcast anew
        x = prims.squeeze.default(x, [d for d in range(x.dim()) if d not in keep])
    return prims.broadcast_in_dim.default(x, list(shape), [lead + d for d in keep])


def _category(x) -> int:  # bool < integer < floating point
    dtype = x.dtype if isinstance(x, torch.Tensor) else type(x)
    if dtype in (bool, torch.bool):
        return 0
    return 2 if dtype is float or (isinstance(dtype, torch.dtype) and dtype.is_floating_point) else 1


def promote(a, b) -> torch.dtype:
    """ATen's type promotion: tensors with dims decide; a 0-d tensor or a Python number only
    lifts the result to a higher category (int -> float), e.g. int tensor * 0.5 -> float."""
    operands = [x for x in (a, b)]
    dimmed = [x for x in operands if isinstance(x, torch.Tensor) and x.dim() > 0]
    lead = dimmed or [x for x in operands if isinstance(x, torch.Tensor)]
    dtype = lead[0].dtype
    for x in lead[1:]:
        dtype = torch.promote_types(dtype, x.dtype)
    for x in operands:
        if not any(x is y for y in lead) and _category(x) > _category(lead[0]):
            dtype = x.dtype if isinstance(x, torch.Tensor) else (
                torch.get_default_dtype() if _category(x) == 2 else torch.int64)
    return dtype


def _binary(prim, result_dtype: Callable | None = None):
    """An ATen binary op: promote both operands, broadcast them, apply the prim."""

    def decomp(a, b):
        dtype = promote(a, b)
        compute = result_dtype(dtype) if result_dtype else dtype
        ref = a if isinstance(a, torch.Tensor) else b
        a, b = _as_tensor(a, ref, compute), _as_tensor(b, ref, compute)
        shape = torch.broadcast_shapes(a.shape, b.shape)
        return prim(_broadcast(a, shape), _broadcast(b, shape))

    return decomp


def _true_div_dtype(dtype):  # int / int is a float in ATen's div
    return dtype if dtype.is_floating_point else torch.get_default_dtype()


# --- elementwise: (aten op, prim) rows ---------------------------------------------------------
BINARY = [
    (aten.add.Tensor, prims.add.default, None),  # a + b
    (aten.sub.Tensor, prims.sub.default, None),  # a - b
    (aten.mul.Tensor, prims.mul.default, None),  # a * b
    (aten.div.Tensor, prims.div.default, _true_div_dtype),  # a / b (true division)
    (aten.pow.Tensor_Scalar, prims.pow.default, None),  # a ** n
    (aten.maximum.default, prims.maximum.default, None),
    (aten.minimum.default, prims.minimum.default, None),
]
COMPARE = [  # compare in the promoted dtype; the prim returns bool
    (aten.gt.Scalar, prims.gt.default), (aten.lt.Scalar, prims.lt.default),
    (aten.ge.Scalar, prims.ge.default), (aten.le.Scalar, prims.le.default),
    (aten.eq.Scalar, prims.eq.default), (aten.ne.Scalar, prims.ne.default),
    (aten.gt.Tensor, prims.gt.default), (aten.lt.Tensor, prims.lt.default),
    (aten.eq.Tensor, prims.eq.default), (aten.ne.Tensor, prims.ne.default),
]
UNARY = [
    (aten.neg.default, prims.neg.default), (aten.exp.default, prims.exp.default),
    (aten.log.default, prims.log.default), (aten.erf.default, prims.erf.default),
    (aten.tanh.default, prims.tanh.default), (aten.sin.default, prims.sin.default),
    (aten.cos.default, prims.cos.default), (aten.rsqrt.default, prims.rsqrt.default),
    (aten.sqrt.default, prims.sqrt.default), (aten.abs.default, prims.abs.default),
    (aten.log1p.default, prims.log1p.default), (aten.reciprocal.default, prims.reciprocal.default),
    (aten.bitwise_not.default, prims.bitwise_not.default),
]
for _op, _prim, _dtype in BINARY:
    _row(_op)(_binary(_prim, _dtype))
for _op, _prim in COMPARE:
    _row(_op)(_binary(_prim))
for _op, _prim in UNARY:
    _row(_op)(lambda x, _prim=_prim: _prim(x))


@_row(aten.sigmoid.default)
def sigmoid(x):  # 1 / (1 + exp(-x))
    one = _broadcast(_as_tensor(1.0, x, x.dtype), list(x.shape))
    return prims.div.default(one, prims.add.default(one, prims.exp.default(prims.neg.default(x))))


@_row(aten.where.self)
def where(cond, a, b):  # broadcast all three, promote a and b
    dtype = promote(a, b)
    a, b = _as_tensor(a, cond, dtype), _as_tensor(b, cond, dtype)
    shape = torch.broadcast_shapes(cond.shape, a.shape, b.shape)
    return prims.where.default(_broadcast(cond, shape), _broadcast(a, shape), _broadcast(b, shape))


@_row(aten.clamp.default)
def clamp(x, min=None, max=None):  # minimum(maximum(x, min), max)
    if min is not None:
        x = _binary(prims.maximum.default)(x, min)
    return x if max is None else _binary(prims.minimum.default)(x, max)


# --- reductions: keepdim becomes an explicit broadcast_in_dim ----------------------------------
def _reduction(prim):
    def decomp(x, dims=None, keepdim=False, dtype=None):
        dims = list(range(x.dim())) if not dims else [d % max(x.dim(), 1) for d in dims]
        if dtype is not None:
            x = prims.convert_element_type.default(x, dtype)
        out = prim(x, dims)
        if keepdim:
            shape = [1 if d in dims else s for d, s in enumerate(x.shape)]
            out = prims.broadcast_in_dim.default(out, shape, [d for d in range(x.dim())
                                                              if d not in dims])
        return out

    return decomp


_row(aten.sum.dim_IntList)(_reduction(prims.sum.default))  # sum over dims
_row(aten.amax.default)(_reduction(prims.amax.default))  # max over dims


# --- shapes and dtypes -------------------------------------------------------------------------
def _fresh(out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """A view op must return a new tensor object, even when nothing changes."""
    return prims.view_of.default(x) if out is x else out


@_row(aten.expand.default)
def expand(x, size, implicit=False):  # -1 keeps a dim; broadcasting made explicit
    lead = len(size) - x.dim()
    shape = [x.shape[d - lead] if s == -1 else s for d, s in enumerate(size)]
    return _fresh(_broadcast(x, shape), x)


@_row(aten.view.default, aten._unsafe_view.default)
def view(x, size):  # -1 is inferred from the number of elements
    size = list(size)
    if -1 in size:
        known = 1
        for s in size:
            known = known * s if s != -1 else known
        size[size.index(-1)] = x.numel() // known
    return prims.reshape.default(x, size)


@_row(aten.permute.default)
def permute(x, dims):
    return prims.transpose.default(x, [d % x.dim() for d in dims])


@_row(aten.unsqueeze.default)
def unsqueeze(x, dim):  # a new size-1 dim at ``dim``
    dim = dim % (x.dim() + 1)
    shape = list(x.shape[:dim]) + [1] + list(x.shape[dim:])
    return prims.broadcast_in_dim.default(x, shape, [d if d < dim else d + 1
                                                     for d in range(x.dim())])


@_row(aten.squeeze.dims)
def squeeze(x, dims):
    return _fresh(prims.squeeze.default(x, [d % x.dim() for d in dims if x.shape[d] == 1]), x)


@_row(aten.full_like.default)
def full_like(x, value, *, dtype=None, layout=None, device=None, pin_memory=None,
              memory_format=None):
    return prims.full.default(list(x.shape), value, dtype=dtype or x.dtype,
                              device=device or x.device, requires_grad=False)


@_row(aten._to_copy.default)
def to_copy(x, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
            memory_format=None):
    if device is not None and torch.device(device) != x.device:
        return NotImplemented  # a device copy is not a prim
    return prims.convert_element_type.default(x, dtype or x.dtype)


@_row(aten.transpose.int)
def transpose(x, dim0, dim1):  # swap two dims
    perm = list(range(x.dim()))
    perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
    return prims.transpose.default(x, perm)


@_row(aten.relu.default)
def relu(x):  # maximum(x, 0)
    return _binary(prims.maximum.default)(x, 0)
