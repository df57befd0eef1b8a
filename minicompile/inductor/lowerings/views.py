"""View lowerings: new size + ``reindex`` (index into the view -> index into the base), as
``View.create`` / ``GenericView`` in torch/_inductor/ir.py. Nothing is copied; the formulas
compose and ``sizevars.simplify_index`` cleans them up.

    permute(x, [1, 0])       (i0, i1) -> (i1, i0)
    x.diagonal() of [5, 5]   (i0,)    -> (i0, i0)
    x.view(24) of [4, 6]     (i0,)    -> (i0 // 6, i0 % 6)
    x[:, 2:10:2]             (i0, i1) -> (i0, 2 + 2*i1)
    x.expand(8, 4) of [1, 4] (i0, i1) -> (0, i1)

``cat``, ``constant_pad_nd``, ``flip`` and the gathers (``index``, ``gather``, ``embedding``) are not
views (they read several tensors or read at run-time positions): they are ``Pointwise`` bodies
with masked or indirect loads; a ``cat`` of many inputs is a copy of each into its slice of one
buffer (``cat_by_copies``).
"""

from __future__ import annotations

from typing import Callable, Sequence

import sympy
import torch

from ..checks import Check
from ..ir import InPlaceBuffer, IRNode, Pointwise, ReinterpretView, View, broadcast_reader
from ..ir.layout import Layout, contiguous_strides
from ..lowering import (Unsupported, compute_into, dense, device, filled, loader, out_dtype,
                        out_meta, out_size, realize_strided, register_lowering)
from ..sizevars import Expr, FloorDiv, ModularIndexing, sympify
from ...shapes.functions import sym_to_sympy
from ..virtualized import V, ops

aten = torch.ops.aten


def _dim(d: int, ndim: int) -> int:
    return d + ndim if d < 0 else d


def reshape_reindex(old: Sequence[Expr], new: Sequence[Expr]):
    """Index into shape ``new`` -> index into shape ``old`` for the same row-major element:
    flatten the new index, then peel off the old digits with ``//`` and ``%``."""
    new_strides = contiguous_strides(new)
    old_strides = contiguous_strides(old)

    def reindex(index):
        flat = sympy.Add(*[i * s for i, s, n in zip(index, new_strides, new) if n != 1])
        return [sympy.Integer(0) if size == 1 else
                FloorDiv(flat, stride) if k == 0 else ModularIndexing(flat, stride, size)
                for k, (size, stride) in enumerate(zip(old, old_strides))]

    return reindex


@register_lowering(aten.view, aten._unsafe_view, aten.reshape, aten.view.dtype)
def view(x: IRNode, size, *args):
    if not isinstance(size, (list, tuple)):
        raise Unsupported("view as another dtype")
    new = out_size()
    return View(x, new, reshape_reindex(x.get_size(), new))


@register_lowering(aten.permute)
def permute(x: IRNode, dims):
    dims = [_dim(d, len(x.get_size())) for d in dims]
    size = x.get_size()

    def reindex(index):
        old = [None] * len(dims)
        for k, d in enumerate(dims):
            old[d] = index[k]
        return old

    return View(x, [size[d] for d in dims], reindex)


@register_lowering(aten.transpose.int)
def transpose(x: IRNode, d0: int, d1: int):
    dims = list(range(len(x.get_size())))
    d0, d1 = _dim(d0, len(dims)), _dim(d1, len(dims))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return permute(x, dims)


@register_lowering(aten.t)
def t(x: IRNode):
    return permute(x, list(range(len(x.get_size())))[::-1])


@register_lowering(aten.expand)
def expand(x: IRNode, size, implicit=False):
    new, old = out_size(), x.get_size()
    return View(x, new, broadcast_reader(old, new))


@register_lowering(aten.unsqueeze)
def unsqueeze(x: IRNode, dim: int):
    dim = _dim(dim, len(x.get_size()) + 1)
    return View(x, out_size(), lambda index: list(index[:dim]) + list(index[dim + 1:]))


@register_lowering(aten.squeeze)
def squeeze(x: IRNode, dims=None):
    size = x.get_size()
    if dims is None:
        dims = [d for d, s in enumerate(size) if s == 1]
    elif isinstance(dims, int):
        dims = [dims]
    dropped = {_dim(d, len(size)) for d in dims if size[_dim(d, len(size))] == 1}
    kept = [d for d in range(len(size)) if d not in dropped]

    def reindex(index):
        old = [sympy.Integer(0)] * len(size)
        for k, d in enumerate(kept):
            old[d] = index[k]
        return old

    return View(x, [size[d] for d in kept], reindex)


