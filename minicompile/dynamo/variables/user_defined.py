"""Instances of user classes (mirrors torch/_dynamo/variables/user_defined.py's
``UserDefinedObjectVariable``): attributes read and stored as ``object``'s own protocol does it,
a class's ``__getattribute__`` / ``__setattr__`` written in Python inlined on the way, methods
inlined, ``==`` through the class's ``__eq__``, and the pickling answer ``copy.deepcopy`` asks
for."""

from __future__ import annotations

import collections.abc
import copyreg
import enum
import inspect
import operator
import types
from typing import Any, Callable

import torch

from ..exc import ObservedException, unimplemented
from ..guards import Guard, GuardKind
from ..side_effects import DELETED
from ..source import AttrSource, GenericAttrSource, TypeSource
from .base import VariableTracker
from .constant import ConstantVariable, is_plain_user_class
from .misc import BaseMethodVariable


class UserDefinedObjectVariable(VariableTracker):
    """An instance of a user class: attributes are read (and guarded), methods are inlined.

    An object built while tracing (``Calc(5)``, see :meth:`construct`) keeps its instance
    attributes here, in ``attrs``: nothing outside the frame can see it, so its ``__init__``'s
    stores are trace-time bookkeeping, not side effects to replay."""

    def __init__(self, value: Any, source=None, attrs: dict[str, VariableTracker] | None = None):
        super().__init__(source)
        self.value = value
        self.attrs = attrs  # None: an object from outside (its attributes are real)

    @classmethod
    def construct(cls, tx, klass: type, args, kwargs) -> "UserDefinedObjectVariable":
        """``klass(*args)`` for a plain user class: an empty real instance (for its type and
        class attributes) plus an inlined ``__init__`` that fills ``attrs``."""
        from .functions import UserMethodVariable

        obj = cls(object.__new__(klass), None, attrs={})
        init = inspect.getattr_static(klass, "__init__")
        if isinstance(init, types.FunctionType):
            UserMethodVariable(init, obj).call_function(tx, args, kwargs)
        elif args or kwargs:
            unimplemented(f"{klass.__name__}() takes no arguments")
        return obj

    def children(self) -> list[VariableTracker]:
        return list((self.attrs or {}).values())

    def is_built_container(self) -> bool:
        return self.source is None and self.attrs is not None

    def reconstruct(self, codegen) -> str:
        """An object built while tracing and still live (returned, or a local at a graph
        break) is built for real: a new instance of its class with the traced attributes."""
        if self.source is not None:
            return self.source.expr()
        if self.attrs is None:  # a logger, ...: passed as the object itself
            return codegen.install_global(type(self.value).__name__.lower(), self.value)
        if any(vt is self for vt in codegen.rebuilding):
            unimplemented(f"rebuilding {self}, which reaches itself through its attributes (an "
                          "exception whose __context__ chain is a cycle): no one expression "
                          "makes it")
        codegen.rebuilding.append(self)
        try:
            cls = codegen.install_global(type(self.value).__name__, type(self.value))
            attrs = ", ".join(f"{k!r}: {codegen(v)}" for k, v in self.attrs.items())
        finally:
            codegen.rebuilding.pop()
        return f"{codegen.install_global('new_object', new_object)}({cls}, {{{attrs}}})"

    def python_type(self) -> type:
        return type(self.value)

    def as_proxy(self) -> Any:
        """An enum member from outside is guarded by identity (builder.py): a constant of the
        graph (``Foo.apply(x, SomeEnum.A)``; FX prints it as ``SomeEnum.A``)."""
        if isinstance(self.value, enum.Enum) and self.attrs is None and self.source is not None:
            return self.value
        return super().as_proxy()

    def identity(self) -> Any:
        return self.value

    # -- exceptions: the links CPython keeps in C (``__context__``, ``__cause__``) -------------
    def exception_attrs(self, tx) -> dict[str, VariableTracker]:
        """The attributes of an exception made in the trace, where its links are kept (and
        rebuilt from, :func:`new_object`); made on first use for one that an operation raised
        (a ``KeyError`` from a dict), from its ``args``. An exception from outside the frame
        is refused: its links would be a side effect on C attributes."""
        if self.attrs is None:
            if self.source is not None:
                unimplemented(f"changing the __context__/__cause__ of {self}, an exception "
                              "from outside the frame")
            from .builder import SourcelessBuilder  # a cycle: builder wraps user objects

            self.attrs = {"args": SourcelessBuilder.wrap(tx, self.value.args)}
        return self.attrs

    def chain_context(self, tx, handled: VariableTracker | None) -> None:
        """This exception is raised while ``handled`` is being handled: CPython sets
        ``self.__context__ = handled`` (``_PyErr_SetObject``), first cutting ``handled``'s own
        chain where it reaches this exception, so that raising one seen before makes no
        cycle. A bare ``raise`` and a re-raise at the end of a handler do not come here."""
        if handled is None or handled.identity() is self.identity():
            return
        attrs = self.exception_attrs(tx)
        link, seen = handled, set()
        while isinstance(link, UserDefinedObjectVariable) and link.attrs is not None \
                and id(link) not in seen:  # (a chain from outside the frame has no trace-made link)
            seen.add(id(link))
            context = link.attrs.get("__context__")
            if context is not None and context.identity() is self.identity():
                link.attrs["__context__"] = ConstantVariable(None)
                break
            link = context
        attrs["__context__"] = handled

    # -- attributes: object's protocol, through the class's own hooks ---------------------------
    def python_hook(self, name: str) -> types.FunctionType | None:
        """The class's own ``__getattribute__`` / ``__setattr__`` when written in Python (None
        where ``object``'s serves; a hook in C is refused where it would be called)."""
        hook = inspect.getattr_static(type(self.value), name)
        if isinstance(hook, types.FunctionType):
            return hook
        if hook not in GENERIC_HOOKS and self.attrs is not None:
            unimplemented(f"{type(self.value).__name__}.{name} is C code")
        return None

    def var_getattr(self, tx, name: str) -> VariableTracker:
        """``obj.name`` (LOAD_ATTR, LOAD_METHOD, ``getattr``): the class's ``__getattribute__``
        inlined where it has one in Python -- for every lookup, methods too, as CPython calls
        it -- else object's own lookup."""
        from .functions import UserMethodVariable

        hook = self.python_hook("__getattribute__")
        if hook is None:
            return self.generic_getattr(tx, name)
        if inspect.getattr_static(type(self.value), "__getattr__", None) is not None:
            unimplemented(f"{type(self.value).__name__} has both __getattribute__ and "
                          "__getattr__ (the fallback on AttributeError is not traced)")
        return UserMethodVariable(hook, self).call_function(tx, [ConstantVariable(name)], {})

    def generic_getattr(self, tx, name: str) -> VariableTracker:
        """``object.__getattribute__(obj, name)`` (CPython's ``PyObject_GenericGetAttr``): what
        this frame stored, a property, the instance's own attribute, a method, then the class
        attribute or the real object's value."""
        from .builder import VariableBuilder
        from .functions import UserFunctionVariable, UserMethodVariable

        if self.attrs is None:  # stored earlier in this trace, replayed after the graph
            stored = tx.output.side_effects.load_attr(self.value, name)
            if stored is DELETED:
                raise ObservedException(AttributeError(name))
            if stored is not None:
                return stored
        special = OBJECT_ATTRIBUTES.get(name)
        if special is not None and special[0](type(self.value)):
            return special[1](self, tx)
        static = inspect.getattr_static(self.value, name, None)
        if isinstance(static, property):
            return UserFunctionVariable(static.fget).call_function(tx, [self], {})
        if self.attrs is not None and name in self.attrs:  # set by code traced so far
            return self.attrs[name]
        source, read = self.attr_reader(name)
        in_instance = name in self.real_dict()  # a function there is unbound
        if isinstance(static, (types.FunctionType, staticmethod, classmethod)) and not in_instance:
            if isinstance(static, types.FunctionType):
                if self.source is not None:
                    # C.go = ... later must recompile: guard the class attribute's identity
                    tx.output.add_guard(Guard(AttrSource(TypeSource(self.source), name),
                                              GuardKind.ID_MATCH, static, tx.user_line()))
                return UserMethodVariable(static, self, source)
        try:
            value = read(self.value, name)
        except AttributeError:
            raise ObservedException(AttributeError(
                f"{type(self.value).__name__!r} object has no attribute {name!r}")) from None
        return VariableBuilder(tx, source, attribute_of_object=in_instance).wrap(value)

    def attr_reader(self, name: str) -> tuple[Any, Callable]:
        """(source, read) for an attribute the real object holds. An object built while
        tracing is an empty instance: only its class answers, past any hook. A hook of the
        class was inlined already, so the value is read past it too, and so is its guard
        (``object.__getattribute__(L['c'], 'a')``); otherwise by plain ``getattr``, which
        also reaches a C ``__getattribute__`` or ``__getattr__`` of the class."""
        if self.attrs is not None:
            return None, object.__getattribute__
        if self.python_hook("__getattribute__") is not None:
            source = GenericAttrSource(self.source, name) if self.source else None
            return source, object.__getattribute__
        return (AttrSource(self.source, name) if self.source else None), getattr

    def real_dict(self) -> dict:
        """The real object's ``__dict__``, read past the class's hooks ({} without one)."""
        try:
            return object.__getattribute__(self.value, "__dict__")
        except AttributeError:
            return {}

    def store_attr(self, tx, name: str, value: VariableTracker) -> None:
        """``obj.name = value`` (STORE_ATTR, ``setattr``): the class's ``__setattr__`` inlined
        where it has one in Python (its ``object.__setattr__(self, name, value)`` comes back
        to :meth:`generic_setattr`), else object's own store."""
        from .functions import UserMethodVariable

        hook = self.python_hook("__setattr__")
        if hook is None:
            self.generic_setattr(tx, name, value)
        else:
            UserMethodVariable(hook, self).call_function(tx, [ConstantVariable(name), value], {})

    def generic_setattr(self, tx, name: str, value: VariableTracker) -> VariableTracker:
        """``object.__setattr__(obj, name, value)`` (``PyObject_GenericSetAttr``): a property's
        setter, else the instance's ``__dict__`` -- ``attrs`` for an object built while
        tracing, a side effect replayed after the graph for one from outside."""
        from .functions import UserFunctionVariable
        from .nn_module import NNModuleVariable

        descriptor = inspect.getattr_static(type(self.value), name, None)
        if isinstance(descriptor, property):
            if descriptor.fset is None:
                raise ObservedException(AttributeError(f"property {name!r} of "
                                                       f"{type(self.value).__name__!r} object "
                                                       "has no setter"))
            UserFunctionVariable(descriptor.fset).call_function(tx, [self, value], {})
        elif name in EXCEPTION_LINKS and isinstance(self.value, BaseException):
            attrs = self.exception_attrs(tx)
            attrs[name] = value
            if name == "__cause__":  # as BaseException's setter: the cause replaces the context
                attrs["__suppress_context__"] = ConstantVariable(True)
        elif hasattr(type(descriptor), "__set__"):  # a __slots__ member, a C descriptor
            unimplemented(f"assigning {type(self.value).__name__}.{name}, a {type(descriptor)}")
        elif self.attrs is not None:
            self.attrs[name] = value
        elif isinstance(value, NNModuleVariable) or isinstance(
                getattr(value, "example_value", None), torch.nn.Parameter):
            unimplemented(f"assigning a module or parameter to .{name} (changes the module)")
        else:  # replayed past the class's own __setattr__, which ran while tracing
            past_hook = type(self.value).__setattr__ is not object.__setattr__
            tx.output.side_effects.store_attr(self, self.value, name, value,
                                              "object_setattr" if past_hook else "setattr")
        return ConstantVariable(None)  # what object.__setattr__ returns

    def delete_attr(self, tx, name: str) -> VariableTracker:
        """``del obj.name`` (DELETE_ATTR, ``delattr``): the class's ``__delattr__`` inlined where
        it has one in Python (its ``object.__delattr__(self, name)`` comes back to
        :meth:`generic_delattr`), else object's own deletion."""
        from .functions import UserMethodVariable

        hook = self.python_hook("__delattr__")
        if hook is None:
            return self.generic_delattr(tx, name)
        return UserMethodVariable(hook, self).call_function(tx, [ConstantVariable(name)], {})

    def generic_delattr(self, tx, name: str) -> VariableTracker:
        """``object.__delattr__(obj, name)``: a property's deleter, else the instance's
        ``__dict__`` -- ``attrs`` for an object built while tracing, a side effect replayed after
        the graph for one from outside (past the class's own ``__delattr__``, already traced)."""
        from .functions import UserFunctionVariable

        cls = type(self.value)
        if cls.__delattr__ is not object.__delattr__ and self.python_hook("__delattr__") is None:
            unimplemented(f"deleting {cls.__name__}.{name} runs {cls.__name__}.__delattr__, C code")
        descriptor = inspect.getattr_static(cls, name, None)
        if isinstance(descriptor, property):
            if descriptor.fdel is None:
                raise ObservedException(AttributeError(f"property {name!r} of {cls.__name__!r} "
                                                       "object has no deleter"))
            UserFunctionVariable(descriptor.fdel).call_function(tx, [self], {})
        elif hasattr(type(descriptor), "__delete__"):
            unimplemented(f"deleting {cls.__name__}.{name}, a {type(descriptor).__name__}")
        elif self.attrs is not None:
            if self.attrs.pop(name, None) is None:
                raise ObservedException(AttributeError(name))
        elif not tx.output.side_effects.delete_attr(
                self, self.value, name, "object_delattr" if self.python_hook("__delattr__")
                else "delattr"):
            raise ObservedException(AttributeError(name))
        return ConstantVariable(None)

    def call_base_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        """``object``'s own method ``name`` on this object: what ``object.__setattr__(obj,
        ...)`` and ``super().__setattr__(...)`` in a class's hook run."""
        method = OBJECT_METHODS.get(name)
        if method is None:
            unimplemented(f"object.{name} on a {type(self.value).__name__}")
        return method(self, tx, *args, **kwargs)

    def traced_hasattr(self, tx, name: str) -> VariableTracker | None:
        """``hasattr(obj, name)`` where the answer needs the class's ``__getattribute__``
        traced (an object built while tracing, or one this frame stored into): does the
        traced lookup raise AttributeError? None where the real object can answer."""
        if self.python_hook("__getattribute__") is None or (
                self.attrs is None and not tx.output.side_effects.stores_attrs_of(self.value)):
            return None
        from .generators import exception_type

        try:
            self.var_getattr(tx, name)
        except ObservedException as e:
            if not issubclass(exception_type(e), AttributeError):
                raise
            return ConstantVariable(False)
        return ConstantVariable(True)

    def reduce_ex(self, tx, protocol: VariableTracker) -> VariableTracker:
        """``obj.__reduce_ex__(protocol)`` of a plain object, as ``object.__reduce_ex__``
        answers for protocols 2 and up: ``(copyreg.__newobj__, (cls,), obj.__dict__ or None,
        None, None)``. ``copy.deepcopy`` then rebuilds the object from it in traced code: an
        empty instance (``cls.__new__(cls)``), its ``__dict__`` updated with a deep copy."""
        from .builder import SourcelessBuilder
        from .dicts import ConstDictVariable
        from .lists import TupleVariable

        if not (protocol.is_python_constant() and protocol.as_python_constant() >= 2):
            unimplemented("obj.__reduce_ex__ for a pickle protocol below 2")
        state = self.instance_dict(tx)
        if isinstance(state, ConstDictVariable) and not state.items:
            state = ConstantVariable(None)  # an empty __dict__: no state, as object's answer
        cls = SourcelessBuilder.wrap(tx, type(self.value))
        return TupleVariable([SourcelessBuilder.wrap(tx, copyreg.__newobj__), TupleVariable([cls]),
                              state, ConstantVariable(None), ConstantVariable(None)])

    def instance_dict(self, tx) -> VariableTracker:
        """``obj.__dict__``: for an object built while tracing, a dict over ``attrs`` itself
        (what the code stored is there, and writes through it are the object's)."""
        from .builder import VariableBuilder
        from .dicts import ConstDictVariable, StoredInstanceDict

        if isinstance(self.value, BaseException):  # its ``args`` is kept among the attrs
            unimplemented(f"{type(self.value).__name__}.__dict__ of an exception")
        if self.attrs is not None:
            view = ConstDictVariable({})
            view.items = self.attrs
            return view
        source, read = self.attr_reader("__dict__")
        real = VariableBuilder(tx, source).wrap(read(self.value, "__dict__"))
        # the object's attribute storage: what this frame stores, either way, shows in both
        return StoredInstanceDict(tx, self, self.value, real)

    def unpack_var_sequence(self, tx) -> list[VariableTracker]:
        """``for item in obj`` over a ``collections.abc.Sequence`` whose ``__iter__`` is the
        ABC's own (``obj[0], obj[1], ...`` until IndexError): ``obj[i]`` for ``i`` below
        ``len(obj)``, the two methods inlined; ``len`` is the bound the Sequence contract sets."""
        from .functions import UserMethodVariable

        cls = type(self.value)
        getitem, length = (inspect.getattr_static(cls, n, None) for n in ("__getitem__", "__len__"))
        if not (isinstance(self.value, collections.abc.Sequence)
                and inspect.getattr_static(cls, "__iter__") is collections.abc.Sequence.__iter__
                and isinstance(getitem, types.FunctionType)
                and isinstance(length, types.FunctionType)):
            return super().unpack_var_sequence(tx)
        n = UserMethodVariable(length, self).call_function(tx, [], {}).as_python_constant()
        return [UserMethodVariable(getitem, self).call_function(tx, [ConstantVariable(i)], {})
                for i in range(n)]

    def rich_compare(self, tx, name: str, other: VariableTracker) -> VariableTracker:
        """``self == other`` (name ``__eq__``) or ``self != other`` (``__ne__``): the class's
        Python method is inlined; without one, ``!=`` negates ``==`` (as ``object.__ne__``
        does) and ``==`` compares identities (``object.__eq__``'s answer, after its
        NotImplemented). May return NotImplemented, for the caller to try the other operand."""
        from .functions import UserMethodVariable

        method = inspect.getattr_static(type(self.value), name, None)
        if isinstance(method, types.FunctionType):
            return UserMethodVariable(method, self).call_function(tx, [other], {})
        if method is not getattr(object, name):  # C code of its own (an ndarray's ==)
            unimplemented(f"{type(self.value).__name__}.{name} is not Python code")
        if name == "__ne__":
            eq = self.rich_compare(tx, "__eq__", other)
            if eq.is_python_constant() and eq.as_python_constant() is NotImplemented:
                return eq
            return ConstantVariable(not eq.truth(tx))
        return ConstantVariable(self.identity() is other.identity())

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        from .functions import UserMethodVariable

        call = getattr(type(self.value), "__call__", None)
        if not isinstance(call, types.FunctionType):
            if isinstance(self.value, (types.BuiltinFunctionType, types.MethodWrapperType)):
                unimplemented(f"calling {self.value.__qualname__}: C code the tracer has no "
                              "model for")
            unimplemented(f"calling an instance of {type(self.value).__name__}")
        return UserMethodVariable(call, self).call_function(tx, args, kwargs)

    def _repr_body(self) -> str:
        return type(self.value).__name__


