"""Lower an ATen FX graph into loop IR (mini version of torch/_inductor/graph.py).

``GraphLowering(gm).run()`` walks the graph in order. A placeholder becomes an ``InputBuffer``
(its layout from the FakeTensor in ``node.meta["val"]``, sizes as SymPy); every other node is
looked up in ``lowering.lowerings`` and its result realized into a ``ComputedBuffer`` named
``buf0, buf1, ...`` unless it is a view. Ops with no lowering become ``FallbackKernel``s.

After ``run``: ``buffers`` (every buffer in program order: what the scheduler schedules),
``graph_inputs``, ``graph_outputs`` and ``fallbacks`` (op, reason). ``str(graph)`` is the
``ir_pre_fusion`` artifact.
"""

from __future__ import annotations

import logging
import math
import operator
from typing import Any

import sympy
import torch
import torch.utils._pytree as pytree

from .ir.layout import eager_fill_order
from .layout_opt import decide_layout_opt, nodes_prefer_channels_last
from .ir import (Buffer, ComputedBuffer, ExternKernel, InputBuffer, IRNode, Layout, Loops,
                 Pointwise, View, layout_of)
from ..shapes.functions import sym_to_sympy
from .options import InductorOptions
from . import lowerings as _families  # noqa: F401  (the op families register their rows)
from .lowering import (Unsupported, compute_into, fallback_reason, inplace_lowerings,
                       is_scalar_constant, layout_like, lowerings, make_fallback, realize,
                       realize_strided)
from .sizevars import Expr, FloorDiv, as_ints
from .virtualized import V

log = logging.getLogger(__name__)
aten = torch.ops.aten

# Nodes computing sizes rather than tensors: evaluated on SymPy at lowering time.
SYMBOLIC_OPS = {
    operator.add: operator.add, operator.sub: operator.sub, operator.mul: operator.mul,
    operator.floordiv: FloorDiv, operator.neg: operator.neg, operator.mod: sympy.Mod,
    aten.sym_size.int: lambda x, d: x.get_size()[d],
    aten.sym_stride.int: lambda x, d: x.get_stride()[d],
    aten.sym_numel.default: lambda x: x.get_numel(),
    torch.sym_max: sympy.Max, torch.sym_min: sympy.Min,
    math.floor: sympy.floor, math.ceil: sympy.ceiling,  # int(1.7 * s2): a float's floor
}


def is_flat(spec: pytree.TreeSpec) -> bool:
    """A list or tuple of leaves (``[buf0, buf1]``): returned without a pytree walk per call."""
    try:
        return spec == pytree.tree_structure(spec.type(range(spec.num_leaves)))
    except Exception:  # a dict, a namedtuple...: not constructible from a range
        return False



# Inductor keeps complex tensors out of its loop kernels too (its complex ops are fallbacks)
COMPLEX_REASON = ("a complex tensor: no kernel backend has a complex type (the ATen op runs it)")
# nor has any kernel backend here a float8 type (the conversions' rounding is not written)
FLOAT8_DTYPES = {getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                                              "float8_e5m2fnuz", "float8_e8m0fnu")
                 if hasattr(torch, n)}
FLOAT8_REASON = "a float8 tensor: no kernel backend has a float8 type (the ATen op runs it)"


def kernelless_reason(node: torch.fx.Node) -> str | None:
    """Why ``node`` cannot be lowered into a loop kernel: it reads or makes (its own value or
    an input's) a tensor of a dtype no kernel backend has; None where it can."""
    values = [node.meta.get("val")] + [a.meta.get("val") for a in node.all_input_nodes]
    tensors = [v for v in pytree.tree_leaves(values) if isinstance(v, torch.Tensor)]
    if any(v.is_complex() for v in tensors):
        return COMPLEX_REASON
    if any(v.dtype in FLOAT8_DTYPES for v in tensors):
        return FLOAT8_REASON
    return None


