"""BuiltinVariable: Python builtins and the ``operator`` module (mirrors
torch/_dynamo/variables/builtin.py).

Three ways a builtin call is handled, tried in this order:
  1. a handler in ``HANDLERS`` (len, isinstance, range, zip, getattr, ...): they work on trackers;
  2. a tensor among the arguments: the builtin becomes a graph node (``operator.add(x, y)``,
     which is exactly what real Dynamo records for ``x + y``);
  3. every argument constant: the builtin simply runs now (constant folding).
Anything else is Unsupported. BINARY_OP, COMPARE_OP and the UNARY_* instructions all come here
through their ``operator`` function.
"""

from __future__ import annotations

import builtins
import functools
import math
import operator
import sys
from typing import Any, Callable

from ..exc import ObservedException, unimplemented
from ..guards import Guard, GuardKind
from ..side_effects import DELETED
from .base import KnownCallableVariable, VariableTracker
from .constant import ConstantVariable, is_constant, is_plain_user_class
from .dicts import DICT_CLASS_METHODS, ConstDictVariable, DictClassMethodVariable, key_value_pairs
from .floats import float_operands
from .functions import BaseUserFunctionVariable, FunctoolsPartialVariable, UserMethodVariable
from .iter import ITER_HANDLERS
from .lists import (BaseListVariable, LazyIteratorVariable, ListIteratorVariable, ListVariable,
                    RangeVariable, SetVariable, SizeVariable, TupleVariable, iterate)
from .misc import GetAttrVariable, SuperVariable
from .nn_module import NNModuleVariable
from .symnode import SymNodeVariable, symbolic_builtin
from .tensor import TensorVariable, call_op
from .user_defined import (BINARY_METHODS, INPLACE_METHODS, UserDefinedObjectVariable,
                           user_binary_op, user_compare)

# Builtins that have side effects or need real objects: never run them on constants while tracing.
NOT_FOLDABLE = {print, input, open, id, setattr, delattr, exec, eval, globals, locals, vars,
                next, iter, hash, breakpoint, __import__}

# Builtins a tensor argument turns into a graph node.
TENSOR_BUILTINS = {abs, pow, divmod}


def _const(v: VariableTracker) -> Any:
    return v.as_python_constant()


class BuiltinVariable(KnownCallableVariable):
    def call_function(self, tx, args, kwargs) -> VariableTracker:
        from .builder import SourcelessBuilder  # a cycle: builder wraps values in BuiltinVariable

        handler = HANDLERS.get(self.fn)
        if handler is not None:
            result = handler(tx, *args, **kwargs)
            if result is not None:
                return result
        if any(isinstance(a, TensorVariable) for a in [*args, *kwargs.values()]):
            if self.fn in TENSOR_OPERATORS or self.fn in TENSOR_BUILTINS:
                return call_op(tx, "call_function", self.fn, float_operands(tx, self.fn, args),
                               kwargs)  # x * lr: an unspecialized float's graph input
            unimplemented(f"builtin {self._name()} on a tensor")
        if any(isinstance(a, SymNodeVariable) for a in [*args, *kwargs.values()]):
            return symbolic_builtin(tx, self, args, kwargs)  # sizes under dynamic shapes
        if self.fn not in NOT_FOLDABLE and all(
                a.is_python_constant() for a in [*args, *kwargs.values()]):
            cargs = [_const(a) for a in args]
            ckwargs = {k: _const(v) for k, v in kwargs.items()}
            try:
                value = self.fn(*cargs, **ckwargs)
            except Exception as e:  # the user's code raises: its handler, or a graph break
                raise ObservedException(e) from None
            return SourcelessBuilder.wrap(tx, value)
        if any(type(getattr(a, "value", None)).__module__ == "numpy" for a in args):
            unimplemented(f"builtin {self._name()} on a numpy value: numpy code is not traced "
                          "(real Dynamo traces it through torch._numpy)")
        unimplemented(f"builtin {self._name()} with arguments {args}")

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        if name == "__getitem__" and isinstance(self.fn, type) and len(args) == 1 \
                and args[0].is_python_constant():  # list[Tensor]: an annotation, a constant
            try:
                return ConstantVariable(self.fn[_const(args[0])])
            except TypeError as e:  # int[3]: not subscriptable, as in eager
                raise ObservedException(e) from None
        return super().call_method(tx, name, args, kwargs)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if self.fn is dict and name in DICT_CLASS_METHODS:  # dict.fromkeys
            return DictClassMethodVariable(dict, name)
        try:  # itertools.chain.from_iterable: a builtin with its own handler
            attr = getattr(self.fn, name)
            if attr in HANDLERS:
                return BuiltinVariable(attr)
            if is_constant(attr):  # ValueError.__name__: a builtin never changes
                return ConstantVariable(attr)
        except (AttributeError, TypeError):  # no such attribute, or an unhashable one
            pass
        return super().var_getattr(tx, name)

    def _name(self) -> str:
        return getattr(self.fn, "__name__", repr(self.fn))

    def _repr_body(self) -> str:
        return self._name()


