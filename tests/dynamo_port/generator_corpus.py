"""Cases ported from pytorch/pytorch ``test/dynamo/test_generator.py`` (``GeneratorTests``):
user generators consumed by ``next``, ``for``, ``zip``, ``list``, ``yield from`` and early
exits, re-typed and adapted so that each returns what it consumed (a generator object itself
cannot be compared with eager's)."""

# ruff: noqa: E731
from __future__ import annotations

import collections
import itertools

import torch

from . import case_registrar

case = case_registrar("test/dynamo/test_generator.py")


def one_two_three():
    yield 1
    yield 2
    yield 3


def counting_forever():
    i = 0
    while True:
        yield i
        i += 1


def shifted(t):
    yield t + 1
    yield t + 2
    yield t + 3


def sub_shifted(t):
    yield t + 1
    yield t + 2


def delegating(t):
    yield from sub_shifted(t)
    yield t + 3


@case
def generator_simple(t):
    gen = one_two_three()
    t = t + next(gen)
    t = t + next(gen)
    return t + next(gen)


@case
def infinite_generator(t):
    gen = counting_forever()
    t = t + next(gen)
    t = t + next(gen)
    return t + next(gen)


@case
def infinite_generator_zip(t):
    def whoo(t):
        i = 0
        while True:
            yield t + i
            i += 1

    return list(zip(range(3), whoo(t)))


@case
def list_zip_generator(t):
    return list(zip(range(3), shifted(t)))


@case
def zip_subgenerator(t):
    return list(zip(range(3), delegating(t))), t.sin()


@case
def dict_from_generator(t):
    def pairs(t):
        yield 1, t + 1
        yield 2, t + 2

    return dict(pairs(t))


@case
def tuple_from_generator(t):
    return tuple(shifted(t))


@case
def subgenerator_list(t):
    return list(delegating(t))


@case
def advanced_generator_rest(t):
    gen = shifted(t)
    next(gen)
    return list(gen)


@case
def iter_break_infinite(t):
    s = 0
    for i in counting_forever():
        if i > 5:
            break
        s += i
    return t + s


@case
def list_extend_generator(x):
    y = [1]
    y.extend(y[-1] + z for z in range(3))
    return x + 1, y


@case
def deque_extendleft_generator(x):
    y = collections.deque([1])
    y.extendleft(y[0] + z for z in range(3))
    return x + 1, list(y)


@case
def isdisjoint_with_generator(x):
    seen = []

    def gen():
        seen.append(1)
        yield 1
        seen.append(2)
        yield 2
        seen.append(3)
        yield 3

    {2, 4, 5}.isdisjoint(gen())
    return x.sin() if len(seen) == 2 else x.cos()


@case
def generator_contains_side_effects(x):
    n = [0]

    def whoo():
        n[0] = 1
        yield 1
        n[0] = 2
        yield 2

    g = whoo()
    found = 1 in g
    return x + n[0], found


@case
def graph_break_outside_generator(t):
    gen = shifted(t)
    x = next(gen)
    torch._dynamo.graph_break()
    return x + next(gen)


@case
def generator_in_product(t):
    def whoo():
        for perm in itertools.permutations((0, 1, 2)):
            yield sum(perm[:2])

    s = 0
    for b, _ in itertools.product(whoo(), itertools.permutations((4, 5))):
        s += b
    return t + s


@case
def generator_local_state(t):
    def whoo(t):
        x = 0
        yield t.sin() + x
        x += 1
        yield t.cos() + x

    gen = whoo(t)
    a = next(gen)
    return a, next(gen)


@case
def stop_iteration_default(t):
    gen = sub_shifted(t)
    items = [next(gen), next(gen), next(gen, None)]
    return items[0] + items[1], items[2] is None


@case
def generator_any_early_exit(t):
    calls = []

    def check(v):
        calls.append(v)
        return v > 1

    found = any(check(v) for v in [0, 1, 2, 3, 4])
    return t * len(calls), found


@case
def generator_expression_sum(t):
    return sum(t * i for i in range(4))
