"""Channels-last convolutions on the CPU (``inductor/layout_opt.py``, the convolution lowering
in ``lowerings/conv.py``): which graphs take the layout, that their convolutions and the ops
between them really run in it, and that the caller still gets eager's values and strides,
forward and backward, whatever layout the input comes in."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import minicompile as mc
from conftest import use_cpu_backend
from minicompile.inductor.ir import ExternKernel
from minicompile.inductor.ir.layout import channels_last_order, fill_order

pytestmark = pytest.mark.cpu_only  # the layout decision is the CPU's
aten = torch.ops.aten


class SqueezeExcite(nn.Module):
    def __init__(self, c: int, hidden: int):
        super().__init__()
        self.reduce, self.expand = nn.Conv2d(c, hidden, 1), nn.Conv2d(hidden, c, 1)

    def forward(self, x):
        s = x.mean((2, 3), keepdim=True)  # (N, C, 1, 1)
        return x * self.expand(F.relu(self.reduce(s))).sigmoid()


class MobileBlock(nn.Module):
    """A stem, then an inverted residual with a depthwise convolution and squeeze-excite (the
    EfficientNet / MobileNetV3 pattern); returns the feature map and the logits."""

    def __init__(self, c: int = 12, expand: int = 20):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, padding=1, bias=False), nn.BatchNorm2d(c),
                                  nn.Hardswish(inplace=True))
        self.inverted = nn.Sequential(
            nn.Conv2d(c, expand, 1, bias=False), nn.BatchNorm2d(expand), nn.SiLU(inplace=True),
            nn.Conv2d(expand, expand, 5, padding=2, groups=expand, bias=False),
            nn.BatchNorm2d(expand), nn.Hardswish(), SqueezeExcite(expand, 5),
            nn.Conv2d(expand, c, 1, bias=False), nn.BatchNorm2d(c))
        self.head = nn.Linear(c, 7)

    def forward(self, x):
        x = self.stem(x)
        features = x + self.inverted(x)  # (N, C, H, W)
        return features, self.head(features.mean((2, 3)))


class DenseBlock(nn.Module):
    """Dense 3x3 convolutions only (a ResNet's basic block): no grouped convolution."""

    def __init__(self, c: int = 8):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(3, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.conv2(F.relu(self.conv1(x)))


@pytest.fixture(params=["reference", "cpp", "triton"])
def backend(request, monkeypatch):
    use_cpu_backend(monkeypatch, request.param)
    return request.param


def inputs(layout: str) -> torch.Tensor:
    x = torch.randn(3, 3, 13, 11)  # odd sizes
    if layout == "channels_last":
        return x.contiguous(memory_format=torch.channels_last)
    if layout == "strided":  # every other row of a taller image
        return torch.randn(3, 3, 26, 11)[:, :, ::2]
    return x


def convolutions(graph) -> list[ExternKernel]:
    return [b for b in graph.buffers
            if isinstance(b, ExternKernel) and b.kernel is aten.convolution.default]


@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "strided"])
def test_mobile_block_matches_eager(backend, compiled_graphs, layout):
    model, x = MobileBlock().eval(), inputs(layout)
    with torch.no_grad():
        features, logits = mc.compile(model)(x)
        want_features, want_logits = model(x)
    torch.testing.assert_close(features, want_features)
    torch.testing.assert_close(logits, want_logits)
    assert features.stride() == want_features.stride()  # eager's layout, not the kernels'
    graph = compiled_graphs[-1].graph
    assert graph.layout_opt
    for conv in convolutions(graph):  # input and result channels-last, weight too
        assert fill_order(conv.args[0].layout.stride) == channels_last_order(4)
        assert fill_order(conv.layout.stride) == channels_last_order(4)


def test_only_the_image_and_a_dense_weight_are_copied(compiled_graphs):
    """The ops between convolutions write channels-last themselves: the layout is changed only
    where a tensor comes from the caller (the image, the stem's 3x3 weight; a 1x1 or depthwise
    weight is channels-last already), as in Inductor."""
    model = MobileBlock().eval()
    with torch.no_grad():
        mc.compile(model)(inputs("contiguous"))
    graph = compiled_graphs[-1].graph
    read_by_convs = {c.args[k].get_name() for c in convolutions(graph) for k in (0, 1)}
    copied = [name for name in read_by_convs if name not in graph.graph_inputs
              and "convolution" in graph.name_to_buffer[name].origins
              and not isinstance(graph.name_to_buffer[name], ExternKernel)]
    stem = convolutions(graph)[0]
    assert sorted(copied) == sorted([stem.args[0].get_name(), stem.args[1].get_name()])


def test_training_step_matches_eager(backend, compiled_graphs):
    model = MobileBlock()
    twin = MobileBlock()
    twin.load_state_dict(model.state_dict())
    x = inputs("contiguous")

    def loss(m):
        features, logits = m(x)
        return logits.square().mean() + features.mean()

    loss(mc.compile(model)).backward()
    loss(twin).backward()
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name)
    torch.testing.assert_close(model.stem[1].running_mean, twin.stem[1].running_mean)
    assert compiled_graphs[0].graph.layout_opt  # the forward graph


def test_dense_convolutions_keep_eager_layout(compiled_graphs):
    """Without a grouped convolution the graph keeps NCHW: oneDNN runs a dense kxk convolution
    from NCHW in its own blocked layout, often faster than from channels-last."""
    model, x = DenseBlock(), inputs("contiguous")
    with torch.no_grad():
        torch.testing.assert_close(mc.compile(model)(x), model(x))
    graph = compiled_graphs[-1].graph
    assert not graph.layout_opt
    assert all(c.args[0].layout.is_contiguous() for c in convolutions(graph))


