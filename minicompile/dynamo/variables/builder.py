"""Wrap real Python values into VariableTrackers (mirrors torch/_dynamo/variables/builder.py).

``VariableBuilder(tx, source).wrap(value)`` is the one place where a value from outside the
trace (an argument, a global, a closure cell, a module attribute) enters it: it picks the tracker
class from a table and installs the guards that make the trace valid for the next call
(a tensor: TENSOR_MATCH; an int: EQUALS_MATCH; a module or function: ID_MATCH; ...).
``wrap_tensor`` is where a tensor becomes a graph input with a fake example value: dynamic
shapes plug in there. ``SourcelessBuilder`` wraps values made while tracing (no guards), and
``wrap_fx_proxy`` wraps what a graph node produced.
"""

from __future__ import annotations

import enum
import functools
import operator
import types
from typing import Any, Callable

import torch

from ..exc import unimplemented
from ..guards import Guard, GuardKind, TensorSpec, deeply_immutable
from ..source import DictKeySource, GetItemSource, LocalSource, Source, own_keys
from ...shapes.symbolic_shapes import is_symbolic
from .base import VariableTracker
from .builtin import BUILTIN_CALLABLES, BuiltinVariable
from .checkpoint import (CHECKPOINT, CheckpointVariable, is_checkpoint,
                         is_checkpointed_function)
from .constant import ConstantVariable, is_constant
from .dicts import ConstDictVariable, UserDefinedDictVariable
from .generators import CONTEXTMANAGER_CODE, ContextlibDecoratedVariable
from .hashable import HashableTracker, hashed_by_identity
from .functions import (CACHING_DECORATORS, CachingDecoratorVariable, FunctoolsPartialVariable,
                        UserFunctionVariable, UserMethodVariable)
from .lists import (ListVariable, NamedTupleVariable, RangeVariable, SetVariable, SizeVariable,
                    SliceVariable, TupleVariable)
from .misc import GradModeVariable, PythonModuleVariable
from .nn_module import NNModuleVariable, unspecialized_module
from .optimizer import OptimizerVariable
from .symnode import SymNodeVariable, symbolic_size
from .tensor import TensorVariable, check_plain_tensor
from .torch import (AutogradFunctionVariable, TensorMethodVariable, TorchVariable,
                    is_function_apply, is_function_class, is_tensor_method, is_torch_callable)
from .user_defined import UserDefinedObjectVariable


# torch classes whose call the trace understands (others are constants, e.g. for isinstance)
TORCH_CLASSES = (torch.Size, torch.no_grad, torch.enable_grad, torch.set_grad_enabled,
                 torch.autocast)


def _is_builtin(value: Any) -> bool:
    try:
        return value in BUILTIN_CALLABLES
    except TypeError:  # unhashable
        return False


def _plain_key(value: Any) -> bool:
    """A key of a dict (member of a set) from outside the frame that the keys guard pins by
    ``==`` alone: a constant, or an object that is equal only to itself (a function, a builtin,
    a module, an ``nn.Module``, a tensor, a typing form such as ``typing.Union``: see
    hashable.py)."""
    return is_constant(value) or isinstance(value, (types.FunctionType, types.ModuleType,
                                                    types.BuiltinFunctionType)) \
        or ((isinstance(value, (torch.nn.Module, torch.Tensor))
             or type(value).__module__ == "typing") and hashed_by_identity(type(value)))


def _unwrap_compiled(value: Any) -> Any:
    """A function already wrapped by ``mc.compile`` is traced through to the original."""
    if not isinstance(value, types.FunctionType):  # (torch.ops makes up any attribute asked)
        return value
    return value.__dict__.get("_minicompile_orig", value)


def _id_matched(cls: type) -> Callable:
    """A DISPATCH method: wrap in ``cls`` behind an identity guard (modules, functions)."""

    def wrap(self: VariableBuilder, value: Any, guard: bool) -> VariableTracker:
        if guard:
            self.install_guard(GuardKind.ID_MATCH, value)
        return cls(value, self.source)

    return wrap