def _slice_start(start, size: Expr) -> Expr:
    """A slice's first index along a dim of ``size``: from the end where negative, clamped at 0
    as Python slices are (with a symbolic size, s1 - 20 is negative for s1 < 20), and at the
    size."""
    start = sympify(start or 0)
    if start.is_number and start < 0:
        start = sympy.Max(0, start + size)
    if start.is_number and size.is_number:
        start = sympy.Min(start, size)
    return start


@register_lowering(aten.slice.Tensor)
def slice_(x: IRNode, dim=0, start=None, end=None, step=1):
    size = x.get_size()
    dim = _dim(dim, len(size))
    start = _slice_start(start, size[dim])
    new = out_size()

    def reindex(index):
        old = list(index)
        old[dim] = start + step * index[dim]
        return old

    return View(x, new, reindex)


@register_lowering(aten.select.int)
def select(x: IRNode, dim: int, index):
    size = x.get_size()
    dim = _dim(dim, len(size))
    index = from_end(index, size[dim])
    return View(x, out_size(), lambda idx: list(idx[:dim]) + [index] + list(idx[dim:]))


# --- a tensor with a slice or a select of it replaced ---------------------------------------------
# ``slice_scatter(x, src, dim, start, end, step)`` is ``x`` with ``x[start:end:step] = src`` (along
# ``dim``), ``select_scatter`` the same for ``x[index]``; the backward of a slice or a select is
# one into zeros (``slice_backward(grad, sizes, dim, start, end, step)``: the gradient of
# ``x[..., 4:]`` is zeros with ``grad`` in the last half). Each is a ``Pointwise`` over the
# result: where the index falls in the region, a masked load of the source; elsewhere the base
# (or 0). A producer of the source fuses into it, and it into its consumer: RoPE's
# ``rotate_half`` has four such gradients a layer, each else a zero fill and a copy.

def _region_pointwise(base: Callable, src: IRNode, dim: int, start: Expr, step,
                      select: bool = False) -> IRNode:
    """``base(index)`` outside the region, ``src`` inside it: the region starts at ``start``
    along ``dim`` and holds ``src``'s size there every ``step`` (one index where ``select``)."""
    dtype = out_dtype()
    load = loader(src, dtype, src.get_size())
    n = 1 if select else src.get_size()[dim]
    step = sympify(step)

    def inner_fn(index):
        offset = index[dim] - start  # the index in the region, times step
        at = ops.index_expr(offset, torch.int64)
        mask = ops.logical_and(ops.ge(at, ops.constant(0, torch.int64)),
                               ops.lt(at, ops.constant(n * step, torch.int64)))
        if step != 1:  # (the remainder is 0 exactly on the region's rows, whatever its sign rule)
            mask = ops.logical_and(mask, ops.eq(ops.mod(at, ops.constant(step, torch.int64)),
                                                ops.constant(0, torch.int64)))
        inside = [] if select else [offset if step == 1 else FloorDiv(offset, step)]
        src_index = [*index[:dim], *inside, *index[dim + 1:]]
        return ops.where(mask, ops.masked(mask, lambda: load(src_index), 0), base(index))

    return Pointwise(device(), dtype, inner_fn, out_size())


def _zeros() -> Callable:
    dtype = out_dtype()
    return lambda index: ops.constant(0, dtype)


def from_end(index, size: Expr) -> Expr:
    """An index along a dim of ``size``, counted from the end where negative (None: 0)."""
    index = sympify(index or 0)
    return index + size if index.is_number and index < 0 else index


@register_lowering(aten.slice_scatter)
def slice_scatter(x: IRNode, src: IRNode, dim=0, start=None, end=None, step=1):
    dim = _dim(dim, len(x.get_size()))
    start = _slice_start(start, x.get_size()[dim])
    return _region_pointwise(loader(x, out_dtype(), x.get_size()), src, dim, start, step)


@register_lowering(aten.slice_backward)
def slice_backward(grad: IRNode, input_sizes, dim: int, start, end, step):
    dim = _dim(dim, len(input_sizes))
    return _region_pointwise(_zeros(), grad, dim, _slice_start(start, out_size()[dim]), step)


