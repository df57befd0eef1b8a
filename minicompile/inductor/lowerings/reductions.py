"""Reduction lowerings: ``Reduction`` nodes, and the normalisations built from them (mirrors
``make_reduction`` in torch/_inductor/lowering.py and ``Reduction.create`` in torch/_inductor/ir.py).

A reduction over ``dims`` of ``x`` loops over the kept dims (``ranges``) outside and the reduced
dims (``reduction_ranges``) inside; the body rebuilds x's full index from both. Composite ops
(softmax, layer norm, ...) realize each reduction into its own buffer and read it back from a
pointwise body, as Inductor does; the scheduler fuses them back into one kernel.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import sympy
import torch

from ..ir import REDUCTION_INIT, IRNode, Reduction, View
from ..ir.inline import unflatten_index
from ..ir.read_writes import MemoryDep, RecordReadWrites
from ..lowering import (Unsupported, device, make_pointwise, out_meta, realize, register_lowering)
from ..sizevars import Expr
from ..fx_passes.online_softmax import prepare_softmax_online
from ..virtualized import ops, set_ops_handler
from .creation import empty_like_meta
from .views import reshape_reindex

aten = torch.ops.aten


def _dims(x: IRNode, dims) -> list[int]:
    n = len(x.get_size())
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(n))
    return sorted({d + n if d < 0 else d for d in ([dims] if isinstance(dims, int) else dims)})


def reduction_parts(x: IRNode, dims, keepdim: bool, src_dtype: torch.dtype | None = None,
                    body: Callable | None = None) -> tuple[Callable, list, list, list, list]:
    """``reduce(x, dims)``'s pieces: ``inner_fn(index, rindex)`` (x's element there, optionally
    converted to ``src_dtype`` and transformed by ``body``), the output's ``ranges``, the
    reduced ``rsizes``, and the reduced and kept dims."""
    size = x.get_size()
    dims = _dims(x, dims) if size else []
    kept = [d for d in range(len(size)) if d not in dims]
    ranges = [sympy.Integer(1) if d in dims else size[d] for d in range(len(size))] if keepdim \
        else [size[d] for d in kept]
    src_dtype = src_dtype or x.get_dtype()
    load = x.make_loader()

    def inner_fn(index, rindex):
        full: list[Expr] = [None] * len(size)  # type: ignore[list-item]
        kept_index = [index[d] for d in kept] if keepdim else list(index)
        for d, i in zip(kept, kept_index):
            full[d] = i
        for d, r in zip(dims, rindex):
            full[d] = r
        value = load(full)
        if x.get_dtype() != src_dtype:
            value = ops.to_dtype(value, src_dtype)
        return body(value) if body else value

    return inner_fn, ranges, [size[d] for d in dims], dims, kept


# Reductions with no identity: over zero elements there is no answer, and eager raises
# ("max(): Expected reduction dim 1 to have non-zero size"). A kernel would return its start
# value (-inf for max), or read an element that is not there. So where the reduced count is not
# provably positive (0, or a size like ``s0 - 2`` that may be 0 at run time; size symbols alone
# are >= 2), the node falls back to ATen's kernel, which computes it or raises eager's error.
# (A softmax or logsumexp over an empty dim lowers through a max, and falls back too: ATen's
# kernels return eager's empty or -inf results.)
NO_IDENTITY = {"max", "min", "argmax", "argmin"}


def make_reduction(x: IRNode, dims, keepdim: bool, reduction_type: str, dtype: torch.dtype,
                   src_dtype: torch.dtype | None = None, body: Callable | None = None,
                   output_index: int | None = None) -> Reduction:
    """Reduce ``x`` (optionally transformed by ``body(value)``) over ``dims``."""
    src_dtype = src_dtype or x.get_dtype()
    inner_fn, ranges, rsizes, dims, kept = reduction_parts(x, dims, keepdim, src_dtype, body)
    if reduction_type in NO_IDENTITY and sympy.Mul(*rsizes).is_positive is not True:
        raise Unsupported(f"{reduction_type} over {sympy.Mul(*rsizes)} elements, which may be "
                          "none: ATen raises eager's error where it is")
    splits, outer = 1, False
    if output_index is None and reduction_type in SPLITTABLE:
        # (a device that never splits a reduction with several outputs, a CPU, needs no answer)
        outer = bool(kept) and device_programs(device()) > 0 and is_outer(x, dims, kept)
        splits = split_count(ranges, rsizes, reduction_type, outer)
    if splits > 1 and outer and split_at_dims(x, dims, kept):
        return reduce_trailing_dims_first(x, dims, kept, keepdim, reduction_type, dtype,
                                          src_dtype, body)
    if splits > 1:
        return split_reduction(inner_fn, ranges, rsizes, reduction_type, dtype, src_dtype,
                               splits, outer)
    return Reduction(device(), dtype, inner_fn, ranges, rsizes, reduction_type, src_dtype,
                     output_index)


# --- split reductions: a large reduction with few outputs, in two kernels --------------------
# A reduction's programs each own one output (a row) or, for an outer reduction (``x.sum(0)``),
# a tile of ~64 adjacent outputs. Few outputs over long rows leave most of a GPU idle: a layer
# norm's weight gradient (768 outputs, each a sum over 2048 rows) is 12 programs for ~130 SMs,
# 37 us where 8 would do. Splitting the rows (Inductor's ``Reduction.num_splits``) reduces
# ``splits`` chunks of each row in parallel into partials, then the partials; each type below
# combines its partials with itself. Welford and arg reductions carry more than one value per
# partial: they stay in one kernel.
SPLIT_ABOVE = 1 << 13  # elements of a full reduction worth a second kernel (cross-entropy's
#   mean over 16384 rows, each value gathered from its row: 33 us in one program on an H100)
SPLITS = 512  # partials at most (per output: the second reduction reads them all)
MIN_CHUNK = 256  # elements per partial at least, for a full reduction
MIN_ROWS = 64  # and for one with several outputs: a chunk long enough to amortise its program
OUTER_LANES = 64  # adjacent outputs an outer reduction's program owns (OUTER_SHAPES' first, f32)
# An outer reduction's program moves one (XBLOCK, RBLOCK) tile a loop step, a few KB: memory is
# kept busy only by many such programs resident on each SM, so it is split into 8 times as many
# programs as an inner one (Inductor cuts amax(0) of 8192 x 8192 halfs into 16 chunks: 2048
# programs, 33 us on an H200; two per SM, 4 chunks, took 44 us)
OUTER_OCCUPANCY = 8
SPLITTABLE = {"sum", "prod", "max", "min", "any"}


@functools.lru_cache(maxsize=None)
def device_programs(device: torch.device) -> int:
    """Programs that keep ``device`` busy: two per streaming multiprocessor on a GPU. A CPU's
    few threads are kept busy by any reduction with several outputs: 0, never split."""
    if device.type != "cuda":
        return 0
    return 2 * torch.cuda.get_device_properties(device).multi_processor_count


def split_count(ranges: list[Expr], rsizes: list[Expr], reduction_type: str,
                outer: bool) -> int:
    """How many chunks to cut each output's reduction into (1: don't split). Static sizes only:
    a symbolic size would make the count a guard on it."""
    numel, rnumel = sympy.Mul(*ranges), sympy.Mul(*rsizes)
    if reduction_type not in SPLITTABLE or not (numel.is_number and rnumel.is_number):
        return 1
    numel, rnumel = int(numel), int(rnumel)
    if numel == 1:  # a full reduction: as many chunks as fit, on every device
        return min(SPLITS, rnumel // MIN_CHUNK) if rnumel >= SPLIT_ABOVE else 1
    programs = -(-numel // OUTER_LANES) if outer else numel
    wanted = device_programs(device()) * (OUTER_OCCUPANCY if outer else 1)
    if programs >= wanted or rnumel < 2 * MIN_ROWS:
        return 1
    return max(1, min(-(-wanted // programs), rnumel // MIN_ROWS, SPLITS))


# A mixed-axis reduction (a batch norm's statistics over N, H, W of an (N, C, H, W) tensor) has a
# block of reduced dims after its last kept dim: the trailing block, contiguous in the tensor's
# own loop order. Reduced first, one row per (N, C), it is an inner reduction with many rows,
# visiting the elements in the order their producer computes them, so a pointwise producer
# (x - mean, grad * xhat) fuses into it; the leading reduced dims (N) are then a short second
# reduction over the partials. Cutting the flat reduced index into chunks instead (below) would
# visit them in another order: the producer could not share the kernel and went to memory.
MIN_TRAILING = 256  # elements of the trailing block worth a row of their own (a 7x7 image: not)


def is_outer(x: IRNode, dims: list[int], kept: list[int]) -> bool:
    """Is this an outer reduction: a program's adjacent outputs adjacent in memory, a row's
    elements far apart? Either a kept dim lies inside a reduced one (``x.sum(0)``), or x's
    loads run contiguously along its last kept dim and not along its last reduced one (a
    channels-last tensor's ``mean((2, 3))``, a squeeze-excite's pooling: C is the contiguous
    dim). The Triton kernel reads the same from its loads' strides (``reduction_hint``); the
    split needs it first, to lay its partials out so that they keep that order."""
    if kept and max(kept) > min(dims, default=len(x.get_size())):
        return True
    size = x.get_size()
    last_kept = [d for d in kept if size[d] != 1][-1:]
    last_reduced = [d for d in dims if size[d] != 1][-1:]
    if not (last_kept and last_reduced):
        return False
    steps = load_steps(x, [last_kept[0], last_reduced[0]], along=dims)
    return any(k == 1 for k, _ in steps) and not any(r == 1 for _, r in steps)


def load_steps(x: IRNode, of: list[int], along: list[int] | None = None) -> list[tuple]:
    """For each load of x's body (at a symbolic index) whose index moves along some dim of
    ``along`` (default: of ``of``), its step along each dim of ``of``: the coefficient of that
    dim's variable."""
    size = x.get_size()
    index = [sympy.Symbol(f"i{d}", integer=True, nonnegative=True) for d in range(len(size))]
    handler = RecordReadWrites(dict(zip(index, size)))
    with set_ops_handler(handler):
        x.make_loader()(index)
    moving = {index[d] for d in (of if along is None else along)}
    return [tuple(sympy.expand(dep.index).coeff(index[d]) for d in of)
            for dep in handler.reads
            if isinstance(dep, MemoryDep) and dep.index.free_symbols & moving]


