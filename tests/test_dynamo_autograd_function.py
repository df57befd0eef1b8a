"""A user's ``torch.autograd.Function`` called through ``apply`` (minicompile/dynamo/variables/
torch.py): one graph node whose forward the tracer runs on fake tensors without looking inside.
Each test is a case where a wrong decision about that node gives a wrong result or gradient;
tests/dynamo_port/autograd_function_corpus.py holds PyTorch's own cases."""

from __future__ import annotations

import enum

import pytest
import torch

import minicompile as mc


def _leaf(*shape):
    return torch.randn(*shape, requires_grad=True)


def _result_and_grads(fn, make_args):
    torch.manual_seed(0)
    args = make_args()
    out = fn(*args)
    out.backward(torch.ones_like(out))
    return out.detach(), [a.grad for a in args if isinstance(a, torch.Tensor)]


class _TimesThreeInplace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(3)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 3


def _result_unread(w):
    y = torch.ones(2, 2) @ w
    _TimesThreeInplace.apply(y)  # its result is dropped: the write into y is the effect
    return y.sum()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_function_writing_into_an_input_is_kept_when_its_result_is_unread(backend):
    """Dead-code elimination removed the apply node (nothing read its result): y.sum() was
    computed without the in-place multiply, and the gradient missed the Function's backward
    (12 and 6 expected, 4 and 2 given)."""
    mc.reset()
    expected = _result_and_grads(_result_unread, lambda: (torch.eye(2, requires_grad=True),))
    got = _result_and_grads(mc.compile(_result_unread, backend=backend),
                            lambda: (torch.eye(2, requires_grad=True),))
    torch.testing.assert_close(got, expected)


class _SinTimes(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, factor=1):
        ctx.save_for_backward(input)
        ctx.factor = factor
        return factor * torch.sin(input)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * ctx.factor * torch.cos(input), None


def _by_keyword(x):
    return _SinTimes.apply(x, factor=6)


def test_apply_with_keyword_arguments_is_one_graph():
    """``apply(x, factor=6)`` binds as forward does; the graph node's call took positional
    arguments only, and the TypeError it raised while tracing broke the graph."""
    mc.reset()
    torch.testing.assert_close(_result_and_grads(mc.compile(_by_keyword), lambda: (_leaf(3),)),
                               _result_and_grads(_by_keyword, lambda: (_leaf(3),)))
    explained = mc.explain(_by_keyword)(_leaf(3))
    assert explained.graph_count == 1 and not explained.break_reasons


_captured: list = []


class _AppendsToLists(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, z):
        z.append(x.sin())  # the list it is given
        _captured.append(x.cos())  # a global one
        return x * 2

    @staticmethod
    def backward(ctx, grad, *_):
        return grad * 2, None


def _reads_what_forward_appended(x):
    z = []
    out = _AppendsToLists.apply(x, z)
    return out + z[0] + _captured[-1]


def test_forward_changing_python_state_breaks_the_graph_and_runs_eagerly():
    """The node's forward runs unseen: its append to ``z`` was lost to the tracer (the
    program raised IndexError at ``z[0]``, which eager does not), and its append to the global
    list left a fake tensor there. The change is seen on the fake run, undone, and the call
    runs eagerly."""
    mc.reset()
    _captured.clear()
    expected = _result_and_grads(_reads_what_forward_appended, lambda: (_leaf(4),))
    _captured.clear()
    got = _result_and_grads(mc.compile(_reads_what_forward_appended), lambda: (_leaf(4),))
    torch.testing.assert_close(got, expected)
    assert len(_captured) == 1 and type(_captured[0]) is torch.Tensor  # only eager's append
    reasons = [str(r) for r in mc.explain(_reads_what_forward_appended)(_leaf(4)).break_reasons]
    assert any("forward changes" in r and "its argument 1" in r for r in reasons), reasons


class _Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b


