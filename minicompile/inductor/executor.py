"""The reference executor: run loop IR directly on torch tensors, vectorised over index grids.

No counterpart in torch/_inductor (Inductor only ever runs generated code); this is the oracle
that lets the IR be tested against eager before any code generator exists.

A node's body is run *once*, under ``TorchHandler``, with every loop variable bound to an
integer tensor shaped to broadcast over the whole iteration space (the ``torch.meshgrid`` of
its ranges, without materialising it). ``ops.load(buf, 10*i0 + i1)`` then evaluates the SymPy
index on those tensors and gathers every element at once; ``ops.add`` is ``torch.add``;
``ops.reduction`` reduces the trailing (reduction) dims of the grid.

Storage: ``buffers`` maps a buffer name to a flat 1-d tensor (its storage); a layout turns it
into a strided tensor with ``torch.as_strided``. ``run_nodes(nodes, buffers, sizes)`` runs any
list of nodes in order (an unfused graph, or one fused kernel); ``GraphExecutor(graph)`` is a
callable running a whole lowered graph.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import sympy
import torch
import torch.utils._pytree as pytree

from .ir import (Buffer, ComputedBuffer, ExternKernel, IRNode, Layout, Loops, MultiOutput,
                 ReinterpretView, layout_of)
from .checks import Check
from .index_eval import eval_index, evaluate_size, index_grid
from .virtualized import BINARY_OPS, UNARY_OPS, set_ops_handler


# reduction type -> reduce the last dim of a tensor
# a sum or product accumulates in the wider of the values' and the result's dtypes, rounded to
# the result once: ``sum(dtype=bfloat16)`` of float32 values (a split reduction's partials) would
# round each value to bfloat16 first
REDUCE = {
    "sum": lambda v, dtype: v.sum(-1, dtype=torch.promote_types(v.dtype, dtype)).to(dtype),
    "prod": lambda v, dtype: v.prod(-1, dtype=torch.promote_types(v.dtype, dtype)).to(dtype),
    "max": lambda v, dtype: v.amax(-1),
    "min": lambda v, dtype: v.amin(-1),
    "any": lambda v, dtype: v.bool().any(-1),
    "argmax": lambda v, dtype: _orderable(v).argmax(-1),
    "argmin": lambda v, dtype: _orderable(v).argmin(-1),
    "welford_reduce": lambda v, dtype: welford_reduce(v),
    "online_softmax_reduce": lambda v, dtype: online_softmax_reduce(v),
}


# scan type -> the running values along the last dim, computed in ``acc`` (float32 for 16-bit
# values, as eager's kernels and the generated ones accumulate), each rounded to ``dtype``
SCAN = {
    "sum": lambda v, acc: v.to(acc).cumsum(-1),
    "prod": lambda v, acc: v.to(acc).cumprod(-1),
    "logaddexp": lambda v, acc: v.to(acc).logcumsumexp(-1),
}


def _orderable(v: torch.Tensor) -> torch.Tensor:
    """argmax/argmin have no bool kernel (a backward's mask can be bool): False < True as 0 < 1."""
    return v.to(torch.uint8) if v.dtype == torch.bool else v


WELFORD_BLOCK = 32  # elements per block; blocks are merged one at a time, as a GPU kernel does


def online_softmax_reduce(v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(max, sum of exp(x - max)) of the last dim: what a Triton kernel computes in one pass
    (codegen/triton_kernel.py), here as softmax's two reductions."""
    m = v.amax(-1)
    return m, (v - m.unsqueeze(-1)).exp().sum(-1)


def welford_reduce(v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(mean, m2, count) of the last dim in one pass over it: each block of ``WELFORD_BLOCK``
    elements is summarised by its own (mean, m2, n), and the running summary absorbs the blocks
    one by one with Chan et al.'s merge (``welford_combine``). Never forms ``sum(x^2) -
    sum(x)^2/n``, whose cancellation loses every digit when the mean is large."""
    shape = v.shape[:-1]
    mean, m2, n = (v.new_zeros(shape) for _ in range(3))
    for block in v.split(WELFORD_BLOCK, dim=-1):
        b_mean = block.mean(-1)
        b_m2 = ((block - b_mean.unsqueeze(-1)) ** 2).sum(-1)
        mean, m2, n = welford_combine((mean, m2, n), (b_mean, b_m2, block.shape[-1]))
    if v.shape[-1] == 0:
        mean = v.new_full(shape, float("nan"))
    return mean, m2, n


def welford_combine(a, b):
    """Merge two (mean, m2, n) summaries of disjoint sets into the summary of their union."""
    mean_a, m2_a, n_a = a
    mean_b, m2_b, n_b = b
    n = n_a + n_b
    delta = mean_b - mean_a
    frac = torch.where(n > 0, n_b / n.clamp(min=1), torch.zeros_like(n))
    return mean_a + delta * frac, m2_a + m2_b + delta * delta * n_a * frac, n

# ops name -> torch function, where the names differ
TORCH_OPS = {
    "truediv": torch.div, "floordiv": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "truncdiv": lambda a, b: torch.div(a, b, rounding_mode="trunc"), "mod": torch.remainder,
    "relu": torch.relu, "bitwise_left_shift": torch.bitwise_left_shift,
}


def write_flat(out: torch.Tensor, idx: torch.Tensor, value: torch.Tensor,
               mode: str | None) -> None:
    """``out[idx] = value``, or for ``mode="atomic_add"`` ``out[idx] += value`` with repeated
    indices adding up (as eager's ``index_put_(accumulate=True)``). ``index_put_`` takes no
    unsigned type wider than uint8: those are written through their signed twin's view (the
    same bits, and a sum that wraps around alike)."""
    signed = SIGNED_TWINS.get(out.dtype)
    if signed is not None:
        out, value = out.view(signed), value.to(out.dtype).view(signed)
    out.index_put_((idx,), value, accumulate=mode == "atomic_add")


SIGNED_TWINS = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}


class TorchHandler:
    """``ops`` handler computing on whole-grid torch tensors."""

    def __init__(self, buffers: dict[str, torch.Tensor], env: dict, shape: list[int],
                 rshape: list[int] = ()):
        self.buffers = buffers
        self.env = env  # loop variables -> index tensors, size symbols -> ints
        self.shape = list(shape)  # the pointwise loop sizes
        self.full_shape = list(shape) + list(rshape)  # pointwise + reduction loop sizes
        self.store_shape = list(shape) + [1] * len(rshape)  # reduction dims reduced to 1
        self.masks: list[torch.Tensor] = []
        self._indirect = 0
        self.device = next(iter(buffers.values())).device if buffers else torch.device("cpu")

    def _index(self, index) -> torch.Tensor:
        return torch.as_tensor(eval_index(index, self.env), dtype=torch.int64, device=self.device)

    def load(self, name: str, index) -> torch.Tensor:
        buf = self.buffers[name]
        if self.masks and not bool(self.masks[-1].any()):
            # nothing is read: no index is evaluated, for it may divide by a zero-size dim
            # (``x[..., 1:]`` of a (2, 1) ``x``, padded), and an empty buffer has no element 0
            return torch.zeros(self.masks[-1].shape, dtype=buf.dtype, device=buf.device)
        idx = self._index(index)
        if self.masks:  # masked-off lanes may point anywhere: read element 0 instead
            idx = torch.where(self.masks[-1], idx, 0)
        return buf[self._in_bounds(name, index, idx, "reads")]

    def store(self, name: str, index, value, mode: str | None = None) -> None:
        out = self.buffers[name]
        idx = self._in_bounds(name, index, self._index(index), "writes")
        value = self._tensor(value).to(out.dtype)
        # one value per point (a scan's), or per row after the reduction dims are reduced
        shape = torch.broadcast_shapes(self.store_shape, idx.shape, value.shape)
        idx, value = idx.expand(shape).reshape(-1), value.expand(shape).reshape(-1)
        write_flat(out, idx, value, mode)

    def _in_bounds(self, name: str, index, idx: torch.Tensor, verb: str) -> torch.Tensor:
        """``idx``, checked against the buffer's size: an index expression that leaves it is a
        bug in a lowering, reported here by name (on the GPU, indexing out of bounds would be a
        device-side assert that ends the process's CUDA context instead of an exception)."""
        numel = self.buffers[name].numel()
        if idx.numel():
            lo, hi = int(idx.min()), int(idx.max())
            if lo < 0 or hi >= numel:
                raise IndexError(f"the kernel {verb} {name} at {index}: element "
                                 f"{lo if lo < 0 else hi}, outside its {numel} elements")
        return idx

    def constant(self, value, dtype) -> torch.Tensor:
        if isinstance(value, sympy.Basic):  # a size (``s0``, ``3*s1``): bound at run time
            value = eval_index(value, self.env)
        return torch.tensor(value, dtype=dtype, device=self.device)

    def _tensor(self, value) -> torch.Tensor:
        """``value`` as a tensor on the buffers' device (Python numbers and index grids too)."""
        return torch.as_tensor(value, device=self.device)

    def index_expr(self, expr, dtype) -> torch.Tensor:
        return self._tensor(eval_index(expr, self.env)).to(dtype)

    def to_dtype(self, x, dtype) -> torch.Tensor:
        return self._tensor(x).to(dtype)

    def where(self, cond, a, b) -> torch.Tensor:
        return torch.where(cond, a, b)

    def masked(self, mask, body, other) -> torch.Tensor:
        mask = mask if not self.masks else (mask & self.masks[-1])
        self.masks.append(mask)
        try:
            value = body()
        finally:
            self.masks.pop()
        return torch.where(mask, value, torch.tensor(other, dtype=value.dtype, device=value.device))

    def indirect_indexing(self, value, size, check: Check = Check()) -> sympy.Symbol:
        value = self._tensor(value).to(torch.int64)
        size = int(eval_index(size, self.env))
        low = -size if check.error.wrap else 0
        bad = (value < low) | (value >= size)
        if self.masks:  # a masked-off lane's index is never used (cat, pad)
            bad = bad & self.masks[-1]
        if bad.any():
            value_b, bad = torch.broadcast_tensors(value, bad)
            raise check.fail(int(value_b[bad][0]), size)
        symbol = sympy.Symbol(f"indirect{self._indirect}", integer=True)
        self._indirect += 1
        self.env[symbol] = torch.where(value < 0, value + size, value)  # x[-1] is x[size-1]
        return symbol

    def reduction(self, dtype, src_dtype, reduction_type: str, value):
        # flatten the reduction dims into one trailing dim and reduce it
        value = self._tensor(value).expand(self.full_shape).reshape(self.shape + [-1])
        result = REDUCE[reduction_type](value, dtype)
        if isinstance(result, tuple):  # welford: (mean, m2, weight); online softmax: (max, sum)
            return tuple(r.reshape(self.store_shape) for r in result)
        return result.reshape(self.store_shape)

    def scan(self, dtype, scan_type: str, value):
        # the (single) scanned dim is the grid's last: flatten the rows before it
        value = self._tensor(value).expand(self.full_shape).reshape(self.shape + [-1])
        acc = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
        return SCAN[scan_type](value, acc).to(dtype).reshape(self.full_shape)


def _make_op(name: str):
    fn = TORCH_OPS.get(name) or getattr(torch, name)
    return lambda self, *args: fn(*[self._tensor(a) for a in args])


for _name in UNARY_OPS + BINARY_OPS:
    setattr(TorchHandler, _name, _make_op(_name))


# --------------------------------------------------------------------------------------------
# Running nodes
# --------------------------------------------------------------------------------------------


def strided(storage: torch.Tensor, layout: Layout, sizes: Mapping) -> torch.Tensor:
    """The tensor ``layout`` describes on a flat ``storage``."""
    return torch.as_strided(storage, [evaluate_size(s, sizes) for s in layout.size],
                            [evaluate_size(s, sizes) for s in layout.stride],
                            evaluate_size(layout.offset, sizes))


def allocate(layout: Layout, sizes: Mapping) -> torch.Tensor:
    return torch.zeros(evaluate_size(layout.storage_size(), sizes), dtype=layout.dtype,
                       device=layout.device)


def run_computed(node: ComputedBuffer, buffers: dict, sizes: Mapping) -> None:
    ranges, rranges = node.get_ranges()
    shape = [evaluate_size(s, sizes) for s in ranges]
    rshape = [evaluate_size(s, sizes) for s in rranges]
    index, rindex = node.index_vars()
    grid = index_grid(shape + rshape, device=node.layout.device)
    env = dict(sizes)
    env.update(zip(index + rindex, grid))
    if node.name not in buffers:
        buffers[node.name] = storage_for(node, buffers, sizes)
    with set_ops_handler(TorchHandler(buffers, env, shape, rshape)):
        node.store_output(index, rindex)


def run_extern(node: ExternKernel, buffers: dict, sizes: Mapping) -> None:
    def to_value(a):
        if isinstance(a, ReinterpretView):
            return strided(buffers[a.data.name], a.layout, sizes)
        if isinstance(a, Buffer):
            return strided(buffers[a.name], a.layout, sizes)
        if isinstance(a, sympy.Basic):
            return evaluate_size(a, sizes)
        return a

    args, kwargs = pytree.tree_map(to_value, (node.args, node.kwargs),
                                   is_leaf=lambda a: isinstance(a, IRNode))
    result = node.kernel(*args, **kwargs)
    if node.layout is None:  # several outputs: MultiOutput nodes copy them out
        buffers[node.name] = result
        return
    _store_tensor(node, result, buffers, sizes)


def run_multi_output(node: MultiOutput, buffers: dict, sizes: Mapping) -> None:
    value = buffers[node.parent.name]
    for i in node.indices:
        value = value[i]
    _store_tensor(node, value, buffers, sizes)


def _store_tensor(node: Buffer, value: torch.Tensor, buffers: dict, sizes: Mapping) -> None:
    if node.name not in buffers:
        buffers[node.name] = storage_for(node, buffers, sizes)
    strided(buffers[node.name], node.layout, sizes).copy_(value)  # (in place: copies onto itself)


def storage_for(node: Buffer, buffers: dict, sizes: Mapping) -> torch.Tensor:
    """A new buffer's storage: fresh, or for a value written in place (``ir/mutation.py``) the
    storage of the buffer it updates."""
    target = node.get_mutation_names()
    return buffers[target[0]] if target else allocate(node.layout, sizes)


RUNNERS = [(ComputedBuffer, run_computed), (ExternKernel, run_extern),
           (MultiOutput, run_multi_output)]


def run_node(node: Buffer, buffers: dict, sizes: Mapping) -> None:
    for kind, runner in RUNNERS:
        if isinstance(node, kind):
            return runner(node, buffers, sizes)
    raise TypeError(f"the executor cannot run {type(node).__name__}")


def run_nodes(nodes: Iterable[Buffer], buffers: dict[str, torch.Tensor],
              sizes: Mapping[sympy.Symbol, int]) -> dict[str, torch.Tensor]:
    """Run ``nodes`` in order; each reads and writes ``buffers`` (name -> flat storage)."""
    for node in nodes:
        run_node(node, buffers, sizes)
    return buffers


# --------------------------------------------------------------------------------------------
# A whole graph
# --------------------------------------------------------------------------------------------


def bind_sizes(graph, args: list) -> dict[sympy.Symbol, int]:
    """Values of the size symbols, read off the actual inputs."""
    sizes = {}
    for symbol, (pos, kind, dim) in graph.symbol_sources.items():
        x = args[pos]
        sizes[symbol] = int(x) if kind == "value" else int(getattr(x, kind)(dim))
    return sizes


def input_storage(x: torch.Tensor, layout: Layout, sizes: Mapping) -> torch.Tensor:
    """``x``'s own flat storage if its strides match the layout the IR was built for; else a
    copy laid out as expected (never a wrong read)."""
    want = ([evaluate_size(s, sizes) for s in layout.size],
            [evaluate_size(s, sizes) for s in layout.stride], evaluate_size(layout.offset, sizes))
    if (list(x.shape), list(x.stride()), x.storage_offset()) == want and x.dtype == layout.dtype:
        n = x.untyped_storage().nbytes() // x.element_size()
        return torch.as_strided(x, (n,), (1,), 0)
    storage = allocate(layout, sizes)
    strided(storage, layout, sizes).copy_(x)
    return storage


def graph_layout(value: torch.Tensor) -> Layout:
    return layout_of(value)


class GraphExecutor:
    """``GraphExecutor(graph)(*inputs)``: run a lowered graph's nodes (or ``nodes``, e.g. the
    scheduler's order) and return its outputs in the graph's output structure."""

    def __init__(self, graph, nodes: list | None = None):
        self.graph = graph
        self.nodes = list(graph.buffers) if nodes is None else nodes

    def __call__(self, *args: Any) -> Any:
        graph = self.graph
        sizes = bind_sizes(graph, list(args))
        buffers: dict[str, Any] = {}
        for x, (name, buf) in zip(args, graph.graph_inputs.items()):
            if isinstance(buf, Buffer):
                buffers[name] = input_storage(x, buf.layout, sizes)
        for name, value in graph.constants.items():
            buffers[name] = input_storage(value, graph_layout(value), sizes)
        run_nodes(self.nodes, buffers, sizes)
        outs = [self._output(o, buffers, sizes) for o in graph.graph_outputs]
        return pytree.tree_unflatten(outs, graph.output_spec)

    @staticmethod
    def _output(o: Any, buffers: dict, sizes: Mapping) -> Any:
        if isinstance(o, ReinterpretView):
            return strided(buffers[o.data.name], o.layout, sizes)
        if isinstance(o, Buffer):
            return strided(buffers[o.name], o.layout, sizes)
        if isinstance(o, sympy.Basic):
            return evaluate_size(o, sizes)
        return o


def execute(node: Any, inputs: Mapping[str, torch.Tensor],
            sizes: Mapping[sympy.Symbol, int] | None = None) -> torch.Tensor:
    """Run one ``Pointwise``/``Reduction`` (or ``ComputedBuffer``) against named input tensors
    (contiguous, named like the ``InputBuffer``s the body loads) and return its output."""
    sizes = dict(sizes or {})
    if isinstance(node, Loops):
        node = ComputedBuffer("out", Layout(node.get_device(), node.get_dtype(), node.get_size()),
                              node)
    buffers = {name: t.contiguous().reshape(-1) for name, t in inputs.items()}
    run_nodes([node], buffers, sizes)
    return strided(buffers[node.name], node.layout, sizes)