def test_layout_optimization_can_be_turned_off(compiled_graphs):
    model, x = MobileBlock().eval(), inputs("contiguous")
    with torch.no_grad():
        features, _ = mc.compile(model, options={"layout_optimization": False})(x)
        torch.testing.assert_close(features, model(x)[0])
    graph = compiled_graphs[-1].graph
    assert not graph.layout_opt
    assert all(c.args[0].layout.is_contiguous() for c in convolutions(graph))


def test_saved_activations_stay_channels_last_for_the_backward(compiled_graphs):
    """A forward's outputs saved for its backward are seen by no caller: they keep the layout
    they were computed in (channels-last here) instead of being copied into eager's, and the
    backward is compiled for that layout (its inputs take the strides the forward reports:
    ``aot_autograd._take_saved_strides``), so neither graph copies them; the gradients still
    equal eager's (``test_training_step_matches_eager``)."""
    model = MobileBlock()
    features, logits = mc.compile(model)(inputs("contiguous"))
    (logits.square().mean() + features.mean()).backward()
    forward, backward = compiled_graphs[0], compiled_graphs[1]
    start = forward.graph.gm.meta["saved_outputs_start"]
    saved = [s for s in forward.output_strides[start:] if s is not None]
    assert any(len(s) == 4 and s[1] == 1 and s[3] != 1 for s in saved)  # channels-last ones
    backward_inputs = list(backward.graph.graph_inputs.values())[:len(saved)]
    assert [tuple(int(v) for v in b.layout.stride) for b in backward_inputs] == saved


def test_the_backward_computes_its_gradients_channels_last(backend, compiled_graphs):
    """The backward of a channels-last forward runs channels-last too: every convolution's
    backward gets its gradient and its saved input channels-last, the gradient written so by
    the kernel that computes it. (Left in eager's layout, ATen copied every such gradient before
    the convolution: on CUDA a copy kernel per convolution, 32 in EfficientNet-B0's step.) The
    stem's too, whose saved input is the caller's image in eager's layout: taken as it was, its
    backward ran in eager's layout and the kernels computing its gradient read channels-last and
    wrote eager's layout (ResNet-18's max pool backward on an H200: 1.28 ms against 0.18).
    Gradients equal eager's."""
    model, twin = MobileBlock(), MobileBlock()
    twin.load_state_dict(model.state_dict())
    x = inputs("contiguous")
    for m in (mc.compile(model), twin):
        features, logits = m(x)
        (logits.square().mean() + features.mean()).backward()
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name)
    backward = compiled_graphs[1].graph
    assert backward.layout_opt
    calls = [b for b in backward.buffers
             if isinstance(b, ExternKernel) and b.kernel is aten.convolution_backward.default]
    # (a 1x1 map is laid out both ways at once)
    spatial = [c for c in calls if c.args[0].get_size()[2:] != [1, 1]]
    assert len(spatial) >= 3 and all(
        fill_order(t.layout.stride) == channels_last_order(4)
        for c in spatial for t in c.args[:2]), [[t.layout.stride for t in c.args[:2]]
                                                 for c in spatial]
    stem = [c for c in spatial if c.args[1].get_size()[1] == 3]  # the image's 3 channels
    assert len(stem) == 1


def test_an_output_laid_out_alike_but_for_size_one_dims_is_not_copied():
    """``laid_out_as`` (the wrapper's check of a library call's output) ignores the strides of
    dims of size 1, which address nothing: ATen's channels-last 1x1 weight gradient
    ``(64, 1, 64, 64)`` is the same memory as the traced ``(64, 1, 1, 1)``."""
    from minicompile.inductor.codegen.wrapper import laid_out_as
    grad = torch.randn(240, 64, 1, 1).contiguous(memory_format=torch.channels_last)
    assert laid_out_as(grad, (240, 64, 1, 1), (64, 1, 1, 1)) is grad
    moved = laid_out_as(torch.randn(4, 6).t(), (6, 4), (4, 1))  # a real transpose is copied
    assert moved.stride() == (4, 1)


class ConvAttention(nn.Module):
    """CoAtNet's attention between convolutions: a depthwise convolution (so the graph runs
    channels-last), a 1x1 projection viewed as (batch, heads, head dim, tokens), attention,
    and a 1x1 projection back."""

    def __init__(self, c: int = 16, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.dw = nn.Conv2d(c, c, 3, padding=1, groups=c)
        self.qkv, self.proj = nn.Conv2d(c, 3 * c, 1), nn.Conv2d(c, c, 1)

    def forward(self, x):
        y = self.qkv(self.dw(x))
        B, _, H, W = y.shape
        q, k, v = y.view(B, self.heads, -1, H * W).chunk(3, dim=2)
        o = F.scaled_dot_product_attention(*(t.transpose(-1, -2).contiguous() for t in (q, k, v)))
        return self.proj(o.transpose(-1, -2).reshape(B, -1, H, W))


def test_attention_between_convolutions_is_not_laid_out_as_an_image(backend, compiled_graphs):
    """Channels-last flows around convolutions, not through an attention kernel, which reads
    its query, key and value as eager lays them out (laid out as images, the CPU kernel read
    garbage: CoAtNet's outputs were wrong)."""
    model, x = ConvAttention().eval(), torch.randn(2, 16, 4, 4)
    with torch.no_grad():
        torch.testing.assert_close(mc.compile(model)(x), model(x))
    graph = compiled_graphs[-1].graph
    assert graph.layout_opt
    attention = [b for b in graph.buffers if isinstance(b, ExternKernel)
                 and "attention" in str(b.kernel)]
    assert attention and all(a.layout.stride[-1] == 1 for att in attention
                             for a in att.args if hasattr(a, "layout"))
