"""When a generator paused inside a ``try``/``finally`` dies, and what ``throw()`` does to a
generator paused in ``yield from`` (minicompile/dynamo/variables/generators.py:
``close_dead_generators``, ``LocalGeneratorVariable._throw``), with CPython as the oracle: each
function runs eagerly and compiled (``run_both``: same value, same side effects in the same
order, twice).

CPython closes a generator the moment its last reference goes: a ``for`` loop left by
``break`` or ``return``, ``next(gen())`` returning, ``del g``, a helper that made it returning,
``any()`` stopping early, the name rebound to the next one. Its ``finally`` then runs before
the next instruction, so the log shows it before ``"after"``; one that something still holds
(a ``zip`` in progress, a closure, a dict) stays paused. Each case is captured in one graph,
as real Dynamo captures it; a case the trace gets wrong logs ``finally`` at the wrong place.
Cases from PyTorch's ``test/dynamo/test_generator.py`` (``test_yield_from_in_a_loop``,
``test_throw_yield_from``...) are re-typed with a log of their side effects."""

from __future__ import annotations

import dis
import functools
import gc

import pytest
import torch

import minicompile as mc
from test_dynamo_python_semantics import run_both


def steps(log, n=5):
    try:
        for i in range(n):
            log.append(i)
            yield i
    finally:
        log.append("finally")


# -- the last reference goes: closed there ---------------------------------------------------
def case_for_loop_left_by_break():
    log = []

    def fn(x):
        for v in steps(log):
            if v == 1:
                break
            x = x + v
        log.append("after")
        return x
    return fn, (torch.ones(3),), log


def case_for_loop_left_by_return():
    log = []

    def fn(x):
        for v in steps(log):
            if v == 2:
                return x + v
        return x
    return fn, (torch.ones(3),), log


def case_next_of_a_temporary():
    log = []

    def fn(x):
        y = x + next(steps(log))
        log.append("after")
        return y
    return fn, (torch.ones(3),), log


def case_deleted_name():
    log = []

    def fn(x):
        g = steps(log)
        x = x + next(g)
        del g
        log.append("after")
        return x
    return fn, (torch.ones(3),), log


def case_any_stops_early():
    log = []

    def fn(x):
        found = any(v > 1 for v in steps(log))
        log.append("after")
        return x + found
    return fn, (torch.ones(3),), log


def case_enumerate_left_by_break():
    log = []

    def fn(x):
        for i, v in enumerate(steps(log)):
            if i == 2:
                break
            x = x + v
        log.append("after")
        return x
    return fn, (torch.ones(3),), log


def case_helper_returns_two_in_the_order_of_its_locals():
    log = []

    def helper(x):
        b, a = steps(log, 2), steps(log, 3)
        log.append(("next", next(a), next(b)))
        return x + 1

    def fn(x):
        y = helper(x)
        log.append("after")
        return y
    return fn, (torch.ones(3),), log


def case_name_rebound_to_the_next_one():
    log = []

    def fn(x):
        for g in map(lambda n: steps(log, n), range(2, 5)):
            x = x + next(g)
            log.append("rebinding")
        log.append("after")
        return x
    return fn, (torch.ones(3),), log


def case_items_handed_to_a_function_one_by_one():
    log = []

    def first(g):
        log.append("first")
        return next(g)

    def fn(x):
        values = list(map(first, (steps(log) for _ in range(3))))
        log.append("after")
        return x + sum(values)
    return fn, (torch.ones(3),), log


# -- still held: stays paused -------------------------------------------------------------------
def case_zip_in_progress_holds_it():
    log = []

    def fn(x):
        for v, w in zip(steps(log), range(3)):
            log.append(("body", v))
            x = x + v * w
        log.append("after")
        return x
    return fn, (torch.ones(3),), log


def case_closure_holds_it():
    log = []

    def fn(x):
        g = steps(log)

        def take():
            return next(g)
        a, b = take(), take()
        log.append("after")
        return x + a + b
    return fn, (torch.ones(3),), log


def case_dict_holds_it_until_cleared():
    log = []

    def fn(x):
        d = {"g": steps(log)}
        a = next(d["g"])
        log.append("before clear")
        d.clear()
        log.append("after")
        return x + a
    return fn, (torch.ones(3),), log


