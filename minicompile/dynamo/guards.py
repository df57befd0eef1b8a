"""Guards: the conditions under which a compiled frame may be reused (mirrors
torch/_dynamo/guards.py).

While tracing, every value read from outside (an argument, a global, a closure cell, a module
attribute) installs a ``Guard``: where it came from (a Source), what kind of check, the value
seen, and the user line that read it. When the frame is done, the list is written as readable
Python, one guard a line (the listing, ``MINICOMPILE_LOGS=guards``)::

    def guard(L, G):
        return (
            type(L['x']) is torch.Tensor and L['x'].dtype is torch.float32 and ...  # TENSOR_MATCH
            and torch.is_grad_enabled()                                             # GRAD_MODE
        )

``L`` is the frame's locals (its arguments), ``G`` its globals. Each guard kind is one row of
``GUARD_CODEGEN``: a function from the Guard to its checks, Python conditions that must all hold.
More kinds are added there. What runs before every reuse of the cache entry is the same checks
arranged as a tree, each value read once (guard_manager.py: ``GuardFn``, ``build_guard_fn``).

Dynamic shapes: a TENSOR_MATCH leaves symbolic sizes and strides out (``None`` in its
``TensorSpec``); the frame's ShapeEnv stands in the list as one SHAPE_ENV guard, expanded at the
end into one relation per line (``2*L['a'].size()[0] >= 16``), checked last.

On a miss, ``GuardFn.failure_reason`` re-checks the guards one by one and words the first that
fails (``GUARD_REASONS``; real Dynamo: ``get_guard_fail_reason``):
``tensor 'L['x']' size mismatch at index 0. expected 4, actual 8``.
"""

from __future__ import annotations

import enum
import operator
import types
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch.nn.modules import module as _module_globals  # the global hook registries

from ..names import literal, readable
from ..shapes.symbolic_shapes import PythonPrinter, ShapeEnv, is_symbolic
from .source import Source, own_keys

class GuardKind(str, enum.Enum):
    TENSOR_MATCH = "TENSOR_MATCH"  # type, dtype, device, shape, stride, requires_grad
    TYPE_MATCH = "TYPE_MATCH"  # type(v) is T (user objects)
    ID_MATCH = "ID_MATCH"  # the very same object (functions, modules, classes)
    EQUALS_MATCH = "EQUALS_MATCH"  # same type and equal value (ints, strings, None, dtypes)
    LENGTH_CHECK = "LENGTH_CHECK"  # same sequence type and length
    DICT_KEYS = "DICT_KEYS"  # same keys in the same order
    USER_DICT_KEYS = "USER_DICT_KEYS"  # a dict subclass: same class, same keys in order
    GRAD_MODE = "GRAD_MODE"  # global state: torch.is_grad_enabled()
    DEFAULT_DTYPE = "DEFAULT_DTYPE"  # global state: torch.get_default_dtype()
    GLOBAL_STATE = "GLOBAL_STATE"  # the rest of the global state a graph depends on (below)
    SHAPE_ENV = "SHAPE_ENV"  # a relation over symbolic sizes: 2*L['a'].size()[0] >= 16
    HASATTR = "HASATTR"  # hasattr(obj, name) is what tracing saw (expected: (name, bool))
    NN_MODULE_CALL = "NN_MODULE_CALL"  # a called module keeps its class, hooks and forward
    DUPLICATE_INPUT = "DUPLICATE_INPUT"  # the same tensor under two names: L['y'] is L['x']
    NO_TENSOR_ALIASING = "NO_TENSOR_ALIASING"  # the other tensor inputs are distinct objects


@dataclass(frozen=True)
class TensorSpec:
    """What TENSOR_MATCH checks; a ``None`` size or stride is not checked (a dynamic dim)."""

    type: type
    dtype: torch.dtype
    device: torch.device
    shape: tuple[int | None, ...]
    stride: tuple[int | None, ...]
    requires_grad: bool
    # the example's dispatch keys (CPU, AutogradCPU, Conjugate, ...): what the C++ check of
    # the function that runs compares (``batch_tensor_matches``); None: not known
    dispatch_keys: Any = field(default=None, compare=False)

    @classmethod
    def of(cls, t: torch.Tensor, fake: torch.Tensor | None = None) -> TensorSpec:
        """The spec of ``t``; sizes and strides that are symbolic in ``fake`` become None."""
        shape, stride = tuple(t.shape), tuple(t.stride())
        if fake is not None:
            shape = tuple(None if is_symbolic(f) else n for n, f in zip(shape, fake.shape))
            stride = tuple(None if is_symbolic(f) else n for n, f in zip(stride, fake.stride()))
        return cls(type(t), t.dtype, t.device, shape, stride, t.requires_grad,
                   torch._C._dispatch_keys(t))


