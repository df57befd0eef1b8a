"""ATen op -> loop IR (mini version of torch/_inductor/lowering.py).

``lowerings`` maps each ATen overload to a Python function taking IR nodes where the op takes
tensors and returning IR: a ``Pointwise``/``Reduction`` (the graph realizes it into a
``ComputedBuffer``), a ``View`` (no copy), a ``Buffer`` or a tuple of those. The op families live
in ``lowerings/`` (pointwise, views, reductions, creation, extern); this file holds the table and
the helpers they share. An op with no row becomes a ``FallbackKernel`` (ATen call) and the reason
is logged: lowering never fails, it only gets slower.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

import sympy
import torch
import torch.utils._pytree as pytree
from torch._subclasses.fake_tensor import FakeTensorMode

from .ir import (Buffer, ComputedBuffer, ExternKernel, FallbackKernel, IRNode, Layout, Loops, MultiOutput,
                 Pointwise, ReinterpretView, View, as_strided_layout, broadcast_reader, layout_of)
from .ir.layout import channels_last_order, eager_fill_order, fill_ordered_strides
from .ir.read_writes import RecordReadWrites
from ..shapes.functions import sym_to_sympy
from .sizevars import Expr, as_ints, sympify
from .virtualized import V, ops, set_ops_handler

log = logging.getLogger(__name__)
aten = torch.ops.aten
LOW_PRECISION = (torch.float16, torch.bfloat16)  # computed in float32 inside a kernel

lowerings: dict[Any, Callable[..., Any]] = {}
# how a node marked ``meta["reinplace"]`` (fx_passes/reinplace.py) writes into its first
# argument's storage instead of making a new tensor (lowerings/mutation.py)
inplace_lowerings: dict[Any, Callable[..., Any]] = {}


def register_lowering(*aten_ops: Any) -> Callable:
    """Register ``fn`` as the lowering of each op (an OpOverloadPacket registers every overload)."""

    def register(fn: Callable) -> Callable:
        for op in aten_ops:
            if isinstance(op, torch._ops.OpOverloadPacket):
                for name in op.overloads():
                    lowerings.setdefault(getattr(op, name), fn)
            else:
                lowerings[op] = fn
        return fn

    return register


def register_inplace_lowering(*aten_ops: Any) -> Callable:
    """Register ``fn`` as the in-place lowering of each (functional) op."""

    def register(fn: Callable) -> Callable:
        for op in aten_ops:
            inplace_lowerings[op] = fn
        return fn

    return register


class Unsupported(Exception):
    """Raised by a lowering for an argument combination it does not handle: the graph falls
    back to the ATen kernel for this node, with the message as the logged reason."""


# --- what the node being lowered produces (from its FakeTensor metadata) --------------------


def out_meta() -> Any:
    return V.graph.current_node.meta["val"]


def out_size(output: int | None = None) -> list[Expr]:
    """The size of the node's result (of its ``output``-th result, for an op returning several)."""
    meta = out_meta() if output is None else out_meta()[output]
    return [sym_to_sympy(s) for s in meta.shape]


def out_dtype() -> torch.dtype:
    return out_meta().dtype


def device() -> torch.device:
    """Where the node being lowered puts its result: a factory op (``arange(n, device=...)``)
    has no input to take a device from."""
    meta = out_meta()
    return meta.device if isinstance(meta, torch.Tensor) else V.graph.device


# --- loaders ---------------------------------------------------------------------------------


def wrapped_scalar(value: Any, dtype: torch.dtype | None) -> Any:
    """An integer scalar of an integer tensor's op as eager has it: wrapped around at the
    dtype's width (``int8 + 250`` adds -6; the backends' literals are then in range: Triton's
    ``tl.full([1], 250, tl.int8)`` fails to build, and a value range of 250 would be wrong)."""
    if not isinstance(value, int) or isinstance(value, bool) or dtype is None or \
            dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
        return value
    info = torch.iinfo(dtype)
    return (value - info.min) % 2 ** info.bits + info.min


def loader(x: Any, dtype: torch.dtype | None, size: Sequence[Expr]) -> Callable:
    """``index -> value`` reading ``x`` broadcast to ``size`` and cast to ``dtype``; scalars
    become constants."""
    if not isinstance(x, IRNode):
        value = x.item() if isinstance(x, torch.Tensor) else x
        if isinstance(value, sympy.Expr):  # a SymInt used as a number
            return lambda index: ops.index_expr(value, dtype or torch.int64)
        value = wrapped_scalar(value, dtype)
        return lambda index: ops.constant(value, dtype)
    load, broadcast = x.make_loader(), broadcast_reader(x.get_size(), size)
    cast = dtype is not None and dtype != x.get_dtype()

    def read(index):
        value = load(broadcast(index))
        return ops.to_dtype(value, dtype) if cast else value

    return read


