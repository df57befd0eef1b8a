"""Channels-last convolutions on CUDA (``inductor/layout_opt.py``, ``cuda_prefers_channels_last``:
Inductor's rule for cuDNN). The decision is read off a graph's shapes, so it is tested on graphs
traced with meta tensors standing for CUDA ones; the GPU test then runs a ResNet-style block
forward and backward and checks that its convolutions really read channels-last and that the
caller gets eager's values and layout."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.fx.experimental.proxy_tensor import make_fx

import minicompile as mc
from minicompile.inductor.ir import ExternKernel
from minicompile.inductor.layout_opt import conv_kind, cuda_prefers_channels_last, is_conv2d

aten = torch.ops.aten


def traced(convs: list[tuple[int, int, int, int]], size: int = 16,
           extra_ops: int = 0) -> tuple[torch.fx.GraphModule, list[torch.fx.Node]]:
    """An ATen graph of convolutions in a row, each ``(in, out, kernel, groups)``, on meta
    tensors (``extra_ops`` pointwise ops after them), and its convolution nodes."""
    weights = [torch.empty(o, i // g, k, k, device="meta") for i, o, k, g in convs]

    def fn(x, *ws):
        for w, (_, _, k, g) in zip(ws, convs):
            x = F.conv2d(x, w, padding=k // 2, groups=g)
        for _ in range(extra_ops):
            x = x + 1
        return x

    gm = make_fx(fn)(torch.empty(2, convs[0][0], size, size, device="meta"), *weights)
    return gm, [n for n in gm.graph.nodes if is_conv2d(n)]


def decide(convs, is_inference, **kw) -> bool:
    gm, nodes = traced(convs, **kw)
    return cuda_prefers_channels_last(gm, nodes, is_inference)


def test_convolutions_are_sorted_into_inductors_kinds():
    _, nodes = traced([(128, 128, 3, 1), (128, 64, 3, 1), (64, 32, 3, 1), (32, 128, 3, 2),
                       (128, 128, 3, 128)])
    assert [conv_kind(n) for n in nodes] == ["default", "in_out", "small", "grouped", "default"]


@pytest.mark.parametrize("convs, inference, training", [
    ([(128, 128, 3, 1)], True, True),  # dense: faster channels-last
    ([(128, 128, 3, 128), (128, 128, 1, 1)], True, True),  # depthwise then pointwise
    ([(32, 32, 3, 1), (32, 64, 3, 1)], True, False),  # only small channels: not in training
    ([(256, 128, 3, 1)], True, False),  # a kxk convolution halving the channels
    ([(256, 256, 3, 2)], False, False),  # grouped, 128 channels a group: cuDNN's slow case
    ([(256, 256, 3, 2), (256, 256, 3, 1), (256, 256, 3, 1), (256, 256, 3, 1)], True, False),
])
def test_inductors_rule_for_inference_and_training(convs, inference, training):
    """Inference weighs the convolutions' flops by kind; training refuses a grouped convolution
    with several channels a group, a channel-reducing one, or only small ones."""
    assert decide(convs, is_inference=True) == inference
    assert decide(convs, is_inference=False) == training


def test_a_few_convolutions_in_a_large_graph_keep_eager_layout():
    assert decide([(128, 128, 3, 1)], True)
    assert not decide([(128, 128, 3, 1)], True, extra_ops=300)


class BasicBlock(nn.Module):
    """A ResNet basic block (dense 3x3 convolutions, batch norm, a residual)."""

    def __init__(self, c: int = 96):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(x + self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))))


@pytest.mark.gpu
def test_a_resnet_block_runs_channels_last_on_cuda(compiled_graphs, monkeypatch):
    # (cuDNN's TF32 would round differently in each layout's algorithm)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    model = BasicBlock().cuda()
    twin = BasicBlock().cuda()
    twin.load_state_dict(model.state_dict())
    x = torch.randn(4, 96, 14, 14, device="cuda")
    out = mc.compile(model)(x)
    expected = twin(x)
    torch.testing.assert_close(out, expected, rtol=1e-3, atol=1e-3)
    assert out.stride() == expected.stride()  # the caller gets eager's layout
    out.sum().backward()
    expected.sum().backward()
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=1e-3, msg=name)
    forward = compiled_graphs[0].graph
    assert forward.layout_opt
    convs = [b for b in forward.buffers
             if isinstance(b, ExternKernel) and b.kernel is aten.convolution.default]
    assert convs and all(c.args[0].layout.stride[1] == 1 for c in convs)  # NHWC: C innermost


@pytest.mark.cpu_only  # (CPU tensors, with the GPU's peeling switched on)
@pytest.mark.parametrize("layout_optimization", [True, False])
def test_a_peeled_bias_fuses_into_the_activation(compiled_graphs, monkeypatch,
                                                  layout_optimization):
    """On a GPU the convolution runs without its bias and a pointwise kernel adds the bias and
    applies the ReLU in one pass (``lowerings/conv.py``). The peeling is the GPU's; here it is
    switched on for CPU tensors, which exercises the same lowering."""
    from minicompile.inductor.lowerings import conv
    monkeypatch.setattr(conv, "peels_bias", lambda device: True)
    model = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 4, 1))
    x = torch.randn(2, 8, 9, 7)
    with torch.no_grad():
        out = mc.compile(model, options={"layout_optimization": layout_optimization})(x)
        torch.testing.assert_close(out, model(x), rtol=1e-4, atol=1e-4)
    graph = compiled_graphs[-1].graph
    convs = [b for b in graph.buffers
             if isinstance(b, ExternKernel) and b.kernel is aten.convolution.default]
    assert len(convs) == 2 and all(c.args[2] is None for c in convs)  # no bias in the calls
    loops = [g for g in compiled_graphs[-1].scheduler.kernel_groups if g.is_loop_kernel()]
    fused = [g.fused_name() for g in loops if "relu" in g.fused_name()]
    assert len(fused) == 1 and "convolution" in fused[0]  # the first bias, the ReLU: one pass
    # (the second convolution's bias: a pass of its own, or in the output's layout copy)
    assert len(loops) <= 3
