"""Mutations of pre-existing Python objects, recorded while tracing and replayed after the graph
(mini version of torch/_dynamo/side_effects.py).

A graph only computes tensors. When the traced code also *mutates* objects that existed before
the call (``LOG.append(y)``, ``d["k"] = y``, ``self.count += 1``, ``global N``, a ``nonlocal``
of an outer function), tracing keeps the new state in the trackers, so the rest of the trace
reads it, and records each mutation here. The transformed function then replays them, in
program order, right after the graph has produced the values they need::

    def __transformed_code_0_f(x, xs):
        graph_out_0 = __compiled_fn_1(x)
        __return_value = graph_out_0[1]
        xs.append(graph_out_0[0])                 # the side effects, replayed
        OBJ.count = 3
        return __return_value

So such programs stay ONE graph, as in real Dynamo. At a graph break the pending mutations are
replayed before the instruction that runs natively, so it (a ``print(LOG)``) sees them.

A hook registered on a tensor from outside the frame (``x.register_hook(fn)`` on an input or
a parameter) is a side effect too: the graph's tensors have no autograd node of their own, but
the input is the caller's real tensor, so the registration is replayed on it right after the
graph, before anything else (real Dynamo's ``codegen_hooks``), and before any backward can run::

        graph_out_0 = __compiled_fn_1(x)
        __hook_handle_0 = x.register_hook(lambda grad: grad * 2)   # (the lambda, rebuilt)

A handle removed inside the frame (``handle.remove()``) drops its registration instead.

Two rules keep replay correct:
- one tracker per mutable object: re-reading ``LOG`` (another LOAD_GLOBAL) must see the
  mutations so far, so the builder asks :meth:`SideEffects.tracked` before wrapping a list or
  dict again. The same object reached through two different sources gets the same tracker and
  a guard that the two stay one object (``L['b'] is L['a']``, real Dynamo's DUPLICATE_INPUT).
- values read from outside (``xs[0]``, ``OBJ.w``) are copied into a temporary *before* any
  mutation is replayed, so a replayed store cannot change what a later line reads.
"""

from __future__ import annotations

import collections
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable

from ..names import attr, is_identifier
from .exc import unimplemented
from .source import AttrSource, GetItemSource, GlobalSource, LocalSource, Source

_temp_ids = itertools.count()

# How each kind of mutation is written in the transformed function's Python.
DELETED = object()  # what load_attr answers for an attribute the trace deleted

REPLAY = {
    "method": lambda target, m, args: f"{attr(target, m.name)}({', '.join(args)})",
    "setitem": lambda target, m, args: f"{target}[{args[0]}] = {args[1]}",
    "delitem": lambda target, m, args: f"del {target}[{args[0]}]",
    "setattr": lambda target, m, args: (f"{target}.{m.name} = {args[0]}" if is_identifier(m.name)
                                        else f"setattr({target}, {m.name!r}, {args[0]})"),
    "object_setattr": lambda target, m, args:  # past the class's __setattr__, traced already
        f"object.__setattr__({target}, {m.name!r}, {args[0]})",
    "delattr": lambda target, m, args: (f"del {target}.{m.name}" if is_identifier(m.name)
                                        else f"delattr({target}, {m.name!r})"),
    "object_delattr": lambda target, m, args:  # past the class's __delattr__, traced already
        f"object.__delattr__({target}, {m.name!r})",
    "instance_dict_setitem": lambda target, m, args:  # obj.__dict__[k] = v: past descriptors
        f"{target}.__dict__[{m.name!r}] = {args[0]}",
    "instance_dict_delitem": lambda target, m, args: f"del {target}.__dict__[{m.name!r}]",
    "global": lambda target, m, args: f"globals()[{m.name!r}] = {args[0]}",
    "cell": lambda target, m, args: f"{target}.cell_contents = {args[0]}",
}
# Container methods that are replayed as statements rather than method calls (readability).
STATEMENT_FORMS = {"__setitem__": "setitem", "__delitem__": "delitem"}


@dataclass
class Mutation:
    kind: str  # a key of REPLAY
    target: Any  # the mutated object's tracker, or the real object (cells), or None (globals)
    name: str  # method / attribute / global name
    args: list = field(default_factory=list)  # VariableTrackers
    kwargs: dict = field(default_factory=dict)


@dataclass
class TensorHook:
    """One hook registered in the frame on a tensor from outside it."""
    source: Source  # where the transformed code reads the tensor
    method: str  # "register_hook", "register_post_accumulate_grad_hook"
    hook: Any  # the hook's tracker (a function, a lambda made in the frame, a partial)
    handle: Any  # the RemovableHandleVariable the call returned


def reads_state(vt) -> bool:
    """Whether rebuilding ``vt`` reads something a replayed mutation could change: a value
    fetched through a global, an attribute or an item (a plain argument name is stable)."""
    if vt.source is not None and not isinstance(vt.source, LocalSource):
        return True
    items = getattr(vt, "items", None)
    children = items.values() if isinstance(items, dict) else items if isinstance(items, list) \
        else ()
    return any(reads_state(c) for c in children if hasattr(c, "source"))


