"""Guards: the conditions under which a compiled frame may be reused (mirrors
torch/_dynamo/guards.py).

While tracing, every value read from outside (an argument, a global, a closure cell, a module
attribute) installs a ``Guard``: where it came from (a Source), what kind of check, the value
seen, and the user line that read it. When the frame is done, ``build_guard_fn`` turns the list
into readable Python, compiled once and called before every reuse of the cache entry::

    def guard(L, G):
        return (
            type(L['x']) is torch.Tensor and L['x'].dtype is torch.float32 and ...  # TENSOR_MATCH
            and torch.is_grad_enabled()                                             # GRAD_MODE
        )

``L`` is the frame's locals (its arguments), ``G`` its globals. Each guard kind is one row of
``GUARD_CODEGEN``: a function from the Guard to the Python condition. More kinds are added there.

Dynamic shapes: a TENSOR_MATCH leaves symbolic sizes and strides out (``None`` in its
``TensorSpec``); the frame's ShapeEnv stands in the list as one SHAPE_ENV guard, expanded at the
end into one relation per line (``2*L['a'].size()[0] >= 16``), checked last.

On a miss, ``GuardFn.failure_reason`` re-checks the guards one by one and words the first that
fails (``GUARD_REASONS``; real Dynamo: ``get_guard_fail_reason``):
``tensor 'L['x']' size mismatch at index 0. expected 4, actual 8``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from ..names import comment, literal, readable
from ..shapes.symbolic_shapes import PythonPrinter, ShapeEnv, is_symbolic
from .guard_compile import compile_listing
from .source import Source

try:  # torch's C++ tensor check (torch/csrc/dynamo/guards.cpp): a faster path, not needed
    from torch._C._dynamo.guards import TensorGuards
except ImportError:  # pragma: no cover
    TensorGuards = None


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
)


def global_state() -> tuple:
    """The values of ``GLOBAL_STATE`` now."""
    return tuple(eval(expr, {"torch": torch}) for expr in GLOBAL_STATE)


@dataclass
class Guard:
    source: Source | None  # None: global state (grad mode)
    kind: GuardKind
    expected: Any = None
    user_line: str | None = None  # "fn.py:3 in f: return x.sin()"

    @property
    def name(self) -> str:
        return self.source.name() if self.source is not None else "<global state>"


@dataclass
class GuardScope:
    """Non-literal expected values (classes, objects) are bound to names in the guard's globals."""

    names: dict[str, Any] = field(default_factory=lambda: {"torch": torch})

    def ref(self, value: Any, hint: str) -> str:
        for name, v in self.names.items():
            if v is value:
                return name
        name = f"___{readable(hint)}_{len(self.names)}"  # class "Bad'Name": ___Bad_Name_1
        self.names[name] = value
        return name

    def literal(self, value: Any) -> str:
        # exact types only (names.literal): a subclass (a str-Enum member, an IntEnum) has a
        # repr that is not Python source, so it is bound to a name like any other object
        text = literal(value)
        if text is not None:
            return text
        if isinstance(value, torch.dtype):
            return str(value)  # "torch.float32"
        if isinstance(value, type) and value in (torch.Tensor, torch.nn.Parameter, int, float,
                                                 bool, str, list, tuple, dict):
            return {torch.Tensor: "torch.Tensor", torch.nn.Parameter: "torch.nn.Parameter"}.get(
                value, getattr(value, "__name__", ""))
        if isinstance(value, enum.Enum):  # Color.RED: ___Color_RED_2
            return self.ref(value, f"{type(value).__name__}_{value.name}")
        return self.ref(value, type(value).__name__ if not isinstance(value, type)
                        else value.__name__)


def _tensor_match(g: Guard, s: GuardScope) -> str:
    v, spec = g.name, g.expected if isinstance(g.expected, TensorSpec) else TensorSpec.of(g.expected)
    parts = [f"type({v}) is {s.literal(spec.type)}", f"{v}.dtype is {s.literal(spec.dtype)}",
             _device_match(v, spec.device)]
    for what, dims in (("shape", spec.shape), ("stride()", spec.stride)):
        if None not in dims:
            parts.append(f"{v}.{what} == {tuple(dims)}")
        else:  # dynamic dims are left out; the rank is still checked
            parts.append(f"len({v}.{what}) == {len(dims)}")
            parts += [f"{v}.{what}[{i}] == {d}" for i, d in enumerate(dims) if d is not None]
    parts.append(f"{'' if spec.requires_grad else 'not '}{v}.requires_grad")
    return " and ".join(parts)


def _device_match(v: str, device: torch.device) -> str:
    """``x.is_cpu``, ``x.is_cuda and x.get_device() == 0``: attributes read in C, where
    ``str(x.device)`` builds a device object and a string on every call."""
    if device.type == "cpu":
        return f"{v}.is_cpu"
    if device.type == "cuda" and device.index is not None:
        return f"{v}.is_cuda and {v}.get_device() == {device.index}"
    return f"str({v}.device) == {str(device)!r}"


