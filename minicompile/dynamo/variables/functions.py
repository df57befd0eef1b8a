"""User functions, methods and closures: calling one inlines its bytecode into the same graph
(mirrors torch/_dynamo/variables/functions.py).

``UserFunctionVariable`` is a real Python function (a global helper, a method's function);
``NestedUserFunctionVariable`` is a function created while tracing by MAKE_FUNCTION (a lambda or a
nested ``def``), whose defaults and closure cells are themselves VariableTrackers.
"""

from __future__ import annotations

import functools
import inspect
import types
from typing import Any

from ...names import is_identifier
from ..exc import ObservedException, Unsupported, unimplemented
from ..source import ClosureSource, DefaultsSource
from .base import KnownCallableVariable, VariableTracker
from .constant import ConstantVariable

# Generators are fine: an inlined generator runs to completion and yields a list iterator.
_UNSUPPORTED_FLAGS = {inspect.CO_COROUTINE: "coroutine",
                      inspect.CO_ASYNC_GENERATOR: "async generator"}


class ClosureCell:
    """One closure cell as the interpreter sees it: a cell created while tracing (MAKE_CELL)
    holds a VariableTracker; a real cell of an existing function is read (and guarded) lazily."""

    def __init__(self, value: VariableTracker | None = None, real: types.CellType | None = None,
                 source=None):
        self.value, self.real, self.source = value, real, source

    def get(self, tx, name: str) -> VariableTracker:
        if self.real is not None and tx.output.side_effects.load_cell(self.real) is not None:
            return tx.output.side_effects.load_cell(self.real)  # assigned earlier in the trace
        if self.value is None and self.real is not None:
            from .builder import VariableBuilder

            try:
                contents = self.real.cell_contents
            except ValueError:
                unimplemented(f"closure variable {name!r} is not bound yet")
            self.value = VariableBuilder(tx, self.source).wrap(contents)
        if self.value is None:
            unimplemented(f"closure variable {name!r} referenced before assignment")
        return self.value

    def set(self, tx, name: str, value: VariableTracker) -> None:
        if self.real is not None:  # a cell of an existing function: replayed after the graph
            tx.output.side_effects.store_cell(self.real, value)
        self.value = value


class BaseUserFunctionVariable(VariableTracker):
    def get_code(self) -> types.CodeType:
        raise NotImplementedError

    def get_globals(self) -> dict:
        raise NotImplementedError

    def closure_cells(self, tx) -> dict[str, ClosureCell]:
        raise NotImplementedError

    def signature_function(self, tx) -> types.FunctionType:
        """A function with this signature whose defaults are VariableTrackers, for binding."""
        raise NotImplementedError

    def bind_args(self, tx, args: list[VariableTracker],
                  kwargs: dict[str, VariableTracker]) -> dict[str, VariableTracker]:
        from .dicts import ConstDictVariable
        from .lists import TupleVariable

        sig = inspect.signature(self.signature_function(tx), follow_wrapped=False)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            unimplemented(f"calling {self.get_code().co_name}: {e}")
        bound.apply_defaults()
        result = {}
        for name, value in bound.arguments.items():
            kind = sig.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                value = TupleVariable(list(value))
            elif kind is inspect.Parameter.VAR_KEYWORD:
                value = ConstDictVariable(dict(value))
            result[name] = value
        return result

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        code = self.get_code()
        for flag, what in _UNSUPPORTED_FLAGS.items():
            if code.co_flags & flag:
                unimplemented(f"inlining a {what} function ({code.co_name})")
        return tx.inline_user_function_return(self, args, kwargs)