# -- operators on sequences (when not all-constant) ---------------------------------------------
def _seq_add(tx, a, b):
    """``a + b`` on sequences, with CPython's result type: torch.Size with a tuple on either
    side is a torch.Size (``(-1,) + x.shape[1:]``; ``torch.Size.__radd__``), two namedtuples
    or a namedtuple and a tuple make a plain tuple, lists (and deques) only add to their own
    kind."""
    if isinstance(a, TupleVariable) and isinstance(b, TupleVariable) \
            and _tuple_add_is_builtin(a) and _tuple_add_is_builtin(b):
        sized = isinstance(a, SizeVariable) or isinstance(b, SizeVariable)
        return (SizeVariable if sized else TupleVariable)(a.items + b.items)
    if isinstance(a, BaseListVariable) and isinstance(b, BaseListVariable) and type(a) is type(b):
        return type(a)(a.items + b.items)
    return None


def _tuple_add_is_builtin(v) -> bool:
    """A namedtuple class may define its own ``__add__``: that one is not folded here."""
    cls, size = v.python_type(), SizeVariable.python_cls
    return cls.__add__ in (tuple.__add__, size.__add__) \
        and getattr(cls, "__radd__", None) in (None, size.__radd__)


def _container_operator(name: str, fallback: Callable | None = None) -> Callable:
    """``a |= b``, ``a += b``, ``a | b``, ...: on a list, dict or set, its own method
    (``__ior__``...), which changes an in-place operand itself, as every name bound to it
    sees it (folding the operator on constant copies would make a new object); else
    ``fallback`` (tuples, torch.Size), else None (fall through)."""

    def apply(tx, a, b):
        if isinstance(a, (ListVariable, ConstDictVariable, SetVariable)) \
                and hasattr(a.python_type(), name):  # (a frozenset has no __ior__: rebound)
            return a.call_method(tx, name, [b], {})
        return fallback(tx, a, b) if fallback is not None else None

    return apply


def _seq_mul(tx, a, b):
    if isinstance(a, BaseListVariable) and b.is_python_constant():
        return type(a)(a.items * _const(b))
    if isinstance(b, BaseListVariable) and a.is_python_constant():
        return type(b)(b.items * _const(a))
    return None


def _getitem(tx, obj, key):
    return obj.call_method(tx, "__getitem__", [key], {})


def _setitem(tx, obj, key, value):
    return obj.call_method(tx, "__setitem__", [key, value], {})


def _contains(tx, container, item):

    if isinstance(container, TensorVariable):
        return None  # `x in tensor` is a tensor op
    return container.call_method(tx, "__contains__", [item], {})


def _is(negate: bool) -> Callable:
    """``operator.is_(a, b)`` / ``operator.is_not``: what IS_OP answers, by identity."""

    def same(tx, a, b):
        a.pin_identity(), b.pin_identity()
        return ConstantVariable((a.identity() is b.identity()) != negate)

    return same


def _not(tx, value):
    return ConstantVariable(not value.truth(tx))


def _truth(tx, value):
    return ConstantVariable(value.truth(tx))


# -- builtins that work on trackers --------------------------------------------------------------
def _len(tx, obj):
    return obj.call_method(tx, "__len__", [], {})


def _isinstance(tx, obj, classes):
    cls = _const(classes)
    return ConstantVariable(issubclass(obj.python_type(), cls))


def _range(tx, *args):
    return RangeVariable(range(*(_const(a) for a in args)))


def _iter(tx, obj):
    return ListIteratorVariable.of(tx, obj)


