"""What minicompile can't capture runs eagerly with a recorded reason and user line: never a
wrong result. ``fullgraph=True`` turns the same situations into an error."""

from __future__ import annotations

import pytest
import torch
from eager_errors import raises_as_eager

import minicompile as mc
from minicompile.dynamo.eval_frame import cache_entries
from minicompile.dynamo.exc import Unsupported


def data_dependent(x):
    if x.sum() > 0:  # needs the data
        return x + 1
    return x - 1


def uses_item(x):
    return x * x.sum().item()


def prints(x):
    y = x * 2
    print("hello")
    return y


def mutates_input_list(xs, x):
    xs.append(x * 2)
    return x


UNSUPPORTED = {
    "data_dependent": (data_dependent, "data-dependent", "if x.sum() > 0"),
    "item": (uses_item, "item", "x.sum().item()"),
    "print": (prints, "print", 'print("hello")'),
}


@pytest.mark.parametrize("name", list(UNSUPPORTED))
def test_unsupported_runs_eagerly_with_reason(name, capsys):
    fn, reason, line = UNSUPPORTED[name]
    for x in (torch.ones(3), -torch.ones(3)):
        torch.testing.assert_close(mc.compile(fn, backend="eager")(x), fn(x))
    e = mc.explain(fn)(torch.ones(3))
    assert len(e.break_reasons) >= 1
    assert reason in e.break_reasons[0].reason
    assert line in e.break_reasons[0].user_line
    assert "test_dynamo_fallback.py" in e.break_reasons[0].user_line


@pytest.mark.parametrize("name", list(UNSUPPORTED))
def test_fullgraph_raises(name):
    fn, reason, _ = UNSUPPORTED[name]
    with pytest.raises(Exception, match=reason):
        mc.compile(fn, backend="eager", fullgraph=True)(torch.ones(3))


def test_input_mutation_is_not_lost():
    xs, x = [], torch.ones(2)
    mc.compile(mutates_input_list, backend="eager")(xs, x)
    assert len(xs) == 1
    torch.testing.assert_close(xs[0], x * 2)


def test_eager_fallback_is_counted():
    mc.compile(uses_item, backend="eager")(torch.ones(3))
    assert mc.metrics.eager_fallbacks + mc.metrics.graph_breaks >= 1


def test_user_exception_propagates():
    def bad(x):
        return x @ torch.ones(5, 5)  # shape mismatch: eager raises RuntimeError

    x = torch.ones(3, 3)
    with raises_as_eager(bad, x):
        mc.compile(bad, backend="eager")(x)


def test_unsupported_carries_user_line():
    err = Unsupported("why", "f.py:3 in f: x.item()")
    assert "f.py:3" in str(err) and err.reason == "why"


def test_debug_dir_gets_artifacts(tmp_path, monkeypatch):
    from minicompile import config

    monkeypatch.setattr(config, "debug", True)
    monkeypatch.setattr(config, "debug_dir", str(tmp_path))
    mc.compile(lambda x: x.cos() + 1, backend="eager")(torch.ones(2))
    text = "\n".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert "cos" in text and "guard" in text and ("RESUME" in text or "LOAD_FAST" in text)


def scaled_sin(x):
    return x.sin() * 2


def closure_with_break(x):
    k = 3

    def add_k(t):  # captures k: the frame has a cell variable
        return t + k
    y = scaled_sin(x)
    print("between")
    return add_k(y)


def raises_and_handles(x):
    try:
        raise ValueError("handled")  # raising is not traced: the frame runs eagerly
    except ValueError as e:
        print(e)
    return scaled_sin(x) + 1


@pytest.mark.parametrize("fn", [closure_with_break, raises_and_handles])
def test_eager_frame_still_compiles_its_callees(fn, capsys):
    """A frame that runs eagerly is not traced, but the user functions it calls are compiled
    as their own frames (real Dynamo's hook sees every frame, skipped or not)."""
    x = torch.randn(7)
    expected = fn(x)
    eager_out = capsys.readouterr().out
    cf = mc.compile(fn, backend="eager")
    for _ in range(2):  # the second call reuses the eager frame and scaled_sin's entry
        torch.testing.assert_close(cf(x), expected)
        assert capsys.readouterr().out == eager_out
    assert len(cache_entries(scaled_sin)) == 1
    assert mc.metrics.graphs_compiled == 1  # scaled_sin's: the frame itself has none
    # the frame runs eagerly: a fallback, or (a break inside a try) a skipped frame
    assert mc.metrics.eager_fallbacks + mc.metrics.graph_breaks >= 1
    assert mc.explain(fn)(x).graph_count == 1


def grad_of_sin_sum(x):
    return torch.func.grad(lambda y: y.sin().sum())(x)


def test_function_argument_of_a_graph_call_breaks_with_a_reason():
    """A torch function called with a Python function (torch.func's grad_impl, inlined from
    torch.func.grad) reached FX, whose create_arg raised NotImplementedError: the frame ran
    eagerly, but its reason was an "internal error" of the tracer."""
    mc.reset()
    x = torch.randn(5)
    torch.testing.assert_close(mc.compile(grad_of_sin_sum)(x), x.cos())
    reasons = [str(r) for r in mc.explain(grad_of_sin_sum)(x).break_reasons]
    assert reasons and not any("internal error" in r for r in reasons), reasons
    assert any("argument a graph cannot hold" in r for r in reasons), reasons


def hooks_an_intermediate(x):
    y = x * 2
    y.register_hook(lambda g: print(end="") or g * 3)  # print: not traced into the graph
    return (y + 1).sum()


def test_hook_on_an_intermediate_breaks_with_its_own_reason():
    """A hook must act in the backward of the real tensor; one the graph can't hold (it
    prints) runs between two graphs (its reason said the call needed the tensor's data)."""
    mc.reset()
    grads = []
    for fn in (hooks_an_intermediate, mc.compile(hooks_an_intermediate)):
        x = torch.randn(4, requires_grad=True)
        fn(x).backward()
        grads.append(x.grad)
    torch.testing.assert_close(grads[1], grads[0])
    x = torch.randn(4, requires_grad=True)
    reasons = [str(r) for r in mc.explain(hooks_an_intermediate)(x).break_reasons]
    assert any("Tensor.register_hook(): print()" in r for r in reasons), reasons


def hooks_after_use(x):
    y = x * 2
    z = y + 1  # y used before the hook
    y.register_hook(lambda g: print(end="") or g * 2)  # not traced into the graph
    w = y * 3
    return (z + w).sum()


def retains_after_use(x):
    y = x.sin()
    z = y * y
    y.retain_grad()
    return z.sum() + y.sum(), y


@pytest.mark.parametrize("fn", [hooks_after_use, retains_after_use])
def test_hook_on_a_tensor_the_graph_used_already_runs_the_frame_eagerly(fn):
    """Under AOT autograd the graph before the break returned y and had used it already: the
    gradient of those uses flowed inside the compiled backward, past the hook on the returned
    y (x.grad 14 where eager gives 16; y.grad without the part from z)."""
    mc.reset()
    results = []
    for f in (fn, mc.compile(fn, backend="aot_eager")):
        x = torch.ones(2, requires_grad=True)
        out = f(x)
        out = out if isinstance(out, tuple) else (out,)
        out[0].backward()
        results.append((x.grad, *[t.grad for t in out[1:]]))
    torch.testing.assert_close(results[1], results[0])
    x = torch.ones(2, requires_grad=True)
    assert [r.kind for r in mc.explain(fn)(x).break_reasons] == ["graph_break_after_use"]