# Global switches that change what a traced program computes (real Dynamo's GlobalStateGuard):
# each is a Python expression, evaluated when the frame is traced and checked on every call.
GLOBAL_STATE = (
    "torch.are_deterministic_algorithms_enabled()",
    # autocast: False while it is off on every device (one call: the usual case, checked on
    # every call of every compiled frame), else whether it is on and its dtype, per device
    "torch._C._is_any_autocast_enabled() and (torch.is_autocast_enabled('cpu'), "
    "torch.get_autocast_dtype('cpu'), torch.is_autocast_enabled('cuda'), "
    "torch.get_autocast_dtype('cuda'))",
    "torch.is_inference_mode_enabled()",
    "torch.get_num_threads()",
    # the default device factory calls use (``with torch.device(d)``, set_default_device: a
    # TorchFunctionMode each): False while no mode is active, the usual case, one C call
    "torch._C._is_torch_function_mode_enabled() and torch.get_default_device()",
    # a hook every module runs (register_module_forward_hook...): a traced module call runs
    # none, so a frame traced without one is compiled again when one appears
    "___any_global_module_hook()",
)


def any_global_module_hook() -> bool:
    """Whether a hook is registered for every module call (torch.nn.modules.module's global
    forward, forward pre-, backward and backward pre-hooks)."""
    return bool(_module_globals._global_forward_hooks or _module_globals._global_forward_pre_hooks
                or _module_globals._global_backward_hooks
                or _module_globals._global_backward_pre_hooks)


GLOBAL_NAMES = {"torch": torch, "___any_global_module_hook": any_global_module_hook}


def global_state() -> tuple:
    """The values of ``GLOBAL_STATE`` now."""
    return tuple(eval(expr, GLOBAL_NAMES) for expr in GLOBAL_STATE)


@dataclass
class Guard:
    source: Source | None  # None: global state (grad mode)
    kind: GuardKind
    expected: Any = None
    user_line: str | None = None  # "fn.py:3 in f: return x.sin()"

    @property
    def name(self) -> str:
        return self.source.name() if self.source is not None else "<global state>"


_TORCH_CLASSES = {torch.Tensor: "torch.Tensor", torch.nn.Parameter: "torch.nn.Parameter"}


@dataclass
class GuardScope:
    """How a guard's code names things: non-literal expected values (classes, objects) are bound
    to names in the guard's globals, and a source's value is its name (``L['m'].lin``), or,
    in the guard tree's function, the local that holds it (``values``)."""

    names: dict[str, Any] = field(default_factory=lambda: dict(GLOBAL_NAMES))
    values: dict[Source, str] = field(default_factory=dict)
    # for the function that runs, not for reading: an identity check is ``v is <the object,
    # bound to a name>`` (one compare, where ``id(v) == 1402...`` calls a function), and
    # torch's dtypes and tensor classes are bound names (no lookup in ``torch``)
    runnable: bool = False
    ids: dict[int, str] = field(default_factory=dict)  # id of each bound value -> its name

    def runnable_scope(self) -> GuardScope:
        """The same names and values, written for the function that runs."""
        return GuardScope(self.names, self.values, True, self.ids)

    def value(self, source: Source) -> str:
        return self.values.get(source) or source.name()

    def ref(self, value: Any, hint: str) -> str:
        if id(value) in self.ids:
            return self.ids[id(value)]
        name = f"___{readable(hint)}_{len(self.names)}"  # class "Bad'Name": ___Bad_Name_1
        self.names[name], self.ids[id(value)] = value, name
        return name

    def literal(self, value: Any) -> str:
        # exact types only (names.literal): a subclass (a str-Enum member, an IntEnum) has a
        # repr that is not Python source, so it is bound to a name like any other object
        text = literal(value)
        if text is not None:
            return text
        if isinstance(value, torch.dtype) or value is torch.Tensor or value is torch.nn.Parameter:
            text = _TORCH_CLASSES.get(value) or str(value)  # "torch.float32"
            return self.ref(value, text.replace(".", "_")) if self.runnable else text
        if isinstance(value, type) and value in (int, float, bool, str, list, tuple, dict):
            return value.__name__
        if isinstance(value, enum.Enum):  # Color.RED: ___Color_RED_2
            return self.ref(value, f"{type(value).__name__}_{value.name}")
        return self.ref(value, type(value).__name__ if not isinstance(value, type)
                        else value.__name__)