@register_lowering(aten.select_scatter)
def select_scatter(x: IRNode, src: IRNode, dim: int, index):
    dim = _dim(dim, len(x.get_size()))
    index = from_end(index, x.get_size()[dim])
    return _region_pointwise(loader(x, out_dtype(), x.get_size()), src, dim, index, 1, select=True)


@register_lowering(aten.select_backward)
def select_backward(grad: IRNode, input_sizes, dim: int, index):
    dim = _dim(dim, len(input_sizes))
    index = from_end(index, out_size()[dim])
    return _region_pointwise(_zeros(), grad, dim, index, 1, select=True)


@register_lowering(aten.unbind.int)
def unbind(x: IRNode, dim: int = 0):
    """Each index along ``dim`` a view without it (ViT's ``q, k, v = qkv.unbind(0)``)."""
    size = x.get_size()
    dim = _dim(dim, len(size))
    if not size[dim].is_number:
        raise Unsupported("unbind along a dim of symbolic size (how many outputs is not known)")
    kept = [*size[:dim], *size[dim + 1:]]
    return [View(x, kept, lambda idx, i=i: [*idx[:dim], sympify(i), *idx[dim:]])
            for i in range(int(size[dim]))]


@register_lowering(aten.roll)
def roll(x: IRNode, shifts, dims=()):
    """``out[i] = x[(i - shift) mod size]`` along each rolled dim (Swin's shifted windows).
    Without dims eager rolls the flattened tensor: that stays ATen's."""
    size = x.get_size()
    if not dims or len(dims) != len(shifts):
        raise Unsupported("roll of the flattened tensor")
    moved = {}
    for shift, d in zip(shifts, dims):
        d = _dim(d, len(size))
        if not size[d].is_number:
            raise Unsupported("roll along a dim of symbolic size")
        # (a dim of size 0 has nothing to move: its shift is 0, not a modulo by zero)
        moved[d] = (moved.get(d, 0) + int(shift)) % max(int(size[d]), 1)
    load = x.make_loader()

    def inner_fn(index):
        return load([ModularIndexing(i + size[d] - moved[d], 1, size[d]) if moved.get(d) else i
                     for d, i in enumerate(index)])

    return Pointwise(device(), x.get_dtype(), inner_fn, list(size))


@register_lowering(aten.unfold)
def unfold(x: IRNode, dim: int, size: int, step: int):
    """Sliding windows: ``out[..., i, ..., k] = x[..., i*step + k, ...]`` (windows overlap when
    ``step < size``: one element is read by several output points)."""
    dim = _dim(dim, len(x.get_size())) if x.get_size() else 0

    def reindex(index):
        if not x.get_size():
            return []
        old = list(index[:-1])
        old[dim] = index[dim] * step + index[-1]
        return old

    return View(x, out_size(), reindex)


@register_lowering(aten.diagonal)
def diagonal(x: IRNode, offset: int = 0, dim1: int = 0, dim2: int = 1):
    """``out[..., k] = x[..., k, k + offset]`` over dims ``dim1, dim2`` (the diagonal goes last)."""
    size = x.get_size()
    dim1, dim2 = _dim(dim1, len(size)), _dim(dim2, len(size))
    kept = [d for d in range(len(size)) if d not in (dim1, dim2)]
    row, col = (sympy.Integer(0), sympy.Integer(offset)) if offset >= 0 else (
        sympy.Integer(-offset), sympy.Integer(0))

    def reindex(index):
        old = [sympy.Integer(0)] * len(size)
        for k, d in enumerate(kept):
            old[d] = index[k]
        old[dim1], old[dim2] = row + index[-1], col + index[-1]
        return old

    return View(x, out_size(), reindex)


@register_lowering(aten.alias, aten.detach, aten.lift_fresh)
def alias(x: IRNode):
    return x


@register_lowering(aten.as_strided)
def as_strided(x: IRNode, size, stride, storage_offset=None):
    base = realize_strided(x)
    buffer = base.data if isinstance(base, ReinterpretView) else base
    offset = base.layout.offset if storage_offset is None else sympify(storage_offset)
    layout = Layout(x.get_device(), x.get_dtype(), out_size(), list(map(sympify, stride)), offset)
    return ReinterpretView(buffer, layout)


