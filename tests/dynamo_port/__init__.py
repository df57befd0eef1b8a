"""A port of PyTorch's own Dynamo test functions, as a corpus of small programs.

The bodies come from the pytorch/pytorch repository's ``test/dynamo/`` files, one corpus module
each: ``test_functions.py`` (``functions_corpus.py``), ``test_misc.py`` (``misc_corpus.py``),
``test_generator.py``, ``test_exceptions.py``, ``test_ctx_manager.py``, ``test_dicts.py``,
``test_sets.py``, ``test_unspec.py``, ``test_recompiles.py``, ``test_python_autograd.py``,
``test_modules.py``, ``test_repros.py``, ``test_list.py``, ``test_global.py``,
``test_input_attr_tracking.py``, ``test_skip_non_tensor.py``, ``test_model_output.py``,
``test_nops.py``, ``test_sources.py``, ``test_subclasses.py``,
``test_autograd_function.py`` and ``test_hooks.py``
(``<name>_corpus.py``), re-typed and adapted: each
test's function becomes a :class:`Case`, and ``tests/test_dynamo_port.py`` runs
every case through ``mc.compile`` and through the real ``torch._dynamo``, compares both results
with eager, and compares minicompile's graph count with the real one.

As in PyTorch's ``make_test`` / ``standard_test``, a case's arguments are, unless it says
otherwise, one ``torch.randn(10, 10)`` per parameter.
"""

from __future__ import annotations

import collections
import inspect
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch


@dataclass
class Case:
    fn: Callable
    make_args: Callable[[], tuple]  # fresh arguments on each call (cases may mutate them)
    origin: str  # the PyTorch test file the body comes from
    # why minicompile runs this case natively by design, where real Dynamo traces it (a
    # tensor subclass's __torch_function__): the case must still give eager's result, and is
    # left out of the one-graph ratio (tests/test_dynamo_port.py reports how many)
    runs_natively: str = ""
    # the result is differentiated too: the harness backpropagates through it and compares the
    # gradients the arguments receive (see ``gradients``), as PyTorch's autograd tests do
    grads: bool = False

    @property
    def name(self) -> str:
        return self.fn.__name__


CASES: list[Case] = []


def _standard_args(fn: Callable) -> Callable[[], tuple]:
    nargs = len(inspect.signature(fn).parameters)
    return lambda: tuple(torch.randn(10, 10) for _ in range(nargs))


def case_registrar(origin: str, runs_natively: str = "") -> Callable:
    """``@case`` or ``@case(args=lambda: (...), grads=True)`` for one corpus module;
    ``runs_natively``: see ``Case``, for all of its cases."""

    def case(fn: Callable | None = None, *, args: Callable[[], tuple] | None = None,
             grads: bool = False):
        def register(fn: Callable) -> Callable:
            CASES.append(Case(fn, args or _standard_args(fn), origin, runs_natively, grads))
            return fn

        return register(fn) if fn is not None else register

    return case


def observe(case: Case, fn: Callable, args: tuple) -> Any:
    """``fn(*args)``, and for a case with ``grads`` also the gradients backward gives."""
    got = fn(*args)
    return (got, gradients(got, args)) if case.grads else got


def gradients(result: Any, args: tuple) -> list:
    """Backpropagate through every output tensor of ``result`` that requires grad, with a seeded
    random contiguous cotangent each (ones would hide a swapped gradient; ``.sum()`` would hand
    the backward an expanded, stride-0 gradient that compiled code is free to lay out anew),
    and return the ``.grad`` of each tensor found in the arguments (in lists, tuples, objects'
    attributes, a module's parameters), then of each output that retains its gradient
    (``y.retain_grad()``)."""
    outputs = [t for t in _tensors(result) if t.requires_grad]
    generator = torch.Generator().manual_seed(1)
    cotangents = [torch.randn(t.shape, generator=generator, dtype=t.dtype) for t in outputs]
    if outputs:
        torch.autograd.backward(outputs, cotangents)
    return [t.grad for t in _tensors(args)] + [t.grad for t in outputs if t.retains_grad]


def _tensors(value: Any) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, torch.nn.Module):
        return list(value.parameters())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    if hasattr(value, "__dict__") and not isinstance(value, (type, types.FunctionType)):
        return [t for v in vars(value).values() for t in _tensors(v)]
    return []


def assert_same(got: Any, expected: Any) -> None:
    """Eager is the oracle: tensors by assert_close (with requires_grad), containers item by
    item with their exact type, numpy arrays by value, anything else by ``==`` and type.

    Two exceptions, because eager itself makes a new one on every call: a namedtuple class made
    by the function is compared by module, name and fields, and a function it defines by its
    code. A generator (or a zip) is compared by the items it still yields."""
    if _made_per_call(expected):
        same = (type(got).__module__, type(got).__qualname__, getattr(got, "_fields", None))
        assert same == (type(expected).__module__, type(expected).__qualname__,
                        getattr(expected, "_fields", None))
        if isinstance(expected, types.FunctionType):
            assert got.__code__ is expected.__code__
            return
    else:
        assert type(got) is type(expected), (type(got), type(expected))
    if isinstance(expected, torch.Tensor):
        torch.testing.assert_close(got, expected, equal_nan=True)
        assert got.requires_grad == expected.requires_grad
    elif isinstance(expected, (tuple, list, collections.deque)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_same(g, e)
    elif isinstance(expected, dict):
        assert list(got) == list(expected)
        for k in expected:
            assert_same(got[k], expected[k])
    elif isinstance(expected, (types.GeneratorType, type(zip()))):  # by what it still yields
        assert_same(list(got), list(expected))
    elif isinstance(expected, np.ndarray):
        np.testing.assert_allclose(got, expected)
    elif isinstance(expected, float) and expected != expected:  # nan
        assert got != got
    else:
        assert got == expected, (got, expected)


def _made_per_call(value: Any) -> bool:
    return isinstance(value, types.FunctionType) or (
        isinstance(value, tuple) and hasattr(value, "_fields")
        and getattr(sys.modules.get(type(value).__module__), type(value).__qualname__, None)
        is not type(value))
