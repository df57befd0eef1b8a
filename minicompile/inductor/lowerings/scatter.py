"""Writes at indices read from a tensor: ``index_put``, ``index_add``, ``scatter``,
``scatter_add``, ``scatter_reduce`` (mirrors ``index_put_``, ``index_add``, ``scatter_``,
``scatter_add`` and ``scatter_reduce_`` in torch/_inductor/lowering.py, and its ``Scatter`` node).

Each is a copy of the destination followed by a scatter kernel (``ir.Scatter``): the loops run
over the source, each point writes the destination element its index names, and with
accumulation adds into it atomically, so duplicate indices add up:

    buf0 = x                                        # the copy (none where nothing else reads x)
    buf1: float32[64, 32] = InPlaceBuffer into buf0, at indices it reads (Scatter, atomic_add)
      for i0 in range(16):
        for i1 in range(32):
          tmp0 = load(idx, i0)
          indirect0 = indirect_indexing(tmp0, 64)   # checked: eager raises outside [0, 64)
          tmp1 = load(src, 32*i0 + i1)
          store(buf1, 32*indirect0 + i1, tmp1, atomic_add)

The destination is written in place where nothing else reads it: an intermediate only this op
reads (``destination``), or a graph input updated in place (``x.index_put_(...)``, marked by
``fx_passes/reinplace.py``: ``lowerings/mutation.py`` writes the ``SCATTER_PLANS`` there).

A case the kernel cannot do falls back to ATen with the reason (``Unsupported``): accumulation
in a dtype the backend has no atomic add for, deterministic algorithms (atomic adds sum duplicates
in a varying order), boolean masks, ``scatter_reduce`` other than a sum.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

from ..checks import Check
from ..ir import Buffer, ComputedBuffer, InPlaceBuffer, IRNode, Layout, Pointwise, Scatter
from ..lowering import Unsupported, compute_into, loader, register_lowering
from ..sizevars import Expr
from ..virtualized import V, ops
from .views import advanced_index

aten = torch.ops.aten

# backend -> the dtypes it adds into atomically (Triton's ``tl.atomic_add``: no bfloat16 under the
# interpreter, nor on GPUs before sm90; C++: ``#pragma omp atomic``, a compare-and-swap on the
# bits of a 16-bit float; the reference executor adds duplicates with ``index_put_``). Bool
# accumulation (a logical or) is left to ATen everywhere.
_NUMBERS = {torch.float32, torch.float64, torch.float16, torch.int32, torch.int64}
ATOMIC_ADD_DTYPES: dict[str, set[torch.dtype]] = {
    "triton": _NUMBERS,
    "cpp": _NUMBERS | {torch.bfloat16},
    "reference": _NUMBERS | {torch.bfloat16, torch.int8, torch.int16, torch.uint8},
}
SM90 = 9  # the first CUDA compute capability whose Triton adds bfloat16 atomically


def atomic_add_dtypes(device: torch.device) -> set[torch.dtype]:
    """What the backend compiling for ``device`` adds atomically."""
    backend = V.graph.options.backend(device)
    dtypes = ATOMIC_ADD_DTYPES.get(backend, set())
    if backend == "triton" and device.type == "cuda" and \
            torch.cuda.get_device_capability(device)[0] >= SM90:
        dtypes = dtypes | {torch.bfloat16}
    return dtypes


def scatter_mode(dtype: torch.dtype, device: torch.device, accumulate: bool) -> str | None:
    """How the kernel stores: overwriting (None) or adding (``"atomic_add"``); raises
    ``Unsupported`` (the op falls back to ATen) where the kernel cannot match eager."""
    if torch.are_deterministic_algorithms_enabled():
        raise Unsupported("deterministic algorithms are on: a scatter's points run in any order "
                          "(atomic adds sum duplicates in a varying order)")
    if not accumulate:
        return None
    if dtype not in atomic_add_dtypes(device):
        raise Unsupported(f"accumulating {dtype} at run-time indices: no atomic add for it on "
                          f"this backend")
    return "atomic_add"


@dataclass
class ScatterPlan:
    """What a scatter writes, worked out from the destination's size, dtype and device before
    any buffer exists (so a refusal leaves nothing behind): ``values(i)`` at ``position(i)`` for
    every ``i`` in ``ranges``, stored as ``mode`` says."""

    ranges: list[Expr]
    values: Callable
    position: Callable
    mode: str | None

    def into(self, dest: Buffer) -> Buffer:
        """The scatter written into ``dest``'s storage: the new value of ``dest`` (``dest``
        itself where it writes nothing: eager checks no index then, nor does a kernel)."""
        if any(s == 0 for s in self.ranges):
            return dest
        data = Scatter(dest.get_device(), dest.get_dtype(), self.values, list(self.ranges),
                       output_indexer=self.position, scatter_mode=self.mode)
        buf = InPlaceBuffer(V.graph.new_name(), dest.layout, data, mutated=dest.get_name(),
                            region=dest.layout)
        return V.graph.register_buffer(buf)


def only_reader_is_this_node(x: IRNode) -> bool:
    """Whether ``x`` is a buffer this graph computed that no node but the one being lowered reads
    (and no other node is: a view lowered to ``x`` itself): then its storage can take the
    scatter, as Inductor's reinplacing turns ``index_put`` into ``index_put_``."""
    if not isinstance(x, ComputedBuffer) or x.get_mutation_names():
        return False
    producers = [n for n, value in V.graph.env.items() if value is x]
    return len(producers) == 1 and set(producers[0].users) == {V.graph.current_node}


