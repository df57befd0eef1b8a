"""TorchVariable: functions from the torch namespace, ``torch.nn.functional`` and
``torch.Tensor`` methods called as functions (mirrors torch/_dynamo/variables/torch.py).

A call becomes one graph node whose example value is computed on fake tensors; ``F.*`` functions
are recorded as they are, not inlined. A few calls are answered at trace time instead
(``torch.is_grad_enabled()``, ``torch.is_floating_point(x)``: the answer is fixed by the guards),
and grad-mode context managers become ``GradModeVariable``.
"""

from __future__ import annotations

import inspect
import sys
import types
from typing import Any, Callable

import torch
import torch.utils.checkpoint
from torch._library.custom_ops import CustomOpDef

from ..exc import unimplemented
from ..graph_break_hints import is_explicit_break
from ..guards import Guard, GuardKind
from ..source import AttrSource, ClosureSource, GetItemSource, Source
from .base import KnownCallableVariable, VariableTracker
from .constant import ConstantVariable

# Calls whose result is fixed by what the guards check (metadata, global grad mode): run them now.
def _existing(*names: str) -> set[Callable]:
    """The named callables that exist in the installed torch (the API moves between releases)."""
    found = set()
    for name in names:
        obj = torch
        for part in name.split("."):
            obj = getattr(obj, part, None)
        if obj is not None:
            found.add(obj)
    return found


CONSTANT_FOLD: set[Callable] = {
    torch.is_grad_enabled, torch.get_default_dtype, torch.is_tensor, torch.is_floating_point,
    torch.is_complex, torch.numel, torch.cuda.is_available, torch.is_autocast_enabled,
    torch.finfo, torch.iinfo, torch.device, torch.promote_types, torch.can_cast,
    torch.result_type, torch.is_inference_mode_enabled, torch.jit.is_scripting,
    torch.jit.is_tracing,
} | _existing("overrides.has_torch_function", "overrides.has_torch_function_unary",
              "overrides.has_torch_function_variadic", "_C._get_tracing_state")
# Calls that tell code it is being compiled.
IS_COMPILING = _existing("compiler.is_compiling", "compiler.is_dynamo_compiling",
                         "_utils.is_compiling")


def is_dynamo_is_compiling(fn: Any) -> bool:
    """``torch._dynamo.is_compiling`` (recognised by name: importing torch._dynamo to compare
    takes a second). Its Python body returns False; real Dynamo answers True while tracing,
    and library code asks it to take its compiled path."""
    return getattr(fn, "__name__", None) == "is_compiling" and \
        (getattr(fn, "__module__", None) or "").startswith("torch._dynamo")
# Calls that cannot be part of a graph at all.
UNSUPPORTED: dict[Callable, str] = {
    torch.manual_seed: "changing the RNG seed is a global side effect",
    torch.set_default_dtype: "changing the default dtype is a global side effect",
    torch.inference_mode: "inference_mode is not captured",
    torch.use_deterministic_algorithms: "changing determinism is a global side effect",
    **{fn: "the random number generator's state is global state the graph does not model (a "
           "captured get/set would not replay the same numbers)"
       for fn in _existing("get_rng_state", "set_rng_state", "seed", "random.seed",
                           "cuda.get_rng_state", "cuda.set_rng_state", "cuda.manual_seed",
                           "cuda.manual_seed_all", "cuda.get_rng_state_all",
                           "cuda.set_rng_state_all", "cuda.seed", "cuda.seed_all")},
}


# Python code in these torch packages is traced through like the user's own (real Dynamo's
# ``trace_rules.MOD_INLINELIST``): an optimizer's step is loops of tensor updates, not one op;
# torch.testing's helpers (OpInfo's ``op=lambda self, c, o: torch.where(c, self, o)``) are plain
# Python around torch calls, and as one graph node a lambda has no name to print the graph with.
INLINED_TORCH_MODULES = ("torch.optim", "torch.testing")
# Single torch functions traced through the same way: checkpoint_sequential is a loop of
# ``checkpoint`` calls, each traced into the graph (variables/checkpoint.py)
INLINED_TORCH_FUNCTIONS = {torch.utils.checkpoint.checkpoint_sequential}


def is_inlined_torch_function(value: Any) -> bool:
    module = getattr(value, "__module__", None) or ""
    return isinstance(value, types.FunctionType) and (any(
        module == m or module.startswith(m + ".") for m in INLINED_TORCH_MODULES)
        or value in INLINED_TORCH_FUNCTIONS)


