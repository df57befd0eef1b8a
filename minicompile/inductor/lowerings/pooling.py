"""2-D pooling as pointwise bodies over a window unrolled into loads (mirrors ``avg_pool2d``,
``max_pool2d_with_indices`` and their backwards in torch/_inductor/lowering.py).

Each output element reads its window: ``kh * kw`` loads, each masked where the window hangs over
the padding (a masked max load reads ``-inf``, a masked sum load ``0``). The backwards gather
instead of scattering: each input element visits the few windows that can contain it (the
outputs ``oh`` with ``oh * stride <= h + pad``, at most ``ceil(kernel / stride)`` of them along a
dim) and adds up what those windows sent it; except max pooling's in C++ kernels, which scatters
each window's gradient to where its maximum was, as eager does (``scatters_max_grad``: g++ leaves
the gather's loads scalar). A window of more than ``MAX_WINDOW`` elements (a
global pool written as ``avg_pool2d(x, 56)``) stays a library call: unrolled, its body would be
too large to compile.

    out[n, c, oh, ow] = max(x[n, c, 2*oh - 1 + i, 2*ow - 1 + j] for i, j in 3x3)   # max_pool2d(x, 3, 2, 1)
"""

from __future__ import annotations

import math
from typing import Sequence

import sympy
import torch

from ..checks import Check
from ..ir import IRNode, Layout, Pointwise, ReinterpretView
from ..lowering import Unsupported, device, filled, out_size, register_lowering
from ..sizevars import Expr, FloorDiv
from ..virtualized import V, ops
from .scatter import ScatterPlan, scatter_mode
from .views import reshape_reindex

aten = torch.ops.aten

MAX_WINDOW = 25  # elements a window (forward) or the windows over an element (backward) unroll


def _pair(value, default: Sequence[int] | None = None) -> tuple[int, int]:
    if value is None or (isinstance(value, (list, tuple)) and len(value) == 0):
        value = default
    if isinstance(value, int):
        return value, value
    return (value[0], value[0]) if len(value) == 1 else (value[0], value[1])


def _c(value, dtype=torch.int64):
    return ops.constant(value, dtype)


def _index(expr):
    return ops.index_expr(expr, torch.int64)


def _all(conds):
    mask = conds[0]
    for c in conds[1:]:
        mask = ops.logical_and(mask, c)
    return mask


def _inside(position, size):
    at = _index(position)
    return [ops.ge(at, _c(0)), ops.lt(at, _c(size))]


def _accumulate_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _check_window(count: int, what: str) -> None:
    if count > MAX_WINDOW:
        raise Unsupported(f"{what} of {count} elements (more than {MAX_WINDOW} unrolled loads)")


def _may_leave(offset: int, stride: int, out_len: Expr, size: Expr) -> tuple[bool, bool]:
    """Whether ``o * stride + offset`` (``o`` an output position in ``[0, out_len)``) may fall
    before the input's start, and whether past its end: only such a window element needs a
    bounds test (3x3 stride 2 padding 1: the first row and column of each window can hang over
    the top and left padding, and with an even size nothing hangs over the bottom or right)."""
    last = sympy.expand((out_len - 1) * stride + offset - size)
    past_end = not (last.is_number and last < 0) and not last.is_negative
    return offset < 0, past_end


