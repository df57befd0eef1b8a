"""Dict keys and set members (mirrors ``ConstDictVariable._HashableTracker`` and ``is_hashable``
in torch/_dynamo/variables/dicts.py).

A dict's tracker keeps its keys, and a set's tracker its members, as Python values that hash
and compare the way CPython would hash and compare the real objects:

- a constant (``"a"``, ``3``, ``(1, 2)``, a class) is the value itself: its hash and ``==`` are
  C code with no effect, so running them now is what eager does;
- an object the trace knows (a function, a builtin such as ``len``, a module), and any other
  value whose class keeps ``object``'s ``__hash__`` and ``__eq__`` (a lambda or nested ``def``
  made while tracing, an instance of a plain user class) is wrapped in a
  :class:`HashableTracker`, which hashes and compares as the object the tracker stands for
  (``VariableTracker.identity()``), and keeps the tracker -- with its source, so what is done
  with a key later is guarded -- so iterating over the keys gives back the very value stored.

A key whose hash would run Python code the trace does not see (a class with its own
``__hash__``/``__eq__``) stops the trace with a reason; an unhashable key (a list)
raises ``TypeError`` in the traced code, as it does in eager.
"""

from __future__ import annotations

import types
from typing import Any

import torch

from ..exc import ObservedException, unimplemented
from .base import VariableTracker
from .constant import ConstantVariable, is_constant


class HashableTracker:
    """A tracker as a dict key or set member: equal to another when both stand for the same
    object, so ``{f: 1}[f]`` finds it and two distinct lambdas stay two keys."""

    def __init__(self, vt: VariableTracker):
        self.vt = vt
        self.underlying = vt.identity()  # the real object, or the tracker of one made while tracing

    def __hash__(self) -> int:
        return hash(self.underlying)

    def __eq__(self, other: Any) -> bool:
        other = other.underlying if isinstance(other, HashableTracker) else other
        return self.underlying is other

    def __repr__(self) -> str:
        return f"HashableTracker({self.vt!r})"


def hashed_by_identity(cls: type) -> bool:
    """Instances of ``cls`` hash and compare as ``object`` does: by identity. A tensor too:
    its ``__hash__`` is its ``id()``, so a lookup only finds the very same tensor (CPython
    tries ``is`` before ``==``, and two live objects never share an id)."""
    if issubclass(cls, torch.Tensor):
        return cls.__hash__ is torch.Tensor.__hash__
    return cls.__hash__ is object.__hash__ and cls.__eq__ is object.__eq__


def _known_object(value: Any) -> bool:
    """An object equal only to itself (a function, a builtin function, a module)."""
    return hashed_by_identity(type(value)) or isinstance(value, types.BuiltinFunctionType)


def dict_key(vt: VariableTracker) -> Any:
    """The Python value a dict tracker files ``vt`` under (the same for a set member)."""
    if vt.is_python_constant():
        value = vt.as_python_constant()
        try:
            hash(value)
        except TypeError as e:  # {[1]: 2}: the traced code sees the TypeError eager raises
            raise ObservedException(e) from None
        if is_constant(value) or not _known_object(value):  # a value: 3, (1, 2), frozenset
            return value
        return HashableTracker(vt)  # a function, a builtin: kept with its source and guards
    try:
        cls = vt.python_type()
    except Exception:  # a tracker that cannot say its type: no way to know how it hashes
        cls = None
    # a tracker that is its own identity stands for one object only if it was made while
    # tracing (a tracker read from a source is made afresh on each read)
    own_identity = isinstance(vt.identity(), VariableTracker) and vt.source is not None
    if cls is not None and hashed_by_identity(cls) and not own_identity:
        vt.pin_identity()
        return HashableTracker(vt)
    name = getattr(cls, "__name__", type(vt).__name__)
    unimplemented(f"a {name} as a dict key or set member: its hash and == are not traced "
                  "(only constants and objects that hash by identity, such as functions, are)")


def key_tracker(tx, key: Any) -> VariableTracker:
    """The tracker of a stored key: the one that was stored, or one for a constant."""
    if isinstance(key, HashableTracker):
        return key.vt
    if is_constant(key) or isinstance(key, tuple):
        return ConstantVariable(key)
    from .builder import SourcelessBuilder  # a real object (a builtin, a function): its kind

    return SourcelessBuilder.wrap(tx, key)


def key_constant(key: Any) -> Any:
    """A stored key as a Python constant (a dict or set folded into a constant)."""
    if isinstance(key, HashableTracker):
        return key.vt.as_python_constant()
    return key


def key_expr(codegen, key: Any) -> str:
    """A stored key in the transformed code: a literal, an installed name, or the tracker's
    own reconstruction (a function made while tracing is made for real)."""
    if isinstance(key, HashableTracker):
        return codegen(key.vt)
    return codegen.constant(key)