def _tensor_match(g: Guard, s: GuardScope) -> list[str]:
    v = s.value(g.source)
    spec = g.expected if isinstance(g.expected, TensorSpec) else TensorSpec.of(g.expected)
    parts = [f"type({v}) is {s.literal(spec.type)}", f"{v}.dtype is {s.literal(spec.dtype)}",
             *_device_match(v, spec.device)]
    for what, dims in (("shape", spec.shape), ("stride()", spec.stride)):
        if None not in dims:
            parts.append(f"{v}.{what} == {tuple(dims)}")
        else:  # dynamic dims are left out; the rank is still checked
            parts.append(f"len({v}.{what}) == {len(dims)}")
            parts += [f"{v}.{what}[{i}] == {d}" for i, d in enumerate(dims) if d is not None]
    parts.append(f"{'' if spec.requires_grad else 'not '}{v}.requires_grad")
    return parts


def _device_match(v: str, device: torch.device) -> list[str]:
    """``x.is_cpu``, ``x.is_cuda and x.get_device() == 0``: attributes read in C, where
    ``str(x.device)`` builds a device object and a string on every call."""
    if device.type == "cpu":
        return [f"{v}.is_cpu"]
    if device.type == "cuda" and device.index is not None:
        return [f"{v}.is_cuda", f"{v}.get_device() == {device.index}"]
    return [f"str({v}.device) == {str(device)!r}"]


def _equals_match(g: Guard, s: GuardScope) -> list[str]:
    v, e = s.value(g.source), g.expected
    if e is None or isinstance(e, bool):
        return [f"{v} is {e!r}"]
    if type(e) is float and (e != e or e == 0 or abs(e) == float("inf")):
        checks = [f"type({v}) is float", f"repr({v}) == {repr(e)!r}"]  # -0.0 vs 0.0; nan == nan
    else:
        checks = [f"type({v}) is {s.literal(type(e))}", f"{v} == {s.literal(e)}"]
    if s.runnable and type(e) in IMMUTABLE_SCALARS:
        # ``e`` is the object the trace read, and an attribute or argument most often still
        # holds that very object (a module's ``eps``, a conv's ``groups``): one identity test,
        # the type and value tests only when it holds another one
        return [f"({v} is {s.ref(e, 'const')} or {' and '.join(checks)})"]
    return checks


IMMUTABLE_SCALARS = (int, float, complex, str, bytes)


def deeply_immutable(value: Any) -> bool:
    """A value that can never change, nor anything read from it: a scalar constant, or a tuple
    of them (a conv's ``stride``). Holding the same object again, it passes every guard it
    passed when traced (``GuardCodegen.emit`` skips the checks of its subtree)."""
    if type(value) is tuple:
        return all(map(deeply_immutable, value))
    return value is None or type(value) in (bool, *IMMUTABLE_SCALARS)


def _same_keys(keys: str, each: str, expected: list, s: GuardScope) -> list[str]:
    """``list(keys) == [...]``: ``keys`` lists the dict's keys, ``each`` iterates over them."""
    if expected and all(isinstance(k, torch.Tensor) for k in expected):
        # tensors alone (an optimizer's state, keyed by its parameters): the same objects in
        # the same order, one pass in C; a check per key would list the keys once per key
        objects, same = s.ref(tuple(expected), "tensor_keys"), s.ref(operator.is_, "is_")
        return [f"len({keys}) == {len(expected)}", f"all(map({same}, {each}, {objects}))"]
    literals = ", ".join(s.literal(k) for k in expected)  # an Enum key: bound to a name
    check = f"list({keys}) == [{literals}]"
    # a tensor key first by identity: `==` of two tensors is a tensor, not an answer (the list
    # compare below then meets the same tensor, which it takes by `is`)
    tensors = [f"list({keys})[{i}] is {s.literal(k)}" for i, k in enumerate(expected)
               if isinstance(k, torch.Tensor)]
    checks = [check]
    if tensors:
        checks = [f"len({keys}) == {len(expected)}", *tensors, check]
    if any(type(k) is not str for k in expected):  # 1 == 1.0 == True == E.ONE: types too
        types = ", ".join(s.literal(type(k)) for k in expected)
        checks.append(f"[type(k) for k in {each}] == [{types}]")
    return checks


