"""The remaining kinds of values (mirrors torch/_dynamo/variables/misc.py and ctx_manager.py):
bound attributes waiting to be called, Python modules, grad-mode context managers and
``super()``. Instances of user classes are in user_defined.py."""

from __future__ import annotations

import contextlib
import types
from typing import Any, Callable

import torch

from ... import names
from ..exc import ObservedException, unimplemented
from ..source import AttrSource
from .arguments import check_arguments
from .base import VariableTracker
from .constant import ConstantVariable


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


class SuperMethodVariable(BaseMethodVariable):
    """``super().name`` answered by a C base class's method: never rebuilt at a graph break,
    where ``obj.name`` would find the subclass's override instead."""

    def reconstruct(self, codegen) -> str:
        unimplemented(f"super().{self.name} live at a graph break (rebuilt as .{self.name}, it "
                      "would call the subclass's override)")


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
        # guarded, torch's own functions too: code does replace them (a library patching
        # ``F.scaled_dot_product_attention``), and a graph traced with the old one would keep it
        return VariableBuilder(tx, source).wrap(value)

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
            call_base = getattr(self.obj, "call_base_method", None)
            if call_base is None:
                unimplemented(f"super().{name} of a {type(value).__name__} is C code")
            return SuperMethodVariable(self.obj, name, call_base)
        return bind_method(tx, self.obj, attr, None)