def case_partial_holds_it():
    log = []

    def fn(x):
        take = functools.partial(next, steps(log))
        a, b = take(), take()
        log.append("before del")
        del take
        log.append("after")
        return x + a + b
    return fn, (torch.ones(3),), log


def case_generator_expression_holds_it():
    log = []

    def fn(x):
        doubled = (v * 2 for v in steps(log))
        a = next(doubled)
        log.append("between")
        b = next(doubled)
        doubled = None
        log.append("after")
        return x + a + b
    return fn, (torch.ones(3),), log


# -- throw() into a generator paused in `yield from` ---------------------------------------------
def inner(log):
    try:
        yield 1
        yield 2
    except ValueError as e:
        log.append(("inner caught", str(e)))
        yield 10
    finally:
        log.append("inner finally")


def outer(log):
    try:
        r = yield from inner(log)
        log.append(("inner returned", r))
        yield 3
    except (ValueError, KeyError) as e:
        log.append(("outer caught", type(e).__name__))
        yield 20
    finally:
        log.append("outer finally")


def two_items(log):
    yield 1
    yield 2
    return "done"


def case_throw_reaches_the_inner_generator_first():
    log = []

    def fn(x):
        g = outer(log)
        a = next(g)
        b = g.throw(ValueError("v"))  # caught by `inner`, which yields 10: so does `outer`
        c = next(g)  # `inner` returns: `yield from` ends, `outer` goes on to `yield 3`
        return x + a + b + c
    return fn, (torch.ones(3),), log


def case_throw_the_inner_generator_lets_through():
    log = []

    def fn(x):
        g = outer(log)
        a = next(g)
        b = g.throw(KeyError("k"))  # `inner` only runs its finally: `outer` catches it
        return x + a + b
    return fn, (torch.ones(3),), log


def case_throw_nobody_catches():
    log = []

    def fn(x):
        g = outer(log)
        a = next(g)
        try:
            g.throw(TypeError("t"))
        except TypeError:
            log.append("reached the caller")
        return x + a
    return fn, (torch.ones(3),), log


def case_throw_into_yield_from_of_a_plain_generator():
    log = []

    def delegating():
        try:
            result = yield from two_items(log)
            log.append(result)
        except KeyError:
            log.append("caught")
            yield 5

    def fn(x):
        g = delegating()
        a = next(g)
        b = g.throw(KeyError)  # a class: thrown as KeyError()
        return x + a + b
    return fn, (torch.ones(3),), log


ONE_GRAPH = [v for k, v in dict(globals()).items() if k.startswith("case_")]


@pytest.mark.parametrize("make_case", ONE_GRAPH, ids=lambda c: c.__name__[5:])
def test_same_as_cpython(make_case):
    run_both(make_case)


def test_frame_running_eagerly_closes_its_generator_on_return():
    """The frame falls back (a generator paused inside ``try`` at a graph break) and runs
    eagerly; the failed compiles (its own, and the generator function's it calls) must not
    keep its locals alive through their tracebacks' frames, or ``finally`` would run only when
    the cycle collector comes (disabled here, so that it cannot hide the difference)."""
    log = []

    def fn(x):
        g = steps(log)
        a = next(g)
        print("a graph break")
        return x + a

    mc.reset()
    gc.disable()
    try:
        mc.compile(fn, backend="eager")(torch.ones(3))
        assert log == [0, "finally"]
    finally:
        gc.enable()


@pytest.mark.parametrize("make_case", ONE_GRAPH, ids=lambda c: c.__name__[5:])
def test_captured_in_one_graph(make_case):
    fn, args, _ = make_case()
    mc.reset()
    explained = mc.explain(fn)(*args)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), \
        [str(r) for r in explained.break_reasons]


def test_the_instructions_under_test_are_reached():
    """``yield from`` is a ``SEND`` loop, and the ``finally`` of ``steps`` an exception-table
    handler around its ``yield``; on 3.12+ a throw() the inner generator lets through goes to
    ``CLEANUP_THROW``."""
    delegating = [i.opname for i in dis.get_instructions(outer)]
    assert "SEND" in delegating and "YIELD_VALUE" in [i.opname for i in dis.get_instructions(steps)]
    assert dis.Bytecode(steps).exception_entries
