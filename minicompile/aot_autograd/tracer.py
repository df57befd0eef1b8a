"""Trace any Python function to a graph of ATen ops (mini version of
torch/fx/experimental/proxy_tensor.py, the engine behind ``make_fx``).

The idea: run the function on fake tensors under a ``TorchDispatchMode``. Every ATen op call,
from the forward *and* from the autograd engine running the backward, passes through the mode's
``__torch_dispatch__``, which

1. applies a decomposition if the op has a row in the table (re-entering the mode, so the ops the
   decomposition calls are recorded instead); an in-place op with no row of its own whose
   out-of-place twin has one (``hardswish_``, ``hardswish``) is that row followed by a
   ``copy_`` into the tensor it mutates (torch/_decomp's ``register_inplace``), so
   ``nn.Hardswish(inplace=True)`` is decomposed as ``nn.Hardswish()`` is,
2. runs the op (on fake tensors: shapes and dtypes only, no compute),
3. appends a node ``call_function[target=aten.op.overload]`` to an ``fx.Graph`` and remembers
   which node produced each output tensor (``self.env``).

An in-place op returns its (mutated) input: binding that same tensor to the new node *rebinds*
it, so later readers see the node of its latest version (functionalize.py relies on this).

Symbolic sizes (SymInt from dynamic shapes) are turned into nodes too: each symbol comes from a
SymInt input or from ``aten.sym_size.int(tensor_input, dim)``; compound expressions (``s0*3``)
become ``operator`` nodes, walking the SymPy expression.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import operator
from collections import Counter
from typing import Any, Callable

import sympy
import torch
import torch.fx as fx
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

from ..shapes.functions import integer_fraction

aten = torch.ops.aten


# Meta keys a Dynamo node hands on to every ATen node it becomes (real proxy_tensor's
# ``fx.traceback.preserve_node_meta``): the activation-checkpointing tags that
# dynamo/variables/checkpoint.py puts on the nodes of a checkpointed region, which the
# partitioner reads to recompute them in the backward instead of saving them.
PRESERVED_META = ("recompute", "ac_graph_id")
_current_meta: contextvars.ContextVar[dict] = contextvars.ContextVar("current_meta", default={})


def run_preserving_meta(gm: fx.GraphModule, *args: Any) -> Any:
    """``gm(*args)``, node by node, each ATen op recorded meanwhile getting the node's
    :data:`PRESERVED_META`. Where no node has any, the generated code runs (it is faster)."""
    if not any(key in n.meta for n in gm.graph.nodes for key in PRESERVED_META):
        return gm.forward(*args)
    return _MetaInterpreter(gm).run(*args)


class _MetaInterpreter(fx.Interpreter):
    def run_node(self, n: fx.Node) -> Any:
        token = _current_meta.set({k: n.meta[k] for k in PRESERVED_META if k in n.meta})
        try:
            return super().run_node(n)
        finally:
            _current_meta.reset(token)


class Unsupported(RuntimeError):
    """Something AOT tracing does not handle; the backend falls back to eager with this reason."""


# Identity of a tensor's storage (its StorageImpl's address): two tensors alias iff their keys
# are equal. torch's C function where it has one (half the cost of going through the storage
# object: the runtime wrapper asks it of every input of a graph that writes its inputs).
storage_key = getattr(torch._C, "_storage_id", None) or (lambda t: t.untyped_storage()._cdata)


# SymPy node type -> the Python operator computing it on ints at run time
_SYMPY_OPS: list[tuple[type, Callable]] = [
    (sympy.Add, operator.add),
    (sympy.Mul, operator.mul),
    (sympy.Mod, operator.mod),
    (sympy.Max, torch.sym_max),  # max(s0 - 3, 0): a sliding window's first cached position
    (sympy.Min, torch.sym_min),
]
# torch's own SymPy functions, which are no subclasses of SymPy's: matched by name
_TORCH_SYMPY_OPS: dict[str, Callable] = {
    "FloorDiv": operator.floordiv, "Max": torch.sym_max, "Min": torch.sym_min,
}


def out_of_place_twin(op: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    """``aten.hardswish_.default -> aten.hardswish.default``: the op an in-place op is the
    in-place form of, where it writes only its first argument's values (else None: ``t_``
    changes its argument's geometry, not its values)."""
    schema = op._schema
    name = schema.name.split("::")[-1]
    written = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    if not name.endswith("_") or name.endswith("__") or written != [schema.arguments[0].name] \
            or torch.Tag.inplace_view in op.tags:
        return None
    packet = getattr(aten, name[:-1], None)
    return getattr(packet, op._overloadname, None) if packet is not None else None


