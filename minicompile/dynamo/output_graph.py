"""OutputGraph: the FX graph being built for one frame, its inputs and guards, and the step that
compiles it and writes the transformed function (mirrors torch/_dynamo/output_graph.py).

Graph inputs are placeholders named after their sources (``L['x']`` -> ``L_x_``); parameters and
buffers of nn.Modules are ``get_attr`` nodes on the output GraphModule. Each source gets a name of
its own (names.Namespace): ``L['self'].a.b`` and ``L['self'].a_b`` are ``L__self___a_b`` and
``L__self___a_b_1``, never one attribute holding either tensor. Every node records the
bytecode instruction that created it in ``node.meta["instruction"]`` (see viz/bytecode.py) and its
fake example value in ``node.meta["example_value"]``.
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import logging
import operator
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.proxy import GraphAppendingTracer

from .. import _logging
from ..metrics import metrics
from ..names import Namespace, readable
from .codegen import PyCodegen, make_function
from .exc import unimplemented
from .guards import Guard, GuardKind, TensorSpec, global_state
from .side_effects import SideEffects
from .automatic_dynamic import current_policy, handles_dynamic_shapes, specialize_per_shape
from .source import Source, graph_input_name, module_attr_name
from .variables.symnode import SymNodeVariable
from .variables.tensor import TensorVariable, check_plain_tensor
from ..shapes.symbolic_shapes import (ShapeEnv, fake_from_sizes, has_symbolic_scalars,
                              has_symbolic_sizes, specialize_scalars, symbolic_dispatch)

_compiled_fn_ids = itertools.count()  # __compiled_fn_0, __compiled_fn_1, ...
_transformed_ids = itertools.count()  # __transformed_code_0_fn, ...


def transformed_name(code: types.CodeType) -> str:
    """A fresh name for a transformed function: ``__transformed_code_3_f``."""
    return f"__transformed_code_{next(_transformed_ids)}_{readable(code.co_name)}"  # _lambda_


# A Python type where torch takes a dtype (``torch.zeros(n, dtype=int)``, as transformers'
# masks are made): the dtype torch's argument parser reads it as. A graph holds dtypes, not
# types (FX cannot write a class into its code).
PYTHON_TYPE_DTYPES = {bool: torch.bool, int: torch.int64, float: torch.float64,
                      complex: torch.complex128}


@dataclass
class GraphInput:
    source: Source
    proxy: torch.fx.Proxy
    example: Any  # the real value passed to the backend as an example input
    convert: Callable | None = None  # what the source's value becomes before the graph gets it


def float_as_tensor(value: float) -> torch.Tensor:
    """An unspecialized float's graph input (variables/floats.py): a 0-d float64 tensor."""
    return torch.tensor(value, dtype=torch.float64)


@dataclass
class CompiledGraph:
    name: str  # "__compiled_fn_0"
    gm: torch.fx.GraphModule
    compiled: Callable


@dataclass
class FrameResult:
    """What tracing one frame produced: the transformed function and what it needs."""

    transformed_source: str
    transformed_fn: Callable
    guards: list[Guard]
    graphs: list[CompiledGraph] = field(default_factory=list)


# ``x += y`` on a tensor writes into ``x``: kept even when the new name is never read
# (torch.optim's ``step = state_steps[i]; step += 1``)
INPLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.itruediv,
                     operator.ifloordiv, operator.imod, operator.ipow, operator.imatmul,
                     operator.iand, operator.ior, operator.ixor, operator.ilshift,
                     operator.irshift}


def _is_side_effect(node: torch.fx.Node) -> bool:
    """Nodes dead-code elimination must keep although nothing reads them."""
    target = node.target
    name = target if isinstance(target, str) else getattr(target, "__name__", "")
    return (node.op in ("placeholder", "output")
            or name.endswith("_") and not name.startswith("__")  # in-place: add_, copy_, ...
            # an ATen overload called directly: aten.add_.Tensor is named "add_.Tensor"
            or isinstance(target, torch._ops.OpOverload) and target._schema.is_mutable
            or target in (operator.setitem, torch._C._set_grad_enabled,
                          torch.amp._enter_autocast, torch.amp._exit_autocast)
            or target in INPLACE_OPERATORS  # tensor += ... (named "iadd": no underscores)
            or "out" in node.kwargs
            or getattr(target, "side_effects", False)  # a user's autograd.Function
            or _inplace_flag(node))  # F.relu(h, inplace=True), nn.ReLU(inplace=True)(h)