def destination(x: IRNode) -> Buffer:
    """The buffer a functional scatter writes: ``x``'s own where nothing else reads it, else a
    copy of ``x`` (an unrealized ``x`` is computed straight into it: the copy is free)."""
    if only_reader_is_this_node(x):
        return x
    return compute_into(x, Layout(x.get_device(), x.get_dtype(), x.get_size()))


def _dim(dim: int, ndim: int) -> int:
    if ndim == 0:
        raise Unsupported("a scatter into a 0-d tensor")
    return dim % ndim


def _source(x: Any, dtype: torch.dtype, size: list[Expr], alpha: Any = 1) -> Callable:
    """The values a scatter writes: ``x`` (a tensor or a number) broadcast to ``size``, times
    ``alpha``, in the destination's dtype."""
    load = loader(x, dtype, size)
    if alpha == 1:
        return load
    return lambda i: ops.to_dtype(ops.mul(load(i), ops.constant(alpha, dtype)), dtype)


# --- one function per op: what it writes into a destination like ``dest`` ---------------------

def index_put_plan(dest: IRNode, indices: list, values: Any, accumulate: bool = False):
    """``dest[indices] = values`` (``+=`` with ``accumulate``)."""
    mode = scatter_mode(dest.get_dtype(), dest.get_device(), accumulate)
    shape, position = advanced_index(dest.get_size(), indices)
    return ScatterPlan(shape, _source(values, dest.get_dtype(), shape), position, mode)


def _along(dest: IRNode, dim: int, index: IRNode, check: Check) -> Callable:
    """``position(i)``: ``i`` with its ``dim`` coordinate replaced by the index tensor's value
    (at ``i`` itself for ``scatter``, at ``i[dim]`` for ``index_add``'s 1-d index)."""
    size, load_index = dest.get_size(), index.make_loader()
    one_d = len(index.get_size()) != len(size)

    def position(i):
        at = ([i[dim]] if index.get_size() else []) if one_d else i
        out = list(i)
        out[dim] = ops.indirect_indexing(load_index(at), size[dim], check)
        return out

    return position


def index_add_plan(dest: IRNode, dim: int, index: IRNode, source: IRNode, alpha: Any = 1):
    """``dest[..., index[k], ...] += alpha * source[..., k, ...]`` along ``dim``."""
    dim = _dim(dim, len(dest.get_size()))
    mode = scatter_mode(dest.get_dtype(), dest.get_device(), True)
    if dest.get_size()[dim] == 0:
        raise Unsupported("index_add into an empty dim (eager raises another error there: "
                          "IndexError, not its RuntimeError for an index out of range)")
    shape = source.get_size()
    if len(shape) != len(dest.get_size()):
        raise Unsupported("index_add with a source of another rank than the destination")
    ndim = len(shape)
    check = Check("index_add_slices" if ndim == 1 or 0 < dim < ndim - 1 else "scatter", dim)
    return ScatterPlan(shape, _source(source, dest.get_dtype(), shape, alpha),
                       _along(dest, dim, index, check), mode)


