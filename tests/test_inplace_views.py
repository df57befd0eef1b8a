"""In-place changes of a tensor's geometry (aot_autograd/functionalize.py, ``_functional_view``):
``y.t_()``, ``y.squeeze_(0)``, ``y.unsqueeze_(1)``, and the ``as_strided_`` that ATen's own
``adaptive_avg_pool2d`` applies to give a channels-last input a channels-last output (timm's
ConvNeXt head). On an intermediate each becomes the view it amounts to, and the graph compiles;
on a graph input the caller's tensor itself changes, so the frame falls back with its reason.
Eager is the oracle: values, strides, gradients, and the caller's tensor."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import minicompile as mc


def transpose_in_place(x):
    y = x * 2
    y.t_()  # (the node of y keeps y's geometry before the change: 3 x 5)
    return y + 1


def squeeze_in_place(x):
    y = x.sum(0, keepdim=True)
    y.squeeze_(0)
    return y * 2


def unsqueeze_in_place(x):
    y = x + 1
    y.unsqueeze_(1)
    return y.expand(-1, 3, -1) * 2


def written_after_the_change(x):
    y = x.clone()
    y.t_()
    y.add_(1)
    return y, x.sin()


def global_pool_of_channels_last(x):
    return F.adaptive_avg_pool2d(x.sin(), 1) + 1


CASES = [
    (transpose_in_place, lambda: torch.randn(3, 5)),
    (squeeze_in_place, lambda: torch.randn(4, 6)),
    (unsqueeze_in_place, lambda: torch.randn(4, 5)),
    (written_after_the_change, lambda: torch.randn(3, 4)),
    (global_pool_of_channels_last,
     lambda: torch.randn(2, 8, 5, 5).to(memory_format=torch.channels_last)),
]


@pytest.mark.parametrize("requires_grad", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("fn, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_a_geometry_change_of_an_intermediate_compiles_as_a_view(fn, make, requires_grad):
    mc.reset()
    x = make()
    a, b = x.clone().requires_grad_(requires_grad), x.clone().requires_grad_(requires_grad)
    out, ref = mc.compile(fn)(a), fn(b)
    out, ref = (out, ref) if isinstance(out, tuple) else ((out,), (ref,))
    assert mc.metrics.eager_fallbacks == 0
    for o, r in zip(out, ref):
        torch.testing.assert_close(o, r)
        assert o.stride() == r.stride()
    if requires_grad:
        torch.testing.assert_close(torch.autograd.grad(out[0].sum(), a),
                                   torch.autograd.grad(ref[0].sum(), b))


def test_a_geometry_change_of_an_input_falls_back_with_its_reason(caplog):
    """The caller's tensor is transposed after the call, as in eager."""
    def fn(x):
        x.t_()
        return x + 1

    mc.reset()
    x = torch.randn(3, 5)
    y = x.clone()
    out, ref = mc.compile(fn)(x), fn(y)
    torch.testing.assert_close(out, ref)
    assert x.shape == y.shape == (5, 3) and torch.equal(x, y)
    assert mc.metrics.eager_fallbacks == 1
    assert "changes an input's metadata" in caplog.text
