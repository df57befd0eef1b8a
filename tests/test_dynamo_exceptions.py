"""Exceptions raised inside traced code go where CPython's exception table sends them
(handlers_flow.py: RAISE_VARARGS, PUSH_EXC_INFO, CHECK_EXC_MATCH, POP_EXCEPT, RERAISE): each
function is compared with CPython running it, and captured in one graph where the handler is in
a traced frame; an exception no traced frame handles is a graph break and raises for real."""

from __future__ import annotations

import collections.abc
import dis
import os

import pytest
import torch

import minicompile as mc

TABLE = {"a": 1}


def _lookup(d, key, default=None):  # inlined: the KeyError is raised and caught in the callee
    try:
        return d[key]
    except KeyError:
        return default


def missing_key_in_callee(x):
    return x + _lookup(TABLE, "a") + _lookup(TABLE, "zz", 5)


def except_tuple_and_args(x):
    try:
        raise ValueError("boom", 2)
    except (TypeError, ValueError) as e:
        return x * len(e.args) + e.args[1]


def finally_then_outer_handler(x):
    y = x
    try:
        try:
            {}["q"]
        finally:
            y = y + 100
    except KeyError:
        y = y + 1000
    return y


def bare_raise_reaches_the_caller(x):
    def inner():
        try:
            raise KeyError("k")
        except KeyError:
            raise  # the exception being handled, on to the caller
    try:
        inner()
    except LookupError:  # a base class matches
        return x - 1
    return x


def handler_that_does_not_match(x):
    try:
        try:
            [].pop()
        except KeyError:
            return x * 0
    except IndexError:
        return x + 7


class Plain:
    pass


def attribute_error_from_getattr(x):
    try:
        getattr(Plain(), "missing")
    except AttributeError:
        return x * 3
    return x


class Squares(collections.abc.Mapping):  # Mapping.get: try self[key] except KeyError
    def __getitem__(self, k):
        if isinstance(k, int) and 0 <= k < 4:
            return k * k
        raise KeyError(k)

    def __iter__(self):
        return iter(range(4))

    def __len__(self):
        return 4


SQUARES = Squares()


def mapping_get(x):
    return x + SQUARES.get(3) + SQUARES.get(9, -1)


def subscript_of_a_constant(x, mask=None):
    # a library leaves a mask None while compiling and indexes it (transformers' encoders):
    # CPython's TypeError, here caught; a constant indexed by a constant is CPython's subscript
    try:
        mask = mask[:, None]
    except TypeError as e:
        mask = len(str(e))  # "'NoneType' object is not subscriptable"
    return x * mask + ("abc"[1] == "b") + len(tuple[int, str].__args__)


def list_delete_with_a_bad_index(x):
    # CPython's own errors of ``del p[i]``: a float index, none, a zero step (the tracer ran the
    # deletion on its items and raised CPython's TypeError as its own: an internal error)
    p = list(range(6))
    del p[1], p[1:3]
    caught = 0
    for args in ((1.5,), (), (slice(1, 1, 0),), (9,)):
        try:
            p.__delitem__(*args)
        except (TypeError, ValueError, IndexError):
            caught += 1
    return x * caught + len(p)


CASES = [missing_key_in_callee, subscript_of_a_constant, list_delete_with_a_bad_index,
         except_tuple_and_args, finally_then_outer_handler,
         bare_raise_reaches_the_caller, handler_that_does_not_match,
         attribute_error_from_getattr, mapping_get]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_handled_exception_is_traced_in_one_graph(fn):
    x = torch.randn(4)
    torch.testing.assert_close(mc.compile(fn, backend="eager")(x), fn(x))
    explained = mc.explain(fn)(x)
    assert explained.graph_count == 1 and explained.graph_break_count == 0, \
        explained.break_reasons


def test_the_exception_path_instructions_are_exercised():
    """The cases really run the handler instructions on this Python."""
    ops = {i.opname for fn in CASES for i in dis.get_instructions(fn)}
    assert {"PUSH_EXC_INFO", "CHECK_EXC_MATCH", "POP_EXCEPT", "RERAISE"} <= ops


def test_unhandled_exception_raises_as_eager():
    def f(x):
        y = x * 2
        {}["nope"]
        return y

    with pytest.raises(KeyError, match="nope"):
        f(torch.randn(2))
    with pytest.raises(KeyError, match="nope"):
        mc.compile(f, backend="eager")(torch.randn(2))


def test_handler_code_runs_once_and_in_order():
    """Side effects on both sides of the raise happen once, as in CPython."""
    def f(x, log):
        log.append("before")
        try:
            log.append("try")
            raise RuntimeError("r")
        except RuntimeError:
            log.append("except")
        finally:
            log.append("finally")
        return x + len(log)

    x, log, ref = torch.randn(2), [], []
    torch.testing.assert_close(mc.compile(f, backend="eager")(x, log), f(x, ref))
    assert log == ref == ["before", "try", "except", "finally"]


