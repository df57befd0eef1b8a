"""NNModuleVariable: an ``nn.Module`` instance (mirrors torch/_dynamo/variables/nn_module.py).

Design choice (documented for the later stages): calling a module inlines its ``forward`` into
the same graph, for user modules *and* torch.nn's own (Linear -> ``F.linear`` node, BatchNorm ->
``F.batch_norm`` node), as real Dynamo does since ``inline_inbuilt_nn_modules``. Parameters and
buffers become ``get_attr`` nodes on the output GraphModule, named after their source
(``L['self'].fc.weight`` -> ``self.L__self___fc_weight``), like ``torch.fx.symbolic_trace`` and
classic Dynamo. The module object is guarded by identity; plain attributes read by ``forward``
(``training``, ``eps``, ...) are guarded by value. Containers (Sequential, ModuleList,
ModuleDict) are iterated and indexed at trace time, so loops over them unroll.

*Unspecialized* modules (``specialized=False``): the ``self`` of a module's ``forward`` called
from a frame that runs eagerly (a loop over layers with a graph break in it calls each layer in
turn). Specialized, each layer would fail the last one's identity guards and compile again, up to
the recompile limit. Unspecialized, the module and its submodules are guarded by type, and their
parameters and buffers are graph inputs (placeholders, ``TENSOR_MATCH``-guarded): one entry
serves every layer of the same class, shapes and settings, as real Dynamo's modules always are
(``inline_inbuilt_nn_modules``: ``UnspecializedNNModuleVariable``).
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import torch

from ..exc import ObservedException, unimplemented
from ..guards import Guard, GuardKind, any_global_module_hook
from ..source import AttrSource, GetItemSource
from .base import VariableTracker
from .constant import ConstantVariable
from .dicts import StoredInstanceDict

CONTAINERS = (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)
# Methods answered at trace time from the real module (its parameters, children, ...).
_MISSING = object()  # no such class attribute
INTROSPECTION = ("children", "named_children", "parameters", "named_parameters", "buffers",
                 "named_buffers", "modules", "named_modules")


def _has_hooks(module: torch.nn.Module) -> bool:
    return bool(module._forward_hooks or module._forward_pre_hooks or _backward_hooks(module)
                or any_global_module_hook())


def _backward_hooks(module: torch.nn.Module) -> bool:
    """Full backward hooks or backward pre-hooks: ``__call__`` wraps the call's inputs and
    outputs in ``BackwardHook`` nodes for them (register_full_backward_pre_hook too)."""
    return bool(getattr(module, "_backward_hooks", None)
                or getattr(module, "_backward_pre_hooks", None))


def traced_hooks(module: torch.nn.Module) -> tuple[tuple, tuple] | None:
    """The keys of ``module``'s forward pre-hooks and forward hooks, which a call traces around
    ``forward`` (``hook(module, args)`` before it, whose result replaces the arguments:
    pruning's and the old weight norm's; ``hook(module, args, output)`` after, the kind
    transformers installs to collect hidden states). None: hooks the tracer does not model
    (global ones, backward hooks, hooks taking keyword arguments)."""
    other = any_global_module_hook() or _backward_hooks(module) \
        or getattr(module, "_forward_hooks_with_kwargs", None) \
        or getattr(module, "_forward_pre_hooks_with_kwargs", None)
    return None if other else (tuple(module._forward_pre_hooks), tuple(module._forward_hooks))


class NNModuleVariable(VariableTracker):
    def __init__(self, module: torch.nn.Module, source=None, specialized: bool = True):
        super().__init__(source)
        self.value = module
        self.specialized = specialized  # False: guarded by type, parameters graph inputs
        self.output = None  # (unspecialized: the OutputGraph, for ``pin_identity``'s guard)

    def python_type(self) -> type:
        return type(self.value)

    def identity(self) -> Any:
        return self.value

    def pin_identity(self) -> None:
        """An unspecialized module compared by identity, or made a dict key: the trace holds
        for this module only, so it is guarded by identity after all."""
        if not self.specialized and self.source is not None and self.output is not None:
            self.output.add_guard(Guard(self.source, GuardKind.ID_MATCH, self.value))

    def truth(self, tx) -> bool:
        """``if self.normalization:`` (CvT): a module is true, a container (ModuleList,
        Sequential, ModuleDict) when it is not empty, as Python's ``bool`` says; its length is
        the module structure the compiled code already assumes. A ``__bool__`` of the module's
        own would be user code to trace: refused."""
        if hasattr(type(self.value), "__bool__"):
            unimplemented(f"bool() of {type(self.value).__name__}, which defines __bool__")
        return bool(len(self.value)) if hasattr(type(self.value), "__len__") else True

    def _child_source(self, key: Any, attr: bool):
        if self.source is None:
            return None
        return AttrSource(self.source, key) if attr else GetItemSource(self.source, key)

    def _submodule_source(self, sub: torch.nn.Module):
        """``L['self']._modules['0']``, as real Dynamo writes it: a container's item is read
        from its ``_modules`` dict, not through ``Sequential.__getitem__``, which costs a few
        microseconds per call in Python, on every guard check of every call."""
        if self.source is None:
            return None
        name = next(k for k, v in self.value._modules.items() if v is sub)
        return GetItemSource(AttrSource(self.source, "_modules"), name)

    def _wrap_child(self, tx, value: Any, source) -> VariableTracker:
        from .builder import VariableBuilder

        if not self.specialized and isinstance(value, (torch.Tensor, torch.nn.Module)):
            return self._unspecialized_child(tx, value, source)
        if isinstance(value, torch.Tensor):
            return tx.output.register_attr_or_module(tx, value, source)
        return VariableBuilder(tx, source).wrap(value)

    def _unspecialized_child(self, tx, value: Any, source) -> VariableTracker:
        """A parameter, buffer or submodule of an unspecialized module: a graph input, or a
        module guarded by type. Only what a source reaches: an instance's own ``__getattr__``
        answering with a tensor would make it a constant of this instance's."""
        from .builder import VariableBuilder

        if source is None:
            unimplemented(f"a tensor or module {type(self.value).__name__}.__getattr__ makes, "
                          "in a module traced for every instance of its class")
        if isinstance(value, torch.Tensor):
            return VariableBuilder(tx, source).wrap(value)
        return unspecialized_module(tx, value, source)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from .functions import UserFunctionVariable

        m, source = self.value, self._child_source(name, attr=True)
        # object.__getattribute__'s order: a data descriptor of the class (a property), the
        # instance's __dict__, the class's attributes (methods), and only then
        # nn.Module.__getattr__ (parameters, buffers, submodules): a method named like a
        # submodule wins, as in eager.
        static = inspect.getattr_static(type(m), name, _MISSING)
        if isinstance(static, property):
            return UserFunctionVariable(static.fget).call_function(tx, [self], {})
        if name == "__dict__" and self.source is not None:  # the module's attribute storage
            return StoredInstanceDict(tx, self, m, self._wrap_child(tx, m.__dict__, None))
        if name in m.__dict__:
            return self._wrap_child(tx, m.__dict__[name], source)
        if name == "__class__":
            return ConstantVariable(type(m))
        if static is not _MISSING:
            return self._class_attribute(tx, name, static)
        for table in ("_parameters", "_buffers", "_modules"):
            d = m.__dict__.get(table, {})
            if name in d:  # read from the table, as nn.Module.__getattr__ does, minus its cost
                source = self.source and GetItemSource(AttrSource(self.source, table), name)
                return self._wrap_child(tx, d[name], source)
        if hasattr(m, name):  # a class's own __getattr__
            return self._wrap_child(tx, getattr(m, name), None)
        raise ObservedException(AttributeError(
            f"{type(m).__name__!r} object has no attribute {name!r}"))

    def _class_attribute(self, tx, name: str, static: Any) -> VariableTracker:
        """``m.name`` found on the class: a method, a static method, or a class constant."""
        from .functions import UserFunctionVariable, UserMethodVariable

        if name in INTROSPECTION and static is getattr(torch.nn.Module, name):
            from .misc import GetAttrVariable  # answered by call_method, not by inlining torch's

            return GetAttrVariable(self, name)
        if isinstance(static, types.FunctionType):
            return UserMethodVariable(static, self)
        if isinstance(static, staticmethod):
            return UserFunctionVariable(static.__func__)
        value = getattr(self.value, name)  # __constants__, defaults: the class's own
        if isinstance(value, torch.Tensor):  # (one tensor for every instance)
            return tx.output.register_attr_or_module(tx, value, None)
        return self._wrap_child(tx, value, None)

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        from .builder import VariableBuilder
        from .functions import UserMethodVariable
        from .lists import TupleVariable

        hooks = traced_hooks(self.value)
        if hooks is None or (any(hooks) and self.source is None):  # (read from its source)
            unimplemented(f"calling {type(self.value).__name__} with hooks registered (traced: "
                          "forward pre-hooks and forward hooks of a module's own, taking no "
                          "keyword arguments)")
        if "forward" in self.value.__dict__:  # m.forward = ... on the instance
            unimplemented(f"{type(self.value).__name__}.forward replaced on the instance")
        if self.source is not None:  # a hook added or forward replaced later: recompile
            tx.output.add_guard(Guard(self.source, GuardKind.NN_MODULE_CALL,
                                      (type(self.value), hooks), tx.user_line()))
        forward = inspect.getattr_static(self.value, "forward", None)
        if not isinstance(forward, types.FunctionType):
            unimplemented(f"{type(self.value).__name__}.forward is not a Python function")
        # Module._call_impl: each hook gets the positional arguments (keywords only where it
        # was registered with_kwargs). A pre-hook's result, when not None, is the new
        # arguments (a single value becomes a 1-tuple); a forward hook's, the output
        pre_hooks, post_hooks = hooks
        for key in pre_hooks:
            result = self._hook(tx, "_forward_pre_hooks", key, [self, TupleVariable(list(args))])
            if not (result.is_python_constant() and result.as_python_constant() is None):
                args = list(result.items) if isinstance(result, TupleVariable) else [result]
        out = UserMethodVariable(forward, self).call_function(tx, args, kwargs)
        for key in post_hooks:
            result = self._hook(tx, "_forward_hooks", key,
                                [self, TupleVariable(list(args)), out])
            if not (result.is_python_constant() and result.as_python_constant() is None):
                out = result
        return out

    def _hook(self, tx, table: str, key: Any, args: list) -> VariableTracker:
        """Call hook ``key`` of the module's ``table``, read from its source (its identity is
        guarded there: another hook object recompiles)."""
        from .builder import VariableBuilder

        source = GetItemSource(AttrSource(self.source, table), key)
        hook = VariableBuilder(tx, source).wrap(getattr(self.value, table)[key])
        return hook.call_function(tx, args, {})

    # -- containers and introspection ------------------------------------------------------------
    def _guard_contents(self, tx) -> None:
        """Iterating, indexing or len() reads which submodules the container holds: guard its
        keys (each item is ID-guarded when wrapped), so an append or a swap recompiles."""
        if self.source is not None:
            tx.output.add_guard(Guard(AttrSource(self.source, "_modules"), GuardKind.DICT_KEYS,
                                      list(self.value._modules), tx.user_line()))

    def _parameters_in_order(self, tx) -> list[VariableTracker]:
        """A ParameterList's parameters (its ``_parameters``, keyed "0", "1", ...), the keys
        guarded so that an appended parameter recompiles."""
        if self.source is not None:
            tx.output.add_guard(Guard(AttrSource(self.source, "_parameters"), GuardKind.DICT_KEYS,
                                      list(self.value._parameters), tx.user_line()))
        return [self.var_getattr(tx, name) for name in self.value._parameters]

    def _items(self) -> list[tuple[Any, torch.nn.Module]]:
        m = self.value
        if isinstance(m, torch.nn.ModuleDict):
            return [(k, v) for k, v in m.items()]
        if isinstance(m, CONTAINERS):
            return list(enumerate(m))
        unimplemented(f"iterating over {type(m).__name__}")

    def _item(self, tx, key: Any, sub: torch.nn.Module) -> VariableTracker:
        self._guard_contents(tx)
        source = self._submodule_source(sub)
        if not self.specialized:
            return self._unspecialized_child(tx, sub, source)
        if source is not None:
            tx.output.add_guard(Guard(source, GuardKind.ID_MATCH, sub, tx.user_line()))
        return NNModuleVariable(sub, source)

    def unpack_var_sequence(self, tx) -> list[VariableTracker]:
        if isinstance(self.value, torch.nn.ParameterList):
            return self._parameters_in_order(tx)
        self._guard_contents(tx)
        if isinstance(self.value, torch.nn.ModuleDict):
            return [ConstantVariable(k) for k, _ in self._items()]
        return [self._item(tx, k, v) for k, v in self._items()]

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        from .lists import ListVariable, TupleVariable

        m = self.value
        if name == "__len__" and isinstance(m, torch.nn.ParameterList):
            return ConstantVariable(len(self._parameters_in_order(tx)))
        if name == "__len__" and isinstance(m, CONTAINERS):
            self._guard_contents(tx)
            return ConstantVariable(len(m))
        if name == "__getitem__" and isinstance(m, CONTAINERS):
            key = args[0].as_python_constant()
            if isinstance(key, slice):  # self.layers[1:]: a new container of the same modules
                return NNModuleSliceVariable(self, key)
            if isinstance(key, int) and not isinstance(m, torch.nn.ModuleDict):
                key, sub = self._items()[key]  # a negative index counts from the end
                return self._item(tx, key, sub)
            return self._item(tx, key, m[key])
        if name == "__contains__" and isinstance(m, torch.nn.ModuleDict):
            return ConstantVariable(args[0].as_python_constant() in m)
        if isinstance(m, torch.nn.ModuleDict) and name in ("keys", "values", "items"):
            keys = [ConstantVariable(k) for k, _ in self._items()]
            vals = [self._item(tx, k, v) for k, v in self._items()]
            rows = {"keys": keys, "values": vals,
                    "items": [TupleVariable([k, v]) for k, v in zip(keys, vals)]}
            return ListVariable(rows[name])
        if name in INTROSPECTION:
            return self._introspect(tx, name, args, kwargs)
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def _introspect(self, tx, name, args, kwargs) -> VariableTracker:
        """``self.parameters()`` and friends: an iterator (they are generators, so
        ``next(m.parameters())`` works) over trackers with their sources."""
        from .lists import ListIteratorVariable, TupleVariable

        if args or kwargs:
            unimplemented(f"{name}() with arguments")
        real = getattr(self.value, name)()
        sources = self._sources_below() if self.source else {}
        out = []
        for entry in real:
            path, value = entry if isinstance(entry, tuple) else (None, entry)
            item = self._wrap_child(tx, value, sources.get(id(value)))
            out.append(TupleVariable([ConstantVariable(path), item]) if name.startswith("named")
                       else item)
        return ListIteratorVariable(out)

    def _sources_below(self) -> dict[int, Any]:
        """id() of each submodule, parameter and buffer below this module -> its source, the
        first path that reaches it in ``named_modules()`` order (the one ``named_parameters()``
        reports): ``named_parameters()``'s ``"layers.0.weight"`` is ``.layers._modules['0']
        .weight``. Found by walking the tables, not by splitting the dotted path: a child
        named ``"a.b"`` and a child ``b`` of a child ``a`` have the same path."""
        sources: dict[int, Any] = {}

        def walk(module: torch.nn.Module, source) -> None:
            sources[id(module)] = source
            for table in ("_parameters", "_buffers", "_modules"):
                for key, value in module.__dict__.get(table, {}).items():
                    if value is None or id(value) in sources:
                        continue
                    child = (AttrSource(source, key) if key.isidentifier()  # .layers
                             else GetItemSource(AttrSource(source, table), key))  # ._modules['0']
                    if table == "_modules":
                        walk(value, child)
                    else:
                        sources[id(value)] = child

        walk(self.value, self.source)
        return sources

    def _repr_body(self) -> str:
        return type(self.value).__name__