# Attributes ``object.__getattribute__`` answers itself: name -> (for which classes, how).
# The attribute hooks that are object's own protocol (PyObject_GenericGetAttr and ...SetAttr):
# object's, and BaseException's slot wrappers of the same functions
GENERIC_HOOKS = [getattr(cls, name) for cls in (object, BaseException)
                 for name in ("__getattribute__", "__setattr__", "__delattr__")]

# An exception's links to others, C attributes of BaseException, kept among the attributes of
# an exception made in the trace (in this order: setting __cause__ sets __suppress_context__)
EXCEPTION_LINKS = ("__context__", "__cause__", "__suppress_context__")

OBJECT_ATTRIBUTES: dict[str, tuple[Callable[[type], bool], Callable]] = {
    "__dict__": (lambda cls: True, UserDefinedObjectVariable.instance_dict),
    "__reduce_ex__": (lambda cls: reduces_plainly(cls),  # the pickling answer deepcopy asks for
                      lambda obj, tx: BaseMethodVariable(obj, "__reduce_ex__",
                                                         obj.call_base_method)),
}

# ``object``'s methods on an instance, as a class's hooks call them (``object.__setattr__``,
# ``super().__getattribute__``): name -> the model, called as (tracker, tx, *args).
OBJECT_METHODS: dict[str, Callable] = {
    "__getattribute__": lambda obj, tx, name: obj.generic_getattr(tx, name.as_python_constant()),
    "__setattr__": lambda obj, tx, name, value: obj.generic_setattr(
        tx, name.as_python_constant(), value),
    "__delattr__": lambda obj, tx, name: obj.generic_delattr(tx, name.as_python_constant()),
    "__reduce_ex__": UserDefinedObjectVariable.reduce_ex,
}