def is_module_code(value: Any) -> bool:
    """A function of torch.nn's module classes, reached through the class
    (``nn.LayerNorm.forward(self, x)`` in a subclass, as SqueezeBERT writes it): traced into
    like the module's own ``forward`` is when the module is called (real Dynamo inlines all of
    torch.nn); as one graph node it would take the module itself as an argument."""
    module = getattr(value, "__module__", None) or ""
    return isinstance(value, types.FunctionType) and module.startswith("torch.nn.modules.")


def is_torch_callable(value: Any) -> bool:
    if isinstance(value, (torch._ops.OpOverloadPacket, torch._ops.OpOverload)):
        return True
    module = getattr(value, "__module__", None) or ""
    # a bound method of torch.optim code (``Adam.step`` bound to an optimizer) is inlined, like
    # its function: as one graph node it would run the real step on fake tensors
    return callable(value) and not isinstance(value, type) and not is_module_code(value) and \
        not is_inlined_torch_function(getattr(value, "__func__", value)) and (
            module == "torch" or module.startswith("torch.") or module.startswith("torch._C"))


def graph_target(fn: Callable) -> Callable:
    """What a call of ``fn`` puts in the graph. An op made with ``torch.library.custom_op`` is a
    ``CustomOpDef`` whose call runs its ``OpOverload``: that is the node's target, as it is for
    any ATen op (AOT autograd, the fake kernel and the lowering's fallback all key on it)."""
    return fn._opoverload if isinstance(fn, CustomOpDef) else fn


class TorchVariable(KnownCallableVariable):
    def call_function(self, tx, args, kwargs) -> VariableTracker:
        from .tensor import call_op, refuse_tensor_numbers

        fn = self.fn
        if fn in UNSUPPORTED:
            unimplemented(f"{self._name()}: {UNSUPPORTED[fn]}")
        if is_explicit_break(fn):
            unimplemented("torch._dynamo.graph_break()")
        if is_function_apply(fn):  # MyFunction.apply(x): one node; AOT traces fwd and bwd
            return apply_function(tx, fn.__self__, self.source and AttrSource(
                self.source, "__self__"), args, kwargs)
        handler = CALL_HANDLERS.get(fn)
        if handler is not None:
            return handler(tx, fn, args, kwargs)
        if is_dynamo_is_compiling(fn):
            return _compiling(tx, fn, args, kwargs)
        refuse_tensor_numbers(fn, kwargs)
        if isinstance(fn, types.FunctionType) and \
                getattr(sys.modules.get(fn.__module__), fn.__name__, None) is not fn:
            # the graph's code names a node's function by its module and name: a class's
            # method (torch 2.13's Function.apply, reached without its class) is not there
            unimplemented(f"{fn.__module__}.{fn.__qualname__} is not an attribute of its module, "
                          "so a graph node cannot name it: the call runs natively")
        return call_op(tx, "call_function", graph_target(fn), args, kwargs)  # a graph node

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from .builder import VariableBuilder

        return VariableBuilder(tx, None).wrap(getattr(self.fn, name))

    def _name(self) -> str:
        return f"{getattr(self.fn, '__module__', 'torch')}.{getattr(self.fn, '__name__', self.fn)}"

    def _repr_body(self) -> str:
        return self._name()


def is_tensor_method(value: Any) -> bool:
    """``torch.Tensor.add``, ``torch.Tensor.__getitem__``: a method of the tensor class's C base,
    taken from the class (unbound)."""
    return isinstance(value, (types.MethodDescriptorType, types.WrapperDescriptorType)) \
        and getattr(value, "__objclass__", None) is torch._C.TensorBase


class TensorMethodVariable(KnownCallableVariable):
    """An unbound tensor method called with the tensor first: ``torch.Tensor.add(x, y)`` is
    ``x.add(y)`` (OpInfo's ``op=torch.Tensor.__radd__``; real Dynamo calls the method on the
    tensor the same way). Called on anything else, it breaks the graph."""

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if not args or not issubclass(args[0].python_type(), torch.Tensor):
            unimplemented(f"Tensor.{self.fn.__name__} called without a tensor first")
        return args[0].call_method(tx, self.fn.__name__, list(args[1:]), kwargs)


