"""Channels-last layouts for the convolutions of a graph (mirrors ``decide_layout_opt`` and
``find_nodes_prefer_channels_last`` of ``GraphLowering`` in torch/_inductor/graph.py, and the
``require_channels_last`` of its convolution lowering, torch/_inductor/kernel/conv.py).

Eager keeps a model's activations in the layout its input came in: ``[N, C, H, W]`` row-major
(NCHW). On the CPU, ATen's convolutions are much slower on that layout for the convolutions of
mobile networks, and fast on channels-last (NHWC: the channels of one pixel side by side):

- a depthwise (grouped) convolution on NCHW goes through oneDNN, which reorders its input
  into a blocked layout and its output back, every call;
- a 1x1 convolution on one thread runs ATen's own kernel (``_slow_conv2d_forward``), which on
  NCHW is one matrix product per image: at the small spatial sizes late in a network
  (``[4, 1152, 2, 2]``) it reads the whole weight once per image to make four columns.

On channels-last both are one pass (a 1x1 convolution is a single ``[N*H*W, C] @ [C, C']``
product), two to five times faster at such sizes. A dense kxk convolution is another story:
oneDNN runs it from NCHW in its own blocked layout, and from NHWC it can be several times slower
(``[4, 512, 2, 2]`` by a ``512x512x3x3`` weight: 2.2 ms NCHW, 8 ms NHWC, one thread, AMD EPYC).
Inductor takes channels-last for every CPU graph with a convolution, which makes ResNets slower
than eager; here a graph takes it when it has a grouped convolution (a mobile network:
MobileNet, EfficientNet, ConvNeXt, RegNet), and then every 2-D convolution of it takes its
input (and weight) channels-last, and ATen gives its output channels-last too. Measured over
the 400 distinct convolutions of the timm suite at its CPU sizes (NHWC time / NCHW time, one
thread, ``python -m minicompile.bench.conv_layouts``; docs/models.md has the table): grouped
0.3-0.9, 1x1 0.46 at up to 16 pixels and 1.25-1.5 above, dense kxk 1.5-4.4.

A layout change costs a copy, so the pointwise ops around the convolutions take the same layout
(``nodes_prefer_channels_last``): ``conv -> batch norm -> SiLU -> conv`` keeps NHWC from one
convolution to the next, and the fused batch-norm-and-SiLU kernel reads and writes it straight.
What the caller sees is still eager's layout: a graph output is copied into eager's strides
(``GraphLowering.keep_output_stride``), and eager is what the tests compare with. A training
graph's backward follows its forward: its saved activations arrive channels-last, and it computes
its gradients channels-last too (anchored at each ``convolution_backward`` with a channels-last
input), so that a convolution's backward gets its gradient and its input in one layout (given
them mixed, ATen copies the gradient first).

On CUDA the question is cuDNN's, whose channels-last kernels are faster for most
convolutions (tensor-core kernels read NHWC natively; from NCHW cuDNN transposes around them).
Inductor's rule, kept here (``cuda_prefers_channels_last``): a graph with few convolutions
among many other ops, or symbolic sizes, keeps eager's layout; an inference graph weighs its
convolutions' flops by kind with Inductor's measured channels-last speed-ups (dense 0.82x of
NCHW's time, reducing channels 0.73x, small channels 0.78x, grouped with several channels per
group 1.36x: slower) and goes channels-last when the weighted sum is smaller; a training graph
goes channels-last unless it has a grouped convolution with several channels per group, one
that reduces channels, or only small ones. (Depthwise convolutions, one channel per group, are
faster channels-last on cuDNN too.)
"""

from __future__ import annotations

import torch
import torch.fx as fx

from .ir.layout import channels_last_order

__all__ = ["decide_layout_opt", "nodes_prefer_channels_last", "channels_last_order"]

aten = torch.ops.aten

CONVOLUTION = aten.convolution.default
CONVOLUTION_BACKWARD = aten.convolution_backward.default
# ops the preference does not flow through (Inductor's ``nodes_cannot_propagate``): a batched
# matrix product reads its operands row-major whatever the convolutions around it do, and an
# attention kernel takes (batch, heads, tokens, head dim), not an image (CoAtNet's attention
# between convolutions: its query, key and value would be laid out as images, then copied back)
# (the attention kernels, forward and backward, are also the ones whose inputs are laid out as
# eager traced them: ``lowerings/extern.py``)
ATTENTION = {getattr(aten, f"{name}{part}").default for name in (
    "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_cudnn_attention",
    "scaled_dot_product_attention") for part in ("", "_backward")
    if hasattr(aten, f"{name}{part}")}
CANNOT_PROPAGATE = {aten.bmm.default, *ATTENTION}


def is_conv2d(node: fx.Node) -> bool:
    """A 2-D convolution: its input is ``[N, C, H, W]``."""
    if node.target is not CONVOLUTION or not isinstance(node.args[0], fx.Node):
        return False
    val = node.args[0].meta.get("val")
    return isinstance(val, torch.Tensor) and val.dim() == 4


def is_channels_last_backward(node: fx.Node) -> bool:
    """A 2-D convolution's backward whose saved input is channels-last: the backward of a
    forward that ran its convolutions so (the saved activations keep the forward's layout)."""
    if node.target is not CONVOLUTION_BACKWARD or not isinstance(node.args[1], fx.Node):
        return False
    val = node.args[1].meta.get("val")
    return isinstance(val, torch.Tensor) and val.dim() == 4 and not val.is_contiguous() \
        and val.is_contiguous(memory_format=torch.channels_last)