def identity_equal(tx, a: VariableTracker, b: VariableTracker) -> bool:
    """``a is b or a == b`` as ``in`` and ``list.index`` use it; tensors only by identity,
    user objects through their ``__eq__``."""
    if a.is_python_constant() and b.is_python_constant():
        return a.as_python_constant() == b.as_python_constant()
    a.pin_identity(), b.pin_identity()
    if a.identity() is b.identity():
        return True
    equal = user_compare("__eq__")(tx, a, b)
    return equal is not None and equal.truth(tx)


def user_compare(name: str) -> Callable:
    """``a == b`` / ``a != b`` when a user object is an operand: Python's protocol -- the left
    operand's method, then the right one's if the left returned NotImplemented, then identity
    (``object``'s default). None (not handled here) when neither operand is a user object."""

    def compare(tx, a, b):
        users = [(x, y) for x, y in ((a, b), (b, a)) if isinstance(x, UserDefinedObjectVariable)]
        for obj, other in users:
            result = obj.rich_compare(tx, name, other)
            if not (result.is_python_constant() and result.as_python_constant() is NotImplemented):
                return result
        if users:
            return ConstantVariable((a.identity() is b.identity()) == (name == "__eq__"))
        return None

    return compare


# Python's binary-operator protocol on user objects: the left operand's method, then the right
# operand's reflected one (first, where the right's class is a subclass of the left's that
# overrides it); an in-place operator tries its own method before the binary protocol
BINARY_METHODS = {op: (f"__{name}__", f"__r{name}__") for op, name in (
    (operator.add, "add"), (operator.sub, "sub"), (operator.mul, "mul"),
    (operator.truediv, "truediv"), (operator.floordiv, "floordiv"), (operator.mod, "mod"),
    (operator.pow, "pow"), (operator.matmul, "matmul"), (operator.and_, "and"),
    (operator.or_, "or"), (operator.xor, "xor"), (operator.lshift, "lshift"),
    (operator.rshift, "rshift"))}
