"""The guard tree: how a cache entry's guards run (mini version of real Dynamo's guard managers,
``GuardManager`` / ``RootGuardManager`` in torch/_dynamo/guards.py, evaluated in C++ by
torch/csrc/dynamo/guards.cpp).

A frame's guards read their values through access paths that share prefixes:
``L['self']._modules['0']._parameters['weight']`` and ``L['self']._modules['0'].in_features``
both go through ``L['self']._modules['0']``. Checked as the flat listing
(``MINICOMPILE_LOGS=guards``), each guard walks its path from the frame again. The tree has one
node per distinct source, a ``GuardManager``: it reads its value once, from its parent's value,
runs the checks on that value (its leaf guards), then its children. The function generated from
the tree (``GuardFn.runs``) holds each node's value in a local::

    def guard_f(L, G):
        if not (torch.is_grad_enabled()):                   # GRAD_MODE
            return False
        self = L['self']
        if not (id(self) == 140310...                      # ID_MATCH MLP (f.py:3 in f)
                and self.training is True):                # EQUALS_MATCH (f.py:4 in f)
            return False
        self_0 = self._modules['0']
        ...
        # TENSOR_MATCH of 9 tensors: one call of torch's C++ check ...
        if not (___check_tensors_3(x, self_0_weight, ...) or (...)):
            return False
        return True

so its cost grows with the number of distinct objects guarded, not with the length of their
paths. Within a node, a check two guards share is made once (an NN_MODULE_CALL's class test and
a TYPE_MATCH's), and one that a node's identity check implies is dropped (``implied_by_identity``).
The checks that read several sources (tensor aliasing, duplicate inputs, shape relations) run last,
once every source is read. Nothing is dropped that could fail on its own: the function accepts
exactly what the listing accepts (the listing stays the readable statement of the guards, and
the recompile reason is worded from it: ``GuardFn.failure_reason``).
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
import types
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from ..names import Namespace, comment
from .guards import (GUARD_CODEGEN, GUARD_REASONS, Guard, GuardKind, GuardScope, TensorSpec,
                     dedupe, expand_shape_env, object_name)
from .source import ChainedSource, Source, graph_input_name, keys_list

try:  # torch's C++ tensor check (torch/csrc/dynamo/guards.cpp): a faster path, not needed
    from torch._C._dynamo.guards import TensorGuards
except ImportError:  # pragma: no cover
    TensorGuards = None

# guards that read several sources: checked once every node's value is read
RELATIONAL = (GuardKind.DUPLICATE_INPUT, GuardKind.NO_TENSOR_ALIASING, GuardKind.SHAPE_ENV)
_IMMUTABLETYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: CPython refuses __class__ assignment


@dataclass
class GuardManager:
    """One node of the tree: the value at ``source``, held in the local ``var``; the guards on
    that value, and the nodes of the values read from it."""

    source: Source | None  # None: the root (the global state)
    var: str
    guards: list[Guard] = field(default_factory=list)
    children: list[GuardManager] = field(default_factory=list)


class RootGuardManager(GuardManager):
    """The root: guards on global state, the nodes of the frame's sources (locals and globals
    are its children), and the guards across sources (``relational``)."""

    def __init__(self, guards: list[Guard]):
        super().__init__(None, "")
        self.managers: dict[Source, GuardManager] = {}
        self.relational: list[Guard] = []
        self.shared: set[Source] = set()  # read by a guard across sources: kept in a local
        self.same_as: dict[Source, Source] = {}  # DUPLICATE_INPUT: a source is another's object
        # locals are named after their paths, never after a name the checks use
        self._names = Namespace(reserved=[*dir(builtins), "L", "G", "torch"])
        for g in guards:
            if g.kind in RELATIONAL:
                self.relational.append(g)
                for source in sources_read(g):
                    self.manager(source)  # read in the tree, used at the end
                    self.shared.add(source)
                if g.kind is GuardKind.DUPLICATE_INPUT:
                    self.same_as[g.source] = g.expected
            else:
                (self if g.source is None else self.manager(g.source)).guards.append(g)

    def manager(self, source: Source) -> GuardManager:
        """The node of ``source``, made (with the nodes of its base) on first use."""
        node = self.managers.get(source)
        if node is None:
            parent = self.manager(source.base) if isinstance(source, ChainedSource) else self
            node = GuardManager(source, self._names(source.name(), local_hint(source)))
            parent.children.append(node)
            self.managers[source] = node
        return node

    def local(self, name: str, hint: str) -> str:
        """A local of the guard function for ``name``, other than every source's."""
        return self._names(name, hint)

    def identity(self, source: Source) -> Any:
        """A key two sources share where the guards prove they hold one object: the same
        ID_MATCH, or a DUPLICATE_INPUT between them (a tied weight: a model's output layer
        and its embedding hold one Parameter)."""
        seen = {source}
        while source in self.same_as and self.same_as[source] not in seen:
            source = self.same_as[source]
            seen.add(source)
        ids = [g.expected for g in self.managers[source].guards if g.kind is GuardKind.ID_MATCH]
        return ("id", id(ids[0])) if ids else ("source", source)

    def codegen(self, name: str, names: dict[str, Any]) -> GuardCodegen:
        """The guard function: each node's value read into its local, its checks, then its
        children's; the batched tensor check and the guards across sources last."""
        code = GuardCodegen(self, GuardScope(names, {s: n.var for s, n in self.managers.items()}))
        code.function(name)
        return code


