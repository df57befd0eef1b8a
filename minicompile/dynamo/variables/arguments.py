"""Argument checking of the C methods of builtin containers (real Dynamo checks them in each
tracker's ``call_method``, torch/_dynamo/variables/lists.py, dicts.py, sets.py, through
``raise_args_mismatch``), as CPython's own Argument Clinic does before the method runs: ``{}.update({}, {})`` raises ``TypeError`` in the traced code, so
an ``except TypeError:`` around it takes the branch CPython takes.

The trackers of lists, dicts, sets and deques implement the methods on their items; this check
comes first, from the real method's signature where CPython publishes one, else from
:data:`ARITY` (the methods whose ``__text_signature__`` is missing on some supported Python).
The ``TypeError`` raised is the real one: the method is called with the same number of
placeholder arguments on an empty container of the same builtin class, which fails on the count
before it looks at any argument.
"""

from __future__ import annotations

import collections
import inspect
import math
from typing import Any

from ..exc import ObservedException, Unsupported

CONTAINERS = (list, tuple, dict, set, frozenset, collections.deque)
ANY = math.inf

# (class, method) -> (fewest, most) positional arguments, and whether keywords are accepted
ARITY: dict[tuple[type, str], tuple[float, float, bool]] = {
    **{(dict, m): (0, 0, False) for m in ("clear", "copy", "items", "keys", "values")},
    (dict, "pop"): (1, 2, False),
    (dict, "update"): (0, 1, True),  # d.update(other, **more)
    **{(c, m): (0, ANY, False) for c in (set, frozenset)
       for m in ("difference", "intersection", "union")},
    **{(c, m): (1, 1, False) for c in (set, frozenset)
       for m in ("symmetric_difference", "isdisjoint", "issubset", "issuperset")},
    **{(c, "copy"): (0, 0, False) for c in (set, frozenset)},
    **{(set, m): (0, ANY, False) for m in ("update", "difference_update",
                                           "intersection_update")},
    **{(set, m): (1, 1, False) for m in ("add", "discard", "remove",
                                         "symmetric_difference_update")},
    **{(set, m): (0, 0, False) for m in ("clear", "pop")},
    **{(collections.deque, m): (1, 1, False)
       for m in ("append", "appendleft", "count", "extend", "extendleft", "remove")},
    **{(collections.deque, m): (0, 0, False)
       for m in ("clear", "copy", "pop", "popleft", "reverse")},
    (collections.deque, "index"): (1, 3, False),
    (collections.deque, "insert"): (2, 2, False),
    (collections.deque, "rotate"): (0, 1, False),
    # dunder methods called by name (``p.__getitem__(1, 2)``), where no signature is published
    **{(c, "__getitem__"): (1, 1, False) for c in (list, dict)},
    **{(c, "__contains__"): (1, 1, False) for c in (set, frozenset)},
    **{(collections.deque, m): (0, 0, False) for m in ("__copy__", "__reversed__")},
}


def builtin_base(cls: type, name: str) -> type | None:
    """The builtin container class whose C method ``cls.name`` is (None: not one). Dunder
    methods count too: ``p.__getitem__(1, 2)`` raises as ``p.count(1, 2)`` does."""
    for base in cls.__mro__:
        if name in vars(base):
            return base if base in CONTAINERS else None
    return None


def accepts(cls: type, name: str, nargs: int, kwargs: dict[str, Any]) -> bool:
    if (cls, name) in ARITY:
        low, high, keywords = ARITY[cls, name]
        return low <= nargs <= high and (keywords or not kwargs)
    try:
        signature = inspect.signature(getattr(cls, name))
    except (TypeError, ValueError):  # no signature published: nothing to check
        return True
    try:
        signature.bind(None, *[None] * nargs, **kwargs)  # None stands for self
    except TypeError:
        return False
    return True


def check_arguments(obj, name: str, args: list, kwargs: dict) -> None:
    """Raise (in the traced code) the ``TypeError`` CPython raises for ``obj.name(*args,
    **kwargs)`` when ``obj`` is a builtin container (or a subclass's instance) and the method
    is the builtin's, if the count of arguments makes it raise."""
    try:
        cls = obj.python_type()
    except Unsupported:  # a tracker that does not know its Python type is no container
        return
    base = builtin_base(cls, name)
    if base is None or accepts(base, name, len(args), kwargs):
        return
    try:
        getattr(base(), name)(*[None] * len(args), **dict.fromkeys(kwargs))
    except TypeError as e:
        raise ObservedException(e) from None
    raise ObservedException(TypeError(f"{base.__name__}.{name}() got wrong arguments"))