INPLACE_METHODS = {getattr(operator, f"i{op.__name__.rstrip('_')}"): (f"__i{forward[2:]}", op)
                   for op, (forward, _) in BINARY_METHODS.items()}


def user_binary_op(op: Callable) -> Callable:
    """``a + b`` (``a += b``) when a user object is an operand: its class's Python methods, in
    the protocol's order (above), until one returns something other than NotImplemented. None
    (not handled here) when no user object has the method, or one has it in C."""
    if op in INPLACE_METHODS:
        inplace, binary = INPLACE_METHODS[op]
        fallback = user_binary_op(binary)
        return lambda tx, a, b: _call_user_operator(tx, a, b, inplace) or fallback(tx, a, b)
    forward, reflected = BINARY_METHODS[op]

    def apply(tx, a, b):
        order = [(a, b, forward), (b, a, reflected)]
        if _overrides_reflected(a, b, reflected):
            order.reverse()
        for obj, other, name in order:
            result = _call_user_operator(tx, obj, other, name)
            if result is not None:
                return result
        return None

    return apply


def _overrides_reflected(a: VariableTracker, b: VariableTracker, reflected: str) -> bool:
    if not (isinstance(a, UserDefinedObjectVariable) and isinstance(b, UserDefinedObjectVariable)):
        return False
    left, right = type(a.value), type(b.value)
    return right is not left and issubclass(right, left) and \
        inspect.getattr_static(right, reflected, None) is not \
        inspect.getattr_static(left, reflected, None)


