"""ConstDictVariable: a dict whose keys are constants and whose values are any VariableTracker
(mirrors torch/_dynamo/variables/dicts.py). Mutation is allowed on dicts made while tracing."""

from __future__ import annotations

import collections
import inspect
import types
from typing import Any

from ..exc import ObservedException, unimplemented
from ..guards import Guard, GuardKind
from ..side_effects import DELETED
from ..source import AttrSource, TypeSource
from .base import VariableTracker
from .constant import ConstantVariable
from .hashable import HashableTracker, dict_key, key_constant, key_expr, key_tracker
from .lists import ListVariable, TupleVariable
from .misc import BaseMethodVariable
from .user_defined import UserDefinedObjectVariable


class ConstDictVariable(VariableTracker):
    """``items`` maps each key, as :func:`hashable.dict_key` files it (a constant, or a
    :class:`HashableTracker` for a function or another object that hashes by identity), to the
    value's tracker. ``user_cls``: ``dict``, or ``OrderedDict`` / ``defaultdict`` built while tracing; a
    defaultdict's ``default_factory`` (a tracker, called for a missing key) fills it on read."""

    def __init__(self, items: dict[Any, VariableTracker], source=None, user_cls: type = dict,
                 default_factory: VariableTracker | None = None):
        super().__init__(source)
        self.items = dict(items)
        self.user_cls, self.default_factory = user_cls, default_factory
        # keys whose float values the trace reads as tensor inputs (an optimizer's scheduled
        # lr, ``OptimizerVariable``): a write there would store a tensor where the code keeps
        # a float, so it runs natively
        self.floats_as_tensors: set[Any] = set()

    def python_type(self) -> type:
        return self.user_cls

    def as_python_constant(self) -> dict:
        items = {key_constant(k): v.as_python_constant() for k, v in self.items.items()}
        if self.user_cls is collections.defaultdict:  # its own class: repr(od), type(d)
            factory = self.default_factory
            return collections.defaultdict(factory and factory.as_python_constant(), items)
        return self.user_cls(items)

    def as_proxy(self) -> dict:
        return {k: v.as_proxy() for k, v in self.items.items()}

    def as_fake(self) -> dict:
        return {k: v.as_fake() for k, v in self.items.items()}

    def unpack_var_sequence(self, tx) -> list[VariableTracker]:
        return [key_tracker(tx, k) for k in self.items]

    def truth(self, tx) -> bool:
        return bool(self.items)

    def identity(self) -> Any:
        return self

    def getitem(self, key: VariableTracker, tx=None) -> VariableTracker:
        k = dict_key(key)
        if k not in self.items and self.default_factory is not None and tx is not None:
            value = self.default_factory.call_function(tx, [], {})  # a read that inserts
            self._check_mutable(tx, "__setitem__", [key, value], {})
            self.items[k] = value
        if k not in self.items:
            raise ObservedException(KeyError(key_constant(k)))
        return self.items[k]

    def _check_mutable(self, tx, name: str, args, kwargs) -> None:
        if self.source is not None:  # a dict from outside: replayed after the graph
            tx.output.side_effects.mutate_container(self, name, args, kwargs)

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        if name == "__getitem__":
            return self.getitem(args[0], tx)
        if name == "get":
            k = dict_key(args[0])
            return self.items.get(k, args[1] if len(args) > 1 else ConstantVariable(None))
        if name in ("keys", "values", "items") and not args:
            return DictViewVariable(self, name)
        if name in ("__contains__", "__len__"):
            value = dict_key(args[0]) in self.items if name == "__contains__" else len(self.items)
            return ConstantVariable(value)
        if name in ("copy", "__copy__"):
            return ConstDictVariable(self.items, user_cls=self.user_cls,
                                     default_factory=self.default_factory)
        if name == "__or__" and len(args) == 1:  # d | other: a new dict of d's class
            if not isinstance(args[0], ConstDictVariable):
                raise ObservedException(TypeError(
                    f"unsupported operand type(s) for |: '{self.user_cls.__name__}' and "
                    f"'{args[0].python_type().__name__}'"))
            merged = self.call_method(tx, "copy", [], {})
            merged.items.update(args[0].items)
            return merged
        if name == "__ior__" and len(args) == 1:  # d |= other: d.update(other), d itself
            self.call_method(tx, "update", args, {})
            return self
        if name in ("__setitem__", "update", "pop", "setdefault", "__delitem__", "clear") or (
                name == "move_to_end" and issubclass(self.user_cls, collections.OrderedDict)):
            if self.floats_as_tensors and name != "move_to_end":
                unimplemented(f"dict.{name} on a dict whose float {sorted(self.floats_as_tensors)}"
                              " the graph reads as a tensor input (an optimizer's param group, "
                              "its lr changed by a scheduler): the write runs natively")
            result = self._mutate(tx, name, args, kwargs)  # raises first (a missing key)
            self._check_mutable(tx, name, args, kwargs)  # then it is a mutation to replay
            return result
        unimplemented(f"dict.{name}")

    def _mutate(self, tx, name, args, kwargs) -> VariableTracker:
        if name == "__setitem__":
            self.items[dict_key(args[0])] = args[1]
        elif name == "update":
            for other in args:
                self.items.update(key_value_pairs(tx, other))
            self.items.update(kwargs)
        elif name == "move_to_end":
            key = dict_key(args[0])
            last = (args[1] if len(args) > 1 else kwargs.get("last", ConstantVariable(True)))
            value = self.items.pop(key)
            self.items = {**self.items, key: value} if last.as_python_constant() \
                else {key: value, **self.items}
        elif name == "pop":
            k = dict_key(args[0])
            if k not in self.items and len(args) == 1:
                raise ObservedException(KeyError(key_constant(k)))
            return self.items.pop(k, *args[1:])
        elif name == "setdefault":
            return self.items.setdefault(dict_key(args[0]),
                                         args[1] if len(args) > 1 else ConstantVariable(None))
        elif name == "__delitem__":
            k = dict_key(args[0])
            if k not in self.items:
                raise ObservedException(KeyError(key_constant(k)))
            del self.items[k]
        elif name == "clear":
            self.items.clear()
        return ConstantVariable(None)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name == "default_factory" and issubclass(self.user_cls, collections.defaultdict):
            return self.default_factory or ConstantVariable(None)
        return super().var_getattr(tx, name)

    def children(self) -> list[VariableTracker]:
        keys = [k.vt for k in self.items if isinstance(k, HashableTracker)]
        return [*keys, *self.items.values()]

    def is_built_container(self) -> bool:
        return self.source is None

    def reconstruct(self, codegen) -> str:
        if self.source is not None:
            return self.source.expr()
        literal = "{" + ", ".join(f"{key_expr(codegen, k)}: {codegen(v)}"
                                  for k, v in self.items.items()) + "}"
        if self.user_cls is dict:
            return literal
        cls = codegen.install_global(self.user_cls.__name__, self.user_cls)
        if self.user_cls is collections.defaultdict:
            return f"{cls}({self._factory_expr(codegen)}, {literal})"
        return f"{cls}({literal})"

    def _factory_expr(self, codegen) -> str:
        """The default factory by name: a builtin (``list``, ``int``) or a function from outside
        is installed as a global; anything else is rebuilt by its tracker."""
        factory = self.default_factory
        if factory is None:
            return "None"
        value = getattr(factory, "fn", None)
        if value is None and factory.is_python_constant():
            value = factory.as_python_constant()
        if callable(value) and getattr(factory, "source", None) is None:
            return codegen.install_global(getattr(value, "__name__", "factory"), value)
        return codegen(factory)

    def _repr_body(self) -> str:
        return ", ".join(f"{k!r}: {v!r}" for k, v in self.items.items())


