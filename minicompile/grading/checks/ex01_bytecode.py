"""Checks for exercises 1.x (solutions/ex01_bytecode.py): each plugs the learner's piece into
the real interpreter, traces real functions, and compares with eager on random tensors."""

from __future__ import annotations

import contextlib
import sys
import types
from typing import Callable

import torch

import minicompile as mc
from minicompile.dynamo import handlers_data, handlers_flow  # noqa: F401 (fill the registry)
from minicompile.dynamo.symbolic_convert import OPCODE_HANDLERS, InstructionTranslatorBase
from minicompile.grading import exercise


class _Spy:
    """Remembers the first exception the learner's piece raised: the interpreter turns any error
    inside a handler into an eager fallback, which would otherwise hide the stub's
    NotImplementedError, or the learner's own bug behind "not captured in one graph"."""

    def __init__(self, fn: Callable):
        self.error: Exception | None = None

        def spying(*args, **kwargs):  # a plain function, so it still binds as a method
            try:
                return fn(*args, **kwargs)
            except Exception as e:
                self.error = self.error or e
                raise

        self.wrapper = spying

    def reraise(self, name: str) -> None:
        """Raise what the learner's piece raised, if it raised anything."""
        if isinstance(self.error, NotImplementedError):
            raise self.error from None
        if self.error is not None:
            error = f"{type(self.error).__name__}: {self.error}"
            raise AssertionError(f"your {name} raised {error} (the interpreter fell back to "
                                 f"eager)") from self.error


@contextlib.contextmanager
def _patched(obj, name: str, value):
    """Swap one entry of the interpreter for the learner's piece; always restore it."""
    getter, setter = ((obj.__getitem__, obj.__setitem__) if isinstance(obj, dict)
                      else (lambda n: obj.__dict__[n], lambda n, v: setattr(obj, n, v)))
    old = getter(name)
    spy = _Spy(value) if callable(value) else None
    setter(name, spy.wrapper if spy else value)
    mc.reset()
    try:
        yield
    except AssertionError:
        if spy is not None:
            spy.reraise(getattr(value, "__name__", name))
        raise
    finally:
        setter(name, old)
        mc.reset()


def _captured_like_eager(fn: Callable, *args) -> None:
    """``fn`` compiled returns what it returns in eager, leaves the caller's tensors as eager
    leaves them (an in-place operator must update them), and is captured in one graph."""
    eager_args = [_copy(a) for a in args]
    expected = fn(*eager_args)
    mc.metrics.reset()
    got = mc.compile(fn, backend="eager")(*args)
    torch.testing.assert_close(got, expected, msg=lambda m: f"{fn.__name__} returned\n{m}")
    for i, (arg, eager_arg) in enumerate(zip(args, eager_args)):
        torch.testing.assert_close(arg, eager_arg, msg=lambda m: (
            f"after {fn.__name__}, the caller's argument {i} is not what eager leaves\n{m}"))
    assert mc.metrics.graphs_compiled == 1 and mc.metrics.eager_fallbacks == 0 \
        and mc.metrics.graph_breaks == 0, f"{fn.__name__} was not captured in one graph"


def _copy(value):
    return [_copy(v) for v in value] if isinstance(value, list) else value.clone()


# -- 1.1 ----------------------------------------------------------------------------------------
def _arith(x, y):
    a = x + y - x * y / (y.abs() + 1) + x @ y - (x // 0.7) % 2 + x ** 2
    a += x
    a -= y
    a *= 2
    a /= 3
    a @= y
    return a


def _bits(i, j):
    b = (i & j) | (i ^ j) | (i << 1) | (j >> 1)
    b &= i
    b |= j
    b ^= i
    b <<= 1
    b >>= 1
    b //= 2
    b %= 5
    b **= 1
    return b


def _updates_the_callers_tensors(x, y, i):
    x += y  # x is the caller's tensor: an in-place operator must change it
    x *= 2
    i |= 4
    i <<= 1
    return x.sum() + i.sum()


@exercise("1.1", points=10, hints=(
    "Look at what dis shows as the argrepr of a BINARY_OP: the table's keys are those "
    "strings.",
    "The operator module has a function for every binary operator, and a second, "
    "'i'-prefixed one for each augmented assignment.",
    "x += y must change the caller's tensor x: which of the two functions mutates its "
    "first operand?",
))
def check_binary_op_table(sol):
    """BINARY_OP handler table"""
    table = sol.binary_op_table()
    assert len(table) == 26, f"expected 26 symbols, got {len(table)}"
    with _patched(handlers_data.__dict__, "BINARY_OPS", table):
        _captured_like_eager(_arith, torch.randn(5, 5), torch.randn(5, 5))
        _captured_like_eager(_bits, torch.randint(1, 9, (7,)), torch.randint(1, 9, (7,)))
        _captured_like_eager(_updates_the_callers_tensors, torch.randn(3, 4), torch.randn(3, 4),
                             torch.randint(0, 9, (5,)))


# -- 1.2 ----------------------------------------------------------------------------------------
def _loops(x, xs):
    for i in range(3):
        x = x + i
    for a, b in zip(xs, xs[1:]):
        x = x * a - b
    for i, a in enumerate(xs):
        for j in range(i):
            x = x + a * j
    return x, [t.sum() for t in xs]


@exercise("1.2", points=10, hints=(
    "FOR_ITER does one of two things, depending on whether the iterator has another item.",
    "The iterator stays on the stack while the loop runs; peek at it rather than popping "
    "it.",
    "When it is exhausted, CPython removes it from the stack and continues at the "
    "instruction's jump target.",
))
def check_for_iter(sol):
    """Unroll FOR_ITER over a range"""
    with _patched(OPCODE_HANDLERS, "FOR_ITER", sol.for_iter):
        _captured_like_eager(_loops, torch.randn(4, 3), [torch.randn(4, 3) for _ in range(3)])


# -- 1.3 ----------------------------------------------------------------------------------------
def _leaf(x, k=2.0, *, shift=0):
    return x * k + shift


def _middle(x, *rest):
    scale = len(rest) + 1

    def inner(y):
        return _leaf(y, k=scale) + sum(rest)

    return inner(x).relu()


SCALE = 2.0  # a global of this module; _elsewhere.scaled reads its own module's SCALE
_elsewhere = types.ModuleType("minicompile_grading_elsewhere")
sys.modules[_elsewhere.__name__] = _elsewhere
exec("SCALE = 3.0\n\ndef scaled(x):\n    return x * SCALE\n", _elsewhere.__dict__)


def _calls(x, y):
    return _middle(x, y, y) + _leaf(y, shift=1) + (lambda t: t.cos())(x) + _elsewhere.scaled(y)


@exercise("1.3", points=10, hints=(
    "Inlining is running the callee's bytecode with a new translator that shares the "
    "caller's graph.",
    "The callee's locals start as its bound parameters, with defaults and keyword "
    "arguments applied: fn can bind them for you.",
    "A callee reads its own module's globals and its own closure cells, not the caller's.",
))
def check_inline_call(sol):
    """Inline a user function call"""
    inline = lambda self, fn, args, kwargs: sol.inline_call(self, fn, args, kwargs)  # noqa: E731
    with _patched(InstructionTranslatorBase, "inline_user_function_return", inline):
        _captured_like_eager(_calls, torch.randn(6), torch.randn(6))