def consumers_device(node: torch.fx.Node) -> torch.device | None:
    """The GPU a 0-d CPU value is used on: its first user's device, through users that are 0-d
    CPU values themselves (``lift_fresh`` of a constant); None if none is on a GPU."""
    for user in node.users:
        val = user.meta.get("val")
        if not isinstance(val, torch.Tensor):
            continue
        if val.device.type != "cpu":
            return val.device
        if val.dim() == 0 and (device := consumers_device(user)) is not None:
            return device
    return None


def computing_device(gm: torch.fx.GraphModule) -> torch.device:
    """Where a factory op without a device of its own puts its result: a GPU if any value of
    the graph is on one (a graph without inputs can make CUDA tensors), else the CPU."""
    for node in gm.graph.nodes:
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor) and val.device.type != "cpu":
            return val.device
    return torch.device("cpu")


class GraphLowering:
    def __init__(self, gm: torch.fx.GraphModule, example_inputs: list | None = None,
                 name: str = "graph", options: Any = None, is_inference: bool = True):
        self.gm = gm
        self.is_inference = is_inference  # no backward: the layout decision weighs it so
        self.options = InductorOptions.of(options)  # the compile's knobs (inductor/options.py)
        self.name = name  # titles this graph's log artifacts ("forward graph 0")
        self.example_inputs = example_inputs
        self.graph_inputs: dict[str, InputBuffer | Expr] = {}
        self.buffers: list[Buffer] = []
        self.name_to_buffer: dict[str, Buffer] = {}
        self.graph_outputs: list[Any] = []
        self.output_spec: pytree.TreeSpec | None = None
        self.fallbacks: list[tuple[str, str]] = []
        self.constants: dict[str, torch.Tensor] = {}  # get_attr tensors, by buffer name
        self.constant_buffers: dict[str, InputBuffer] = {}  # their buffers, read like inputs
        # symbol -> (input position, "size" | "stride" | "value", dim): where to read its value
        self.symbol_sources: dict[sympy.Symbol, tuple[int, str, int | None]] = {}
        # symbol -> the value it had when traced: for reporting (bytes moved), and to decide
        # only what the trace decided under a guard (a symbolic size broadcast as 1), so one
        # compiled graph stays right for every size its guards admit
        self.size_hints: dict[sympy.Symbol, int] = {}
        self.device = torch.device("cpu")
        self.current_node: torch.fx.Node | None = None
        # the convolutions run channels-last, and the nodes around them laid out so
        # (layout_opt.py); decided in ``run``, once the graph has its FakeTensor metadata
        self.layout_opt = False
        self.nodes_prefer_channels_last: set[torch.fx.Node] = set()

    # --- naming and registration -------------------------------------------------------------
    def new_name(self) -> str:
        return f"buf{len(self.buffers)}"

    def register_buffer(self, buf: Buffer) -> Buffer:
        # the ATen ops this buffer computes (its loop body's, and the node being lowered): they
        # name the kernel it ends up in (``triton_poi_fused_add_mul_0``)
        buf.origins = set(getattr(getattr(buf, "data", None), "origins", ())) | set(
            self.current_origins())
        if buf.name in self.name_to_buffer:  # a name taken by a buffer made in between
            buf.name = f"buf{len(self.buffers)}_{len(self.name_to_buffer)}"
        self.buffers.append(buf)
        self.name_to_buffer[buf.name] = buf
        return buf

    def current_origins(self) -> list[str]:
        node = self.current_node
        if node is None or node.op != "call_function":
            return []
        name = getattr(node.target, "__name__", str(node.target)).split(".")[0]
        return [name.lstrip("_") or name]

    def get_buffer(self, name: str) -> Buffer:
        return self.name_to_buffer.get(name) or self.graph_inputs[name]  # type: ignore[return-value]

    # --- the walk ------------------------------------------------------------------------------
    def run(self) -> "GraphLowering":
        self._ensure_meta()
        self.device = computing_device(self.gm)
        self.layout_opt = decide_layout_opt(self.gm, self.options.layout_optimization,
                                            self.is_inference)
        if self.layout_opt:
            self.nodes_prefer_channels_last = nodes_prefer_channels_last(self.gm)
        # node -> its IR (a lowering may ask which nodes produced an IR node: lowerings/scatter.py)
        self.env = env = {}
        with V.set_graph_handler(self):
            for pos, node in enumerate(self.gm.graph.nodes):
                self.current_node = node
                args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), env.__getitem__)
                if node.op == "placeholder":
                    env[node] = self.placeholder(node, len(self.graph_inputs))
                elif node.op == "call_function":
                    env[node] = self.call_function(node, args, kwargs)
                elif node.op == "get_attr":
                    env[node] = self.get_attr(node)
                elif node.op == "output":
                    self.output(args[0])
                else:
                    raise NotImplementedError(f"{node.op} nodes (run on an ATen graph)")
        self.current_node = None
        self._check_symbols_bound()
        return self

    def _check_symbols_bound(self) -> None:
        """Every size symbol must be readable from some input at run time (an input's size,
        stride, or a SymInt input); otherwise refuse now, so the caller falls back to eager
        rather than failing on the first call."""
        used = set()
        for v in self.graph_inputs.values():
            exprs = [*v.layout.size, *v.layout.stride] if isinstance(v, Buffer) else [v]
            used |= {s for e in exprs for s in sympy.sympify(e).free_symbols}
        missing = sorted(map(str, used - set(self.symbol_sources)))
        if missing:
            raise NotImplementedError(f"size symbols {missing} are not readable from any input")

    def _ensure_meta(self) -> None:
        # size computations (sym_size, s0 * 3) need no FakeTensor: they are evaluated on SymPy
        nodes = [n for n in self.gm.graph.nodes if n.op != "output"
                 and n.target not in SYMBOLIC_OPS and "sym_expr" not in n.meta]
        if all("val" in n.meta for n in nodes):
            return
        if self.example_inputs is None:
            raise ValueError("graph has no FakeTensor metadata; pass example_inputs")
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.passes.fake_tensor_prop import FakeTensorProp

        FakeTensorProp(self.gm, FakeTensorMode(allow_non_fake_inputs=True)).propagate(
            *self.example_inputs)

    def placeholder(self, node: torch.fx.Node, pos: int) -> Any:
        # a size saved by the forward for the backward carries its SymPy formula, not a SymInt
        val = node.meta["val"] if "val" in node.meta else node.meta["sym_expr"]
        if not isinstance(val, torch.Tensor):  # a SymInt input: its value is a size symbol
            expr = sym_to_sympy(val)
            if isinstance(expr, sympy.Symbol):
                self.symbol_sources.setdefault(expr, (pos, "value", None))
            self.graph_inputs[node.name] = expr
            return expr
        layout = layout_of(val)
        for kind, exprs, syms in (("size", layout.size, val.shape),
                                  ("stride", layout.stride, val.stride())):
            for dim, (e, sym) in enumerate(zip(exprs, syms)):
                if isinstance(e, sympy.Symbol):
                    self.symbol_sources.setdefault(e, (pos, kind, dim))
                    hint = getattr(getattr(sym, "node", None), "hint", None)
                    if hint is not None:
                        self.size_hints.setdefault(e, int(hint))
        buf = InputBuffer(node.name, layout)
        self.graph_inputs[node.name] = buf
        return buf

    def get_attr(self, node: torch.fx.Node) -> Any:
        """A tensor constant of the graph module: a buffer whose storage is the constant."""
        value = getattr(self.gm, node.target)
        if not isinstance(value, torch.Tensor):
            return value
        if value.dim() == 0 and (device := consumers_device(node)) not in (None, value.device):
            # ATen lets a 0-d CPU tensor take part in a CUDA op (``y[0] = 0`` makes one); a
            # generated kernel reads only memory on its own device
            value = value.to(device)
        buf = InputBuffer(node.name, layout_of(value))
        self.constants[node.name] = value
        self.constant_buffers[node.name] = buf
        return buf

    def call_function(self, node: torch.fx.Node, args: tuple, kwargs: dict) -> Any:
        target = node.target
        if target is operator.getitem:
            return args[0][args[1]]
        if target in SYMBOLIC_OPS:
            return SYMBOLIC_OPS[target](*args, **kwargs)
        if node.meta.get("reinplace"):  # write into the input's storage (fx_passes/reinplace.py)
            return inplace_lowerings[target](*args, **kwargs)  # no fallback: it must be in place
        reason = kernelless_reason(node)
        if reason is not None:
            return make_fallback(target, args, kwargs, reason)
        lower = lowerings.get(target)
        if lower is None:
            return make_fallback(target, args, kwargs, fallback_reason(target))
        try:
            result = lower(*args, **kwargs)
        except Unsupported as e:
            return make_fallback(target, args, kwargs, str(e))
        # an unrealized result carries the ops inlined into it (they name its kernel); a buffer
        # it reads from memory is another kernel's (or a library call's: the sin of a matmul is
        # cpp_fused_sin, as in Inductor), and joins this one's name only if fused into it
        inlined = {o for a in pytree.tree_leaves((args, kwargs)) if isinstance(a, Loops)
                   for o in a.origins}
        for loops in pytree.tree_leaves(result):
            if isinstance(loops, Loops):
                loops.origins = inlined | set(self.current_origins())
        # every value gets a buffer, laid out as eager lays out its tensor; but a scalar
        # constant (its readers inline it) and a result nothing takes (max-pooling's indices in
        # inference: no kernel computes them) get none
        val = node.meta.get("val")
        if isinstance(result, (tuple, list)) and node.users and \
                all(u.target is operator.getitem for u in node.users):
            taken = {u.args[1] for u in node.users}
            vals = list(val) if isinstance(val, (tuple, list)) and len(val) == len(result) \
                else [None] * len(result)
            return type(result)(self.realize_results(r, v) if k in taken else r
                                for k, (r, v) in enumerate(zip(result, vals)))
        return self.realize_results(result, val)

    def realize_results(self, result: Any, val: Any) -> Any:
        """``result``'s loop nests realized, each in the layout eager gives its tensor in the
        node's FakeTensor value ``val`` (``lowering.layout_like``), or channels-last around
        the convolutions of a graph that runs them so (``layout_opt.py``)."""
        leaves, spec = pytree.tree_flatten(result)
        vals = pytree.tree_leaves(val)
        if len(vals) != len(leaves):
            vals = [None] * len(leaves)  # a lowering's result shaped unlike the op's
        channels_last = self.current_node in self.nodes_prefer_channels_last
        realized = [x if not isinstance(x, Loops) or is_scalar_constant(x)
                    else realize(x, v, channels_last) for x, v in zip(leaves, vals)]
        return pytree.tree_unflatten(realized, spec)

    def output(self, result: Any) -> None:
        leaves, self.output_spec = pytree.tree_flatten(result)
        self.output_is_flat_list = is_flat(self.output_spec)
        vals = [getattr(n, "meta", {}).get("val") for n in pytree.tree_leaves(
            self.current_node.args[0])] if self.current_node is not None else []
        vals = vals if len(vals) == len(leaves) else [None] * len(leaves)
        # a forward's outputs from here on are saved for its backward, which no caller sees: they
        # keep the layout they were computed in (channels-last activations stay so), and the
        # backward is compiled for it (``aot_autograd``: the saved tensors' strides)
        saved_start = self.gm.meta.get("saved_outputs_start", len(leaves))
        outputs: list = []
        for k, (x, val) in enumerate(zip(leaves, vals)):
            if self._copy_part_of_intermediate(x, leaves) or (
                    isinstance(x, IRNode) and k < saved_start and any(x is y for y in leaves[:k])):
                # a copy: a part of an intermediate, or a value already returned (CSE merged two
                # equal computations; the caller must still get two tensors, as eager gives). A
                # value saved for the backward is not the caller's: an output saved (exp's) is
                # the output's tensor itself, as autograd saves it in eager, not a second store
                x = realize(Pointwise(x.get_device(), x.get_dtype(), x.make_loader(),
                                      x.get_size()), val)
            if isinstance(x, IRNode):
                x = realize_strided(x)
                x = x if k >= saved_start else self.keep_output_stride(x, val)
            outputs.append(x)
        self.graph_outputs = outputs

    def output_strides(self) -> list[tuple[int, ...] | None]:
        """Each output's strides where they are known numbers (None: not a tensor, or symbolic):
        what the backward of a forward is compiled for (Inductor's ``output_strides``)."""
        strides = [as_ints(x.layout.stride) if isinstance(x, IRNode) and hasattr(x, "layout")
                   else None for x in self.graph_outputs]
        return [tuple(s) if s is not None else None for s in strides]

    def keep_output_stride(self, x: IRNode, val: Any) -> IRNode:
        """``x``, or a copy of it in eager's layout where eager's tensor ``val`` is dense and a
        buffer computed here is laid out otherwise (a lowering's own buffer: a reduction's
        output). The caller sees the strides eager gives (Inductor's ``keep_output_stride``:
        outputs are ``require_exact_strides`` to the FakeTensor's). Views and inputs are what
        eager returns already; a buffer written into an input lives in the caller's storage."""
        if not isinstance(x, ComputedBuffer) or x.get_mutation_names() or not (
                isinstance(val, torch.Tensor) and eager_fill_order(val) is not None):
            return x
        want = layout_like(x, val)
        if all(sz == 1 or sympy.expand(a - b) == 0
               for sz, a, b in zip(want.size, want.stride, x.layout.stride)):
            return x
        return compute_into(x, want)

    def _copy_part_of_intermediate(self, x: Any, outputs: list) -> bool:
        """Return ``x``, a view of part of a pointwise intermediate, as its own smaller buffer?

        As a view, the whole intermediate is stored to be returned through it
        (``x.cos()[:, 0]`` writes 100 elements to return 10). As a copy, the intermediate is
        only computed where the view reads it (``inlining.py``). Done when nothing else needs the
        whole intermediate in memory (another output, a library call). The copy is laid out as
        eager's view where that is dense, else row-major: a column's strides differ from
        eager's, but not its values; the intermediate it was a view of is never visible to the
        caller.
        """
        if not isinstance(x, View):
            return False
        base = x.unwrap()
        if not (isinstance(base, ComputedBuffer) and isinstance(base.data, Pointwise)):
            return False
        if not sympy.sympify(base.get_numel() - x.get_numel()).is_positive:
            return False
        shared = any(o is not x and isinstance(o, IRNode)
                     and (o is base or isinstance(o, View) and o.unwrap() is base) for o in outputs)
        read_by_library = any(isinstance(b, ExternKernel)
                              and base.name in b.get_read_writes().read_names()
                              for b in self.buffers)
        return not shared and not read_by_library

    # --- printing --------------------------------------------------------------------------
    def __str__(self) -> str:
        parts = [f"# inputs: {', '.join(f'{k}: {v.layout}' if isinstance(v, Buffer) else k for k, v in self.graph_inputs.items())}"]
        parts += [str(b) for b in self.buffers]
        outs = [getattr(o, "name", None) or str(o) for o in self.graph_outputs]
        parts.append(f"# outputs: {', '.join(outs)}")
        return "\n".join(parts)


def lower_graph(gm: torch.fx.GraphModule, example_inputs: list | None = None) -> GraphLowering:
    return GraphLowering(gm, example_inputs).run()


__all__ = ["GraphLowering", "lower_graph", "sym_to_sympy", "Layout"]