def _next(tx, it, *default):
    item = it.next_item() if isinstance(it, ListIteratorVariable) else None
    if item is None:
        if default:
            return default[0]
        if not isinstance(it, ListIteratorVariable):
            unimplemented(f"next() of {it}: an iterator from outside the frame runs natively")
        raise ObservedException(StopIteration())  # its handler, or natively at a graph break
    return item


def _zip(tx, *seqs, strict=None):
    strict = strict is not None and strict.truth(tx)
    rows = _observed_errors(zip(*(iterate(tx, s) for s in seqs), strict=strict))
    # (made again natively only without strict: that form has no keyword to pass on)
    return LazyIteratorVariable(tx, (TupleVariable(list(row)) for row in rows), list(seqs),
                                None if strict else (zip, list(seqs)))


def _observed_errors(rows):
    """``rows``, with the ValueError ``zip(..., strict=True)`` raises on unequal lengths
    raised in the traced code, where eager raises it."""
    try:
        yield from rows
    except ValueError as e:
        raise ObservedException(e) from None


def _enumerate(tx, seq, start=None):
    first = _const(start) if start is not None else 0
    return LazyIteratorVariable(tx, (TupleVariable([ConstantVariable(i), v])
                                 for i, v in enumerate(iterate(tx, seq), first)), [seq])


def _reversed(tx, seq):
    return ListIteratorVariable(list(reversed(seq.unpack_var_sequence(tx))))


def _map(tx, fn, *seqs):
    rows = zip(*(iterate(tx, s) for s in seqs))
    return LazyIteratorVariable(tx, (fn.call_function(tx, list(row), {}) for row in rows),
                                [fn, *seqs], (map, [fn, *seqs]))


def _filter(tx, fn, seq):
    def keep(item):
        if fn.is_python_constant() and _const(fn) is None:
            return item.truth(tx)
        return fn.call_function(tx, [item], {}).truth(tx)

    return LazyIteratorVariable(tx, (i for i in iterate(tx, seq) if keep(i)), [fn, seq])


def _sequence(cls):
    def build(tx, seq=None):
        if seq is None:
            return cls([])
        if seq.is_python_constant() and cls is TupleVariable and isinstance(_const(seq), str):
            return None  # tuple("ab") folds as a constant
        return cls(seq.unpack_var_sequence(tx))

    return build


def _dict(tx, *args, **kwargs):
    items = key_value_pairs(tx, args[0]) if args else {}
    items.update(kwargs)
    return ConstDictVariable(items)


def _sum(tx, seq, start=None):
    total = start if start is not None else ConstantVariable(0)
    for item in seq.unpack_var_sequence(tx):
        total = BuiltinVariable(operator.add).call_function(tx, [total, item], {})
    return total


class _Incomparable:
    """The sort key of a value that is not a constant (a tensor): comparing it would read tensor
    data, so it stops the trace. ``sorted(d.items())`` never compares the values when the keys
    differ, so it still folds."""

    def __init__(self, vt: VariableTracker):
        self.vt = vt

    def _refuse(self, other):
        unimplemented(f"comparing {self.vt} while sorting (min/max/sorted read tensor data)")

    __lt__ = __gt__ = __le__ = __ge__ = __eq__ = __ne__ = _refuse


def _comparable(vt: VariableTracker) -> Any:
    """What ``sorted``/``min``/``max`` compare for ``vt``: its constant value, a tuple of the
    items' keys for a tuple or list (compared item by item, as Python does), else a refusal."""
    if vt.is_python_constant():
        return _const(vt)
    if isinstance(vt, BaseListVariable):
        return vt.python_cls(_comparable(i) for i in vt.items)
    return _Incomparable(vt)


def _sort_keys(tx, items, key) -> list:
    """The comparable keys of ``items``; ``key`` (a lambda, a user function, an itemgetter) is
    called on each item while tracing, like any other call."""
    if key is not None and not (key.is_python_constant() and _const(key) is None):
        items = [key.call_function(tx, [i], {}) for i in items]
    return [_comparable(i) for i in items]