def make_pointwise(fn: Callable, inputs: Sequence[Any], dtype: torch.dtype,
                   compute_dtype: torch.dtype | None = None,
                   size: Sequence[Expr] | None = None) -> Pointwise:
    """``out[index] = fn(*[input[index] for input in inputs])``, inputs broadcast to ``size``
    (default: the current node's output size) and cast to ``compute_dtype``.

    The kernels compute half-precision values in float32. A half-precision result is rounded
    to its dtype right here, as eager's kernel rounds it when it writes its output, and not
    only where a kernel stores it: otherwise a value recomputed inside a fused kernel differs
    from the same value read back from memory. The backward of ``amax`` compares the stored
    (rounded) maximum with the recomputed (unrounded) input, finds no element equal to it and
    divides the gradient by a count of 0 (torch's ``emulate_precision_casts``; pytorch#151352).
    """
    size = list(size) if size is not None else out_size()
    compute_dtype = compute_dtype or dtype
    loaders = [loader(x, compute_dtype, size) for x in inputs]
    round_result = dtype != compute_dtype or (
        dtype in LOW_PRECISION and V.graph.options.emulate_precision_casts)

    def inner_fn(index):
        loaded = [load(index) for load in loaders]
        value = fn(*loaded)
        if any(value is v for v in loaded):  # an input passed through (a copy): already rounded
            return value
        return ops.to_dtype(value, dtype) if round_result else value

    return Pointwise(device(), dtype, inner_fn, size)


# --- realization -----------------------------------------------------------------------------


def is_scalar_constant(x: IRNode) -> bool:
    """A 0-d loop nest that reads no buffer (``scalar_tensor(0.0)``, ``full([], 2)``): its
    readers inline the value instead of a kernel writing it to a buffer of its own and
    every reader loading it back."""
    if not isinstance(x, Pointwise) or x.get_size():
        return False
    handler = RecordReadWrites({})
    with set_ops_handler(handler):
        x.inner_fn([])
    return not handler.reads


def realize(x: IRNode, like: Any = None, channels_last: bool = False) -> IRNode:
    """Give ``x`` its own buffer if it is an unrealized loop nest (views stay views), laid out
    as eager lays out its tensor ``like`` where that is dense (:func:`layout_like`)."""
    return compute_into(x, layout_like(x, like, channels_last)) if isinstance(x, Loops) else x


def layout_like(x: IRNode, like: Any = None, channels_last: bool = False) -> Layout:
    """A fresh buffer for ``x``'s values: in the fill order of eager's tensor ``like`` (a
    FakeTensor) where that is dense, else row-major. ``channels_last``: a dense 4-D value is
    laid out channels-last whatever eager's layout (a node around the convolutions of a graph
    that runs them channels-last: ``layout_opt.py``).

    Eager's pointwise ops take their output's layout from their inputs (ATen's TensorIterator:
    channels-last in, channels-last out), and a buffer laid out the same way as the tensors it
    is computed from is read and written in one order: a straight loop over memory. Inductor
    decides it the same way (``FlexibleLayout`` frozen to its inputs' stride order,
    ``decide_layout``), and the caller gets eager's strides back."""
    size = x.get_size()
    order = eager_fill_order(like) if isinstance(like, torch.Tensor) and \
        like.dim() == len(size) else None
    if channels_last and order is not None and len(size) == 4:
        order = channels_last_order(4)
    stride = fill_ordered_strides(size, order) if order is not None else []
    return Layout(x.get_device(), x.get_dtype(), size, stride)


def compute_into(x: IRNode, layout: Layout) -> ComputedBuffer:
    """A new buffer laid out as ``layout`` holding ``x``'s values (a loop nest computes them
    there directly; anything else is copied element by element)."""
    loops = x if isinstance(x, Loops) else Pointwise(x.get_device(), x.get_dtype(),
                                                      x.make_loader(), x.get_size())
    return V.graph.register_buffer(ComputedBuffer(V.graph.new_name(), layout, loops))