class UserFunctionVariable(BaseUserFunctionVariable):
    def __init__(self, fn: types.FunctionType, source=None):
        super().__init__(source)
        self.fn = fn

    def python_type(self) -> type:
        return types.FunctionType

    def as_python_constant(self) -> Any:
        return self.fn

    def identity(self) -> Any:
        return self.fn

    def reconstruct(self, codegen) -> str:
        if self.source is not None:
            return self.source.expr()
        return codegen.install_global(self.fn.__name__, self.fn)  # a function made while tracing

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if getattr(self.fn, "_dynamo_marked_constant", False):
            return self.call_as_constant(tx, args, kwargs)
        return super().call_function(tx, args, kwargs)

    def call_as_constant(self, tx, args, kwargs) -> VariableTracker:
        """A function marked with ``torch._dynamo.assume_constant_result`` (its
        ``_dynamo_marked_constant``: transformers' install probes, ``is_torch_available()``) is
        called while tracing, on constant arguments, and its answer is a constant of the graph,
        unguarded: the mark promises it never changes (mirrors ``invoke_and_store_as_constant``
        in torch/_dynamo/variables/functions.py). Its body, which may read files or the
        environment, is never traced."""
        from .builder import SourcelessBuilder

        try:
            values = [a.as_python_constant() for a in args]
            named = {k: v.as_python_constant() for k, v in kwargs.items()}
        except Unsupported:
            unimplemented(f"{self.fn.__qualname__} is marked constant (assume_constant_result) "
                          "but was called with an argument that is not a constant")
        return SourcelessBuilder.wrap(tx, self.fn(*values, **named))

    def get_code(self) -> types.CodeType:
        return self.fn.__code__

    def get_globals(self) -> dict:
        return self.fn.__globals__

    def closure_cells(self, tx) -> dict[str, ClosureCell]:
        cells = self.fn.__closure__ or ()
        return {name: ClosureCell(real=cell, source=ClosureSource(self.source, i) if self.source
                                  else None)
                for i, (name, cell) in enumerate(zip(self.fn.__code__.co_freevars, cells))}

    def signature_function(self, tx) -> types.FunctionType:
        from .builder import VariableBuilder

        def wrap(value, index):
            return VariableBuilder(tx, DefaultsSource(self.source, index) if self.source
                                   else None).wrap(value)

        fn = self.fn
        defaults = tuple(wrap(v, i) for i, v in enumerate(fn.__defaults__ or ()))
        kwdefaults = {k: wrap(v, k) for k, v in (fn.__kwdefaults__ or {}).items()}
        sig_fn = types.FunctionType(fn.__code__, {}, fn.__name__, defaults, fn.__closure__)
        sig_fn.__kwdefaults__ = kwdefaults
        return sig_fn

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from .builder import VariableBuilder
        from ..source import AttrSource

        if name in ("__name__", "__qualname__", "__module__", "__doc__"):
            return VariableBuilder(tx, None).wrap(getattr(self.fn, name))
        if not hasattr(self.fn, name):  # inspect.signature tries __signature__ first
            raise ObservedException(AttributeError(
                f"'function' object has no attribute {name!r}"))
        return VariableBuilder(tx, AttrSource(self.source, name) if self.source else None) \
            .wrap(getattr(self.fn, name))

    def _repr_body(self) -> str:
        return self.fn.__qualname__


class UserMethodVariable(UserFunctionVariable):
    """A function bound to ``obj`` (``self.helper(x)``): inlined with ``obj`` as first argument."""

    def __init__(self, fn: types.FunctionType, obj: VariableTracker, source=None):
        super().__init__(fn, source)
        self.obj = obj

    def python_type(self) -> type:
        return types.MethodType  # equal to another bound method of the same object and function

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        return super().call_function(tx, [self.obj, *args], kwargs)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        """A bound method's own attributes; any other is its function's (as CPython's)."""
        if name == "__self__":
            return self.obj
        if name == "__func__":
            return UserFunctionVariable(self.fn)
        return super().var_getattr(tx, name)

    def children(self) -> list[VariableTracker]:
        return [self.obj]

    def reconstruct(self, codegen) -> str:  # not as a plain function: it is bound to obj
        return VariableTracker.reconstruct(self, codegen)

    def as_python_constant(self) -> Any:
        unimplemented("a bound method is not a constant")

    def identity(self) -> Any:
        return self


