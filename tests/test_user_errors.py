"""Errors a user can read: the user's own error surfaces as in eager, and leaves nothing behind.

An exception raised by the user's code or by a torch op on bad inputs must reach the user with
the user's frames (not minicompile's, not chained behind an internal exception), and the bad
call must leave no cache entry, eager mark or remembered size behind.
"""

import subprocess
import sys
import textwrap

import pytest
import torch
from eager_errors import raises_as_eager

import minicompile as mc
from minicompile.dynamo.eval_frame import CACHE, cache_entries
from minicompile.dynamo.exc import FullGraphError, unimplemented, without_internal_frames

PROGRAM = """
import torch
{setup}
f = {wrap}(lambda a, b: a @ b)
f(torch.randn(2, 3), torch.randn(4, 5))
"""


def traceback_of(setup: str, wrap: str) -> list[str]:
    """The lines Python prints for the program's uncaught exception."""
    source = textwrap.dedent(PROGRAM.format(setup=setup, wrap=wrap))
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1
    return done.stderr.strip().splitlines()


def test_matmul_shape_error_prints_like_eager():
    """Before: 115 lines, two internal tracebacks chained in front of the user's error."""
    eager = traceback_of("", "")
    compiled = traceback_of("import minicompile as mc", "mc.compile")
    assert compiled[-1] == eager[-1] and eager[-1].startswith("RuntimeError: ")
    assert len(compiled) <= len(eager) + 3  # the compiled wrapper's own line, and no more
    text = "\n".join(compiled)
    assert "During handling" not in text and "direct cause" not in text
    assert 'line 4, in <lambda>' in text  # the user's frame, where the error happened
    assert "symbolic_convert" not in text and "fake_tensor" not in text


def matmul_then_sum(a, b):
    c = a.relu() + 1
    return (c @ b).sum()


@pytest.mark.parametrize("fn", [lambda a, b: a @ b, matmul_then_sum],
                             ids=["whole frame falls back", "graph break at the error"])
def test_bad_input_leaves_no_stale_entry(fn):
    compiled = mc.compile(fn)
    a, b = torch.randn(2, 3), torch.randn(4, 5)
    with raises_as_eager(fn, a, b) as info:
        compiled(a, b)
    assert info.value.__context__ is None and info.value.__cause__ is None
    code = fn.__code__
    assert cache_entries(fn) == [] and code not in CACHE.eager
    assert not CACHE.frame_states[code].sizes  # the bad sizes are not remembered
    # good inputs now compile, statically: nothing made their sizes look like they changed
    a, b = torch.randn(2, 3), torch.randn(3, 5)
    torch.testing.assert_close(compiled(a, b), fn(a, b))
    assert len(cache_entries(fn)) == 1 and mc.metrics.recompiles == 0
    assert compiled(torch.randn(2, 3), torch.randn(3, 5)).shape == fn(a, b).shape
    assert len(cache_entries(fn)) == 1


def test_bad_input_after_a_good_one_keeps_the_good_entry():
    compiled = mc.compile(matmul_then_sum)
    a, b = torch.randn(2, 3), torch.randn(3, 5)
    compiled(a, b)
    entries = cache_entries(matmul_then_sum)
    bad = torch.randn(2, 3), torch.randn(4, 5)
    with raises_as_eager(matmul_then_sum, *bad):
        compiled(*bad)
    assert cache_entries(matmul_then_sum) == entries
    torch.testing.assert_close(compiled(a, b), matmul_then_sum(a, b))


def raises_on_positive(x):
    y = x * 2
    if y.sum() > 0:  # data-dependent: a graph break, the branch runs natively
        raise ValueError("the sum is positive")
    return y


def test_users_own_exception_surfaces_with_the_users_frame():
    x = torch.ones(3)
    with pytest.raises(ValueError, match="the sum is positive") as info:
        mc.compile(raises_on_positive)(x)
    frames = [entry.name for entry in info.traceback]
    assert frames[-1].startswith(("raises_on_positive", "__resume_at"))
    internal = [e for e in info.traceback if "minicompile" in str(e.path)]
    assert len(internal) == 1  # the compiled wrapper that re-raises, nothing below it
    assert cache_entries(raises_on_positive) == []
    torch.testing.assert_close(mc.compile(raises_on_positive)(-x), raises_on_positive(-x))


def test_module_errors_surface_too():
    model, x = torch.nn.Linear(3, 4), torch.randn(2, 5)
    with raises_as_eager(model, x) as info:
        mc.compile(model)(x)
    assert info.value.__context__ is None
    assert len([e for e in info.traceback if "minicompile" in str(e.path)]) == 1


def test_fullgraph_error_is_readable_and_not_chained():
    compiled = mc.compile(lambda a, b: a @ b, fullgraph=True)
    with pytest.raises(FullGraphError, match="matmul failed while tracing") as info:
        compiled(torch.randn(2, 3), torch.randn(4, 5))
    assert isinstance(info.value, RuntimeError)  # `except RuntimeError` catches it, as in eager
    assert info.value.__suppress_context__ and info.value.__cause__ is None


def depth(error: BaseException) -> int:
    n, tb = 0, error.__traceback__
    while tb is not None:
        n, tb = n + 1, tb.tb_next
    return n


def test_internal_errors_keep_every_frame():
    """An error raised inside minicompile is a bug to report: its frames are not hidden."""
    with pytest.raises(Exception) as info:
        unimplemented("not supported")  # raised in minicompile/dynamo/exc.py
    before = depth(info.value)
    assert depth(without_internal_frames(info.value)) == before == 2