class VariableBuilder:
    def __init__(self, tx, source: Source | None, attribute_of_object: bool = False):
        self.tx, self.source = tx, source
        # An int read from a frame argument, or from an instance attribute of a plain object an
        # argument reaches (a KV cache layer's ``cumulative_length``), becomes a SymInt once it
        # has changed (real Dynamo's ``is_int_specialization_case``: only ints of globals,
        # defaults and nn.Modules stay specialized). Else each decoding step recompiled.
        self.int_may_be_symbolic = isinstance(source, LocalSource) or (
            attribute_of_object and source is not None and not source.is_global())

    def guard(self, kind: GuardKind, expected: Any = None) -> Guard:
        return Guard(self.source, kind, expected, self.tx.user_line())

    def install_guard(self, kind: GuardKind, expected: Any = None) -> None:
        if self.source is not None:
            self.tx.output.add_guard(self.guard(kind, expected))

    def wrap(self, value: Any, guard: bool = True) -> VariableTracker:
        value = _unwrap_compiled(value)
        mutable = type(value) in (list, dict) and self.source is not None
        if mutable:  # one tracker per list/dict, so it sees its own mutations (side_effects.py)
            vt = self.tx.output.side_effects.tracked(value, self.source)
            if vt is not None:
                if vt.source.name() != self.source.name():  # one object, two names
                    self.install_guard(GuardKind.DUPLICATE_INPUT, vt.source)
                return vt
        for matches, method in self.DISPATCH:
            if matches(value):
                vt = method(self, value, guard and self.source is not None)
                if vt.source is None and self.source is not None:
                    vt.source = self.source
                if mutable and self.tx.output.side_effects.tracked(value, self.source) is not vt:
                    self.tx.output.side_effects.track(value, vt)
                return vt
        raise AssertionError("unreachable: the last row matches everything")

    # -- one method per kind of value, in the order of DISPATCH --------------------------------
    def wrap_tensor(self, value: torch.Tensor, guard: bool) -> VariableTracker:
        if self.source is None:
            unimplemented("a tensor with no source (made outside the traced code) can't be an input")
        check_plain_tensor(value)
        vt = self.tx.output.add_graph_input(self.source, value)
        if guard:  # a symbolic size or stride is checked by the ShapeEnv's guards instead
            self.install_guard(GuardKind.TENSOR_MATCH, TensorSpec.of(value, vt.example_value))
        return vt

    def wrap_module(self, value: torch.nn.Module, guard: bool) -> VariableTracker:
        """A module: guarded by identity, its parameters ``get_attr`` constants of the graph;
        a frame argument the frame traces unspecialized (``OutputGraph.unspecialized``) is
        guarded by type instead, its parameters graph inputs (``NNModuleVariable``)."""
        if isinstance(self.source, LocalSource) and \
                self.source.local_name in self.tx.output.unspecialized:
            return unspecialized_module(self.tx, value, self.source, guard)
        return _id_matched(NNModuleVariable)(self, value, guard)

    def wrap_constant(self, value: Any, guard: bool) -> VariableTracker:
        if (guard and type(value) is int and self.int_may_be_symbolic
                and self.tx.output.dynamic.int_is_dynamic(self.source.name(), value)):
            self.install_guard(GuardKind.TYPE_MATCH, int)  # its value: the ShapeEnv's guards
            return self.tx.output.add_symint_input(self.source, value)
        if (guard and type(value) is float and isinstance(self.source, LocalSource)
                and self.tx.output.dynamic.float_is_dynamic()):
            self.install_guard(GuardKind.TYPE_MATCH, float)  # its value: only where specialized
            return self.tx.output.add_float_input(self.source, value)
        if guard and self.source is not None:  # guarded where the trace reads it
            kind = GuardKind.ID_MATCH if isinstance(value, type) else GuardKind.EQUALS_MATCH
            return ConstantVariable(value, self.source,
                                    guard_on_read=(self.tx.output, self.guard(kind, value)))
        return ConstantVariable(value, self.source)

    def wrap_sequence(self, value: list | tuple, guard: bool) -> VariableTracker:
        if guard:  # a tuple of constants also carries itself: the guard tree's shortcut
            self.install_guard(GuardKind.LENGTH_CHECK, (type(value), len(value))
                               + ((value,) if deeply_immutable(value) else ()))
        cls = SizeVariable if isinstance(value, torch.Size) else \
            TupleVariable if isinstance(value, tuple) else ListVariable
        vt = self._tracked_before_items(value, cls([], self.source))
        vt.items = [VariableBuilder(self.tx, GetItemSource(self.source, i) if self.source
                                    else None).wrap(v, guard) for i, v in enumerate(value)]
        return vt

    def wrap_dict(self, value: dict, guard: bool) -> VariableTracker:
        if not all(map(_plain_key, value)):
            unimplemented("a dict whose keys are not constants, functions or modules")
        if guard:
            self.install_guard(GuardKind.DICT_KEYS, list(value))
        vt = self._tracked_before_items(value, ConstDictVariable({}, self.source))
        vt.items = {self._key(k, i, guard): VariableBuilder(self.tx, self._item_source(k, i))
                    .wrap(v, guard) for i, (k, v) in enumerate(value.items())}
        return vt

    def _tracked_before_items(self, value: list | tuple | dict, vt: VariableTracker):
        """``vt``, empty, made the tracker of a list or dict from outside before its items are
        wrapped: one that holds itself (``x.append(x)``) reaches its own tracker again through
        the item (``L['x'][1]``, guarded to stay the same object) instead of wrapping itself
        without end; a real Dynamo's trackers are built lazily, on first use, for the same
        reason."""
        if type(value) in (list, dict) and self.source is not None:
            self.tx.output.side_effects.track(value, vt)
        return vt

    def _item_source(self, key: Any, position: int) -> Source | None:
        """``d[key]``; an object key is named by its position (sources compare by value, and
        ``==`` of two tensors is no answer)."""
        if self.source is None:
            return None
        index = key if is_constant(key) else DictKeySource(self.source, position)
        return GetItemSource(self.source, index, position)

    def _key(self, key: Any, position: int, guard: bool) -> Any:
        """A dict's key as its tracker files it (hashable.py): a constant as it is; an object
        (a function, a module) as its own tracker, read through its position among the keys,
        so what is done with it later is guarded like any other input."""
        if is_constant(key):
            return key
        source = DictKeySource(self.source, position) if self.source else None
        vt = VariableBuilder(self.tx, source).wrap(key, guard)
        if isinstance(vt.identity(), VariableTracker):  # no object to compare keys by
            unimplemented(f"a dict key {vt} whose identity the tracer does not know")
        return HashableTracker(vt)

    def wrap_method(self, value: types.MethodType, guard: bool) -> VariableTracker:
        from ..source import AttrSource

        owner = VariableBuilder(self.tx, AttrSource(self.source, "__self__") if self.source
                                else None).wrap(value.__self__, guard)
        if value.__name__ in getattr(owner, "METHODS", ()):  # a tracker with its own methods
            return owner.var_getattr(self.tx, value.__name__)  # (a no_grad object's clone)
        func = value.__func__
        if isinstance(func, functools._lru_cache_wrapper) and isinstance(
                getattr(func, "__wrapped__", None), types.FunctionType):
            func = func.__wrapped__  # an lru_cache'd method: traced through, as wrap_lru_cache
        if not isinstance(func, types.FunctionType):
            unimplemented(f"calling {value.__qualname__}, a {type(func).__name__} bound as a method")
        return UserMethodVariable(func, owner)

    def wrap_partial(self, value: functools.partial, guard: bool) -> VariableTracker:
        """Its func, args and keywords are wrapped (and guarded) like any other input."""
        from ..source import AttrSource

        if guard:
            self.install_guard(GuardKind.TYPE_MATCH, type(value))

        def part(name: str) -> VariableTracker:
            source = AttrSource(self.source, name) if self.source else None
            return VariableBuilder(self.tx, source).wrap(getattr(value, name), guard)

        keywords = part("keywords")
        return FunctoolsPartialVariable(part("func"), part("args").unpack_var_sequence(self.tx),
                                        keywords.items, self.source)

    def wrap_checkpointed_function(self, value: Any, guard: bool) -> VariableTracker:
        """``@checkpoint(use_reentrant=False)`` applied to a function: a call is ``checkpoint``
        of the function with the decorator's options (the partial it stands for); its function
        and options are wrapped (and guarded) like any other input."""
        from ..source import AttrSource

        if guard:
            self.install_guard(GuardKind.TYPE_MATCH, type(value))

        def part(name: str) -> VariableTracker:
            source = AttrSource(self.source, name) if self.source else None
            return VariableBuilder(self.tx, source).wrap(getattr(value, name), guard)

        return FunctoolsPartialVariable(CheckpointVariable(CHECKPOINT), [part("function")],
                                        part("checkpoint_kwargs").items, self.source)

    def wrap_lru_cache(self, value: Any, guard: bool) -> VariableTracker:
        """A ``functools.lru_cache``-wrapped function is traced through its ``__wrapped__``
        function, as real Dynamo does: the cache only remembers answers the function gives
        anyway (a cached function is assumed pure), and the answer is now part of the graph."""
        from ..source import AttrSource

        source = AttrSource(self.source, "__wrapped__") if self.source else None
        return VariableBuilder(self.tx, source).wrap(value.__wrapped__, guard)

    def wrap_user_dict(self, value: dict, guard: bool) -> VariableTracker:
        """An instance of a dict subclass: its class and keys guarded, its items wrapped."""
        keys = list(own_keys(type(value))(value))  # in the order the class keeps
        if self.source is None or not all(is_constant(k) for k in keys):
            return self.wrap_object(value, guard)
        if guard:
            self.install_guard(GuardKind.USER_DICT_KEYS, (type(value), keys))
        items = {k: VariableBuilder(self.tx, GetItemSource(self.source, k, i))
                 .wrap(dict.__getitem__(value, k), guard) for i, k in enumerate(keys)}
        return UserDefinedDictVariable(items, value, self.source)

    def wrap_set(self, value: set | frozenset, guard: bool) -> VariableTracker:
        if guard:  # compared with a copy: the guard must see a later mutation of the set
            self.install_guard(GuardKind.EQUALS_MATCH, type(value)(value))
        return SetVariable(type(value)(value), self.source)

    def wrap_range(self, value: range, guard: bool) -> VariableTracker:
        if guard:
            self.install_guard(GuardKind.EQUALS_MATCH, value)
        return RangeVariable(value, self.source)

    def wrap_slice(self, value: slice, guard: bool) -> VariableTracker:
        if guard:
            self.install_guard(GuardKind.EQUALS_MATCH, value)
        return SliceVariable(*(ConstantVariable(p) for p in (value.start, value.stop, value.step)))

    def wrap_grad_mode(self, value: Any, guard: bool) -> VariableTracker:
        """A ``torch.no_grad()`` / ``torch.enable_grad()`` object, such as the one a resume
        function re-enters: only its type matters (a fresh one is passed on every call)."""
        if guard:
            self.install_guard(GuardKind.TYPE_MATCH, type(value))
        return GradModeVariable(target=type(value) is torch.enable_grad)

    def wrap_autocast(self, value: torch.autocast, guard: bool) -> VariableTracker:
        """A ``torch.autocast`` object, such as the one a resume function re-enters: its
        device, dtype and flags, each guarded (a fresh one is passed on every call)."""
        from ..source import AttrSource
        from .misc import AutocastVariable

        state = [VariableBuilder(self.tx, AttrSource(self.source, name) if self.source else None)
                 .wrap(getattr(value, name), guard).as_python_constant()
                 for name in ("device", "fast_dtype", "_enabled", "_cache_enabled")]
        return AutocastVariable(*state)

    def wrap_contextmanager(self, value: types.FunctionType, guard: bool) -> VariableTracker:
        """A function decorated by ``@contextlib.contextmanager``: the generator function in
        its closure (contextlib's ``func`` cell) is what a call runs (generators.py)."""
        from ..source import ClosureSource

        if guard:
            self.install_guard(GuardKind.ID_MATCH, value)
        index = value.__code__.co_freevars.index("func")
        source = ClosureSource(self.source, index) if self.source else None
        func = VariableBuilder(self.tx, source).wrap(value.__closure__[index].cell_contents, guard)
        return ContextlibDecoratedVariable(func, self.source)

    def wrap_object(self, value: Any, guard: bool) -> VariableTracker:
        if guard:
            self.install_guard(GuardKind.TYPE_MATCH, type(value))
        return UserDefinedObjectVariable(value, self.source)

    # (predicate, method) rows, first match wins
    DISPATCH: list[tuple[Callable[[Any], bool], Callable]] = [
        (lambda v: isinstance(v, torch.Tensor), wrap_tensor),
        (lambda v: any(v is c for c in TORCH_CLASSES), _id_matched(TorchVariable)),  # no ==
        (lambda v: type(v) in (torch.no_grad, torch.enable_grad), wrap_grad_mode),
        (lambda v: type(v) is torch.autocast, wrap_autocast),
        (lambda v: isinstance(v, types.MethodType)  # no_grad().clone: what @no_grad() calls
         and type(v.__self__) in (torch.no_grad, torch.enable_grad), wrap_method),
        (_is_builtin, lambda self, v, g: BuiltinVariable(v)),  # builtins are not in G: no guard
        (lambda v: isinstance(v, (tuple, list)) and type(v) in (tuple, list, torch.Size),
         wrap_sequence),
        (is_function_class, _id_matched(AutogradFunctionVariable)),  # MyFunction (a class)
        (is_constant, wrap_constant),
        (lambda v: type(v).__module__ == "typing", wrap_constant),  # List[int], Any, Optional
        (lambda v: type(v) is dict, wrap_dict),
        (lambda v: isinstance(v, dict) and type(v).__module__ != "builtins", wrap_user_dict),
        (lambda v: type(v) in (set, frozenset) and all(map(_plain_key, v)), wrap_set),
        (lambda v: isinstance(v, range), wrap_range),
        (lambda v: isinstance(v, slice), wrap_slice),
        (lambda v: isinstance(v, torch.nn.Module), wrap_module),
        (lambda v: isinstance(v, torch.optim.Optimizer), _id_matched(OptimizerVariable)),
        (lambda v: isinstance(v, types.ModuleType), _id_matched(PythonModuleVariable)),
        (lambda v: any(v is d for d in CACHING_DECORATORS),
         lambda self, v, g: CachingDecoratorVariable(v)),  # lru_cache applied in the frame
        (is_function_apply, _id_matched(TorchVariable)),  # apply = MyFunction.apply (torch 2.14: C)
        (is_tensor_method, _id_matched(TensorMethodVariable)),  # torch.Tensor.add(x, y)
        (is_checkpoint, _id_matched(CheckpointVariable)),  # torch.utils.checkpoint.checkpoint
        (is_checkpointed_function, wrap_checkpointed_function),  # @checkpoint(...) def f
        (is_torch_callable, _id_matched(TorchVariable)),
        (lambda v: isinstance(v, types.FunctionType) and v.__code__ is CONTEXTMANAGER_CODE,
         wrap_contextmanager),
        (lambda v: isinstance(v, types.FunctionType), _id_matched(UserFunctionVariable)),
        (lambda v: isinstance(v, types.MethodType), wrap_method),
        (lambda v: type(v) is functools.partial, wrap_partial),
        (lambda v: isinstance(v, functools._lru_cache_wrapper)
         and isinstance(getattr(v, "__wrapped__", None), types.FunctionType), wrap_lru_cache),
        # An enum member is compared by identity (`cfg.mode is Mode.SUM`): guarded by identity
        # as real Dynamo's EnumVariable, not by type, which any other member passes.
        (lambda v: isinstance(v, enum.Enum), _id_matched(UserDefinedObjectVariable)),
        (lambda v: True, wrap_object),
    ]