class NestedUserFunctionVariable(BaseUserFunctionVariable):
    """A function made by MAKE_FUNCTION while tracing (lambda, nested def, 3.11 comprehension)."""

    def __init__(self, code: types.CodeType, f_globals: dict, defaults: tuple,
                 kwdefaults: dict, closure: tuple[ClosureCell, ...]):
        super().__init__()
        self.code, self.f_globals = code, f_globals
        self.defaults, self.kwdefaults, self.closure = defaults, kwdefaults, closure

    def python_type(self) -> type:
        return types.FunctionType

    def identity(self) -> Any:
        return self

    def get_code(self) -> types.CodeType:
        return self.code

    def get_globals(self) -> dict:
        return self.f_globals

    def closure_cells(self, tx) -> dict[str, ClosureCell]:
        return dict(zip(self.code.co_freevars, self.closure))

    def signature_function(self, tx) -> types.FunctionType:
        dummy_cells = tuple(types.CellType() for _ in self.code.co_freevars)
        fn = types.FunctionType(self.code, {}, self.code.co_name, self.defaults or None,
                                dummy_cells or None)
        fn.__kwdefaults__ = dict(self.kwdefaults) or None
        return fn

    def var_getattr(self, tx, name: str) -> VariableTracker:
        """What the function's code object decides (``inner.__name__``, ``__qualname__``,
        ``__doc__``, ``__module__``): read from a function made of the same code. Attributes
        set on it (functools.wraps) are not modelled."""
        if name in ("__name__", "__qualname__", "__doc__", "__module__", "__code__"):
            real = types.FunctionType(self.code, self.f_globals, self.code.co_name, None,
                                      tuple(types.CellType() for _ in self.code.co_freevars)
                                      or None)
            return ConstantVariable(getattr(real, name))
        return super().var_getattr(tx, name)

    def children(self) -> list[VariableTracker]:
        cells = [c.value for c in self.closure if c.real is None and c.value is not None]
        return [*self.defaults, *self.kwdefaults.values(), *cells]

    def is_built_container(self) -> bool:
        return True  # each reconstruct makes a new function: one reached twice is made once

    def reconstruct(self, codegen) -> str:
        """A function made while tracing that outlives the frame (returned) is made for real,
        as MAKE_FUNCTION would have: its code, globals, defaults, and closure cells holding
        the values the trace ended with (a cell of an enclosing real function is passed on
        as it is, so it stays shared). Mirrors NestedUserFunctionVariable.reconstruct."""
        make = codegen.install_global("make_function", make_function)
        cells = ", ".join(self._cell_expr(codegen, c) for c in self.closure)
        defaults = ", ".join(codegen(d) for d in self.defaults)
        kwdefaults = ", ".join(f"{k!r}: {codegen(v)}" for k, v in self.kwdefaults.items())
        return (f"{make}({codegen.install_global('code', self.code)}, "
                f"{codegen.install_global('globals', self.f_globals)}, ({defaults}{',' * bool(defaults)}), "
                f"{{{kwdefaults}}}, ({cells}{',' * bool(cells)}))")

    @staticmethod
    def _cell_expr(codegen, cell: ClosureCell) -> str:
        if cell.real is not None:  # writes traced into it are replayed on it (side_effects)
            return codegen.install_global("cell", cell.real)
        if cell.value is None:  # not assigned yet when the function was made
            return f"{codegen.install_global('CellType', types.CellType)}()"
        return f"{codegen.install_global('CellType', types.CellType)}({codegen(cell.value)})"

    def _repr_body(self) -> str:
        return self.code.co_qualname


def make_function(code: types.CodeType, f_globals: dict, defaults: tuple, kwdefaults: dict,
                  closure: tuple) -> types.FunctionType:
    """What the transformed code calls to rebuild a function made while tracing."""
    fn = types.FunctionType(code, f_globals, code.co_name, defaults or None, closure or None)
    fn.__kwdefaults__ = kwdefaults or None
    fn.__qualname__ = code.co_qualname
    return fn


class FunctoolsPartialVariable(VariableTracker):
    """``functools.partial(func, *args, **keywords)``, made while tracing or passed in: calling it
    calls ``func`` with the stored arguments in front (mirrors the class of the same name in
    torch/_dynamo/variables/functions.py)."""

    def __init__(self, func: VariableTracker, args: list[VariableTracker],
                 keywords: dict[str, VariableTracker], source=None):
        super().__init__(source)
        self.func, self.args, self.keywords = func, list(args), dict(keywords)

    def python_type(self) -> type:
        return functools.partial

    def identity(self) -> Any:
        return self

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        return self.func.call_function(tx, [*self.args, *args], {**self.keywords, **kwargs})

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from .dicts import ConstDictVariable
        from .lists import TupleVariable

        fields = {"func": lambda: self.func, "args": lambda: TupleVariable(self.args),
                  "keywords": lambda: ConstDictVariable(dict(self.keywords))}
        if name not in fields:
            unimplemented(f"attribute {name!r} of functools.partial")
        return fields[name]()

    def reconstruct(self, codegen) -> str:
        if self.source is not None:
            return self.source.expr()
        parts = [codegen(self.func), *map(codegen, self.args),
                 *(f"{k}={codegen(v)}" if is_identifier(k) else f"**{{{k!r}: {codegen(v)}}}"
                   for k, v in self.keywords.items())]
        return f"{codegen.install_global('partial', functools.partial)}({', '.join(parts)})"

    def _repr_body(self) -> str:
        return f"{self.func}, {len(self.args)} args, {sorted(self.keywords)}"


# Decorators that only cache: applied inside the frame, they leave the function as it is
CACHING_DECORATORS = (functools.lru_cache, functools.cache)


class CachingDecoratorVariable(KnownCallableVariable):
    """``functools.lru_cache`` / ``functools.cache`` applied while tracing (``@lru_cache`` on a
    nested ``def``): like a function wrapped outside the frame (builder.py), the function is
    traced through its cache. ``lru_cache(maxsize=...)`` with constant options returns the
    decorator itself, so ``@lru_cache(maxsize=None)`` works the same way."""

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if len(args) == 1 and not kwargs and isinstance(args[0], BaseUserFunctionVariable):
            return args[0]
        if all(a.is_python_constant() for a in [*args, *kwargs.values()]):
            return self
        unimplemented(f"{self.fn.__name__} applied to {args}")