class _Window:
    """The elements of a 2-D pooling window: ``load(index, i, j)`` reads window element
    ``(i, j)`` of output ``index``, the dtype's lowest value (``-inf``) where it lies in the
    padding, with a bounds test on the sides where it can (``_may_leave``); ``valid`` is that
    test (None: always inside)."""

    def __init__(self, x: IRNode, size, kernel, stride, padding, dilation):
        self.load_x, (self.H, self.W) = x.make_loader(), x.get_size()[-2:]
        dtype = x.get_dtype()
        self.lowest = float("-inf") if dtype.is_floating_point else \
            False if dtype == torch.bool else torch.iinfo(dtype).min
        self.kernel, self.stride, self.padding, self.dilation = kernel, stride, padding, dilation
        OH, OW = size[-2:]
        self.tests = {(i, j): (_may_leave(i * dilation[0] - padding[0], stride[0], OH, self.H),
                               _may_leave(j * dilation[1] - padding[1], stride[1], OW, self.W))
                      for i in range(kernel[0]) for j in range(kernel[1])}

    def position(self, index, i, j):
        *_, oh, ow = index
        return (oh * self.stride[0] - self.padding[0] + i * self.dilation[0],
                ow * self.stride[1] - self.padding[1] + j * self.dilation[1])

    def valid(self, index, i, j):
        (h_low, h_high), (w_low, w_high) = self.tests[i, j]
        h, w = self.position(index, i, j)
        conds = [c for test, c in ((h_low, lambda: ops.ge(_index(h), _c(0))),
                                   (h_high, lambda: ops.lt(_index(h), _c(self.H))),
                                   (w_low, lambda: ops.ge(_index(w), _c(0))),
                                   (w_high, lambda: ops.lt(_index(w), _c(self.W)))) if test]
        return _all([c() for c in conds]) if conds else None

    def load(self, index, i, j, valid):
        h, w = self.position(index, i, j)
        read = lambda: self.load_x([*index[:-2], h, w])  # noqa: E731
        return read() if valid is None else ops.masked(valid, read, self.lowest)


@register_lowering(aten.max_pool2d_with_indices)
def max_pool2d_with_indices(x: IRNode, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False):
    """The largest element of each window and its flat index ``h * W + w`` in its plane; a NaN
    wins (eager propagates it), and among equals the first in the window's order.

    The two are separate loop bodies: inference reads only the values, a chain of
    ``maximum``s (NaN-propagating) with no index bookkeeping; training's backward reads the
    indices too, and the two bodies, over the same loops, fuse into one kernel."""
    (kh, kw), (sh, sw) = _pair(kernel_size), _pair(stride, kernel_size)
    (ph, pw), (dh, dw) = _pair(padding), _pair(dilation)
    _check_window(kh * kw, "a max-pool window")
    W = x.get_size()[-1]
    size = out_size(0)
    window = _Window(x, size, (kh, kw), (sh, sw), (ph, pw), (dh, dw))
    elements = [(i, j) for i in range(kh) for j in range(kw)]
    floating = x.get_dtype().is_floating_point

    def first_inside(oh, ow):  # where eager starts when every element seen is padding
        h0 = ops.maximum(_index(oh * sh - ph), _c(0))
        w0 = ops.maximum(_index(ow * sw - pw), _c(0))
        return ops.add(ops.mul(h0, _c(W)), w0)

    def largest(index):
        best = None
        for i, j in elements:
            value = window.load(index, i, j, window.valid(index, i, j))
            best = value if best is None else ops.maximum(best, value)
        return best

    def argmax(index):
        best = index_of = None
        for i, j in elements:
            valid = window.valid(index, i, j)
            value = window.load(index, i, j, valid)
            h, w = window.position(index, i, j)
            flat = _index(h * W + w)
            if best is None:  # the first element, or -inf where it is padding
                best = value
                index_of = flat if valid is None else \
                    ops.where(valid, flat, first_inside(*index[-2:]))
                continue
            # eager's test: a NaN always takes over (the last NaN of the window wins)
            take = ops.logical_or(ops.gt(value, best), ops.isnan(value)) if floating else \
                ops.gt(value, best)
            take = take if valid is None else ops.logical_and(valid, take)
            best, index_of = ops.where(take, value, best), ops.where(take, flat, index_of)
        return index_of

    values = Pointwise(device(), x.get_dtype(), largest, size)
    indices = Pointwise(device(), torch.int64, argmax, size)
    return values, indices