def _min_max(fn):
    def fold(tx, *args, key=None, default=None):
        items = args[0].unpack_var_sequence(tx) if len(args) == 1 else list(args)
        if not items:
            if default is None:
                unimplemented(f"{fn.__name__}() of an empty sequence raises")
            return default
        if key is None and any(isinstance(i, SymNodeVariable) for i in items) and all(
                isinstance(i, SymNodeVariable) or type(getattr(i, "value", None)) is int
                for i in items):  # max(s0 - 3, 0): torch.sym_max, no guard on which is larger
            best = items[0]
            for item in items[1:]:
                best = symbolic_builtin(tx, BuiltinVariable(fn), [best, item], {})
            return best
        keys = _sort_keys(tx, items, key)
        return items[fn(range(len(items)), key=keys.__getitem__)]  # the first best, as Python

    return fold


def _sorted(tx, seq, key=None, reverse=None):
    items = seq.unpack_var_sequence(tx)
    keys = _sort_keys(tx, items, key)
    order = sorted(range(len(items)), key=keys.__getitem__,  # stable, like sorted() itself
                   reverse=bool(reverse is not None and reverse.truth(tx)))
    return ListVariable([items[j] for j in order])


def _reduce(tx, fn, seq, *initial):
    """``functools.reduce(operator.add, [x, y, z])``: unrolled into calls of ``fn``."""
    items = seq.unpack_var_sequence(tx)
    if not items and not initial:
        unimplemented("reduce() of an empty sequence with no initial value raises")
    total, rest = (initial[0], items) if initial else (items[0], items[1:])
    for item in rest:
        total = fn.call_function(tx, [total, item], {})
    return total


def _set(cls):
    def build(tx, seq=None):
        items = [] if seq is None else seq.unpack_var_sequence(tx)
        return SetVariable.of(items, frozen=cls is frozenset)

    return build


def _all_any(fn):
    def fold(tx, seq):
        return ConstantVariable(fn(i.truth(tx) for i in iterate(tx, seq)))  # stops early

    return fold


def _getattr(tx, obj, name, *default):
    if default and not _hasattr(tx, obj, name).as_python_constant():
        return default[0]  # absent (and guarded absent when the object came from outside)
    return obj.var_getattr(tx, _const(name))


def _setattr(tx, obj, name, value):
    """``setattr(obj, name, value)`` on a user object: as ``obj.name = value`` (STORE_ATTR)."""
    if not isinstance(obj, UserDefinedObjectVariable):
        return None
    obj.store_attr(tx, _const(name), value)
    return ConstantVariable(None)


def _delattr(tx, obj, name):
    """``delattr(obj, name)`` on a user object: as ``del obj.name`` (DELETE_ATTR)."""
    if not isinstance(obj, UserDefinedObjectVariable):
        return None
    return obj.delete_attr(tx, _const(name))


def _real_value(tx, obj) -> Any:
    """The real object behind ``obj`` (a tensor input's real tensor), or None."""
    if isinstance(obj, TensorVariable):
        if obj.source is None:  # made by the graph: only torch.Tensor's own attributes
            return None
        return next((gi.example for gi in tx.output.graph_inputs if gi.source == obj.source),
                    None)
    return getattr(obj, "value", getattr(obj, "module", None))


def _hasattr(tx, obj, name):

    name = _const(name)
    if isinstance(obj, UserDefinedObjectVariable):  # through the class's own __getattribute__
        traced = obj.traced_hasattr(tx, name)
        if traced is not None:
            return traced
    if name in (getattr(obj, "attrs", None) or {}):  # set by the code traced so far
        return ConstantVariable(True)
    stored = tx.output.side_effects.load_attr(obj.identity(), name)
    if stored is not None:  # stored or deleted earlier in this trace, replayed after it
        return ConstantVariable(stored is not DELETED)
    value = _real_value(tx, obj)
    if isinstance(obj, TensorVariable) and value is None:
        return ConstantVariable(hasattr(obj.example_value, name))
    if value is None and isinstance(obj, (BaseListVariable, ConstDictVariable, SetVariable)):
        # a tuple, list, dict or set (a namedtuple too) has no attributes of its own: its
        # class answers (a namedtuple's fields are class descriptors)
        return ConstantVariable(hasattr(obj.python_type(), name))
    if isinstance(obj, BaseUserFunctionVariable) and hasattr(obj, "fn"):
        # a bound method answers for itself (__self__, __func__), then for its function
        bound = isinstance(obj, UserMethodVariable)
        return ConstantVariable(name in ("__self__", "__func__") and bound
                                or hasattr(obj.fn, name))
    if value is None and not obj.is_python_constant():
        unimplemented(f"hasattr on {obj}")
    found = hasattr(value if value is not None else _const(obj), name)
    if obj.source is not None:  # an attribute added or deleted later: recompile
        tx.output.add_guard(Guard(obj.source, GuardKind.HASATTR, (name, found), tx.user_line()))
    return ConstantVariable(found)