def key_value_pairs(tx, other: VariableTracker) -> dict[Any, VariableTracker]:
    """What ``dict(other)`` / ``d.update(other)`` take from ``other``, as CPython's
    ``dict_merge`` does: a dict's items; a mapping's (an object with ``keys()``) ``other[k]``
    for each of its keys; else an iterable of key-value pairs (``[("a", x), ["b", y]]``,
    ``zip(keys, values)``), each of length 2 or a ValueError."""
    if isinstance(other, ConstDictVariable):
        return dict(other.items)
    if isinstance(other, UserDefinedObjectVariable) and hasattr(other.value, "keys"):
        keys = other.call_method(tx, "keys", [], {}).unpack_var_sequence(tx)
        return {dict_key(k): other.call_method(tx, "__getitem__", [k], {}) for k in keys}
    pairs = {}
    for i, pair in enumerate(other.unpack_var_sequence(tx)):
        items = pair.unpack_var_sequence(tx)
        if len(items) != 2:
            raise ObservedException(ValueError(f"dictionary update sequence element #{i} has "
                                               f"length {len(items)}; 2 is required"))
        pairs[dict_key(items[0])] = items[1]
    return pairs


class StoredInstanceDict(ConstDictVariable):
    """``obj.__dict__`` of an object (or module) from outside the frame: the real dict's items
    with the trace's pending stores and deletions on top (those are replayed on the object
    after the graph). It stands for the object's attribute storage, so a write through it is a
    store on the object past its class's hooks and descriptors (a property named ``a`` too):
    ``obj.a`` reads it back (where no property answers first), and it is replayed as the same
    write through ``obj.__dict__``.
    It has the real dict's source: after the replay, the real dict is what it shows. One made
    before a later ``obj.name = ...`` no longer shows the object: using it breaks the graph."""

    def __init__(self, tx, owner: VariableTracker, obj: Any, real: ConstDictVariable):
        super().__init__(real.items, real.source)
        self.owner, self.obj = owner, obj
        for name, stored in self._stores(tx):
            key = dict_key(ConstantVariable(name))
            if stored is DELETED:
                self.items.pop(key, None)
            else:
                self.items[key] = stored
        self.seen = self._stores(tx)

    def _stores(self, tx) -> list[tuple[str, Any]]:
        side_effects = tx.output.side_effects
        return [(name, side_effects.load_attr(self.obj, name))
                for name in side_effects.stored_names(self.obj)]

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        if [(n, id(v)) for n, v in self._stores(tx)] != [(n, id(v)) for n, v in self.seen]:
            unimplemented(f"{type(self.obj).__name__}.__dict__ used after this frame set an "
                          "attribute another way (the view made before does not show it)")
        side_effects = tx.output.side_effects
        if name == "__setitem__" and len(args) == 2 and args[0].is_python_constant():
            key = args[0].as_python_constant()
            side_effects.store_attr(self.owner, self.obj, key, args[1], "instance_dict_setitem")
            self.items[dict_key(args[0])] = args[1]
        elif name == "__delitem__" and len(args) == 1 and args[0].is_python_constant():
            key = args[0].as_python_constant()
            if not side_effects.delete_attr(self.owner, self.obj, key, "instance_dict_delitem"):
                raise ObservedException(KeyError(key))
            self.items.pop(dict_key(args[0]))
        elif name in _DICT_MUTATORS:
            unimplemented(f"{type(self.obj).__name__}.__dict__.{name} (only d[k] = v and "
                          "del d[k] are stores on the object)")
        else:
            return super().call_method(tx, name, args, kwargs)
        self.seen = self._stores(tx)
        return ConstantVariable(None)