class GuardCodegen:
    """Writes the guard function of a tree twice, line for line: to be read (``text``: each
    guard's first check with its kind and user line as a comment) and to run (``runnable``, its
    checks written by ``GuardScope.runnable_scope``): no comments, ``v is ___obj_Linear_5``
    for ``id(v) == 1402...`` (one compare instead of a call), and the attributes of ``torch``
    the checks name, ``torch.is_grad_enabled``, ``torch.float32``, bound to globals once, in
    ``bound`` (a module attribute lookup costs about 20 ns; a flag that may change,
    ``torch.backends.cudnn.enabled``, stays read)."""

    def __init__(self, root: RootGuardManager, scope: GuardScope):
        self.root, self.scope, self.runnable_scope = root, scope, scope.runnable_scope()
        self.text: list[str] = []
        self.runnable: list[str] = []
        self.bound: dict[str, Any] = {}
        # TENSOR_MATCH guards torch's C++ check runs, in one call at the end, by object
        self.tensors: dict[Any, tuple[Guard, torch.Tensor]] = {}

    def function(self, name: str) -> None:
        root = self.root
        self.line(f"def {name}(L, G):")
        self.checks(root.guards)
        for child in root.children:
            self.emit(child, child.source.name())
        self.tensor_checks()
        self.checks(root.relational)
        self.line("    return True")

    def line(self, text: str) -> None:
        self.text.append(text)
        self.runnable.append(text)

    def checks(self, guards: list[Guard]) -> None:
        """The checks of ``guards``, folded the same way in both texts (each text's checks
        are written in one way, so the same checks fold together in both)."""
        self.text += checks_block(fold(guards, self.scope), guard_comment)
        self.runnable += checks_block([(g, [bind_torch(p, self.bound) for p in parts])
                                       for g, parts in fold(guards, self.runnable_scope)])

    def emit(self, node: GuardManager, read: str) -> None:
        """``node``'s value read (``read``: from its parent's local) into its local, its checks,
        then its children's, depth first, in the order they were met. A node with no checks and
        one child (``L['m']._modules`` on the way to ``L['m']._modules['lin']``) is not kept in
        a local: its child reads through it."""
        if not node.guards and len(node.children) == 1 and node.source not in self.root.shared:
            child = node.children[0]
            return self.emit(child, child.source.read(read))
        self.line(f"    {node.var} = {read}")
        same = self.unchanged_object(node)
        if same is not None:  # the tuple of constants it held when traced: nothing below differs
            start = len(self.text), len(self.runnable)
        self.checks([g for g in node.guards if not self.batch_tensor(g)])
        # a dict whose items are read by their key's position (an optimizer's state, keyed by
        # the parameters): its keys listed once, not once per item
        keyed = [c for c in node.children if c.source.by_position()]
        keys = None
        if len(keyed) > 1:
            keys = self.root.local(f"{node.source.name()} keys", f"{node.var}_keys")
            self.line(f"    {keys} = {keys_list(node.var)}")
        for child in node.children:
            self.emit(child, child.source.read_keyed(node.var, keys) if keys and child in keyed
                      else child.source.read(node.var))
        if same is not None:
            self.skip_when_same(node.var, same, *start)

    def unchanged_object(self, node: GuardManager) -> Any:
        """The object ``node`` held when traced, where holding it again passes every check of
        the node and of the nodes below it: a tuple of constants (``deeply_immutable``, carried
        by its LENGTH_CHECK), none of whose nodes is read again at the end."""
        objects = [g.expected[2] for g in node.guards
                   if g.kind is GuardKind.LENGTH_CHECK and len(g.expected) == 3]
        if not objects or any(n.source in self.root.shared for n in subtree(node)):
            return None
        return objects[0]

    def skip_when_same(self, var: str, obj: Any, text_start: int, runnable_start: int) -> None:
        """Put the lines written since the starts under ``if var is not obj:`` (a conv's
        ``stride`` is the same tuple call after call: one identity test instead of its type,
        length and each element's type and value)."""
        for lines, start, test in (
                (self.text, text_start, f"id({var}) != {id(obj)}"),
                (self.runnable, runnable_start, f"{var} is not {self.scope.ref(obj, 'tuple')}")):
            lines[start:] = [f"    if {test}:", *("    " + line for line in lines[start:])]

    def batch_tensor(self, g: Guard) -> bool:
        """Whether a guard joins the one C call of the tensor checks (or is implied by a tensor
        there: the same object under another path, with the same spec)."""
        if g.kind is not GuardKind.TENSOR_MATCH or (t := twin(g)) is None:
            return False
        key = self.root.identity(g.source)
        if key not in self.tensors:
            self.tensors[key] = (g, t)
        # one object seen twice: torch's check refuses aliased arguments, and one is enough
        return self.tensors[key][0].expected == g.expected

    def tensor_checks(self) -> None:
        """The TENSOR_MATCH guards as one call of torch's C++ tensor check (``TensorGuards``,
        real Dynamo's ``___check_tensors`` before its guard tree). A TENSOR_MATCH is the most
        common guard (every input, every parameter of a module) and, in Python, six reads and
        compares: ~0.6 us a tensor, against ~0.07 us in the C call. The C check is stricter than
        the Python checks: it also compares dispatch keys, with the thread's dispatch state
        applied (under a ``TorchDispatchMode`` every tensor has the Python key), so where it
        says no, the Python checks decide: ``check(x, w) or (<x's checks> and <w's checks>)``
        """
        if not self.tensors:
            return
        guards, twins = zip(*self.tensors.values())
        check = TensorGuards(*twins, dynamic_dims_sizes=[list(g.expected.shape) for g in guards],
                             dynamic_dims_strides=[list(g.expected.stride) for g in guards])
        values = ", ".join(self.scope.value(g.source) for g in guards)
        call = self.scope.ref(check.check, "check_tensors")
        for lines, scope in ((self.text, self.scope), (self.runnable, self.runnable_scope)):
            python = "\n            and ".join(
                f"({' and '.join(GUARD_CODEGEN[g.kind](g, scope))})" for g in guards)
            lines += [f"    if not ({call}({values})\n            or {python}):",
                      "        return False"]
        self.text.insert(-2, f"    # TENSOR_MATCH of {len(guards)} tensor{'s' * (len(guards) > 1)}"
                         ": one call of torch's C++ check; where it says no, the Python checks "
                         "decide")