def is_conv2d_backward(node: fx.Node) -> bool:
    """A 2-D convolution's backward, whatever the layout of its saved input."""
    if node.target is not CONVOLUTION_BACKWARD or not isinstance(node.args[1], fx.Node):
        return False
    val = node.args[1].meta.get("val")
    return isinstance(val, torch.Tensor) and val.dim() == 4


def is_grouped(node: fx.Node) -> bool:
    """A grouped convolution (a depthwise one: one input channel per group)."""
    return node.args[8] > 1


def decide_layout_opt(gm: fx.GraphModule, enabled: bool = True,
                      is_inference: bool = True) -> bool:
    """Whether the graph's 2-D convolutions run channels-last (``GraphLowering.decide_layout_opt``):
    on the CPU, with oneDNN, when one of them is grouped; on CUDA by Inductor's rule
    (``cuda_prefers_channels_last``). ``enabled`` is the compile's ``layout_optimization``
    knob; ``is_inference``: a graph without a backward."""
    convs = [n for n in gm.graph.nodes if is_conv2d(n)]
    if enabled and not convs and any(map(is_channels_last_backward, gm.graph.nodes)):
        # the backward of a channels-last forward: its gradients are computed channels-last
        # too, so each convolution's backward gets its gradient and its saved input in one
        # layout (given the gradient contiguous, ATen first copied it: on CUDA a copy kernel
        # per call, 32 of them in EfficientNet-B0's step)
        return True
    if not enabled or not convs:
        return False
    devices = {a.meta["val"].device.type for n in convs for a in n.args[:2]
               if isinstance(a, fx.Node)}
    if devices == {"cpu"}:
        return (any(map(is_grouped, convs)) and torch.backends.mkldnn.enabled
                and torch.backends.mkldnn.is_available())
    if devices == {"cuda"}:
        return cuda_prefers_channels_last(gm, convs, is_inference)
    return False


# cuDNN's channels-last time over its NCHW time, by kind of convolution, averaged by Inductor
# over the convolutions of its training benchmarks (``decide_layout_opt``): below 1 is faster
CUDA_CHANNELS_LAST_COST = {"grouped": 1.358, "default": 0.823, "in_out": 0.725, "small": 0.783}


def weight_of(node: fx.Node) -> torch.Tensor:
    return node.args[1].meta["val"]


def is_grouped_dense(node: fx.Node) -> bool:
    """A grouped convolution with several input channels per group (not a depthwise one):
    cuDNN's channels-last kernels for these can be many times slower."""
    return is_grouped(node) and weight_of(node).size(1) > 1


def reduces_channels(node: fx.Node) -> bool:
    """A kxk convolution with at most half as many output channels as input channels."""
    w = weight_of(node)
    return w.size(0) * 2 <= w.size(1) and w.size(2) > 1


def has_small_channels(node: fx.Node) -> bool:
    w = weight_of(node)
    return w.size(0) <= 64 and w.size(1) <= 64


def conv_kind(node: fx.Node) -> str:
    if is_grouped_dense(node):
        return "grouped"
    if has_small_channels(node):
        return "small"
    return "in_out" if reduces_channels(node) else "default"


def conv_flops(node: fx.Node) -> int:
    """Multiply-adds times two: each output element sums ``C_in / groups * kh * kw`` products."""
    return 2 * node.meta["val"].numel() * weight_of(node)[0].numel()


def cuda_prefers_channels_last(gm: fx.GraphModule, convs: list[fx.Node],
                               is_inference: bool) -> bool:
    """Inductor's rule for cuDNN (the module docstring says what it weighs)."""
    if len(gm.graph.nodes) >= 300 * len(convs):  # a few convolutions in a large graph
        return False
    vals = [v for n in convs for v in (n.meta["val"], n.args[0].meta["val"], weight_of(n))]
    if any(not isinstance(s, int) for v in vals for s in v.shape):  # symbolic sizes
        return False
    if is_inference:
        flops = {kind: 0 for kind in CUDA_CHANNELS_LAST_COST}
        for n in convs:
            flops[conv_kind(n)] += conv_flops(n)
        weighted = sum(CUDA_CHANNELS_LAST_COST[k] * f for k, f in flops.items())
        return weighted <= sum(flops.values())
    if any(map(is_grouped_dense, convs)) or any(map(reduces_channels, convs)):
        return False
    return not all(map(has_small_channels, convs))


def nodes_prefer_channels_last(gm: fx.GraphModule) -> set[fx.Node]:
    """The nodes whose 4-D results are laid out channels-last (Inductor's rule):

    1. a convolution (in a backward graph, a convolution's backward: every one of them, the
       stem's too, whose saved input is the caller's image in eager's layout: its lowering
       takes the graph's layout, ``lowerings/conv.py``), and every node whose result some node
       of the set reads (walking the graph backwards): what feeds a convolution, directly or
       through pointwise ops;
    2. then, walking forwards up to the last convolution, every node reading a node of the set:
       what a convolution's result flows into (its batch norm and activation) before it
       reaches the next one. Past the last convolution (a classifier head, a transformer
       on the feature map) eager's layout stays.
    """
    chosen: set[fx.Node] = set()
    last_conv = None
    for node in reversed(gm.graph.nodes):
        if node.target is CONVOLUTION or is_conv2d_backward(node):
            chosen.add(node)
            last_conv = last_conv or node
        elif node.target not in CANNOT_PROPAGATE and any(u in chosen for u in node.users):
            chosen.add(node)
    for node in gm.graph.nodes:
        if node is last_conv:
            break
        if node in chosen:
            chosen |= {u for u in node.users if u.target not in CANNOT_PROPAGATE}
    return chosen