@register_lowering(aten.split_with_sizes, aten.split.Tensor)
def split(x: IRNode, sizes, dim=0):
    size = x.get_size()
    dim = _dim(dim, len(size))
    if isinstance(sizes, int) and size[dim].is_number:  # split.Tensor: chunks of equal size
        sizes = [min(sizes, int(size[dim]) - s) for s in range(0, int(size[dim]), sizes)]
    elif not isinstance(sizes, (list, tuple)):  # symbolic chunk size or dim: the trace's outputs
        sizes = [sym_to_sympy(t.shape[dim]) for t in out_meta()]  # say how many chunks, how big
    outs, start = [], sympy.Integer(0)
    for n in sizes:
        new = list(size)
        new[dim] = sympify(n)
        outs.append(View(x, new, lambda index, s=start: list(index[:dim]) + [s + index[dim]]
                         + list(index[dim + 1:])))
        start = start + n
    return tuple(outs)


# --- not views: masked and indirect loads -----------------------------------------------------


# inputs past which a ``cat`` is copies into one buffer rather than a body choosing among masked
# loads (Inductor's ``max_pointwise_cat_inputs``: 8). C++ kernels cut a row where a mask changes
# (``cpp_masks``: up to 8 pieces), which serves a cat along the last dim; along another dim
# every point evaluates each input's mask, and g++ leaves the masked loads scalar: from 5
# inputs on, copies (8 inputs of (4, 32, 16, 16) along the channels, summed per channel: 1.19
# ms; as copies 0.15 ms, eager's cat and sum 0.09 ms)
MAX_POINTWISE_CAT_INPUTS = 8
MAX_POINTWISE_CAT_INPUTS_CPP_NOT_LAST = 4


@register_lowering(aten.cat)
def cat(tensors, dim=0):
    tensors = [t for t in tensors if not (len(t.get_size()) == 1 and t.get_size()[0] == 0)]
    dim = _dim(dim, len(out_size()))
    offsets, running = [], sympy.Integer(0)
    for t in tensors:
        offsets.append(running)
        running = running + t.get_size()[dim]
    if len(tensors) > max_pointwise_cat_inputs(dim, len(out_size())):
        return cat_by_copies(tensors, dim, offsets)
    loaders = [t.make_loader() for t in tensors]
    dtype = out_dtype()
    if not tensors:  # every input a legacy empty tensor (shape (0,)): so is the result
        return Pointwise(device(), dtype, lambda index: ops.constant(0, dtype), out_size())

    def inner_fn(index):
        i = index[dim]
        value = None
        for t, start, load in reversed(list(zip(tensors, offsets, loaders))):
            def body(load=load, start=start):
                shifted = list(index)
                shifted[dim] = i - start
                value = load(shifted)
                return value if t.get_dtype() == dtype else ops.to_dtype(value, dtype)

            # each input's loads are masked to its own slice [start, start + size): a load
            # outside it would read before or past the input's memory
            at = ops.index_expr(i, torch.int64)
            mask = ops.ge(at, ops.constant(start, torch.int64))
            if value is None:  # the last input takes everything past its start
                value = ops.masked(mask, body, 0)
            else:
                below = ops.lt(at, ops.constant(start + t.get_size()[dim], torch.int64))
                mask = below if start == 0 else ops.logical_and(mask, below)
                value = ops.where(mask, ops.masked(mask, body, 0), value)
        return value

    return Pointwise(device(), dtype, inner_fn, out_size())


def max_pointwise_cat_inputs(dim: int, ndim: int) -> int:
    if V.graph.options.backend(device()) == "cpp" and dim != ndim - 1:
        return MAX_POINTWISE_CAT_INPUTS_CPP_NOT_LAST
    return MAX_POINTWISE_CAT_INPUTS


def cat_by_copies(tensors: list[IRNode], dim: int, offsets: list[Expr]) -> IRNode:
    """``cat`` as Inductor's ``ConcatKernel``: a buffer of the result's size, and each input
    copied into its slice of it (an ``InPlaceBuffer`` each: the copy reads one input, contiguous
    loads, and its producer may fuse into it). The buffer is laid out as eager's result where
    that is dense, and starts as zeros, which the copies then cover."""
    dev, dtype, size = device(), out_dtype(), out_size()
    val = out_meta()
    stride = ([sym_to_sympy(st) for st in val.stride()] if dense(val) else
              contiguous_strides(size))
    layout = Layout(dev, dtype, size, stride)
    buf = filled(layout)
    for t, start in zip(tensors, offsets):
        region = Layout(dev, dtype, t.get_size(), stride, start * stride[dim])
        data = Pointwise(dev, dtype, loader(t, dtype, t.get_size()), t.get_size())
        buf = V.graph.register_buffer(InPlaceBuffer(V.graph.new_name(), layout, data,
                                                    mutated=buf.get_name(), region=region))
    return buf


