"""Cases ported from pytorch/pytorch ``test/dynamo/test_list.py`` (``TupleTests``, ``ListTests``,
``CustomNewTupleTests``, ``CustomNewListTests``, ``IndexNotFoundTests``): tuple and list methods,
operators and dunder methods called directly, subclasses overriding ``__new__``, and the errors
a wrong call raises, re-typed and adapted.

PyTorch runs these test bodies themselves under Dynamo (``make_dynamo_test``); here each body
takes a tensor, and its assertions become returned values: ``assertRaises(E, f, *args)`` becomes
``raises(E, f, *args)``, the name of the exception caught inside the compiled frame (or ``None``
when none was raised)."""

# ruff: noqa: E731
from __future__ import annotations

import collections
import functools

import torch

from . import case_registrar

case = case_registrar("test/dynamo/test_list.py")


def raises(exc, fn, *args, **kwargs):
    """``assertRaises`` as a value: the name of the ``exc`` that ``fn(*args, **kwargs)`` raises."""
    try:
        fn(*args, **kwargs)
    except exc as e:
        return type(e).__name__
    return None


def message(exc, fn, *args):
    """The text of the ``exc`` that ``fn(*args)`` raises (``assertRaisesRegex``)."""
    try:
        fn(*args)
    except exc as e:
        return str(e)
    return None


class AlwaysEqualForListRemove:
    def __eq__(self, other):
        return True


class NeverEqualForListRemove:
    def __eq__(self, other):
        return False


class CmpKeyForListSort:
    def __init__(self, v):
        self.v = v

    def __lt__(self, other):
        return self.v % 3 < other.v % 3


class CustomTupleWithNew(tuple):  # noqa: SLOT001
    def __new__(cls, arg, newarg=None):
        self = super().__new__(cls, arg)
        self.newarg = newarg
        return self


class GrandchildTupleWithNew(CustomTupleWithNew):
    pass


class PlainTuple(tuple):  # noqa: SLOT001
    pass


class GrandchildPlainTuple(PlainTuple):
    pass


class CustomListWithNew(list):
    def __new__(cls, arg, newarg=None):
        self = super().__new__(cls)
        self.newarg = newarg
        return self

    def __init__(self, arg, newarg=None):
        super().__init__(arg)


class GrandchildListWithNew(CustomListWithNew):
    pass


class PlainList(list):
    pass


class GrandchildPlainList(PlainList):
    pass


# --- TupleTests, run on both tuple and list (ListTests inherits them) -----------------------

def _count(thetype, x):
    p = thetype("abcab")
    return x + 1, [p.count("a"), p.count("ab"), raises(TypeError, p.count),
                   raises(TypeError, p.count, 2, 3)]


def _index(thetype, x):
    p = thetype("abc")
    return x + 1, [p.index("a"), raises(ValueError, p.index, "e"), raises(TypeError, p.index)]


def _binop_mul(thetype, x):
    p = thetype([1, 2, 3])
    r = p.__mul__(2)
    return x + 1, [isinstance(r, thetype), r == thetype([1, 2, 3, 1, 2, 3]),
                   p == thetype([1, 2, 3]), raises(TypeError, p.__mul__),
                   raises(TypeError, p.__mul__, 2.2)]


def _binop_add(thetype, x):
    p, q = map(thetype, ["abc", "bcd"])
    return x + 1, [isinstance(p + q, thetype), p + q == thetype("abcbcd"),
                   p.__add__(q) == thetype("abcbcd"), raises(TypeError, p.__add__),
                   raises(TypeError, p.__add__, dict.fromkeys(q))]


def _cmp_eq(thetype, x):
    p, q, r = map(thetype, ["ab", "abc", "ab"])
    return x + 1, [p == p, p == r, p != q, p.__eq__(r), raises(TypeError, p.__eq__)]


def _cmp_ordering(thetype, x):
    p, q = map(thetype, ["ab", "abc"])
    return x + 1, [p < q, p.__lt__(q), q < p, q > p, q.__gt__(p), p > q, p <= q, p.__le__(q),
                   q <= p, q >= p, q.__ge__(p), p >= q, p.__ne__(q),
                   raises(TypeError, p.__lt__), raises(TypeError, p.__ge__)]


def _getitem(thetype, x):
    p = thetype("abc")
    return x + 1, [p.__getitem__(2), raises(IndexError, p.__getitem__, 10),
                   raises(TypeError, p.__getitem__), raises(TypeError, p.__getitem__, 1, 2)]