def split_at_dims(x: IRNode, dims: list[int], kept: list[int]) -> bool:
    """Split a mixed-axis reduction at its last kept dim (``reduce_trailing_dims_first``)?
    When both sides have reduced dims, the trailing block is long enough to be a row, and x is
    read contiguously along it: a channels-last tensor's (N, C, H, W) statistics read H, W a
    channel apart, and its first reduction would be an outer one of N x C outputs, a few
    programs wide; the flat chunks give it hundreds."""
    size, last = x.get_size(), max(kept)
    lead = sympy.Mul(*[size[d] for d in dims if d < last])
    trail = sympy.Mul(*[size[d] for d in dims if d > last])
    return bool(lead.is_number and trail.is_number and int(lead) > 1
                and int(trail) >= MIN_TRAILING and read_contiguous_along(x, dims[-1]))


def read_contiguous_along(x: IRNode, dim: int) -> bool:
    """Does some load of ``x``'s body step one element at a time along ``dim``?"""
    return any(step == 1 for step, in load_steps(x, [dim]))


def reduce_trailing_dims_first(x: IRNode, dims: list[int], kept: list[int], keepdim: bool,
                               reduction_type: str, dtype: torch.dtype, src_dtype: torch.dtype,
                               body: Callable | None) -> Reduction:
    """``reduce(x, dims)`` as ``reduce(reduce(x, trailing, keepdim=True), leading + trailing)``:
    the partials keep a size-1 dim where each trailing dim was (reduced again as a dim of one,
    so that ``keepdim`` applies to every reduced dim at once). 16-bit partials are float32, as a
    split's."""
    last = max(kept)
    trailing = [d for d in dims if d > last]
    partial_dtype = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    partials = realize(make_reduction(x, trailing, True, reduction_type, partial_dtype,
                                      src_dtype, body))
    return make_reduction(partials, dims, keepdim, reduction_type, dtype, partial_dtype)


