"""Graph breaks inside ``try`` blocks: the handler covers the native instruction.

The transformed function runs the instruction that broke the graph inside the same ``try``, and
an exception it raises continues in a resume function that starts at the handler (the stack cut
to the exception-table entry's depth, the exception on top), so ``except``, ``finally`` and
``else`` run exactly as in eager. The code after the break is the original bytecode, exception
table included. Eager is the oracle for results, side effects and the exception raised; graph
counts sit next to real Dynamo's, which compiles the graph before the ``try`` and runs the rest
of the frame eagerly (one graph fewer than ours here).
"""

from __future__ import annotations

import dis

import pytest
import torch
import torch._dynamo

import minicompile as mc

LOG: list = []


def record(*args):
    LOG.append(args)


def native(x, fail: str | None = None):
    """A call that breaks the graph (print), and raises when asked to."""
    print("native", x.shape)
    if fail == "value":
        raise ValueError("bad value")
    if fail == "key":
        raise KeyError("missing")
    return x + 1


def try_except(x, fail):
    y = x.sin() * 2
    try:
        z = native(y, fail) * 3  # the break: a ValueError lands in the handler below
        record("after native")
    except ValueError as e:
        record("caught", str(e))
        z = y - len(str(e))
    return z.cos()


def try_finally(x, fail):
    y = x * 2
    try:
        y = native(y, fail) + 1
    finally:
        record("finally")  # runs on both paths; a KeyError then propagates
    return y * 3


def nested_try(x, fail):
    y = x + 1
    try:
        try:
            y = native(y, fail) * 2
        except ValueError:
            record("inner")
            y = y - 1
        else:
            record("else")
    except KeyError as e:
        record("outer", e.args)
        y = y + 10
    return y.relu()


def try_in_no_grad(x, fail):
    y = x * 2
    with torch.no_grad():  # the handler runs inside the `with`: its resume re-enters it
        try:
            y = native(y, fail) * 3
        except ValueError:
            y = y * torch.is_grad_enabled() - 1
    return y + 1, torch.is_grad_enabled()


def branch_in_try(x):
    y = x * 2
    try:
        if y:  # bool() of a 3-element tensor raises: the branch is a break inside the try
            y = y + 1
    except RuntimeError:
        record("ambiguous")
        y = y - 1
    return y


def break_in_handler(x, fail):
    y = x.exp()
    try:
        y = native(y, fail)
    except ValueError:
        print("handler")  # a break inside the handler itself: that frame runs eagerly
        y = y * 0
    return y + 2


CASES = [
    (try_except, None), (try_except, "value"),
    (try_finally, None), (try_finally, "key"),
    (nested_try, None), (nested_try, "value"), (nested_try, "key"),
    (break_in_handler, None), (break_in_handler, "value"),
    (try_in_no_grad, None), (try_in_no_grad, "value"),
]
IDS = [f"{fn.__name__}-{fail}" for fn, fail in CASES]


def run(fn, *args):
    """(result or the exception raised, the side effects)."""
    LOG.clear()
    try:
        out = fn(*args)
    except Exception as e:  # noqa: BLE001 -- compared with eager's
        out = e
    return out, list(LOG)


def assert_same(got, expected):
    if isinstance(expected, Exception):
        assert type(got) is type(expected) and got.args == expected.args, got
    else:
        torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("fn,fail", CASES, ids=IDS)
def test_break_in_try_matches_eager(fn, fail, capsys):
    assert any(i.opname == "PUSH_EXC_INFO" for i in dis.get_instructions(fn))  # a real handler
    x = torch.randn(4)
    expected, eager_log = run(fn, x, fail)
    eager_out = capsys.readouterr().out
    compiled = mc.compile(fn, backend="eager")
    for _ in range(2):  # the second call runs the cached transformed code
        got, log = run(compiled, x, fail)
        assert_same(got, expected)
        assert log == eager_log and capsys.readouterr().out == eager_out
    if fail is None:  # no exception: every frame compiled (a handler may run eagerly)
        assert mc.metrics.eager_fallbacks == 0


@pytest.mark.parametrize("fn,fail,graphs", [(try_except, None, 3), (nested_try, "value", 2)])
def test_break_in_try_compiles_both_sides(fn, fail, graphs, capsys):
    """Not a frame left to eager: a graph before the break, then one in ``native`` (its own
    frame) and one in the resume function that continues the ``try``; or, when ``native``
    raises, one in the resume function that starts at the handler."""
    out = mc.explain(fn)(torch.randn(4), fail)
    assert out.graph_count == graphs, str(out)
    skipped = [b for b in out.break_reasons if getattr(b, "kind", "").startswith("graph_break_in")]
    assert not skipped, str(out)
    assert "except BaseException as __break_exc:" in out.transformed_program()
    torch._dynamo.reset()
    theirs = torch._dynamo.explain(fn)(torch.randn(4), fail)
    capsys.readouterr()
    assert theirs.graph_count <= out.graph_count  # real Dynamo: the graph before the try only


def test_data_dependent_branch_in_try(capsys):
    x = torch.randn(3)
    expected, eager_log = run(branch_in_try, x)
    got, log = run(mc.compile(branch_in_try, backend="eager"), x)
    assert_same(got, expected)
    assert log == eager_log == [("ambiguous",)]


def test_inductor_backend_in_try(capsys):
    x = torch.randn(5, 3)
    for fail in (None, "value"):
        expected, eager_log = run(try_except, x, fail)
        got, log = run(mc.compile(try_except, backend="inductor"), x, fail)
        assert_same(got, expected)
        assert log == eager_log
