"""Cases ported from pytorch/pytorch ``test/dynamo/test_sets.py`` (set and frozenset methods,
operators and subclasses, ``in`` against a set from outside), re-typed and adapted: each test's
assertions become returned values compared with eager's."""

from __future__ import annotations

import torch

from . import case_registrar

case = case_registrar("test/dynamo/test_sets.py")


class SetSubclass(set):
    pass


class CustomSet(set):
    def add(self, item):
        return super().add(item + 1)

    def contains(self, item):
        return True


names_set = {"Dynamo", "Inductor", "PyTorch"}
functions_set = {torch._C._set_grad_enabled, "hello", torch.amp._exit_autocast}


@case
def custom_set_add(x):
    s = CustomSet([1, 2])
    s.add(3)
    return x + len(s), s == {1, 2, 4}, s.contains(7)


@case
def set_subclass_sorted(x):
    s = SetSubclass([3, 1, 2])
    s.add(0)
    return x + sum(s), sorted(s)


@case
def set_in_guard(x):
    if "PyTorch" in names_set:
        return x.sin()
    return x.cos()


@case
def set_with_function(x):
    if torch.amp._exit_autocast in functions_set:
        return x.sin()
    return x.cos()


@case
def set_binops(x):
    p, q = set("abc"), set("bef")
    return x + len(p - q), sorted(p | q), sorted(p & q), sorted(p ^ q)


@case
def frozenset_binops(x):
    p, q = frozenset("abc"), frozenset("bef")
    return x + len(p | q), sorted(p - q), p & q == frozenset("b")


@case
def set_comparisons(x):
    p, q, r = set("abc"), set("bef"), set("ab")
    return x + 1, [p < p, p < q, r < p, p <= p, p >= r, q > r, p == set(p), p != q]


@case
def set_methods(x):
    p, q, r = set("abc"), set("bc"), set("bef")
    return x + 1, [q.issubset(p), r.issubset(p), p.issuperset(q), p.isdisjoint(r),
                   sorted(p.union(r)), sorted(p.intersection(r)), sorted(p.difference(q)),
                   sorted(p.symmetric_difference(r))]


@case
def set_mutating_methods(x):
    s = {1, 2, 3}
    s.update([4, 5])
    s.discard(1)
    s.remove(2)
    s.difference_update({5})
    s.intersection_update({3, 4, 6})
    return x + len(s), sorted(s)


@case
def set_remove_missing_raises(x):
    s = {1}
    try:
        s.remove(2)
    except KeyError:
        return x - 1
    return x + 1


@case
def set_issubset_no_argument_raises(x):
    p = set("ab")
    try:
        p.issubset()
    except TypeError:
        return x - 1
    return x + 1


@case
def set_contains_frozenset(x):
    container = {frozenset("abc")}
    return x + 1, frozenset("abc") in container, set("abc") in container


@case
def set_from_dict_keys(x):
    d = dict.fromkeys(range(4))
    s = set(d)
    return x + len(s), sorted(s - {0})


@case
def set_comprehension(x):
    s = {i % 3 for i in range(10)}
    return x * len(s), sorted(s)


# -- members that are not constants ---------------------------------------------------------------
def _helper_a(x):
    return x + 1


def _helper_b(x):
    return x * 2


helpers_set = frozenset({_helper_a, _helper_b})


@case
def set_of_global_functions(x):
    for f in (_helper_a, _helper_b, len):
        if f in helpers_set:
            x = f(x)
    return x, len(helpers_set)


@case
def set_of_functions_union(x):
    fs = {_helper_a}
    gs = fs | {_helper_b}
    gs.discard(_helper_a)
    return x + len(gs), _helper_b in gs, _helper_a in fs


@case
def set_unhashable_member_raises(x):
    try:
        {[1], 2}
    except TypeError as e:
        return x + 1, e.args
    return x - 1, ()