def unspecialized_module(tx, module: torch.nn.Module, source,
                         guard: bool = True) -> NNModuleVariable:
    """``module`` traced for any module of its class: guarded by its type alone."""
    if guard and source is not None:
        tx.output.add_guard(Guard(source, GuardKind.TYPE_MATCH, type(module), tx.user_line()))
    vt = NNModuleVariable(module, source, specialized=False)
    vt.output = tx.output
    return vt


class NNModuleSliceVariable(NNModuleVariable):
    """``seq[1:]`` of a Sequential or ModuleList: eager makes a *new* container of the same
    submodules on every call, so this one has no source and no guard of its own. Its items are
    the parent's items, under the parent's sources (``L['self'].seq[1]``), so calling it inlines
    ``Sequential.forward`` over them and iterating it unrolls over them. Rebuilt, it is the same
    slice of the parent again (``L['self'].seq[slice(1, None, None)]``)."""

    def __init__(self, parent: NNModuleVariable, key: slice):
        super().__init__(parent.value[key], None)  # a real container, for type and forward
        self.parent, self.key = parent, key

    def _guard_contents(self, tx) -> None:
        self.parent._guard_contents(tx)

    def _items(self) -> list[tuple[Any, torch.nn.Module]]:
        return self.parent._items()[self.key]  # keyed as in the parent

    def _item(self, tx, key: Any, sub: torch.nn.Module) -> VariableTracker:
        return self.parent._item(tx, key, sub)

    def _introspect(self, tx, name, args, kwargs) -> VariableTracker:
        unimplemented(f"{name}() of a sliced {type(self.value).__name__}")

    def reconstruct(self, codegen) -> str:
        return f"{codegen(self.parent)}[{self.key!r}]"

    def _repr_body(self) -> str:
        return f"{self.parent._repr_body()}[{self.key.start}:{self.key.stop}:{self.key.step}]"