def _avg_divisor(oh, ow, H, W, kernel, stride, padding, count_include_pad, divisor_override):
    """What eager divides a window's sum by: the window's elements inside the padded input
    (``count_include_pad``) or inside the input, or ``divisor_override``."""
    if divisor_override:
        return _c(divisor_override)
    counts = []
    for o, size, k, s, p in ((oh, H, kernel[0], stride[0], padding[0]),
                             (ow, W, kernel[1], stride[1], padding[1])):
        start = _index(o * s - p)
        end = ops.minimum(ops.add(start, _c(k)), _c(size + p))
        if not count_include_pad:
            start, end = ops.maximum(start, _c(0)), ops.minimum(end, _c(size))
        counts.append(ops.sub(end, start))
    return ops.mul(counts[0], counts[1])


@register_lowering(aten.avg_pool2d)
def avg_pool2d(x: IRNode, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    kernel, strides, pad = _pair(kernel_size), _pair(stride, kernel_size), _pair(padding)
    _check_window(kernel[0] * kernel[1], "an average-pool window")
    H, W = x.get_size()[-2:]
    dtype, load = x.get_dtype(), x.make_loader()
    acc = _accumulate_dtype(dtype)

    def inner_fn(index):
        *outer, oh, ow = index
        total = None
        for i in range(kernel[0]):
            for j in range(kernel[1]):
                h, w = oh * strides[0] - pad[0] + i, ow * strides[1] - pad[1] + j
                valid = _all(_inside(h, H) + _inside(w, W))
                value = ops.masked(valid, lambda h=h, w=w: ops.to_dtype(load([*outer, h, w]), acc),
                                   0.0)
                total = value if total is None else ops.add(total, value)
        divisor = _avg_divisor(oh, ow, H, W, kernel, strides, pad, count_include_pad,
                               divisor_override)
        return ops.to_dtype(ops.truediv(total, ops.to_dtype(divisor, acc)), dtype)

    return Pointwise(device(), dtype, inner_fn, out_size())


def _windows_over(kernel, stride, dilation=(1, 1)) -> tuple[int, int]:
    """How many outputs' windows may contain one input element, along each dim: those with
    ``oh = (h + pad) // stride - k`` for ``k`` below ``ceil(span / stride)``, where ``span`` is
    the window's extent. Checked against ``MAX_WINDOW`` here, while lowering (inside a body, the
    refusal would come too late to fall back)."""
    counts = [math.ceil(((kernel[d] - 1) * dilation[d] + 1) / stride[d]) for d in range(2)]
    _check_window(counts[0] * counts[1], "the pooling windows over one element")
    return counts[0], counts[1]


def _candidate(h, w, k, l, OH, OW, stride):
    """The ``(k, l)``-th output whose window may contain padded input element ``(h, w)``, and
    whether that output exists."""
    oh, ow = FloorDiv(h, stride[0]) - k, FloorDiv(w, stride[1]) - l
    return oh, ow, _all(_inside(oh, OH) + _inside(ow, OW))


@register_lowering(aten.max_pool2d_with_indices_backward)
def max_pool2d_with_indices_backward(grad: IRNode, x: IRNode, kernel_size, stride, padding,
                                     dilation, ceil_mode, indices: IRNode):
    """Each input element sums the gradients of the windows whose maximum it was."""
    if scatters_max_grad(grad):
        return scatter_max_grad(grad, x, indices)
    kernel, strides = _pair(kernel_size), _pair(stride, kernel_size)
    pad, dil = _pair(padding), _pair(dilation)
    H, W = x.get_size()[-2:]
    OH, OW = grad.get_size()[-2:]
    dtype = grad.get_dtype()
    acc = _accumulate_dtype(dtype)
    load_grad, load_index = grad.make_loader(), indices.make_loader()
    nh, nw = _windows_over(kernel, strides, dil)

    def inner_fn(index):
        *outer, h, w = index
        me, total = _index(h * W + w), ops.constant(0.0, acc)
        for k in range(nh):
            for l in range(nw):
                oh, ow, exists = _candidate(h + pad[0], w + pad[1], k, l, OH, OW, strides)
                argmax = ops.masked(exists, lambda oh=oh, ow=ow: load_index([*outer, oh, ow]), -1)
                hit = ops.logical_and(exists, ops.eq(argmax, me))
                g = ops.masked(hit, lambda oh=oh, ow=ow: ops.to_dtype(
                    load_grad([*outer, oh, ow]), acc), 0.0)
                total = ops.add(total, g)
        return ops.to_dtype(total, dtype)

    return Pointwise(device(), dtype, inner_fn, list(x.get_size()))


def scatters_max_grad(grad: IRNode) -> bool:
    """Whether a max pool's gradient is scattered rather than gathered: in C++ kernels, in
    float32 and float64. The gather visits every window that may hold an input element, each
    through a masked load at ``(h + pad) // stride - k``: indices that leave g++'s loops scalar
    (a 3x3, stride-2 pool's backward over 4x64x32x32: 3.9 ms, eager's scatter 0.11 ms). The
    scatter adds each window's gradient at the index its maximum came from, one plane a row
    (indices stay within their plane, so rows never meet: plain adds, in eager's order). Half
    precision keeps the gather, which sums in float32 and rounds once."""
    return (V.graph.options.backend(grad.get_device()) == "cpp"
            and grad.get_dtype() in (torch.float32, torch.float64))


def scatter_max_grad(grad: IRNode, x: IRNode, indices: IRNode) -> IRNode:
    """``zeros(rows, H*W)[r, indices[r, k]] += grad[r, k]`` over the planes ``r`` (batch and
    channel) and the windows ``k``, read back as ``x``'s shape."""
    dtype, dev = grad.get_dtype(), grad.get_device()
    *outer, H, W = x.get_size()
    rows = sympy.Mul(*outer)
    zeros = filled(Layout(dev, dtype, [rows, H * W]))
    windows = [rows, sympy.Mul(*grad.get_size()[-2:])]
    as_grad = reshape_reindex(grad.get_size(), windows)  # [r, k] -> the 4-d (or 3-d) point
    load_grad, load_index = grad.make_loader(), indices.make_loader()

    def position(i):
        return [i[0], ops.indirect_indexing(load_index(as_grad(i)), H * W, Check("scatter", 1))]

    plan = ScatterPlan(windows, lambda i: load_grad(as_grad(i)), position,
                       scatter_mode(dtype, dev, accumulate=True))
    return ReinterpretView(plan.into(zeros), Layout(dev, dtype, list(x.get_size())))


@register_lowering(aten.avg_pool2d_backward)
def avg_pool2d_backward(grad: IRNode, x: IRNode, kernel_size, stride, padding, ceil_mode,
                        count_include_pad, divisor_override=None):
    """Each input element sums ``grad / divisor`` over the windows that contain it."""
    kernel, strides, pad = _pair(kernel_size), _pair(stride, kernel_size), _pair(padding)
    H, W = x.get_size()[-2:]
    OH, OW = grad.get_size()[-2:]
    dtype = grad.get_dtype()
    acc = _accumulate_dtype(dtype)
    load_grad = grad.make_loader()
    nh, nw = _windows_over(kernel, strides)

    def inner_fn(index):
        *outer, h, w = index
        hp, wp = h + pad[0], w + pad[1]
        total = ops.constant(0.0, acc)
        for k in range(nh):
            for l in range(nw):
                oh, ow, exists = _candidate(hp, wp, k, l, OH, OW, strides)
                # inside that window: hp - oh*stride < kernel (it is >= 0 by the choice of oh)
                within = _all([exists, ops.lt(_index(hp - oh * strides[0]), _c(kernel[0])),
                               ops.lt(_index(wp - ow * strides[1]), _c(kernel[1]))])

                def share(oh=oh, ow=ow):
                    divisor = _avg_divisor(oh, ow, H, W, kernel, strides, pad,
                                           count_include_pad, divisor_override)
                    return ops.truediv(ops.to_dtype(load_grad([*outer, oh, ow]), acc),
                                       ops.to_dtype(divisor, acc))
                total = ops.add(total, ops.masked(within, share, 0.0))
        return ops.to_dtype(total, dtype)

    return Pointwise(device(), dtype, inner_fn, list(x.get_size()))
