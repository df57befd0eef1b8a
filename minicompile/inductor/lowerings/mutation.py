"""Writes into a graph input's own storage (mirrors ``mutate_to``, the ``copy_`` lowering and the
``index_put_``/``scatter_`` fallbacks of torch/_inductor/lowering.py).

``fx_passes/reinplace.py`` marks the scatters that build a mutated input's new value when the old
value is not needed afterwards; each marked node is lowered by a row here (keyed by its
functional op) into a buffer whose storage is the input's (``ir/mutation.py``):

- a write into a strided region (``x[:, 0] = y``, ``x[2:5].copy_(y)``: ``as_strided_scatter``,
  ``slice_scatter``, ``select_scatter``, ``copy``) becomes an ``InPlaceBuffer``: a loop over the
  region only, storing the source at the region's index in the input;
- a write at run-time indices (``index_put``, ``index_add``, ``scatter``...) becomes a scatter
  kernel writing into the input (``lowerings/scatter.py``), or where that can't match eager, an
  ``InPlaceFallback``: the in-place ATen op (``index_put_``, ``scatter_``) on the input;
- the ``clone`` functionalization scatters into is the input itself.

A region is in the flat storage's coordinates, where the base's layout lives: ``offset +
sum(index[d] * stride[d])``. ``as_strided_scatter``'s offset counts from the tensor's first
element (functionalization's ``view_origin``), so the base's own offset is added.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import sympy
import torch
import torch.utils._pytree as pytree

from ..ir import Buffer, InPlaceBuffer, InPlaceFallback, IRNode, Layout, Pointwise, RecordReadWrites
from ..lowering import (Unsupported, make_pointwise, realize, realize_strided,
                        register_inplace_lowering)
from ..sizevars import Expr, index_var, sympify
from ..virtualized import V, set_ops_handler
from .scatter import SCATTER_PLANS
from .views import broadcast_shapes, from_end

log = logging.getLogger(__name__)
aten = torch.ops.aten


@register_inplace_lowering(aten.clone.default)
def clone_(x: IRNode, **kwargs: Any) -> IRNode:
    return x  # nothing reads the copy but the write into it: write into x itself


# --- strided regions: op -> (size, stride, offset) of the elements it replaces -----------------

def _as_strided(base: Layout, src: IRNode, size, stride, offset=0):
    return size, stride, base.offset + offset  # offset from the tensor's first element


def _slice(base: Layout, src: IRNode, dim=0, start=None, end=None, step=1):
    dim = dim % len(base.size)
    stride = list(base.stride)
    stride[dim] = stride[dim] * step
    return src.get_size(), stride, base.offset + from_end(start, base.size[dim]) * base.stride[dim]


def _select(base: Layout, src: IRNode, dim, index):
    dim = dim % len(base.size)
    keep = [d for d in range(len(base.size)) if d != dim]
    return ([base.size[d] for d in keep], [base.stride[d] for d in keep],
            base.offset + from_end(index, base.size[dim]) * base.stride[dim])


def _whole(base: Layout, src: IRNode, non_blocking=False):
    return base.size, base.stride, base.offset


REGIONS: dict[Any, Callable] = {
    aten.as_strided_scatter.default: _as_strided,  # x[v] = src, v any strided view
    aten.slice_scatter.default: _slice,  # x[start:end:step] (along dim) = src
    aten.select_scatter.default: _select,  # x[index] (along dim) = src
    aten.copy.default: _whole,  # x.copy_(src)
}


def storage_family(buf: Buffer) -> set[str]:
    """``buf`` and every earlier value living in the same storage (the input, then each
    in-place write into it)."""
    names = {buf.get_name()}
    while buf.get_mutation_names():
        buf = V.graph.get_buffer(buf.get_mutation_names()[0])
        names.add(buf.get_name())
    return names


def buffers_read(node: Any) -> set[str]:
    """The buffers reading ``node`` elementwise loads (none for a Python number)."""
    if not isinstance(node, IRNode):
        return set()
    handler = RecordReadWrites({})
    with set_ops_handler(handler):
        node.make_loader()([index_var("i", k) for k in range(len(node.get_size()))])
    return {d.name for d in handler.reads}


def write_region(op: Any) -> Callable:
    region_of = REGIONS[op]

    def lower(base: Buffer, src: Any, *args: Any, **kwargs: Any) -> InPlaceBuffer:
        size, stride, offset = region_of(base.layout, src, *args, **kwargs)
        region = Layout(base.get_device(), base.get_dtype(), size, stride, offset)
        if buffers_read(src) & storage_family(base):
            # the source reads the storage being written (``x[0] = x[1]``): compute it into a
            # buffer of its own first; the scheduler fuses the two back only where the read and
            # the write are of the same element (fusion.py)
            src = realize(Pointwise(src.get_device(), src.get_dtype(), src.make_loader(),
                                    src.get_size()))
        data = make_pointwise(lambda v: v, [src], base.get_dtype(), size=region.size)
        buf = InPlaceBuffer(V.graph.new_name(), base.layout, data, mutated=base.get_name(),
                            region=region)
        return V.graph.register_buffer(buf)

    return lower


for _op in REGIONS:
    register_inplace_lowering(_op)(write_region(_op))


# --- run-time indices: the in-place ATen op --------------------------------------------------

def _numel(node: IRNode) -> Expr:
    return sympy.Mul(*node.get_size())


def _index_put(base: Buffer, indices: list, values: Any, accumulate: bool = False) -> dict:
    """``x[indices] = values``: the elements of ``x[indices]`` (for a bool mask, at most all the
    elements it covers)."""
    size, d, kept = base.get_size(), 0, []
    for i in indices:
        if i is None:  # a dim taken whole (``x[:, idx]``)
            kept.append(size[d])
        d += 1 if i is None or i.get_dtype() != torch.bool else len(i.get_size())
    kept += size[d:]
    tensors = [i.get_size() for i in indices if i is not None]
    return dict(written=sympy.Mul(*broadcast_shapes(tensors)) * sympy.Mul(*kept),
                reads_written=bool(accumulate))


def _scatter(base: Buffer, dim: int, index: IRNode, *rest: Any, include_self: bool = True,
             accumulates: bool = False) -> dict:
    """``x[..., index[i], ...] = src[i]`` for every ``i`` of ``index``: index.numel() elements
    written, and as many of ``src`` read."""
    written = _numel(index)
    src_reads = {3: written} if rest and isinstance(rest[0], IRNode) else {}
    return dict(written=written, reads_written=accumulates and include_self, src_reads=src_reads)


def _index_add(base, dim, index, source, alpha=1):
    """``x[..., index[k], ...] += alpha * source[..., k, ...]``: as many elements as ``source``."""
    return dict(written=_numel(source), reads_written=True)


def _scatter_add(base, dim, index, src):
    return _scatter(base, dim, index, src, accumulates=True)


def _scatter_reduce(base, dim, index, src, reduce, include_self=True):
    return _scatter(base, dim, index, src, include_self=include_self, accumulates=True)


# functional op -> (the in-place ATen op, what it writes and reads)
INDEXED_WRITES: dict[Any, tuple[Any, Callable[..., dict]]] = {
    aten.index_put.default: (aten.index_put_.default, _index_put),
    aten.index_add.default: (aten.index_add_.default, _index_add),
    aten.scatter.src: (aten.scatter_.src, _scatter),
    aten.scatter.value: (aten.scatter_.value, _scatter),
    aten.scatter_add.default: (aten.scatter_add_.default, _scatter_add),
    aten.scatter_reduce.two: (aten.scatter_reduce_.two, _scatter_reduce),
}


def write_indexed(op: Any) -> Callable:
    """A scatter kernel writing into ``base`` (``lowerings/scatter.py``), or where it can't, the
    in-place ATen op."""
    inplace_op, accesses = INDEXED_WRITES[op]

    def lower(base: Buffer, *args: Any, **kwargs: Any) -> InPlaceBuffer | InPlaceFallback:
        try:
            return SCATTER_PLANS[op](base, *args, **kwargs).into(base)
        except Unsupported as e:
            log.info("%s in place as the ATen op %s: %s", op, inplace_op, e)
            V.graph.fallbacks.append((str(inplace_op), str(e)))
        args, kwargs = pytree.tree_map_only(IRNode, realize_strided, (args, kwargs))
        node = InPlaceFallback(V.graph.new_name(), base.layout, inplace_op, (base, *args), kwargs,
                               mutated=base.get_name(), **accesses(base, *args, **kwargs))
        return V.graph.register_buffer(node)

    return lower


for _op in INDEXED_WRITES:
    register_inplace_lowering(_op)(write_indexed(_op))