def _contains(thetype, x):
    p = thetype("abc")
    return x + 1, [p.__contains__("a"), isinstance(p.__contains__("c"), bool),
                   raises(TypeError, p.__contains__), raises(TypeError, p.__contains__, 1, 2)]


def _iter(thetype, x):
    p = thetype([1])
    it = p.__iter__()
    first = next(it)
    it = p.__iter__().__iter__()
    return x + first + next(it)


for _thetype in (tuple, list):
    for _body in (_count, _index, _binop_mul, _binop_add, _cmp_eq, _cmp_ordering, _getitem,
                  _contains, _iter):
        # One function per (type, body): tuple_tests_count is TupleTests.test_count.
        _case_fn = (lambda body, thetype: lambda x: body(thetype, x))(_body, _thetype)
        _case_fn.__name__ = _case_fn.__qualname__ = f"{_thetype.__name__}_tests{_body.__name__}"
        case(_case_fn)


@case
def list_mul_constant_tuple(x):
    tree = (1, 2)
    result = [tree] * 2
    return x + 1, result == [tree, tree], result


# --- ListTests -------------------------------------------------------------------------------

@case
def list_append(x):
    p = list("abc")
    return x + 1, [p.append("d"), p, raises(TypeError, p.append),
                   raises(TypeError, p.append, 2, 3)]


@case
def list_copy(x):
    p = list("abc")
    return x + 1, [p.copy() == p, p.copy() is p, raises(TypeError, p.copy, 1)]


@case
def list_clear_then_len(x):
    p = list("abc")
    return x + 1, [p.clear(), p, len(p), raises(TypeError, p.clear, 1)]


@case
def list_extend(x):
    p, q = map(list, ["ab", "cd"])
    return x + 1, [p.extend(q), p, raises(TypeError, p.extend, 1), raises(TypeError, p.extend),
                   raises(TypeError, p.extend, 2, 3)]


@case
def list_insert(x):
    p = list("abc")
    return x + 1, [p.insert(1, "ef"), p, raises(TypeError, p.insert),
                   raises(TypeError, p.insert, 1), raises(TypeError, p.insert, 1, 2, 3)]


@case
def list_pop(x):
    p = list("abcd")
    return x + 1, [p.pop(), p.pop(1), raises(IndexError, p.pop, 2),
                   raises(TypeError, p.pop, 2, 3), p]


@case
def list_remove(x):
    p = list("abad")
    return x + 1, [p.remove("a"), p, raises(ValueError, p.remove, "x"),
                   raises(TypeError, p.remove), raises(TypeError, p.remove, 2, 3)]


@case
def list_remove_uses_item_richcompare(x):
    p = [AlwaysEqualForListRemove()]
    return x + 1, p.remove(NeverEqualForListRemove()), p


@case
def list_remove_matches_identity_before_richcompare(x):
    item = NeverEqualForListRemove()
    p = [item]
    return x + 1, p.remove(item), p


@case
def list_reverse(x):
    p = list("abcd")
    return x + 1, [p.reverse(), p, raises(TypeError, p.reverse, 1)]


@case
def list_sort(x):
    p = list("dbca")
    return x + 1, p.sort(), p


@case
def list_sort_cmp_to_key(x):
    def revcmp(a, b):
        return (a < b) - (a > b)

    p = [1, 3, 2]
    p.sort(key=functools.cmp_to_key(revcmp))
    first = list(p)
    p.sort(key=functools.cmp_to_key(revcmp), reverse=True)
    return x + 1, first, p


@case
def list_sort_user_defined_lt(x):
    p = [3, 4, 5]
    p.sort(key=CmpKeyForListSort)
    first = list(p)
    p.sort(key=CmpKeyForListSort, reverse=True)
    return x + 1, first, p


@case
def list_sort_modified_during_sort(x):
    p = [1, 3, 2]

    def selfmodifying(a, b):
        p.append(4)
        return (a > b) - (a < b)

    return x + 1, raises(ValueError, p.sort, key=functools.cmp_to_key(selfmodifying)), p


@case
def list_sort_empty_during_sort(x):
    p = [1, 3, 2]
    sizes = []

    def key(v):
        sizes.append(len(p))
        return v

    p.sort(key=key)
    return x + 1, p, sizes


@case
def list_binop_imul(x):
    p = [1, 2, 3]
    r = p.__imul__(2)
    out = [isinstance(r, list), r, p, r is p]
    p = list("ab")
    p *= 2
    return x + 1, out + [p, raises(TypeError, p.__imul__), raises(TypeError, p.__imul__, 2.2)]


