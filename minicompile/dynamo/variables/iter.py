"""itertools and the ``operator`` getters (mirrors torch/_dynamo/variables/iter.py and the
``operator.itemgetter`` / ``attrgetter`` / ``methodcaller`` handling of its builtin.py).

Everything here runs at trace time over trackers: ``itertools.product(range(2), xs)`` becomes a
list iterator of tuples whose items are the trackers themselves, so a loop over it unrolls like
any other loop and tensors inside stay graph values. Infinite iterators (``count``, ``cycle``,
``repeat`` with no count) cannot be unrolled and stop the trace.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any, Callable

from ..exc import unimplemented
from .base import KnownCallableVariable, VariableTracker
from .constant import ConstantVariable
from .lists import LazyIteratorVariable, ListIteratorVariable, TupleVariable, iterate


def _items(tx, seq: VariableTracker) -> list[VariableTracker]:
    return seq.unpack_var_sequence(tx)


def _const(vt: VariableTracker | None, default: Any = None) -> Any:
    return default if vt is None else vt.as_python_constant()


def _tuples(rows) -> ListIteratorVariable:
    return ListIteratorVariable([TupleVariable(list(row)) for row in rows])


def _product(tx, *seqs, repeat=None):
    return _tuples(itertools.product(*(_items(tx, s) for s in seqs), repeat=_const(repeat, 1)))


def _chain(tx, *seqs):
    return ListIteratorVariable([i for s in seqs for i in _items(tx, s)])


def _chain_from_iterable(tx, seqs):
    return _chain(tx, *_items(tx, seqs))


def _accumulate(tx, seq, func=None, *, initial=None):
    from .builtin import BuiltinVariable

    if func is None or (func.is_python_constant() and _const(func) is None):
        func = BuiltinVariable(operator.add)
    out = [] if initial is None or _const_is_none(initial) else [initial]
    for item in _items(tx, seq):
        out.append(item if not out else func.call_function(tx, [out[-1], item], {}))
    return ListIteratorVariable(out)


def _const_is_none(vt: VariableTracker) -> bool:
    return vt.is_python_constant() and vt.as_python_constant() is None


def _islice(tx, seq, *bounds):
    rows = itertools.islice(iterate(tx, seq), *(_const(b) for b in bounds))
    return LazyIteratorVariable(tx, rows, [seq])


def _repeat(tx, obj, times=None):
    if times is None:
        unimplemented("itertools.repeat() with no count never ends")
    return ListIteratorVariable([obj] * _const(times))


def _combinatoric(fn: Callable):
    def build(tx, seq, r=None):
        return _tuples(fn(_items(tx, seq), *(() if r is None else (_const(r),))))

    return build


def _zip_longest(tx, *seqs, fillvalue=None):
    fill = fillvalue if fillvalue is not None else ConstantVariable(None)
    return _tuples(itertools.zip_longest(*(_items(tx, s) for s in seqs), fillvalue=fill))


def _pairwise(tx, seq):
    return _tuples(itertools.pairwise(_items(tx, seq)))


def _starmap(tx, fn, seq):
    return ListIteratorVariable([fn.call_function(tx, _items(tx, args), {})
                                 for args in _items(tx, seq)])


def _infinite(name: str):
    def refuse(tx, *args, **kwargs):
        unimplemented(f"itertools.{name}() never ends: a loop over it cannot be unrolled")

    return refuse


# -- operator.itemgetter / attrgetter / methodcaller ------------------------------------------------
class OperatorGetterVariable(KnownCallableVariable):
    """``operator.itemgetter(1)``, ``attrgetter("shape")``, ``methodcaller("sum", 0)``, made
    with constant arguments: the real object is kept (it is a constant of the trace), and calling
    it is traced as the subscript, attribute read or method call it stands for."""

    def __init__(self, fn: Any, args: list[Any], kwargs: dict[str, Any]):
        super().__init__(fn)
        self.args, self.kwargs = args, kwargs

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        from .builtin import BuiltinVariable

        if len(args) != 1 or kwargs:
            unimplemented(f"calling {type(self.fn).__name__} with {len(args)} arguments")
        (obj,) = args
        kind = type(self.fn)
        if kind is operator.methodcaller:
            name, *rest = self.args
            return obj.call_method(tx, name, [ConstantVariable(a) for a in rest],
                                   {k: ConstantVariable(v) for k, v in self.kwargs.items()})
        if kind is operator.itemgetter:
            get = BuiltinVariable(operator.getitem)
            results = [get.call_function(tx, [obj, ConstantVariable(k)], {}) for k in self.args]
        else:  # attrgetter("a.b"): one getattr per dotted part
            results = []
            for path in self.args:
                value = obj
                for part in path.split("."):
                    value = BuiltinVariable(getattr).call_function(
                        tx, [value, ConstantVariable(part)], {})
                results.append(value)
        return results[0] if len(results) == 1 else TupleVariable(results)

    def reconstruct(self, codegen) -> str:
        return codegen.install_global(type(self.fn).__name__, self.fn)

    def _repr_body(self) -> str:
        return repr(self.fn)


def _getter(cls: type):
    def build(tx, *args, **kwargs):
        if not all(a.is_python_constant() for a in [*args, *kwargs.values()]):
            unimplemented(f"operator.{cls.__name__} with non-constant arguments")
        cargs = [a.as_python_constant() for a in args]
        ckwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
        return OperatorGetterVariable(cls(*cargs, **ckwargs), cargs, ckwargs)

    return build


# Registered into builtin.HANDLERS (and wrapped as BuiltinVariable by the builder).
ITER_HANDLERS: dict[Callable, Callable] = {
    itertools.product: _product, itertools.chain: _chain,
    itertools.chain.from_iterable: _chain_from_iterable, itertools.accumulate: _accumulate,
    itertools.islice: _islice, itertools.repeat: _repeat,
    itertools.combinations: _combinatoric(itertools.combinations),
    itertools.combinations_with_replacement: _combinatoric(itertools.combinations_with_replacement),
    itertools.permutations: _combinatoric(itertools.permutations),
    itertools.zip_longest: _zip_longest, itertools.pairwise: _pairwise,
    itertools.starmap: _starmap, itertools.count: _infinite("count"),
    itertools.cycle: _infinite("cycle"),
    operator.itemgetter: _getter(operator.itemgetter),
    operator.attrgetter: _getter(operator.attrgetter),
    operator.methodcaller: _getter(operator.methodcaller),
}