def subtree(node: GuardManager) -> list[GuardManager]:
    return [node, *(n for child in node.children for n in subtree(child))]


def sources_read(g: Guard) -> list[Source]:
    """The sources a guard across sources reads (a shape relation reads sizes by name)."""
    if g.kind is GuardKind.DUPLICATE_INPUT:
        return [g.source, g.expected]
    if g.kind is GuardKind.NO_TENSOR_ALIASING:
        return list(g.expected)
    return []


def local_hint(source: Source) -> str:
    """What the local holding ``source`` looks like: its path, ``model_vit_embeddings`` for
    ``L['model']._modules['vit']._modules['embeddings']`` (``G['__import_a_dot_b'].f``, another
    module's global, reads ``a_b_f``)."""
    hint = re.sub(r"^[LG]_", "", graph_input_name(source).strip("_"))
    hint = re.sub("_+", "_", hint.replace("__import_", "").replace("_dot_", "_"))
    return hint[-60:].strip("_").lstrip("0123456789") or "value"


def fold(guards: list[Guard], scope: GuardScope) -> list[tuple[Guard, list[str]]]:
    """The checks of guards on one value, each once: identity checks first (cheap, and what
    they imply is then dropped), then the others in order, less the checks already made."""
    made: set[str] = set()
    out = []
    for g in sorted(guards, key=lambda g: g.kind is not GuardKind.ID_MATCH):
        parts = [p for p in GUARD_CODEGEN[g.kind](g, scope) if p not in made]
        made.update(parts)
        if g.kind is GuardKind.ID_MATCH:
            made |= implied_by_identity(g, scope)
        if parts:
            out.append((g, parts))
    return out