def _dict_keys(g: Guard, s: GuardScope) -> list[str]:
    v = s.value(g.source)
    return [f"type({v}) is dict", *_same_keys(f"{v}.keys()", v, g.expected, s)]


def _user_dict_keys(g: Guard, s: GuardScope) -> list[str]:
    """The keys of the class's builtin base (``dict.keys``, ``OrderedDict.keys``): the class
    may override keys() and __iter__."""
    v, (cls, keys) = s.value(g.source), g.expected
    method = own_keys(cls)
    read = f"dict.keys({v})" if method is dict.keys else f"{s.ref(method, 'OrderedDict_keys')}({v})"
    return [f"type({v}) is {s.literal(cls)}", *_same_keys(read, read, keys, s)]


def object_name(value: object) -> str:
    """A short name for an identity-matched object: a class's or function's ``__qualname__``, a
    module's ``__name__``, else its type's name. Only string attributes are taken, and any error
    in reading them is ignored: some objects answer every attribute (``torch.classes`` makes a
    namespace for any name read from it), and formatting those calls back into their hooks."""
    if isinstance(value, types.ModuleType):
        name = vars(value).get("__name__")
        return f"module {name}" if isinstance(name, str) else "module"
    try:
        name = getattr(value, "__qualname__", None)
    except Exception:
        name = None
    return name if isinstance(name, str) else type(value).__name__


def _id_match(g: Guard, s: GuardScope) -> str:
    v, obj = s.value(g.source), g.expected  # (the guard holds obj: its id stays its own)
    if s.runnable:
        return f"{v} is {s.ref(obj, 'obj_' + object_name(obj))}"
    return f"id({v}) == {id(obj)}"


def _nn_module_call(g: Guard, s: GuardScope) -> list[str]:
    """The class, the forward pre-hooks and forward hooks the call traced (by their keys; each
    hook object is guarded where it was read) and no other hooks, and no ``forward`` set on
    the instance. Without hooks, one test of the three tables."""
    v = s.value(g.source)
    cls, (pre, post) = g.expected
    backward = f"{v}._backward_hooks or {v}._backward_pre_hooks"  # (a full backward hook's)
    hook_checks = [f"tuple({v}._forward_pre_hooks) == {pre!r}",
                   f"tuple({v}._forward_hooks) == {post!r}", f"not ({backward})"] \
        if pre or post else \
        [f"not ({v}._forward_hooks or {v}._forward_pre_hooks or {backward})"]
    return [f"type({v}) is {s.literal(cls)}", *hook_checks, f"'forward' not in {v}.__dict__"]


# kind -> the guard's checks, as Python conditions that must all hold (real Dynamo's
# ``code_parts``); the listing joins them with ``and``, the guard tree folds repeated ones
GUARD_CODEGEN: dict[GuardKind, Callable[[Guard, GuardScope], list[str]]] = {
    GuardKind.TENSOR_MATCH: _tensor_match,
    GuardKind.TYPE_MATCH: lambda g, s: [f"type({s.value(g.source)}) is {s.literal(g.expected)}"],
    GuardKind.ID_MATCH: lambda g, s: [_id_match(g, s)],
    GuardKind.EQUALS_MATCH: _equals_match,
    GuardKind.LENGTH_CHECK: lambda g, s: [f"type({s.value(g.source)}) is {s.literal(g.expected[0])}",
                                          f"len({s.value(g.source)}) == {g.expected[1]}"],
    GuardKind.DICT_KEYS: _dict_keys,
    GuardKind.USER_DICT_KEYS: _user_dict_keys,
    GuardKind.GRAD_MODE: lambda g, s: ["torch.is_grad_enabled()" if g.expected
                                       else "not torch.is_grad_enabled()"],
    GuardKind.DEFAULT_DTYPE: lambda g, s: [f"torch.get_default_dtype() == {s.literal(g.expected)}"],
    GuardKind.GLOBAL_STATE: lambda g, s: [
        f"({', '.join(GLOBAL_STATE)}) == ({', '.join(s.literal(v) for v in g.expected)})"],
    GuardKind.SHAPE_ENV: lambda g, s: [g.expected],  # already Python: ShapeEnv.render_guards()
    GuardKind.HASATTR: lambda g, s: [f"{'' if g.expected[1] else 'not '}"
                                     f"hasattr({s.value(g.source)}, {g.expected[0]!r})"],
    GuardKind.NN_MODULE_CALL: _nn_module_call,
    GuardKind.DUPLICATE_INPUT: lambda g, s: [f"{s.value(g.source)} is {s.value(g.expected)}"],
    GuardKind.NO_TENSOR_ALIASING: lambda g, s: [
        f"len({{{', '.join(f'id({s.value(src)})' for src in g.expected)}}}) == {len(g.expected)}"],
}