def decomposed_in_place(decomposition: Callable) -> Callable:
    """The in-place form of an out-of-place decomposition: compute, then write into ``self``."""

    def in_place(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        return self.copy_(decomposition(self, *args, **kwargs))

    return in_place


class DispatchTracer(TorchDispatchMode):
    """Records every ATen op into ``self.graph`` (ProxyTorchDispatchMode's role)."""

    def __init__(self, decompositions: dict | None = None):
        super().__init__()
        self.graph = fx.Graph()
        self.decompositions = decompositions or {}
        self.env: dict[int, tuple[torch.Tensor, fx.Node]] = {}  # id(tensor) -> (tensor, node)
        self.sym_env: dict[sympy.Expr, fx.Node] = {}  # symbol -> node that computes it
        # symbol -> (aten.sym_size.int or aten.sym_stride.int, input, dim): where to read it
        self.sym_sources: dict[sympy.Symbol, tuple[Any, fx.Node, int]] = {}
        self.constants: dict[str, torch.Tensor] = {}  # get_attr name -> real tensor
        self.decomposed: Counter = Counter()  # op -> how many times it was decomposed
        self.recording = True

    # --- inputs -------------------------------------------------------------------------------
    def placeholder(self, name: str, value: Any) -> fx.Node:
        node = self.graph.placeholder(name)
        node.meta["val"] = value
        if isinstance(value, torch.Tensor):
            self.bind(value, node)
            for read, geometry in ((aten.sym_size.int, value.shape),
                                   (aten.sym_stride.int, value.stride())):
                for dim, n in enumerate(geometry):  # where each size symbol can be read from
                    if isinstance(n, torch.SymInt) and isinstance(n.node.expr, sympy.Symbol):
                        self.sym_sources.setdefault(n.node.expr, (read, node, dim))
        elif isinstance(value, torch.SymInt) and isinstance(value.node.expr, sympy.Symbol):
            self.sym_env[value.node.expr] = node
        return node

    def bind(self, t: torch.Tensor, node: fx.Node) -> None:
        self.env[id(t)] = (t, node)  # keep t alive so its id is never reused while tracing
        node.meta.setdefault("val", t)
        node.meta["storage"] = storage_key(t)

    def node_of(self, t: torch.Tensor) -> fx.Node:
        if id(t) in self.env:
            return self.env[id(t)][1]
        if isinstance(t, torch._subclasses.FakeTensor):
            raise Unsupported("a fake tensor created outside the traced function was used")
        # a real tensor captured from outside (a constant): stored on the module, read by get_attr
        name = f"_tensor_constant{len(self.constants)}"
        self.constants[name] = t
        with self.graph.inserting_before(self._first_op()):
            node = self.graph.get_attr(name)
        node.meta["val"] = t
        self.env[id(t)] = (t, node)
        node.meta["storage"] = storage_key(t)
        return node

    def _first_op(self) -> fx.Node | None:
        return next((n for n in self.graph.nodes if n.op != "placeholder"), None)

    # --- symbolic sizes ---------------------------------------------------------------------------
    def sym_to_node(self, s: torch.SymInt | torch.SymFloat) -> fx.Node | int | float:
        return self._expr_to_node(s.node.expr)

    def _expr_to_node(self, expr: sympy.Expr) -> fx.Node | int | float:
        if expr.is_Integer:
            return int(expr)
        if expr.is_Float or expr.is_Rational:
            return float(expr)
        if expr in self.sym_env:
            return self.sym_env[expr]
        if isinstance(expr, sympy.Symbol):
            if expr not in self.sym_sources:
                raise Unsupported(f"no input provides the size symbol {expr}")
            read, tensor_node, dim = self.sym_sources[expr]
            node = self.graph.call_function(read, (tensor_node, dim))
        else:
            fn = next((f for cls, f in _SYMPY_OPS if isinstance(expr, cls)), None)
            args = expr.args
            if type(expr).__name__ in _TORCH_SYMPY_OPS:  # torch.utils._sympy.functions
                fn = _TORCH_SYMPY_OPS[type(expr).__name__]
            elif isinstance(expr, (sympy.floor, sympy.ceiling)) and \
                    integer_fraction(expr.args[0]) is None:  # int(1.7 * s2): a float's floor
                fn = math.floor if isinstance(expr, sympy.floor) else math.ceil
            elif isinstance(expr, sympy.floor):  # floor(s0/3) -> s0 // 3
                fn, args = operator.floordiv, expr.args[0].as_numer_denom()
            elif expr.is_Pow and expr.exp.is_Integer and expr.exp > 0:  # s0**2 -> s0 * s0
                fn, args = operator.mul, [expr.base] * int(expr.exp)
            if fn is None or (expr.is_Mul and any(a.is_Rational and not a.is_Integer
                                                  for a in expr.args)):
                raise Unsupported(f"symbolic size expression {expr} ({type(expr).__name__})")
            args = [self._expr_to_node(a) for a in args]
            node = args[0] if len(args) > 1 else self.graph.call_function(fn, tuple(args))
            for a in args[1:]:  # left fold: s0 * s1 * 3 -> (s0 * s1) * 3
                node = self.graph.call_function(fn, (node, a))
        node.meta["sym_expr"] = expr  # marks a size computation (an int at run time)
        self.sym_env[expr] = node
        return node

    def keep_geometry(self, t: torch.Tensor) -> None:
        """Before an op changes ``t``'s sizes or strides in place (``t_``, ``as_strided_``):
        ``t``'s nodes get a view of ``t`` as it is now. Their ``val`` was ``t`` itself, which
        would take the new geometry too, and each node is the value before the change. Every
        node whose value is ``t``: an in-place op's node shares it with the node that made
        ``t`` (quantile: ``gather(...).lerp_(...).squeeze_(-1)`` left gather's node 0-d)."""
        self.node_of(t)  # (a constant gets its node)
        now = t.as_strided(t.shape, t.stride(), t.storage_offset())
        for node in self.graph.nodes:
            if node.meta.get("val") is t:
                node.meta["val"] = now

    def to_arg(self, x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            return self.node_of(x)
        if isinstance(x, (torch.SymInt, torch.SymFloat)):
            return self.sym_to_node(x)
        if isinstance(x, torch.SymBool):
            raise Unsupported("symbolic bool arguments")
        return x

    # --- the interception ---------------------------------------------------------------------
    @contextlib.contextmanager
    def paused(self):
        """Run ops (e.g. make tangents) without recording them."""
        self.recording, old = False, self.recording
        try:
            yield
        finally:
            self.recording = old

    def decomposition_of(self, func: Any) -> Callable | None:
        """``func``'s row, or for an in-place op without one its out-of-place twin's row (read
        at each call: a row swapped in the table is the one used)."""
        if func in self.decompositions:
            return self.decompositions[func]
        twin = out_of_place_twin(func) if isinstance(func, torch._ops.OpOverload) else None
        return decomposed_in_place(self.decompositions[twin]) if twin in self.decompositions \
            else None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not self.recording:
            return func(*args, **kwargs)
        decomposition = self.decomposition_of(func)
        if decomposition is not None:
            with self:  # the decomposition's own ATen calls come back here and are recorded
                out = decomposition(*args, **kwargs)
            if out is not NotImplemented:
                self.decomposed[func] += 1
                return out
        memo = getattr(args[0], "item_memo", None) if args else None
        if func is aten._local_scalar_dense.default and memo is not None:
            out = memo  # Dynamo's symbol for a float/int input passed as a 0-d tensor
        else:
            if torch.Tag.inplace_view in func.tags:  # x.t_() changes the tensor x's node holds:
                self.keep_geometry(args[0])           # that node keeps x as it was before
            out = func(*args, **kwargs)
        if func is not aten._local_scalar_dense.default and isinstance(
                out, (int, float, bool, torch.dtype, torch.device)):
            return out  # a metadata query (promote_types, prim.device): nothing to record
        node = self.graph.create_node("call_function", func, tree_map(self.to_arg, args),
                                      tree_map(self.to_arg, kwargs),
                                      name=func.overloadpacket.__name__)  # "mul", "mul_1", ...
        node.meta["val"] = out
        node.meta.update(_current_meta.get())
        if isinstance(out, (torch.SymInt, torch.SymFloat)):  # .item(): a number read at run time
            self.sym_env[out.node.expr] = node
        elif isinstance(out, (int, float, bool)):
            raise Unsupported(".item() of a constant tensor: the graph would bake the value in")
        elif isinstance(out, torch.Tensor):
            self.bind(out, node)
        elif isinstance(out, (tuple, list)):  # multi-output op: one getitem node per tensor
            for i, o in enumerate(out):
                if isinstance(o, torch.Tensor):
                    self.bind(o, self.graph.call_function(operator.getitem, (node, i)))
        return out

    def output(self, values: list) -> fx.Node:
        numbers = (torch.Tensor, torch.SymInt, torch.SymFloat)
        flat = [self.to_arg(v) if isinstance(v, numbers) else v for v in values]
        return self.graph.output(flat)

    def module(self) -> fx.GraphModule:
        root = torch.nn.Module()
        for name, t in self.constants.items():
            root.register_buffer(name, t)
        return fx.GraphModule(root, self.graph)


class PreAutogradDecompositions(TorchFunctionMode):
    """Replace some torch functions by Python decompositions *above* autograd, so autograd
    differentiates the pieces (torch does this with ``CompositeImplicitAutograd`` Python kernels
    under the Python dispatcher; decompositions/rnn.py says why RNNs need it). A function that
    returns ``NotImplemented`` leaves the call as it was."""

    def __init__(self, table: dict[Callable, Callable]):
        super().__init__()
        self.table = table

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.table:  # (this mode is off while we are in here: no recursion)
            out = self.table[func](*args, **kwargs)
            if out is not NotImplemented:
                return out
        return func(*args, **kwargs)