def test_environment_read_is_guarded(monkeypatch):
    """os.environ.get (Mapping.get catching the KeyError) is traced, and its answer guarded."""
    name = "MINICOMPILE_TEST_EXCEPTIONS_FLAG"
    monkeypatch.delenv(name, raising=False)

    def f(x):
        return x + 1 if os.environ.get(name) == "1" else x - 1

    x = torch.zeros(2)
    compiled = mc.compile(f, backend="eager")
    torch.testing.assert_close(compiled(x), f(x))
    monkeypatch.setenv(name, "1")
    torch.testing.assert_close(compiled(x), f(x))  # the guard sees the new variable
    monkeypatch.setenv(name, "0")
    torch.testing.assert_close(compiled(x), f(x))


def test_exception_leaving_a_with_block_breaks_the_graph():
    def f(x):
        try:
            with torch.no_grad():
                raise ValueError("v")
        except ValueError:
            return x + 1

    x = torch.randn(2, requires_grad=True)
    got, expected = mc.compile(f, backend="eager")(x), f(x)
    torch.testing.assert_close(got, expected)
    assert got.requires_grad == expected.requires_grad and torch.is_grad_enabled()


def message_of(call, *args):  # run natively (a C method raising), caught in a resume function
    try:
        call(*args)
    except TypeError as e:
        return str(e), repr(e)


def test_text_of_an_exception_from_outside_is_guarded():
    """The handler's resume function receives the exception as an input: ``str(e)`` folds to
    a constant read through ``e.args``, guarded, so the second call (another message, the same
    class) compiles anew instead of returning the first one's text."""

    def fn(x):
        p = list("abcdef")
        return x + 1, message_of(p.__setitem__, slice(1, 3), 1), \
            message_of(p.__setitem__, slice(1, 5, 2), 1)

    x = torch.randn(3)
    got = mc.compile(fn, backend="eager")(x)
    expected = fn(x)
    torch.testing.assert_close(got[0], expected[0])
    assert got[1:] == expected[1:]


def context_in_except_and_finally(x):
    try:
        try:
            te = TypeError(1)
            raise te
        except Exception:
            ve = ValueError(2)
            raise ve  # noqa: B904
        finally:
            {}["k"]  # an operation raises: linked to the ValueError being handled
    except KeyError as e:
        exc = e
    return x + 1, (exc.__context__ is ve, ve.__context__ is te, te.__context__ is None)


def context_cycle_is_cut(x):
    try:
        try:
            raise AssertionError
        except AssertionError as a_:
            a = a_
            try:
                raise BytesWarning
            except BytesWarning as b_:
                b = b_
                raise a  # noqa: B904  (a is in b's chain: the link from b to a is cut)
    except AssertionError as e:
        exc = e
    return x + 1, (exc is a, a.__context__ is b, b.__context__ is None)


def raise_from_none_and_set_cause(x):
    try:
        try:
            {}["k"]
        except KeyError:
            raise ValueError("v") from None
    except ValueError as e:
        first = (e.__cause__, e.__suppress_context__, type(e.__context__).__name__)
        e.__cause__ = IndexError()
        return x + 1, first + (type(e.__cause__).__name__, e.__suppress_context__)


@pytest.mark.parametrize("fn", [context_in_except_and_finally, context_cycle_is_cut,
                                raise_from_none_and_set_cause], ids=lambda f: f.__name__)
def test_exception_context_is_linked_as_cpython_links_it(fn):
    """An exception raised while another is handled gets it as ``__context__`` (a raise in the
    code, or an operation that raises); a chain that would loop is cut where it reaches the new
    exception; ``raise ... from`` sets ``__cause__`` and ``__suppress_context__``. One graph,
    the facts as CPython has them."""
    x = torch.randn(3)
    got, expected = mc.compile(fn, backend="eager")(x), fn(x)
    torch.testing.assert_close(got[0], expected[0])
    assert got[1] == expected[1]
    explained = mc.explain(fn)(x)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), \
        explained.break_reasons


def test_an_exception_chain_that_is_a_cycle_live_at_a_break_falls_back():
    """``ex.__context__ = ex`` makes an object that no one expression rebuilds: live at a graph
    break, the frame runs eagerly (with the reason) rather than recursing without end."""

    def fn(x):
        try:
            raise ValueError(1)
        except ValueError as ex:
            ex.__context__ = ex
            err = ex
        print("break")
        return x + 1, err.__context__ is err

    x = torch.randn(3)
    got = mc.compile(fn, backend="eager")(x)
    torch.testing.assert_close(got[0], x + 1)
    assert got[1] is True
