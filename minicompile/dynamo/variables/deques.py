"""DequeVariable: a ``collections.deque`` built while tracing (mirrors the deque part of
torch/_dynamo/variables/lists.py).

A deque is a list with cheap operations at both ends and an optional ``maxlen``: appending to a
full deque drops an item from the other end. While tracing it is a list of trackers with the
same methods, each a row of :data:`DEQUE_METHODS` written with Python's own deque on the
trackers (so ``rotate``'s or ``extendleft``'s order is Python's, not re-derived). Rebuilt for
real as ``deque([...], maxlen=...)``.
"""

from __future__ import annotations

import collections
from typing import Any, Callable

from ..exc import unimplemented
from .base import VariableTracker
from .constant import ConstantVariable
from .lists import ListIteratorVariable, ListVariable, extend_from_iterator


class DequeVariable(ListVariable):
    python_cls = collections.deque

    def __init__(self, items: list[VariableTracker], maxlen: int | None = None, source=None):
        super().__init__(list(collections.deque(items, maxlen)), source)
        self.maxlen = maxlen

    @classmethod
    def construct(cls, tx, iterable: VariableTracker | None = None,
                  maxlen: VariableTracker | None = None) -> DequeVariable:
        """``collections.deque(iterable=(), maxlen=None)``."""
        items = iterable.unpack_var_sequence(tx) if iterable is not None else []
        return cls(items, maxlen.as_python_constant() if maxlen is not None else None)

    def as_python_constant(self) -> Any:
        return collections.deque([i.as_python_constant() for i in self.items], self.maxlen)

    def as_proxy(self) -> Any:
        unimplemented("a deque cannot be an argument of a graph node")

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        if name in ("extend", "extendleft") and len(args) == 1 \
                and isinstance(args[0], ListIteratorVariable):
            return extend_from_iterator(tx, self, "append" + name[6:], args[0])
        if name in DEQUE_METHODS:
            if kwargs:
                unimplemented(f"deque.{name} with keyword arguments")
            real = collections.deque(self.items, self.maxlen)  # the same trackers, as a deque
            result = DEQUE_METHODS[name](tx, real, *args)
            self.items = list(real)
            return result if isinstance(result, VariableTracker) else ConstantVariable(result)
        if name == "copy":
            return DequeVariable(self.items, self.maxlen)
        return super().call_method(tx, name, args, kwargs)  # len, index, count, in

    def reconstruct(self, codegen) -> str:
        deque = codegen.install_global("deque", collections.deque)
        items = ", ".join(codegen(i) for i in self.items)
        return f"{deque}([{items}], maxlen={self.maxlen!r})"


def _const(vt: VariableTracker) -> Any:
    return vt.as_python_constant()


# deque method -> how it acts on a real deque of trackers (what it returns is the result)
DEQUE_METHODS: dict[str, Callable[..., Any]] = {
    "append": lambda tx, d, item: d.append(item),
    "appendleft": lambda tx, d, item: d.appendleft(item),
    "extend": lambda tx, d, seq: d.extend(seq.unpack_var_sequence(tx)),
    "extendleft": lambda tx, d, seq: d.extendleft(seq.unpack_var_sequence(tx)),
    "pop": lambda tx, d: d.pop(),
    "popleft": lambda tx, d: d.popleft(),
    "insert": lambda tx, d, i, item: d.insert(_const(i), item),
    "rotate": lambda tx, d, n=ConstantVariable(1): d.rotate(_const(n)),
    "clear": lambda tx, d: d.clear(),
    "reverse": lambda tx, d: d.reverse(),
    "__getitem__": lambda tx, d, i: d[_const(i)],
    "__setitem__": lambda tx, d, i, item: d.__setitem__(_const(i), item),
    "__delitem__": lambda tx, d, i: d.__delitem__(_const(i)),
}