def filled(layout: Layout, value: Any = 0) -> ComputedBuffer:
    """A new buffer laid out as ``layout``, every element ``value`` (what a scatter or a
    cat's copies write into)."""
    dtype = layout.dtype
    return compute_into(Pointwise(layout.device, dtype, lambda i: ops.constant(value, dtype),
                                  list(layout.size)), layout)


def realize_strided(x: IRNode) -> Buffer | ReinterpretView:
    """``x`` as something a library call can take (a tensor with strides): a buffer, a strided
    view of one, or else a contiguous copy."""
    x = realize(x)
    strided = as_strided_layout(x)
    if strided is not None:
        return strided if not isinstance(x, Buffer) else x
    return compute_into(x, Layout(x.get_device(), x.get_dtype(), x.get_size()))


def require_fill_order(x: IRNode, order: list[int]) -> Buffer | ReinterpretView:
    """``x`` as a tensor with strides that fills its dims in ``order`` (Inductor's
    ``require_stride_order``): ``x`` itself when it is laid out so already (a size-1 dim may
    have any stride), else a copy laid out so."""
    strided = None if isinstance(x, Loops) else as_strided_layout(x)
    if strided is not None:
        layout = strided.layout
        want = fill_ordered_strides(layout.size, order)
        if layout.offset == 0 and all(sz == 1 or sympy.expand(st - w) == 0
                                      for sz, st, w in zip(layout.size, layout.stride, want)):
            return x if isinstance(x, Buffer) else strided
    size = x.get_size()
    return compute_into(x, Layout(x.get_device(), x.get_dtype(), size,
                                  fill_ordered_strides(size, order)))


def realize_as_eager(x: IRNode, val: Any, any_stride_of_size_one: bool = False) -> IRNode:
    """``x`` laid out in memory as eager's tensor ``val`` was, for an op that reads strides
    (``as_strided_scatter``, :data:`READS_STRIDES`): its strides and offsets are eager's, and mean
    other elements in a buffer laid out otherwise (a ``masked_fill`` of a transposed tensor is
    transposed in eager, contiguous here). A fresh tensor of eager's (offset 0) whose strides
    differ from ``x``'s is copied into a buffer with those strides; anything else is ``x``.
    ``any_stride_of_size_one``: a dim of size 1 may have any stride (an op that reads elements,
    not raw strides)."""
    if not isinstance(val, torch.Tensor) or val.storage_offset() != 0:
        return x
    want = [sym_to_sympy(s) for s in val.stride()]
    strided = None if isinstance(x, Loops) else as_strided_layout(x)
    if strided is not None and sympify(strided.layout.offset) == 0 and all(
            sympify(st) == w or (any_stride_of_size_one and sympify(n) == 1)
            for n, st, w in zip(strided.layout.size, strided.layout.stride, want)):
        return x
    return compute_into(x, Layout(x.get_device(), x.get_dtype(), x.get_size(), want, 0))