# --- torch.autograd.Function subclasses ----------------------------------------------------------

def is_function_class(value: Any) -> bool:
    """A ``torch.autograd.Function`` subclass (a user's custom Function)."""
    return isinstance(value, type) and issubclass(value, torch.autograd.Function)


def is_function_apply(fn: Any) -> bool:
    """``MyFunction.apply``: a user's autograd.Function called through torch's own ``apply``.

    Recognised by identity with ``apply`` as ``torch.autograd.Function`` stores it, whatever it
    is made of: a Python classmethod up to torch 2.13 (``MyFunction.apply`` a bound method of
    module ``torch.autograd.function``), ``_C._FunctionBase``'s C classmethod since 2.14 (a bound
    builtin, with no ``__module__`` and no ``__func__``). A class overriding ``apply`` is not it.
    """
    owner = getattr(fn, "__self__", None)
    return (is_function_class(owner) and getattr(fn, "__name__", None) == "apply"
            and inspect.getattr_static(owner, "apply", None)
            is inspect.getattr_static(torch.autograd.Function, "apply"))


class AutogradFunctionVariable(ConstantVariable):
    """A ``torch.autograd.Function`` subclass (mirrors AutogradFunctionVariable in
    torch/_dynamo/variables/misc.py): a constant class like any other, whose ``apply`` becomes
    one graph node. The class is guarded by identity, so ``MyFunction.apply`` itself (a new bound
    method at every lookup) needs no guard of its own."""

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        method = getattr(self.value, name, None)
        if is_function_apply(method):
            return apply_function(tx, self.value, self.source, args, kwargs)
        return super().call_method(tx, name, args, kwargs)


class AppliedFunction:
    """The graph node's target for ``MyFunction.apply(...)``. The node calls the user's Function:
    AOT autograd's tracing runs its ``forward`` (every op recorded), and the joint graph's
    ``autograd.grad`` runs its ``backward`` (recorded too), as real Dynamo's autograd.Function
    support ends up doing. (``torch.autograd.function.apply``, the name FX would print for
    ``MyFunction.apply`` itself, does not exist.)"""

    # Its forward may write into an input (``ctx.mark_dirty``) whose result nobody reads:
    # dead-code elimination keeps the call (output_graph._is_side_effect reads this flag)
    side_effects = True

    def __init__(self, function: type):
        self.function = function
        self.__name__ = f"{function.__name__}_apply"
        self.__qualname__ = self.__name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:  # apply(x, factor=6) binds as forward
        return self.function.apply(*args, **kwargs)

    def python_state(self) -> StateSnapshot:
        """The Python state its methods reach by name. AOT autograd runs forward and backward
        once, while tracing, never again: a change they make there (a backward counting its
        calls) would happen once instead of at every call, so AOT autograd compares this
        snapshot after tracing and runs the graph eagerly when it changed."""
        read = names_read_by(self.function, None, ("forward", "setup_context", "backward"))
        return StateSnapshot({n: v for n, _, v in read if StateSnapshot.holds_state(v)})

    def __repr__(self) -> str:
        return f"{self.function.__name__}.apply"