def _type(tx, obj):
    return ConstantVariable(obj.python_type())


def _callable(tx, obj):

    if isinstance(obj, (BaseUserFunctionVariable, KnownCallableVariable, GetAttrVariable,
                        NNModuleVariable, FunctoolsPartialVariable)):
        return ConstantVariable(True)  # GetAttrVariable: a method such as x.sum
    if isinstance(obj, (TensorVariable, BaseListVariable, ConstDictVariable, SetVariable)):
        return ConstantVariable(False)
    if isinstance(obj, UserDefinedObjectVariable):
        return ConstantVariable(callable(obj.value))
    return None  # a constant: folded


def _super(tx, *args):

    if args:
        return SuperVariable(_const(args[0]), args[1])
    cls, obj = tx.zero_arg_super()
    return SuperVariable(cls, obj)


def _vars(tx, obj=None):
    """``vars(obj)``: the object's ``__dict__``, as its tracker answers ``obj.__dict__`` (a plain
    user object's; None, not handled, for anything else and for ``vars()``)."""
    instance_dict = getattr(obj, "instance_dict", None)
    return instance_dict(tx) if instance_dict is not None else None


def _id(tx, obj):
    """``id(obj)``: a real object's id, guarded by identity when it comes from outside the
    frame; for a value that exists only while tracing (a tracker is its identity), the
    tracker's id: unique and stable for the trace, which is all an id promises (``copy.deepcopy``
    and ``inspect.unwrap`` key their memo dicts by it)."""
    value = obj.identity()
    if isinstance(value, VariableTracker):
        return ConstantVariable(id(value))
    if obj.source is not None:
        tx.output.add_guard(Guard(obj.source, GuardKind.ID_MATCH, value, tx.user_line()))
    return ConstantVariable(id(value))


def _print(tx, *args, **kwargs):
    unimplemented("print() is a side effect outside the graph (a graph break in real Dynamo)")


TENSOR_OPERATORS = {
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
    operator.pow, operator.matmul, operator.and_, operator.or_, operator.xor, operator.lshift,
    operator.rshift, operator.iadd, operator.isub, operator.imul, operator.itruediv,
    operator.ifloordiv, operator.imod, operator.ipow, operator.imatmul, operator.iand,
    operator.ior, operator.ixor, operator.ilshift, operator.irshift, operator.neg, operator.pos,
    operator.invert, operator.abs, operator.lt, operator.le, operator.gt, operator.ge,
    operator.eq, operator.ne, operator.contains, operator.getitem,
}

def _exception_text(fn: Callable) -> Callable:
    """``str(e)`` / ``repr(e)`` of an exception, when its class keeps the builtin's: computed
    from its constant ``args`` (None: not such a value, fall through). Those of one from
    outside the frame (an exception a resume function's handler receives) are read through
    ``e.args``, so the text is guarded like any constant the trace reads: another exception
    of the same class compiles anew rather than reusing this one's text."""

    def fold(tx, obj=None, *rest):
        value = getattr(obj, "value", None)
        if rest or not isinstance(obj, UserDefinedObjectVariable) \
                or not isinstance(value, BaseException) or not _builtin_text(type(value)):
            return None
        args = (obj.attrs or {}).get("args")
        if args is None and obj.source is not None:
            args = obj.var_getattr(tx, "args")
        if args is None:
            return ConstantVariable(fn(value))
        if not args.is_python_constant():
            return None
        return ConstantVariable(fn(type(value).__new__(type(value), *_const(args))))

    return fold


def _object_method(name: str) -> Callable:
    """``object.__setattr__(obj, ...)`` / ``object.__getattribute__(obj, ...)``: object's own
    store or lookup on a tracker that models it (what a class's hook ends with); None (not
    handled) for anything else."""

    def call(tx, obj, *args):
        call_base = getattr(obj, "call_base_method", None)
        return call_base(tx, name, list(args), {}) if call_base is not None else None

    return call