class DictClassMethodVariable(VariableTracker):
    """``dict.fromkeys`` (``OrderedDict.fromkeys``, ``defaultdict.fromkeys``): a classmethod
    of a dict class, making a dict of that class while tracing."""

    def __init__(self, cls: type, name: str):
        super().__init__()
        self.cls, self.name = cls, name

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if self.name != "fromkeys":
            unimplemented(f"{self.cls.__name__}.{self.name}")
        bound = inspect.signature(lambda iterable, value=None: None).bind(*args, **kwargs)
        value = bound.arguments.get("value", ConstantVariable(None))
        keys = [dict_key(k) for k in bound.arguments["iterable"].unpack_var_sequence(tx)]
        return ConstDictVariable(dict.fromkeys(keys, value), user_cls=self.cls)

    def _repr_body(self) -> str:
        return f"{self.cls.__name__}.{self.name}"


DICT_CLASSES = (dict, collections.OrderedDict, collections.defaultdict)
DICT_CLASS_METHODS = ("fromkeys",)


class DictViewVariable(VariableTracker):
    """``d.keys()`` / ``d.values()`` / ``d.items()``: a live view, not a copy -- a key added to
    ``d`` later shows up in it, so its items are read from the dict's tracker each time, and it
    is rebuilt as ``<d>.items()`` on the very dict the transformed code passes on."""

    def __init__(self, dict_vt: ConstDictVariable, kind: str):
        super().__init__()
        self.dict_vt, self.kind = dict_vt, kind

    def python_type(self) -> type:
        return type(getattr({}, self.kind)())

    def unpack_var_sequence(self, tx) -> list[VariableTracker]:
        items = self.dict_vt.items
        if self.kind == "keys":
            return [key_tracker(tx, k) for k in items]
        if self.kind == "values":
            return list(items.values())
        return [TupleVariable([key_tracker(tx, k), v]) for k, v in items.items()]

    def truth(self, tx) -> bool:
        return bool(self.dict_vt.items)

    def identity(self) -> Any:
        return self

    def as_python_constant(self) -> Any:
        """A keys view (and an items view of constants) compares like a set (``==``, ``&``,
        ``|``): its constant is a real view of the same keys, in the same order."""
        if self.kind == "values":
            unimplemented("a values view compares by identity: not a constant")
        return getattr(self.dict_vt.as_python_constant() if self.kind == "items"
                       else dict.fromkeys(map(key_constant, self.dict_vt.items)), self.kind)()

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        if name == "__len__":
            return ConstantVariable(len(self.dict_vt.items))
        if name == "__contains__" and self.kind == "keys":
            return ConstantVariable(dict_key(args[0]) in self.dict_vt.items)
        if name == "__contains__":
            return ListVariable(self.unpack_var_sequence(tx)).call_method(tx, name, args, kwargs)
        unimplemented(f"dict_{self.kind}.{name}")

    def reconstruct(self, codegen) -> str:
        return f"{codegen(self.dict_vt)}.{self.kind}()"

    def children(self) -> list[VariableTracker]:
        return [self.dict_vt]

    def _repr_body(self) -> str:
        return f"{self.dict_vt!r}.{self.kind}()"