def apply_function(tx, function: type, class_source: Source | None,
                   args: list[VariableTracker],
                   kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """``MyFunction.apply(...)``: one graph node, its example value computed by running the
    user's ``forward`` on fake tensors (``call_op``'s steps, around two checks).

    The tracer never looks inside the Function, and AOT autograd runs its ``forward`` and
    ``backward`` once, while tracing, baking in what they read. So the values they read by name
    (a global scale, a helper function) are guarded: by value for a number or a string, by
    identity otherwise. And a ``forward`` that changes Python state the program can see (appends
    to a list it was given or to a global one, sets an attribute of a global object) would
    change it at run time behind the tracer's back (a later ``z[0]`` traced as an IndexError),
    and it has just changed it once more, with fake tensors: that state is compared before and
    after the fake run; a change is undone and breaks the graph, and the call runs eagerly,
    where its effects are real. (Real Dynamo traces the Function's methods themselves.)"""
    from .builder import wrap_fx_proxy

    output, target = tx.output, AppliedFunction(function)
    read = names_read_by(function, class_source, ("forward", "setup_context", "backward"))
    for name, source, value in read:
        if source is not None:
            for guarded, v in [(source, value), *_attributes(source, value)]:
                kind = GuardKind.EQUALS_MATCH if isinstance(v, GUARDED_BY_VALUE) \
                    else GuardKind.ID_MATCH
                output.add_guard(Guard(guarded, kind, v, tx.user_line()))
    fake_args = [a.as_fake() for a in args]
    fake_kwargs = {k: v.as_fake() for k, v in kwargs.items()}
    reachable = StateSnapshot({**{n: v for n, _, v in read if StateSnapshot.holds_state(v)}, **{
        f"its argument {name!r}": v for name, v in [*enumerate(fake_args), *fake_kwargs.items()]
        if StateSnapshot.holds_state(v)}})
    try:
        example = output.run_fake("call_function", target, fake_args, fake_kwargs)
    finally:
        changed = reachable.undo_changes()
    if changed:
        unimplemented(f"{function.__name__}.forward changes {', '.join(changed)}; the tracer "
                      f"does not see inside forward, so the call runs eagerly")
    proxy = output.create_proxy("call_function", target, tuple(a.as_proxy() for a in args),
                                {k: v.as_proxy() for k, v in kwargs.items()})
    return wrap_fx_proxy(tx, proxy, example)


GUARDED_BY_VALUE = (int, float, bool, str, type(None))


def _attributes(source: Source, value: Any) -> list[tuple[Source, Any]]:
    """The attributes of a plain object (``cfg.scale``) and the string-keyed items of a dict
    the Function reads by name, one level down: what it may read of them is baked in too."""
    if isinstance(value, dict):
        return [(GetItemSource(source, k), v) for k, v in value.items() if isinstance(k, str)]
    if StateSnapshot.holds_state(value) and not isinstance(value, (list, set)):
        return [(AttrSource(source, k), v) for k, v in vars(value).items()]
    return []


def names_read_by(function: type, class_source: Source | None,
                  methods: tuple[str, ...]) -> list[tuple[str, Source | None, Any]]:
    """The globals and closure cells the Function's ``methods`` read by name, and those of the
    plain functions they name in turn (a decorator's wrapper, a helper), a few calls deep: each
    as (its name, where a guard reads it, its value). Modules are left out (``torch.sin``), and
    so are torch's own functions, except for the closure of a decorator's wrapper
    (``torch.amp.custom_fwd``), where the user's function is."""
    found: list[tuple[str, Source | None, Any]] = []
    todo = []
    for m in methods:
        fn = getattr(function, m, None)
        source = AttrSource(class_source, m) if class_source is not None else None
        if isinstance(fn, types.MethodType):  # a classmethod: its function
            fn, source = fn.__func__, source and AttrSource(source, "__func__")
        todo.append((fn, source, 3))
    seen: set[int] = set()
    while todo:
        fn, source, depth = todo.pop()
        if not isinstance(fn, types.FunctionType) or id(fn) in seen or depth == 0:
            continue
        seen.add(id(fn))
        in_torch = fn.__globals__.get("__name__", "").startswith("torch.")  # (not __module__:
        named = [] if in_torch else [  # functools.wraps gives a wrapper its wrapped's)
            (n, source and GetItemSource(AttrSource(source, "__globals__"), n), fn.__globals__[n])
            for n in fn.__code__.co_names if n in fn.__globals__]
        named += [(n, source and ClosureSource(source, i), c.cell_contents)
                  for i, (n, c) in enumerate(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
                  if _cell_filled(c)]
        for name, value_source, value in named:
            if not isinstance(value, types.ModuleType):
                found.append((f"{name!r}", value_source, value))
                todo.append((value, value_source, depth - 1))
    return found


def _cell_filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # a cell not assigned yet
        return False
    return True


class StateSnapshot:
    """The contents of some lists, dicts, sets and plain objects (their attributes), kept to
    tell whether a call changed them, and to put them back."""

    def __init__(self, values: dict[str, Any]):
        self.values = values
        self.before = {name: self.contents(v) for name, v in values.items()}

    @staticmethod
    def holds_state(value: Any) -> bool:
        if isinstance(value, (list, dict, set)):
            return True
        return hasattr(value, "__dict__") and not isinstance(value, (
            type, types.ModuleType, types.FunctionType, types.MethodType, torch.Tensor))

    @staticmethod
    def contents(value: Any) -> list[tuple[Any, Any]]:
        """(key, item) pairs, compared by identity: a list's and a set's items have no key."""
        if isinstance(value, (list, set)):
            return [(None, v) for v in value]
        return list((value if isinstance(value, dict) else vars(value)).items())

    def undo_changes(self) -> list[str]:
        """The names of the values that changed, each put back as it was."""
        changed = []
        for name, value in self.values.items():
            before, after = self.before[name], self.contents(value)
            if len(before) == len(after) and all(
                    k0 is k1 and v0 is v1 for (k0, v0), (k1, v1) in zip(before, after)):
                continue
            changed.append(name)
            if isinstance(value, list):
                value[:] = [v for _, v in before]
            elif isinstance(value, set):
                value.clear()
                value.update(v for _, v in before)
            else:
                items = value if isinstance(value, dict) else vars(value)
                items.clear()
                items.update(before)
        return changed


# --- torch functions traced by running them, not recorded as graph nodes -------------------------

def _grad_mode(tx, fn, args, kwargs) -> VariableTracker:  # torch.no_grad(), torch.enable_grad()
    from .misc import GradModeVariable

    return GradModeVariable(target=fn is torch.enable_grad)


def _set_grad_enabled(tx, fn, args, kwargs) -> VariableTracker:
    """Switches grad mode now; the result also works as a context manager."""
    from .misc import GradModeVariable

    prev = torch.is_grad_enabled()
    GradModeVariable.set_mode(tx, args[0].as_python_constant())
    return GradModeVariable(args[0].as_python_constant(), entered_prev=prev)


def _autocast(tx, fn, args, kwargs) -> VariableTracker:
    """``torch.autocast("cuda", dtype=torch.bfloat16)``: its arguments bound as autocast's own
    signature binds them (they are constants: the region's casts depend on them)."""
    from .misc import AutocastVariable

    bound = inspect.signature(torch.autocast.__init__).bind(
        None, *[a.as_python_constant() for a in args],
        **{k: v.as_python_constant() for k, v in kwargs.items()})
    bound.apply_defaults()
    a = bound.arguments
    dtype = a["dtype"] if a["dtype"] is not None else torch.get_autocast_dtype(a["device_type"])
    return AutocastVariable(a["device_type"], dtype, a["enabled"], a["cache_enabled"])


def _compiling(tx, fn, args, kwargs) -> VariableTracker:  # torch.compiler.is_compiling()
    return ConstantVariable(True)


def _fold(tx, fn, args, kwargs) -> VariableTracker:
    """Computed on the fake values while tracing (``torch.is_floating_point(x)``...)."""
    from .builder import SourcelessBuilder

    value = fn(*[a.as_fake() for a in args], **{k: v.as_fake() for k, v in kwargs.items()})
    return SourcelessBuilder.wrap(tx, value)


def _annotate(tx, fn, args, kwargs) -> VariableTracker:
    """``torch.jit.annotate(the_type, the_value)`` is ``the_value`` (the type is for TorchScript)."""
    bound = {**dict(zip(("the_type", "the_value"), args)), **kwargs}
    return bound["the_value"]


def _size(tx, fn, args, kwargs) -> VariableTracker:  # torch.Size([2, 3])
    from .lists import SizeVariable

    return SizeVariable(args[0].unpack_var_sequence(tx) if args else [])


def _foreach_scaled_update(tx, fn, args, kwargs) -> VariableTracker:
    """``torch._foreach_addcdiv_(xs, as_, bs, scalars)`` with the scalars as one tensor (the
    foreach Adam stacks its step sizes while compiling): one scaled update per tensor, as
    ``x.addcdiv_(a, b, value=v)`` with a tensor ``v`` is traced (tensor.py)."""
    from .tensor import SCALED_UPDATES, TensorVariable, call_op, scaled_update

    scalars = args[3] if len(args) == 4 else kwargs.get("scalars", kwargs.get("value"))
    if not isinstance(scalars, TensorVariable):
        return call_op(tx, "call_function", fn, args, kwargs)
    combine = SCALED_UPDATES[fn.__name__.removeprefix("_foreach_")]
    lists = [a.unpack_var_sequence(tx) for a in args[:3]]
    values = scalars.unpack_var_sequence(tx) if scalars.example_value.dim() \
        else [scalars] * len(lists[0])  # value=-lr: one 0-d tensor for every update
    for x, a, b, v in zip(*lists, values):
        scaled_update(tx, combine, x, a, b, v)
    return ConstantVariable(None)


def _foreach_scaled_operand(tx, fn, args, kwargs) -> VariableTracker:
    """``torch._foreach_add_(xs, ys, alpha=-lr)`` with a tensor lr (RMSprop's momentum path):
    ``torch._foreach_add_(xs, torch._foreach_mul(ys, -lr))``, as ``x.add_(y, alpha=...)``."""
    from .tensor import TensorVariable, call_op

    alpha = kwargs.get("alpha")
    if not isinstance(alpha, TensorVariable):
        return call_op(tx, "call_function", fn, args, kwargs)
    scaled = call_op(tx, "call_function", torch._foreach_mul, [args[1], alpha], {})
    return call_op(tx, "call_function", fn, [args[0], scaled], {})


def _associative_scan(tx, fn, args, kwargs) -> VariableTracker:
    """``associative_scan(combine_fn, xs, dim, reverse=False, ...)`` (Mamba's selective scan
    under a compiler): real Dynamo keeps it as one higher-order op with ``combine_fn`` traced
    as a subgraph. Traced here as the scan it computes, one element of ``dim`` at a time:
    ``out[0] = x[0]``, ``out[i] = combine_fn(out[i - 1], x[i])`` (from the end with
    ``reverse``), each operand every leaf of ``xs`` at one index (what the ``torch.vmap`` of
    the eager version hands ``combine_fn``), then each leaf's results stacked along ``dim``: the
    recurrence a model's own eager loop computes, a graph that grows with the length."""
    from .lists import BaseListVariable, ListVariable
    from .tensor import TensorVariable, call_op

    bound = inspect.signature(fn).bind(*args, **kwargs).arguments
    combine, xs = bound["combine_fn"], bound["xs"]
    dim, reverse = (bound[k].as_python_constant() if k in bound else False
                    for k in ("dim", "reverse"))
    leaves = xs.items if isinstance(xs, BaseListVariable) else [xs]
    if not all(isinstance(x, TensorVariable) for x in leaves) or bound.get("additional_inputs"):
        unimplemented("associative_scan over anything but a tensor or a flat tuple of tensors")
    length = leaves[0].example_value.shape[dim]
    if not isinstance(length, int):
        unimplemented("associative_scan along a dim of symbolic length (it is traced unrolled)")

    def pack(items):  # xs's structure around one index's tensors
        return type(xs)(list(items)) if isinstance(xs, BaseListVariable) else items[0]

    def select(x, i):
        return call_op(tx, "call_function", torch.select,
                       [x, ConstantVariable(dim), ConstantVariable(i)], {})

    results, carry = {}, None
    for i in (reversed(range(length)) if reverse else range(length)):
        here = [select(x, i) for x in leaves]
        if carry is not None:
            out = combine.call_function(tx, [pack(carry), pack(here)], {})
            here = out.items if isinstance(out, BaseListVariable) else [out]
        results[i] = carry = here
    stacked = [call_op(tx, "call_function", torch.stack,
                       [ListVariable([results[i][k] for i in range(length)]),
                        ConstantVariable(dim)], {}) for k in range(len(leaves))]
    return pack(stacked)


def _associative_scan_handler() -> dict[Callable, Callable]:
    """``torch._higher_order_ops.associative_scan.associative_scan``, where this torch has it."""
    try:
        from torch._higher_order_ops.associative_scan import associative_scan
    except ImportError:
        return {}
    return {associative_scan: _associative_scan}


# torch function -> how a call of it is traced; any other torch function becomes a graph node
CALL_HANDLERS: dict[Callable, Callable] = {
    **_associative_scan_handler(),
    torch._foreach_addcdiv_: _foreach_scaled_update,
    torch._foreach_addcmul_: _foreach_scaled_update,
    **{fn: _foreach_scaled_operand for fn in (torch._foreach_add_, torch._foreach_sub_,
                                              torch._foreach_add, torch._foreach_sub)},
    torch.no_grad: _grad_mode,
    torch.enable_grad: _grad_mode,
    torch.set_grad_enabled: _set_grad_enabled,
    torch.autocast: _autocast,
    torch.Size: _size,
    torch.jit.annotate: _annotate,
    **{fn: _compiling for fn in IS_COMPILING},
    **{fn: _fold for fn in CONSTANT_FOLD},
}
