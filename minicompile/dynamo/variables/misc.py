"""The remaining kinds of values (mirrors torch/_dynamo/variables/misc.py and ctx_manager.py):
bound attributes waiting to be called, Python modules, grad-mode context managers, ``super()``,
and instances of user classes."""

from __future__ import annotations

import collections.abc
import contextlib
import copyreg
import inspect
import types
from typing import Any, Callable

import torch

from ... import names
from ..exc import ObservedException, unimplemented
from ..guards import Guard, GuardKind
from ..source import AttrSource, TypeSource
from .arguments import check_arguments
from .base import VariableTracker
from .constant import ConstantVariable, is_plain_user_class


class GetAttrVariable(VariableTracker):
    """``obj.name`` where calling it is the interesting part (``x.sum`` then CALL)."""

    def __init__(self, obj: VariableTracker, name: str, source=None):
        super().__init__(source)
        self.obj, self.name = obj, name

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        check_arguments(self.obj, self.name, args, kwargs)  # arguments.py
        return self.obj.call_method(tx, self.name, args, kwargs)

    def reconstruct(self, codegen) -> str:
        return names.attr(codegen(self.obj), self.name)

    def children(self) -> list[VariableTracker]:
        return [self.obj]

    def _repr_body(self) -> str:
        return f"{self.obj!r}.{self.name}"


class BaseMethodVariable(GetAttrVariable):
    """A method of a C base class bound to a tracker (``dict.get`` on a dict subclass, by
    inheritance or ``super().get``): ``call`` answers for the base class, never reaching an
    override of the same name in the subclass."""

    def __init__(self, obj: VariableTracker, name: str, call: Callable):
        super().__init__(obj, name)
        self.call = call

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        return self.call(tx, self.name, args, kwargs)


class PythonModuleVariable(VariableTracker):
    """A module such as ``torch``, ``torch.nn.functional``, ``math`` or a user's module."""

    def __init__(self, value: types.ModuleType, source=None):
        super().__init__(source)
        self.value = value

    def python_type(self) -> type:
        return types.ModuleType

    def as_python_constant(self) -> Any:
        return self.value

    def identity(self) -> Any:
        return self.value

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from .builder import VariableBuilder

        if not hasattr(self.value, name):
            raise ObservedException(AttributeError(
                f"module {self.value.__name__!r} has no attribute {name!r}"))
        value = getattr(self.value, name)
        source = AttrSource(self.source, name) if self.source else None
        # torch's own namespace does not change under us: no guard per torch function.
        trusted = self.value.__name__.split(".")[0] in ("torch", "math", "operator", "builtins")
        return VariableBuilder(tx, source).wrap(value, guard=not trusted)

    def reconstruct(self, codegen) -> str:
        """By its source, else (``import torch._dynamo`` inside a function binds a local that
        has none) as an installed name: a module is the same object wherever it is read."""
        if self.source is not None:
            return self.source.expr()
        return codegen.install_global(self.value.__name__.split(".")[-1], self.value)

    def _repr_body(self) -> str:
        return self.value.__name__


class ContextManagerVariable(VariableTracker):
    """A context manager traced through ``with``: ``__enter__``/``__exit__`` call ``enter`` and
    ``exit``; ``fresh(writer)`` is the source of a new, not yet entered, one that a resume
    function enters again after a break inside the ``with`` (``writer``: the break's
    ``BreakWriter``, which names globals)."""

    def enter(self, tx) -> VariableTracker:
        raise NotImplementedError

    def exit(self, tx, *exc_info: VariableTracker) -> VariableTracker:
        """``__exit__(type, value, traceback)``: three Nones on a normal exit."""
        return ConstantVariable(False)  # False: exceptions are not swallowed

    def fresh(self, writer) -> str:
        raise NotImplementedError

    resumable = True  # ``fresh`` makes one a resume function can enter again

    METHODS = ("__enter__", "__exit__")  # the methods call_method answers

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name in self.METHODS:
            return GetAttrVariable(self, name)
        unimplemented(f"{type(self).__name__} attribute {name}")

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        if name == "__enter__":
            return self.enter(tx)
        if name == "__exit__":
            return self.exit(tx, *args)
        unimplemented(f"{type(self).__name__}.{name}()")


