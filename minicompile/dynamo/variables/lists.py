"""Sequences: tuples, lists, torch.Size, range, slice, and the iterator FOR_ITER walks
(mirrors torch/_dynamo/variables/lists.py).

Their items are VariableTrackers, so a tuple may hold tensors (graph values) next to constants.
A list made while tracing may be mutated freely (the mutation is just trace-time bookkeeping);
a mutation of a list that came from outside (it has a source) is also recorded in
``side_effects.py``, which replays it after the graph.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Iterator

import torch

from ...names import literal
from ..exc import ObservedException, Unsupported, unimplemented
from .base import VariableTracker
from .constant import ConstantVariable
from .hashable import HashableTracker, dict_key, key_expr, key_constant, key_tracker


class BaseListVariable(VariableTracker):
    python_cls: type = list

    def __init__(self, items: list[VariableTracker], source=None):
        super().__init__(source)
        self.items = list(items)

    def python_type(self) -> type:
        return self.python_cls

    def as_python_constant(self) -> Any:
        return self.python_cls([i.as_python_constant() for i in self.items])

    def as_proxy(self) -> Any:
        return self.python_cls([i.as_proxy() for i in self.items])

    def as_fake(self) -> Any:
        return self.python_cls([i.as_fake() for i in self.items])

    def unpack_var_sequence(self, tx) -> list[VariableTracker]:
        return list(self.items)

    def truth(self, tx) -> bool:
        return len(self.items) > 0

    def identity(self) -> Any:
        return self

    def getitem(self, tx, key: VariableTracker) -> VariableTracker:
        k = key.as_python_constant()
        if isinstance(k, slice):
            return type(self)(self.items[k]) if type(self) is not SizeVariable \
                else SizeVariable(self.items[k])
        if not isinstance(k, int):
            unimplemented(f"indexing a {self.python_cls.__name__} with {type(k).__name__}")
        if not -len(self.items) <= k < len(self.items):
            raise ObservedException(IndexError(f"{self.python_cls.__name__} index out of range"))
        return self.items[k]

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        if name == "__getitem__":
            return self.getitem(tx, args[0])
        if name == "__len__":
            return ConstantVariable(len(self.items))
        if name == "__iter__":  # p.__iter__(): what iter(p) gives
            return ListIteratorVariable(list(self.items), iter_type=ITERATOR_TYPES.get(
                self.python_type(), ITERATOR_TYPES[list]))
        if name in ("index", "count", "__contains__") and not kwargs:
            from .user_defined import identity_equal  # tensors compare by identity here, as in `in`

            needle = args[0]
            hits = [identity_equal(tx, i, needle) for i in self.items]
            if name == "count":
                return ConstantVariable(sum(hits))
            if name == "__contains__":
                return ConstantVariable(any(hits))
            if True in hits:
                return ConstantVariable(hits.index(True))
        unimplemented(f"{self.python_cls.__name__}.{name}")

    def reconstruct(self, codegen) -> str:
        if self.source is not None:
            return self.source.expr()
        body = ", ".join(codegen(i) for i in self.items)
        if self.python_cls is tuple:
            return f"({body},)" if len(self.items) == 1 else f"({body})"
        return f"[{body}]"

    def children(self) -> list[VariableTracker]:
        return list(self.items)

    def _repr_body(self) -> str:
        return ", ".join(map(repr, self.items))


class TupleVariable(BaseListVariable):
    python_cls = tuple


class NamedTupleVariable(TupleVariable):
    """A namedtuple or torch.return_types structseq (``x.max(dim=0).values``)."""

    def __init__(self, items: list[VariableTracker], tuple_cls: type, source=None):
        super().__init__(items, source)
        self.tuple_cls = tuple_cls

    def python_type(self) -> type:
        return self.tuple_cls

    def fields(self) -> list[str]:
        return list(getattr(self.tuple_cls, "_fields", None) or
                    [f for f in dir(self.tuple_cls) if not f.startswith("_")
                     and f not in ("count", "index", "n_fields", "n_sequence_fields",
                                   "n_unnamed_fields")])

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if hasattr(self.tuple_cls, "_fields") and name in self.tuple_cls._fields:
            return self.items[self.tuple_cls._fields.index(name)]
        probe = self.tuple_cls(range(len(self.items))) if not hasattr(self.tuple_cls, "_fields") \
            else None
        if probe is not None and isinstance(getattr(probe, name, None), int):
            return self.items[getattr(probe, name)]  # structseq: find the field's position
        if name in NAMEDTUPLE_METHODS:
            from .misc import GetAttrVariable

            return GetAttrVariable(self, name)
        return self._class_attribute(tx, name)

    def _class_attribute(self, tx, name: str) -> VariableTracker:
        """A method the user wrote on a ``typing.NamedTuple`` (inlined, bound like Python binds
        it) or a class attribute such as ``_fields`` (a constant of the class)."""
        from .builder import SourcelessBuilder
        from .functions import UserFunctionVariable, UserMethodVariable

        static = inspect.getattr_static(self.tuple_cls, name, None)
        if isinstance(static, types.FunctionType):
            return UserMethodVariable(static, self)
        if isinstance(static, staticmethod):
            return UserFunctionVariable(static.__func__)
        if isinstance(static, classmethod):
            return UserMethodVariable(static.__func__, ConstantVariable(self.tuple_cls))
        if static is not None and not callable(static):
            return SourcelessBuilder.wrap(tx, getattr(self.tuple_cls, name))
        return super().var_getattr(tx, name)

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        if name in NAMEDTUPLE_METHODS:
            return NAMEDTUPLE_METHODS[name](self, tx, *args, **kwargs)
        return super().call_method(tx, name, args, kwargs)

    def _asdict(self, tx) -> VariableTracker:
        from .dicts import ConstDictVariable

        return ConstDictVariable(dict(zip(self.tuple_cls._fields, self.items)))

    def _replace(self, tx, **changes: VariableTracker) -> VariableTracker:
        unknown = set(changes) - set(self.tuple_cls._fields)
        if unknown:
            unimplemented(f"{self.tuple_cls.__name__}._replace: no fields {sorted(unknown)}")
        items = [changes.get(f, item) for f, item in zip(self.tuple_cls._fields, self.items)]
        return NamedTupleVariable(items, self.tuple_cls)

    def as_python_constant(self) -> Any:
        unimplemented("a named tuple is rebuilt, not folded")

    def is_built_container(self) -> bool:
        """An instance of a namedtuple subclass without ``__slots__`` holds attributes
        (``tup.c = c``, set natively at a graph break): one made while tracing and reached
        twice (a local and the stack) must be one object."""
        return self.source is None and self.tuple_cls.__dictoffset__ != 0

    def reconstruct(self, codegen) -> str:
        cls = codegen.install_global(self.tuple_cls.__name__, self.tuple_cls)
        body = ", ".join(codegen(i) for i in self.items)
        return f"{cls}({body})" if hasattr(self.tuple_cls, "_fields") else f"{cls}(({body},))"


# The methods collections.namedtuple writes in Python (their bodies call C helpers, so they are
# answered here rather than inlined)
NAMEDTUPLE_METHODS = {"_asdict": NamedTupleVariable._asdict,
                      "_replace": NamedTupleVariable._replace}


class SizeVariable(TupleVariable):
    """``x.shape``: a tuple of ints (SymInts once dynamic shapes are on)."""

    python_cls = torch.Size

    def as_proxy(self) -> Any:
        return tuple(i.as_proxy() for i in self.items)

    def as_fake(self) -> Any:
        return torch.Size([i.as_fake() for i in self.items])

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        if name == "numel":
            n = 1
            for i in self.items:
                n *= i.as_python_constant()
            return ConstantVariable(n)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen) -> str:
        if self.source is not None:
            return self.source.expr()
        return f"{codegen.install_global('Size', torch.Size)}([{', '.join(codegen(i) for i in self.items)}])"


class ListVariable(BaseListVariable):
    python_cls = list

    def is_built_container(self) -> bool:
        return self.source is None

    def _check_mutable(self, tx, name: str, args, kwargs) -> None:
        if self.source is not None:  # a list from outside: replayed after the graph
            tx.output.side_effects.mutate_container(self, name, args, kwargs)

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        if name == "extend" and len(args) == 1 and isinstance(args[0], ListIteratorVariable):
            return extend_from_iterator(tx, self, "append", args[0])
        mutators = {
            "append": lambda: self.items.append(args[0]),
            "extend": lambda: self.items.extend(args[0].unpack_var_sequence(tx)),
            "insert": lambda: self.items.insert(args[0].as_python_constant(), args[1]),
            "reverse": lambda: self.items.reverse(),
            "clear": lambda: self.items.clear(),
            "__setitem__": lambda: self._setitem(tx, args[0], args[1]),
            "__delitem__": lambda: self._delitem(args),
        }
        if name in mutators or name == "pop":
            try:  # list's own errors (pop from an empty list, an index out of range)
                result = mutators[name]() if name in mutators else \
                    self.items.pop(*(a.as_python_constant() for a in args))
            except (IndexError, ValueError) as e:
                raise ObservedException(e) from None
            self._check_mutable(tx, name, args, kwargs)  # after: a raising one changed nothing
            return ConstantVariable(None) if name in mutators else result
        if name in ("__iadd__", "__imul__") and len(args) == 1 and not kwargs:
            return self._inplace(tx, name, args[0])
        if name == "copy":
            return ListVariable(self.items)
        if name == "sort" and not args:
            return self._sort(tx, kwargs)
        return super().call_method(tx, name, args, kwargs)

    def _delitem(self, args: list[VariableTracker]) -> None:
        """``del p[i]``: run on a stand-in list of positions with the real arguments, so that a
        float index, none or a zero step raises CPython's error (the user's, not the tracer's);
        the positions left say which items stay."""
        positions = list(range(len(self.items)))
        try:
            positions.__delitem__(*(a.as_python_constant() for a in args))
        except (TypeError, IndexError, ValueError) as e:
            raise ObservedException(e) from None
        self.items[:] = [self.items[i] for i in positions]

    def _inplace(self, tx, name: str, other: VariableTracker) -> VariableTracker:
        """``p += it`` (``__iadd__``: extends by any iterable) and ``p *= n``: this list, changed
        in place, as every name bound to it sees it."""
        if name == "__iadd__":
            self.items.extend(other.unpack_var_sequence(tx))
        else:
            try:
                self.items *= other.as_python_constant()
            except TypeError as e:  # p *= 2.2
                raise ObservedException(e) from None
        self._check_mutable(tx, name, [other], {})
        return self

    def _sort(self, tx, kwargs: dict) -> VariableTracker:
        """``p.sort(key=..., reverse=...)``: the order ``sorted`` gives (builtin.py), in place.
        As in CPython, the list is empty while the keys are computed (a key function that reads
        it sees ``[]``), and one that adds to it makes the sort raise ``ValueError`` (what it
        added is dropped, the list holds the sorted items). A list from outside is replayed as
        ``p[:] = [...]``, so the key function is not called again."""
        from .builtin import BuiltinVariable  # a cycle: builtin.py builds lists

        items, self.items = self.items, []
        try:
            ordered = BuiltinVariable(sorted).call_function(tx, [ListVariable(items)], kwargs)
        except ObservedException:  # a key function that raised: the list is as it was
            self.items = items
            raise
        modified, self.items = bool(self.items), ordered.items
        everything = SliceVariable(*(ConstantVariable(None) for _ in range(3)))
        self._check_mutable(tx, "__setitem__", [everything, ListVariable(self.items)], {})
        if modified:
            raise ObservedException(ValueError("list modified during sort"))
        return ConstantVariable(None)

    def _setitem(self, tx, key: VariableTracker, value: VariableTracker) -> None:
        k = key.as_python_constant()
        if isinstance(k, slice):
            self.items[k] = value.unpack_var_sequence(tx)
        else:
            self.items[k] = value


class RangeVariable(VariableTracker):
    def __init__(self, value: range, source=None):
        super().__init__(source)
        self.value = value

    def python_type(self) -> type:
        return range

    def as_python_constant(self) -> range:
        return self.value

    def unpack_var_sequence(self, tx) -> list[VariableTracker]:
        return [ConstantVariable(i) for i in self.value]

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        if name == "__getitem__":
            item = self.value[args[0].as_python_constant()]
            return RangeVariable(item) if isinstance(item, range) else ConstantVariable(item)
        if name == "__len__":
            return ConstantVariable(len(self.value))
        if name in ("__contains__", "index", "count") and args[0].is_python_constant():
            needle = args[0].as_python_constant()  # 5 in range(2, 10, 3): arithmetic, no loop
            if name == "index" and needle not in self.value:
                unimplemented(f"range.index({needle!r}) raises ValueError")
            return ConstantVariable(getattr(self.value, name)(needle))
        unimplemented(f"range.{name}")

    def reconstruct(self, codegen) -> str:
        return repr(self.value)

    def _repr_body(self) -> str:
        return repr(self.value)


class SetVariable(VariableTracker):
    """A set or frozenset (``{1, 2, 3}``, ``set(names)``, a set comprehension); in real Dynamo
    SetVariable lives in dicts.py. It holds a real set of its members as a dict files its keys
    (hashable.py: constants as they are, a function or another object that hashes by identity
    as a ``HashableTracker``): ``in``, ``len``, iteration and every method run on it while
    tracing, so iteration order is the order eager sees.
    Mutation is trace-time bookkeeping for a set made while tracing; a set from outside (it has
    a source, guarded by value) is not mutated."""

    MUTATORS = {"add", "discard", "remove", "pop", "clear", "update", "difference_update",
                "intersection_update", "symmetric_difference_update"}
    MEMBER_METHODS = {"add", "discard", "remove", "__contains__"}  # their argument is a member
    INPLACE = {"__ior__": "update", "__iand__": "intersection_update",  # s |= t, ...
               "__ixor__": "symmetric_difference_update", "__isub__": "difference_update"}

    def __init__(self, value: set | frozenset, source=None):
        super().__init__(source)
        self.value = value

    @classmethod
    def of(cls, items: list[VariableTracker], frozen: bool = False) -> "SetVariable":
        """BUILD_SET / set(xs): the items are hashed now (hashable.dict_key)."""
        values = [dict_key(i) for i in items]
        return cls(frozenset(values) if frozen else set(values))

    def python_type(self) -> type:
        return type(self.value)

    def as_python_constant(self) -> set | frozenset:
        return type(self.value)(map(key_constant, self.value))

    def unpack_var_sequence(self, tx) -> list[VariableTracker]:
        return [key_tracker(tx, v) for v in self.value]

    def truth(self, tx) -> bool:
        return bool(self.value)

    def identity(self) -> Any:
        return self

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        from .builder import SourcelessBuilder

        if name in self.INPLACE and type(self.value) is set and len(args) == 1 and not kwargs:
            if not isinstance(args[0], SetVariable):  # s |= [1]: only a set (s.update takes any)
                raise ObservedException(TypeError(f"unsupported operand type(s) for set.{name}"
                                                  f": '{args[0].python_type().__name__}'"))
            self.call_method(tx, self.INPLACE[name], args, kwargs)  # s |= t: s, changed
            return self
        if name in ("isdisjoint", "issuperset") and len(args) == 1 \
                and isinstance(args[0], ListIteratorVariable):  # stop at the first answer
            items = (dict_key(i) for i in iterate(tx, args[0]))
            found = (i in self.value for i in items)
            return ConstantVariable(not any(found) if name == "isdisjoint" else all(found))
        if kwargs:
            unimplemented(f"{self.python_type().__name__}.{name} with keyword arguments")
        if name in self.MUTATORS and (self.source is not None or type(self.value) is frozenset):
            unimplemented(f"mutating a set from outside the frame (.{name})")
        method = getattr(self.value, name, None)
        if method is None:
            unimplemented(f"{self.python_type().__name__}.{name}")
        # a member as the set files it; any other argument (a set, a list, an iterator, a
        # dict) consumed whole, as the members it gives
        members = [a.value if isinstance(a, SetVariable) else  # `{1} in s` asks for frozenset({1})
                   dict_key(a) if name in self.MEMBER_METHODS else
                   [dict_key(i) for i in a.unpack_var_sequence(tx)] for a in args]
        try:
            result = method(*members)
        except Exception as e:  # s.remove(missing): its handler, or a graph break
            raise ObservedException(e) from None
        if result is NotImplemented:  # s.__or__([1]): the operator raises
            raise ObservedException(TypeError(f"unsupported operand for set.{name}"))
        if isinstance(result, (set, frozenset)):
            return SetVariable(result)
        if name == "pop":
            return key_tracker(tx, result)
        return SourcelessBuilder.wrap(tx, result)

    def children(self) -> list[VariableTracker]:
        return [v.vt for v in self.value if isinstance(v, HashableTracker)]

    def reconstruct(self, codegen) -> str:
        if self.source is not None:
            return self.source.expr()
        if self.value and all(literal(v) is not None for v in self.value):
            return repr(self.value)  # {1, 2} / frozenset({1, 2})
        name = self.python_type().__name__
        if any(isinstance(v, HashableTracker) for v in self.value):  # rebuilt member by member
            return f"{name}(({''.join(key_expr(codegen, v) + ', ' for v in self.value)}))"
        return f"{name}({codegen.install_global('const', tuple(self.value))})"

    def _repr_body(self) -> str:
        return repr(self.value)


class SliceVariable(VariableTracker):
    def __init__(self, start: VariableTracker, stop: VariableTracker, step: VariableTracker):
        super().__init__()
        self.parts = (start, stop, step)

    def python_type(self) -> type:
        return slice

    def as_python_constant(self) -> slice:
        return slice(*(p.as_python_constant() for p in self.parts))

    def as_proxy(self) -> slice:
        return slice(*(p.as_proxy() for p in self.parts))

    def as_fake(self) -> slice:
        return slice(*(p.as_fake() for p in self.parts))

    def reconstruct(self, codegen) -> str:
        return f"slice({', '.join(codegen(p) for p in self.parts)})"


# the iterator class CPython's iter() makes for each builtin iterable (``type(it)``,
# ``isinstance(it, range_iterator)``); the items are unrolled the same way for all of them
ITERATOR_TYPES = {cls: type(iter(cls())) for cls in (list, tuple, dict, set, frozenset, str)}
ITERATOR_TYPES[range] = type(iter(range(0)))


class ListIteratorVariable(VariableTracker):
    """The iterator on the stack during FOR_ITER: the loop is unrolled item by item."""

    def __init__(self, items: list[VariableTracker], generator: str | None = None,
                 iter_type: type = ITERATOR_TYPES[list]):
        super().__init__()
        self.items, self.index, self.iter_type = items, 0, iter_type
        # the name of the generator function whose items these are: it ran to its end when
        # called, which is only what Python does if it is consumed right away
        self.generator = generator

    def next_item(self) -> VariableTracker | None:
        if self.index >= len(self.items):
            return None
        self.index += 1
        return self.items[self.index - 1]

    def unpack_var_sequence(self, tx) -> list[VariableTracker]:
        rest, self.index = self.items[self.index:], len(self.items)
        return rest

    def python_type(self) -> type:
        return self.iter_type

    @classmethod
    def of(cls, tx, obj: VariableTracker) -> ListIteratorVariable:
        """``iter(obj)`` (GET_ITER, the builtin): an iterator is its own iterator."""
        if isinstance(obj, ListIteratorVariable):
            return obj
        items = obj.unpack_var_sequence(tx)  # (Unsupported where obj can't be iterated)
        try:
            iterable = obj.python_type()
        except Unsupported:  # a tracker that does not know its type: a list's iterator
            iterable = None
        return cls(items, iter_type=ITERATOR_TYPES.get(iterable, ITERATOR_TYPES[list]))

    def call_method(self, tx, name, args, kwargs) -> VariableTracker:
        if name == "__contains__" and len(args) == 1 and not kwargs:  # `x in it`: consumes it
            from .user_defined import identity_equal  # up to the first match, as CPython does

            return ConstantVariable(any(identity_equal(tx, item, args[0])
                                        for item in iterate(tx, self)))
        if name == "__iter__" and not args and not kwargs:  # an iterator is its own iterator
            return self
        return super().call_method(tx, name, args, kwargs)

    def remaining(self, codegen) -> str:
        """The tuple of the items still to come (a loop in progress is passed across a graph
        break as this tuple: the resume function's prologue calls iter() on it)."""
        rest = [codegen(v) for v in self.items[self.index:]]
        return f"({''.join(r + ', ' for r in rest)})"

    def reconstruct(self, codegen) -> str:
        return f"iter({self.remaining(codegen)})"  # an iterator in a local: the items to come

    def children(self) -> list[VariableTracker]:
        return list(self.items)


def iterate(tx, seq: VariableTracker) -> Iterator[VariableTracker]:
    """``seq``'s items one at a time: an iterator's when they are asked for (a generator runs
    only as far as the consumer reads), a sequence's as they are now."""
    if isinstance(seq, ListIteratorVariable):
        while (item := seq.next_item()) is not None:
            yield item
    else:
        yield from seq.unpack_var_sequence(tx)


def extend_from_iterator(tx, container: VariableTracker, append: str,
                         it: ListIteratorVariable) -> VariableTracker:
    """``l.extend(gen)`` as CPython runs it: one ``append`` per item as it comes, so the
    iterator sees the container grow (``l.extend(len(l) + i for i in ...)``)."""
    for item in iterate(tx, it):
        container.call_method(tx, append, [item], {})
    return ConstantVariable(None)


def hand_over(output, items):
    """Items an iterator hands out and forgets (``referents`` no longer has them): the handler
    that asked for them holds them now, until it returns (what a generator's lifetime reads,
    generators.py)."""
    if output.running and items is not None:
        output.running[-1].handed.extend(items if isinstance(items, list) else [items])
    return items


class LazyIteratorVariable(ListIteratorVariable):
    """An iterator made from others (``zip``, ``map``, ``enumerate``, ``filter``, ``islice``):
    each item is made when asked for, pulling from its sources in CPython's order, so a
    generator among them runs only as far as the consumer reads, and ``map``'s function is
    called when CPython calls it."""

    def __init__(self, tx, rows: Iterator[VariableTracker], sources: list[VariableTracker],
                 made_by: tuple[Any, list[VariableTracker]] | None = None):
        super().__init__([])
        self.output = tx.output
        self.rows, self.exhausted = rows, False
        self.sources = sources  # what it pulls from (and calls): what the real one holds
        # (the builtin, its arguments): how to make it for real while it has made nothing yet
        self.made_by = made_by

    def next_item(self) -> VariableTracker | None:
        if self.index >= len(self.items) and not self.exhausted:
            row = next(self.rows, None)
            if row is None:
                self.exhausted = True
            else:
                self.items.append(row)
        return hand_over(self.output, super().next_item())

    def unpack_var_sequence(self, tx) -> list[VariableTracker]:
        self.items.extend(self.rows)
        self.exhausted = True
        return hand_over(self.output, super().unpack_var_sequence(tx))

    def remaining(self, codegen) -> str:
        if not self.items and not self.exhausted and self.made_by is not None:
            return self._made_again(codegen)  # untouched: `zip(a, b)` over the same a and b
        if not self.exhausted:
            unimplemented("an iterator (zip/map/enumerate/filter/islice) in progress at a graph "
                          "break: the items it has not made yet cannot be passed on")
        return super().remaining(codegen)

    def reconstruct(self, codegen) -> str:
        if not self.items and not self.exhausted and self.made_by is not None:
            return self._made_again(codegen)
        return super().reconstruct(codegen)

    def _made_again(self, codegen) -> str:
        fn, args = self.made_by
        return f"{codegen.install_global(fn.__name__, fn)}({', '.join(map(codegen, args))})"

    def children(self) -> list[VariableTracker]:
        return [*super().children(), *(self.made_by[1] if self.made_by else ())]

    def referents(self) -> list:
        return [*self.items[self.index:], *self.sources]  # the items it made and handed out: gone

    def is_built_container(self) -> bool:
        return self.made_by is not None  # made again on each reconstruct