@case
def list_binop_iadd(x):
    p, q = map(list, ["abc", "bcd"])
    r = p.__iadd__(q)
    out = [isinstance(r, list), r, p, r is p]
    p = list("ab")
    p += "cd"
    return x + 1, out + [p, raises(TypeError, p.__iadd__),
                         raises(TypeError, p.__add__, dict.fromkeys(q))]


@case
def list_setitem_dunder(x):
    p = list("abc")
    out = [p.__setitem__(2, "a"), list(p)]
    p[0:] = []
    return x + 1, out + [p, raises(TypeError, p.__setitem__), raises(TypeError, p.__setitem__, 1),
                         raises(TypeError, p.__setitem__, 1, 2, 3)]


@case
def list_delitem_dunder(x):
    p = list("abcdef")
    out = [p.__delitem__(1), list(p), p.__delitem__(slice(1, 3)), list(p)]
    return x + 1, out + [raises(ValueError, p.__delitem__, slice(1, 1, 0)),
                         raises(TypeError, p.__delitem__), raises(TypeError, p.__delitem__, 1.1),
                         raises(TypeError, p.__delitem__, 1, 2)]


@case
def list_setitem_slice_non_iterable(x):
    p = list("abcdef")
    out = [message(TypeError, p.__setitem__, slice(1, 3), 1),
           message(TypeError, p.__setitem__, slice(1, 5, 2), 1)]
    p[1:3] = ["x", "y"]
    return x + 1, out, p


# --- CustomNewTupleTests, CustomNewListTests ---------------------------------------------------

@case
def tuple_subclass_new_via_super(x):
    t = CustomTupleWithNew([1, 2], newarg=5)
    return x + 1, [type(t) is CustomTupleWithNew, tuple(t) == (1, 2), t.newarg]


@case
def tuple_subclass_new_via_super_multilevel(x):
    t = GrandchildTupleWithNew([1, 2, 3])
    return x + 1, [type(t) is GrandchildTupleWithNew, tuple(t) == (1, 2, 3), t.newarg]


@case
def tuple_new_exact_type(x):
    t = tuple.__new__(tuple, [1, 2])
    return x + 1, t


@case
def tuple_new_rejects_kwargs(x):
    return x + 1, raises(TypeError, lambda: tuple.__new__(tuple, [1, 2], extra=1))


@case
def tuple_new_multilevel_no_override(x):
    t = GrandchildPlainTuple.__new__(GrandchildPlainTuple, [1, 2, 3])
    return x + 1, [type(t) is GrandchildPlainTuple, tuple(t)]


@case
def tuple_new_multilevel_no_override_via_construction(x):
    t = GrandchildPlainTuple([1, 2, 3])
    return x + len(t), [type(t) is GrandchildPlainTuple, tuple(t)]


@case
def list_subclass_new_via_super(x):
    lst = CustomListWithNew([1, 2, 3], newarg=7)
    return x + 1, [type(lst) is CustomListWithNew, list(lst), lst.newarg]


@case
def list_subclass_new_via_super_multilevel(x):
    lst = GrandchildListWithNew([1, 2, 3])
    return x + 1, [type(lst) is GrandchildListWithNew, list(lst), lst.newarg]


@case
def list_new_multilevel_no_override_ignores_extra_args(x):
    lst = GrandchildPlainList.__new__(GrandchildPlainList, [1, 2], extra="ignored")
    return x + 1, [type(lst) is GrandchildPlainList, lst == []]


@case
def list_new_exact_type(x):
    lst = list.__new__(list)
    lst.append(1)
    return x + 1, lst


@case
def list_new_ignores_kwargs(x):
    lst = list.__new__(list, [1, 2], extra="ignored")
    return x + 1, lst


@case
def list_subclass_new_stores_no_init_args(x):
    return GrandchildPlainList([1, 2, 3]), x + 1


# --- IndexNotFoundTests ---------------------------------------------------------------------

@case
def index_not_found_list(x):
    return x + 1, message(ValueError, [1, 2, 3].index, "z")


@case
def index_not_found_tuple(x):
    return x + 1, message(ValueError, (1, 2, 3).index, "z")


@case
def index_not_found_deque(x):
    return x + 1, message(ValueError, collections.deque([1, 2, 3]).index, "z")


@case
def index_not_found_list_nonconst(x):
    return x + 1, message(ValueError, [NeverEqualForListRemove()].index, "z")


@case
def index_not_found_tuple_nonconst(x):
    return x + 1, message(ValueError, (NeverEqualForListRemove(),).index, "z")


@case
def index_not_found_deque_nonconst(x):
    return x + 1, message(ValueError, collections.deque([NeverEqualForListRemove()]).index, "z")