def _equals_match(g: Guard, s: GuardScope) -> str:
    v, e = g.name, g.expected
    if e is None or isinstance(e, bool):
        return f"{v} is {e!r}"
    if type(e) is float and (e != e or e == 0 or abs(e) == float("inf")):
        return f"type({v}) is float and repr({v}) == {repr(e)!r}"  # -0.0 vs 0.0; nan == nan
    return f"type({v}) is {s.literal(type(e))} and {v} == {s.literal(e)}"


def _same_keys(keys: str, each: str, expected: list, s: GuardScope) -> str:
    """``list(keys) == [...]``: ``keys`` lists the dict's keys, ``each`` iterates over them."""
    literals = ", ".join(s.literal(k) for k in expected)  # an Enum key: bound to a name
    check = f"list({keys}) == [{literals}]"
    # a tensor key first by identity: `==` of two tensors is a tensor, not an answer (the list
    # compare below then meets the same tensor, which it takes by `is`)
    tensors = [f"list({keys})[{i}] is {s.literal(k)}" for i, k in enumerate(expected)
               if isinstance(k, torch.Tensor)]
    if tensors:
        check = " and ".join([f"len({keys}) == {len(expected)}", *tensors, check])
    if any(type(k) is not str for k in expected):  # 1 == 1.0 == True == E.ONE: types too
        types = ", ".join(s.literal(type(k)) for k in expected)
        check += f" and [type(k) for k in {each}] == [{types}]"
    return check


def _dict_keys(g: Guard, s: GuardScope) -> str:
    return f"type({g.name}) is dict and " + _same_keys(f"{g.name}.keys()", g.name, g.expected, s)


def _user_dict_keys(g: Guard, s: GuardScope) -> str:
    """dict.keys: the class may override keys() and __iter__."""
    cls, keys = g.expected
    return (f"type({g.name}) is {s.literal(cls)} and "
            + _same_keys(f"dict.keys({g.name})", f"dict.keys({g.name})", keys, s))