class GradModeVariable(ContextManagerVariable):
    """``torch.no_grad()`` / ``torch.enable_grad()`` / ``torch.set_grad_enabled(b)``.

    Entering it changes grad mode in the graph (a ``torch._C._set_grad_enabled`` node, as real
    Dynamo emits) and in the tracer too, so fake tensors get the right ``requires_grad``."""

    def __init__(self, target: bool, entered_prev: bool | None = None):
        super().__init__()
        self.target, self.prev = target, entered_prev

    @staticmethod
    def set_mode(tx, enabled: bool) -> None:
        torch._C._set_grad_enabled(enabled)
        tx.output.create_proxy("call_function", torch._C._set_grad_enabled, (enabled,), {})

    def enter(self, tx) -> VariableTracker:
        if self.prev is None:  # set_grad_enabled(b) already switched when it was called
            self.prev = torch.is_grad_enabled()
            self.set_mode(tx, self.target)
        tx.block_stack.append(self)
        return ConstantVariable(None)

    def exit(self, tx, *exc_info: VariableTracker) -> VariableTracker:
        self.set_mode(tx, self.prev)
        if tx.block_stack and tx.block_stack[-1] is self:
            tx.block_stack.pop()
        return super().exit(tx)

    METHODS = ("__enter__", "__exit__", "clone")

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        if name == "clone" and not args and not kwargs:  # what @torch.no_grad() enters per call
            return GradModeVariable(self.target)
        return super().call_method(tx, name, args, kwargs)

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        """``torch.no_grad()(fn)`` -- the decorator form, ``@torch.no_grad()`` on a nested
        ``def``: a function that runs ``fn`` inside this grad mode."""
        if len(args) != 1 or kwargs or self.prev is not None:
            unimplemented(f"calling {self} with {args}")
        return GradModeWrappedFunction(self.target, args[0])

    def fresh(self, writer) -> str:
        # switches only in __enter__: a set_grad_enabled(b) object is rebuilt as the
        # no_grad/enable_grad it acts as
        return f"{writer.torch}.{'enable_grad' if self.target else 'no_grad'}()"

    def _repr_body(self) -> str:
        return f"grad_enabled={self.target}"


class AutocastVariable(ContextManagerVariable):
    """``torch.autocast(device_type, dtype=...)``: entering it puts a
    ``torch.amp._enter_autocast`` node in the graph (and ``_exit_autocast`` on the way out),
    as real Dynamo does. Autocast is also switched on while tracing, so the fake tensors get the
    dtypes autocast gives; AOT autograd, which runs the graph under its dispatcher, then
    records the casts the region implies as ATen ops, and the kernels compute them."""

    def __init__(self, device_type: str, dtype: torch.dtype | None, enabled: bool,
                 cache_enabled: bool | None):
        super().__init__()
        self.args = (device_type, dtype, enabled, cache_enabled)
        self.mode: Any = None  # the real autocast entered while tracing
        self.node: Any = None  # the graph's _enter_autocast node, which _exit_autocast takes

    def enter(self, tx) -> VariableTracker:
        # (torch's autocast under a name real Dynamo does not trace into; torch 2.11 has no such
        # name, and the class itself does the same)
        unmanaged = getattr(torch.amp.autocast_mode, "_UnmanagedAutocast", torch.amp.autocast)
        self.mode = unmanaged(*self.args)
        self.mode.__enter__()
        self.node = tx.output.create_proxy("call_function", torch.amp._enter_autocast,
                                           self.args, {})
        tx.block_stack.append(self)
        tx.output.active_autocasts.append(self)  # left for real by convert_frame, whatever happens
        return ConstantVariable(None)

    def exit(self, tx, *exc_info: VariableTracker) -> VariableTracker:
        self.leave_while_tracing(tx.output)
        tx.output.create_proxy("call_function", torch.amp._exit_autocast, (self.node,), {})
        if tx.block_stack and tx.block_stack[-1] is self:
            tx.block_stack.pop()
        return super().exit(tx)

    def leave_while_tracing(self, output) -> None:
        """Leave the real autocast entered for the fake tensors (at the region's end, or when
        the trace stops inside it)."""
        self.mode.__exit__(None, None, None)
        output.active_autocasts.remove(self)

    def fresh(self, writer) -> str:
        device_type, dtype, enabled, cache_enabled = self.args
        dtype = "None" if dtype is None else f"{writer.torch}.{str(dtype).split('.')[-1]}"
        return (f"{writer.torch}.autocast({device_type!r}, dtype={dtype}, enabled={enabled!r}, "
                f"cache_enabled={cache_enabled!r})")

    def _repr_body(self) -> str:
        return ", ".join(map(str, self.args))


