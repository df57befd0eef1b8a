"""Eager PyTorch as the oracle for errors: the exception a call raises in eager, to compare with.

An error test asserts that a compiled call fails *as eager does*. Eager's wording is torch's and
changes between releases (torch 2.14 prefixed ``mm: `` to "mat1 and mat2 shapes cannot be
multiplied"), so tests never copy it: they run the call eagerly and expect the same type and the
same message.

    from eager_errors import raises_as_eager      # in tests/ (pytest puts this folder on sys.path)
    with raises_as_eager(fn, a, b):
        compiled(a, b)
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import pytest


def eager_exception(fn: Callable, *args: Any, **kwargs: Any) -> Exception:
    """What ``fn(*args, **kwargs)`` raises when run eagerly (it must raise)."""
    try:
        fn(*args, **kwargs)
    except Exception as error:  # the oracle's answer, whatever its type
        return error
    raise AssertionError(f"{getattr(fn, '__name__', fn)} raised nothing in eager")


@contextlib.contextmanager
def raises_like(error: Exception) -> Iterator[pytest.ExceptionInfo]:
    """Like ``pytest.raises``, for an exception of exactly ``error``'s type and message."""
    with pytest.raises(Exception) as info:
        yield info
    assert (type(info.value), str(info.value)) == (type(error), str(error)), "not as in eager"


def raises_as_eager(fn: Callable, *args: Any, **kwargs: Any):
    """``pytest.raises`` for what eager raises on the same call: same type, same message."""
    return raises_like(eager_exception(fn, *args, **kwargs))