def implied_by_identity(g: Guard, scope: GuardScope) -> set[str]:
    """What ``id(v) == id(obj)`` makes redundant: ``type(v) is type(obj)`` where Python cannot
    change the class of ``obj`` (CPython refuses ``obj.__class__ = ...`` on an instance of an
    immutable type: functions, classes of metaclass ``type``, ints, tuples; a module's class may
    change, as may any instance of a class defined in Python, an nn.Module's, so their type test
    stays); and, for an int, str, float, bool or None, its value (it cannot change at all).
    Attributes of ``obj`` are never implied: they can change while ``obj`` stays."""
    obj, v = g.expected, scope.value(g.source)
    cls = type(obj)
    implied = set()
    if cls.__flags__ & _IMMUTABLETYPE and not issubclass(cls, types.ModuleType):
        implied.add(f"type({v}) is {scope.literal(cls)}")
        if cls in (int, str, float, bool, type(None)):
            implied.update(GUARD_CODEGEN[GuardKind.EQUALS_MATCH](
                Guard(g.source, GuardKind.EQUALS_MATCH, obj), scope))
    return implied


def checks_block(checks: list[tuple[Guard, list[str]]],
                 note: Callable[[Guard], str] = lambda g: "") -> list[str]:
    """``if not (a and b ...): return False``, one check a line; ``note``: the comment after
    each guard's first check."""
    rows = []  # [code, comment]
    for g, parts in checks:
        for j, part in enumerate(parts):
            rows.append([f"{'and ' if rows else ''}{part}", note(g) if j == 0 else ""])
    if not rows:
        return []
    rows[-1][0] += "):"
    return [f"{'    if not (' if i == 0 else ' ' * 12}{code}{note}"
            for i, (code, note) in enumerate(rows)] + ["        return False"]


def guard_comment(g: Guard) -> str:
    """``  # ID_MATCH Linear (f.py:3 in f: y = self.lin(x))``: the kind and the user line."""
    extra = f" {object_name(g.expected)}" if g.kind is GuardKind.ID_MATCH else ""
    line = f" ({g.user_line})" if g.user_line else ""
    return "  # " + comment(f"{g.kind.value}{extra}{line}")  # names from user code: one line