def scatter_plan(dest: IRNode, dim: int, index: IRNode, src: Any, accumulate: bool = False):
    """``dest[..., index[i], ...] = src[i]`` for every point ``i`` of ``index`` (``+=`` with
    ``accumulate``); ``src`` is a tensor at least as large as ``index``, or a number."""
    dim = _dim(dim, len(dest.get_size()))
    mode = scatter_mode(dest.get_dtype(), dest.get_device(), accumulate)
    shape = index.get_size()
    if len(shape) != len(dest.get_size()):
        raise Unsupported("a scatter whose index has another rank than the destination")
    if isinstance(src, IRNode):  # src is read at the index's points (it may be larger)
        load_src = src.make_loader()
        values = lambda i: ops.to_dtype(load_src(i), dest.get_dtype())  # noqa: E731
    else:
        values = _source(src, dest.get_dtype(), shape)
    return ScatterPlan(shape, values, _along(dest, dim, index, Check("scatter", dim)), mode)


def scatter_add_plan(dest: IRNode, dim: int, index: IRNode, src: IRNode):
    return scatter_plan(dest, dim, index, src, accumulate=True)


def scatter_reduce_plan(dest: IRNode, dim: int, index: IRNode, src: IRNode, reduce: str,
                        include_self: bool = True):
    if reduce != "sum" or not include_self:
        raise Unsupported(f"scatter_reduce {reduce!r} (include_self={include_self}): only a sum "
                          "into the destination's values is an atomic add")
    return scatter_plan(dest, dim, index, src, accumulate=True)


def scatter_value_plan(dest: IRNode, dim: int, index: IRNode, value: Any):
    return scatter_plan(dest, dim, index, value)


# functional op -> what it writes (``lowerings/mutation.py`` writes it into an input in place)
SCATTER_PLANS: dict[Any, Callable[..., ScatterPlan]] = {
    aten.index_put.default: index_put_plan,
    aten._unsafe_index_put.default: index_put_plan,  # (eager skips the index checks; kept here)
    aten.index_add.default: index_add_plan,
    aten.scatter.src: scatter_plan,
    aten.scatter.value: scatter_value_plan,
    aten.scatter_add.default: scatter_add_plan,
    aten.scatter_reduce.two: scatter_reduce_plan,
}


def functional(plan: Callable) -> Callable:
    """The functional op: its scatter into ``destination(x)``."""
    def lower(x: IRNode, *args: Any, **kwargs: Any) -> InPlaceBuffer:
        return plan(x, *args, **kwargs).into(destination(x))
    return lower


def masked_put(x: IRNode, indices: list, values: Any, accumulate: bool = False) -> Pointwise:
    """``x[mask] = v`` (``+= v``) with one value ``v`` for every element the boolean ``mask``
    selects (``x[x < 0] = 0``): not a scatter but a select, ``where(mask, v, x)``, which fuses
    with its neighbours (a scatter would first need the mask's ``nonzero()``, of data-dependent
    size). ``mask`` covers the leading dims of ``x``."""
    mask, size = indices[0], x.get_size()
    nmask = len(mask.get_size())
    load_x, load_mask = x.make_loader(), mask.make_loader()
    load_v = loader(values, x.get_dtype(), [])

    def inner_fn(i):
        old = load_x(i)
        new = ops.add(old, load_v([])) if accumulate else load_v([])
        return ops.where(load_mask(i[:nmask]), new, old)

    return Pointwise(x.get_device(), x.get_dtype(), inner_fn, list(size))


def is_masked_put(x: IRNode, indices: list, values: Any) -> bool:
    """One boolean index over the leading dims, and one value (``masked_put`` applies)."""
    mask = indices[0] if len(indices) == 1 else None
    one_value = not isinstance(values, IRNode) or all(s == 1 for s in values.get_size())
    return (isinstance(mask, IRNode) and mask.get_dtype() == torch.bool and one_value
            and list(mask.get_size()) == list(x.get_size()[:len(mask.get_size())]))


@register_lowering(aten.index_put.default)
def index_put(x: IRNode, indices: list, values: Any, accumulate: bool = False) -> IRNode:
    if is_masked_put(x, indices, values):
        return masked_put(x, indices, values, accumulate)
    return index_put_plan(x, indices, values, accumulate).into(destination(x))


for _op, _plan in SCATTER_PLANS.items():
    if _op not in (aten.scatter.src, aten.scatter.value, aten.index_put.default):
        register_lowering(_op)(functional(_plan))  # (nn.py tries a gather first for scatter)