class GradModeWrappedFunction(VariableTracker):
    """What ``@torch.no_grad()`` / ``@torch.enable_grad()`` makes of a function: each call is
    traced between entering and leaving the grad mode, as the ``with`` inside the real wrapper
    would run it."""

    def __init__(self, target: bool, fn: VariableTracker):
        super().__init__()
        self.target, self.fn = target, fn

    def python_type(self) -> type:
        return types.FunctionType

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        ctx = GradModeVariable(self.target)
        ctx.enter(tx)
        result = self.fn.call_function(tx, args, kwargs)
        ctx.exit(tx)
        return result

    def children(self) -> list[VariableTracker]:
        return [self.fn]

    def _repr_body(self) -> str:
        return f"grad_enabled={self.target}, {self.fn!r}"


class NullContextVariable(ContextManagerVariable):
    """``contextlib.nullcontext(enter_result)``: a ``with`` that changes nothing; ``as`` binds
    ``enter_result`` (real Dynamo's ``NullContextVariable``). Across a break the resume
    function enters a fresh ``nullcontext()`` (``as`` was bound when it was entered)."""

    def __init__(self, enter_result: VariableTracker | None = None):
        super().__init__()
        self.enter_result = enter_result if enter_result is not None else ConstantVariable(None)

    def enter(self, tx) -> VariableTracker:
        return self.enter_result

    def fresh(self, writer) -> str:
        return f"{writer.codegen.install_global('nullcontext', contextlib.nullcontext)}()"


class WithExitFunctionVariable(VariableTracker):
    """What BEFORE_WITH leaves on the stack: the normal exit path calls it with three Nones."""

    def __init__(self, ctx: VariableTracker):
        super().__init__()
        self.ctx = ctx

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        return self.ctx.call_method(tx, "__exit__", args, kwargs)

    def resumable(self) -> bool:
        """Whether a resume function can enter the context again after a graph break inside
        the block (a user's class or generator cannot be re-entered without running its
        ``__enter__`` twice)."""
        return isinstance(self.ctx, ContextManagerVariable) and self.ctx.resumable


class TracebackVariable(VariableTracker):
    """The traceback a ``with`` block's ``__exit__`` receives when the block raised: not None,
    as CPython's; anything else about it is not traced."""

    def python_type(self) -> type:
        return types.TracebackType

    def identity(self) -> Any:
        return self


def bind_method(tx, owner: VariableTracker, attr: Any, source) -> VariableTracker:
    """Turn what a class lookup found (function, property, staticmethod) into a tracker."""
    from .builder import VariableBuilder
    from .functions import UserFunctionVariable, UserMethodVariable

    if isinstance(attr, types.MethodType):
        return UserMethodVariable(attr.__func__, owner, source)
    if isinstance(attr, types.FunctionType):
        return UserFunctionVariable(attr, source)
    return VariableBuilder(tx, source).wrap(attr)