def twin(g: Guard) -> torch.Tensor | None:
    """An empty tensor standing for a TENSOR_MATCH's spec in ``TensorGuards`` (which reads its
    type, dispatch keys, dtype, device and requires_grad), or None where it would not have the
    example's keys (a subclass...): that guard is checked in Python, in its place."""
    spec = g.expected
    if not isinstance(spec, TensorSpec) or spec.dispatch_keys is None or TensorGuards is None \
            or spec.type not in (torch.Tensor, torch.nn.Parameter):
        return None
    try:
        t = torch.empty(0, dtype=spec.dtype, device=spec.device)
        t = torch.nn.Parameter(t, spec.requires_grad) if spec.type is torch.nn.Parameter \
            else t.requires_grad_(spec.requires_grad)
    except RuntimeError:  # a device this process cannot allocate on
        return None
    return t if torch._C._dispatch_keys(t) == spec.dispatch_keys else None


# ---- the compiled check of a cache entry -----------------------------------------------------

class GuardFn:
    """The compiled check of one cache entry: ``guard_fn(L, G) -> bool``. Printed, it is the
    listing, one guard a line with its kind and the user line that made it (``source``); what
    runs is the guard tree's function (``runs``)."""

    def __init__(self, guards: list[Guard], name: str = "guard"):
        self.guards, self.name = dedupe(expand_shape_env(guards)), name
        self.scope = GuardScope()
        self._lines = [" and ".join(GUARD_CODEGEN[g.kind](g, self.scope)) for g in self.guards]
        body = "\n".join(f"        {'and ' if i else ''}{line}{guard_comment(g)}"
                         for i, (line, g) in enumerate(zip(self._lines, self.guards)))
        self.source = f"def {name}(L, G):\n    return (\n{body or '        True'}\n    )\n"
        self.tree = RootGuardManager(self.guards)
        code = self.tree.codegen(name, self.scope.names)
        self.runs = "\n".join(code.text) + "\n"  # the guard tree's function, to read
        self.runnable = "\n".join(code.runnable) + "\n"  # ... and as it is compiled
        namespace = {**self.scope.names, **code.bound}
        exec(compile(self.runnable, f"<{name}>", "exec"), namespace)
        self.fn = namespace[name]
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


def build_guard_fn(guards: list[Guard], name: str = "guard") -> GuardFn:
    return GuardFn(guards, name)


@functools.lru_cache(maxsize=4096)
def _bound_torch(check: str) -> tuple[str, tuple[tuple[str, Any], ...]]:
    bound: dict[str, Any] = {}
    tree = _BindTorch(bound).visit(ast.parse(check, mode="eval"))
    return ast.unparse(tree), tuple(bound.items())


def bind_torch(check: str, bound: dict[str, Any]) -> str:
    """``check`` with the attributes of ``torch`` it names that cannot change (a function, a
    class, a dtype) read from globals bound to them, added to ``bound``
    (``torch.float32`` -> ``___torch_float32``). A check naming no ``torch`` is as it is."""
    if "torch." not in check:
        return check
    text, names = _bound_torch(check)
    bound.update(names)
    return text


class _BindTorch(ast.NodeTransformer):
    """``torch.a.b`` -> a global bound to its value, where that value cannot change: a function,
    a class or a dtype (``torch.is_grad_enabled``, ``torch.float32``: a module attribute lookup
    costs about 20 ns). A flag (``torch.backends.cudnn.enabled``) is still read at each call."""

    def __init__(self, bound: dict[str, Any]):
        self.bound = bound

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        parts, inner = [], node
        while isinstance(inner, ast.Attribute):
            parts.append(inner.attr)
            inner = inner.value
        is_torch = isinstance(inner, ast.Name) and inner.id == "torch"
        if not (is_torch and isinstance(node.ctx, ast.Load)):
            return self.generic_visit(node)
        value: Any = torch
        try:
            for attr in reversed(parts):
                value = getattr(value, attr)
        except AttributeError:  # left as written: it fails (or not) when it runs, as listed
            return node
        if not (callable(value) or isinstance(value, (type, torch.dtype))):
            return node  # a value that may change (a flag: torch.backends.cudnn.enabled)
        global_name = "___torch_" + "_".join(reversed(parts))
        self.bound[global_name] = value
        return ast.copy_location(ast.Name(global_name, ast.Load()), node)