# ---- why a guard failed: the recompile reason (real Dynamo: get_guard_fail_reason) ------------
def _tensor_reason(g: Guard, value: Any) -> str:
    """The first TENSOR_MATCH property that differs, worded like real Dynamo's reasons."""
    spec = g.expected if isinstance(g.expected, TensorSpec) else TensorSpec.of(g.expected)
    name = f"tensor '{g.name}'"
    if not isinstance(value, torch.Tensor) or type(value) is not spec.type:
        return f"{name} type mismatch. expected {spec.type.__name__}, actual {type(value).__name__}"
    for what, expected, actual in (("dtype", spec.dtype, value.dtype),
                                   ("device", str(spec.device), str(value.device)),
                                   ("requires_grad", spec.requires_grad, value.requires_grad),
                                   ("rank", len(spec.shape), value.dim())):
        if expected != actual:
            return f"{name} {what} mismatch. expected {expected}, actual {actual}"
    for what, dims, actual in (("size", spec.shape, value.shape), ("stride", spec.stride, value.stride())):
        for i, (e, a) in enumerate(zip(dims, actual)):
            if e is not None and e != a:
                return f"{name} {what} mismatch at index {i}. expected {e}, actual {a}"
    return f"{name} mismatch"


def _global_state_reason(what: str, current: Callable[[], Any]) -> Callable[[Guard, Any], str]:
    return lambda g, _: f"global state changed: {what} expected {g.expected}, actual {current()}"


# kind -> reason(guard, the guarded value); kinds without a row report their failing condition
GUARD_REASONS: dict[GuardKind, Callable[[Guard, Any], str]] = {
    GuardKind.TENSOR_MATCH: _tensor_reason,
    GuardKind.GRAD_MODE: _global_state_reason("grad_mode", torch.is_grad_enabled),
    GuardKind.DEFAULT_DTYPE: _global_state_reason("default_dtype", torch.get_default_dtype),
    GuardKind.GLOBAL_STATE: lambda g, _: "global state changed: " + ", ".join(
        f"{expr} expected {e}, actual {a}"
        for expr, e, a in zip(GLOBAL_STATE, g.expected, global_state()) if e != a),
}


def expand_shape_env(guards: list[Guard]) -> list[Guard]:
    """A SHAPE_ENV guard holding the frame's ShapeEnv stands for every relation it recorded
    (known only once tracing is over): one guard per relation, each with its user line."""
    out, shape = [], []
    for g in guards:
        if g.kind is GuardKind.SHAPE_ENV and isinstance(g.expected, ShapeEnv):
            shape += [Guard(None, GuardKind.SHAPE_ENV, _relation_source(sg.expr), sg.user_line)
                      for sg in g.expected.produce_guards()]
        else:
            out.append(g)
    return out + shape  # last: they read sizes of inputs the guards before checked are tensors


def _relation_source(expr) -> str:
    """A relation as Python; a disjunction in parentheses (``(a == 1) or (b == 0)``): the
    guard's lines are joined with ``and``, which binds tighter than ``or``, so unwrapped the
    whole guard passed whenever the disjunction's last term held."""
    text = PythonPrinter().doprint(expr)
    return f"({text})" if " or " in text else text


def dedupe(guards: list[Guard]) -> list[Guard]:
    """Keep the first guard of each (source, kind): reading ``x`` twice guards it once."""
    seen, out = set(), []
    for g in guards:
        key = (g.name, g.kind, g.expected if g.kind is GuardKind.SHAPE_ENV else None)
        if key not in seen:
            seen.add(key)
            out.append(g)
    return out