def laid_out_as_traced(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The tensor arguments of the node being lowered laid out as eager's were when it was
    traced. An op left to ATen may assume layouts ATen itself produces (GroupNorm's CUDA
    kernel takes only a contiguous or an exactly channels-last input); a layout chosen here
    (channels-last convolutions, a fused producer's order) could hand it one eager never
    would. A copy is made only where the layouts differ."""
    node = V.graph.current_node
    schema = getattr(node.target, "_schema", None)
    if schema is None or any(a.alias_info is not None and a.alias_info.is_write
                             for a in schema.arguments):
        return args, kwargs  # an op that writes an argument must write the buffer itself
    vals, _ = pytree.tree_flatten((node.args, node.kwargs))
    leaves, spec = pytree.tree_flatten((args, kwargs))
    if len(vals) != len(leaves):
        return args, kwargs
    leaves = [realize_as_eager(realize(a), val, any_stride_of_size_one=True)
              if isinstance(a, IRNode) and dense(val := getattr(v, "meta", {}).get("val")) else a
              for a, v in zip(leaves, vals)]
    return pytree.tree_unflatten(leaves, spec)


def dense(val: Any) -> bool:
    """A tensor whose elements fill its memory once each (no broadcast, no gaps): a layout a
    buffer can be computed into."""
    return isinstance(val, torch.Tensor) and eager_fill_order(val) is not None


# ops whose strides and offsets address the storage of their first argument
READS_STRIDES = {aten.as_strided_scatter.default}


# --- fallbacks --------------------------------------------------------------------------------

# Ops left to ATen on purpose, and why (any other op without a row: "no lowering for ...").
FALLBACK_REASONS = {
    aten.cummax: "a scan carrying two running values (the maximum and its index): ir.Scan "
                 "carries one",
    aten.cummin: "a scan carrying two running values (the minimum and its index): ir.Scan "
                 "carries one",
    aten.nonzero: "data-dependent output size",
    aten.masked_select: "data-dependent output size",
}


def fallback_reason(target: Any) -> str:
    packet = getattr(target, "overloadpacket", target)
    return FALLBACK_REASONS.get(packet, f"no lowering for {target}")



def make_fallback(target: Any, args: tuple, kwargs: dict, reason: str) -> Any:
    """Run ``target`` through ATen (no lowering for it); the reason is logged and kept in
    ``V.graph.fallbacks``. Returns the IR of its output(s)."""
    log.info("fallback %s: %s", target, reason)
    V.graph.fallbacks.append((str(target), reason))
    args, kwargs = laid_out_as_traced(args, kwargs)
    return make_extern(target, args, kwargs, FallbackKernel, reason=reason)


def make_extern(target: Any, args: tuple, kwargs: dict, cls: type = ExternKernel,
                layout: Layout | None = None, **extra: Any) -> Any:
    """An ATen call as an IR node; tuple outputs become ``MultiOutput`` buffers. ``layout``:
    the layout ATen gives a single output where it is not eager's (the arguments were laid out
    otherwise than in eager: a convolution of a channels-last input)."""

    if target in READS_STRIDES and args and isinstance(args[0], IRNode):
        args = (realize_as_eager(args[0], V.graph.current_node.args[0].meta.get("val")), *args[1:])
    args, kwargs = pytree.tree_map_only(IRNode, realize_strided, (args, kwargs))
    meta = out_meta() if layout is not None else meta_for_layouts(target, args, kwargs)
    name = V.graph.new_name()
    if isinstance(meta, torch.Tensor):
        return V.graph.register_buffer(cls(name, layout or layout_of(meta), target, args, kwargs,
                                           **extra))
    kernel = V.graph.register_buffer(cls(name, None, target, args, kwargs, **extra))

    def outputs(val, path):
        if isinstance(val, torch.Tensor):
            return V.graph.register_buffer(
                MultiOutput(V.graph.new_name(), layout_of(val), kernel, path))
        if isinstance(val, (list, tuple)):
            return type(val)(outputs(v, path + (k,)) for k, v in enumerate(val))
        return val

    return outputs(meta, ())


def meta_for_layouts(target: Any, args: tuple, kwargs: dict) -> Any:
    """The outputs of ``target`` run on fake tensors laid out as the arguments really are
    (Inductor's ``FallbackKernel`` takes its layouts so), where every size is a number; else,
    or where the op cannot run on fake tensors, the traced outputs' metadata. The two differ
    where an argument is laid out otherwise than it was traced (a saved activation the forward
    kept channels-last): ATen then returns, say, a channels-last gradient, and expecting the
    traced layout would copy each such output back on every call (``laid_out_as``)."""
    meta = out_meta()
    leaves, spec = pytree.tree_flatten((args, kwargs))
    layouts = {i: (as_ints(a.get_size()), as_ints(getattr(getattr(a, "layout", None),
                                                           "stride", [None])))
               for i, a in enumerate(leaves) if isinstance(a, IRNode)}
    if not layouts or any(None in pair for pair in layouts.values()):
        return meta
    try:
        with FakeTensorMode():
            fakes = [torch.empty_strided(*layouts[i], dtype=a.get_dtype(), device=a.get_device())
                     if i in layouts else a for i, a in enumerate(leaves)]
            f_args, f_kwargs = pytree.tree_unflatten(fakes, spec)
            fake = target(*f_args, **f_kwargs)
    except Exception:  # noqa: BLE001 (an op fake tensors cannot run: the traced layouts)
        return meta
    same_shapes = pytree.tree_structure(fake) == pytree.tree_structure(meta) and all(
        not isinstance(m, torch.Tensor) or (isinstance(f, torch.Tensor) and f.shape == m.shape)
        for f, m in zip(pytree.tree_leaves(fake), pytree.tree_leaves(meta)))
    return fake if same_shapes else meta


def view(x: IRNode, size: Sequence[Any], reindex: Callable) -> View:
    return View(x, [sympify(s) for s in size], reindex)