GUARD_CODEGEN: dict[GuardKind, Callable[[Guard, GuardScope], str]] = {
    GuardKind.TENSOR_MATCH: _tensor_match,
    GuardKind.TYPE_MATCH: lambda g, s: f"type({g.name}) is {s.literal(g.expected)}",
    GuardKind.ID_MATCH: lambda g, s: f"id({g.name}) == {id(g.expected)}",
    GuardKind.EQUALS_MATCH: _equals_match,
    GuardKind.LENGTH_CHECK: lambda g, s: (f"type({g.name}) is {s.literal(g.expected[0])} "
                                          f"and len({g.name}) == {g.expected[1]}"),
    GuardKind.DICT_KEYS: lambda g, s: _dict_keys(g, s),
    GuardKind.USER_DICT_KEYS: _user_dict_keys,
    GuardKind.GRAD_MODE: lambda g, s: ("torch.is_grad_enabled()" if g.expected
                                       else "not torch.is_grad_enabled()"),
    GuardKind.DEFAULT_DTYPE: lambda g, s: f"torch.get_default_dtype() == {s.literal(g.expected)}",
    GuardKind.GLOBAL_STATE: lambda g, s: (
        f"({', '.join(GLOBAL_STATE)}) == ({', '.join(s.literal(v) for v in g.expected)})"),
    GuardKind.SHAPE_ENV: lambda g, s: g.expected,  # already Python: ShapeEnv.render_guards()
    GuardKind.HASATTR: lambda g, s: (f"{'' if g.expected[1] else 'not '}"
                                     f"hasattr({g.name}, {g.expected[0]!r})"),
    GuardKind.NN_MODULE_CALL: lambda g, s: (
        f"type({g.name}) is {s.literal(g.expected)} and not ({g.name}._forward_hooks or "
        f"{g.name}._forward_pre_hooks or {g.name}._backward_hooks) "
        f"and 'forward' not in {g.name}.__dict__"),
    GuardKind.DUPLICATE_INPUT: lambda g, s: f"{g.name} is {g.expected.name()}",
    GuardKind.NO_TENSOR_ALIASING: lambda g, s: (
        f"len({{{', '.join(f'id({src.name()})' for src in g.expected)}}}) == {len(g.expected)}"),
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


def _comment(g: Guard) -> str:
    what = {GuardKind.ID_MATCH: getattr(g.expected, "__qualname__", type(g.expected).__name__)}
    extra = f" {what[g.kind]}" if g.kind in what else ""
    line = f" ({g.user_line})" if g.user_line else ""
    return "  # " + comment(f"{g.kind.value}{extra}{line}")  # names from user code: one line


class GuardFn:
    """The compiled check of one cache entry: ``guard_fn(L, G) -> bool``, with its source."""

    def __init__(self, guards: list[Guard], name: str = "guard"):
        self.guards, self.name = dedupe(expand_shape_env(guards)), name
        self.scope = GuardScope()
        lines = [GUARD_CODEGEN[g.kind](g, self.scope) for g in self.guards]
        body = "\n".join(f"        {'and ' if i else ''}{line}{_comment(g)}"
                         for i, (line, g) in enumerate(zip(lines, self.guards)))
        self.source = f"def {name}(L, G):\n    return (\n{body or '        True'}\n    )\n"
        runs = batch_tensor_matches(self.guards, lines, self.scope)
        self.runs = (f"def {name}(L, G):\n    return (\n        "  # what runs: ``.runs``
                     + "\n        and ".join(runs or ["True"]) + "\n    )\n")
        self.fn = compile_listing(self.runs, name, self.scope.names)
        self._lines = lines
        self._checks: list[Callable] | None = None  # one lambda per guard, built on first miss

    def __call__(self, L: dict, G: dict) -> bool:
        return self.fn(L, G)

    def failure_reason(self, L: dict, G: dict) -> str | None:
        """Which guard rejects these locals/globals, in words: the recompile reason."""
        if self._checks is None:
            namespace = dict(self.scope.names)
            self._checks = [eval(f"lambda L, G: {line}", namespace) for line in self._lines]
        for g, line, check in zip(self.guards, self._lines, self._checks):
            try:
                ok = bool(check(L, G))
            except Exception as e:  # e.g. a global that no longer exists
                return f"{line}  ({type(e).__name__}: {e})"
            if not ok:
                if g.kind not in GUARD_REASONS:
                    return line
                value = eval(g.name, dict(self.scope.names), {"L": L, "G": G}) if g.source else None
                return GUARD_REASONS[g.kind](g, value)
        return None

    def __repr__(self) -> str:
        return self.source


def batch_tensor_matches(guards: list[Guard], lines: list[str], scope: GuardScope) -> list[str]:
    """The conditions the guard function runs: ``lines``, with the TENSOR_MATCH lines replaced
    by one call of torch's C++ tensor check (``TensorGuards``, real Dynamo's ``___check_tensors``
    before its guard tree), at the place of the last of them. A TENSOR_MATCH is the most
    common guard (every input, every parameter of a module) and, in Python, six reads and
    compares a tensor: ~0.6 us each, ~5 us for a 4-layer MLP's nine tensors against ~0.8 us in
    one C call. The C check is stricter than the lines: it also compares dispatch keys, with
    the thread's dispatch state applied (under a ``TorchDispatchMode`` every tensor has the
    Python key), so where it says no, the lines decide: ``check(x, w) or (<the lines>)``. The
    function accepts what the listing accepts, fast when nothing changed. A tensor an empty
    tensor of its spec cannot stand for (a subclass...) keeps its line in place."""
    batched = {i: twin for i, g in enumerate(guards)
               if g.kind is GuardKind.TENSOR_MATCH and (twin := _twin(g.expected)) is not None}
    if not batched:
        return lines
    specs = [guards[i].expected for i in batched]
    check = TensorGuards(*batched.values(), dynamic_dims_sizes=[list(s.shape) for s in specs],
                         dynamic_dims_strides=[list(s.stride) for s in specs])
    names = ", ".join(guards[i].name for i in batched)
    slow = " and ".join(f"({lines[i]})" for i in batched)
    call = f"({scope.ref(check.check, 'check_tensors')}({names}) or ({slow}))"
    last = max(batched)
    return [call if i == last else line for i, line in enumerate(lines)
            if i not in batched or i == last]


def _twin(spec: Any) -> torch.Tensor | None:
    """An empty tensor standing for ``spec`` in ``TensorGuards`` (which reads its type, dispatch
    keys, dtype, device and requires_grad), or None where it would not have the example's keys."""
    if not isinstance(spec, TensorSpec) or spec.dispatch_keys is None or TensorGuards is None \
            or spec.type not in (torch.Tensor, torch.nn.Parameter):
        return None
    try:
        twin = torch.empty(0, dtype=spec.dtype, device=spec.device)
        twin = torch.nn.Parameter(twin, spec.requires_grad) if spec.type is torch.nn.Parameter \
            else twin.requires_grad_(spec.requires_grad)
    except RuntimeError:  # a device this process cannot allocate on
        return None
    return twin if torch._C._dispatch_keys(twin) == spec.dispatch_keys else None


def expand_shape_env(guards: list[Guard]) -> list[Guard]:
    """A SHAPE_ENV guard holding the frame's ShapeEnv stands for every relation it recorded
    (known only once tracing is over): one guard per relation, each with its user line."""
    out, shape = [], []
    for g in guards:
        if g.kind is GuardKind.SHAPE_ENV and isinstance(g.expected, ShapeEnv):
            shape += [Guard(None, GuardKind.SHAPE_ENV, PythonPrinter().doprint(sg.expr), sg.user_line)
                      for sg in g.expected.produce_guards()]
        else:
            out.append(g)
    return out + shape  # last: they read sizes of inputs the guards before checked are tensors


def dedupe(guards: list[Guard]) -> list[Guard]:
    """Keep the first guard of each (source, kind): reading ``x`` twice guards it once."""
    seen, out = set(), []
    for g in guards:
        key = (g.name, g.kind, g.expected if g.kind is GuardKind.SHAPE_ENV else None)
        if key not in seen:
            seen.add(key)
            out.append(g)
    return out


def build_guard_fn(guards: list[Guard], name: str = "guard") -> GuardFn:
    return GuardFn(guards, name)