def _neutral(reduction_type: str, dtype: torch.dtype) -> Any:
    """What a lane past the end contributes (``REDUCTION_INIT``, with integer extremes)."""
    if reduction_type in ("max", "min") and not dtype.is_floating_point:
        info = torch.iinfo(dtype) if dtype != torch.bool else None
        low, high = (0, 1) if info is None else (info.min, info.max)
        return low if reduction_type == "max" else high
    return REDUCTION_INIT[reduction_type]


def chunk_length(n: int, splits: int) -> int:
    """Elements per chunk for about ``splits`` chunks of ``n``: a divisor of ``n`` within a
    factor of two of ``n / splits`` when there is one, else the ceiling. A divisor leaves no
    chunk running past the end (no masks), and keeps the partials' loops ``splits x chunk`` the
    same elements as their producer's, so the scheduler can still fuse it with them."""
    want = -(-n // splits)
    near = [d for d in range(max(1, want // 2), 2 * want + 1) if n % d == 0]
    return min(near, key=lambda d: abs(d - want)) if near else want


def split_reduction(inner_fn: Callable, ranges: list[Expr], rsizes: list[Expr],
                    reduction_type: str, dtype: torch.dtype, src_dtype: torch.dtype,
                    splits: int, outer: bool) -> Reduction:
    """``reduce(x)`` as ``reduce(reduce(chunk) for chunk in x)``: each output's reduction cut
    into ``splits`` chunks (the last one masked where it runs past the end). The partials are
    laid out ``[splits, *ranges]`` for an outer reduction (a program's adjacent outputs stay
    adjacent in memory: coalesced loads) and ``[*ranges, splits]`` otherwise (each output's
    partials contiguous for the second reduction)."""
    n = int(sympy.Mul(*rsizes))
    chunk = chunk_length(n, splits)
    splits = -(-n // chunk)
    strides = [sympy.Mul(*rsizes[k + 1:]) for k in range(len(rsizes))]
    where = 0 if outer else len(ranges)  # the split's position among the partials' dims

    def partial_fn(index, rindex):
        kept = list(index[:where]) + list(index[where + 1:])
        flat = index[where] * chunk + rindex[0]
        value = lambda: inner_fn(kept, unflatten_index(flat, rsizes, strides, 0))  # noqa: E731
        if splits * chunk == n:
            return value()
        inside = ops.lt(ops.index_expr(flat, torch.int64), ops.constant(n, torch.int64))
        return ops.masked(inside, value, _neutral(reduction_type, src_dtype))

    partial_ranges = list(ranges)
    partial_ranges.insert(where, sympy.Integer(splits))
    # partials of a 16-bit sum kept in float32: rounding each to 8 bits of mantissa before
    # adding them up loses what one kernel's float32 accumulator keeps
    partial_dtype = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    partials = realize(Reduction(device(), partial_dtype, partial_fn, partial_ranges,
                                 [sympy.Integer(chunk)], reduction_type, src_dtype))
    load = partials.make_loader()

    def combine(index, rindex):
        full = list(index)
        full.insert(where, rindex[0])
        return load(full)
    return Reduction(device(), dtype, combine, ranges, [sympy.Integer(splits)], reduction_type,
                     partial_dtype)


def _numel(x: IRNode, dims) -> Expr:
    size = x.get_size()
    return sympy.Mul(*[size[d] for d in _dims(x, dims)]) if size else sympy.Integer(1)


# --- plain reductions ----------------------------------------------------------------------


def _simple(reduction_type: str):
    def lower(x, dims=None, keepdim=False, *, dtype=None):
        out = out_meta()
        out = out[0] if isinstance(out, tuple) else out
        src = out.dtype if reduction_type in ("sum", "prod") else None
        return make_reduction(x, dims, keepdim, reduction_type, out.dtype, src)

    return lower


register_lowering(aten.sum.dim_IntList, aten.sum.default)(
    lambda x, dims=None, keepdim=False, *, dtype=None: _simple("sum")(x, dims, keepdim))
register_lowering(aten.prod.dim_int, aten.prod.default)(
    lambda x, dim=None, keepdim=False, *, dtype=None: _simple("prod")(x, dim, keepdim))
register_lowering(aten.amax)(_simple("max"))
register_lowering(aten.amin)(_simple("min"))
register_lowering(aten.max.default)(lambda x: _simple("max")(x))
register_lowering(aten.min.default)(lambda x: _simple("min")(x))


@register_lowering(aten.any.dim, aten.any.dims, aten.any.default)
def any_(x, dims=None, keepdim=False):
    return make_reduction(x, dims, keepdim, "any", torch.bool, torch.bool)


@register_lowering(aten.all.dim, aten.all.dims, aten.all.default)
def all_(x, dims=None, keepdim=False):  # all(x) = not any(not x)
    nany = realize(make_reduction(x, dims, keepdim, "any", torch.bool, torch.bool,
                                  body=ops.logical_not))
    return make_pointwise(ops.logical_not, [nany], torch.bool)


@register_lowering(aten.mean.dim, aten.mean.default)
def mean(x, dims=None, keepdim=False, *, dtype=None):
    dtype = out_meta().dtype
    total = realize(make_reduction(x, dims, keepdim, "sum", dtype, dtype))
    n = _numel(x, dims)
    return make_pointwise(lambda s: ops.truediv(s, ops.index_expr(n, dtype)), [total], dtype)


def _arg(reduction_type: str):
    def lower(x, dim=None, keepdim=False):
        if x.get_dtype() == torch.bool:  # eager has no bool kernel (the meta one accepts it)
            raise Unsupported(f"{reduction_type} of a bool tensor: ATen raises eager's error")
        if dim is not None:
            return make_reduction(x, [dim], keepdim, reduction_type, torch.int64)
        flat = View(x, [x.get_numel()], reshape_reindex(x.get_size(), [x.get_numel()]))
        out = realize(make_reduction(flat, [0], False, reduction_type, torch.int64))
        ones = [1] * len(x.get_size())  # (of the flattened tensor: keepdim keeps every dim, as 1s)
        return View(out, ones, reshape_reindex([], ones)) if keepdim else out

    return lower


register_lowering(aten.argmax)(_arg("argmax"))
register_lowering(aten.argmin)(_arg("argmin"))


@register_lowering(aten.max.dim, aten.min.dim)
def max_min_dim(x, dim, keepdim=False):
    from ..virtualized import V

    kind = "max" if V.graph.current_node.target is aten.max.dim else "min"
    values = make_reduction(x, [dim], keepdim, kind, x.get_dtype())
    indices = make_reduction(x, [dim], keepdim, "arg" + kind, torch.int64)
    return realize(values), realize(indices)


# --- Welford: mean and variance in one pass ---------------------------------------------------


def var_mean_welford(x: IRNode, dims, keepdim: bool, dtype: torch.dtype):
    """(mean, m2) buffers of x over dims, where m2 = sum((x - mean)^2), from one read of x."""
    split = split_welford(x, dims, keepdim, dtype)
    if split is not None:
        return split
    return tuple(realize(make_reduction(x, dims, keepdim, "welford_reduce", dtype, dtype,
                                        output_index=k)) for k in (0, 1))


def welford_partials(inner_fn: Callable, ranges: list, rsizes: list, dtype: torch.dtype):
    """(mean, m2) of each row of ``inner_fn``: one kernel, two outputs."""
    return tuple(realize(Reduction(device(), dtype, inner_fn, ranges, rsizes, "welford_reduce",
                                   dtype, k)) for k in (0, 1))


def split_welford(x: IRNode, dims, keepdim: bool, dtype: torch.dtype):
    """On a GPU, a Welford reduction with few outputs over long rows (a batch norm's statistics
    over N, H, W) split as a sum is (``make_reduction``): the (mean, m2) of equal chunks of each
    row in one kernel, then those partials combined (``combine_equal_welford``). None where it
    stays whole: a CPU, enough outputs, a 16-bit result, or chunks that would not be equal."""
    inner_fn, ranges, rsizes, dims, kept = reduction_parts(x, dims, keepdim, dtype)
    if dtype not in (torch.float32, torch.float64) or device_programs(device()) == 0:
        return None
    outer = bool(kept) and is_outer(x, dims, kept)
    splits = split_count(ranges, rsizes, "sum", outer)
    if splits <= 1:
        return None
    if outer and split_at_dims(x, dims, kept):  # rows over the trailing dims, then over those
        trailing = [d for d in dims if d > max(kept)]
        row_fn, row_ranges, row_sizes, _, _ = reduction_parts(x, trailing, True, dtype)
        parts = welford_partials(row_fn, row_ranges, row_sizes, dtype)
        loaders = [reduction_parts(p, dims, keepdim)[0] for p in parts]
        return combine_equal_welford(*loaders, ranges, [parts[0].get_size()[d] for d in dims],
                                     int(sympy.Mul(*row_sizes)), dtype)
    n = int(sympy.Mul(*rsizes))
    chunk = chunk_length(n, splits)
    if n % chunk:  # a masked lane of the last chunk would count as an element
        return None
    strides = [sympy.Mul(*rsizes[k + 1:]) for k in range(len(rsizes))]
    where = 0 if outer else len(ranges)  # the split's position, as ``split_reduction``'s

    def chunk_fn(index, rindex):
        kept_index = list(index[:where]) + list(index[where + 1:])
        return inner_fn(kept_index, unflatten_index(index[where] * chunk + rindex[0], rsizes,
                                                    strides, 0))

    chunk_ranges = list(ranges)
    chunk_ranges.insert(where, sympy.Integer(n // chunk))
    loads = [p.make_loader() for p in welford_partials(chunk_fn, chunk_ranges,
                                                       [sympy.Integer(chunk)], dtype)]
    at = [lambda index, rindex, load=load: load([*index[:where], rindex[0], *index[where:]])
          for load in loads]
    return combine_equal_welford(*at, ranges, [sympy.Integer(n // chunk)], chunk, dtype)


def combine_equal_welford(mean_at: Callable, m2_at: Callable, ranges: list, rsizes: list,
                          count: int, dtype: torch.dtype):
    """Welford partials of ``count`` elements each, combined (Chan et al.'s merge with equal
    weights): over the k partials of an output, mean = sum(mean_i) / k and
    m2 = sum(m2_i) + count * sum((mean_i - mean)^2). Never sum(x^2) - n mean^2, which loses
    every digit to cancellation where the mean is large against the spread."""
    k = int(sympy.Mul(*rsizes))
    mean = realize(Reduction(
        device(), dtype, lambda i, r: ops.truediv(mean_at(i, r), ops.constant(float(k), dtype)),
        ranges, rsizes, "sum", dtype))
    mean_of = mean.make_loader()

    def spread(index, rindex):
        d = ops.sub(mean_at(index, rindex), mean_of(index))
        return ops.add(m2_at(index, rindex), ops.mul(ops.mul(d, d),
                                                     ops.constant(float(count), dtype)))

    return mean, realize(Reduction(device(), dtype, spread, ranges, rsizes, "sum", dtype))


def _var(m2, n, correction, dtype):
    denom = sympy.Max(n - correction, 0)
    return make_pointwise(lambda v: ops.truediv(v, ops.index_expr(denom, dtype)), [m2], dtype,
                          size=m2.get_size())


@register_lowering(aten.var_mean.correction)
def var_mean(x, dims=None, *, correction=None, keepdim=False):
    dtype = out_meta()[0].dtype
    mean_, m2 = var_mean_welford(x, dims, keepdim, dtype)
    correction = 1 if correction is None else correction
    return realize(_var(m2, _numel(x, dims), correction, dtype)), mean_


@register_lowering(aten.var.correction)
def var(x, dims=None, *, correction=None, keepdim=False):
    dtype = out_meta().dtype
    _, m2 = var_mean_welford(x, dims, keepdim, dtype)
    return _var(m2, _numel(x, dims), 1 if correction is None else correction, dtype)


@register_lowering(aten.std.correction)
def std(x, dims=None, *, correction=None, keepdim=False):
    dtype = out_meta().dtype
    _, m2 = var_mean_welford(x, dims, keepdim, dtype)
    variance = _var(m2, _numel(x, dims), 1 if correction is None else correction, dtype)
    return make_pointwise(ops.sqrt, [variance], dtype, size=m2.get_size())


@register_lowering(aten.std_mean.correction)
def std_mean(x, dims=None, *, correction=None, keepdim=False):
    dtype = out_meta()[0].dtype
    mean_, m2 = var_mean_welford(x, dims, keepdim, dtype)
    variance = _var(m2, _numel(x, dims), 1 if correction is None else correction, dtype)
    return realize(make_pointwise(ops.sqrt, [variance], dtype, size=m2.get_size())), mean_


# --- normalisations --------------------------------------------------------------------------


def _floating_only(x, name: str) -> None:
    """ATen has no integer softmax kernel: such a call runs through ATen, which raises eager's
    error, instead of a kernel computing one."""
    if not x.get_dtype().is_floating_point:
        raise Unsupported(f"{name} of a {x.get_dtype()} tensor (no ATen kernel: it raises)")


@register_lowering(aten._softmax)
def softmax(x, dim, half_to_float=False):
    _floating_only(x, "softmax")
    dtype = out_meta().dtype
    mx = realize(make_reduction(x, [dim], True, "max", dtype, dtype))
    # sum(exp(x - max)): the exp is recomputed by the output below rather than stored
    total = realize(make_reduction(_sub_exp(x, mx, dtype), [dim], True, "sum", dtype, dtype))
    return make_pointwise(lambda v, m, s: ops.truediv(ops.exp(ops.sub(v, m)), s), [x, mx, total],
                          dtype)


def _sub_exp(x, mx, dtype):
    return make_pointwise(lambda v, m: ops.exp(ops.sub(v, m)), [x, mx], dtype, size=x.get_size())


@register_lowering(prepare_softmax_online)
def softmax_max_and_sum_exp(x, dims):
    """max(x) and sum(exp(x - max)) over ``dims`` in one reduction (fx_passes/online_softmax.py):
    a running max, and the running sum rescaled by exp(old max - new max) whenever it grows."""
    dtype = x.get_dtype()
    return tuple(realize(make_reduction(x, dims, True, "online_softmax_reduce", dtype, dtype,
                                        output_index=k)) for k in (0, 1))


@register_lowering(aten._log_softmax)
def log_softmax(x, dim, half_to_float=False):
    _floating_only(x, "log_softmax")
    dtype = out_meta().dtype
    mx = realize(make_reduction(x, [dim], True, "max", dtype, dtype))
    total = realize(make_reduction(_sub_exp(x, mx, dtype), [dim], True, "sum", dtype, dtype))
    return make_pointwise(lambda v, m, s: ops.sub(ops.sub(v, m), ops.log(s)), [x, mx, total],
                          dtype)


@register_lowering(aten.logsumexp)
def logsumexp(x, dims, keepdim=False):
    dtype = out_meta().dtype
    mx = realize(make_reduction(x, dims, True, "max", dtype, dtype))
    total = realize(make_reduction(_sub_exp(x, mx, dtype), dims, keepdim, "sum", dtype, dtype))
    mx_out = mx if keepdim else realize(make_reduction(x, dims, False, "max", dtype, dtype))
    return make_pointwise(lambda m, s: ops.add(m, ops.log(s)), [mx_out, total], dtype,
                          size=total.get_size())


@register_lowering(aten._softmax_backward_data)
def softmax_backward(grad, out, dim, input_dtype):  # out * (grad - sum(grad * out))
    dtype = out_meta().dtype
    prod = make_pointwise(ops.mul, [grad, out], dtype, size=grad.get_size())
    total = realize(make_reduction(prod, [dim], True, "sum", dtype, dtype))
    return make_pointwise(lambda g, o, s: ops.mul(o, ops.sub(g, s)), [grad, out, total], dtype)


@register_lowering(aten._log_softmax_backward_data)
def log_softmax_backward(grad, out, dim, input_dtype):  # grad - exp(out) * sum(grad)
    dtype = out_meta().dtype
    total = realize(make_reduction(grad, [dim], True, "sum", dtype, dtype))
    return make_pointwise(lambda g, o, s: ops.sub(g, ops.mul(ops.exp(o), s)), [grad, out, total],
                          dtype)


@register_lowering(aten.native_layer_norm)
def native_layer_norm(x, normalized_shape: Sequence[int], weight, bias, eps: float):
    n = len(x.get_size())
    dims = list(range(n - len(normalized_shape), n))
    dtype = x.get_dtype()
    mean_, m2 = var_mean_welford(x, dims, True, dtype)
    numel = _numel(x, dims)
    rstd = realize(make_pointwise(  # 1 / sqrt(m2 / N + eps)
        lambda v: ops.rsqrt(ops.add(ops.truediv(v, ops.index_expr(numel, dtype)),
                                    ops.constant(eps, dtype))), [m2], dtype, size=m2.get_size()))
    affine = [t for t in (weight, bias) if t is not None]

    def body(v, m, r, *wb):
        y = ops.mul(ops.sub(v, m), r)
        if weight is not None:
            y = ops.mul(y, wb[0])
        if bias is not None:
            y = ops.add(y, wb[-1])
        return y

    out = make_pointwise(body, [x, mean_, rstd, *affine], dtype, size=x.get_size())
    return out, mean_, rstd


@register_lowering(aten._native_batch_norm_legit_no_training, aten.native_batch_norm)
def batch_norm_eval(x, weight, bias, running_mean, running_var, *args):
    from ..virtualized import V

    target = V.graph.current_node.target  # an overload: aten.native_batch_norm.default
    training = args[0] if getattr(target, "overloadpacket", target) is aten.native_batch_norm \
        else False
    eps = args[-1]
    if training:
        raise Unsupported("batch norm in training mode updates the running statistics in place")
    if running_mean is None or running_var is None:
        raise Unsupported("batch norm in eval mode without running statistics")
    dtype = x.get_dtype()
    size = x.get_size()

    def channel(t):  # a per-channel vector read at the channel dim (dim 1)
        from ..ir import View

        return View(t, [size[1]] + [sympy.Integer(1)] * (len(size) - 2), lambda i: [i[0]])

    stats = [channel(running_mean), channel(running_var)]
    affine = [channel(t) for t in (weight, bias) if t is not None]

    def body(v, m, var_, *wb):  # (x - mean) / sqrt(var + eps) * w + b
        y = ops.mul(ops.sub(v, m), ops.rsqrt(ops.add(var_, ops.constant(eps, dtype))))
        if weight is not None:
            y = ops.mul(y, wb[0])
        if bias is not None:
            y = ops.add(y, wb[-1])
        return y

    out = make_pointwise(body, [x, *stats, *affine], dtype, size=size)
    return out, empty_like_meta(1), empty_like_meta(2)