# containers whose ``c[k] = v`` does nothing but store (no user ``__setitem__``)
PLAIN_SETITEM = (dict.__setitem__, list.__setitem__, collections.OrderedDict.__setitem__)


def _puts_back(m: Mutation) -> bool:
    """Is ``m`` a store ``c[k] = v`` into a plain container of the value read from ``c[k]``?"""
    target, (key, value) = m.target, m.args
    source = getattr(target, "source", None)
    if source is None or getattr(target.python_type(), "__setitem__", None) not in PLAIN_SETITEM:
        return False
    if not key.is_python_constant():
        return False
    return getattr(value, "source", None) == GetItemSource(source, key.as_python_constant())


class SideEffects:
    """The mutations of one frame's trace (owned by its OutputGraph)."""

    def __init__(self) -> None:
        self.mutations: list[Mutation] = []
        self._tracked: dict[int, tuple[Any, list]] = {}  # id(obj) -> (obj, its trackers)
        self._attrs: dict[int, dict[str, Any]] = {}  # id(obj) -> {attr: stored tracker}
        self._globals: dict[tuple[int, str], Any] = {}  # (id(f_globals), name) -> tracker
        self._cells: dict[int, Any] = {}  # id(cell) -> tracker
        self._keepalive: list[Any] = []  # objects keyed by id() must outlive the trace
        self.tensor_hooks: dict[int, TensorHook] = {}  # handle index -> registration
        # hooks traced into the graph (variables/hooks.py): each checks, when the frame's code
        # is written, that nothing it read has changed since (raising Unsupported)
        self.hook_checks: list[Callable[..., None]] = []

    def __bool__(self) -> bool:  # (hooks are not in it: registering one changes no state the
        return bool(self.mutations)  # code reads, so values need no copy before it)

    # -- one tracker per mutable object -------------------------------------------------------
    def tracked(self, value: Any, source: Source | None) -> Any:
        """The tracker already standing for ``value``, reached again through ``source``: the
        same object under another name (a closure cell shared by two functions, one list
        passed twice) is the same tracker, so each name sees the other's mutations; the
        caller guards that the two names stay one object (``DUPLICATE_INPUT``)."""
        hit = self._tracked.get(id(value))
        if hit is None or hit[0] is not value:
            return None
        return hit[1][0]

    def track(self, value: Any, vt: Any) -> None:
        """``vt`` stands for ``value``."""
        if id(value) not in self._tracked:
            self._tracked[id(value)] = (value, [])
            self._keepalive.append(value)
        self._tracked[id(value)][1].append(vt)

    def _check(self, vt, what: str) -> None:
        if vt.source is None:
            unimplemented(f"{what} on an object without a source")

    # -- recording ------------------------------------------------------------------------------
    def mutate_container(self, vt, name: str, args: list, kwargs: dict) -> None:
        """``list.append`` / ``dict.__setitem__`` / ... on a list or dict from outside."""
        self._check(vt, f"{type(vt).__name__}.{name}")
        self.mutations.append(Mutation(STATEMENT_FORMS.get(name, "method"), vt, name,
                                       list(args), dict(kwargs)))

    def store_attr(self, obj_vt, obj: Any, name: str, value_vt, kind: str = "setattr") -> None:
        """``obj.name = value``, replayed as ``kind`` (a key of REPLAY)."""
        self._check(obj_vt, f"setting .{name}")
        self._keepalive.append(obj)
        self._attrs.setdefault(id(obj), {})[name] = value_vt
        self.mutations.append(Mutation(kind, obj_vt, name, [value_vt]))

    def delete_attr(self, obj_vt, obj: Any, name: str, kind: str = "delattr") -> bool:
        """``del obj.name``, replayed as ``kind``; False (nothing recorded) when there is no
        such attribute."""
        stored = self.load_attr(obj, name)
        if stored is DELETED or (stored is None and not hasattr(obj, name)):
            return False
        self._check(obj_vt, f"deleting .{name}")
        self._keepalive.append(obj)
        self._attrs.setdefault(id(obj), {})[name] = DELETED
        self.mutations.append(Mutation(kind, obj_vt, name))
        return True

    def stores_attrs_of(self, obj: Any) -> bool:
        """Has the trace set or deleted an attribute of ``obj`` (not yet in its ``__dict__``)?"""
        return id(obj) in self._attrs

    def stored_names(self, obj: Any) -> list[str]:
        """The attributes of ``obj`` the trace has set or deleted, in the order first touched."""
        return list(self._attrs.get(id(obj), ()))

    def load_attr(self, obj: Any, name: str) -> Any:
        """The tracker stored as ``obj.name`` earlier in the trace, ``DELETED``, or None."""
        return self._attrs.get(id(obj), {}).get(name)

    def store_global(self, f_globals: dict, name: str, source: Source | None, value_vt) -> None:
        if source is None:
            unimplemented(f"assigning the global {name!r} of a module the frame can't name")
        self._globals[(id(f_globals), name)] = value_vt
        kind = "global" if isinstance(source, GlobalSource) else "setattr"
        target = None if kind == "global" else source  # another module: mod.name = ...
        self.mutations.append(Mutation(kind, target, name, [value_vt]))

    def load_global(self, f_globals: dict, name: str) -> Any:
        return self._globals.get((id(f_globals), name))

    def store_cell(self, cell: Any, value_vt) -> None:
        self._keepalive.append(cell)
        self._cells[id(cell)] = value_vt
        self.mutations.append(Mutation("cell", cell, "cell_contents", [value_vt]))

    def load_cell(self, cell: Any) -> Any:
        return self._cells.get(id(cell))

    def register_hook(self, hook: TensorHook) -> int:
        """``tensor.register_hook(fn)`` on a tensor from outside the frame: replayed after the
        graph (:meth:`codegen_hooks`). Returns the index ``remove_hook`` takes."""
        idx = max(self.tensor_hooks, default=-1) + 1
        self.tensor_hooks[idx] = hook
        return idx

    def remove_hook(self, idx: int) -> None:
        """``handle.remove()`` in the frame: the hook is never registered."""
        del self.tensor_hooks[idx]

    # -- replay -------------------------------------------------------------------------------
    def values(self) -> list:
        """The trackers the replay rebuilds (for ``PyCodegen.share_repeated``)."""
        hooks = [v for h in self.tensor_hooks.values() for v in (h.hook, h.handle)]
        return [v for m in self.mutations for v in [*m.args, *m.kwargs.values()]] + hooks

    def codegen_hooks(self, codegen, at_break: bool = False) -> None:
        """Register the pending hooks, into the lines that follow the graph call
        (``codegen.prelude``): each handle is then the temporary its registration returned,
        for the replayed mutations and the return value that name it. Call it before anything
        is rebuilt. (First, the hooks traced into the graph check their values.)"""
        for check in self.hook_checks:
            check(at_break=at_break)
        for hook in self.tensor_hooks.values():
            name = f"__hook_handle_{next(_temp_ids)}"
            method = attr(hook.source.expr(), hook.method)
            codegen.prelude.append(f"{name} = {method}({codegen(hook.hook)})")
            codegen.bind(hook.handle, name)

    def unchanged_stores(self) -> set[int]:
        """The stores that would put back what is there: ``d[k] = v`` where ``v`` was read from
        ``d[k]`` and nothing mutated ``d`` before (torch.optim's ``state['momentum_buffer'] =
        buf`` for the buffer it read from there and updated in place, once per parameter and
        step). On a plain dict or list such a store changes nothing: it is not replayed.
        (A store after another mutation of the container is: it may undo that mutation.)"""
        touched, unchanged = set(), set()
        for m in self.mutations:
            if m.kind == "setitem" and id(m.target) not in touched and _puts_back(m):
                unchanged.add(id(m))
            touched.add(id(m.target))
        return unchanged

    def codegen(self, codegen) -> tuple[list[str], list[str]]:
        """(temporaries, replay lines): Python statements that apply every mutation in order.

        Call it before the graph's outputs are fixed: the values it rebuilds may be tensors
        the graph must return."""
        temps, lines = [], []
        unchanged = self.unchanged_stores()

        def value(vt) -> str:
            expr = codegen(vt)
            if reads_state(vt):  # read before any store is replayed
                name = f"__side_effect_value_{next(_temp_ids)}"
                temps.append(f"{name} = {expr}")
                return name
            return expr

        mutated: list[Source] = []  # the sources of the objects mutated so far, in order
        bound: dict[int, str] = {}  # id(target tracker) -> its temporary

        def target_of(m: Mutation) -> str:
            """The mutated object. Reached through an object an earlier line mutated
            (``kwargs['cache'].layers[0]`` after ``kwargs.pop('cache')``, transformers'
            renaming of a deprecated keyword), its path is read into a temporary before any
            mutation is replayed: the path may no longer lead to it by then."""
            expr = m.target.source.expr()
            if id(m.target) in bound:
                return bound[id(m.target)]
            if any(base in mutated for base in _bases(m.target.source)):
                bound[id(m.target)] = f"__side_effect_target_{next(_temp_ids)}"
                temps.append(f"{bound[id(m.target)]} = {expr}")
                return bound[id(m.target)]
            return expr

        for m in self.mutations:
            if id(m) in unchanged:
                continue
            if m.kind == "global":
                target = ""
            elif m.kind == "cell":
                target = codegen.install_global("cell", m.target)
            elif isinstance(m.target, AttrSource):  # a global of another module: module.name
                target = m.target.base.expr()
            else:
                target = target_of(m)
                mutated.append(m.target.source)
            args = [value(a) for a in m.args] + [f"{k}={value(v)}" for k, v in m.kwargs.items()]
            lines.append(REPLAY[m.kind](target, m, args))
        return temps, lines


def _bases(source: Source) -> list[Source]:
    """The sources a chained source reads through: ``L['a'].b[0]`` -> ``L['a'].b``, ``L['a']``."""
    out = []
    while hasattr(source, "base"):
        source = source.base
        out.append(source)
    return out