def _inplace_flag(node: torch.fx.Node) -> bool:
    """Whether a call passes ``inplace=True`` (by keyword, or by position to a
    ``torch.nn.functional`` function that has the parameter)."""
    if node.kwargs.get("inplace") is True:
        return True
    if getattr(node.target, "__module__", None) != "torch.nn.functional":
        return False
    try:
        params = list(inspect.signature(node.target).parameters)
    except (TypeError, ValueError):
        return False
    i = params.index("inplace") if "inplace" in params else len(node.args)
    return i < len(node.args) and node.args[i] is True


class SubgraphTracer(GraphAppendingTracer):
    """Appends to a graph of its own, traced inside the frame's (a hook's body, see
    variables/hooks.py; real Dynamo's ``SubgraphTracer``). A value of the frame's
    graph it is given becomes one of its inputs (``lift_tracked_freevar_to_input``)."""

    def __init__(self):
        super().__init__(torch.fx.Graph())
        self.lifted: dict[torch.fx.Node, torch.fx.Node] = {}  # frame's node -> its placeholder

    def placeholder(self, name: str, example: Any) -> torch.fx.Proxy:
        first_op = next((n for n in self.graph.nodes if n.op != "placeholder"), None)
        if first_op is None:  # (inserting before None would put it first)
            node = self.graph.placeholder(name)
        else:
            with self.graph.inserting_before(first_op):
                node = self.graph.placeholder(name)
        node.meta["example_value"] = example
        return torch.fx.Proxy(node, self)

    def create_arg(self, a: Any) -> Any:
        node = a.node if isinstance(a, torch.fx.Proxy) else a
        if isinstance(node, torch.fx.Node) and node.graph is not self.graph:
            if node not in self.lifted:
                self.lifted[node] = self.placeholder(node.name, node.meta.get("example_value")).node
            return self.lifted[node]
        return super().create_arg(a)

    def writes(self) -> bool:
        """Does a node write into a tensor (or have another effect)?"""
        return any(_is_side_effect(n) for n in self.graph.nodes
                   if n.op not in ("placeholder", "output"))