def _call_user_operator(tx, obj: VariableTracker, other: VariableTracker,
                        name: str) -> VariableTracker | None:
    from .functions import UserMethodVariable

    if not isinstance(obj, UserDefinedObjectVariable):
        return None
    method = inspect.getattr_static(type(obj.value), name, None)
    if not isinstance(method, types.FunctionType):  # none, or C code: the caller's business
        return None
    result = UserMethodVariable(method, obj).call_function(tx, [other], {})
    if result.is_python_constant() and result.as_python_constant() is NotImplemented:
        return None
    return result


def reduces_plainly(cls: type) -> bool:
    """Does ``object.__reduce_ex__`` describe instances of ``cls`` (a plain class with no
    pickling hooks of its own: no ``__reduce__``, ``__getstate__``, ``__getnewargs__`` or
    ``__slots__``)?"""
    own = lambda name: inspect.getattr_static(cls, name, None)  # noqa: E731
    return (is_plain_user_class(cls) and own("__reduce_ex__") is object.__reduce_ex__
            and own("__reduce__") is object.__reduce__
            and own("__getstate__") is getattr(object, "__getstate__", None)
            and own("__getnewargs_ex__") is None and own("__getnewargs__") is None
            and not any("__slots__" in vars(k) for k in cls.__mro__))


def new_object(cls: type, attrs: dict[str, Any]) -> Any:
    """What the transformed code calls to rebuild an object built while tracing (an exception
    through its own ``__new__``, which keeps ``args`` where ``e.args`` reads them; a builtin
    one, an operation raised, through its ``__init__`` too, which sets what it derives from
    them: ``StopIteration.value``, ``OSError.errno``)."""
    if issubclass(cls, BaseException):
        attrs = dict(attrs)
        args = attrs.pop("args", ())
        obj = cls(*args) if cls.__module__ == "builtins" else cls.__new__(cls, *args)
        for name in EXCEPTION_LINKS:  # C attributes: set through their descriptors, in order
            if name in attrs:
                setattr(obj, name, attrs.pop(name))
    else:
        obj = object.__new__(cls)
    object.__getattribute__(obj, "__dict__").update(attrs)  # past the class's own hooks
    return obj