class SourcelessBuilder:
    """Wrap a value made while tracing (a folded constant, a result of a metadata query)."""

    @staticmethod
    def wrap(tx, value: Any) -> VariableTracker:
        if isinstance(value, torch.Tensor):
            unimplemented("a real tensor appeared while tracing (made outside the graph)")
        return VariableBuilder(tx, None).wrap(value, guard=False)


def wrap_fx_proxy(tx, proxy: torch.fx.Proxy, example: Any) -> VariableTracker:
    """Wrap what a new graph node produced, given its fake example value."""
    if isinstance(example, torch.Tensor):
        return TensorVariable(proxy, example)
    if isinstance(example, (tuple, list)) and not isinstance(example, torch.Size):
        items = [_wrap_item(tx, proxy, i, v, example) for i, v in enumerate(example)]
        if type(example) not in (tuple, list):  # x.max(dim=0) -> torch.return_types.max
            return NamedTupleVariable(items, type(example))
        return (TupleVariable if isinstance(example, tuple) else ListVariable)(items)
    if is_symbolic(example):  # x.size(0) * 2 under dynamic shapes: a SymInt
        return SymNodeVariable(proxy, example)
    if isinstance(example, torch.Size) and any(is_symbolic(s) for s in example):
        return symbolic_size(tx, lambda i: tx.output.create_proxy(
            "call_function", operator.getitem, (proxy, i), {}), example)
    if isinstance(example, (int, float, bool, torch.Size)) and not proxy.node.users:
        proxy.node.graph.erase_node(proxy.node)  # a metadata answer: no node needed
    if example is None or is_constant(example) or isinstance(example, torch.Size):
        return SourcelessBuilder.wrap(tx, example)
    unimplemented(f"a graph node produced a {type(example).__name__}")