@register_lowering(aten.as_strided_scatter)
def as_strided_scatter(x: IRNode, src: IRNode, size, stride, storage_offset=None):
    """``x`` with its ``as_strided(size, stride, offset)`` view replaced by ``src`` (what
    functionalization makes of an in-place op on a view of an intermediate: ``y[:, 0] *= 2``):
    a copy of ``x`` laid out as eager's result, whose strides and offset address it, then
    ``src`` copied into that region of it (an ``InPlaceBuffer``, as ``cat_by_copies``)."""
    val = out_meta()
    if not dense(val) or val.storage_offset() != 0:
        raise Unsupported("a result whose layout is not dense")
    dev, dtype = device(), out_dtype()
    layout = Layout(dev, dtype, out_size(), [sym_to_sympy(st) for st in val.stride()])
    buf = compute_into(x, layout)
    region = Layout(dev, dtype, [sympify(n) for n in size], [sympify(st) for st in stride],
                    sympify(storage_offset or 0))
    data = Pointwise(dev, dtype, loader(src, dtype, src.get_size()), src.get_size())
    return V.graph.register_buffer(InPlaceBuffer(V.graph.new_name(), layout, data,
                                                 mutated=buf.get_name(), region=region))


@register_lowering(aten.stack)
def stack(tensors, dim=0):
    """``cat`` of the inputs, each seen with a new size-1 dim at ``dim`` (ATen's composite;
    real PyTorch decomposes it the same way, torch/_refs ``stack``)."""
    dim = _dim(dim, len(out_size()))

    def with_new_dim(t: IRNode) -> IRNode:
        size = list(t.get_size())
        size.insert(dim, sympy.Integer(1))
        return View(t, size, lambda index: list(index[:dim]) + list(index[dim + 1:]))

    return cat([with_new_dim(t) for t in tensors], dim)


