"""ConstantVariable: a Python value known at trace time (mirrors torch/_dynamo/variables/constant.py).

ints, floats, bools, strings, None, dtypes, devices, classes: anything immutable whose value the
trace may depend on. Operations on constants run for real while tracing (constant folding), so
``x.shape[0] * 2 + 1`` never reaches the graph. A constant read from a source is guarded by value.
"""

from __future__ import annotations

import functools
import inspect
import math
import types
from typing import Any

import torch

from ..exc import unimplemented
from .base import VariableTracker

CONSTANT_TYPES = (int, float, bool, str, bytes, complex, type(None), type(Ellipsis),
                  type(NotImplemented), torch.dtype, torch.device, torch.memory_format,
                  torch.layout, type)

# Types whose repr() is valid Python that evaluates to an equal value.
_LITERAL_TYPES = (int, bool, str, bytes, type(None), complex)


def is_constant(value: Any) -> bool:
    return isinstance(value, CONSTANT_TYPES) or value is Ellipsis


class ConstantVariable(VariableTracker):
    def __init__(self, value: Any, source=None):
        super().__init__(source)
        self.value = value

    def as_python_constant(self) -> Any:
        return self.value

    def is_python_constant(self) -> bool:
        return True

    def python_type(self) -> type:
        return type(self.value)

    def truth(self, tx) -> bool:
        return bool(self.value)

    def identity(self) -> Any:
        return self.value

    def var_getattr(self, tx, name: str) -> VariableTracker:
        # dtype.is_floating_point, device.type, (2.0).real, str.upper (a bound method, called next)
        try:
            attr = getattr(self.value, name)
        except AttributeError as e:
            unimplemented(f"{type(self.value).__name__} has no attribute {name!r}: {e}")
        if callable(attr) and not isinstance(attr, type):
            from .misc import GetAttrVariable

            return GetAttrVariable(self, name)
        return ConstantVariable(attr)

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        """Calling a class: namedtuples (``Pair(x, y)``) and ``functools.partial`` are built
        while tracing."""
        cls = self.value
        if cls is functools.partial and args:
            from .functions import FunctoolsPartialVariable

            return FunctoolsPartialVariable(args[0], args[1:], kwargs)
        if isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields"):
            from .lists import NamedTupleVariable

            bound = inspect.signature(cls).bind(*args, **kwargs)
            bound.apply_defaults()
            items = [v if isinstance(v, VariableTracker) else ConstantVariable(v)
                     for v in bound.arguments.values()]
            return NamedTupleVariable(items, cls)
        return super().call_function(tx, args, kwargs)

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        if not all(a.is_python_constant() for a in [*args, *kwargs.values()]):
            unimplemented(f"{type(self.value).__name__}.{name} with non-constant arguments")
        method = getattr(self.value, name)
        const_args = [a.as_python_constant() for a in args]
        const_kwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
        from .builder import SourcelessBuilder

        return SourcelessBuilder.wrap(tx, method(*const_args, **const_kwargs))

    def reconstruct(self, codegen) -> str:
        if self.source is not None:
            return self.source.expr()
        v = self.value
        if isinstance(v, _LITERAL_TYPES):
            return repr(v)
        if isinstance(v, float):
            return repr(v) if math.isfinite(v) else f"float({str(v)!r})"
        return codegen.install_global("const", v)

    def _repr_body(self) -> str:
        return repr(self.value)