class SuperVariable(VariableTracker):
    """``super()`` (3.11: CALL on the builtin; 3.12: LOAD_SUPER_ATTR)."""

    def __init__(self, cls: type, obj: VariableTracker):
        super().__init__()
        self.cls, self.obj = cls, obj

    def children(self) -> list[VariableTracker]:
        return [self.obj]

    def var_getattr(self, tx, name: str) -> VariableTracker:
        value = getattr(self.obj, "value", None)
        if value is None:
            unimplemented(f"super() of {self.obj}")
        attr = getattr(super(self.cls, value), name)
        if getattr(attr, "__self__", None) is value and not isinstance(attr, types.MethodType):
            # a C method bound to the object (``super().get`` in a dict subclass): the
            # tracker answers for its base class
            call_base = getattr(self.obj, "call_dict_method", None)
            if call_base is None:
                unimplemented(f"super().{name} of a {type(value).__name__} is C code")
            return BaseMethodVariable(self.obj, name, call_base)
        return bind_method(tx, self.obj, attr, None)


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

    def store_attr(self, name: str, value: VariableTracker) -> None:
        self.attrs[name] = value

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
        cls = codegen.install_global(type(self.value).__name__, type(self.value))
        attrs = ", ".join(f"{k!r}: {codegen(v)}" for k, v in self.attrs.items())
        return f"{codegen.install_global('new_object', new_object)}({cls}, {{{attrs}}})"

    def python_type(self) -> type:
        return type(self.value)

    def identity(self) -> Any:
        return self.value

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from .builder import VariableBuilder
        from .functions import UserFunctionVariable, UserMethodVariable

        source = AttrSource(self.source, name) if self.source else None
        if name == "__dict__":
            return self.instance_dict(tx)
        if name == "__reduce_ex__" and reduces_plainly(type(self.value)):
            return BaseMethodVariable(self, name, lambda tx, _name, args, kwargs:
                                      self.reduce_ex(tx, *args, **kwargs))
        static = inspect.getattr_static(self.value, name, None)
        if isinstance(static, property):
            return UserFunctionVariable(static.fget).call_function(tx, [self], {})
        if self.attrs is not None and name in self.attrs:  # set by code traced so far
            return self.attrs[name]
        in_instance = name in getattr(self.value, "__dict__", {})  # a function there is unbound
        if isinstance(static, (types.FunctionType, staticmethod, classmethod)) and not in_instance:
            if isinstance(static, types.FunctionType):
                if self.source is not None:
                    # C.go = ... later must recompile: guard the class attribute's identity
                    tx.output.add_guard(Guard(AttrSource(TypeSource(self.source), name),
                                              GuardKind.ID_MATCH, static, tx.user_line()))
                return UserMethodVariable(static, self, source)
        if not hasattr(self.value, name):
            raise ObservedException(AttributeError(
                f"{type(self.value).__name__!r} object has no attribute {name!r}"))
        return VariableBuilder(tx, source).wrap(getattr(self.value, name))

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
        from .dicts import ConstDictVariable

        if isinstance(self.value, BaseException):  # its ``args`` is kept among the attrs
            unimplemented(f"{type(self.value).__name__}.__dict__ of an exception")
        if self.attrs is not None:
            view = ConstDictVariable({})
            view.items = self.attrs
            return view
        if tx.output.side_effects.stores_attrs_of(self.value):
            unimplemented(f"{type(self.value).__name__}.__dict__ after this frame set an attribute "
                          "(the store is replayed after the graph, so the real dict lacks it)")
        return VariableBuilder(tx, AttrSource(self.source, "__dict__") if self.source else None
                               ).wrap(self.value.__dict__)

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


def identity_equal(tx, a: VariableTracker, b: VariableTracker) -> bool:
    """``a is b or a == b`` as ``in`` and ``list.index`` use it; tensors only by identity,
    user objects through their ``__eq__``."""
    if a.is_python_constant() and b.is_python_constant():
        return a.as_python_constant() == b.as_python_constant()
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
    through its own ``__new__``, which keeps ``args`` where ``e.args`` reads them)."""
    if issubclass(cls, BaseException):
        attrs = dict(attrs)
        obj = cls.__new__(cls, *attrs.pop("args", ()))
    else:
        obj = object.__new__(cls)
    obj.__dict__.update(attrs)
    return obj