def _object_new(tx, cls=None, *args, **kwargs):
    """``object.__new__(C)`` (``C.__new__(C)``, ``copyreg.__newobj__`` in ``copy.deepcopy``'s
    reconstruction): for a plain user class, an empty object built while tracing, whose
    attributes the trace then sets. Never folded into one real object made while tracing: the
    compiled code would hand out that same object on every call, without the attributes the
    trace gave it."""
    klass = cls.as_python_constant() if cls is not None and cls.is_python_constant() else None
    if not is_plain_user_class(klass) or args or kwargs:
        name = getattr(klass, "__name__", "an unknown class")
        unimplemented(f"object.__new__({name}): only a plain Python class's empty instance is "
                      "built while tracing (this one has its own __new__, __getattr__ or "
                      "__delattr__, a hook in C, or is built in C)")
    return UserDefinedObjectVariable(object.__new__(klass), None, attrs={})


def _builtin_text(cls: type) -> bool:
    return all(next(k for k in cls.__mro__ if name in vars(k)).__module__ == "builtins"
               for name in ("__str__", "__repr__"))


def _first_answer(*handlers: Callable | None) -> Callable:
    """One handler asking each of ``handlers`` in turn, until one answers (not None)."""
    handlers = [h for h in handlers if h is not None]

    def ask(tx, *args, **kwargs):
        return next((r for r in (h(tx, *args, **kwargs) for h in handlers) if r is not None), None)

    return ask


HANDLERS: dict[Callable, Callable] = {
    builtins.str: _exception_text(str), builtins.repr: _exception_text(repr),
    operator.add: _seq_add, operator.mul: _seq_mul,
    operator.iadd: _container_operator("__iadd__", _seq_add),
    operator.imul: _container_operator("__imul__", _seq_mul),
    **{op: _container_operator(f"__{op.__name__}__")
       for op in (operator.or_, operator.ior, operator.iand, operator.ixor, operator.isub)},
    operator.getitem: _getitem, operator.setitem: _setitem,
    operator.contains: _contains, operator.not_: _not, operator.truth: _truth,
    operator.is_: _is(False), operator.is_not: _is(True),
    builtins.len: _len, builtins.isinstance: _isinstance, builtins.range: _range,
    builtins.iter: _iter, builtins.next: _next, builtins.zip: _zip,
    builtins.enumerate: _enumerate, builtins.reversed: _reversed, builtins.map: _map,
    builtins.filter: _filter, builtins.list: _sequence(ListVariable),
    builtins.tuple: _sequence(TupleVariable), builtins.dict: _dict, builtins.sum: _sum,
    builtins.set: _set(set), builtins.frozenset: _set(frozenset), functools.reduce: _reduce,
    builtins.min: _min_max(min), builtins.max: _min_max(max), builtins.all: _all_any(all),
    builtins.any: _all_any(any), builtins.sorted: _sorted, builtins.getattr: _getattr, builtins.hasattr: _hasattr,
    builtins.setattr: _setattr, builtins.delattr: _delattr, builtins.type: _type, builtins.callable: _callable, builtins.super: _super,
    builtins.print: _print, builtins.id: _id, builtins.vars: _vars, builtins.bool: lambda tx, v=None: _truth(tx, v) if v else None,
    operator.eq: user_compare("__eq__"), operator.ne: user_compare("__ne__"),  # user __eq__
    object.__new__: _object_new, object.__setattr__: _object_method("__setattr__"),
    object.__getattribute__: _object_method("__getattribute__"),
    object.__delattr__: _object_method("__delattr__"),
}

HANDLERS.update(ITER_HANDLERS)  # itertools, operator.itemgetter & co (iter.py)
for _op in [*BINARY_METHODS, *INPLACE_METHODS]:  # a user object's __add__, __radd__, __iadd__...
    HANDLERS[_op] = _first_answer(HANDLERS.get(_op), user_binary_op(_op))

# Builtin callables (besides functions) that the builder wraps as BuiltinVariable.
BUILTIN_CALLABLES = {v for v in vars(builtins).values() if callable(v)} | \
    {v for v in vars(operator).values() if callable(v)} | \
    {v for v in vars(math).values() if callable(v)} | {functools.reduce} | set(ITER_HANDLERS) | \
    {sys.getrecursionlimit} | \
    {object.__setattr__, object.__getattribute__, object.__delattr__}  # a hook's reference to
#                                                                         object's own slot