class OutputGraph:
    """One trace of the frame of ``root_fn`` called with arguments ``arg_names``.

    ``frame_cache`` (eval_frame.FrameCache) holds the compiled entries and the ``optimize``
    wrappers that graph breaks call (resume functions, user functions run natively);
    ``initial_grad_mode`` is the grad mode the frame started with (restored at a break)."""

    def __init__(self, root_fn: types.FunctionType, arg_names: list[str], backend: Callable,
                 frame_cache=None, initial_grad_mode: bool | None = None,
                 unspecialized: tuple[str, ...] = ()):
        self.root_fn, self.arg_names, self.frame_cache = root_fn, list(arg_names), frame_cache
        # Frame arguments whose modules are traced *unspecialized* (a module's ``forward``
        # called from a frame that runs eagerly, eval_frame.compiled_forward): guarded by type,
        # not identity, their parameters and buffers graph inputs, not ``get_attr`` constants,
        # so every module of the class with the same shapes and settings reuses the entry
        # (nn_module.py). Real Dynamo treats every module so (``inline_inbuilt_nn_modules``).
        self.unspecialized = frozenset(unspecialized)
        self.code, self.f_globals = root_fn.__code__, root_fn.__globals__
        self.active_autocasts: list = []  # autocast regions entered and not left, innermost last
        self.local_generators: list = []  # generators made while tracing, not finished
        self.running: list = []  # the translators running now, innermost last
        self.held_by_tracebacks: list = []  # locals of frames an exception left (generators.py)
        self.initial_grad_mode = (torch.is_grad_enabled() if initial_grad_mode is None
                                  else initial_grad_mode)
        self.backend = backend
        # Names the transformed function reads that the user's code does not (__compiled_fn_0,
        # __resume_at_40_1, ...): closure variables of the transformed function (codegen.py).
        self.installed: dict[str, Any] = {}
        self.graph = torch.fx.Graph()
        self.tracer = GraphAppendingTracer(self.graph)
        self.current_tracer = self.tracer  # where ops go (a SubgraphTracer inside subgraph())
        self.fake_mode = FakeTensorMode()  # fake tensors; their sizes may be our SymInts
        self.shape_env = ShapeEnv()  # symbols for dynamic sizes and the guards made about them
        self.shape_env.location_fn = lambda: self.current_tx.user_line() if self.current_tx else ""
        self.dynamic = current_policy()  # which sizes are symbolic (set by eval_frame)
        if not handles_dynamic_shapes(backend):  # it would bake the example sizes in
            self.backend = specialize_per_shape(backend)
        self.graph_inputs: list[GraphInput] = []
        self.guards: list[Guard] = [Guard(None, GuardKind.GRAD_MODE, torch.is_grad_enabled()),
                                    Guard(None, GuardKind.DEFAULT_DTYPE, torch.get_default_dtype()),
                                    Guard(None, GuardKind.GLOBAL_STATE, global_state()),
                                    Guard(None, GuardKind.SHAPE_ENV, self.shape_env)]
        self.attrs: dict[str, Any] = {}  # get_attr name -> parameter, buffer, tensor, subgraph
        # source name -> placeholder / get_attr name, one each: FX keeps a placeholder's name
        # as its forward's parameter, and ``.a.b`` and ``.a_b`` would both be L__self___a_b
        self.input_names, self.attr_names = Namespace(), Namespace()
        self.attr_vts: dict[int, Any] = {}  # id(tensor) -> its TensorVariable
        self.side_effects = SideEffects()  # mutations of outside objects, replayed after
        self.current_tx = None  # the translator now running (inlined frames included)
        self.root_tx = None

    def codegen(self, graph_out_name: str = "graph_out_0") -> PyCodegen:
        """A code writer for the transformed function, installing names into ``installed``."""
        return PyCodegen(self.f_globals, self.installed, graph_out_name)

    def define(self, source: str, name: str) -> Callable:
        """The transformed function ``name`` from its source, with the installed names bound."""
        return make_function(source, name, self.f_globals, self.installed)

    # -- building the graph ---------------------------------------------------------------------
    def add_guard(self, guard: Guard) -> None:
        self.guards.append(guard)

    def replace_guards(self, guard: Guard) -> None:
        """``guard`` replaces the guards on its source (a value found to change between
        compiles becomes a graph input: only its type is checked from now on)."""
        self.guards = [g for g in self.guards if g.source != guard.source] + [guard]

    def _meta(self, node: torch.fx.Node) -> None:
        tx = self.current_tx
        if tx is not None and tx.current_instruction is not None:
            inst = tx.current_instruction
            node.meta["instruction"] = (inst.offset, inst.opname, inst.lineno, tx.code.co_name)
            root = self.root_tx.current_instruction
            node.meta["root_instruction"] = (root.offset, root.opname, root.lineno)

    @contextlib.contextmanager
    def subgraph(self) -> Iterator[SubgraphTracer]:
        """Trace the ops of the block into a graph of its own. Graph inputs and ``get_attr``
        nodes stay in the frame's graph: the subgraph lifts them."""
        tracer = SubgraphTracer()
        self.current_tracer = tracer
        try:
            yield tracer
        finally:
            self.current_tracer = self.tracer

    def create_proxy(self, kind: str, target: Any, args: tuple, kwargs: dict) -> torch.fx.Proxy:
        tracer = self.tracer if kind == "get_attr" else self.current_tracer
        if kwargs.get("dtype") in PYTHON_TYPE_DTYPES:  # torch.zeros(n, dtype=int)
            kwargs = {**kwargs, "dtype": PYTHON_TYPE_DTYPES[kwargs["dtype"]]}
        if kind == "call_method" and target == "to":  # x.to(float)
            args = tuple(PYTHON_TYPE_DTYPES.get(a, a) if isinstance(a, type) else a
                         for a in args)
        try:
            proxy = tracer.create_proxy(kind, target, args, kwargs)
        except NotImplementedError as e:  # FX's create_arg: "argument of type: <class ...>"
            unimplemented(f"{_target_name(target)} is given an argument a graph cannot hold "
                          f"({e}): the call runs natively")
        self._meta(proxy.node)
        return proxy

    def _new_placeholder(self, source: Source) -> torch.fx.Node:
        """Placeholders come first in the graph, in the order the inputs were found."""
        first_op = next((n for n in self.graph.nodes if n.op != "placeholder"), None)
        name = self.input_names(source.name(), graph_input_name(source))
        if first_op is None:
            return self.graph.placeholder(name)
        with self.graph.inserting_before(first_op):
            return self.graph.placeholder(name)

    def add_graph_input(self, source: Source, value: torch.Tensor):
        for gi in self.graph_inputs:
            if gi.source == source or gi.example is value:  # the same tensor: one input
                if gi.source != source:  # under another name: `x is y` must stay true
                    self.add_guard(Guard(source, GuardKind.DUPLICATE_INPUT, gi.source))
                return TensorVariable(gi.proxy, gi.proxy.node.meta["example_value"], source,
                                      type(value))
        self._no_aliasing(source)
        node = self._new_placeholder(source)
        dims = self.dynamic.tensor_dims(source.name(), value)
        stride_dims = self.dynamic.stride_dims(source.name(), value)
        if dims or stride_dims:  # some sizes are symbolic: a fake tensor whose sizes are SymInts
            sizes, strides = self.shape_env.create_symbolic_sizes_strides(
                value, source.name(), dims, stride_dims, duck=self.dynamic.duck_sizes)
            fake = fake_from_sizes(self.fake_mode, value, sizes, strides)
        else:
            fake = self.fake_mode.from_tensor(value)
        node.meta["example_value"], node.meta["source"] = fake, source.name()
        proxy = torch.fx.Proxy(node, self.tracer)
        self.graph_inputs.append(GraphInput(source, proxy, value))
        return TensorVariable(proxy, fake, source, type(value))

    def _no_aliasing(self, source: Source) -> None:
        """Distinct tensor inputs must stay distinct objects (one guard over all of them): a
        graph traced for two tensors is wrong for one tensor passed twice (``x is y``, ``x.add_``
        seen through ``y``)."""
        tensors = [gi.source for gi in self.graph_inputs
                   if isinstance(gi.example, torch.Tensor) and gi.convert is None]
        if not tensors:
            return
        guard = next((g for g in self.guards if g.kind is GuardKind.NO_TENSOR_ALIASING), None)
        if guard is None:
            self.add_guard(Guard(None, GuardKind.NO_TENSOR_ALIASING, [*tensors, source]))
        else:
            guard.expected.append(source)

    def add_symint_input(self, source: Source, value: int):
        """An int argument that is dynamic: a ``Sym(s0)`` placeholder (real Dynamo does the same)."""
        for gi in self.graph_inputs:
            if gi.source == source:
                return SymNodeVariable(gi.proxy, gi.proxy.node.meta["example_value"], source)
        symint = self.shape_env.create_symint(value, source.name(), duck=False)
        self.fake_mode.cache_enabled = False  # its cache key wants torch's own ShapeEnv
        node = self._new_placeholder(source)
        node.meta["example_value"], node.meta["source"] = symint, source.name()
        proxy = torch.fx.Proxy(node, self.tracer)
        self.graph_inputs.append(GraphInput(source, proxy, value))
        return SymNodeVariable(proxy, symint, source)

    def add_float_input(self, source: Source, value: float):
        """A float argument that is not baked in (real Dynamo's ``specialize_float=False``):
        the graph takes it as a 0-d float64 tensor, which :meth:`compile_graph` makes from
        the float on every call."""
        from .variables.floats import UnspecializedFloatVariable

        return UnspecializedFloatVariable(self, self.float_placeholder(source, value), value,
                                          source)

    def float_placeholder(self, source: Source, value: float) -> torch.fx.Proxy:
        """The graph input of a float that is not baked in: a 0-d float64 tensor, which
        :meth:`compile_graph` makes from the float on every call."""
        example = float_as_tensor(value)
        node = self._new_placeholder(source)
        node.meta["example_value"] = self.fake_mode.from_tensor(example)
        node.meta["source"] = source.name()
        proxy = torch.fx.Proxy(node, self.tracer)
        self.graph_inputs.append(GraphInput(source, proxy, example, convert=float_as_tensor))
        return proxy

    def register_attr_or_module(self, tx, value: torch.Tensor, source: Source | None):
        """A parameter, buffer or tensor attribute of a module: a ``get_attr`` node."""
        check_plain_tensor(value)
        if source is not None:  # a parameter or buffer replaced on its module: recompile,
            line = tx.user_line() if tx else None  # and so does one changed in place (m.double())
            self.add_guard(Guard(source, GuardKind.ID_MATCH, value, line))
            self.add_guard(Guard(source, GuardKind.TENSOR_MATCH, TensorSpec.of(value), line))
        if id(value) in self.attr_vts:
            return self.attr_vts[id(value)]
        if source is not None:
            name = self.attr_names(source.name(), module_attr_name(source))
        else:
            name = self.attr_names(f"_tensor_constant{len(self.attrs)}")
        self.attrs[name] = value
        proxy = self.create_proxy("get_attr", name, (), {})
        fake = self.fake_mode.from_tensor(value)
        proxy.node.meta["example_value"] = fake
        vt = TensorVariable(proxy, fake, None, type(value))  # no source: not a frame input
        vt.attribute = (value, source)
        self.attr_vts[id(value)] = vt
        return vt

    def install_subgraph(self, name: str, gm: torch.fx.GraphModule) -> torch.fx.Proxy:
        """A graph traced inside the frame's (a hook's body): a submodule of the compiled
        graph module (``hook_body_0``), read by a ``get_attr`` node (real Dynamo's method of
        the same name)."""
        attr = self.attr_names(f"{name}_{len(self.attrs)}")
        self.attrs[attr] = gm
        return self.create_proxy("get_attr", attr, (), {})

    def run_fake(self, kind: str, target: Any, args: list, kwargs: dict) -> Any:
        """Compute an op's example value on fake tensors (shapes/dtypes, no data)."""
        from torch._subclasses.fake_tensor import (DataDependentOutputException,
                                                   DynamicOutputShapeException)

        try:
            with self.fake_mode, symbolic_dispatch(bool(self.shape_env.var_to_val)), \
                    _quiet_meta_failures():
                if kind == "call_method":
                    return getattr(args[0], target)(*args[1:], **kwargs)
                return target(*args, **kwargs)
        except (DataDependentOutputException, DynamicOutputShapeException) as e:
            unimplemented(f"{_target_name(target)} depends on tensor data ({type(e).__name__})")
        except Exception as e:  # the user's program is wrong here: eager will raise it for real
            if has_symbolic_scalars(args, kwargs):  # or a meta function wants a concrete int
                return self.run_fake(kind, target, *specialize_scalars(args, kwargs))
            unimplemented(f"{_target_name(target)} failed while tracing: {type(e).__name__}: {e}")

    # -- finishing the frame --------------------------------------------------------------------
    def compile_and_codegen(self, return_value) -> FrameResult:
        """Compile the graph (if it does anything) and write the transformed function."""
        codegen = self.codegen()
        codegen.share_repeated([return_value, *self.side_effects.values()])
        self.side_effects.codegen_hooks(codegen)  # first: the return value may be a handle
        ret_expr = codegen(return_value)
        temps, replay = self.side_effects.codegen(codegen)
        outputs = [vt.proxy for vt in codegen.graph_outputs]
        self.graph.output(tuple(p.node for p in outputs))
        # Like real Dynamo, a graph is compiled when the trace recorded a call, even one that
        # dead-code elimination then removes: graph counts match torch._dynamo.explain's
        traced_calls = self.traced_calls()
        self.dead_code_elimination()
        lines, graphs = [], []
        if outputs or traced_calls:
            graph = self.compile_graph()
            lines += codegen.graph_call(graph.name, [gi.source for gi in self.graph_inputs])
            graphs.append(graph)
        elif torch.is_grad_enabled() != self.initial_grad_mode:  # only grad-mode switches
            lines.append(self.grad_mode_line(codegen, torch.is_grad_enabled()))
        lines += codegen.prelude
        if replay:  # the return value is read before the mutations are replayed
            lines += [f"__return_value = {ret_expr}", *temps, *replay]
            ret_expr = "__return_value"
        lines.append(f"return {ret_expr}")
        name = transformed_name(self.code)
        source = f"def {name}({', '.join(self.arg_names)}):\n" + "".join(f"    {l}\n" for l in lines)
        return FrameResult(source, self.define(source, name), self.guards, graphs)

    def traced_calls(self) -> bool:
        """Did the trace record an operation other than grad-mode switches? Switches alone
        make no graph: like real Dynamo, the transformed code sets the mode itself
        (:meth:`grad_mode_line`), as torch.optim's ``_use_grad`` does around its breaks."""
        return any(n.op not in ("placeholder", "output", "get_attr")
                   and n.target is not torch._C._set_grad_enabled for n in self.graph.nodes)

    @staticmethod
    def grad_mode_line(codegen, enabled: bool) -> str:
        """The transformed code's line that leaves grad mode as the traced switches did."""
        return f"{codegen.install_global('set_grad_enabled', torch._C._set_grad_enabled)}({enabled})"

    def dead_code_elimination(self) -> None:
        changed = True
        while changed:
            changed = False
            for node in reversed(list(self.graph.nodes)):
                if not node.users and not _is_side_effect(node) and node.op != "placeholder":
                    self.graph.erase_node(node)
                    changed = True

    def remove_unused_graphargs(self) -> None:
        """Drop the tensor inputs no node uses (real Dynamo's method of the same name): read
        while tracing (the items of a list the frame clears, a global the code replaced),
        they would still reach the compiled autograd Function, whose backward would then run
        into a stale tensor's autograd graph, and its hooks, with no gradient. A tensor with
        symbolic sizes stays: it may be where a size symbol comes from."""
        for gi in list(self.graph_inputs):
            node = gi.proxy.node
            if not node.users and gi.convert is None and isinstance(gi.example, torch.Tensor) \
                    and not has_symbolic_sizes(node.meta.get("example_value")):
                self.graph.erase_node(node)
                self.graph_inputs.remove(gi)

    def compile_graph(self) -> CompiledGraph:
        self.remove_unused_graphargs()
        root = torch.nn.Module()
        for name, value in self.attrs.items():
            setattr(root, name, value) if not isinstance(value, torch.nn.Parameter) \
                else root.register_parameter(name, value)
        gm = torch.fx.GraphModule(root, self.graph, class_name="GraphModule")
        gm.graph.lint()
        name = f"__compiled_fn_{next(_compiled_fn_ids)}"
        _logging.trace_artifact("graph_code", lambda: gm.print_readable(print_output=False),
                                title=f"TRACED GRAPH {name} ({self.code.co_name})")
        _logging.trace_artifact("graph", lambda: _graph_table(gm), title=f"GRAPH {name}")
        compiled = self.backend(gm, [gi.example for gi in self.graph_inputs])
        converts = [gi.convert for gi in self.graph_inputs]
        if any(converts):  # an unspecialized float reaches the graph as a tensor
            compiled = _converting_inputs(compiled, converts)
        metrics.increment("graphs_compiled")
        self.installed[name] = compiled  # the transformed function calls it by this name
        return CompiledGraph(name, gm, compiled)