def _wrap_item(tx, proxy: torch.fx.Proxy, i: int, item: Any, example: Any) -> VariableTracker:
    """Item ``i`` of a node's tuple or list: a tensor (or a tuple of them) is read from the node
    by ``getitem``; a constant is folded. An object holding fake tensors (a user's Function
    returning ``(Pair(a, b), x * y)``) would leak them into the program as constants."""
    if isinstance(item, torch.Tensor) or (
            isinstance(item, (tuple, list)) and _holds_tensor(item)):
        return wrap_fx_proxy(tx, tx.output.create_proxy("call_function", operator.getitem,
                                                        (proxy, i), {}), item)
    if _holds_tensor(item):
        unimplemented(f"a graph node produced a {type(item).__name__} holding tensors "
                      f"(item {i} of its {type(example).__name__}): only tensors, constants "
                      f"and tuples of them come out of a graph node")
    return SourcelessBuilder.wrap(tx, item)


def _holds_tensor(value: Any, depth: int = 4) -> bool:
    """A tensor among the items or attributes of ``value`` (a few levels down: an object graph
    may be cyclic)."""
    if isinstance(value, torch.Tensor):
        return True
    if depth == 0 or isinstance(value, type):
        return False
    if isinstance(value, (tuple, list)):
        return any(_holds_tensor(v, depth - 1) for v in value)
    items = value if isinstance(value, dict) else getattr(value, "__dict__", {})
    return any(_holds_tensor(v, depth - 1) for v in items.values())