class _ReturnsObject(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        return _Pair(torch.sin(x), torch.cos(y)), x * y

    @staticmethod
    def backward(ctx, grad_pair, grad_prod):
        return grad_prod * 2, grad_prod * 3


def _uses_object(x, y):
    z = _ReturnsObject.apply(x, y)
    return z[0].a + z[0].b + z[1]


def test_node_returning_an_object_that_holds_tensors_breaks_the_graph():
    """An object in a node's tuple was folded as a constant, with the fake tensors it holds:
    the program then mixed fake and real tensors (AssertionError from the fake mode)."""
    mc.reset()
    make = lambda: (_leaf(3, 3), _leaf(3, 3))  # noqa: E731
    torch.testing.assert_close(_result_and_grads(mc.compile(_uses_object), make),
                               _result_and_grads(_uses_object, make))
    reasons = [str(r) for r in mc.explain(_uses_object)(*make()).break_reasons]
    assert any("_Pair holding tensors" in r for r in reasons), reasons


class _Mode(enum.Enum):
    SIN = 0
    COS = 1


class _ByMode(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, mode):
        ctx.save_for_backward(x)
        ctx.mode = mode
        return x.sin() if mode is _Mode.SIN else x.cos()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return (grad * x.cos() if ctx.mode is _Mode.SIN else -grad * x.sin()), None


def _with_mode(x, mode):
    return _ByMode.apply(x, mode) * 2


def test_enum_member_is_a_constant_argument_guarded_by_identity():
    """An enum member reaches the node as a graph constant (it broke the graph: a user object
    cannot be a node's argument); the identity guard recompiles for the other member."""
    mc.reset()
    compiled = mc.compile(_with_mode)
    for mode in (_Mode.SIN, _Mode.COS, _Mode.SIN):
        make = lambda: (_leaf(5), mode)  # noqa: E731
        torch.testing.assert_close(_result_and_grads(compiled, make),
                                   _result_and_grads(_with_mode, make))
    explained = mc.explain(_with_mode)(_leaf(5), _Mode.COS)
    assert explained.graph_count == 1 and not explained.break_reasons


FACTOR = 2.0


def _scale_by(x):
    return x * FACTOR


class _ScaleByGlobal(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return _scale_by(x)  # a helper reading the global

    @staticmethod
    def backward(ctx, grad):
        return grad * FACTOR


def _scaled_by_global(x):
    return _ScaleByGlobal.apply(x) + 1


def test_a_global_the_function_reads_is_guarded(monkeypatch):
    """AOT autograd runs forward and backward once, while tracing: the global they read was
    baked into the compiled graphs with no guard, so after ``FACTOR = 5.0`` the compiled
    function still scaled by 2 (result and gradient)."""
    mc.reset()
    compiled = mc.compile(_scaled_by_global, backend="aot_eager")
    for factor in (2.0, 5.0):
        monkeypatch.setitem(globals(), "FACTOR", factor)
        torch.testing.assert_close(_result_and_grads(compiled, lambda: (_leaf(3),)),
                                   _result_and_grads(_scaled_by_global, lambda: (_leaf(3),)))


class _Config:
    def __init__(self):
        self.scale = 2.0


_config = _Config()


class _ScaleByConfig(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * _config.scale

    @staticmethod
    def backward(ctx, grad):
        return grad * _config.scale


def _scaled_by_config(x):
    return _ScaleByConfig.apply(x) + 1


def test_an_attribute_of_a_global_object_the_function_reads_is_guarded(monkeypatch):
    """The global ``_config`` itself was guarded, by identity; the ``scale`` read off it was
    baked into the AOT graphs, stale after ``_config.scale = 5.0``."""
    mc.reset()
    compiled = mc.compile(_scaled_by_config, backend="aot_eager")
    for scale in (2.0, 5.0):
        monkeypatch.setattr(_config, "scale", scale)
        torch.testing.assert_close(_result_and_grads(compiled, lambda: (_leaf(3),)),
                                   _result_and_grads(_scaled_by_config, lambda: (_leaf(3),)))