# dict's methods that change it: a user dict from outside the frame is only read while tracing
_DICT_MUTATORS = ("__setitem__", "__delitem__", "update", "pop", "popitem", "setdefault",
                  "clear", "move_to_end")


class UserDefinedDictVariable(ConstDictVariable):
    """An instance of a user's dict subclass (``class Registry(dict)``, transformers'
    ``ModelOutput``), mirroring torch/_dynamo/variables/user_defined.py's
    ``UserDefinedDictVariable``: its items are traced as a dict's, a method its class defines in
    Python is inlined with this tracker as ``self``, and a method it inherits from ``dict`` --
    or reaches through ``super()`` -- acts on the items.

    From outside the frame (a source): its class and keys are guarded, and it is only read: a
    mutation would have to be replayed through the class's own ``__setitem__`` after the graph,
    so it stops the trace instead. Built while tracing (:meth:`construct`, ``attrs`` not None):
    ``value`` is an empty instance, for its class; items and instance attributes live here and
    the object is built for real only if it leaves the graph (:func:`new_user_dict`)."""

    def __init__(self, items: dict[Any, VariableTracker], value: dict, source=None,
                 attrs: dict[str, VariableTracker] | None = None):
        super().__init__(items, source, user_cls=type(value))
        self.value, self.attrs = value, attrs

    @classmethod
    def construct(cls, tx, klass: type, args, kwargs) -> "UserDefinedDictVariable":
        """``klass(*args)``: ``klass.__new__`` for an empty instance, then its Python
        ``__init__`` inlined (a dataclass's generated one, say)."""
        from .functions import UserMethodVariable

        obj = cls({}, klass.__new__(klass), attrs={})
        init = inspect.getattr_static(klass, "__init__")
        if not isinstance(init, types.FunctionType):
            unimplemented(f"building a {klass.__name__} runs {init} (C code)")
        UserMethodVariable(init, obj).call_function(tx, args, kwargs)
        return obj

    def identity(self) -> Any:
        return self.value if self.attrs is None else self

    def as_python_constant(self) -> Any:
        unimplemented(f"a {type(self.value).__name__} is not a constant")

    def children(self) -> list[VariableTracker]:
        return [*self.items.values(), *(self.attrs or {}).values()]

    def python_method(self, name: str) -> types.FunctionType | None:
        """The class's own Python method ``name`` (None where ``dict``'s C method serves)."""
        method = inspect.getattr_static(type(self.value), name, None)
        return method if isinstance(method, types.FunctionType) else None

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        from .functions import UserMethodVariable

        method = self.python_method(name)
        if method is not None:  # the subclass's override, as Python would call it
            return UserMethodVariable(method, self).call_function(tx, args, kwargs)
        missing = self.python_method("__missing__")
        if name == "__getitem__" and missing is not None and dict_key(args[0]) not in self.items:
            # dict's own __getitem__ asks a subclass's __missing__ (Counter's 0)
            return UserMethodVariable(missing, self).call_function(tx, args, {})
        return self.call_base_method(tx, name, args, kwargs)

    def call_base_method(self, tx, name, args, kwargs) -> VariableTracker:
        """``dict``'s (or ``object``'s) own method: what an inherited method and
        ``super().name`` run."""
        if name == "__setattr__" and self.attrs is not None:  # object.__setattr__
            self.attrs[args[0].as_python_constant()] = args[1]
            return ConstantVariable(None)
        if name == "__init__" and self.attrs is not None:  # dict.__init__(*a, **k): update
            super().call_method(tx, "update", args, kwargs)
            return ConstantVariable(None)
        if name in _DICT_MUTATORS and self.attrs is None:
            unimplemented(f"{name} on a {type(self.value).__name__} from outside the frame "
                          "(replaying it would call the class's own methods)")
        return super().call_method(tx, name, args, kwargs)

    def store_attr(self, tx, name: str, value: VariableTracker) -> None:
        """``obj.name = value`` on an object built while tracing: through the class's own
        ``__setattr__`` where it has one in Python (``ModelOutput`` keeps fields as items too)."""
        self.call_method(tx, "__setattr__", [ConstantVariable(name), value], {})

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from .builder import VariableBuilder
        from .functions import UserFunctionVariable, UserMethodVariable

        if self.attrs is not None and name in self.attrs:  # set by the code traced so far
            return self.attrs[name]
        if name == "__dict__" and self.attrs is not None:
            view = ConstDictVariable({})
            view.items = self.attrs  # the same dict: writes through it are the object's
            return view
        static = inspect.getattr_static(self.value, name, None)
        if isinstance(static, property):
            return UserFunctionVariable(static.fget).call_function(tx, [self], {})
        if isinstance(static, types.FunctionType) and name not in vars(self.value):
            if self.source is not None:  # Registry.get = ... later must recompile
                tx.output.add_guard(Guard(AttrSource(TypeSource(self.source), name),
                                          GuardKind.ID_MATCH, static, tx.user_line()))
            return UserMethodVariable(static, self)
        if static is not None and any(static is vars(c).get(name) for c in (*DICT_CLASSES,
                                                                              object)):
            return BaseMethodVariable(self, name, self.call_base_method)  # dict's own
        if not hasattr(self.value, name):
            raise ObservedException(AttributeError(
                f"{type(self.value).__name__!r} object has no attribute {name!r}"))
        source = AttrSource(self.source, name) if self.source is not None else None
        return VariableBuilder(tx, source).wrap(getattr(self.value, name))

    def reconstruct(self, codegen) -> str:
        if self.source is not None:
            return self.source.expr()
        cls = codegen.install_global(type(self.value).__name__, type(self.value))
        items = ", ".join(f"{key_expr(codegen, k)}: {codegen(v)}" for k, v in self.items.items())
        attrs = ", ".join(f"{codegen.constant(k)}: {codegen(v)}" for k, v in self.attrs.items())
        build = codegen.install_global("new_user_dict", new_user_dict)
        return f"{build}({cls}, {{{items}}}, {{{attrs}}})"

    def _repr_body(self) -> str:
        return f"{type(self.value).__name__}: {super()._repr_body()}"


def new_user_dict(cls: type, items: dict, attrs: dict) -> dict:
    """What the transformed code calls to build a dict subclass's instance made while tracing:
    its items through its C base class's ``__setitem__`` (the class's own methods already ran
    while tracing), then its instance attributes."""
    obj = cls.__new__(cls)
    base = next(c for c in cls.__mro__ if c in DICT_CLASSES)
    for key, value in items.items():
        base.__setitem__(obj, key, value)
    obj.__dict__.update(attrs)
    return obj