def _converting_inputs(compiled: Callable, converts: list[Callable | None]) -> Callable:
    def call(*args: Any) -> Any:
        return compiled(*(c(a) if c else a for c, a in zip(converts, args)))

    return call


def _target_name(target: Any) -> str:
    return target if isinstance(target, str) else getattr(target, "__name__", repr(target))


def _graph_table(gm: torch.fx.GraphModule) -> str:
    rows = [("opcode", "name", "target", "args")]
    for n in gm.graph.nodes:
        rows.append((n.op, n.name, _target_name(n.target), str(n.args)[:60]))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows)



class _DropMetaFailures(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("failed while attempting to run meta")


_FAKE_TENSOR_LOG = logging.getLogger("torch._subclasses.fake_tensor")
_DROP_META_FAILURES = _DropMetaFailures()


@contextlib.contextmanager
def _quiet_meta_failures():
    """torch's fake mode logs a traceback for every meta kernel that raises; ``run_fake``
    catches that error and reports it as a readable reason (or the eager run raises it for
    real), so the log would only print the same error twice."""
    _FAKE_TENSOR_LOG.addFilter(_DROP_META_FAILURES)
    try:
        yield
    finally:
        _FAKE_TENSOR_LOG.removeFilter(_DROP_META_FAILURES)