@register_lowering(aten.constant_pad_nd)
def constant_pad_nd(x: IRNode, pad, value=0.0):
    size, new = x.get_size(), out_size()
    ndim = len(size)
    # pad lists (left, right) pairs starting from the LAST dim
    lows = {ndim - 1 - k: sympify(pad[2 * k]) for k in range(len(pad) // 2)}
    load = x.make_loader()

    def inner_fn(index):
        src, conds = list(index), []
        for d, low in lows.items():
            src[d] = index[d] - low
            i = ops.index_expr(src[d], torch.int64)
            conds.append(ops.ge(i, ops.constant(0, torch.int64)))
            conds.append(ops.lt(i, ops.constant(size[d], torch.int64)))
        mask = conds[0]
        for c in conds[1:]:
            mask = ops.logical_and(mask, c)
        return ops.masked(mask, lambda: load(src), value)

    return Pointwise(device(), x.get_dtype(), inner_fn, new)


@register_lowering(aten.flip)
def flip(x: IRNode, dims):
    """``out[i] = x[size - 1 - i]`` along each flipped dim. Eager returns a new tensor (a stride
    can't be negative), so this is a ``Pointwise``: a consumer over the same loops fuses with it,
    one over other loops inlines it, and a slice of the result has eager's strides."""
    size = x.get_size()
    flipped = {_dim(d, len(size)) for d in dims}
    load = x.make_loader()

    def inner_fn(index):
        return load([size[d] - 1 - i if d in flipped else i for d, i in enumerate(index)])

    return Pointwise(device(), x.get_dtype(), inner_fn, list(size))


def broadcast_shapes(sizes: Sequence[Sequence[Expr]]) -> list[Expr]:
    """The shape ``sizes`` broadcast to (a 1 gives way to any size, as in eager)."""
    ndim = max((len(s) for s in sizes), default=0)
    out = []
    for d in range(ndim, 0, -1):
        dims = [s[-d] for s in sizes if len(s) >= d and s[-d] != 1]
        out.append(dims[0] if dims else sympy.Integer(1))
    return out


def advanced_index(size: Sequence[Expr], indices: Sequence[IRNode | None]):
    """``x[indices]`` for an ``x`` of ``size`` (``None``: a dim taken whole): the result's shape,
    and ``position(idx)``, the point of ``x`` that point ``idx`` of the result is (read by
    ``index``, written by ``index_put``). The index tensors broadcast together; their dims sit
    where the indexed dims were when those are adjacent (``x[:, i, j]``), else first (numpy's
    rule)."""
    indices = list(indices) + [None] * (len(size) - len(indices))
    indexed = [d for d, ix in enumerate(indices) if ix is not None]
    tensors = [indices[d] for d in indexed]
    if any(t.get_dtype() == torch.bool for t in tensors):
        raise Unsupported("boolean mask indexing (data-dependent output size)")
    bsize = broadcast_shapes([t.get_size() for t in tensors])
    nb = len(bsize)
    adjacent = indexed == list(range(indexed[0], indexed[-1] + 1))
    first = indexed[0] if adjacent else 0  # where the broadcast index dims sit in the output
    kept = [s for d, s in enumerate(size) if d not in indexed]
    shape = kept[:first] + bsize + kept[first:]
    loaders = [t.make_loader() for t in tensors]
    broadcasts = [broadcast_reader(t.get_size(), bsize) for t in tensors]

    def position(idx):
        bidx = idx[first:first + nb]
        rest = list(idx[:first]) + list(idx[first + nb:])
        src, r = [], 0
        for d in range(len(size)):
            if d in indexed:
                k = indexed.index(d)
                value = loaders[k](broadcasts[k](bidx))
                # (eager names the k-th index tensor as "dimension k")
                src.append(ops.indirect_indexing(value, size[d], Check("index", k)))
            else:
                src.append(rest[r])
                r += 1
        return src

    return shape, position


@register_lowering(aten.index.Tensor)
def index(x: IRNode, indices):
    _, position = advanced_index(x.get_size(), indices)
    load = x.make_loader()
    return Pointwise(device(), x.get_dtype(), lambda idx: load(position(idx)), out_size())


@register_lowering(aten.gather)
def gather(x: IRNode, dim: int, index_t: IRNode, sparse_grad=False):
    size = x.get_size()
    dim = _dim(dim, len(size))
    load, load_index = x.make_loader(), index_t.make_loader()

    def body_index(idx):
        src = list(idx)
        src[dim] = ops.indirect_indexing(load_index(idx), size[dim], Check("gather", dim))
        return load(src)

    return Pointwise(device(), x.get_dtype(), body_index, out_size())


@register_lowering(aten.embedding)
def embedding(weight: IRNode, indices: IRNode, *args):
    load, load_index = weight.make_loader(), indices.make_loader()
    nidx = len(indices.get_size())

    def inner_fn(idx):
        row = ops.indirect_indexing(load_index(idx[:nidx]), weight.get_size()[0],
                                   Check("embedding"))
        return load([row, idx[nidx]])

    return Pointwise(device(), weight.get_dtype(), inner_fn, out_size())


@register_lowering(aten.repeat)
def repeat(x: IRNode, repeats):
    size, new = x.get_size(), out_size()
    load = x.make_loader()
    offset = len(new) - len(size)  # repeat may add leading dims

    def inner_fn(index):  # out[i] = x[i % size], dim by dim
        return load([ModularIndexing(index[offset + d], 1, s) for d, s in enumerate(size)])

    return Pointwise(device(), x.get_dtype(), inner_fn, new)


@register_lowering(aten.index_select)
def index_select(x: IRNode, dim: int, index_t: IRNode):
    # a 0-d tensor: ATen selects from it as from one element, and the result is 0-d too
    scalar = not x.get_size()
    if scalar:
        x = View(x, [sympy.Integer(1)], lambda index: [])
    size = x.get_size()
    dim = _dim(dim, len(size))
    load, load_index = x.make_loader(), index_t.make_loader()
    index_dims = len(index_t.get_size())  # the index: one element of a 1-d or a 0-d tensor

    check = Check("index_select_dim1" if dim == 1 else "index_select", dim)

    def inner_fn(idx):
        src = [sympy.Integer(0)] if scalar else list(idx)
        at = [src[dim]][:index_dims]
        src[dim] = ops.indirect_indexing(load_index(at), size[dim], check)
        return load(src)

    return Pointwise(device(), x.get_dtype(), inner_fn, out_size())
